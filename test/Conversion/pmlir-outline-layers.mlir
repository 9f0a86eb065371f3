// RUN: pmlir-opt %s --pmlir-outline-layers --split-input-file | FileCheck %s

// Two layers with the same body call one function with their own weights;
// a layer with another body gets its own.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>, %[[G0:.*]]: tensor<16xf32>, %[[G1:.*]]: tensor<16xf32>, %[[G2:.*]]: tensor<16xf32>)
func.func @forward(%x: tensor<2x8x16xf32>, %g0: tensor<16xf32>, %g1: tensor<16xf32>, %g2: tensor<16xf32>) -> tensor<2x8x16xf32> {
  // CHECK: %[[A:.*]] = call @forward_layer(%[[X]], %[[G0]]) : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: %[[B:.*]] = call @forward_layer(%[[A]], %[[G1]])
  // CHECK: %[[C:.*]] = call @forward_layer_0(%[[B]], %[[G2]])
  // CHECK: return %[[C]]
  %0 = tfm.layer 0 : tensor<2x8x16xf32> {
    %n = tfm.rmsnorm %x, %g0 eps = 1.0e-06 : tensor<2x8x16xf32>, tensor<16xf32>
    %r = tfm.add %x, %n : tensor<2x8x16xf32>, tensor<2x8x16xf32>
    tfm.yield %r : tensor<2x8x16xf32>
  }
  %1 = tfm.layer 1 : tensor<2x8x16xf32> {
    %n = tfm.rmsnorm %0, %g1 eps = 1.0e-06 : tensor<2x8x16xf32>, tensor<16xf32>
    %r = tfm.add %0, %n : tensor<2x8x16xf32>, tensor<2x8x16xf32>
    tfm.yield %r : tensor<2x8x16xf32>
  }
  %2 = tfm.layer 2 : tensor<2x8x16xf32> {
    %n = tfm.rmsnorm %1, %g2 eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
    %r = tfm.add %1, %n : tensor<2x8x16xf32>, tensor<2x8x16xf32>
    tfm.yield %r : tensor<2x8x16xf32>
  }
  return %2 : tensor<2x8x16xf32>
}
// CHECK: func.func private @forward_layer(%[[LX:.*]]: tensor<2x8x16xf32>, %[[LG:.*]]: tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[N:.*]] = tfm.rmsnorm %[[LX]], %[[LG]] eps = 9.9999999999999995E-7
// CHECK-NEXT: %[[R:.*]] = tfm.add %[[LX]], %[[N]]
// CHECK-NEXT: return %[[R]]
// CHECK: func.func private @forward_layer_0(%{{.*}}: tensor<2x8x16xf32>, %{{.*}}: tensor<16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT: tfm.rmsnorm {{.*}} eps = 1.000000e-05
// CHECK-NOT: tfm.layer
