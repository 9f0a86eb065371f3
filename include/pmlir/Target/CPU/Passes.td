//===- Passes.td - the CPU target ----------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TARGET_CPU_PASSES_TD
#define PMLIR_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// CPU kernels and math
//===----------------------------------------------------------------------===//

def SelectCpuKernels : Pass<"pmlir-select-cpu-kernels"> {
  let summary = "marks the matmul contractions that the CPU runs as BLAS-backed kernels";
  let description = [{
    Recognizes the contraction generics `pmlir-convert-tfm-to-linalg` makes
    of `tfm.matmul` and attention (loops batch..., m, n, k; the lhs indexed
    (batch..., m, k) or transposed (batch..., k, m); the rhs (k, n) or
    (n, k), with or without the batch; the output (batch..., m, n); a
    multiply-add body) on f32, or on bf16 operands extended to f32 (after
    `pmlir-store-bf16`), and names the kernel that runs each as its
    `library_call`: `pmlir_matmul_<types>_r<L><R>_t<A><B>`, types `f32`,
    `bf16` (bf16 operands and result, f32 sums) or `bf16f32` (an f32
    result), L and R the operand ranks, A and B whether each is
    transposed. Fusion leaves these ops alone, and after bufferization
    `pmlir-linalg-to-library-calls` turns them into calls. Other element
    types and other generics are untouched. `precision` is the program's
    (`f32`, or `bf16` when `pmlir-store-bf16` ran); the kernels are named
    by the types the GEMMs have.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [(d0, d1, d2, d3) -> (d0, d1, d3),
                                     (d0, d1, d2, d3) -> (d3, d2),
                                     (d0, d1, d2, d3) -> (d0, d1, d2)], ...}
        ins(%a, %w : tensor<2x3x16xf32>, tensor<16x8xf32>) ...
    ```
    After: the same op with `library_call = "pmlir_matmul_f32_r32_t00"`.
  }];
  let options = [
    Option<"precision", "precision", "pmlir::Precision", "pmlir::Precision::F32",
           "the program's precision (f32 or bf16: a CPU has no tf32)", "pmlir::precisionValues()">,
  ];
}

def ApproximateMath : Pass<"pmlir-approximate-math"> {
  let summary = "replaces f32 transcendental math ops by inline polynomial approximations";
  let description = [{
    `math.exp`, `tanh`, `erf`, `log`, `sin`, `cos` and friends on f32 would
    otherwise become calls into libm, one scalar call per element, which
    keeps every loop around them from vectorizing. This pass rewrites them
    with upstream MLIR's polynomial approximations (range reduction plus a
    minimax polynomial, within a few ulp of libm) into plain `arith` ops
    that LLVM vectorizes. Ops on other types are left to libm.

    Before:
    ```mlir
    %y = math.exp %x : f32
    ```
    After: a few dozen `arith` ops (`mulf`, `fma`, `bitcast`, `select`, ...).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect"];
}

def ExpandBf16Conversions : Pass<"pmlir-expand-bf16-conversions"> {
  let summary = "rewrites bf16 <-> f32 extf and truncf as integer shifts and rounding";
  let description = [{
    x86 has no scalar instructions for bf16 conversions, and LLVM's
    fallbacks call into a libgcc that may lack them. This pass applies
    upstream's bf16 expansion patterns only: `arith.extf` from bf16 becomes
    a shift of the bits into an f32, `arith.truncf` to bf16 a rounding to
    nearest even on the bits (NaN kept quiet). Unlike upstream's
    `arith-expand-ops` it leaves `arith.maximumf` and `minimumf` whole, so
    that a max reduction (a row max) stays one LLVM intrinsic that the
    loop vectorizer recognizes.

    Before:
    ```mlir
    %h = arith.truncf %x : f32 to bf16
    ```
    After: `arith.bitcast` to i32, the rounding bias added, `arith.shrui`
    by 16, `arith.trunci` to i16, `arith.bitcast` to bf16.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def LowerReductionsToLoops : Pass<"pmlir-lower-reductions-to-loops"> {
  let summary = "lowers reductions on buffers to loops that carry their running values in registers";
  let description = [{
    Upstream's `convert-linalg-to-loops` loads and stores an output element
    in every iteration of a reduction. LLVM vectorizes such a loop only if
    it can keep the element in a register, which it cannot prove where two
    outputs may alias: a layer norm's backward sums two things a row, and
    its loops stayed scalar (about 4 ns an element; GPT-2 small's two such
    loops took 36 ms of a 2.3 s training step on one thread). This pass
    lowers each `linalg.generic` on buffers whose innermost loops are all
    its reductions, and whose outputs are indexed by the other loops only,
    to `scf.for` loops: the outer (parallel) loops, each output element
    loaded once, the reduction loops carrying the running values as
    `iter_args`, each result stored once. The sums are then the vectorized
    reductions LLVM makes of a single output's loop (the body's `reassoc`
    adds allow it). An op with an input in one of its outputs' buffers is
    left as it is (it would read the partial values from memory); so are
    other linalg ops, for `convert-linalg-to-loops` after it.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [#rows, #row, #row],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<512x768xf32>) outs(%sum, %squares : memref<512xf32>, memref<512xf32>) {...}
    ```
    After:
    ```mlir
    scf.for %i = %c0 to %c512 step %c1 {
      %s0 = memref.load %sum[%i] : memref<512xf32>
      %q0 = memref.load %squares[%i] : memref<512xf32>
      %r:2 = scf.for %k = %c0 to %c768 step %c1 iter_args(%s = %s0, %q = %q0) -> (f32, f32) {
        %v = memref.load %x[%i, %k] : memref<512x768xf32>
        ... (the body, on %v, %s and %q)
        scf.yield %s1, %q1 : f32, f32
      }
      memref.store %r#0, %sum[%i] : memref<512xf32>
      memref.store %r#1, %squares[%i] : memref<512xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

def OutlineParallelLoops : Pass<"pmlir-outline-parallel-loops", "mlir::ModuleOp"> {
  let summary = "makes each large structured op on buffers a body that the runtime's threads run in chunks";
  let description = [{
    After bufferization and the BLAS calls, every remaining linalg op (the
    fused elementwise loops, norms, softmax, cross entropy, their
    gradients, AdamW, fills and transposes) runs on one thread unless it is
    split. This pass splits each op whose work (iterations times the
    operations of one) may reach `min-work` along one parallel dimension
    that every output is indexed by: the outermost one with at least 16
    iterations, else the longest. The op moves into a new private function
    `@<function>_parallel<N>(%begin, %end, captures...)` that runs it on
    iterations [%begin, %end) of that dimension (the op tiled there: its
    operands' subviews), and in its place comes a call of the declaration
    `@<function>_parallel<N>_dispatch(%count, %unit_cost, captures...)`,
    marked `pmlir.parallel_body = @<function>_parallel<N>`, which
    `pmlir-lower-parallel-calls` makes a call of the runtime's
    `pmlir_rt_parallel_for` after the lowering to LLVM. Reductions stay
    inside a chunk (only parallel dimensions are split), so each element is
    computed as on one thread. Ops alike (the same op on operands of the
    same types) share one body and its dispatch; a slice at a static
    offset into another buffer (a microbatch's slice of a step's inputs) is
    passed at any offset (`memref.cast`), so that the same op on each slice
    is alike. Ops whose static work is below `min-work`, or with no
    dimension to split, run on the calling thread: one like no other stays
    where it is; ops alike become calls of one private function
    `@<function>_serial<N>(captures...)`, compiled for size and never
    inlined, so that a function repeating them (a training step, once per
    microbatch it accumulates) does not hold each loop again, which LLVM's
    loop passes take time quadratic in the function for. Ops in functions
    already outlined are not looked at. Each function the pass went
    through, and each serial body, gets `passthrough = ["optsize"]`: what
    runs there runs on one thread and is small (but for an op with no
    dimension to split), so LLVM compiles it for size, without unrolled and
    interleaved vector loops, where the parallel bodies keep -O2.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<512x768xf32>) outs(%y : memref<512x768xf32>) { ... }
    ```
    After:
    ```mlir
    func.call @f_parallel0_dispatch(%c512, %c768, %x, %y) : (index, index, ...) -> ()
    func.func private @f_parallel0(%begin: index, %end: index, %x: memref<512x768xf32>, %y: ...) {
      %xs = memref.subview %x[%begin, 0] [%size, 768] [1, 1] ...
      linalg.generic ... ins(%xs ...) outs(%ys ...)
    }
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "pmlir::rt::abi::kParallelMinWork",
           "the static work (iterations times operations) below which an op stays inline">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::linalg::LinalgDialect", "mlir::memref::MemRefDialect"];
}

def LowerParallelCalls : Pass<"pmlir-lower-parallel-calls", "mlir::ModuleOp"> {
  let summary = "makes the dispatches of pmlir-outline-parallel-loops calls of pmlir_rt_parallel_for";
  let description = [{
    On the LLVM dialect, after `pmlir-outline-parallel-loops` and the
    conversion of functions (a memref argument is then its descriptor's
    fields): each call of a declaration marked `pmlir.parallel_body =
    @body` stores the captured arguments (all but the first two) into a
    struct on the caller's stack and calls the runtime's
    `pmlir_rt_parallel_for(@body_chunk, %context, %count, %unit_cost)`, as
    `include/pmlir/Runtime/RuntimeAbi.def` declares it; `@body_chunk(ptr,
    i64, i64)`, made once per body, loads them and calls `@body(%begin,
    %end, ...)`. The declarations go.

    Before:
    ```mlir
    llvm.call @f_parallel0_dispatch(%count, %cost, %p0, %p1, ...) : (i64, i64, !llvm.ptr, ...) -> ()
    ```
    After:
    ```mlir
    llvm.store %p0, ... ; llvm.store %p1, ...
    llvm.call @pmlir_rt_parallel_for(%chunk, %context, %count, %cost)
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // PMLIR_TARGET_CPU_PASSES_TD
