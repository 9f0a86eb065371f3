// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-select-cpu-kernels --pmlir-fuse-elementwise | FileCheck %s

// The bias add and the GELU fuse into one generic; the matmul keeps its
// library call and is fused with neither.
// CHECK-LABEL: func @matmul_bias_gelu
func.func @matmul_bias_gelu(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[MM:.*]] = linalg.generic {{.*}}library_call = "pmlir_matmul_f32_r22_t00"
  // CHECK: linalg.generic {{.*}} ins(%[[MM]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32>)
  // CHECK:   arith.addf
  // CHECK:   math.tanh
  // CHECK-NOT: linalg.generic
  // CHECK: return
  %y = tfm.matmul %x, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  %z = tfm.add %y, %b : tensor<4x8xf32>, tensor<8xf32>
  %g = tfm.gelu %z tanh : tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// A residual sum read by the norm's reductions and by the next residual add
// is computed once and stored, not recomputed in each of its consumers.
// CHECK-LABEL: func @shared_residual_is_not_recomputed
func.func @shared_residual_is_not_recomputed(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x16xf32>, tensor<4x16xf32>)
  // CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<4x16xf32>)
  // CHECK: linalg.generic {{.*}} ins(%[[R]], %[[SQ]], %arg2 :
  // CHECK-NOT: linalg.generic
  // CHECK: return
  %r = tfm.add %x, %y : tensor<4x16xf32>, tensor<4x16xf32>
  %n = tfm.rmsnorm %r, %g eps = 1.0e-06 : tensor<4x16xf32>, tensor<16xf32>
  %s = tfm.add %r, %n : tensor<4x16xf32>, tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// A running sum over calls (a step's microbatch gradients, each made by a
// call of a transformer block) stays a sum after each call: fused, the
// first terms would stay live until the last call returned. Without a
// call between, the two adds fuse.
// CHECK-LABEL: func @running_sum_over_calls
func.func private @block(tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @running_sum_over_calls(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK: %[[G0:.*]] = call @block
  // CHECK: %[[G1:.*]] = call @block
  // CHECK: %[[S1:.*]] = linalg.generic {{.*}} ins(%[[G0]], %[[G1]] :
  // CHECK: %[[G2:.*]] = call @block
  // CHECK: linalg.generic {{.*}} ins(%[[S1]], %[[G2]] :
  // CHECK-NOT: linalg.generic
  // CHECK: return
  %g0 = func.call @block(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %g1 = func.call @block(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %s1 = tfm.add %g0, %g1 : tensor<8x8xf32>, tensor<8x8xf32>
  %g2 = func.call @block(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %s2 = tfm.add %s1, %g2 : tensor<8x8xf32>, tensor<8x8xf32>
  return %s2 : tensor<8x8xf32>
}

// CHECK-LABEL: func @running_sum_without_calls
func.func @running_sum_without_calls(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK: linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 :
  // CHECK-NOT: linalg.generic
  // CHECK: return
  %s1 = tfm.add %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
  %s2 = tfm.add %s1, %c : tensor<8x8xf32>, tensor<8x8xf32>
  return %s2 : tensor<8x8xf32>
}
