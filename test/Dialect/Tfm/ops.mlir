// Every tfm op parses, prints and round-trips, in the custom and the generic
// form.
// RUN: pmlir-opt %s | pmlir-opt | FileCheck %s
// RUN: pmlir-opt %s --mlir-print-op-generic | pmlir-opt | FileCheck %s

// An argument's role is an attribute of its own or, as programs written
// before it had it, the role's name.
// CHECK-LABEL: func @argument_roles
// CHECK-SAME: {tfm.role = #tfm<role input>}
// CHECK-SAME: {tfm.role = #tfm<role optimizer_state>}
// CHECK-SAME: {tfm.role = "param"}
func.func @argument_roles(%ids: tensor<2xi64> {tfm.role = #tfm<role input>},
                          %m: tensor<4xf32> {tfm.role = #tfm<role optimizer_state>},
                          %w: tensor<4xf32> {tfm.role = "param"}) {
  return
}

// CHECK-LABEL: func @embedding_of_token_ids
func.func @embedding_of_token_ids(%table: tensor<97x16xf32>, %ids: tensor<2x7xi64>) -> tensor<2x7x16xf32> {
  // CHECK: tfm.embedding %{{.*}}[%{{.*}}] : tensor<97x16xf32>, tensor<2x7xi64> -> tensor<2x7x16xf32>
  %0 = tfm.embedding %table[%ids] : tensor<97x16xf32>, tensor<2x7xi64> -> tensor<2x7x16xf32>
  return %0 : tensor<2x7x16xf32>
}

// CHECK-LABEL: func @embedding_i32_ids_bf16_dynamic
func.func @embedding_i32_ids_bf16_dynamic(%table: tensor<?x16xbf16>, %ids: tensor<?xi32>) -> tensor<?x16xbf16> {
  // CHECK: tfm.embedding %{{.*}}[%{{.*}}] : tensor<?x16xbf16>, tensor<?xi32> -> tensor<?x16xbf16>
  %0 = tfm.embedding %table[%ids] : tensor<?x16xbf16>, tensor<?xi32> -> tensor<?x16xbf16>
  return %0 : tensor<?x16xbf16>
}

// CHECK-LABEL: func @head_tail_order
func.func @head_tail_order(%q: tensor<1x4x4x16xf32>, %k: tensor<1x2x8x16xf32>, %o: index)
    -> (tensor<4xi64>, tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) {
  // CHECK: tfm.arange start = 0 plus %{{.*}} head_tail <ranks = 2, length = 8> : tensor<4xi64>
  %pos = tfm.arange start = 0 plus %o head_tail <ranks = 2, length = 8> : tensor<4xi64>
  // CHECK: tfm.attention %{{.*}} causal query_offset %{{.*}} head_tail <ranks = 2, length = 8> scale
  %a = tfm.attention %q, %k, %k causal query_offset %o head_tail <ranks = 2, length = 8>
      scale = 2.5e-01 : tensor<1x4x4x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
      -> tensor<1x4x4x16xf32>
  // CHECK: tfm.attention_grad %{{.*}} causal query_offset %{{.*}} head_tail <ranks = 2, length = 8> scale
  %dq, %dk, %dv = tfm.attention_grad %q, %k, %k, %a causal query_offset %o
      head_tail <ranks = 2, length = 8> scale = 2.5e-01
      : tensor<1x4x4x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x4x16xf32>
      -> tensor<1x4x4x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %pos, %a, %dq : tensor<4xi64>, tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>
}

// CHECK-LABEL: func @arange_positions
func.func @arange_positions() -> (tensor<13xi64>, tensor<4xi32>) {
  // CHECK: tfm.arange start = 0 : tensor<13xi64>
  %0 = tfm.arange start = 0 : tensor<13xi64>
  // CHECK: tfm.arange start = 9 : tensor<4xi32>
  %1 = tfm.arange start = 9 : tensor<4xi32>
  return %0, %1 : tensor<13xi64>, tensor<4xi32>
}

// CHECK-LABEL: func @matmul_forms
func.func @matmul_forms(%x: tensor<2x7x16xf32>, %w: tensor<16x13xf32>, %wt: tensor<13x16xf32>,
                        %q: tensor<2x4x7x8xf32>, %k: tensor<2x4x7x8xf32>, %y: tensor<7x16xf32>) {
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<16x13xf32> -> tensor<2x7x13xf32>
  %0 = tfm.matmul %x, %w : tensor<2x7x16xf32>, tensor<16x13xf32> -> tensor<2x7x13xf32>
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x7x16xf32>, tensor<13x16xf32> -> tensor<2x7x13xf32>
  %1 = tfm.matmul %x, %wt transpose_rhs : tensor<2x7x16xf32>, tensor<13x16xf32> -> tensor<2x7x13xf32>
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x7xf32>
  %2 = tfm.matmul %q, %k transpose_rhs : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x7xf32>
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<16x13xf32>, tensor<7x16xf32> -> tensor<13x7xf32>
  %3 = tfm.matmul %w, %y transpose_lhs transpose_rhs : tensor<16x13xf32>, tensor<7x16xf32> -> tensor<13x7xf32>
  return
}

// CHECK-LABEL: func @matmul_f16_dynamic
func.func @matmul_f16_dynamic(%x: tensor<?x7x16xf16>, %w: tensor<16x?xf16>) -> tensor<?x7x?xf16> {
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} : tensor<?x7x16xf16>, tensor<16x?xf16> -> tensor<?x7x?xf16>
  %0 = tfm.matmul %x, %w : tensor<?x7x16xf16>, tensor<16x?xf16> -> tensor<?x7x?xf16>
  return %0 : tensor<?x7x?xf16>
}

// CHECK-LABEL: func @elementwise_with_trailing_broadcast
func.func @elementwise_with_trailing_broadcast(%x: tensor<2x7x16xf32>, %bias: tensor<16xf32>,
                                               %table: tensor<7x16xf32>) -> tensor<2x7x16xf32> {
  // CHECK: tfm.add %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<16xf32>
  %0 = tfm.add %x, %bias : tensor<2x7x16xf32>, tensor<16xf32>
  // CHECK: tfm.sub %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<7x16xf32>
  %1 = tfm.sub %0, %table : tensor<2x7x16xf32>, tensor<7x16xf32>
  // CHECK: tfm.mul %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<2x7x16xf32>
  %2 = tfm.mul %1, %x : tensor<2x7x16xf32>, tensor<2x7x16xf32>
  // CHECK: tfm.scale %{{.*}}, 1.250000e-01 : tensor<2x7x16xf32>
  %3 = tfm.scale %2, 0.125 : tensor<2x7x16xf32>
  return %3 : tensor<2x7x16xf32>
}

// CHECK-LABEL: func @activations
func.func @activations(%x: tensor<2x7x16xbf16>) -> tensor<2x7x16xbf16> {
  // CHECK: tfm.gelu %{{.*}} tanh : tensor<2x7x16xbf16>
  %0 = tfm.gelu %x tanh : tensor<2x7x16xbf16>
  // CHECK: tfm.gelu %{{.*}} erf : tensor<2x7x16xbf16>
  %1 = tfm.gelu %0 erf : tensor<2x7x16xbf16>
  // CHECK: tfm.silu %{{.*}} : tensor<2x7x16xbf16>
  %2 = tfm.silu %1 : tensor<2x7x16xbf16>
  // CHECK: tfm.softmax %{{.*}} : tensor<2x7x16xbf16>
  %3 = tfm.softmax %2 : tensor<2x7x16xbf16>
  return %3 : tensor<2x7x16xbf16>
}

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x7x16xf32> {
  // CHECK: tfm.layernorm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x7x16xf32>, tensor<16xf32>
  %0 = tfm.layernorm %x, %g, %b eps = 1.0e-05 : tensor<2x7x16xf32>, tensor<16xf32>
  // CHECK: tfm.rmsnorm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x7x16xf32>, tensor<16xf32>
  %1 = tfm.rmsnorm %0, %g eps = 1.0e-06 : tensor<2x7x16xf32>, tensor<16xf32>
  return %1 : tensor<2x7x16xf32>
}

// CHECK-LABEL: func @grouped_query_attention_block
func.func @grouped_query_attention_block(%xq: tensor<2x7x32xf32>, %xkv: tensor<2x7x16xf32>,
                                         %pos: tensor<7xi64>) -> tensor<2x7x32xf32> {
  // CHECK: tfm.split_heads %{{.*}} heads = 4 : tensor<2x7x32xf32> -> tensor<2x4x7x8xf32>
  %q = tfm.split_heads %xq heads = 4 : tensor<2x7x32xf32> -> tensor<2x4x7x8xf32>
  // CHECK: tfm.split_heads %{{.*}} heads = 2 : tensor<2x7x16xf32> -> tensor<2x2x7x8xf32>
  %k = tfm.split_heads %xkv heads = 2 : tensor<2x7x16xf32> -> tensor<2x2x7x8xf32>
  // CHECK: tfm.rope %{{.*}}, %{{.*}} theta = 1.000000e+04 : tensor<2x4x7x8xf32>, tensor<7xi64>
  %qr = tfm.rope %q, %pos theta = 10000.0 : tensor<2x4x7x8xf32>, tensor<7xi64>
  // CHECK: tfm.rope %{{.*}}, %{{.*}} theta = 5.000000e+05 : tensor<2x2x7x8xf32>, tensor<7xi64>
  %kr = tfm.rope %k, %pos theta = 500000.0 : tensor<2x2x7x8xf32>, tensor<7xi64>
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale = 0.35355339059327379 : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32> -> tensor<2x4x7x8xf32>
  %o = tfm.attention %qr, %kr, %k causal scale = 0.35355339059327379 : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32> -> tensor<2x4x7x8xf32>
  // CHECK: tfm.merge_heads %{{.*}} : tensor<2x4x7x8xf32> -> tensor<2x7x32xf32>
  %m = tfm.merge_heads %o : tensor<2x4x7x8xf32> -> tensor<2x7x32xf32>
  return %m : tensor<2x7x32xf32>
}

// CHECK-LABEL: func @attention_non_causal_cross_lengths
func.func @attention_non_causal_cross_lengths(%q: tensor<1x2x3x8xf16>, %k: tensor<1x1x5x8xf16>,
                                              %v: tensor<1x1x5x4xf16>) -> tensor<1x2x3x4xf16> {
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 1.000000e+00 : tensor<1x2x3x8xf16>, tensor<1x1x5x8xf16>, tensor<1x1x5x4xf16> -> tensor<1x2x3x4xf16>
  %o = tfm.attention %q, %k, %v scale = 1.0 : tensor<1x2x3x8xf16>, tensor<1x1x5x8xf16>, tensor<1x1x5x4xf16> -> tensor<1x2x3x4xf16>
  return %o : tensor<1x2x3x4xf16>
}

// With its probabilities [B, Hq, S, Skv] as a second result.
// CHECK-LABEL: func @attention_returning_probabilities
func.func @attention_returning_probabilities(%q: tensor<1x2x3x8xf16>, %k: tensor<1x1x5x8xf16>,
                                             %v: tensor<1x1x5x4xf16>) -> tensor<1x2x3x5xf16> {
  // CHECK: %{{.*}}, %{{.*}} = tfm.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale = 1.000000e+00 : tensor<1x2x3x8xf16>, tensor<1x1x5x8xf16>, tensor<1x1x5x4xf16> -> tensor<1x2x3x4xf16>, tensor<1x2x3x5xf16>
  %o, %p = tfm.attention %q, %k, %v causal scale = 1.0 : tensor<1x2x3x8xf16>, tensor<1x1x5x8xf16>, tensor<1x1x5x4xf16> -> tensor<1x2x3x4xf16>, tensor<1x2x3x5xf16>
  return %p : tensor<1x2x3x5xf16>
}

// CHECK-LABEL: func @split_fused_qkv
func.func @split_fused_qkv(%w: tensor<16x48xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
  // CHECK: %{{.*}}:3 = tfm.split %{{.*}} dim = 1 : tensor<16x48xf32> -> tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  %0:3 = tfm.split %w dim = 1 : tensor<16x48xf32> -> tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  return %0#0, %0#1, %0#2 : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}

// CHECK-LABEL: func @layer_region
func.func @layer_region(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>) -> tensor<2x7x16xf32> {
  // CHECK: tfm.layer 3 : tensor<2x7x16xf32> {
  // CHECK:   tfm.rmsnorm
  // CHECK:   tfm.yield %{{.*}} : tensor<2x7x16xf32>
  // CHECK: }
  %0 = tfm.layer 3 : tensor<2x7x16xf32> {
    %n = tfm.rmsnorm %x, %g eps = 1.0e-06 : tensor<2x7x16xf32>, tensor<16xf32>
    %r = tfm.add %x, %n : tensor<2x7x16xf32>, tensor<2x7x16xf32>
    tfm.yield %r : tensor<2x7x16xf32>
  }
  return %0 : tensor<2x7x16xf32>
}

// CHECK-LABEL: func @cross_entropy_loss
func.func @cross_entropy_loss(%logits: tensor<2x7x97xf32>, %labels: tensor<2x7xi64>) -> tensor<f32> {
  // CHECK: tfm.cross_entropy %{{.*}}, %{{.*}} ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64> -> tensor<f32>
  %0 = tfm.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// The pieces of a vocab-parallel cross entropy (pmlir-partition makes them).
// CHECK-LABEL: func @vocab_parallel_cross_entropy
func.func @vocab_parallel_cross_entropy(%logits: tensor<2x7x49xf32>, %labels: tensor<2x7xi64>, %off: index) -> tensor<f32> {
  // CHECK: %[[M:.*]] = tfm.row_max %{{.*}} vocab_from %{{.*}} vocab = 97 : tensor<2x7x49xf32> -> tensor<2x7xf32>
  %m = tfm.row_max %logits vocab_from %off vocab = 97 : tensor<2x7x49xf32> -> tensor<2x7xf32>
  // CHECK: tfm.row_max %{{.*}} : tensor<2x7x49xf32> -> tensor<2x7xf32>
  %whole = tfm.row_max %logits : tensor<2x7x49xf32> -> tensor<2x7xf32>
  // CHECK: %[[P:.*]] = tfm.cross_entropy_parts %{{.*}}, %{{.*}}, %[[M]] vocab_from %{{.*}} vocab = 97 : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<2x7xf32> -> tensor<2x7x2xf32>
  %p = tfm.cross_entropy_parts %logits, %labels, %m vocab_from %off vocab = 97 : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<2x7xf32> -> tensor<2x7x2xf32>
  // CHECK: tfm.cross_entropy_combine %[[P]], %{{.*}} ignore_index = -100 : tensor<2x7x2xf32>, tensor<2x7xi64> -> tensor<f32>
  %0 = tfm.cross_entropy_combine %p, %labels ignore_index = -100 : tensor<2x7x2xf32>, tensor<2x7xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// Ring attention's steps: a block with its log-sum-exp, the online-softmax
// merge, and a block's gradients.
// CHECK-LABEL: func.func @ring_attention_steps
// CHECK: %[[O:.*]], %[[L:.*]] = tfm.attention_block %{{.*}}, %{{.*}}, %{{.*}} causal scale = 2.500000e-01 : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
// CHECK: tfm.attention_merge %[[O]], %[[L]], %[[O]], %[[L]] : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
// CHECK: tfm.attention_block_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal scale = 2.500000e-01 : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32> -> tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
func.func @ring_attention_steps(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %do: tensor<1x4x8x16xf32>)
    -> (tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x16xf32>) {
  %o, %lse = tfm.attention_block %q, %k, %v causal scale = 2.5e-01
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  %m, %mlse = tfm.attention_merge %o, %lse, %o, %lse : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  %dq, %dk, %dv = tfm.attention_block_grad %q, %k, %v, %do, %m, %mlse causal scale = 2.5e-01
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>,
        tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
      -> tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %m, %mlse, %dq : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x16xf32>
}
