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

// Other element types, and generics that are not a multiply-add
// contraction, stay as they are.
// CHECK-LABEL: func @not_kernels
// CHECK-NOT: library_call
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @not_kernels(%x: tensor<3x16xbf16>, %w: tensor<16x8xbf16>, %a: tensor<3x16xf32>, %b: tensor<16x8xf32>,
                       %c: tensor<3x8xf32>) -> (tensor<3x8xbf16>, tensor<3x8xf32>) {
  %0 = tfm.matmul %x, %w : tensor<3x16xbf16>, tensor<16x8xbf16> -> tensor<3x8xbf16>
  %1 = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<3x16xf32>, tensor<16x8xf32>) outs(%c : tensor<3x8xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %m = arith.maximumf %acc, %p : f32
    linalg.yield %m : f32
  } -> tensor<3x8xf32>
  return %0, %1 : tensor<3x8xbf16>, tensor<3x8xf32>
}
