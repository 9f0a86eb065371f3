// The Megatron recipe on pmlir-gen models, then propagation: per layer
// exactly two sums pending over tp (attention output, MLP output) plus the
// embedding's, each [B, S, H]; the rest follows the annotated weights.

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation | FileCheck %s --check-prefix=GPT2
// GPT2: tfm.name = "input_ids", tfm.role = #tfm<role input>, tfm.sharding = #tfm.sharding<{{\[\[}}"dp"], []]>
// GPT2: tfm.name = "wte.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// The fused QKV weight and bias are made of q, k and v parts, each split
// over tp: a device holds its heads of all three.
// GPT2: tfm.name = "h.0.attn.c_attn.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]], parts = [1, 3]>
// GPT2: tfm.name = "h.0.attn.c_attn.bias", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"]], parts = [3]>
// GPT2: tfm.name = "h.0.attn.c_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// GPT2: tfm.name = "h.0.mlp.c_fc.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>
// GPT2: tfm.name = "h.0.mlp.c_fc.bias", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"]]>
// GPT2: tfm.name = "h.0.mlp.c_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// GPT2-SAME: -> (tensor<2x16x96xf32> {{{.*}}tfm.sharding = #tfm.sharding<{{\[\[}}"dp"], [], ["tp"]]>})
// GPT2: tfm.embedding {{.*}}pending = ["tp"]>]} : {{.*}} -> tensor<2x16x64xf32>
// The fused QKV weight's parts come out of its split each split over tp.
// GPT2: tfm.split {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"]]>, #tfm.sharding<{{\[\[}}], ["tp"]]>, #tfm.sharding<{{\[\[}}], ["tp"]]>]} : tensor<64x192xf32>
// GPT2: tfm.attention {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], ["tp"], [], []]>]}
// GPT2: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]} : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
// GPT2: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]} : tensor<2x16x256xf32>, tensor<256x64xf32> -> tensor<2x16x64xf32>
// The tied LM head: the logits are split over the vocabulary.
// GPT2: tfm.matmul {{.*}} transpose_rhs {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], ["tp"]]>]}
// GPT2-NOT: pending

// Llama with grouped-query heads (8 query, 2 kv heads on tp = 2): no biases,
// but the residual stream is reduced all the same, as in Megatron: its sum
// is needed whole by the next norm anyway, so each block's output is
// reduced before the residual add.
// RUN: pmlir-gen llama --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 176 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation | FileCheck %s --check-prefix=LLAMA
// LLAMA: tfm.name = "model.layers.0.self_attn.q_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// LLAMA: tfm.name = "model.layers.0.self_attn.o_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>
// LLAMA: tfm.name = "model.layers.0.mlp.down_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>
// LLAMA: tfm.name = "lm_head.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// LLAMA: tfm.embedding {{.*}}pending = ["tp"]>]}
// LLAMA: tfm.rmsnorm {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []]>]}
// LLAMA: tfm.split_heads {{.*}} heads = 2 {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], ["tp"], [], []]>]}
// LLAMA: tfm.attention {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], ["tp"], [], []]>]}
// LLAMA: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]}
// LLAMA: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []]>]}
// LLAMA: tfm.rmsnorm {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []]>]}
// LLAMA: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]}

// Mixtral with DeepSeek's shared experts: every expert's FFN is split as a
// dense MLP's (Megatron's expert tensor parallelism): w1 and w3 by their
// rows, w2 by its columns; the router is whole. The experts take the
// tokens split as they come, their result pending over tp.
// RUN: pmlir-gen mixtral --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 48 --experts 3 --shared-experts 2 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation | FileCheck %s --check-prefix=SHARED
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.gate.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], []]>
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.experts.*.w1.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"], []]>
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.experts.*.w3.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"], []]>
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.experts.*.w2.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], [], ["tp"]]>
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.shared_experts.w1.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.shared_experts.w3.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>
// SHARED: tfm.name = "model.layers.0.block_sparse_moe.shared_experts.w2.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>
// SHARED: tfm.moe_experts {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]}

// Expert parallelism: the stacked experts split over ep (whole experts per
// device, each also split over tp inside), the router whole, the batch over
// dp then ep; the experts take their tokens split as they come.
// RUN: pmlir-gen mixtral --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 48 --experts 6 --vocab 100 --seq 16 --batch 6 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2,ep=3,dp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation | FileCheck %s --check-prefix=EXPERT-PARALLEL
// EXPERT-PARALLEL: tfm.name = "input_ids", tfm.role = #tfm<role input>, tfm.sharding = #tfm.sharding<{{\[\[}}"dp", "ep"], []]>
// EXPERT-PARALLEL: tfm.name = "model.layers.0.block_sparse_moe.gate.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], []]>
// EXPERT-PARALLEL: tfm.name = "model.layers.0.block_sparse_moe.experts.*.w1.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"ep"], ["tp"], []]>
// EXPERT-PARALLEL: tfm.name = "model.layers.0.block_sparse_moe.experts.*.w2.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"ep"], [], ["tp"]]>
// EXPERT-PARALLEL: tfm.moe_experts {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp", "ep"], [], []], pending = ["tp"]>]}

// An ep axis the experts do not divide, and one on a dense model: refused.
// RUN: pmlir-gen mixtral --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 48 --experts 5 --vocab 100 --seq 16 --batch 4 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=ep=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=EXPERTS-UNEVEN
// EXPERTS-UNEVEN: error: argument #{{[0-9]+}} ('model.layers.0.block_sparse_moe.experts.*.w1.weight') has 5 experts, which ep = 2 does not divide (expert parallelism gives each device whole experts)
// RUN: pmlir-gen llama --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 48 --vocab 100 --seq 16 --batch 4 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=ep=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=EP-DENSE --implicit-check-not=builtin.module
// EP-DENSE: error: mesh axis 'ep' splits experts, and the model has none (a dense model: split its batch over 'dp')

// A vocabulary tp does not divide is split all the same, into padded
// shards of ceil(97 / 2) = 49 rows: the embedding and the tied LM head are
// vocab-parallel.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition 2>&1 | FileCheck %s --check-prefix=UNEVEN
// UNEVEN-NOT: warning
// UNEVEN: tensor<49x64xf32> {tfm.dims = ["vocab", "hidden"], tfm.global_type = tensor<97x64xf32>, tfm.name = "wte.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>}
// UNEVEN-SAME: -> (tensor<2x16x49xf32> {tfm.global_type = tensor<2x16x97xf32>, tfm.sharding = #tfm.sharding<{{\[\[}}], [], ["tp"]]>})
// UNEVEN: tfm.embedding {{.*}} rows_from {{.*}} : tensor<49x64xf32>
// UNEVEN: tfm.matmul {{.*}} transpose_rhs : tensor<2x16x64xf32>, tensor<49x64xf32> -> tensor<2x16x49xf32>

// With the loss, the vocab-split logits are never gathered (Megatron's
// vocab-parallel cross entropy).
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --max-positions 32 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition 2>&1 | FileCheck %s --check-prefix=LOSS
// LOSS: %[[LOGITS:.*]] = tfm.matmul {{.*}} transpose_rhs : tensor<1x16x64xf32>, tensor<49x64xf32> -> tensor<1x16x49xf32>
// LOSS-NOT: shard.all_gather %[[LOGITS]]
// LOSS: tfm.row_max %[[LOGITS]] vocab_from
// LOSS: tfm.cross_entropy_parts %[[LOGITS]]
// LOSS: tfm.cross_entropy_combine

// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=NOMESH
// NOMESH: error: the megatron recipe needs the module attribute tfm.mesh

// Attention splits by heads: tp must divide the query heads and divide the
// kv heads or be a multiple of them. With fewer kv heads than tp, as in
// Megatron each device keeps the kv head its query heads read: k_proj and
// v_proj split over the major part of tp (the sub-axis "tp:(1)2" of a tp of
// 4), the query group over its minor part.
// RUN: pmlir-gen llama --layers 1 --hidden 48 --heads 6 --kv-heads 3 --ffn 64 --vocab 96 --seq 8 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=HEADS
// HEADS: error: 'tfm.attention' op has 6 query heads, which tp = 4 does not divide (Megatron splits attention by heads)
// RUN: pmlir-gen llama --layers 1 --hidden 48 --heads 6 --kv-heads 3 --ffn 64 --vocab 96 --seq 8 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=KV
// KV: error: 'tfm.attention' op has 3 key/value heads; tp = 2 must divide them or be a multiple of them
// RUN: pmlir-gen llama --layers 1 --hidden 64 --heads 8 --kv-heads 2 --ffn 64 --vocab 96 --seq 8 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline=recipe=megatron 2>&1 | FileCheck %s --check-prefix=FEWKV
// FEWKV-NOT: warning
// FEWKV: tensor<8x64xf32> {tfm.dims = ["out", "in"], tfm.global_type = tensor<16x64xf32>, tfm.name = "model.layers.0.self_attn.k_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp:(1)2"], []]>}
// FEWKV: %[[Q:.*]] = tfm.split_heads {{.*}} heads = 2 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
// FEWKV: %[[K:.*]] = tfm.split_heads {{.*}} heads = 1 : tensor<2x8x8xf32> -> tensor<2x1x8x8xf32>
// FEWKV: tfm.attention {{.*}} : tensor<2x2x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x2x8x8xf32>
// FEWKV-NOT: shard.all_gather

// One kv head (multi-query attention) on any tp: k_proj and v_proj stay whole
// on every device (Megatron's kv % tp == 0 or tp % kv == 0 admits it), each
// device runs its query heads against the one kv head, and nothing is
// gathered.
// RUN: pmlir-gen llama --layers 1 --hidden 64 --heads 8 --kv-heads 1 --ffn 64 --vocab 96 --seq 8 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline=recipe=megatron 2>&1 | FileCheck %s --check-prefix=MQA
// MQA-NOT: error
// MQA: tensor<8x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.self_attn.k_proj.weight", tfm.role = #tfm<role param>, tfm.sharding = #tfm.sharding<{{\[\[}}], []]>}
// MQA: tfm.attention {{.*}} : tensor<2x2x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x2x8x8xf32>
// MQA-NOT: shard.all_gather

// A mesh with neither tp nor dp is refused, not silently replicated, and
// the module-level error does not print the module.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=x=2 rank-order=x" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=NO-AXES --implicit-check-not=builtin.module
// NO-AXES: error: the megatron recipe shards over mesh axes 'tp' (tensor parallel), 'dp' (data parallel), 'cp' (context parallel) and 'ep' (expert parallel), and mesh #tfm.mesh<x = 2, rank_order = [x]> has none of them
// An axis option naming no axis of the mesh is refused (a misspelt tp-axis
// once left the model unsharded over tp).
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe="tp-axis=model" 2>&1 | FileCheck %s --check-prefix=AXIS-OPTION
// AXIS-OPTION: error: the megatron recipe: tp-axis 'model' is no axis of the mesh #tfm.mesh<dp = 2, tp = 2>
// Two roles on one axis: tp-axis=dp left tp unused with a warning alone.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe="tp-axis=dp" 2>&1 | FileCheck %s --check-prefix=TWO-ROLES
// TWO-ROLES: error: the megatron recipe: tp-axis and dp-axis both name 'dp': each role needs its own mesh axis

// A mesh of pipeline stages alone (Megatron's TP = 1): nothing to shard,
// the module as it was.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=pp=2" -o %t.pp.mlir
// RUN: pmlir-opt --pmlir-megatron-recipe %t.pp.mlir -o %t.pp-recipe.mlir
// RUN: diff %t.pp.mlir %t.pp-recipe.mlir

// Context parallelism: the token ids' sequence on cp, and propagation
// carries it through the model; each attention reads its queries' shard
// and all of the keys and values, gathered over cp, from its block's
// global position on.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline=recipe=megatron | FileCheck %s --check-prefix=CP
// CP: tensor<2x8xi64> {tfm.dims = ["batch", "seq"], tfm.global_type = tensor<2x16xi64>, tfm.name = "input_ids", tfm.role = #tfm<role input>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["cp"]]>}
// CP: tfm.arange start = 0 plus %{{.*}} : tensor<8xi64>
// CP: %[[K:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 2 : tensor<2x2x8x16xf32> -> tensor<2x2x16x16xf32>
// CP: %[[V:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 2 : tensor<2x2x8x16xf32> -> tensor<2x2x16x16xf32>
// CP: tfm.attention %{{.*}}, %[[K]], %[[V]] causal query_offset %{{.*}} scale = {{.*}} : tensor<2x2x8x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32> -> tensor<2x2x8x16xf32>

// A sequence cp does not divide is refused: sequence shards are not padded.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 15 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=cp=2" \
// RUN:   | not pmlir-opt --pmlir-megatron-recipe 2>&1 | FileCheck %s --check-prefix=CP-UNEVEN
// CP-UNEVEN: error: argument #0 ('input_ids') has a sequence of 15, which cp = 2 does not divide (context parallelism splits the sequence into equal shards)
