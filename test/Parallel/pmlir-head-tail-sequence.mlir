// pmlir-head-tail-sequence on cp = 2: the positions and the causal
// attention (forward and gradient) of the sequence get the head-tail
// order, the module its axis; a non-causal attention and an arange of
// another length keep theirs; so do expert capacities. Then the whole
// sharding pipeline on a model:
// the partitioned attention keeps the order with its rank's query offset,
// and so do Ulysses' attentions on the whole sequence.

// RUN: pmlir-opt %s -split-input-file --pmlir-head-tail-sequence -verify-diagnostics | FileCheck %s

// CHECK: module attributes {tfm.head_tail_axis = "cp", tfm.mesh = #tfm.mesh<cp = 2>}
// CHECK-LABEL: func.func @f
// CHECK: tfm.arange start = 0 head_tail <ranks = 2, length = 8> : tensor<8xi64>
// CHECK: tfm.arange start = 0 : tensor<4xi64>
// CHECK: tfm.attention %{{.*}} causal head_tail <ranks = 2, length = 8> scale
// CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} scale
// CHECK: tfm.attention_grad %{{.*}} causal head_tail <ranks = 2, length = 8> scale
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  func.func @f(%ids: tensor<2x8xi64> {tfm.dims = ["batch", "seq"], tfm.name = "input_ids",
                                      tfm.sharding = #tfm.sharding<[[], ["cp"]]>},
               %q: tensor<2x2x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>)
      -> (tensor<8xi64>, tensor<4xi64>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) {
    %pos = tfm.arange start = 0 : tensor<8xi64>
    %other = tfm.arange start = 0 : tensor<4xi64>
    %o = tfm.attention %q, %k, %v causal scale = 5.0e-01
        : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
    %full = tfm.attention %q, %k, %v scale = 5.0e-01
        : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
    %dq, %dk, %dv = tfm.attention_grad %q, %k, %v, %o causal scale = 5.0e-01
        : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
        -> tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
    return %pos, %other, %o, %full, %dq : tensor<8xi64>, tensor<4xi64>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
  }
}

// -----

// An expert capacity over the sequence (first come, first served in
// sequence order) gets the order too, as does the count of what it drops;
// the plain count of tokens per expert does not depend on it.
// CHECK-LABEL: func.func @capacity
// CHECK: tfm.moe_capacity %{{.*}}, %{{.*}} capacity = 3 num_experts = 4 head_tail <ranks = 2, length = 8>
// CHECK: tfm.moe_expert_counts %{{.*}} num_experts = 4 capacity = 3 head_tail <ranks = 2, length = 8>
// CHECK: tfm.moe_expert_counts %{{.*}} num_experts = 4 : tensor<2x8x2xi64>
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  func.func @capacity(%ids: tensor<2x8xi64> {tfm.dims = ["batch", "seq"], tfm.name = "input_ids",
                                             tfm.sharding = #tfm.sharding<[[], ["cp"]]>},
                      %w: tensor<2x8x2xf32>, %e: tensor<2x8x2xi64>)
      -> (tensor<2x8x2xf32>, tensor<4xi64>, tensor<4xi64>) {
    %kept = tfm.moe_capacity %w, %e capacity = 3 num_experts = 4 : tensor<2x8x2xf32>, tensor<2x8x2xi64>
    %dropped = tfm.moe_expert_counts %e num_experts = 4 capacity = 3 : tensor<2x8x2xi64> -> tensor<4xi64>
    %counts = tfm.moe_expert_counts %e num_experts = 4 : tensor<2x8x2xi64> -> tensor<4xi64>
    return %kept, %dropped, %counts : tensor<2x8x2xf32>, tensor<4xi64>, tensor<4xi64>
  }
}

// -----

// The sequence must be split over cp alone: the runtime binds the chunks.
module attributes {tfm.mesh = #tfm.mesh<cp = 2, dp = 2>} {
  // expected-error @+1 {{argument #0 ('input_ids') of @f: the head-tail order needs its sequence (dimension 1) split over 'cp' alone}}
  func.func @f(%ids: tensor<2x8xi64> {tfm.dims = ["batch", "seq"], tfm.name = "input_ids",
                                      tfm.sharding = #tfm.sharding<[[], ["cp", "dp"]]>}) {
    return
  }
}

// -----

// expected-error @+1 {{a sequence of 2 on cp = 2 has no head-tail order: it needs equal blocks of at least 2 positions (a head and a tail chunk)}}
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  func.func @f(%ids: tensor<2x2xi64> {tfm.dims = ["batch", "seq"], tfm.sharding = #tfm.sharding<[[], ["cp"]]>}) {
    return
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  func.func @f(%ids: tensor<2x8xi64> {tfm.dims = ["batch", "seq"], tfm.sharding = #tfm.sharding<[[], ["cp"]]>},
  // expected-error @+1 {{argument #1 of @f has a sequence of 6, another argument one of 8: the head-tail order needs one length}}
               %labels: tensor<2x6xi64> {tfm.dims = ["batch", "seq"], tfm.sharding = #tfm.sharding<[[], ["cp"]]>}) {
    return
  }
}

// -----

// expected-error @+1 {{the head-tail sequence order finds no argument with a 'seq' dimension (tfm.dims) to order}}
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  func.func @f(%x: tensor<2x8xf32>) {
    return
  }
}

// -----

// expected-error @+1 {{the head-tail sequence order balances attention over mesh axis 'cp', which mesh #tfm.mesh<tp = 2> does not have}}
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @f(%x: tensor<2x8xf32>) {
    return
  }
}

// The pipeline on GPT-2 (sequence 10, cp = 2): allgather keeps the order on
// the rank's queries (offset by its block), Ulysses on the whole sequence.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 10 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron context-layout=balanced" \
// RUN:   | FileCheck %s --check-prefix=ALLGATHER
// ALLGATHER: tfm.head_tail_axis = "cp"
// ALLGATHER: tfm.head_tail_dim = 1 : i64, tfm.name = "input_ids"
// ALLGATHER: tfm.attention %{{.*}} causal query_offset %{{.*}} head_tail <ranks = 2, length = 10> scale {{.*}} : tensor<2x4x5x16xf32>, tensor<2x4x10x16xf32>
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 10 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron context-layout=balanced context-attention=ulysses" \
// RUN:   | FileCheck %s --check-prefix=ULYSSES
// ULYSSES: tfm.attention %{{.*}} causal head_tail <ranks = 2, length = 10> scale {{.*}} : tensor<2x2x10x16xf32>
