// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-select-gpu-kernels --split-input-file | FileCheck %s
// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-select-gpu-kernels=precision=tf32 --split-input-file | FileCheck %s --check-prefix=TF32
// RUN: not pmlir-opt %s --pmlir-select-gpu-kernels=precision=fp8 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// f32 GEMMs run as cuBLASLt kernels named by the compute mode, the operand
// ranks and the transposes: a batch sharing an [out, in] weight, and
// attention's two batched matmuls (the scores against transposed keys,
// then the values).
// CHECK-LABEL: func @matmul_transpose_rhs
// CHECK: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_f32_r32_t01"
// TF32-LABEL: func @matmul_transpose_rhs
// TF32: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_tf32_r32_t01"
// BAD: for the --precision option: Cannot find option named 'fp8'
func.func @matmul_transpose_rhs(%x: tensor<2x3x16xf32>, %w: tensor<8x16xf32>) -> tensor<2x3x8xf32> {
  %0 = tfm.matmul %x, %w transpose_rhs : tensor<2x3x16xf32>, tensor<8x16xf32> -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// CHECK-LABEL: func @attention
// CHECK: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_f32_r44_t01"{{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x6x8xf32>, tensor<1x2x5x8xf32>)
// CHECK: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_f32_r44_t00"{{.*}} outs(%{{.*}} : tensor<1x2x6x4xf32>)
func.func @attention(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x4x3x4xf32> {
  %o = tfm.attention %q, %k, %v causal scale = 0.5 : tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32> -> tensor<1x4x3x4xf32>
  return %o : tensor<1x4x3x4xf32>
}

// -----

// bf16 GEMMs are named by their types whatever `precision` asks of f32
// ones: a bf16 program's, and pmlir-store-bf16's, with a bf16 result where
// it is stored and an f32 one where it leaves; tensor cores sum in f32.
// CHECK-LABEL: func @bf16
// CHECK: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_bf16_r22_t00"
// TF32-LABEL: func @bf16
// TF32: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_bf16_r22_t00"
// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-store-bf16 --pmlir-select-gpu-kernels=precision=bf16 --split-input-file | FileCheck %s --check-prefix=STORED
// STORED-LABEL: func @stored_in_bf16
// STORED: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_bf16_r22_t00"{{.*}} outs(%{{.*}} : tensor<3x8xbf16>)
// STORED: linalg.generic {{.*}}library_call = "pmlir_gpu_matmul_bf16f32_r22_t00"{{.*}} outs(%{{.*}} : tensor<3x4xf32>)
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

// Other element types stay generated kernels.
// CHECK-LABEL: func @f16
// CHECK-NOT: library_call
func.func @f16(%x: tensor<3x16xf16>, %w: tensor<16x8xf16>) -> tensor<3x8xf16> {
  %0 = tfm.matmul %x, %w : tensor<3x16xf16>, tensor<16x8xf16> -> tensor<3x8xf16>
  return %0 : tensor<3x8xf16>
}

// -----

// So do GEMMs of ranks the runtime's GEMM family (RuntimeAbi.def) has no
// cuBLASLt kernel for (a result of rank 5), in every precision.
// CHECK-LABEL: func @no_kernel_of_these_ranks
// CHECK-NOT: library_call
// TF32-LABEL: func @no_kernel_of_these_ranks
// TF32-NOT: library_call
func.func @no_kernel_of_these_ranks(%x: tensor<2x2x2x3x16xf32>, %w: tensor<16x8xf32>) -> tensor<2x2x2x3x8xf32> {
  %0 = tfm.matmul %x, %w : tensor<2x2x2x3x16xf32>, tensor<16x8xf32> -> tensor<2x2x2x3x8xf32>
  return %0 : tensor<2x2x2x3x8xf32>
}
