// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-select-cpu-kernels --split-input-file | FileCheck %s

// f32 matmuls run as BLAS kernels named by the operand ranks and
// transposes: a batch sharing an [out, in] weight, and attention's two
// batched matmuls (the scores against transposed keys, then the values).
// CHECK-LABEL: func @matmul_transpose_rhs
// CHECK: linalg.generic {{.*}}library_call = "pmlir_matmul_f32_r32_t01"
func.func @matmul_transpose_rhs(%x: tensor<2x3x16xf32>, %w: tensor<8x16xf32>) -> tensor<2x3x8xf32> {
  %0 = tfm.matmul %x, %w transpose_rhs : tensor<2x3x16xf32>, tensor<8x16xf32> -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// CHECK-LABEL: func @matmul_transpose_lhs
// CHECK: linalg.generic {{.*}}library_call = "pmlir_matmul_f32_r22_t10"
func.func @matmul_transpose_lhs(%x: tensor<16x3xf32>, %w: tensor<16x8xf32>) -> tensor<3x8xf32> {
  %0 = tfm.matmul %x, %w transpose_lhs : tensor<16x3xf32>, tensor<16x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func @attention
// CHECK: linalg.generic {{.*}}library_call = "pmlir_matmul_f32_r44_t01"{{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x6x8xf32>, tensor<1x2x5x8xf32>)
// CHECK: linalg.generic {{.*}}library_call = "pmlir_matmul_f32_r44_t00"{{.*}} outs(%{{.*}} : tensor<1x2x6x4xf32>)
func.func @attention(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x4x3x4xf32> {
  %o = tfm.attention %q, %k, %v causal scale = 0.5 : tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32> -> tensor<1x4x3x4xf32>
  return %o : tensor<1x4x3x4xf32>
}

// -----

// bf16 GEMMs run as bf16 kernels summing in f32: a bf16 program's, and
// pmlir-store-bf16's on the operands it rounds, with a bf16 result where
// it is stored and an f32 one where it leaves.
// CHECK-LABEL: func @bf16
// CHECK: linalg.generic {{.*}}library_call = "pmlir_matmul_bf16_r22_t00"
// CHECK-LABEL: func @stored_in_bf16
// CHECK-COUNT-2: library_call = "pmlir_matmul_f32_r22_t00"
// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-store-bf16 --pmlir-select-cpu-kernels=precision=bf16 --split-input-file | FileCheck %s --check-prefix=STORED
// STORED-LABEL: func @stored_in_bf16
// STORED: linalg.generic {{.*}}library_call = "pmlir_matmul_bf16_r22_t00"{{.*}} outs(%{{.*}} : tensor<3x8xbf16>)
// STORED: linalg.generic {{.*}}library_call = "pmlir_matmul_bf16f32_r22_t00"{{.*}} outs(%{{.*}} : tensor<3x4xf32>)
// RUN: not pmlir-opt %s --pmlir-select-cpu-kernels=precision=tf32 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: pmlir-select-cpu-kernels: precision 'tf32' is neither f32 nor bf16 (a CPU has no TF32 arithmetic)
func.func @bf16(%x: tensor<3x16xbf16>, %w: tensor<16x8xbf16>) -> tensor<3x8xbf16> {
  %0 = tfm.matmul %x, %w : tensor<3x16xbf16>, tensor<16x8xbf16> -> tensor<3x8xbf16>
  return %0 : tensor<3x8xbf16>
}

func.func @stored_in_bf16(%x: tensor<3x16xf32>, %w: tensor<16x8xf32>, %v: tensor<8x4xf32>) -> tensor<3x4xf32> {
  %0 = tfm.matmul %x, %w : tensor<3x16xf32>, tensor<16x8xf32> -> tensor<3x8xf32>
  %1 = tfm.matmul %0, %v : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
  return %1 : tensor<3x4xf32>
}

// -----

// Other element types, and generics that are not a multiply-add
// contraction, stay as they are.
// CHECK-LABEL: func @not_kernels
// CHECK-NOT: library_call
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @not_kernels(%x: tensor<3x16xf16>, %w: tensor<16x8xf16>, %a: tensor<3x16xf32>, %b: tensor<16x8xf32>,
                       %c: tensor<3x8xf32>) -> (tensor<3x8xf16>, tensor<3x8xf32>) {
  %0 = tfm.matmul %x, %w : tensor<3x16xf16>, tensor<16x8xf16> -> tensor<3x8xf16>
  %1 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<3x16xf32>, tensor<16x8xf32>) outs(%c : tensor<3x8xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %m = arith.maximumf %acc, %p : f32
    linalg.yield %m : f32
  } -> tensor<3x8xf32>
  return %0, %1 : tensor<3x8xf16>, tensor<3x8xf32>
}

// -----

// A GEMM of ranks the runtime's GEMM family (RuntimeAbi.def) has no
// kernel for (a result of rank 5) stays a loop nest instead of naming a
// kernel that does not exist.
// CHECK-LABEL: func @no_kernel_of_these_ranks
// CHECK-NOT: library_call
func.func @no_kernel_of_these_ranks(%x: tensor<2x2x2x3x16xf32>, %w: tensor<16x8xf32>) -> tensor<2x2x2x3x8xf32> {
  %0 = tfm.matmul %x, %w : tensor<2x2x2x3x16xf32>, tensor<16x8xf32> -> tensor<2x2x2x3x8xf32>
  return %0 : tensor<2x2x2x3x8xf32>
}
