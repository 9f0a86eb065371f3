// One case per verifier error of the tfm gradient ops.
// RUN: pmlir-opt %s -split-input-file -verify-diagnostics

func.func @weight_grad_rank(%x: tensor<16xf32>, %dy: tensor<13xf32>) {
  // expected-error @+1 {{operand 'lhs': expected rank >= 2 ([batch..., M, K]), got [16]}}
  %0 = tfm.weight_grad %x, %dy : tensor<16xf32>, tensor<13xf32> -> tensor<16x13xf32>
  return
}

// -----

func.func @weight_grad_rows(%x: tensor<2x7x16xf32>, %dy: tensor<2x6x13xf32>) {
  // expected-error @+1 {{operand 'rhs' shape: expected [2, 7, 13] (the batch and row dimensions of 'lhs', then N), got [2, 6, 13]}}
  %0 = tfm.weight_grad %x, %dy : tensor<2x7x16xf32>, tensor<2x6x13xf32> -> tensor<16x13xf32>
  return
}

// -----

func.func @weight_grad_rhs_rank(%x: tensor<2x7x16xf32>, %dy: tensor<14x13xf32>) {
  // expected-error @+1 {{operand 'rhs': expected rank 3 ([batch..., M, N], the rank of 'lhs'), got [14, 13]}}
  %0 = tfm.weight_grad %x, %dy : tensor<2x7x16xf32>, tensor<14x13xf32> -> tensor<16x13xf32>
  return
}

// -----

func.func @weight_grad_result(%x: tensor<2x7x16xf32>, %dy: tensor<2x7x13xf32>) {
  // expected-error @+1 {{result shape: expected [16, 13] ([K, N]), got [13, 16]}}
  %0 = tfm.weight_grad %x, %dy : tensor<2x7x16xf32>, tensor<2x7x13xf32> -> tensor<13x16xf32>
  return
}

// -----

func.func @sum_leading_not_trailing(%x: tensor<2x7x16xf32>) {
  // expected-error @+1 {{result shape: expected trailing dimensions of 'input' [2, 7, 16], got [2, 16]}}
  %0 = tfm.sum_leading %x : tensor<2x7x16xf32> -> tensor<2x16xf32>
  return
}

// -----

func.func @concat_types(%a: tensor<4x5xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{operand #1: expected 'tensor<4x5xf32>' (the type of operand #0), got 'tensor<4x6xf32>'}}
  %0 = tfm.concat %a, %b dim = 1 : tensor<4x5xf32>, tensor<4x6xf32> -> tensor<4x11xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{attribute 'dim': expected < 2 (the rank of the operands), got 2}}
  %0 = tfm.concat %a, %a dim = 2 : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x10xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{result shape: expected [4, 15] (the operands joined along 'dim'), got [4, 10]}}
  %0 = tfm.concat %a, %a, %a dim = 1 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x10xf32>
  return
}

// -----

func.func @layernorm_grad_gamma(%x: tensor<2x7x16xf32>, %g: tensor<15xf32>) {
  // expected-error @+1 {{operand 'gamma' shape: expected [16] (the last dimension of 'input'), got [15]}}
  %0 = tfm.layernorm_grad %x, %g, %x eps = 1.0e-05 : tensor<2x7x16xf32>, tensor<15xf32>
  return
}

// -----

func.func @rmsnorm_grad_epsilon(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'epsilon': expected a finite value > 0, got 0}}
  %0 = tfm.rmsnorm_grad %x, %g, %x eps = 0.0 : tensor<2x7x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @norm_weight_grad_result(%x: tensor<2x7x16xf32>) {
  // expected-error @+1 {{result shape: expected [16] (the last dimension of 'input'), got [7]}}
  %0 = tfm.layernorm_weight_grad %x, %x eps = 1.0e-05 : tensor<2x7x16xf32> -> tensor<7xf32>
  return
}

// -----

func.func @norm_weight_grad_epsilon(%x: tensor<2x7x16xf32>) {
  // expected-error @+1 {{attribute 'epsilon': expected a finite value > 0, got -1}}
  %0 = tfm.rmsnorm_weight_grad %x, %x eps = -1.0 : tensor<2x7x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @embedding_grad_rank(%dy: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+1 {{result: expected rank 2 [vocab, hidden], got [97]}}
  %0 = tfm.embedding_grad %dy[%ids] : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<97xf32>
  return
}

// -----

func.func @embedding_grad_ids(%dy: tensor<2x7x16xf32>, %ids: tensor<2x6xi64>) {
  // expected-error @+1 {{operand 'grad' shape: expected [2, 6, 16] (ids shape followed by hidden), got [2, 7, 16]}}
  %0 = tfm.embedding_grad %dy[%ids] : tensor<2x7x16xf32>, tensor<2x6xi64> -> tensor<97x16xf32>
  return
}

// -----

func.func @attention_grad_grad_shape(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x7x8xf32>, %do: tensor<2x4x7x5xf32>) {
  // expected-error @+1 {{operand 'grad' shape: expected [2, 4, 7, 8] (attention's result, [B, Hq, S, Dv]), got [2, 4, 7, 5]}}
  %0:3 = tfm.attention_grad %q, %k, %k, %do scale = 0.35
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x5xf32>
      -> tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>
  return
}

// -----

func.func @attention_grad_probabilities(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x7x8xf32>,
                                        %p: tensor<2x2x7x7xf32>) {
  // expected-error @+1 {{operand 'probabilities' shape: expected [2, 4, 7, 7] ([B, Hq, S, Skv]), got [2, 2, 7, 7]}}
  %0:3 = tfm.attention_grad %q, %k, %k, %q probabilities %p scale = 0.35
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x8xf32>,
        tensor<2x2x7x7xf32>
      -> tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>
  return
}

// -----

func.func @attention_grad_heads(%q: tensor<2x3x7x8xf32>, %k: tensor<2x2x7x8xf32>) {
  // expected-error @+1 {{query heads (3) must be a multiple of key/value heads (2) for grouped-query attention}}
  %0:3 = tfm.attention_grad %q, %k, %k, %q scale = 0.35
      : tensor<2x3x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x3x7x8xf32>
      -> tensor<2x3x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>
  return
}

// -----

func.func @attention_grad_result(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x7x8xf32>) {
  // expected-error @+1 {{result 'key_grad': expected 'tensor<2x2x7x8xf32>' (the type of its operand), got 'tensor<2x4x7x8xf32>'}}
  %0:3 = tfm.attention_grad %q, %k, %k, %q scale = 0.35
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x8xf32>
      -> tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>
  return
}

// -----

func.func @attention_grad_offset(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x7x8xf32>, %o: index) {
  // expected-error @+1 {{has a query_offset but is not causal; the offset only places the causal mask}}
  %0:3 = tfm.attention_grad %q, %k, %k, %q query_offset %o scale = 0.35
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x8xf32>
      -> tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels(%l: tensor<2x7x97xf32>, %labels: tensor<2x6xi64>, %s: tensor<f32>) {
  // expected-error @+1 {{operand 'labels' shape: expected [2, 7] ('logits' without its last dimension), got [2, 6]}}
  %0 = tfm.cross_entropy_grad %l, %labels, %s, %s ignore_index = -100
      : tensor<2x7x97xf32>, tensor<2x6xi64>, tensor<f32>, tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_block_without_stats(%l: tensor<2x7x49xf32>, %labels: tensor<2x7xi64>,
                                                  %s: tensor<f32>, %o: index) {
  // expected-error @+1 {{has 'vocab_from' without 'max' and 'parts': a block of the vocabulary needs the whole vocabulary's max and exp sum}}
  %0 = tfm.cross_entropy_grad %l, %labels, %s, %s vocab_from %o vocab = 97 ignore_index = -100
      : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_parts(%l: tensor<2x7x49xf32>, %labels: tensor<2x7xi64>, %s: tensor<f32>,
                                    %max: tensor<2x7xf32>, %parts: tensor<2x7x3xf32>) {
  // expected-error @+1 {{operand 'parts' shape: expected [2, 7, 2] (per token: the exp sum and the label's logit), got [2, 7, 3]}}
  %0 = tfm.cross_entropy_grad %l, %labels, %s, %s normalized by %max, %parts ignore_index = -100
      : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>, tensor<2x7xf32>, tensor<2x7x3xf32>
  return
}
