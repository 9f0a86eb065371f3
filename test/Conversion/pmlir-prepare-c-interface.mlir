// RUN: pmlir-opt %s --split-input-file --pmlir-prepare-c-interface | FileCheck %s
// RUN: pmlir-opt %s --split-input-file --pmlir-prepare-c-interface=entry=step \
// RUN:   | FileCheck %s --check-prefix=STEP

// The entry is called through its C interface on read-only arguments; the
// binding attributes are gone from every function.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:  (%{{.*}}: tensor<2x8xi64> {bufferization.writable = false},
// CHECK-SAME:  %{{.*}}: tensor<8x4xf32> {bufferization.writable = false})
// CHECK-SAME:  -> tensor<2x8x4xf32> attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @helper
// CHECK-SAME:  (%{{.*}}: tensor<8x4xf32>) -> tensor<8x4xf32> {
// STEP-LABEL: func.func @forward
// STEP-SAME:  (%{{.*}}: tensor<2x8xi64>, %{{.*}}: tensor<8x4xf32>) -> tensor<2x8x4xf32> {
func.func @forward(%ids: tensor<2x8xi64> {tfm.name = "input_ids", tfm.role = "input",
                                          tfm.dims = ["batch", "seq"]},
                   %w: tensor<8x4xf32> {tfm.name = "wte.weight", tfm.role = "param",
                                        tfm.global_type = tensor<8x8xf32>,
                                        tfm.sharding = [[], ["tp"]]})
    -> (tensor<2x8x4xf32> {tfm.name = "logits", tfm.sharding = [[], [], ["tp"]]}) {
  %w2 = func.call @helper(%w) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %e = tfm.embedding %w2[%ids] : tensor<8x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  return %e : tensor<2x8x4xf32>
}
func.func private @helper(%w: tensor<8x4xf32> {tfm.name = "inner"}) -> tensor<8x4xf32> {
  return %w : tensor<8x4xf32>
}

// -----

// Without the entry, only the attributes go.
// CHECK-LABEL: func.func @other
// CHECK-SAME:  (%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
func.func @other(%x: tensor<4xf32> {tfm.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
