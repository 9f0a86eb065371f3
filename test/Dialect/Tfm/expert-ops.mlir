// Every tfm mixture-of-experts op parses, prints and round-trips, in the
// custom and the generic form.
// RUN: pmlir-opt %s | pmlir-opt | FileCheck %s
// RUN: pmlir-opt %s --mlir-print-op-generic | pmlir-opt | FileCheck %s

// A Mixtral block on 2 x 7 tokens of hidden 16, 5 experts of FFN 13, top-2.
// CHECK-LABEL: func @sparse_block
func.func @sparse_block(%x: tensor<2x7x16xf32>, %gate: tensor<5x16xf32>, %w1: tensor<5x13x16xf32>,
                        %w2: tensor<5x16x13xf32>) -> tensor<2x7x16xf32> {
  %logits = tfm.matmul %x, %gate transpose_rhs
      : tensor<2x7x16xf32>, tensor<5x16xf32> -> tensor<2x7x5xf32>
  // CHECK: tfm.moe_route %{{.*}} top_k = 2 normalize : tensor<2x7x5xf32> -> tensor<2x7x2xf32>, tensor<2x7x2xi64>
  %w, %e = tfm.moe_route %logits top_k = 2 normalize
      : tensor<2x7x5xf32> -> tensor<2x7x2xf32>, tensor<2x7x2xi64>
  // CHECK: tfm.moe_sort %{{.*}} num_experts = 5 : tensor<2x7x2xi64> -> tensor<2x7x2xi64>, tensor<28xi64>, tensor<5xi64>
  %slots, %sources, %counts = tfm.moe_sort %e num_experts = 5
      : tensor<2x7x2xi64> -> tensor<2x7x2xi64>, tensor<28xi64>, tensor<5xi64>
  // CHECK: tfm.moe_dispatch %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<28xi64> -> tensor<28x16xf32>
  %rows = tfm.moe_dispatch %x, %slots, %sources
      : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<28xi64> -> tensor<28x16xf32>
  // CHECK: tfm.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_rhs : tensor<28x16xf32>, tensor<5x13x16xf32>, tensor<5xi64> -> tensor<28x13xf32>
  %h = tfm.grouped_matmul %rows, %w1, %counts transpose_rhs
      : tensor<28x16xf32>, tensor<5x13x16xf32>, tensor<5xi64> -> tensor<28x13xf32>
  %a = tfm.silu %h : tensor<28x13xf32>
  %o = tfm.grouped_matmul %a, %w2, %counts transpose_rhs
      : tensor<28x13xf32>, tensor<5x16x13xf32>, tensor<5xi64> -> tensor<28x16xf32>
  // CHECK: tfm.moe_combine %{{.*}}, %{{.*}}, %{{.*}} weights %{{.*}} : tensor<28x16xf32>, tensor<2x7x2xi64>, tensor<28xi64>, tensor<2x7x2xf32> -> tensor<2x7x16xf32>
  %y = tfm.moe_combine %o, %slots, %sources weights %w
      : tensor<28x16xf32>, tensor<2x7x2xi64>, tensor<28xi64>, tensor<2x7x2xf32> -> tensor<2x7x16xf32>
  return %y : tensor<2x7x16xf32>
}

// The tokens each expert got, reported after each step as layer 3's.
// CHECK-LABEL: func @expert_tokens
func.func @expert_tokens(%e: tensor<2x7x2xi64>) {
  // CHECK: %[[C:.*]] = tfm.moe_expert_counts %{{.*}} num_experts = 5 : tensor<2x7x2xi64> -> tensor<5xi64>
  %counts = tfm.moe_expert_counts %e num_experts = 5 : tensor<2x7x2xi64> -> tensor<5xi64>
  // CHECK: tfm.step_metric %[[C]] kind = expert_tokens index = 3 : tensor<5xi64>
  tfm.step_metric %counts kind = expert_tokens index = 3 : tensor<5xi64>
  return
}

// A capacity of 3 places per expert and sequence: the weights of the
// choices past it zeroed, their count reported.
// CHECK-LABEL: func @capacity
func.func @capacity(%w: tensor<2x7x2xf32>, %e: tensor<2x7x2xi64>) -> tensor<2x7x2xf32> {
  // CHECK: tfm.moe_capacity %{{.*}}, %{{.*}} capacity = 3 num_experts = 5 : tensor<2x7x2xf32>, tensor<2x7x2xi64>
  %kept = tfm.moe_capacity %w, %e capacity = 3 num_experts = 5 : tensor<2x7x2xf32>, tensor<2x7x2xi64>
  // CHECK: %[[D:.*]] = tfm.moe_expert_counts %{{.*}} num_experts = 5 capacity = 3 : tensor<2x7x2xi64> -> tensor<5xi64>
  %dropped = tfm.moe_expert_counts %e num_experts = 5 capacity = 3 : tensor<2x7x2xi64> -> tensor<5xi64>
  // CHECK: tfm.step_metric %[[D]] kind = dropped_tokens index = 0 : tensor<5xi64>
  tfm.step_metric %dropped kind = dropped_tokens index = 0 : tensor<5xi64>
  return %kept : tensor<2x7x2xf32>
}

// Router logits of one token (rank 1), weights not renormalized, bf16.
// CHECK-LABEL: func @route_one_token_bf16
func.func @route_one_token_bf16(%logits: tensor<8xbf16>) -> (tensor<3xbf16>, tensor<3xi64>) {
  // CHECK: tfm.moe_route %{{.*}} top_k = 3 : tensor<8xbf16> -> tensor<3xbf16>, tensor<3xi64>
  %w, %e = tfm.moe_route %logits top_k = 3 : tensor<8xbf16> -> tensor<3xbf16>, tensor<3xi64>
  return %w, %e : tensor<3xbf16>, tensor<3xi64>
}

// CHECK-LABEL: func @weighted_dispatch_and_grouped_matmul_kn
func.func @weighted_dispatch_and_grouped_matmul_kn(%x: tensor<7x16xf32>, %slots: tensor<7x1xi64>,
                                                   %sources: tensor<7xi64>, %w: tensor<7x1xf32>,
                                                   %b: tensor<3x16x13xf32>, %counts: tensor<3xi64>)
    -> tensor<7x13xf32> {
  // CHECK: tfm.moe_dispatch %{{.*}}, %{{.*}}, %{{.*}} weights %{{.*}} : tensor<7x16xf32>, tensor<7x1xi64>, tensor<7xi64>, tensor<7x1xf32> -> tensor<7x16xf32>
  %rows = tfm.moe_dispatch %x, %slots, %sources weights %w
      : tensor<7x16xf32>, tensor<7x1xi64>, tensor<7xi64>, tensor<7x1xf32> -> tensor<7x16xf32>
  // CHECK: tfm.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<7x16xf32>, tensor<3x16x13xf32>, tensor<3xi64> -> tensor<7x13xf32>
  %y = tfm.grouped_matmul %rows, %b, %counts
      : tensor<7x16xf32>, tensor<3x16x13xf32>, tensor<3xi64> -> tensor<7x13xf32>
  return %y : tensor<7x13xf32>
}

// CHECK-LABEL: func @gradients
func.func @gradients(%logits: tensor<2x7x5xf32>, %w: tensor<2x7x2xf32>, %e: tensor<2x7x2xi64>,
                     %dw: tensor<2x7x2xf32>, %dy: tensor<2x7x16xf32>, %rows: tensor<28x16xf32>,
                     %slots: tensor<2x7x2xi64>, %dh: tensor<28x13xf32>, %counts: tensor<5xi64>)
    -> (tensor<2x7x5xf32>, tensor<2x7x2xf32>, tensor<5x13x16xf32>) {
  // CHECK: tfm.moe_route_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} normalize : tensor<2x7x5xf32>, tensor<2x7x2xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32> -> tensor<2x7x5xf32>
  %0 = tfm.moe_route_grad %logits, %w, %e, %dw normalize
      : tensor<2x7x5xf32>, tensor<2x7x2xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32> -> tensor<2x7x5xf32>
  // CHECK: tfm.moe_weight_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<28x16xf32>, tensor<2x7x2xi64> -> tensor<2x7x2xf32>
  %1 = tfm.moe_weight_grad %dy, %rows, %slots
      : tensor<2x7x16xf32>, tensor<28x16xf32>, tensor<2x7x2xi64> -> tensor<2x7x2xf32>
  // CHECK: tfm.grouped_weight_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<28x13xf32>, tensor<28x16xf32>, tensor<5xi64> -> tensor<5x13x16xf32>
  %2 = tfm.grouped_weight_grad %dh, %rows, %counts
      : tensor<28x13xf32>, tensor<28x16xf32>, tensor<5xi64> -> tensor<5x13x16xf32>
  return %0, %1, %2 : tensor<2x7x5xf32>, tensor<2x7x2xf32>, tensor<5x13x16xf32>
}

// CHECK-LABEL: func @balance_loss
func.func @balance_loss(%logits: tensor<2x7x5xf32>, %e: tensor<2x7x2xi64>, %acc: tensor<2x5xf32>,
                        %ds: tensor<2x5xf32>) -> (tensor<f32>, tensor<2x7x5xf32>) {
  // CHECK: tfm.moe_router_stats %{{.*}}, %{{.*}} : tensor<2x7x5xf32>, tensor<2x7x2xi64> -> tensor<2x5xf32>
  %s = tfm.moe_router_stats %logits, %e : tensor<2x7x5xf32>, tensor<2x7x2xi64> -> tensor<2x5xf32>
  %t = tfm.add %acc, %s : tensor<2x5xf32>, tensor<2x5xf32>
  // CHECK: tfm.moe_balance_loss %{{.*}} scale = 1.250000e-03 : tensor<2x5xf32> -> tensor<f32>
  %l = tfm.moe_balance_loss %t scale = 1.25e-03 : tensor<2x5xf32> -> tensor<f32>
  // CHECK: tfm.moe_router_stats_grad %{{.*}}, %{{.*}} : tensor<2x7x5xf32>, tensor<2x5xf32> -> tensor<2x7x5xf32>
  %g = tfm.moe_router_stats_grad %logits, %ds : tensor<2x7x5xf32>, tensor<2x5xf32> -> tensor<2x7x5xf32>
  return %l, %g : tensor<f32>, tensor<2x7x5xf32>
}

// The experts of a block as one op, and its gradient.
// CHECK-LABEL: func @experts
func.func @experts(%x: tensor<2x7x16xf32>, %e: tensor<2x7x2xi64>, %w: tensor<2x7x2xf32>,
                   %w1: tensor<5x13x16xf32>, %w3: tensor<5x13x16xf32>, %w2: tensor<5x16x13xf32>,
                   %dy: tensor<2x7x16xf32>) -> (tensor<2x7x16xf32>, tensor<5x16x13xf32>) {
  // CHECK: tfm.moe_experts %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32>, tensor<5x13x16xf32>, tensor<5x13x16xf32>, tensor<5x16x13xf32> -> tensor<2x7x16xf32>
  %y = tfm.moe_experts %x, %e, %w, %w1, %w3, %w2
      : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32>, tensor<5x13x16xf32>,
        tensor<5x13x16xf32>, tensor<5x16x13xf32> -> tensor<2x7x16xf32>
  // CHECK: tfm.moe_experts_grad {{.*}} -> tensor<2x7x16xf32>, tensor<2x7x2xf32>, tensor<5x13x16xf32>, tensor<5x13x16xf32>, tensor<5x16x13xf32>
  %dx, %dw, %dw1, %dw3, %dw2 = tfm.moe_experts_grad %x, %e, %w, %w1, %w3, %w2, %dy
      : tensor<2x7x16xf32>, tensor<2x7x2xi64>, tensor<2x7x2xf32>, tensor<5x13x16xf32>,
        tensor<5x13x16xf32>, tensor<5x16x13xf32>, tensor<2x7x16xf32>
      -> tensor<2x7x16xf32>, tensor<2x7x2xf32>, tensor<5x13x16xf32>, tensor<5x13x16xf32>,
         tensor<5x16x13xf32>
  return %y, %dw2 : tensor<2x7x16xf32>, tensor<5x16x13xf32>
}

// Expert parallelism's exchanges over grid axis 0 of 2 devices, 6 experts.
// CHECK-LABEL: func @exchanges
func.func @exchanges(%rows: tensor<28x16xf32>, %counts: tensor<6xi64>) -> tensor<28x16xf32> {
  // CHECK: tfm.moe_all_to_all %{{.*}}, %{{.*}} {grid = @mesh, grid_axes = array<i16: 0>} : tensor<28x16xf32>, tensor<6xi64> -> tensor<56x16xf32>, tensor<3xi64>
  %recv, %n = tfm.moe_all_to_all %rows, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<28x16xf32>, tensor<6xi64> -> tensor<56x16xf32>, tensor<3xi64>
  // CHECK: tfm.moe_all_to_all_back %{{.*}}, %{{.*}} {grid = @mesh, grid_axes = array<i16: 0>} : tensor<56x16xf32>, tensor<6xi64> -> tensor<28x16xf32>
  %back = tfm.moe_all_to_all_back %recv, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<56x16xf32>, tensor<6xi64> -> tensor<28x16xf32>
  return %back : tensor<28x16xf32>
}
