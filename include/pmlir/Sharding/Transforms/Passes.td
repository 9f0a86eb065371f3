//===- Passes.td - Sharding passes -------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
// The passes of sharding: a mesh attached, shardings propagated (by a recipe, by hand or automatically), ZeRO, the partition into the per-rank program and its proof.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_TRANSFORMS_PASSES_TD
#define PMLIR_SHARDING_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttachMesh : Pass<"pmlir-attach-mesh", "mlir::ModuleOp"> {
  let summary = "puts the mesh a global program is sharded over on the module";
  let description = [{
    The one way a mesh enters a module: `mesh` ("dp=2,tp=2", axes in the
    order of the partitioned program's grid) and `rank-order` (axis names,
    fastest first; default tp, cp, ep, dp, pp) become the module's
    `tfm.mesh`, the rank order in it where it is not the default. A module
    that has a `tfm.mesh` already keeps it if it is the same mesh, and is
    refused otherwise.

    ```mlir
    // pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2 rank-order=dp,tp"
    module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2, rank_order = [dp, tp]>} { ... }
    ```

    Diagnostics: an empty or malformed mesh, an axis with no default place
    in the rank order and none given, a rank order that does not name every
    axis once, a module with another mesh.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "the mesh's axes and sizes, as pmlir-run --mesh (\"dp=2,tp=2\")">,
    Option<"rankOrder", "rank-order", "std::string", /*default=*/"\"\"",
           "the axes fastest first, as pmlir-run --rank-order (default: tp, cp, ep, dp, pp)">,
  ];
  let dependentDialects = ["pmlir::tfm::TfmDialect"];
}

def ShardingPropagation : Pass<"pmlir-sharding-propagation", "mlir::ModuleOp"> {
  let summary = "completes the shardings of a global program from a few annotations";
  let description = [{
    The module's `tfm.mesh` names the mesh axes. Seeds are `tfm.sharding`
    (`#tfm.sharding`) on function arguments and results and
    `tfm.sharding_constraint` ops; they never change. Every other tensor gets
    a sharding from the factor-based sharding rule of an op it meets (the
    op's `ShardingRuleOpInterface`), computed by the sharding engine
    (`include/pmlir/Sharding/Propagation.h`): forward from operands
    to results, then backward to operands, until nothing changes. Where the
    op's tensors propose different mesh axes for one factor, the proposal
    backed by the most tensor bytes wins, so the largest tensors keep their
    layout and smaller ones are resharded. A sharded contracting factor
    (a matmul's K, an embedding's vocabulary) makes the result a pending sum
    on its axes; pending sums pass through ops linear in them (`scale`,
    `matmul`, reshapes, `add` of sums pending on the same axes when no
    operand is needed whole elsewhere: parallel branches are reduced once,
    while a sequential residual stream, which the next norm needs whole
    anyway, is reduced per block as in Megatron) and stop at the first op
    that needs the full value, where partitioning will reduce them. Tensors nothing reaches are replicated. The result is
    deterministic. Each tfm op gets `tfm.shardings` (one `#tfm.sharding` per
    result); unannotated arguments and results get `tfm.sharding`.

    User control, as in Shardy: an annotation's `open = [d, ...]`
    dimensions may be split further by propagation (its axes are a prefix;
    the annotation is rewritten to the final sharding), the others are
    closed; annotations enter in rounds of increasing `priority = p`
    (default 0), each round propagated to its fixed point before the next
    round's annotations are seen. Where two user annotations meet at an op
    and one loses (its axes go to another factor, or another layout of the
    same factor wins), a warning names the op and both shardings: the loser
    is resharded there.

    A factor smaller than an axis that it divides takes the axis' major part,
    a sub-axis (`"tp:(1)2"` for 2 kv heads on a tp of 4; the query group
    takes `"tp:(2)2"`). A dimension the devices do not divide is split into
    padded shards (see `pmlir-partition`).

    Diagnostics: a missing `tfm.mesh`, an annotation naming an axis or a
    sub-axis the mesh lacks, axes that share devices, more devices than the
    elements of the dimension they split, pending axes on an argument;
    warnings where user annotations conflict.

    Before (a Megatron MLP: fc1 column-parallel, fc2 row-parallel):
    ```mlir
    module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
      func.func @mlp(%x: tensor<4x8xf32>,
                     %w1: tensor<8x32xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                     %w2: tensor<32x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) -> tensor<4x8xf32> {
        %h = tfm.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
        %g = tfm.gelu %h tanh : tensor<4x32xf32>
        %y = tfm.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
        return %y : tensor<4x8xf32>
      }
    }
    ```
    After (the hidden activation is split like fc1's columns; fc2's output
    is a sum pending over `tp`):
    ```mlir
    %h = tfm.matmul %x, %w1 {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>]} ...
    %g = tfm.gelu %h tanh {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>]} ...
    %y = tfm.matmul %g, %w2 {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]} ...
    ```
  }];
}

def MegatronRecipe : Pass<"pmlir-megatron-recipe", "mlir::ModuleOp"> {
  let summary = "annotates a GPT-2 or Llama model as Megatron-LM shards it";
  let description = [{
    Sets the shardings Megatron-LM's tensor and data parallelism give the
    weights and inputs, on the module's `tfm.mesh`; `pmlir-sharding-propagation`
    derives the rest. Weights are recognized by Hugging Face name and
    `tfm.dims` role: column-parallel (`attn.c_attn`, `mlp.c_fc`, `q_proj`,
    `k_proj`, `v_proj`, `gate_proj`, `up_proj`: the `out` dimension on the
    tp axis; with K key/value heads fewer than tp, `k_proj` and `v_proj`
    split over the sub-axis `tp:(1)K`, so that each device keeps the kv
    head its query heads read, replicated as in Megatron), row-parallel
    (`attn.c_proj`, `mlp.c_proj`, `o_proj`,
    `down_proj`: the `in` dimension), vocab-parallel (`wte`,
    `embed_tokens`, `lm_head`: the `vocab` dimension; a vocabulary tp does
    not divide, as GPT-2's 50257, is split into padded shards of
    ceil(V / tp) rows, as Megatron pads it); every `batch` dimension goes on
    the dp axis. Mixtral's stacked experts split each expert's FFN over tp
    (`w1`, `w3` by `out`, `w2` by `in`: Megatron's expert tensor
    parallelism) and their `expert` dimension over the ep axis (expert
    parallelism); as Megatron carves ep out of data parallelism, the batch
    splits over ep too (after dp), so that the dense layers treat ep as
    data parallelism. An ep axis on a model without experts, or one that
    does not divide the experts, is refused. A fused weight that `tfm.split` cuts
    along the split dimension (GPT-2's QKV) is not split contiguously, which
    would hand a device parts of two projections: a
    `tfm.sharding_constraint` pins each part instead. Axes the mesh lacks
    are skipped, so `#tfm.mesh<dp = 4>` gives pure data parallelism, and a
    mesh of pipeline stages alone (`#tfm.mesh<pp = 2>`, Megatron's TP = 1)
    leaves the module as it is; a mesh with none of the recipe's axes and
    others than the pipeline's is refused, not silently replicated.
    Arguments that already have a `tfm.sharding` keep it.

    Before:
    ```mlir
    %arg11: tensor<64x256xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.mlp.c_fc.weight"}
    %9:3 = tfm.split %arg5 dim = 1 : tensor<64x192xf32> -> ...
    ```
    After:
    ```mlir
    %arg11: tensor<64x256xf32> {..., tfm.sharding = #tfm.sharding<[[], ["tp"]]>}
    %9:3 = tfm.split %arg5 dim = 1 : tensor<64x192xf32> -> ...
    %10 = tfm.sharding_constraint %9#0 to <[[], ["tp"]]> : tensor<64x64xf32>
    ```
  }];
  let options = [
    Option<"tpAxis", "tp-axis", "std::string", "\"tp\"",
           "mesh axis of tensor parallelism">,
    Option<"dpAxis", "dp-axis", "std::string", "\"dp\"",
           "mesh axis of data parallelism">,
    Option<"cpAxis", "cp-axis", "std::string", "\"cp\"",
           "mesh axis of context parallelism">,
    Option<"epAxis", "ep-axis", "std::string", "\"ep\"",
           "mesh axis of expert parallelism">,
    Option<"pipelineAxis", "pipeline-axis", "std::string", "\"pp\"",
           "mesh axis of pipeline stages, left to pmlir-pipeline-partition">,
  ];
}

def AutoSharding : Pass<"pmlir-auto-sharding", "mlir::ModuleOp"> {
  let summary = "chooses every value's sharding with an integer program (Alpa's intra-op pass)";
  let description = [{
    Alpa's intra-op auto-sharding on the module's `tfm.mesh`, for each
    function (forward programs and training steps alike). Each op's
    strategies are the assignments of mesh axes to the factors of its
    sharding rule; each argument's, the even splits of its dimensions and
    what its users read it in. A strategy costs the roofline time of the
    op's block on the topology's device; each edge costs the reshard from
    the producer's sharding to what the consumer reads, priced by the
    reshard planner on the topology's links (an axis within a node on the
    node's link, others across); a training step's updated parameters
    reshard to their parameters' shardings. The live bytes at the
    program's heaviest points stay under the memory budget; an update
    made after its argument's last reader holds no bytes of its own (the
    compiled step writes it into the argument's buffer). CBC solves the
    one-hot integer program (within `time-limit` seconds); identical layers
    share their variables, as do a step's microbatches, the optimizer's
    updates of identical layers and the links of a running sum (a
    gradient accumulated over microbatches, the squares of every gradient
    added for the norm), so that the problem does not grow with the
    layers; cheap unary ops follow their operand. A
    function cut into pipeline stages (`pipe.stages`) is never sharded over
    `pipeline-axis`: its ranks run different stages. With the module's
    `pipe.schedule`, the budget bounds each pipeline rank: the arguments
    its stages read and the values live in the order its schedule runs
    them (its microbatches in flight, a running gradient sum adding each
    term as it is made), as `pmlir-pipeline-lower` builds its program.

    The pass writes seeds only: a `tfm.sharding` on every tensor argument,
    a `tfm.sharding_constraint` at every operand an op reads in another
    sharding than the operand's own (the reshard the plan priced, where
    partition would otherwise choose its own), and one wherever
    propagation from the seeds would reach another sharding than the
    plan's. `pmlir-sharding-propagation`
    and `pmlir-partition` then run as for any annotated program. With
    `report`, it writes the plan's predicted compute and communication
    time, its collectives' bytes per mesh axis group and its peak memory.

    Shardings the program already carries are kept (`keep-annotations`):
    an argument's `tfm.sharding` and a `tfm.sharding_constraint`'s
    sharding are those values' only strategies, and the plan chooses the
    rest around them, as a user pins a few values by hand. After
    `pmlir-megatron-recipe` this prices Megatron's plan on the topology,
    against which the free plan can be compared.

    Where no plan fits the budget it fails with the least memory any plan
    needs.

    Before (mesh `dp = 2, tp = 2`):
    ```mlir
    func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>)
    ```
    After (fast links: Megatron's column- and row-parallel split on tp, the
    batch on dp):
    ```mlir
    func.func @mlp(%x: tensor<8x64xf32> {tfm.sharding = #tfm.sharding<[["dp"], []]>},
                   %w1: tensor<64x256xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                   %w2: tensor<256x64xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>})
    ```
  }];
  let options = [
    Option<"topology", "topology", "std::string", "\"cpu\"",
           "a topology preset (cpu, h100, h200) or a JSON file">,
    Option<"rankOrder", "rank-order", "std::string", "\"\"",
           "the mesh's rank order, fastest axis first (default: tp, cp, ep, dp, pp)">,
    Option<"pipelineAxis", "pipeline-axis", "std::string", "\"pp\"",
           "the mesh axis of a pipelined function's stages, which no value is sharded over">,
    Option<"memoryBudget", "memory-budget", "std::string", "\"\"",
           "bytes a device may hold, as 12GiB, 800MB or 1e9 (default: the device's memory)">,
    Option<"solver", "solver", "pmlir::sharding::autoshard::Solver",
           "pmlir::sharding::autoshard::Solver::Cbc", "cbc, or exhaustive (small programs, for tests)",
           "pmlir::sharding::autoshard::solverValues()">,
    Option<"timeLimit", "time-limit", "double", "10.0",
           "seconds CBC may search">,
    Option<"follow", "follow", "bool", "true",
           "cheap unary ops follow their operand's strategy">,
    Option<"mergeLayers", "merge-layers", "bool", "true",
           "identical layers share one set of variables">,
    Option<"report", "report", "std::string", "\"\"",
           "write the plan's prediction to this JSON file">,
    Option<"keepAnnotations", "keep-annotations", "bool", "true",
           "keep the shardings the program carries (arguments' tfm.sharding, "
           "tfm.sharding_constraint) and choose the rest">,
  ];
}

def Zero : Pass<"pmlir-zero", "mlir::ModuleOp"> {
  let summary = "ZeRO: shards a training step's model state over the data-parallel axis";
  let description = [{
    On a global training step (`pmlir-optimizer`'s) with its parameters
    annotated (by a recipe or by hand), gives each parameter a "ZeRO
    sharding": its own sharding with the data-parallel axis added to the
    dimension with the most elements per device. Then, as ZeRO's stages
    (Rajbhandari et al.) say:

    - `stage=1`: the optimizer state (exp_avg, exp_avg_sq) takes it. The
      update runs on dp shards; propagation and partition make the gradient
      reach it reduce-scattered and the new parameter all-gathered: 2 Psi of
      wire bytes per step, as data parallelism's all-reduce, and 8 Psi / N
      bytes of optimizer state per rank.
    - `stage=2`: each gradient is constrained to it right where the
      backward pass makes it (each microbatch's, before they are summed), so
      gradients are reduce-scattered layer by layer: 12 Psi / N bytes of
      gradients and state.
    - `stage=3`: the parameter itself takes it, and is gathered to its own
      sharding right before its uses, once in each block (a forward layer
      and its backward layer gather it each): 3 Psi per step, 16 Psi / N
      bytes of model state.

    ```mlir
    // stage=1 on dp = 2, tp = 2, a column-parallel weight:
    %w: tensor<64x256xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}
    %w_m: tensor<64x256xf32> {tfm.sharding = #tfm.sharding<[[], ["tp", "dp"]]>}
    ```
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"1", "the ZeRO stage, 1 to 3">,
    Option<"dpAxis", "dp-axis", "std::string", /*default=*/"\"dp\"",
           "the data-parallel mesh axis">,
  ];
}

def Partition : Pass<"pmlir-partition", "mlir::ModuleOp"> {
  let summary = "turns a sharded global program into the program of one rank";
  let description = [{
    Runs after `pmlir-sharding-propagation`: every value has a sharding. The
    output is the SPMD program each rank runs: `tfm` ops on local shapes and
    upstream `shard` collectives on `shard.grid @mesh`, made from the
    module's `tfm.mesh`: grid axis i is mesh axis i, unless the shardings
    name sub-axes. Then each axis is cut into the parts they name (on a tp
    of 4, `"tp:(1)2"` cuts tp into the grid axes `tp:(1)2` and `tp:(2)2`,
    listed in the grid's `tfm.grid_axes`), so a collective over a sub-axis
    is one over its grid axes and whole tp is both. A reshard that needs a
    part no sharding names (an axis shared among an op's factors) is found
    while partitioning, which then starts over on a grid cut for it too.
    Sub-axes that end inside each other (`tp:(1)2` and `tp:(1)3` of a tp
    of 12) have no common grid and are an error. Function arguments and
    results take local types and keep their `tfm.sharding`, which says where
    each rank's block sits in the global tensor, and get `tfm.global_type`,
    the global tensor's type, and in a program in head-tail order
    (`tfm.head_tail_axis`, `pmlir-head-tail-sequence`) `tfm.head_tail_dim`,
    the dimension split over that axis (`pmlir-run` loads and assembles by
    them).

    A dimension of size N split over n devices that do not divide it is
    padded, as GSPMD pads uneven shards: each device holds ceil(N / n)
    elements, device i those from i * ceil(N / n) on, and the last blocks
    end in padding (zeros in the arguments pmlir-run loads). Only the
    minor-most factor of every dimension it is part of may be split so
    (a vocabulary, a feature dimension; not heads with a head size below
    them). Reshards of a padded dimension pad before a `reduce_scatter` or
    `all_slice` (`tensor.pad`) and cut the padding off after an `all_gather`
    (`tensor.extract_slice`); padded shards never move by `all_to_all`. A
    contraction over a padded dimension needs zeros in one operand's
    padding: the pass tracks which ops keep zero padding zeros (matmul,
    add, gelu, ... but not layernorm or softmax over padded rows) and
    refuses a contraction where neither operand's padding is known to be
    zeros.

    Each op is partitioned from its factor-based sharding rule: the mesh
    axes of its factors come from its result shardings (a contracting
    factor's from its operands, over the axes the result is pending on);
    operands are resharded to what the factors say; the op runs on local
    shapes (`split_heads` on its local heads, a vocab-parallel `embedding`
    with `rows_from` its block of rows, a sequence-split `arange` plus its
    block's first position, a sequence-split causal `attention` with its
    `query_offset`); a result computed with another sharding than its
    annotation (the parts of a replicated fused weight) is resharded to it.
    `tfm.cross_entropy` on split logits is Megatron's vocab-parallel cross
    entropy and never gathers the logits: `tfm.row_max` of each block,
    `all_reduce` max over the vocabulary axes, `tfm.cross_entropy_parts`
    (the block's exp sum and label logit per token), `all_reduce` sum of
    those `[tokens, 2]`, gathered over the token axes, and
    `tfm.cross_entropy_combine` for the mean. Its gradient later in the
    block (`tfm.cross_entropy_grad` of the same logits and labels) takes
    those all-reduced max and parts (`OpPartition::keep` and `keptBy`):
    the backward reads the logits block once and adds no collective. With
    the vocabulary whole the same holds on local statistics.

    Any change of sharding between a producer and a consumer becomes
    collectives, cheapest first: axes over which a pending sum is reduced
    and which the consumer splits a dimension over: `shard.reduce_scatter`;
    other pending axes: `shard.all_reduce`; an axis moving from the minor
    end of one dimension to another: `shard.all_to_all`; axes leaving a
    dimension: `shard.all_gather`; axes joining one: `shard.all_slice` (a
    local slice). A value resharded the same way twice in a block is
    resharded once.

    Before (a Megatron MLP after propagation, tp = 2):
    ```mlir
    %h = tfm.matmul %x, %w1 {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>]}
        : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %g = tfm.gelu %h tanh {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>]} : tensor<4x32xf32>
    %y = tfm.matmul %g, %w2 {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]}
        : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
    ```
    After:
    ```mlir
    shard.grid @mesh(shape = 2)
    %h = tfm.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %g = tfm.gelu %h tanh : tensor<4x16xf32>
    %y = tfm.matmul %g, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %r = shard.all_reduce %y on @mesh grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %r : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::shard::ShardDialect",
                           "mlir::tensor::TensorDialect"];
}

def ExportShardings : Pass<"pmlir-export-shardings", "mlir::ModuleOp"> {
  let summary = "writes tfm sharding annotations as upstream shard dialect annotations";
  let description = [{
    For comparison with upstream MLIR's `sharding-propagation` and
    `shard-partition`: the user's shardings of a global program (`tfm.sharding`
    on function arguments and results, `tfm.sharding_constraint` ops) become
    `shard.sharding` + `shard.shard` ops on a `shard.grid @mesh` made from
    `tfm.mesh` (grid axis i is mesh axis i). Replicated argument shardings
    are dropped. Upstream annotations have no pending sums: a pending
    constraint is an error. `bench/upstream_sharding.py` lowers the result
    to linalg (`pmlir-convert-tfm-to-linalg`) and runs upstream's passes
    on it.

    Before:
    ```mlir
    module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
      func.func @f(%w: tensor<8x32xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) ...
    ```
    After:
    ```mlir
    module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
      shard.grid @mesh(shape = 2)
      func.func @f(%w: tensor<8x32xf32>) ... {
        %s = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
        %w0 = shard.shard %w to %s : tensor<8x32xf32>
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect"];
}

def DropShardings : Pass<"pmlir-drop-shardings", "mlir::ModuleOp"> {
  let summary = "removes the sharding annotations of a global program";
  let description = [{
    The global program as if it had no mesh: `tfm.sharding` on function
    arguments and results, `tfm.sharding_constraint` ops (their uses take
    the constrained value) and the module's `tfm.mesh` are removed. This is
    the unsharded program `pmlir-run --check` compares the sharded run
    against.

    Before:
    ```mlir
    module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
      func.func @f(%w: tensor<8x32xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) ... {
        %c = tfm.sharding_constraint %x to <[[], ["tp"]]> : tensor<8x32xf32>
    ```
    After:
    ```mlir
    module {
      func.func @f(%w: tensor<8x32xf32>) ... {
    ```
  }];
}

def VerifySpmd : Pass<"pmlir-verify-spmd", "mlir::ModuleOp"> {
  let summary = "proves that every rank's collectives and messages match";
  let description = [{
    On a partitioned program (a `shard.grid @mesh`): every rank of the
    module's `tfm.mesh` runs it, and every collective waits for its whole
    group, which MPI and NCCL match by order alone. The pass traces each
    rank's program with that rank's coordinates (process indices and the
    scalar arithmetic on them folded, each `scf.if` on them decided, each
    `scf.for` of known bounds unrolled, `tfm.layer` and `pipe.fragment`
    bodies and called functions entered) and runs the ranks' traces against
    each other as the runtime would: a collective completes once every
    member of its group is at a collective of that group, and all of them
    must agree in kind, grid axes, reduction, tensor axis, element type and
    count; a send is buffered; a receive takes the oldest message from its
    source under its tag (`pipe.tag`), of the same element type and count.
    The first disagreement, a rank that would wait for ever, or a message
    never received is an error on one rank's op with a note on the other's,
    naming both ranks with their coordinates, e.g.

    ```
    error: pmlir-verify-spmd: rank 0 (tp=0) and rank 1 (tp=1) disagree in their 2nd
      collective over tp: rank 0 (tp=0) issues all_reduce (sum) of 64 f32 over tp,
      rank 1 (tp=1) all_gather (gather axis 1) of 64 f32 over tp (they differ in
      the kind and the tensor axis)
    note: the collective of rank 1 (tp=1)
    ```

    A condition that is not a function of the rank may guard collectives
    only where both branches issue the same ones. A program cut into
    pipeline stages (`pipe.fragment`s and a `pipe.schedule`) is checked as
    `pmlir-pipeline-lower` makes it on each rank of `axis`, its transfers
    and stage sums included. The module is left as it was.
    `pmlir-compile-pipeline` runs the pass at the end of the sharded phase
    (`verify-spmd=false` leaves it out).

    The check holds every rank's trace at once, so it stops with a warning
    (nothing proven) on a mesh of more than 65536 ranks and where the
    ranks' calls together pass 2^23; a rank whose own trace passes 2^22
    calls is an error.
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"pp\"",
           "the mesh axis of a pipelined program's stages">,
  ];
  // The mesh it checks on is a tfm.mesh, built from the grid where the
  // module carries none.
  let dependentDialects = ["pmlir::tfm::TfmDialect"];
}

#endif // PMLIR_SHARDING_TRANSFORMS_PASSES_TD
