// RUN: pmlir-opt %s --pmlir-print-model-summary | FileCheck %s
// RUN: pmlir-opt %s --pmlir-print-model-summary | FileCheck %s --check-prefix=DYNAMIC

// The summary is printed before the unchanged module.
// CHECK:      model @two_layer_mlp
// CHECK-NEXT:   layers:  2
// CHECK-NEXT:   inputs:  input_ids tensor<4x8xi64>, %arg5 tensor<8xi64>
// CHECK-NEXT:   weights: 4 tensors, 784 parameters (0.0 MB)
// CHECK-NEXT:   results: tensor<4x8x16xf32>, tensor<4x8x16xf32>
// 2 * (4*8) * 16 * 16 per matmul, 2 matmuls, and the head 2 * 32 * 16 * 1:
// 32768 + 1024 = 33792 FLOPs.
// CHECK-NEXT:   dense matmul + attention FLOPs per call: 3.379e-05 GFLOP
// CHECK-NEXT:   ops:     tfm.add 1, tfm.embedding 1, tfm.gelu 1, tfm.layer 2, tfm.matmul 3
// CHECK-NOT:  model @no_tfm_ops
// CHECK:      module
// CHECK:      func.func @two_layer_mlp
func.func @two_layer_mlp(%ids: tensor<4x8xi64> {tfm.name = "input_ids"},
                         %emb: tensor<16x16xf32> {tfm.name = "emb.weight"},
                         %w1: tensor<16x16xf32> {tfm.name = "l.0.weight"},
                         %w2: tensor<16x16xf32> {tfm.name = "l.1.weight"},
                         %head: tensor<1x16xf32> {tfm.name = "head.weight"},
                         %unnamed: tensor<8xi64>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %x = tfm.embedding %emb[%ids] : tensor<16x16xf32>, tensor<4x8xi64> -> tensor<4x8x16xf32>
  %h0 = tfm.layer 0 : tensor<4x8x16xf32> {
    %y = tfm.matmul %x, %w1 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %g = tfm.gelu %y erf : tensor<4x8x16xf32>
    tfm.yield %g : tensor<4x8x16xf32>
  }
  %h1 = tfm.layer 1 : tensor<4x8x16xf32> {
    %y = tfm.matmul %h0, %w2 : tensor<4x8x16xf32>, tensor<16x16xf32> -> tensor<4x8x16xf32>
    %r = tfm.add %h0, %y : tensor<4x8x16xf32>, tensor<4x8x16xf32>
    tfm.yield %r : tensor<4x8x16xf32>
  }
  %s = tfm.matmul %h1, %head transpose_rhs : tensor<4x8x16xf32>, tensor<1x16xf32> -> tensor<4x8x1xf32>
  return %h0, %h1 : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}

func.func @no_tfm_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// Dynamic dimensions are not multiplied in (the kDynamic sentinel once
// overflowed into negative counts): the weights of dynamic shape are named
// apart, and the FLOPs of the matmul with a dynamic dimension are left out.
// DYNAMIC:      model @dynamic
// DYNAMIC:        weights: 2 tensors, 128 parameters (0.0 MB)
// DYNAMIC-NEXT:   results: tensor<?x16xf32>
// DYNAMIC-NEXT:   dense matmul + attention FLOPs per call: 0 GFLOP (1 weight tensors of dynamic shape are not counted in parameters or FLOPs)
func.func @dynamic(%x: tensor<?x8xf32> {tfm.name = "input_ids"}, %w: tensor<8x16xf32> {tfm.name = "w"},
                   %v: tensor<?x16xf32> {tfm.name = "v"}) -> tensor<?x16xf32> {
  %y = tfm.matmul %x, %w : tensor<?x8xf32>, tensor<8x16xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
