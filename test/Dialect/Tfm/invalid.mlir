// One case per verifier error of the tfm ops.
// RUN: pmlir-opt %s -split-input-file -verify-diagnostics

func.func @embedding_table_rank(%t: tensor<97x16x2xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+1 {{operand 'table': expected rank 2 [vocab, hidden], got [97, 16, 2]}}
  %0 = tfm.embedding %t[%ids] : tensor<97x16x2xf32>, tensor<2x7xi64> -> tensor<2x7x16xf32>
  return
}

// -----

func.func @embedding_result_type(%t: tensor<97x16xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+1 {{result element type: expected 'f32' (that of operand 'table'), got 'f16'}}
  %0 = tfm.embedding %t[%ids] : tensor<97x16xf32>, tensor<2x7xi64> -> tensor<2x7x16xf16>
  return
}

// -----

func.func @embedding_result_shape(%t: tensor<97x16xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+1 {{result shape: expected [2, 7, 16] (ids shape followed by hidden), got [2, 7, 15]}}
  %0 = tfm.embedding %t[%ids] : tensor<97x16xf32>, tensor<2x7xi64> -> tensor<2x7x15xf32>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<97x16xf32>, %ids: tensor<2x7xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = "tfm.embedding"(%t, %ids) : (tensor<97x16xf32>, tensor<2x7xf32>) -> tensor<2x7x16xf32>
  return
}

// -----

func.func @arange_rank() {
  // expected-error @+1 {{result #0 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tfm.arange start = 0 : tensor<2x3xi64>
  return
}

// -----

func.func @matmul_lhs_rank(%x: tensor<16xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{operand 'lhs' must have rank >= 2 ([batch..., M, K]), got [16]}}
  %0 = tfm.matmul %x, %w : tensor<16xf32>, tensor<16x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%x: tensor<4x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{operand 'rhs' must have rank >= 2 ([K, N] or [batch..., K, N]), got [16]}}
  %0 = tfm.matmul %x, %w : tensor<4x16xf32>, tensor<16xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contracting_dim(%x: tensor<2x7x16xf32>, %w: tensor<15x8xf32>) {
  // expected-error @+1 {{contracting dimension of operand 'rhs': expected 16 (K of 'lhs' [2, 7, 16]), got 15 in [15, 8]}}
  %0 = tfm.matmul %x, %w : tensor<2x7x16xf32>, tensor<15x8xf32> -> tensor<2x7x8xf32>
  return
}

// -----

func.func @matmul_contracting_dim_transposed(%x: tensor<2x7x16xf32>, %w: tensor<8x16xf32>) {
  // Without transpose_rhs the [out, in] weight contracts over 8.
  // expected-error @+1 {{contracting dimension of operand 'rhs': expected 16 (K of 'lhs' [2, 7, 16]), got 8 in [8, 16]}}
  %0 = tfm.matmul %x, %w : tensor<2x7x16xf32>, tensor<8x16xf32> -> tensor<2x7x16xf32>
  return
}

// -----

func.func @matmul_batch_dims(%q: tensor<2x4x7x8xf32>, %k: tensor<2x3x8x7xf32>) {
  // expected-error @+1 {{operand 'rhs' batch dimensions: expected [2, 4] (those of 'lhs') or none, got [2, 3]}}
  %0 = tfm.matmul %q, %k : tensor<2x4x7x8xf32>, tensor<2x3x8x7xf32> -> tensor<2x4x7x7xf32>
  return
}

// -----

func.func @matmul_rhs_element_type(%x: tensor<2x7x16xf32>, %w: tensor<16x8xbf16>) {
  // expected-error @+1 {{operand 'rhs' element type: expected 'f32' (that of operand 'lhs'), got 'bf16'}}
  %0 = tfm.matmul %x, %w : tensor<2x7x16xf32>, tensor<16x8xbf16> -> tensor<2x7x8xf32>
  return
}

// -----

func.func @matmul_result_element_type(%x: tensor<2x7x16xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{result element type: expected 'f32' (that of operand 'lhs'), got 'f16'}}
  %0 = tfm.matmul %x, %w : tensor<2x7x16xf32>, tensor<16x8xf32> -> tensor<2x7x8xf16>
  return
}

// -----

func.func @matmul_result_shape(%x: tensor<2x7x16xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{result shape: expected [2, 7, 8] ([batch..., M, N]), got [2, 8, 7]}}
  %0 = tfm.matmul %x, %w : tensor<2x7x16xf32>, tensor<16x8xf32> -> tensor<2x8x7xf32>
  return
}

// -----

func.func @add_rhs_not_trailing(%x: tensor<2x7x16xf32>, %b: tensor<7xf32>) {
  // expected-error @+1 {{operand 'rhs' shape: expected the trailing dimensions of 'lhs' [2, 7, 16], got [7]}}
  %0 = tfm.add %x, %b : tensor<2x7x16xf32>, tensor<7xf32>
  return
}

// -----

func.func @sub_rhs_larger(%x: tensor<7x16xf32>, %y: tensor<2x7x16xf32>) {
  // expected-error @+1 {{operand 'rhs' shape: expected the trailing dimensions of 'lhs' [7, 16], got [2, 7, 16]}}
  %0 = tfm.sub %x, %y : tensor<7x16xf32>, tensor<2x7x16xf32>
  return
}

// -----

func.func @mul_rhs_element_type(%x: tensor<2x7x16xf32>, %y: tensor<16xf16>) {
  // expected-error @+1 {{operand 'rhs' element type: expected 'f32' (that of operand 'lhs'), got 'f16'}}
  %0 = tfm.mul %x, %y : tensor<2x7x16xf32>, tensor<16xf16>
  return
}

// -----

func.func @gelu_on_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = "tfm.gelu"(%x) {approximation = 1 : i32} : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @gelu_unknown_form(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximation' [erf, tanh]}}
  %0 = tfm.gelu %x sigmoid : tensor<4xf32>
  return
}

// -----

func.func @layernorm_rank0(%x: tensor<f32>, %g: tensor<f32>, %b: tensor<f32>) {
  // expected-error @+1 {{operand 'input': expected rank >= 1, got []}}
  %0 = tfm.layernorm %x, %g, %b eps = 1.0e-05 : tensor<f32>, tensor<f32>
  return
}

// -----

func.func @layernorm_gamma_shape(%x: tensor<2x7x16xf32>, %g: tensor<7xf32>, %b: tensor<7xf32>) {
  // expected-error @+1 {{operand 'gamma' shape: expected [16] (the last dimension of 'input'), got [7]}}
  %0 = tfm.layernorm %x, %g, %b eps = 1.0e-05 : tensor<2x7x16xf32>, tensor<7xf32>
  return
}

// -----

func.func @layernorm_beta_type(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{failed to verify that all of {gamma, beta} have same type}}
  %0 = "tfm.layernorm"(%x, %g, %b) {epsilon = 1.0e-05 : f64} : (tensor<2x7x16xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<2x7x16xf32>
  return
}

// -----

func.func @layernorm_epsilon(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'epsilon': expected a finite value > 0, got 0}}
  %0 = tfm.layernorm %x, %g, %b eps = 0.0 : tensor<2x7x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @rmsnorm_gamma_element_type(%x: tensor<2x7x16xf32>, %g: tensor<16xbf16>) {
  // expected-error @+1 {{operand 'gamma' element type: expected 'f32' (that of operand 'input'), got 'bf16'}}
  %0 = tfm.rmsnorm %x, %g eps = 1.0e-06 : tensor<2x7x16xf32>, tensor<16xbf16>
  return
}

// -----

func.func @rmsnorm_epsilon(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'epsilon': expected a finite value > 0, got -1}}
  %0 = tfm.rmsnorm %x, %g eps = -1.0 : tensor<2x7x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @split_heads_rank(%x: tensor<7x32xf32>) {
  // expected-error @+1 {{operand 'input': expected rank 3 [B, S, A*D], got [7, 32]}}
  %0 = tfm.split_heads %x heads = 4 : tensor<7x32xf32> -> tensor<4x7x8xf32>
  return
}

// -----

func.func @split_heads_indivisible(%x: tensor<2x7x30xf32>) {
  // expected-error @+1 {{attribute 'heads': 4 does not divide the hidden dimension 30 of operand 'input'}}
  %0 = tfm.split_heads %x heads = 4 : tensor<2x7x30xf32> -> tensor<2x4x7x7xf32>
  return
}

// -----

func.func @split_heads_zero(%x: tensor<2x7x32xf32>) {
  // expected-error @+1 {{attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = tfm.split_heads %x heads = 0 : tensor<2x7x32xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @split_heads_result_shape(%x: tensor<2x7x32xf32>) {
  // expected-error @+1 {{result shape: expected [2, 4, 7, 8] ([B, A, S, D]), got [2, 7, 4, 8]}}
  %0 = tfm.split_heads %x heads = 4 : tensor<2x7x32xf32> -> tensor<2x7x4x8xf32>
  return
}

// -----

func.func @split_heads_result_element_type(%x: tensor<2x7x32xf32>) {
  // expected-error @+1 {{result element type: expected 'f32' (that of operand 'input'), got 'bf16'}}
  %0 = tfm.split_heads %x heads = 4 : tensor<2x7x32xf32> -> tensor<2x4x7x8xbf16>
  return
}

// -----

func.func @merge_heads_rank(%x: tensor<2x7x32xf32>) {
  // expected-error @+1 {{operand 'input': expected rank 4 [B, A, S, D], got [2, 7, 32]}}
  %0 = tfm.merge_heads %x : tensor<2x7x32xf32> -> tensor<2x7x32xf32>
  return
}

// -----

func.func @merge_heads_result_shape(%x: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{result shape: expected [2, 7, 32] ([B, S, A*D]), got [2, 4, 56]}}
  %0 = tfm.merge_heads %x : tensor<2x4x7x8xf32> -> tensor<2x4x56xf32>
  return
}

// -----

func.func @merge_heads_result_element_type(%x: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{result element type: expected 'f32' (that of operand 'input'), got 'f16'}}
  %0 = tfm.merge_heads %x : tensor<2x4x7x8xf32> -> tensor<2x7x32xf16>
  return
}

// -----

func.func @rope_rank(%x: tensor<2x7x32xf32>, %p: tensor<7xi64>) {
  // expected-error @+1 {{operand 'input': expected rank 4 [B, A, S, D], got [2, 7, 32]}}
  %0 = tfm.rope %x, %p theta = 1.0e+04 : tensor<2x7x32xf32>, tensor<7xi64>
  return
}

// -----

func.func @rope_odd_head_dim(%x: tensor<2x4x7x7xf32>, %p: tensor<7xi64>) {
  // expected-error @+1 {{operand 'input': head dimension must be even to rotate halves, got 7 in [2, 4, 7, 7]}}
  %0 = tfm.rope %x, %p theta = 1.0e+04 : tensor<2x4x7x7xf32>, tensor<7xi64>
  return
}

// -----

func.func @rope_positions_shape(%x: tensor<2x4x7x8xf32>, %p: tensor<8xi64>) {
  // expected-error @+1 {{operand 'positions' shape: expected [7] ([S] of 'input'), got [8]}}
  %0 = tfm.rope %x, %p theta = 1.0e+04 : tensor<2x4x7x8xf32>, tensor<8xi64>
  return
}

// -----

func.func @rope_theta(%x: tensor<2x4x7x8xf32>, %p: tensor<7xi64>) {
  // expected-error @+1 {{attribute 'theta': expected a finite normal value > 0, got 0}}
  %0 = tfm.rope %x, %p theta = 0.0 : tensor<2x4x7x8xf32>, tensor<7xi64>
  return
}

// -----

func.func @rope_theta_nan(%x: tensor<2x4x7x8xf32>, %p: tensor<7xi64>) {
  // expected-error @+1 {{attribute 'theta': expected a finite normal value > 0, got nan}}
  %0 = tfm.rope %x, %p theta = 0x7FF8000000000000 : tensor<2x4x7x8xf32>, tensor<7xi64>
  return
}

// -----

func.func @rope_theta_denormal(%x: tensor<2x4x7x8xf32>, %p: tensor<7xi64>) {
  // expected-error @+1 {{attribute 'theta': expected a finite normal value > 0, got 4.940656e-324}}
  %0 = tfm.rope %x, %p theta = 0x0000000000000001 : tensor<2x4x7x8xf32>, tensor<7xi64>
  return
}

// -----

func.func @layernorm_epsilon_nan(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'epsilon': expected a finite value > 0, got nan}}
  %0 = tfm.layernorm %x, %g, %b eps = 0x7FF8000000000000 : tensor<2x7x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @rmsnorm_epsilon_inf(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'epsilon': expected a finite value > 0, got INF}}
  %0 = tfm.rmsnorm %x, %g eps = 0x7FF0000000000000 : tensor<2x7x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @attention_scale_zero(%q: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{attribute 'scale': expected a finite non-zero value, got 0}}
  %0 = tfm.attention %q, %q, %q causal scale = 0.0 : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_scale_nan(%q: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{attribute 'scale': expected a finite non-zero value, got nan}}
  %0 = tfm.attention %q, %q, %q causal scale = 0x7FF8000000000000 : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_probabilities_shape(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x9x8xf32>) {
  // expected-error @+1 {{result 'probabilities' shape: expected [2, 4, 7, 9] ([B, Hq, S, Skv]), got [2, 4, 7, 7]}}
  %0:2 = tfm.attention %q, %k, %k scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x2x9x8xf32>, tensor<2x2x9x8xf32> -> tensor<2x4x7x8xf32>, tensor<2x4x7x7xf32>
  return
}

// -----

func.func @attention_probabilities_type(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x9x8xf32>) {
  // expected-error @+1 {{result 'probabilities' element type: expected 'f32' (that of operand 'query'), got 'f16'}}
  %0:2 = tfm.attention %q, %k, %k scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x2x9x8xf32>, tensor<2x2x9x8xf32> -> tensor<2x4x7x8xf32>, tensor<2x4x7x9xf16>
  return
}

// -----

func.func @attention_query_rank(%q: tensor<2x7x8xf32>, %k: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{operand 'query': expected rank 4 [B, Hq, S, D], got [2, 7, 8]}}
  %0 = tfm.attention %q, %k, %k scale = 1.0 : tensor<2x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x7x8xf32>
  return
}

// -----

func.func @attention_key_rank(%q: tensor<2x4x7x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{operand 'key': expected rank 4 [B, Hkv, Skv, D], got [2, 7, 8]}}
  %0 = tfm.attention %q, %k, %v scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_value_rank(%q: tensor<2x4x7x8xf32>, %v: tensor<2x7x8xf32>) {
  // expected-error @+1 {{operand 'value': expected rank 4 [B, Hkv, Skv, Dv], got [2, 7, 8]}}
  %0 = tfm.attention %q, %q, %v scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_key_element_type(%q: tensor<2x4x7x8xf32>, %k: tensor<2x4x7x8xf16>) {
  // expected-error @+1 {{operand 'key' element type: expected 'f32' (that of operand 'query'), got 'f16'}}
  %0 = tfm.attention %q, %k, %q scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf16>, tensor<2x4x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_key_head_dim(%q: tensor<2x4x7x8xf32>, %k: tensor<2x4x7x16xf32>, %v: tensor<2x4x7x8xf32>) {
  // expected-error @+1 {{operand 'key' shape: expected [2, 4, 7, 8] (batch and head dimension of 'query'), got [2, 4, 7, 16]}}
  %0 = tfm.attention %q, %k, %v scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x4x7x16xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_value_length(%q: tensor<2x4x7x8xf32>, %k: tensor<2x4x7x8xf32>, %v: tensor<2x4x5x8xf32>) {
  // expected-error @+1 {{operand 'value' shape: expected [2, 4, 7, 8] (batch, heads and sequence of 'key'), got [2, 4, 5, 8]}}
  %0 = tfm.attention %q, %k, %v scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x5x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_heads_not_grouped(%q: tensor<2x4x7x8xf32>, %k: tensor<2x3x7x8xf32>) {
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3) for grouped-query attention}}
  %0 = tfm.attention %q, %k, %k causal scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x3x7x8xf32>, tensor<2x3x7x8xf32> -> tensor<2x4x7x8xf32>
  return
}

// -----

func.func @attention_result_shape(%q: tensor<2x4x7x8xf32>, %k: tensor<2x2x7x8xf32>) {
  // expected-error @+1 {{result shape: expected [2, 4, 7, 8] ([B, Hq, S, Dv]), got [2, 2, 7, 8]}}
  %0 = tfm.attention %q, %k, %k causal scale = 1.0 : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32> -> tensor<2x2x7x8xf32>
  return
}

// -----

func.func @split_dim_out_of_range(%w: tensor<16x48xf32>) {
  // expected-error @+1 {{attribute 'dim': expected < 2 (the rank of 'input'), got 2}}
  %0:3 = tfm.split %w dim = 2 : tensor<16x48xf32> -> tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  return
}

// -----

func.func @split_no_results(%w: tensor<16x48xf32>) {
  // expected-error @+1 {{expected at least one result}}
  "tfm.split"(%w) {dim = 1 : i64} : (tensor<16x48xf32>) -> ()
  return
}

// -----

func.func @split_indivisible(%w: tensor<16x48xf32>) {
  // expected-error @+1 {{5 results do not divide dimension 1 of operand 'input' [16, 48]}}
  %0:5 = tfm.split %w dim = 1 : tensor<16x48xf32> -> tensor<16x9xf32>, tensor<16x9xf32>, tensor<16x9xf32>, tensor<16x9xf32>, tensor<16x9xf32>
  return
}

// -----

func.func @split_result_shape(%w: tensor<16x48xf32>) {
  // expected-error @+1 {{result #1 shape: expected [16, 16], got [16, 15]}}
  %0:3 = tfm.split %w dim = 1 : tensor<16x48xf32> -> tensor<16x16xf32>, tensor<16x15xf32>, tensor<16x16xf32>
  return
}

// -----

func.func @split_result_element_type(%w: tensor<16x48xf32>) {
  // expected-error @+1 {{result #0 element type: expected 'f32' (that of operand 'input'), got 'f16'}}
  %0:3 = tfm.split %w dim = 1 : tensor<16x48xf32> -> tensor<16x16xf16>, tensor<16x16xf32>, tensor<16x16xf32>
  return
}

// -----

func.func @layer_yield_mismatch(%x: tensor<2x7x16xf32>, %y: tensor<2x7x8xf32>) {
  // expected-error @+1 {{body yields ('tensor<2x7x8xf32>') but the layer returns ('tensor<2x7x16xf32>')}}
  %0 = tfm.layer 0 : tensor<2x7x16xf32> {
    tfm.yield %y : tensor<2x7x8xf32>
  }
  return
}

// -----

func.func @yield_outside_layer(%x: tensor<2x7x16xf32>) {
  // expected-error @+1 {{expects parent op 'tfm.layer'}}
  tfm.yield %x : tensor<2x7x16xf32>
}

// -----

func.func @cross_entropy_logits_rank(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+1 {{operand 'logits': expected rank >= 1 ([..., V]), got []}}
  %0 = tfm.cross_entropy %l, %y ignore_index = -100 : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels_shape(%l: tensor<2x7x97xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+1 {{operand 'labels' shape: expected [2, 7] ('logits' without its last dimension), got [2, 8]}}
  %0 = tfm.cross_entropy %l, %y ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x8xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_result_type(%l: tensor<2x7x97xf32>, %y: tensor<2x7xi64>) {
  // expected-error @+1 {{result element type: expected 'f32' (that of operand 'logits'), got 'bf16'}}
  %0 = tfm.cross_entropy %l, %y ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64> -> tensor<bf16>
  return
}

// -----

func.func @cross_entropy_result_rank(%l: tensor<2x7x97xf32>, %y: tensor<2x7xi64>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = tfm.cross_entropy %l, %y ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64> -> tensor<2xf32>
  return
}

// -----

func.func @row_max_result_shape(%x: tensor<2x7x97xf32>) {
  // expected-error @+1 {{result shape: expected [2, 7] ('input' without its last dimension), got [2, 97]}}
  %0 = tfm.row_max %x : tensor<2x7x97xf32> -> tensor<2x97xf32>
  return
}

// -----

func.func @row_max_vocab_without_offset(%x: tensor<2x7x97xf32>) {
  // expected-error @+1 {{takes 'vocab_from' and 'vocab' together}}
  %0 = tfm.row_max %x {vocab = 97 : i64} : tensor<2x7x97xf32> -> tensor<2x7xf32>
  return
}

// -----

func.func @cross_entropy_parts_result(%l: tensor<2x7x49xf32>, %y: tensor<2x7xi64>, %m: tensor<2x7xf32>, %o: index) {
  // expected-error @+1 {{result shape: expected [2, 7, 2] (per token: the exp sum and the label's logit), got [2, 7]}}
  %0 = tfm.cross_entropy_parts %l, %y, %m vocab_from %o vocab = 97 : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<2x7xf32> -> tensor<2x7xf32>
  return
}

// -----

func.func @cross_entropy_parts_max_shape(%l: tensor<2x7x49xf32>, %y: tensor<2x7xi64>, %m: tensor<2x8xf32>, %o: index) {
  // expected-error @+1 {{operand 'max' shape: expected [2, 7] ('logits' without its last dimension), got [2, 8]}}
  %0 = tfm.cross_entropy_parts %l, %y, %m vocab_from %o vocab = 97 : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<2x8xf32> -> tensor<2x7x2xf32>
  return
}

// -----

func.func @cross_entropy_parts_vocab(%l: tensor<2x7x49xf32>, %y: tensor<2x7xi64>, %m: tensor<2x7xf32>) {
  // expected-error @+1 {{attribute 'vocab' is 97, but the logits hold 49 columns and no 'vocab_from' makes them a block}}
  %0 = tfm.cross_entropy_parts %l, %y, %m vocab = 97 : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<2x7xf32> -> tensor<2x7x2xf32>
  return
}

// -----

func.func @cross_entropy_combine_parts(%p: tensor<2x7x3xf32>, %y: tensor<2x7xi64>) {
  // expected-error @+1 {{operand 'parts': expected shape [..., 2], got [2, 7, 3]}}
  %0 = tfm.cross_entropy_combine %p, %y ignore_index = -100 : tensor<2x7x3xf32>, tensor<2x7xi64> -> tensor<f32>
  return
}

// -----

// expected-error @+1 {{argument #1: tfm.role must be one of param, input, label, optimizer_state (#tfm<role param> or "param"), got "weight"}}
func.func @unknown_role(%x: tensor<4xf32> {tfm.role = "input"}, %w: tensor<4xf32> {tfm.role = "weight"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: tfm.role must be one of param, input, label, optimizer_state (#tfm<role param> or "param"), got 1 : i64}}
func.func @role_not_a_string(%x: tensor<4xf32> {tfm.role = 1}) {
  return
}

// -----

// expected-error @+1 {{result #0: tfm.updates names argument #2, but the function has 2 arguments}}
func.func @updates_no_argument(%w: tensor<4xf32>, %g: tensor<4xf32>) -> (tensor<4xf32> {tfm.updates = 2 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #1: tfm.sharded_like names argument #-1, but the function has 1 argument}}
func.func @sharded_like_negative(%w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {tfm.sharded_like = -1 : i64}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: tfm.updates must be an integer attribute on a function's result, got "w"}}
func.func @updates_not_an_index(%w: tensor<4xf32>) -> (tensor<4xf32> {tfm.updates = "w"}) {
  return %w : tensor<4xf32>
}

// -----

func.func @attention_block_lse_shape(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{result 'lse' shape: expected [1, 4, 8] ([B, Hq, S]), got [1, 4, 16]}}
  %o, %lse = tfm.attention_block %q, %k, %k scale = 2.5e-01
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
      -> tensor<1x4x8x16xf32>, tensor<1x4x16xf32>
  return
}

// -----

func.func @attention_merge_lse_shape(%o: tensor<1x4x8x16xf32>, %l: tensor<1x4x16xf32>) {
  // expected-error @+1 {{operand 'lhs_lse' shape: expected [1, 4, 8] ('lhs' without its last dimension), got [1, 4, 16]}}
  %m, %ml = tfm.attention_merge %o, %l, %o, %l : tensor<1x4x8x16xf32>, tensor<1x4x16xf32>
  return
}

// -----

func.func @attention_block_grad_output(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                       %o: tensor<1x4x8x8xf32>, %l: tensor<1x4x8xf32>) {
  // expected-error @+1 {{operand 'output' shape: expected [1, 4, 8, 16] (attention's result, [B, Hq, S, Dv]), got [1, 4, 8, 8]}}
  %dq, %dk, %dv = tfm.attention_block_grad %q, %k, %k, %q, %o, %l scale = 2.5e-01
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>,
        tensor<1x4x8x8xf32>, tensor<1x4x8xf32>
      -> tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return
}

// -----

func.func @head_tail_not_causal(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{attribute 'head_tail': the order moves a causal mask; the attention is not causal}}
  %o = tfm.attention %q, %k, %k head_tail <ranks = 2, length = 8> scale = 2.5e-01
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @head_tail_keys(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{attribute 'head_tail': its sequence of 16 is not the 8 keys}}
  %o = tfm.attention %q, %k, %k causal head_tail <ranks = 2, length = 16> scale = 2.5e-01
      : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @head_tail_queries(%q: tensor<1x4x4x16xf32>, %k: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{attribute 'head_tail': 4 queries without a query_offset are not the sequence of 8}}
  %dq, %dk, %dv = tfm.attention_grad %q, %k, %k, %q causal head_tail <ranks = 2, length = 8>
      scale = 2.5e-01
      : tensor<1x4x4x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x4x16xf32>
      -> tensor<1x4x4x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return
}

// -----

func.func @head_tail_arange() {
  // expected-error @+1 {{attribute 'head_tail': its sequence of 8 is shorter than the 12 positions}}
  %pos = tfm.arange start = 0 head_tail <ranks = 2, length = 8> : tensor<12xi64>
  return
}

// -----

func.func @head_tail_blocks() {
  // expected-error @+1 {{head-tail order of a sequence of 3 over 2 ranks: it needs equal blocks of at least 2 positions (a head and a tail chunk)}}
  %pos = tfm.arange start = 0 head_tail <ranks = 2, length = 3> : tensor<3xi64>
  return
}
