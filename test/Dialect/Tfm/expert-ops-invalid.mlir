// One case per verifier error of the tfm mixture-of-experts ops.
// RUN: pmlir-opt %s -split-input-file -verify-diagnostics

func.func @route_top_k_above_experts(%logits: tensor<7x4xf32>) {
  // expected-error @+1 {{attribute 'top_k' is 5, more than the 4 experts of 'logits' (its last dimension)}}
  %w, %e = tfm.moe_route %logits top_k = 5 : tensor<7x4xf32> -> tensor<7x5xf32>, tensor<7x5xi64>
  return
}

// -----

func.func @route_top_k_zero(%logits: tensor<7x4xf32>) {
  // expected-error @+1 {{attribute 'top_k' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %w, %e = tfm.moe_route %logits top_k = 0 : tensor<7x4xf32> -> tensor<7x0xf32>, tensor<7x0xi64>
  return
}

// -----

func.func @route_weights_shape(%logits: tensor<7x4xf32>) {
  // expected-error @+1 {{result 'weights' shape: expected [7, 2] ('logits' with top_k for its last dimension), got [7, 4]}}
  %w, %e = tfm.moe_route %logits top_k = 2 : tensor<7x4xf32> -> tensor<7x4xf32>, tensor<7x2xi64>
  return
}

// -----

func.func @route_weights_type(%logits: tensor<7x4xf32>) {
  // expected-error @+1 {{result 'weights' element type: expected 'f32' (that of operand 'logits'), got 'bf16'}}
  %w, %e = tfm.moe_route %logits top_k = 2 : tensor<7x4xf32> -> tensor<7x2xbf16>, tensor<7x2xi64>
  return
}

// -----

func.func @route_scalar(%logits: tensor<f32>) {
  // expected-error @+1 {{operand 'logits': expected rank >= 1 ([..., E]), got []}}
  %w, %e = tfm.moe_route %logits top_k = 1 : tensor<f32> -> tensor<1xf32>, tensor<1xi64>
  return
}

// -----

func.func @sort_sources(%e: tensor<7x2xi64>) {
  // expected-error @+1 {{result 'sources' shape: expected [14] (the element count of 'experts'), got [7]}}
  %s, %src, %c = tfm.moe_sort %e num_experts = 4 : tensor<7x2xi64> -> tensor<7x2xi64>, tensor<7xi64>, tensor<4xi64>
  return
}

// -----

func.func @sort_counts(%e: tensor<7x2xi64>) {
  // expected-error @+1 {{result 'counts' shape: expected [4] ([num_experts]), got [5]}}
  %s, %src, %c = tfm.moe_sort %e num_experts = 4 : tensor<7x2xi64> -> tensor<7x2xi64>, tensor<14xi64>, tensor<5xi64>
  return
}

// -----

func.func @dispatch_tokens(%x: tensor<6x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>) {
  // expected-error @+1 {{operand 'input' shape: expected [7, 16] (the tokens of 'slots' followed by hidden), got [6, 16]}}
  %r = tfm.moe_dispatch %x, %slots, %sources : tensor<6x16xf32>, tensor<7x2xi64>, tensor<14xi64> -> tensor<14x16xf32>
  return
}

// -----

func.func @dispatch_sources(%x: tensor<7x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<7xi64>) {
  // expected-error @+1 {{operand 'sources' shape: expected [14] (the element count of 'slots'), got [7]}}
  %r = tfm.moe_dispatch %x, %slots, %sources : tensor<7x16xf32>, tensor<7x2xi64>, tensor<7xi64> -> tensor<14x16xf32>
  return
}

// -----

func.func @dispatch_result(%x: tensor<7x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>) {
  // expected-error @+1 {{result shape: expected [14, 16] ([N, H]: a row per routed pair), got [7, 16]}}
  %r = tfm.moe_dispatch %x, %slots, %sources : tensor<7x16xf32>, tensor<7x2xi64>, tensor<14xi64> -> tensor<7x16xf32>
  return
}

// -----

func.func @dispatch_weights(%x: tensor<7x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>, %w: tensor<7xf32>) {
  // expected-error @+1 {{operand 'weights' shape: expected [7, 2] (that of 'slots'), got [7]}}
  %r = tfm.moe_dispatch %x, %slots, %sources weights %w : tensor<7x16xf32>, tensor<7x2xi64>, tensor<14xi64>, tensor<7xf32> -> tensor<14x16xf32>
  return
}

// -----

func.func @combine_rows(%y: tensor<13x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>) {
  // expected-error @+1 {{operand 'input' shape: expected [14, 16] ([N, H]: a row per element of 'slots'), got [13, 16]}}
  %r = tfm.moe_combine %y, %slots, %sources : tensor<13x16xf32>, tensor<7x2xi64>, tensor<14xi64> -> tensor<7x16xf32>
  return
}

// -----

func.func @combine_rank(%y: tensor<14x4x4xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>) {
  // expected-error @+1 {{operand 'input': expected rank 2 [N, H], got [14, 4, 4]}}
  %r = tfm.moe_combine %y, %slots, %sources : tensor<14x4x4xf32>, tensor<7x2xi64>, tensor<14xi64> -> tensor<7x16xf32>
  return
}

// -----

func.func @combine_weights_type(%y: tensor<14x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>, %w: tensor<7x2xbf16>) {
  // expected-error @+1 {{operand 'weights' element type: expected 'f32' (that of operand 'input'), got 'bf16'}}
  %r = tfm.moe_combine %y, %slots, %sources weights %w : tensor<14x16xf32>, tensor<7x2xi64>, tensor<14xi64>, tensor<7x2xbf16> -> tensor<7x16xf32>
  return
}

// -----

func.func @combine_result(%y: tensor<14x16xf32>, %slots: tensor<7x2xi64>, %sources: tensor<14xi64>) {
  // expected-error @+1 {{result shape: expected [7, 16] (the tokens of 'slots' followed by hidden), got [14, 16]}}
  %r = tfm.moe_combine %y, %slots, %sources : tensor<14x16xf32>, tensor<7x2xi64>, tensor<14xi64> -> tensor<14x16xf32>
  return
}

// -----

func.func @grouped_matmul_inner(%x: tensor<14x16xf32>, %w: tensor<4x13x15xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{operand 'rhs' shape [4, 13, 15]: its last dimension must be 16 (the K of 'lhs' [14, 16]), got 15}}
  %r = tfm.grouped_matmul %x, %w, %c transpose_rhs : tensor<14x16xf32>, tensor<4x13x15xf32>, tensor<4xi64> -> tensor<14x13xf32>
  return
}

// -----

func.func @grouped_matmul_rhs_rank(%x: tensor<14x16xf32>, %w: tensor<16x13xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{operand 'rhs': expected rank 3 [E, K, F], got [16, 13]}}
  %r = tfm.grouped_matmul %x, %w, %c : tensor<14x16xf32>, tensor<16x13xf32>, tensor<4xi64> -> tensor<14x13xf32>
  return
}

// -----

func.func @grouped_matmul_counts(%x: tensor<14x16xf32>, %w: tensor<4x16x13xf32>, %c: tensor<3xi64>) {
  // expected-error @+1 {{operand 'counts' shape: expected [4] ([E]: a count per weight of 'rhs'), got [3]}}
  %r = tfm.grouped_matmul %x, %w, %c : tensor<14x16xf32>, tensor<4x16x13xf32>, tensor<3xi64> -> tensor<14x13xf32>
  return
}

// -----

func.func @grouped_matmul_counts_type(%x: tensor<14x16xf32>, %w: tensor<4x16x13xf32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of 64-bit signless integer values, but got 'tensor<4xi32>'}}
  %r = tfm.grouped_matmul %x, %w, %c : tensor<14x16xf32>, tensor<4x16x13xf32>, tensor<4xi32> -> tensor<14x13xf32>
  return
}

// -----

func.func @grouped_matmul_result(%x: tensor<14x16xf32>, %w: tensor<4x16x13xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{result shape: expected [14, 13] ([N, F]), got [14, 16]}}
  %r = tfm.grouped_matmul %x, %w, %c : tensor<14x16xf32>, tensor<4x16x13xf32>, tensor<4xi64> -> tensor<14x16xf32>
  return
}

// -----

func.func @route_grad_choices(%l: tensor<7x4xf32>, %w: tensor<7x2xf32>, %e: tensor<7x3xi64>, %dw: tensor<7x2xf32>) {
  // expected-error @+1 {{operand 'experts' shape: expected [7, 2] (that of 'weights'), got [7, 3]}}
  %r = tfm.moe_route_grad %l, %w, %e, %dw : tensor<7x4xf32>, tensor<7x2xf32>, tensor<7x3xi64>, tensor<7x2xf32> -> tensor<7x4xf32>
  return
}

// -----

func.func @route_grad_result(%l: tensor<7x4xf32>, %w: tensor<7x2xf32>, %e: tensor<7x2xi64>, %dw: tensor<7x2xf32>) {
  // expected-error @+1 {{result shape: expected [7, 4] (that of 'logits'), got [7, 2]}}
  %r = tfm.moe_route_grad %l, %w, %e, %dw : tensor<7x4xf32>, tensor<7x2xf32>, tensor<7x2xi64>, tensor<7x2xf32> -> tensor<7x2xf32>
  return
}

// -----

func.func @weight_grad_rows(%dy: tensor<7x16xf32>, %rows: tensor<14x15xf32>, %slots: tensor<7x2xi64>) {
  // expected-error @+1 {{operand 'tokens' shape: expected [7, 15] (the tokens of 'slots' followed by the H of 'rows'), got [7, 16]}}
  %r = tfm.moe_weight_grad %dy, %rows, %slots : tensor<7x16xf32>, tensor<14x15xf32>, tensor<7x2xi64> -> tensor<7x2xf32>
  return
}

// -----

func.func @grouped_weight_grad_rows(%x: tensor<14x16xf32>, %dy: tensor<13x8xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{operand 'rhs' shape: expected [14, 8] (the rows of 'lhs' by F), got [13, 8]}}
  %r = tfm.grouped_weight_grad %x, %dy, %c : tensor<14x16xf32>, tensor<13x8xf32>, tensor<4xi64> -> tensor<4x16x8xf32>
  return
}

// -----

func.func @grouped_weight_grad_result(%x: tensor<14x16xf32>, %dy: tensor<14x8xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{result shape: expected [4, 16, 8] ([E, K, F]), got [4, 8, 16]}}
  %r = tfm.grouped_weight_grad %x, %dy, %c : tensor<14x16xf32>, tensor<14x8xf32>, tensor<4xi64> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @router_stats_tokens(%l: tensor<7x4xf32>, %e: tensor<6x2xi64>) {
  // expected-error @+1 {{operand 'experts' shape: expected [7, 2] (the tokens of 'logits' followed by k), got [6, 2]}}
  %r = tfm.moe_router_stats %l, %e : tensor<7x4xf32>, tensor<6x2xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @router_stats_result(%l: tensor<7x4xf32>, %e: tensor<7x2xi64>) {
  // expected-error @+1 {{result shape: expected [2, 4] ([2, E]: the probability sums, the choice counts), got [4]}}
  %r = tfm.moe_router_stats %l, %e : tensor<7x4xf32>, tensor<7x2xi64> -> tensor<4xf32>
  return
}

// -----

func.func @balance_loss_rows(%s: tensor<3x4xf32>) {
  // expected-error @+1 {{operand 'stats' shape: expected [2, 4] ([2, E]: the probability sums, the choice counts), got [3, 4]}}
  %r = tfm.moe_balance_loss %s scale = 1.0 : tensor<3x4xf32> -> tensor<f32>
  return
}

// -----

func.func @router_stats_grad_experts(%l: tensor<7x4xf32>, %ds: tensor<2x5xf32>) {
  // expected-error @+1 {{operand 'stats_grad' shape: expected [2, 4] ([2, E]), got [2, 5]}}
  %r = tfm.moe_router_stats_grad %l, %ds : tensor<7x4xf32>, tensor<2x5xf32> -> tensor<7x4xf32>
  return
}

// -----

func.func @experts_hidden(%x: tensor<2x7x16xf32>, %e: tensor<2x7x2xi64>, %w: tensor<2x7x2xf32>,
                          %w1: tensor<5x13x8xf32>, %w2: tensor<5x16x13xf32>) {
  // expected-error @+1 {{operand 'w1' shape: expected [5, 13, 16] ([E, F, H], H that of 'input'), got [5, 13, 8]}}
  %y = tfm.moe_experts %x, %e, %w, %w1, %w1, %w2
      : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32>, tensor<5x13x8xf32>,
        tensor<5x13x8xf32>, tensor<5x16x13xf32> -> tensor<2x7x16xf32>
  return
}

// -----

func.func @experts_down(%x: tensor<2x7x16xf32>, %e: tensor<2x7x2xi64>, %w: tensor<2x7x2xf32>,
                        %w1: tensor<5x13x16xf32>, %w2: tensor<5x13x16xf32>) {
  // expected-error @+1 {{operand 'w2' shape: expected [5, 16, 13] ([E, H, F] of 'w1'), got [5, 13, 16]}}
  %y = tfm.moe_experts %x, %e, %w, %w1, %w1, %w2
      : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32>, tensor<5x13x16xf32>,
        tensor<5x13x16xf32>, tensor<5x13x16xf32> -> tensor<2x7x16xf32>
  return
}

// -----

func.func @experts_top_k(%x: tensor<2x7x16xf32>, %e: tensor<2x7x6xi64>, %w: tensor<2x7x6xf32>,
                         %w1: tensor<5x13x16xf32>, %w2: tensor<5x16x13xf32>) {
  // expected-error @+1 {{routes each token to 6 experts of 'w1''s 5 (top-k must not exceed the experts)}}
  %y = tfm.moe_experts %x, %e, %w, %w1, %w1, %w2
      : tensor<2x7x16xf32>, tensor<2x7x6xi64>, tensor<2x7x6xf32>, tensor<5x13x16xf32>,
        tensor<5x13x16xf32>, tensor<5x16x13xf32> -> tensor<2x7x16xf32>
  return
}

// -----

func.func @experts_grad_shape(%x: tensor<2x7x16xf32>, %e: tensor<2x7x2xi64>, %w: tensor<2x7x2xf32>,
                              %w1: tensor<5x13x16xf32>, %w2: tensor<5x16x13xf32>,
                              %dy: tensor<2x7x16xf32>) {
  // expected-error @+1 {{result 'w2_grad' shape: expected [5, 16, 13] (that of the value it is the gradient of), got [5, 13, 16]}}
  %dx, %dw, %dw1, %dw3, %dw2 = tfm.moe_experts_grad %x, %e, %w, %w1, %w1, %w2, %dy
      : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32>, tensor<5x13x16xf32>,
        tensor<5x13x16xf32>, tensor<5x16x13xf32>, tensor<2x7x16xf32>
      -> tensor<2x7x16xf32>, tensor<2x7x2xf32>, tensor<5x13x16xf32>, tensor<5x13x16xf32>,
         tensor<5x13x16xf32>
  return
}

// -----

func.func @exchange_uneven(%rows: tensor<28x16xf32>, %counts: tensor<5xi64>) {
  // expected-error @+1 {{operand 'counts' shape [5]: the 2 devices must hold equal blocks of the 5 experts}}
  %recv, %n = tfm.moe_all_to_all %rows, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<28x16xf32>, tensor<5xi64> -> tensor<56x16xf32>, tensor<2xi64>
  return
}

// -----

func.func @exchange_room(%rows: tensor<28x16xf32>, %counts: tensor<6xi64>) {
  // expected-error @+1 {{result shape [50, 16]: expected [n * 28, 16] (n devices' rows, operand 'rows' being [28, 16])}}
  %recv, %n = tfm.moe_all_to_all %rows, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<28x16xf32>, tensor<6xi64> -> tensor<50x16xf32>, tensor<3xi64>
  return
}

// -----

func.func @exchange_expert_counts(%rows: tensor<28x16xf32>, %counts: tensor<6xi64>) {
  // expected-error @+1 {{result 'expert_counts' shape: expected [3] ([E / n]: this device's experts), got [6]}}
  %recv, %n = tfm.moe_all_to_all %rows, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<28x16xf32>, tensor<6xi64> -> tensor<56x16xf32>, tensor<6xi64>
  return
}

// -----

func.func @exchange_back_room(%recv: tensor<56x16xf32>, %counts: tensor<6xi64>) {
  // expected-error @+1 {{operand 'rows' shape [56, 16]: expected [n * 30, 16] (n devices' rows, result being [30, 16])}}
  %back = tfm.moe_all_to_all_back %recv, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<56x16xf32>, tensor<6xi64> -> tensor<30x16xf32>
  return
}

// -----

func.func @expert_counts_shape(%e: tensor<7x2xi64>) {
  // expected-error @+1 {{result 'counts' shape: expected [4] ([num_experts]), got [3]}}
  %c = tfm.moe_expert_counts %e num_experts = 4 : tensor<7x2xi64> -> tensor<3xi64>
  return
}

// -----

func.func @expert_counts_scalar(%e: tensor<i64>) {
  // expected-error @+1 {{operand 'experts'}}
  %c = tfm.moe_expert_counts %e num_experts = 4 : tensor<i64> -> tensor<4xi64>
  return
}

// -----

func.func @step_metric_rank(%c: tensor<2x4xi64>) {
  // expected-error @+1 {{takes a value of static shape [n], not 'tensor<2x4xi64>'}}
  tfm.step_metric %c kind = expert_tokens index = 0 : tensor<2x4xi64>
  return
}

// -----

func.func @step_metric_dynamic(%c: tensor<?xi64>) {
  // expected-error @+1 {{takes a value of static shape [n], not 'tensor<?xi64>'}}
  tfm.step_metric %c kind = expert_tokens index = 0 : tensor<?xi64>
  return
}

// -----

func.func @step_metric_index(%c: tensor<4xi64>) {
  // expected-error @+1 {{attribute 'index' failed to satisfy constraint}}
  tfm.step_metric %c kind = expert_tokens index = -1 : tensor<4xi64>
  return
}

// -----

func.func @step_metric_kind(%c: tensor<4xi64>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [expert_tokens, dropped_tokens]}}
  tfm.step_metric %c kind = kept_tokens index = 0 : tensor<4xi64>
  return
}

// -----

func.func @capacity_without_sequences(%w: tensor<7xf32>, %e: tensor<7xi64>) {
  // expected-error @+1 {{operand 'experts': expected rank >= 2 ([..., S, k]: a capacity holds per sequence), got [7]}}
  %k = tfm.moe_capacity %w, %e capacity = 2 num_experts = 4 : tensor<7xf32>, tensor<7xi64>
  return
}

// -----

func.func @capacity_weights(%w: tensor<7x3xf32>, %e: tensor<7x2xi64>) {
  // expected-error @+1 {{operand 'weights' shape: expected [7, 2] (that of 'experts'), got [7, 3]}}
  %k = tfm.moe_capacity %w, %e capacity = 2 num_experts = 4 : tensor<7x3xf32>, tensor<7x2xi64>
  return
}

// -----

func.func @dropped_counts_without_sequences(%e: tensor<7xi64>) {
  // expected-error @+1 {{operand 'experts': expected rank >= 2 ([..., S, k]: a capacity holds per sequence), got [7]}}
  %c = tfm.moe_expert_counts %e num_experts = 4 capacity = 2 : tensor<7xi64> -> tensor<4xi64>
  return
}

// -----

func.func @capacity_order_length(%w: tensor<2x6x2xf32>, %e: tensor<2x6x2xi64>) {
  // expected-error @+1 {{attribute 'head_tail': its sequence of 8 is not the 6 tokens of operand 'experts'}}
  %k = tfm.moe_capacity %w, %e capacity = 2 num_experts = 4 head_tail <ranks = 2, length = 8> : tensor<2x6x2xf32>, tensor<2x6x2xi64>
  return
}

// -----

func.func @capacity_places_overflow(%w: tensor<4x6x2xf32>, %e: tensor<4x6x2xi64>) {
  // expected-error @+1 {{operand 'experts': its 4 sequences times 4611686018427387904 experts overflow a count of places}}
  %k = tfm.moe_capacity %w, %e capacity = 2 num_experts = 4611686018427387904 : tensor<4x6x2xf32>, tensor<4x6x2xi64>
  return
}
