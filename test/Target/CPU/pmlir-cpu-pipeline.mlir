// The CPU pipeline takes whole models to the LLVM dialect.
// RUN: pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-cpu-pipeline | FileCheck %s
// RUN: pmlir-opt %pmlir_src/models/tiny-llama.mlir --pmlir-cpu-pipeline | FileCheck %s
// RUN: pmlir-opt %s --pmlir-cpu-pipeline=entry=gelu_of_norm | FileCheck %s --check-prefix=SMALL
// RUN: pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-cpu-pipeline=precision=bf16 | FileCheck %s --check-prefix=BF16
// Options that make no CPU program are refused when the pipeline is built.
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-cpu-pipeline=precision=tf32 2>&1 | FileCheck %s --check-prefix=BAD-TF32
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-cpu-pipeline=rank=3 2>&1 | FileCheck %s --check-prefix=BAD-RANK
// BAD-TF32: error: pmlir-cpu-pipeline: precision tf32 is a GPU's: a CPU has no TF32 arithmetic (f32 or bf16)
// BAD-RANK: error: pmlir-cpu-pipeline: rank names the job's rank whose work predict counts: it needs predict

// bf16: GEMMs on bf16 operands, the conversions as integer arithmetic (no
// bf16 instructions or library calls left for x86).
// BF16: llvm.call @pmlir_matmul_bf16f32_r32_t01(
// BF16: llvm.call @pmlir_matmul_bf16_r32_t00(
// BF16-NOT: llvm.fpext
// BF16-NOT: llvm.fptrunc

// CHECK: llvm.func @forward
// No tfm op is left (a function keeps the tfm.forward_layer mark of the
// block it was outlined from).
// CHECK-NOT: {{^ *(%[^ ]+ = )?"?}}tfm.
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// CHECK-NOT: tensor.

// Intermediate buffers are freed; the returned one is the caller's.
// SMALL-LABEL: llvm.func @gelu_of_norm
// SMALL: llvm.call @malloc
// SMALL: llvm.call @free
// SMALL: llvm.return
func.func @gelu_of_norm(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  %n = tfm.rmsnorm %x, %g eps = 1.0e-06 : tensor<4x16xf32>, tensor<16xf32>
  %y = tfm.gelu %n tanh : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// An argument returned as it is: the caller gets a copy it owns (the
// dealloc pipeline's clone, lowered), not the argument's buffer.
// SMALL-LABEL: llvm.func @identity
// SMALL-NOT: bufferization.
// SMALL-NOT: unrealized_conversion_cast
// SMALL: llvm.call @malloc
// SMALL: llvm.return
func.func @identity(%x: tensor<5x6xf32>) -> tensor<5x6xf32> {
  return %x : tensor<5x6xf32>
}

// The parts of a concatenation are written where they go (the gradient of
// a weight split into Q, K and V is three GEMMs' results side by side):
// each GEMM writes its columns of the one buffer, no part is copied.
// SMALL-LABEL: llvm.func @concat_of_gemms
// SMALL: llvm.call @malloc
// SMALL-NOT: llvm.call @malloc
// SMALL: llvm.call @pmlir_matmul_f32_r22_t00(
// SMALL-NOT: llvm.call @malloc
// SMALL: llvm.call @pmlir_matmul_f32_r22_t00(
// SMALL-NOT: memrefCopy
// SMALL: llvm.return
func.func @concat_of_gemms(%x: tensor<4x16xf32>, %a: tensor<16x8xf32>, %b: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %p = tfm.matmul %x, %a : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %q = tfm.matmul %x, %b : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %c = tfm.concat %p, %q dim = 1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}
