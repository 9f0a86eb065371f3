// RUN: pmlir-opt %s --pmlir-drop-shardings | FileCheck %s

// The unsharded program that pmlir-run --check compares against: no mesh,
// no argument or result shardings, constraints replaced by their input;
// names and roles stay.
// CHECK:     module {
// CHECK-LABEL: func.func @mlp
// CHECK-SAME:  (%[[X:.*]]: tensor<4x16xf32> {tfm.name = "x", tfm.role = "input"},
// CHECK-SAME:  %[[W:.*]]: tensor<16x32xf32> {tfm.name = "w", tfm.role = "param"})
// CHECK-SAME:  -> (tensor<4x32xf32> {tfm.name = "y"})
// CHECK-NEXT:  %[[Y:.*]] = tfm.matmul %[[X]], %[[W]]
// CHECK-NEXT:  %[[G:.*]] = tfm.gelu %[[Y]] tanh
// CHECK-NEXT:  return %[[G]]
// CHECK-NOT: tfm.sharding
// CHECK-NOT: tfm.mesh
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @mlp(%x: tensor<4x16xf32> {tfm.name = "x", tfm.role = "input"},
                 %w: tensor<16x32xf32> {tfm.name = "w", tfm.role = "param",
                                        tfm.sharding = #tfm.sharding<[[], ["tp"]]>})
      -> (tensor<4x32xf32> {tfm.name = "y", tfm.sharding = #tfm.sharding<[[], []]>}) {
    %y = tfm.matmul %x, %w : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
    %c = tfm.sharding_constraint %y to <[[], ["tp"]]> : tensor<4x32xf32>
    %g = tfm.gelu %c tanh : tensor<4x32xf32>
    return %g : tensor<4x32xf32>
  }
}
