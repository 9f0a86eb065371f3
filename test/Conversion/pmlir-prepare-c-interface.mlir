// Each split is lowered on its own; a split without the entry fails, so
// the modules and the errors are checked apart.
// RUN: not pmlir-opt %s --split-input-file --pmlir-prepare-c-interface=entry=forward \
// RUN:   > %t.forward 2> %t.forward.err
// RUN: FileCheck %s --input-file=%t.forward
// RUN: FileCheck %s --input-file=%t.forward.err --check-prefix=NO-FORWARD
// RUN: not pmlir-opt %s --split-input-file --pmlir-prepare-c-interface=entry=other \
// RUN:   > %t.other 2> %t.other.err
// RUN: FileCheck %s --input-file=%t.other --check-prefix=OTHER
// RUN: FileCheck %s --input-file=%t.other.err --check-prefix=NO-OTHER

// The entry is called through its C interface on read-only arguments; the
// binding attributes are gone from every function.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:  (%{{.*}}: tensor<2x8xi64> {bufferization.writable = false},
// CHECK-SAME:  %{{.*}}: tensor<8x4xf32> {bufferization.writable = false})
// CHECK-SAME:  -> tensor<2x8x4xf32> attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @helper
// CHECK-SAME:  (%{{.*}}: tensor<8x4xf32>) -> tensor<8x4xf32> {
// A module without the entry has nothing to call: an error.
// NO-OTHER: error: pmlir-prepare-c-interface: no function @other to call through the C interface (the entry option names it)
// NO-OTHER: error: pmlir-prepare-c-interface: no function @other to call through the C interface
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

// Another entry: the binding attributes go from it too. Without @forward
// the first run's split has nothing to call.
// NO-FORWARD: error: pmlir-prepare-c-interface: no function @forward to call through the C interface
// OTHER-LABEL: func.func @other
// OTHER-SAME:  (%{{.*}}: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32>
// OTHER-SAME:  attributes {llvm.emit_c_interface}
func.func @other(%x: tensor<4xf32> {tfm.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A declaration is nothing to call either.
// NO-FORWARD: error: pmlir-prepare-c-interface: no function @forward with a body to call through the C interface
func.func private @forward(%x: tensor<4xf32>) -> tensor<4xf32>

// -----

// A program still cut into pipeline stages is lowered one pipeline rank at
// a time (the stages' ops have no lowering of their own).
// NO-OTHER: error: pmlir-prepare-c-interface: no function @other
// NO-FORWARD: error: 'pipe.fragment' op belongs to a program still cut into pipeline stages: lower one pipeline rank of it first (pmlir-pipeline-lower, or pmlir-compile-pipeline's pipeline-rank)
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stages = 2 : i64} {
  %f = pipe.fragment stage 0 "F" : tensor<4xf32> {
    pipe.yield %x : tensor<4xf32>
  }
  return %f : tensor<4xf32>
}

// -----

// A transfer between stages is refused too; a trace's work markers are
// not (the runtime times them).
// NO-OTHER: error: pmlir-prepare-c-interface: no function @other
// NO-FORWARD: error: 'pipe.transfer' op belongs to a program still cut into pipeline stages
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = pipe.transfer %x from 0 to 1 : tensor<4xf32>
  return %t : tensor<4xf32>
}

// -----

// NO-OTHER: error: pmlir-prepare-c-interface: no function @other
// CHECK-LABEL: func.func @forward
// CHECK: pipe.work_begin
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.work_begin stage 0 "F" microbatch 0
  return %x : tensor<4xf32>
}
