// RUN: pmlir-opt %s | pmlir-opt | FileCheck %s
// RUN: pmlir-opt %s --mlir-print-op-generic | pmlir-opt | FileCheck %s
// Round trip of every pipe op, also through the generic form, where the
// kinds are attributes of their own (#pipe<schedule_kind "1f1b">).

// CHECK-LABEL: func.func @two_stages
func.func @two_stages(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<f32>) {
  // CHECK: %[[F:.*]] = pipe.fragment stage 0 "F" microbatch 1 : tensor<2x4xf32> {
  // CHECK:   pipe.yield %{{.*}} : tensor<2x4xf32>
  %f = pipe.fragment stage 0 "F" microbatch 1 : tensor<2x4xf32> {
    %y = tfm.gelu %x tanh : tensor<2x4xf32>
    pipe.yield %y : tensor<2x4xf32>
  }
  // CHECK: %[[T:.*]] = pipe.transfer %[[F]] from 0 to 1 : tensor<2x4xf32>
  %t = pipe.transfer %f from 0 to 1 : tensor<2x4xf32>
  %l = pipe.fragment stage 1 "F" : tensor<f32> {
    %s = tfm.sum_squares %t : tensor<2x4xf32> -> tensor<f32>
    pipe.yield %s : tensor<f32>
  }
  // CHECK: pipe.stage_sum %{{.*}} stages [1] : tensor<f32> -> tensor<f32>
  %sum = pipe.stage_sum %l stages [1] : tensor<f32> -> tensor<f32>
  return %t, %sum : tensor<2x4xf32>, tensor<f32>
}

// CHECK: pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2 {{\[}}["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2
    [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]

// A fragment without results (a stage's empty input-gradient part), and
// the marks of a fragment's work for the trace.
// CHECK-LABEL: func.func @marks
// CHECK: pipe.fragment stage 0 "I" {
// CHECK-NEXT: }
// CHECK: pipe.work_begin stage 1 "W" microbatch 3
// CHECK: pipe.work_end stage 1 "W" microbatch 3
func.func @marks() {
  pipe.fragment stage 0 "I" {
  }
  pipe.work_begin stage 1 "W" microbatch 3
  pipe.work_end stage 1 "W" microbatch 3
  return
}
