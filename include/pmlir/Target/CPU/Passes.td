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

#endif // PMLIR_TARGET_CPU_PASSES_TD
