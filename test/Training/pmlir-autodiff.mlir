// pmlir-autodiff builds @grad beside @forward: the loss, then the gradient of
// each parameter, with a backward layer per forward layer.
// RUN: pmlir-opt %s --split-input-file --pmlir-autodiff | FileCheck %s
// RUN: pmlir-opt %s --split-input-file --pmlir-autodiff="recompute=full name=train_grad keep-entry=false" | FileCheck %s --check-prefix=FULL
// RUN: pmlir-opt %s --split-input-file --pmlir-autodiff="recompute=none keep-entry=false" | FileCheck %s --check-prefix=NONE

func.func @forward(%ids: tensor<2x8xi64> {tfm.name = "input_ids", tfm.role = "input"},
                   %labels: tensor<2x8xi64> {tfm.name = "labels", tfm.role = "label"},
                   %wte: tensor<11x16xf32> {tfm.name = "wte.weight", tfm.role = "param"},
                   %g: tensor<16xf32> {tfm.name = "ln.weight", tfm.role = "param"},
                   %b: tensor<16xf32> {tfm.name = "ln.bias", tfm.role = "param"},
                   %w1: tensor<16x32xf32> {tfm.name = "fc.weight", tfm.role = "param"},
                   %w2: tensor<32x16xf32> {tfm.name = "proj.weight", tfm.role = "param"},
                   %unused: tensor<5xf32> {tfm.name = "unused.weight", tfm.role = "param"})
    -> tensor<f32> {
  %x = tfm.embedding %wte[%ids] : tensor<11x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %h = tfm.layer 0 : tensor<2x8x16xf32> {
    %n = tfm.layernorm %x, %g, %b eps = 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
    %u = tfm.matmul %n, %w1 : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
    %a = tfm.gelu %u tanh : tensor<2x8x32xf32>
    %d = tfm.matmul %a, %w2 : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    %r = tfm.add %x, %d : tensor<2x8x16xf32>, tensor<2x8x16xf32>
    tfm.yield %r : tensor<2x8x16xf32>
  }
  %logits = tfm.matmul %h, %wte transpose_rhs : tensor<2x8x16xf32>, tensor<11x16xf32> -> tensor<2x8x11xf32>
  %loss = tfm.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x8x11xf32>, tensor<2x8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// The forward is kept.
// CHECK-LABEL: func.func @forward(
// CHECK: tfm.layer 0 : tensor<2x8x16xf32> {

// CHECK-LABEL: func.func @grad(
// CHECK-SAME: -> (tensor<f32> {tfm.name = "loss"}, tensor<11x16xf32> {tfm.name = "wte.weight", tfm.sharded_like = 2 : i64},
// CHECK-SAME: tensor<5xf32> {tfm.name = "unused.weight", tfm.sharded_like = 7 : i64})
// The forward layer yields its output, then what its backward layer reads:
// the norm's input is the layer's input (from above), so it keeps the
// norm's output, the GELU's input and output.
// CHECK: %[[FWD:.*]]:4 = tfm.layer 0 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32> {
// CHECK:   tfm.yield %[[R:.*]], %[[N:.*]], %[[U:.*]], %[[A:.*]] :
// CHECK: %[[LOSS:.*]] = tfm.cross_entropy
// CHECK: %[[ONE:.*]] = tfm.fill 1.000000e+00 : tensor<f32>
// CHECK: %[[COUNT:.*]] = tfm.count_tokens %arg1 ignore_index = -100
// CHECK: %[[DLOGITS:.*]] = tfm.cross_entropy_grad %{{.*}}, %arg1, %[[ONE]], %[[COUNT]] ignore_index = -100
// CHECK: %[[DH:.*]] = tfm.matmul %[[DLOGITS]], %arg2 :
// CHECK: %[[DHEAD:.*]] = tfm.weight_grad %[[DLOGITS]], %[[FWD]]#0 : tensor<2x8x11xf32>, tensor<2x8x16xf32> -> tensor<11x16xf32>
// The backward layer yields the gradients of what the block uses from
// above: its input, then the parameters in order of first use.
// CHECK: %[[BWD:.*]]:5 = tfm.layer 0 backward : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x32xf32>, tensor<32x16xf32> {
// CHECK:   tfm.matmul %[[DH]], %arg6 transpose_rhs
// CHECK:   tfm.weight_grad %[[FWD]]#3, %[[DH]]
// CHECK:   tfm.gelu_grad %[[FWD]]#2, %{{.*}} tanh
// CHECK:   tfm.weight_grad %[[FWD]]#1,
// CHECK:   tfm.layernorm_grad %[[X:.*]], %arg3,
// CHECK:   tfm.layernorm_weight_grad
// CHECK:   tfm.sum_leading
// CHECK:   tfm.add %[[DH]],
// CHECK:   tfm.yield
// The residual's gradient reaches the embedding.
// CHECK: %[[DTABLE:.*]] = tfm.embedding_grad %[[BWD]]#0[%arg0] : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<11x16xf32>
// CHECK: %[[DWTE:.*]] = tfm.add %[[DHEAD]], %[[DTABLE]]
// CHECK: %[[ZEROS:.*]] = tfm.fill 0.000000e+00 : tensor<5xf32>
// CHECK: return %[[LOSS]], %[[DWTE]], %[[BWD]]#1, %[[BWD]]#2, %[[BWD]]#3, %[[BWD]]#4, %[[ZEROS]] :

// Full recomputation: the forward layer keeps nothing but its output and
// its backward layer runs the block again.
// FULL-NOT: func.func @forward(
// FULL-LABEL: func.func @train_grad(
// FULL: %[[FWD:.*]] = tfm.layer 0 : tensor<2x8x16xf32> {
// FULL: tfm.layer 0 backward :
// FULL-NEXT: tfm.layernorm
// FULL-NEXT: tfm.matmul
// FULL-NEXT: tfm.gelu
// FULL: tfm.gelu_grad

// -----

// Attention: selective recomputation keeps q, k and v, and the gradient
// recomputes the probabilities; without recomputation the forward's
// attention returns them too, the layer keeps them and the gradient reads
// them.
func.func @forward(%x: tensor<1x2x4x8xf32> {tfm.name = "x", tfm.role = "input"},
                   %q: tensor<1x2x4x8xf32> {tfm.name = "q", tfm.role = "param"},
                   %k: tensor<1x1x4x8xf32> {tfm.name = "k", tfm.role = "param"},
                   %v: tensor<1x1x4x8xf32> {tfm.name = "v", tfm.role = "param"},
                   %w: tensor<16x5xf32> {tfm.name = "w", tfm.role = "param"},
                   %labels: tensor<1x4xi64> {tfm.name = "labels", tfm.role = "label"})
    -> tensor<f32> {
  %o = tfm.layer 0 : tensor<1x2x4x8xf32> {
    %qs = tfm.mul %x, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
    %a = tfm.attention %qs, %k, %v causal scale = 0.35 : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
    tfm.yield %a : tensor<1x2x4x8xf32>
  }
  %m = tfm.merge_heads %o : tensor<1x2x4x8xf32> -> tensor<1x4x16xf32>
  %logits = tfm.matmul %m, %w : tensor<1x4x16xf32>, tensor<16x5xf32> -> tensor<1x4x5xf32>
  %loss = tfm.cross_entropy %logits, %labels ignore_index = -100 : tensor<1x4x5xf32>, tensor<1x4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @grad(
// CHECK: %[[FWD:.*]]:2 = tfm.layer 0 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> {
// CHECK:   %[[QS:.*]] = tfm.mul
// CHECK:   %[[A:.*]] = tfm.attention %[[QS]], %arg2, %arg3 causal scale = 3.500000e-01 : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>
// CHECK:   tfm.yield %[[A]], %[[QS]]
// CHECK: tfm.layer 0 backward
// CHECK-NOT: tfm.attention {{.*}}scale
// CHECK:   tfm.attention_grad %[[FWD]]#1, %arg2, %arg3, %{{[^ ]*}} causal scale

// NONE-LABEL: func.func @grad(
// NONE: %[[FWD:.*]]:3 = tfm.layer 0 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32> {
// NONE:   %[[QS:.*]] = tfm.mul
// NONE:   %[[A:.*]], %[[P:.*]] = tfm.attention %[[QS]], %arg2, %arg3 causal scale = 3.500000e-01 : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
// NONE:   tfm.yield %[[A]], %[[QS]], %[[P]]
// NONE: tfm.layer 0 backward
// NONE-NOT: tfm.attention {{.*}}scale
// NONE:   tfm.attention_grad %[[FWD]]#1, %arg2, %arg3, %{{[^ ]*}} probabilities %[[FWD]]#2 causal scale
