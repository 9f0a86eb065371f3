// pmlir-context-parallel-attention pins what each context-parallel
// attention variant needs. Ulysses on cp = 2 × tp = 2: the queries, keys and values move
// from sequence shards to heads shards (tp major, cp minor) and the result
// back, one all_to_all each; the attention runs on the whole sequence
// with no offset, and nothing is gathered.

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-context-parallel-attention=attention=ulysses \
// RUN:   | FileCheck %s --check-prefix=PINNED
// PINNED-LABEL: func.func @forward
// PINNED: %[[Q:.*]] = tfm.sharding_constraint %{{.*}} to <{{\[\[}}], ["tp", "cp"], [], []]> : tensor<2x4x16x16xf32>
// PINNED: %[[K:.*]] = tfm.sharding_constraint %{{.*}} to <{{\[\[}}], ["tp", "cp"], [], []]> : tensor<2x4x16x16xf32>
// PINNED: %[[V:.*]] = tfm.sharding_constraint %{{.*}} to <{{\[\[}}], ["tp", "cp"], [], []]> : tensor<2x4x16x16xf32>
// PINNED: %[[O:.*]] = tfm.attention %[[Q]], %[[K]], %[[V]]
// PINNED: tfm.sharding_constraint %[[O]] to <{{\[\[}}], ["tp"], ["cp"], []]> : tensor<2x4x16x16xf32>

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron context-attention=ulysses" \
// RUN:   | FileCheck %s --check-prefix=FORWARD --implicit-check-not=shard.all_gather
// FORWARD-LABEL: func.func @forward
// FORWARD: %[[Q:.*]] = shard.all_to_all %{{.*}} on @mesh grid_axes = [0] split_axis = 1 concat_axis = 2 : tensor<2x2x8x16xf32> -> tensor<2x1x16x16xf32>
// FORWARD: %[[K:.*]] = shard.all_to_all %{{.*}} on @mesh grid_axes = [0] split_axis = 1 concat_axis = 2 : tensor<2x2x8x16xf32> -> tensor<2x1x16x16xf32>
// FORWARD: %[[V:.*]] = shard.all_to_all %{{.*}} on @mesh grid_axes = [0] split_axis = 1 concat_axis = 2 : tensor<2x2x8x16xf32> -> tensor<2x1x16x16xf32>
// FORWARD: %[[O:.*]] = tfm.attention %[[Q]], %[[K]], %[[V]] causal scale = {{.*}} : tensor<2x1x16x16xf32>, tensor<2x1x16x16xf32>, tensor<2x1x16x16xf32> -> tensor<2x1x16x16xf32>
// FORWARD: shard.all_to_all %[[O]] on @mesh grid_axes = [0] split_axis = 2 concat_axis = 1 : tensor<2x1x16x16xf32> -> tensor<2x2x8x16xf32>

// Training: the attention gradient also runs on heads shards; its key
// and value gradients go back to sequence shards by all_to_all, complete,
// where the all-gather variant reduce-scatters sums pending over cp.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-sharding-pipeline="recipe=megatron context-attention=ulysses" \
// RUN:   | FileCheck %s --check-prefix=BACKWARD
// BACKWARD-LABEL: func.func @grad
// BACKWARD: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tfm.attention_grad {{.*}} : tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32> -> tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>
// BACKWARD-DAG: shard.all_to_all %[[DQ]] on @mesh grid_axes = [0] split_axis = 2 concat_axis = 1 : tensor<2x2x16x16xf32> -> tensor<2x4x8x16xf32>
// BACKWARD-DAG: shard.all_to_all %[[DK]] on @mesh grid_axes = [0] split_axis = 2 concat_axis = 1 : tensor<2x2x16x16xf32> -> tensor<2x4x8x16xf32>
// BACKWARD-DAG: shard.all_to_all %[[DV]] on @mesh grid_axes = [0] split_axis = 2 concat_axis = 1 : tensor<2x2x16x16xf32> -> tensor<2x4x8x16xf32>
// BACKWARD-NOT: shard.reduce_scatter {{.*}} tensor<2x16x64xf32>

// Bad input: heads that tp × cp does not divide (Llama's two kv heads on
// tp = 2 × cp = 2), no cp axis, no shardings yet.
// RUN: pmlir-gen llama --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 64 --vocab 96 --seq 8 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2,tp=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-context-parallel-attention=attention=ulysses 2>&1 \
// RUN:   | FileCheck %s --check-prefix=KV-HEADS
// KV-HEADS: error: 'tfm.attention' op has 2 heads of keys, which Ulysses attention cannot split over tp × cp = 4 devices (it trades the sequence split for a heads split)

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | not pmlir-opt --pmlir-context-parallel-attention=attention=ulysses 2>&1 | FileCheck %s --check-prefix=NO-CP
// NO-CP: error: context-parallel attention splits the sequence over mesh axis 'cp', which mesh #tfm.mesh<tp = 2> does not have

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | not pmlir-opt --pmlir-context-parallel-attention=attention=ulysses 2>&1 | FileCheck %s --check-prefix=UNPROPAGATED
// UNPROPAGATED: error: 'tfm.attention' op has no result shardings: context-parallel attention runs after pmlir-sharding-propagation

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | not pmlir-opt --pmlir-sharding-propagation --pmlir-context-parallel-attention=attention=rings 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: for the --attention option: Cannot find option named 'rings'!

// Ring: only the attention gradient's key and value gradients are pinned,
// to sequence shards, complete: the partition reduce-scatters them at the
// op. The forward attention keeps what propagation gave it.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-context-parallel-attention=attention=ring \
// RUN:   | FileCheck %s --check-prefix=RING
// RING-LABEL: func.func @grad
// RING-NOT: tfm.sharding_constraint
// RING: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tfm.attention_grad
// RING-NEXT: tfm.sharding_constraint %[[DQ]] to <{{\[\[}}], [], ["cp"], []]>
// RING-NEXT: tfm.sharding_constraint %[[DK]] to <{{\[\[}}], [], ["cp"], []]>
// RING-NEXT: tfm.sharding_constraint %[[DV]] to <{{\[\[}}], [], ["cp"], []]>
