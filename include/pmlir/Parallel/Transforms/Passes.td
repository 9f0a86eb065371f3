//===- Passes.td - Parallel passes -------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
// The passes of sequence and context parallelism on partitioned programs.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PARALLEL_TRANSFORMS_PASSES_TD
#define PMLIR_PARALLEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SequenceParallel : Pass<"pmlir-sequence-parallel", "mlir::ModuleOp"> {
  let summary = "Megatron's sequence parallelism: tensor-parallel all-reduces become "
                "reduce-scatter + all-gather, norms run on sequence shards";
  let description = [{
    Runs on a partitioned program (after `pmlir-partition`). Each
    `shard.all_reduce` (sum) over the tensor-parallel axis whose result
    feeds sequence-local ops (residual and bias adds, layernorm, rmsnorm,
    scale, activations: each position computed from itself) becomes a
    `shard.reduce_scatter` along the sequence dimension (dimension 1 of
    `[batch, seq, ...]`). The region those ops form runs on the rank's
    sequence shard; it grows through chains of such ops and through
    `tfm.layer` results, so the residual stream between layers stays a
    shard. A `shard.all_gather` along the sequence restores the full
    sequence right before each op that needs it (the next column-parallel
    matmul, the attention, the LM head, the return), once per value and
    block. A full operand the region meets (GPT-2's position table) is
    sliced locally (`shard.all_slice`, no communication). In GPT-2 and Llama
    under the Megatron recipe this covers the two all-reduces of each layer,
    the embedding's, and the final norm before the LM head.

    Bytes do not change (a reduce-scatter and an all-gather of the same
    tensor move what its all-reduce moves); the activations of the
    sequence-local ops shrink by the tp size.

    Diagnostics: a module without `tfm.mesh` or `shard.grid @mesh`, a mesh
    without the tp axis, a sequence (or an operand's sequence dimension)
    that tp does not divide.

    Before (a row-parallel output into a residual add and a norm, tp = 2):
    ```mlir
    %y = tfm.matmul %a, %w : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
    %r = shard.all_reduce %y on @mesh grid_axes = [0] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    %h = tfm.add %r, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>
    %n = tfm.layernorm %h, %g, %b eps = 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>
    %z = tfm.matmul %n, %w1 : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    ```
    After:
    ```mlir
    %y = tfm.matmul %a, %w : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
    %r = shard.reduce_scatter %y on @mesh grid_axes = [0] scatter_axis = 1
        : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
    %xs = shard.all_slice %x on @mesh grid_axes = [0] slice_axis = 1
        : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
    %h = tfm.add %r, %xs : tensor<2x4x32xf32>, tensor<2x4x32xf32>
    %n = tfm.layernorm %h, %g, %b eps = 1.0e-05 : tensor<2x4x32xf32>, tensor<32xf32>
    %nf = shard.all_gather %n on @mesh grid_axes = [0] gather_axis = 1
        : tensor<2x4x32xf32> -> tensor<2x8x32xf32>
    %z = tfm.matmul %nf, %w1 : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    ```
  }];
  let options = [
    Option<"tpAxis", "tp-axis", "std::string", "\"tp\"",
           "mesh axis of tensor parallelism, whose all-reduces become reduce-scatters">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect"];
}

def ContextParallelAttention : Pass<"pmlir-context-parallel-attention", "mlir::ModuleOp"> {
  let summary = "pins attention's shardings for a context-parallel variant (ring, Ulysses)";
  let description = [{
    Runs on a global program with shardings (after
    `pmlir-sharding-propagation`) whose sequence is split over the
    context-parallel axis, and pins with `tfm.sharding_constraint`s what the
    chosen variant needs of each `tfm.attention` and `tfm.attention_grad`
    whose result splits the sequence over it; `pmlir-sharding-propagation`
    then runs again over the constraints.

    - `ulysses` (DeepSpeed-Ulysses): the operands on heads shards (the axis
      leaves the sequence and joins the heads, minor to a tensor-parallel
      split), the results back on sequence shards, the key and value
      gradients complete. `pmlir-partition` moves the queries, keys and
      values with one `shard.all_to_all` each, runs the attention on the
      whole sequence and moves its result back with one more: four
      all-to-alls of b·s·h/cp elements per attention in the forward.
    - `ring`: the key and value gradients of each attention gradient on
      sequence shards, complete, so that `pmlir-partition`
      reduce-scatters them right at the op, the pattern
      `pmlir-ring-attention` replaces.
    - `allgather`: nothing (propagation gathers the keys and values).

    Diagnostics: a module without `tfm.mesh`, a mesh without the axis, an
    unknown variant, an attention without shardings, Ulysses with heads
    that the heads axes (tp × cp) do not divide.

    Before (cp = 2, ulysses):
    ```mlir
    %o = tfm.attention %q, %k, %v causal scale = 2.5e-01
        {tfm.shardings = [#tfm.sharding<[[], [], ["cp"], []]>]} : ...
    ```
    After:
    ```mlir
    %q2 = tfm.sharding_constraint %q to <[[], ["cp"], [], []]> : tensor<2x4x16x16xf32>
    %k2 = tfm.sharding_constraint %k to <[[], ["cp"], [], []]> : tensor<2x4x16x16xf32>
    %v2 = tfm.sharding_constraint %v to <[[], ["cp"], [], []]> : tensor<2x4x16x16xf32>
    %o = tfm.attention %q2, %k2, %v2 causal scale = 2.5e-01 {...} : ...
    %o2 = tfm.sharding_constraint %o to <[[], [], ["cp"], []]> : tensor<2x4x16x16xf32>
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"cp\"",
           "mesh axis of context parallelism">,
    Option<"attention", "attention", "pmlir::ContextAttention",
           "pmlir::ContextAttention::Ring", "the variant: allgather, ring or ulysses",
           "pmlir::contextAttentionValues()">,
  ];
}

def HeadTailSequence : Pass<"pmlir-head-tail-sequence", "mlir::ModuleOp"> {
  let summary = "orders the sequence head-tail over the cp axis to balance causal attention";
  let description = [{
    Runs on a global program whose token ids and labels split their `seq`
    dimension (`tfm.dims`) over the context-parallel axis alone, as the
    Megatron recipe leaves them. Split in contiguous blocks, the causal mask
    gives rank r of cp (2r + 1) / cp² of the attention work. In head-tail
    order (Megatron-LM's and torchtitan's load balancing) each rank's
    block is a chunk from the front of the sequence followed by one from its
    back, rank 0 holding the first and the last, and every rank gets the same
    share; blocks of an odd length have a head one position longer than
    the tail, so no padding is needed.

    The program computes on the permuted sequence with its shapes and
    shardings unchanged: only positions, the causal mask and an expert
    capacity (first come, first served) depend on the order of tokens. The
    pass sets `#tfm.head_tail` on each `tfm.arange` of the sequence's
    length, on each causal `tfm.attention` and `tfm.attention_grad` over the
    whole sequence, and on each `tfm.moe_capacity` and capacity's
    `tfm.moe_expert_counts` of a routing over it, and the module attribute
    `tfm.head_tail_axis`; `pmlir-partition` then marks each entry argument
    and result with a dimension split over the axis with
    `tfm.head_tail_dim`, by which `pmlir-run` binds each rank its two chunks
    and assembles such results in sequence order. `pmlir-ring-attention` computes the ring's blocks
    from the order, two full blocks a step on every rank.

    Diagnostics: a module without `tfm.mesh`, a mesh without the axis, no
    argument with a `seq` dimension, one not split over the axis alone,
    sequences of two lengths, blocks shorter than 2.

    Before (cp = 2):
    ```mlir
    %pos = tfm.arange start = 0 : tensor<16xi64>
    %o = tfm.attention %q, %k, %v causal scale = 2.5e-01 : ...
    ```
    After:
    ```mlir
    %pos = tfm.arange start = 0 head_tail <ranks = 2, length = 16>
        : tensor<16xi64>
    %o = tfm.attention %q, %k, %v causal head_tail <ranks = 2, length = 16>
        scale = 2.5e-01 : ...
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"cp\"",
           "mesh axis of context parallelism">,
  ];
}

def RingAttention : Pass<"pmlir-ring-attention", "mlir::ModuleOp"> {
  let summary = "ring attention: keys and values passed around the cp axis, online softmax";
  let description = [{
    Runs on a partitioned program (after `pmlir-partition`). Each
    `tfm.attention` whose keys and values are `shard.all_gather`s of the
    sequence over the context-parallel axis becomes a ring: the rank keeps
    its own key/value block, sends it to the next rank of the axis and
    receives the previous rank's (`shard.send`/`shard.recv`, cp − 1 times,
    each send issued before the block's computation so the two overlap),
    computes each block's attention (`tfm.attention_block`, with its
    log-sum-exp) and combines the blocks exactly (`tfm.attention_merge`,
    online softmax). Under the causal mask a later rank's block is wholly
    masked and is skipped (`scf.if` on the rank's index). In head-tail
    order (`#tfm.head_tail`, `pmlir-head-tail-sequence`) a rank's block is
    a head chunk and a tail chunk: the first step computes the head queries
    against the head keys and the tail queries against both chunks; each
    later step two full chunk blocks on every rank, an earlier rank's head
    chunk against every query or a later rank's chunks against the tail
    queries (`scf.if`, slices of the sequence dimension).

    Each `tfm.attention_grad` on such gathered keys and values whose key
    and value gradients are reduce-scattered over the axis (as
    `pmlir-context-parallel-attention{attention=ring}` pins them)
    recomputes the forward ring for the result and the log-sum-exp, then
    passes the key/value blocks around again with their gradient
    accumulators (`tfm.attention_block_grad` per block); one more step
    brings each rank's accumulators home.

    Communication: each rank sends its key and value block cp − 1 times
    per forward ring; a backward sends them cp − 1 times more (after its
    recomputed forward) and its key and value gradients cp times. Nothing
    is gathered: a rank holds two key/value blocks instead of cp.

    Diagnostics: a module without `tfm.mesh` or `shard.grid @mesh`, a mesh
    without the axis, a grid that cuts the axis into parts, a head-tail
    order whose blocks are not the rank's queries.
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"cp\"",
           "mesh axis of context parallelism">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::shard::ShardDialect", "mlir::tensor::TensorDialect"];
}

#endif // PMLIR_PARALLEL_TRANSFORMS_PASSES_TD
