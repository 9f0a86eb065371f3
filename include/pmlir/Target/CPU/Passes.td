//===- Passes.td - the CPU target ----------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TARGET_CPU_PASSES_TD
#define PMLIR_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// CPU kernels, fusion and math
//===----------------------------------------------------------------------===//

def SelectCpuKernels : Pass<"pmlir-select-cpu-kernels"> {
  let summary = "marks the f32 matmul contractions that the CPU runs as BLAS-backed kernels";
  let description = [{
    Recognizes the contraction generics `pmlir-convert-tfm-to-linalg` makes
    of `tfm.matmul` and attention (loops batch..., m, n, k; the lhs indexed
    (batch..., m, k) or transposed (batch..., k, m); the rhs (k, n) or
    (n, k), with or without the batch; the output (batch..., m, n); a
    multiply-add body) on f32, and names the kernel that runs each as its
    `library_call`: `pmlir_matmul_f32_r<L><R>_t<A><B>`, L and R the operand
    ranks, A and B whether each is transposed. Fusion leaves these ops
    alone, and after bufferization `pmlir-linalg-to-library-calls` turns
    them into calls. Other element types and other generics are untouched.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [(d0, d1, d2, d3) -> (d0, d1, d3),
                                     (d0, d1, d2, d3) -> (d3, d2),
                                     (d0, d1, d2, d3) -> (d0, d1, d2)], ...}
        ins(%a, %w : tensor<2x3x16xf32>, tensor<16x8xf32>) ...
    ```
    After: the same op with `library_call = "pmlir_matmul_f32_r32_t00"`.
  }];
}

def FuseElementwise : Pass<"pmlir-fuse-elementwise"> {
  let summary = "fuses elementwise linalg producers into their consumers, except library calls";
  let description = [{
    Upstream `linalg-fuse-elementwise-ops`, with two restrictions. A generic
    that names a library call (an f32 matmul bound for BLAS) is neither fused
    into nor fused away, so that it stays one kernel call. A producer is fused
    only into its sole consumer: one with several consumers is computed once
    and stored, not recomputed in each (along a residual stream that would
    recompute every earlier layer's adds in every later layer). Bias adds,
    activations and the normalizing step of norms fuse with each other.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def LinalgToLibraryCalls : Pass<"pmlir-linalg-to-library-calls", "mlir::ModuleOp"> {
  let summary = "replaces bufferized linalg ops that name a pmlir library call with calls";
  let description = [{
    After bufferization, every `linalg.generic` whose `library_call` starts
    with `pmlir_` (the f32 matmuls `pmlir-select-cpu-kernels` marked) becomes
    a `func.call` of that name on its operands, cast to fully dynamic strided
    memrefs, and a private declaration with `llvm.emit_c_interface`, so that
    the callee receives memref descriptors (`_mlir_ciface_<name>`). pmlir-run
    binds these names to BLAS-backed kernels. Other linalg ops are untouched.

    The call takes one more operand, `accumulate` (i1): the kernel adds into
    the output when true and overwrites it when false. It is false when the
    op right before is a `linalg.fill` of zero into the output, which is then
    erased, so that the output is written once instead of zeroed, read back
    and written.

    Before:
    ```mlir
    linalg.generic {..., library_call = "pmlir_matmul_f32_r32_t00"}
        ins(%a, %w : memref<2x3x16xf32>, memref<16x8xf32>) outs(%c : memref<2x3x8xf32>) {...}
    ```
    After:
    ```mlir
    %0 = memref.cast %a : memref<2x3x16xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
    ...
    %true = arith.constant true
    call @pmlir_matmul_f32_r32_t00(%0, %1, %2, %true) : (...) -> ()
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
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

#endif // PMLIR_TARGET_CPU_PASSES_TD
