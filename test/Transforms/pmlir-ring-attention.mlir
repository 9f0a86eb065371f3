// Ring attention on cp = 2: no gather of keys or values; the own block
// first under the causal mask (diagonal), its send issued before the
// block's computation, the previous rank's block received after it and
// computed only where it comes from an earlier rank (scf.if on the
// rank's index), combined by the online softmax.

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | sed 's/^module {/module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {/' \
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
// RUN:   | sed 's/^module {/module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {/' \
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

// Bad input: no cp axis, not partitioned.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | sed 's/^module {/module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {/' \
// RUN:   | not pmlir-opt --pmlir-ring-attention 2>&1 | FileCheck %s --check-prefix=NO-CP
// NO-CP: error: ring attention passes keys and values around mesh axis 'cp', which mesh #tfm.mesh<tp = 2> does not have
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | sed 's/^module {/module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {/' \
// RUN:   | not pmlir-opt --pmlir-ring-attention 2>&1 | FileCheck %s --check-prefix=GLOBAL
// GLOBAL: error: ring attention runs on a partitioned program (shard.grid @mesh); run pmlir-partition first
