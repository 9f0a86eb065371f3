// Ring attention on cp = 2: no gather of keys or values; the own block
// first under the causal mask (diagonal), its send issued before the
// block's computation, the previous rank's block received after it and
// computed only where it comes from an earlier rank (scf.if on the
// rank's index), combined by the online softmax.

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron context-attention=ring" \
// RUN:   | FileCheck %s --check-prefix=FORWARD
// FORWARD-LABEL: func.func @forward
// FORWARD-NOT: shard.all_gather {{.*}} tensor<2x4x8x16xf32> -> tensor<2x4x16x16xf32>
// FORWARD: %[[NEXT:.*]] = arith.remui
// FORWARD: %[[PREV:.*]] = arith.remui
// FORWARD: %[[SK:.*]] = shard.send %[[K:.*]] on @mesh grid_axes = [0] destination = [%[[NEXT]]]
// FORWARD: %[[SV:.*]] = shard.send %[[V:.*]] on @mesh grid_axes = [0] destination = [%[[NEXT]]]
// FORWARD: %[[O:.*]], %[[L:.*]] = tfm.attention_block %[[Q:.*]], %[[K]], %[[V]] causal scale
// FORWARD: %[[RK:.*]] = shard.recv %[[SK]] on @mesh grid_axes = [0] source = [%[[PREV]]]
// FORWARD: %[[RV:.*]] = shard.recv %[[SV]] on @mesh grid_axes = [0] source = [%[[PREV]]]
// FORWARD: %[[EARLIER:.*]] = arith.cmpi ule, %{{.*}}, %proc_linear_idx{{.*}} : index
// FORWARD: %[[M:.*]]:2 = scf.if %[[EARLIER]]
// FORWARD-NEXT: %[[O2:.*]], %[[L2:.*]] = tfm.attention_block %[[Q]], %[[RK]], %[[RV]] scale
// FORWARD-NEXT: %[[OM:.*]], %[[LM:.*]] = tfm.attention_merge %[[O]], %[[L]], %[[O2]], %[[L2]]
// FORWARD-NEXT: scf.yield %[[OM]], %[[LM]]
// FORWARD-NEXT: } else {
// FORWARD-NEXT: scf.yield %[[O]], %[[L]]
// FORWARD: tfm.merge_heads %[[M]]#0

// The backward recomputes the forward ring, then the blocks go round
// again with their key and value gradients, which come home at the end:
// no reduce-scatter of them is left.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-sharding-pipeline="recipe=megatron context-attention=ring" \
// RUN:   | FileCheck %s --check-prefix=BACKWARD
// BACKWARD-LABEL: func.func @grad
// BACKWARD-NOT: tfm.attention_grad
// BACKWARD: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tfm.attention_block_grad {{.*}} causal scale
// BACKWARD: shard.send %[[DK]] on @mesh grid_axes = [0]
// BACKWARD: shard.send %[[DV]] on @mesh grid_axes = [0]
// BACKWARD: scf.if
// BACKWARD-NEXT: tfm.attention_block_grad {{.*}} scale
// BACKWARD-NOT: shard.reduce_scatter {{.*}} tensor<2x4x16x16xf32>
// BACKWARD: return

// In head-tail order (a sequence of 10 on cp = 2: each rank's block of 5
// is a head chunk of 3 and a tail chunk of 2): the first step computes the
// head queries against the head keys and the tail queries against both
// chunks, each under the mask of the last queries; every later step two
// full blocks, chosen by where the keys come from: an earlier rank's head
// chunk for every query, or a later rank's chunks for the tail queries.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 10 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron context-attention=ring context-layout=balanced" \
// RUN:   | FileCheck %s --check-prefix=BALANCED
// BALANCED-LABEL: func.func @forward
// BALANCED: tfm.arange start = 0 head_tail <ranks = 2, length = 10> : tensor<10xi64>
// BALANCED: %[[SK:.*]] = shard.send %[[K:[^ ]*]] on @mesh
// BALANCED: %[[SV:.*]] = shard.send %[[V:[^ ]*]] on @mesh
// BALANCED: %[[V0:.*]] = tensor.extract_slice %[[V]][0, 0, 0, 0] [2, 4, 3, 16]
// BALANCED: %[[K0:.*]] = tensor.extract_slice %[[K]][0, 0, 0, 0] [2, 4, 3, 16]
// BALANCED: %[[Q0:.*]] = tensor.extract_slice %[[Q:[^ ]*]][0, 0, 0, 0] [2, 4, 3, 16]
// BALANCED: tfm.attention_block %[[Q0]], %[[K0]], %[[V0]] causal scale {{.*}} -> tensor<2x4x3x16xf32>, tensor<2x4x3xf32>
// BALANCED: %[[Q1:.*]] = tensor.extract_slice %[[Q]][0, 0, 3, 0] [2, 4, 2, 16]
// BALANCED: tfm.attention_block %[[Q1]], %[[K]], %[[V]] causal scale {{.*}} -> tensor<2x4x2x16xf32>, tensor<2x4x2xf32>
// BALANCED: %[[RK:.*]] = shard.recv %[[SK]]
// BALANCED: %[[RV:.*]] = shard.recv %[[SV]]
// BALANCED: %[[EARLIER:.*]] = arith.cmpi ule, %{{.*}}, %proc_linear_idx{{.*}} : index
// BALANCED: scf.if %[[EARLIER]] -> (tensor<2x4x5x16xf32>, tensor<2x4x5xf32>)
// BALANCED: tfm.attention_block %[[Q]], %{{.*}}, %{{.*}} scale {{.*}} : tensor<2x4x5x16xf32>, tensor<2x4x3x16xf32>, tensor<2x4x3x16xf32>
// BALANCED: tfm.attention_merge {{.*}} : tensor<2x4x5x16xf32>, tensor<2x4x5xf32>
// BALANCED: } else {
// BALANCED: tfm.attention_block %{{.*}}, %[[RK]], %[[RV]] scale {{.*}} : tensor<2x4x2x16xf32>, tensor<2x4x5x16xf32>, tensor<2x4x5x16xf32>
// BALANCED: tfm.attention_merge {{.*}} : tensor<2x4x2x16xf32>, tensor<2x4x2xf32>
// BALANCED: tensor.insert_slice {{.*}}[0, 0, 3, 0] [2, 4, 2, 16]

// The backward in head-tail order: the same blocks' gradients, the head
// key gradient added into the rows of the head chunk.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 10 --batch 2 --max-positions 32 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-sharding-pipeline="recipe=megatron context-attention=ring context-layout=balanced" \
// RUN:   | FileCheck %s --check-prefix=BALANCED-BACKWARD
// BALANCED-BACKWARD-LABEL: func.func @grad
// BALANCED-BACKWARD-NOT: tfm.attention_grad
// BALANCED-BACKWARD: tfm.attention_block_grad {{.*}} causal scale {{.*}} : tensor<2x4x3x16xf32>, tensor<2x4x3x16xf32>
// BALANCED-BACKWARD: tfm.attention_block_grad {{.*}} causal scale {{.*}} : tensor<2x4x2x16xf32>, tensor<2x4x5x16xf32>
// BALANCED-BACKWARD: scf.if
// BALANCED-BACKWARD: tfm.attention_block_grad {{.*}} scale {{.*}} : tensor<2x4x5x16xf32>, tensor<2x4x3x16xf32>
// BALANCED-BACKWARD: } else {
// BALANCED-BACKWARD: tfm.attention_block_grad {{.*}} scale {{.*}} : tensor<2x4x2x16xf32>, tensor<2x4x5x16xf32>
// BALANCED-BACKWARD: return

// Bad input: no cp axis, not partitioned.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | not pmlir-opt --pmlir-ring-attention 2>&1 | FileCheck %s --check-prefix=NO-CP
// NO-CP: error: ring attention passes keys and values around mesh axis 'cp', which mesh #tfm.mesh<tp = 2> does not have
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | not pmlir-opt --pmlir-ring-attention 2>&1 | FileCheck %s --check-prefix=GLOBAL
// GLOBAL: error: ring attention runs on a partitioned program (shard.grid @mesh); run pmlir-partition first
