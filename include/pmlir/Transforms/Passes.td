//===- Passes.td - passes on tfm programs --------------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRANSFORMS_PASSES_TD
#define PMLIR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

def PrintModelSummary : Pass<"pmlir-print-model-summary", "mlir::ModuleOp"> {
  let summary = "prints layers, parameters, op counts and FLOPs of each model function";
  let description = [{
    For every function that holds `tfm` ops, prints to stdout its number of
    `tfm.layer` blocks, its inputs, weight tensors and parameter count (from
    the arguments named with `tfm.name`; `input_ids` is an input, not a
    weight), its results, the count of each `tfm` op, and the FLOPs of one
    call in matmuls and attention (2 per multiply-add, causal masking not
    subtracted). The IR is left unchanged.

    ```
    $ pmlir-gen gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 \
        --seq 128 --batch 1 --max-positions 1024 |
      pmlir-opt --pmlir-print-model-summary -o /dev/null
    model @forward
      layers:  12
      inputs:  input_ids tensor<1x128xi64>
      weights: 148 tensors, 124439808 parameters (497.8 MB)
      results: tensor<1x128x50257xf32>
      dense matmul + attention FLOPs per call: 32.23 GFLOP
      ops:     tfm.add 97, tfm.arange 1, tfm.attention 12, ...
    ```
  }];
}

def CommReport : Pass<"pmlir-comm-report", "mlir::ModuleOp"> {
  let summary = "writes the collectives of a partitioned program as JSON";
  let description = [{
    Sums the `shard` collectives of a partitioned program (after
    `pmlir-partition`) into a JSON report: `totals` per collective kind and
    `per_axis` per group of mesh axes (names from `tfm.mesh`), each with
    `count` and `bytes_per_rank`, and `collectives`, one entry per op with
    its kind, axes, local shape, bytes and `layer` (the `tfm.layer` index,
    when inside one). `bytes_per_rank` is the size of the largest buffer the
    collective moves on a rank: the tensor of an all_reduce, the gathered
    result of an all_gather, the input of a reduce_scatter or all_to_all;
    all_slice moves nothing. These are the volumes of Megatron's analysis
    (per layer 2 all-reduces of b·s·h elements). `wire_bytes_per_rank` is
    what one rank sends in the ring algorithms (NCCL's bus bytes), for a
    group of n ranks: 2(n-1)/n of an all_reduce's tensor, (n-1)/n of an
    all_gather's, reduce_scatter's or all_to_all's buffer, the whole tensor
    of a broadcast or send; in it a reduce_scatter plus an all_gather of one
    tensor cost what its all_reduce costs. `seconds` is the ring's modeled
    time: its steps (2(n-1) for an all_reduce, n-1 for an all_gather,
    reduce_scatter, all_to_all or broadcast, 1 for a send) times the link
    latency plus the wire bytes over the link bandwidth, on the slowest link
    of the group's axes. Links come from `links`, per axis, bandwidth in GB/s
    and latency in microseconds (`tp=450:2,dp=25:10,*=100:5`; `*` is every
    axis not named; without it 100 GB/s and 5 us). The reshard planner
    costs its plans with the same model (pmlir/Sharding/CostModel.h).
    `total` sums the collectives that communicate (all but all_slice).
    The IR is unchanged. `output` is a file (written whole or not at all) or
    `-` for stdout.

    ```
    pmlir-opt model.mlir --pmlir-megatron-recipe --pmlir-sharding-propagation \
      --pmlir-partition --pmlir-comm-report=output=comm.json -o /dev/null
    ```
    ```json
    {"mesh": {"dp": 2, "tp": 2},
     "total": {"count": 3, "bytes_per_rank": 12288, "wire_bytes_per_rank": 12288,
               "seconds": 3.012288e-05},
     "totals": {"all_reduce": {"count": 3, "bytes_per_rank": 12288,
                               "wire_bytes_per_rank": 12288, "seconds": 3.012288e-05}, ...},
     "per_axis": {"tp": {"count": 3, "bytes_per_rank": 12288, ...}},
     "collectives": [{"kind": "all_reduce", "axes": ["tp"], "shape": [1, 16, 64],
                      "bytes_per_rank": 4096, "wire_bytes_per_rank": 4096,
                      "seconds": 1.004096e-05}, ...]}
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", "\"-\"",
           "file to write the JSON report to (- for stdout)">,
    Option<"links", "links", "std::string", "\"\"",
           "links per mesh axis, AXIS=GBPS:US, comma-separated (* for the others)">,
  ];
}

def MemoryReport : Pass<"pmlir-memory-report", "mlir::ModuleOp"> {
  let summary = "writes the activation bytes each layer keeps for the backward pass, per rank, as JSON";
  let description = [{
    Per `tfm.layer`, on the local shapes of a partitioned program (or the
    global shapes of an unpartitioned one), the bytes of the activations a
    backward pass keeps, counted as Korthikanti et al. count them for
    Megatron's GPT layer ("Reducing Activation Recomputation in Large
    Transformer Models", section 4): the activation operands of every
    matmul, the inputs of norms and of gelu/silu, both factors of a mul, the
    query, key and value of each attention and its softmax probabilities
    `[b, a, s, s]`; adds, scales, reshapes and rotations keep nothing; a
    value counts once. A matmul input that is an all-gather of a sequence
    shard counts as the shard, which sequence parallelism keeps (and
    gathers again in the backward pass). Weights and what is computed from
    them alone are not activations.

    `parameters` gives the bytes of the parameter arguments a rank holds
    (its blocks, padding included), the ideal (each parameter divided
    exactly by the devices its sharding splits it over), the bytes of the
    parameters every rank holds whole, and the unsharded total. Under the
    Megatron recipe a rank holds a tp-th of every split weight, GPT-2's
    fused QKV weight included (each rank its heads of q, k and v).

    Next to each layer with an attention: its `dims` (b, s, h, a per rank,
    t the tp size) and Megatron's formula for a GPT layer in bytes:
    `fp16_with_dropout` is the paper's sbh(10 + 24/t + 5as/(ht)), or
    (sbh/t)(34 + 5as/h) with sequence parallelism; `f32_without_dropout`
    the same accounting for this IR's f32 tensors and no dropout,
    sbh(16 + 48/t) + 4as²b/t, or 64sbh/t + 4as²b/t with sequence
    parallelism, which a GPT-2 layer matches exactly.

    ```json
    {"mesh": {"tp": 2}, "activation_bytes_per_rank": 1179648,
     "layers": [{"layer": 0, "activation_bytes_per_rank": 589824,
                 "by_kind": {"matmul_inputs": ..., "norm_inputs": ..., ...},
                 "sequence_parallel": true,
                 "dims": {"b": 2, "s": 16, "h": 64, "a": 4, "t": 2},
                 "megatron_gpt_layer_bytes": {"fp16_with_dropout": ...,
                                              "f32_without_dropout": ...}}]}
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", "\"-\"",
           "file to write the JSON report to (- for stdout)">,
  ];
}

//===----------------------------------------------------------------------===//
// Sharding
//===----------------------------------------------------------------------===//

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
    the dp axis. A fused weight that `tfm.split` cuts
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
    program's heaviest points stay under the memory budget. CBC solves the
    one-hot integer program (within `time-limit` seconds); identical layers
    share their variables, as do a step's microbatches, the optimizer's
    updates of identical layers and the links of a running sum (a
    gradient accumulated over microbatches, the squares of every gradient
    added for the norm), so that the problem does not grow with the
    layers; cheap unary ops follow their operand. A
    function cut into pipeline stages (`pipe.stages`) is never sharded over
    `pipeline-axis`: its ranks run different stages.

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
           "a topology preset (cpu, h100) or a JSON file">,
    Option<"rankOrder", "rank-order", "std::string", "\"\"",
           "the mesh's rank order, fastest axis first (default: tp, cp, ep, dp, pp)">,
    Option<"pipelineAxis", "pipeline-axis", "std::string", "\"pp\"",
           "the mesh axis of a pipelined function's stages, which no value is sharded over">,
    Option<"memoryBudget", "memory-budget", "std::string", "\"\"",
           "bytes a device may hold, as 12GiB, 800MB or 1e9 (default: the device's memory)">,
    Option<"solver", "solver", "std::string", "\"cbc\"",
           "cbc, or exhaustive (small programs, for tests)">,
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
    `tfm.cross_entropy_combine` for the mean.

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
    Option<"attention", "attention", "std::string", "\"ring\"",
           "the variant: ring, ulysses or allgather">,
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
    shardings unchanged: only positions and the causal mask depend on the
    order of tokens. The pass sets `#tfm.head_tail` on each `tfm.arange` of
    the sequence's length and on each causal `tfm.attention` and
    `tfm.attention_grad` over the whole sequence, and the module attribute
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
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"pp\"",
           "the mesh axis of a pipelined program's stages">,
  ];
}

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

def PipelinePartition : Pass<"pmlir-pipeline-partition", "mlir::ModuleOp"> {
  let summary = "cuts a program at tfm.layer boundaries into pipeline stages";
  let description = [{
    Cuts `@entry` (a forward function, or pmlir-autodiff's gradient
    function) into `stages` stages (pipeline ranks x virtual stages) of
    `pipe.fragment` ops. Layers go to stages in order, balanced by FLOPs
    (each op's `CostOpInterface`), with the embeddings counted in the first
    stage and the final norm, LM head and loss in the last; `split-points`
    overrides the balance with the first layer of each stage after the
    first. A backward layer goes with its forward layer. Other ops follow
    their data: a forward op runs on the latest stage it reads, a backward
    op on the earliest; ops that read parameters alone (positions, the loss
    seed) stay outside fragments. Values crossing stages go through
    `pipe.transfer`; a parameter gradient summed from two stages (GPT-2's
    tied `wte`, read by the embedding on the first stage and the LM head on
    the last) becomes a `pipe.stage_sum`, as Megatron's embedding group sums
    it. A forward's results go to stage 0 through transfers, so that an
    inference pipeline returns its logits on the first pipeline rank (and
    job rank 0); a scalar result (a loss) becomes every stage's through a
    `pipe.stage_sum`. The function gets `pipe.stages`.

    ```mlir
    // before: the forward of a 2-layer model
    %e = tfm.embedding %wte[%ids] ...
    %h0 = tfm.layer 0 ... { ... }
    %h1 = tfm.layer 1 ... { ... }
    // after, stages=2
    %f0 = pipe.fragment stage 0 "F" : tensor<2x16x64xf32> { ... tfm.layer 0 ... }
    %t = pipe.transfer %f0 from 0 to 1 : tensor<2x16x64xf32>
    %f1 = pipe.fragment stage 1 "F" : tensor<2x16x97xf32> { ... tfm.layer 1 ... }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "the function to cut">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "stages: pipeline ranks x virtual stages">,
    ListOption<"splitPoints", "split-points", "int64_t",
               "the first layer of stages 1, 2, ... (default: balanced by FLOPs)">,
  ];
  let dependentDialects = ["pmlir::pipe::PipeDialect"];
}

def Microbatch : Pass<"pmlir-microbatch", "mlir::ModuleOp"> {
  let summary = "repeats a forward over the microbatches of a stacked batch";
  let description = [{
    Rewrites the forward function `@entry` to run once per microbatch: its
    inputs gain a leading dimension of `microbatches` (a batch stacked as
    `[microbatches, B, ...]`, each microbatch read through
    `tfm.microbatch`), its body is repeated per microbatch, and its results
    are those of the whole batch, tensors joined along their first dimension
    by `tfm.concat` (`[microbatches * B, ...]`) and scalars averaged. On a
    function cut into pipeline stages each repetition's fragments name their
    microbatch, which `pmlir-pipeline-schedule` then orders: the forward-only
    (inference) form of a pipeline. A training step repeats its gradient
    function itself (`pmlir-optimizer`'s `grad-accum`), so gradient
    functions are refused.

    ```mlir
    // before: stage 1 returns the logits of a batch of 2
    func.func @forward(%ids: tensor<2x16xi64> {tfm.role = #tfm<role input>}, ...) -> tensor<2x16x97xf32>
    // after, microbatches=4
    func.func @forward(%ids: tensor<4x2x16xi64> {tfm.role = #tfm<role input>}, ...) -> tensor<8x16x97xf32> {
      %ids0 = tfm.microbatch %ids index = 0 : tensor<4x2x16xi64> -> tensor<2x16xi64>
      %f0 = pipe.fragment stage 0 "F" microbatch 0 : tensor<2x16x64xf32> { ... }
      ...
      %logits = tfm.concat %l0, %l1, %l2, %l3 dim = 0 : ... -> tensor<8x16x97xf32>
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "the forward to repeat">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"2",
           "microbatches, each of the function's batch size">,
  ];
  let dependentDialects = ["pmlir::tfm::TfmDialect", "pmlir::pipe::PipeDialect"];
}

def PipelineSchedule : Pass<"pmlir-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "writes each pipeline rank's actions into a pipe.schedule";
  let description = [{
    Adds a `pipe.schedule` for `ranks` pipeline ranks and the module's
    program cut into stages (`pipe.stages`): `schedule` names the generator
    (gpipe, 1f1b, interleaved-1f1b with `virtual-stages` v, zb-h1, or zb-v
    with `virtual-stages=2`: rank r holds stages r and 2 ranks - 1 - r), or
    `csv` reads torch.distributed.pipelining's CSV (one line of actions per
    rank, "0F0,0F1,0B0,..."). The schedule is checked as the op's verifier
    checks it: every stage's work once per microbatch on its rank, and no
    deadlock (the simulator's message names each blocked rank). A forward
    program (inference, repeated over microbatches by `pmlir-microbatch`)
    gets the generated schedule's forwards alone, in each rank's order. A
    program repeated over microbatches must have the schedule's number of
    them.

    ```mlir
    pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2
        [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "pmlir::pipe::ScheduleKind",
           /*default=*/"pmlir::pipe::ScheduleKind::OneFOneB",
           "a generator (gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v) or csv",
           "pmlir::pipe::scheduleKindValues()">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "pipeline ranks (default: the stages over virtual-stages)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1", "microbatches per step">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "stages per pipeline rank (interleaved-1f1b; 2 for zb-v)">,
    Option<"csvFile", "csv", "std::string", /*default=*/"\"\"",
           "with schedule=csv: the file of actions per rank">,
  ];
  let dependentDialects = ["pmlir::pipe::PipeDialect"];
}

def PipelineReport : Pass<"pmlir-pipeline-report", "mlir::ModuleOp"> {
  let summary = "writes the simulated schedule's bubble and memory as JSON";
  let description = [{
    Runs the module's `pipe.schedule` in the simulator with per-action costs
    (`forward`, `backward-input`, `backward-weight` in any unit; a whole
    backward costs their sum) and writes to `output` (`-` for stdout): the
    makespan, the bubble fraction next to the formula's ((p-1)/(m+p-1) for
    GPipe and 1F1B, (p-1)/(vm+p-1) interleaved, ZB-H1's), each rank's busy
    time, each stage's peak of microbatches in flight, and the timeline.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"", "the JSON file">,
    Option<"forward", "forward", "double", /*default=*/"1", "cost of a stage's forward">,
    Option<"backwardInput", "backward-input", "double", /*default=*/"1",
           "cost of a stage's input gradient">,
    Option<"backwardWeight", "backward-weight", "double", /*default=*/"1",
           "cost of a stage's weight gradient">,
    Option<"transfer", "transfer", "double", /*default=*/"0", "delay of a transfer">,
  ];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def Autodiff : Pass<"pmlir-autodiff", "mlir::ModuleOp"> {
  let summary = "builds the gradient of a loss-returning function";
  let description = [{
    From `@entry`, which returns a scalar loss (`pmlir-gen --loss`), builds
    `@name`: the same arguments, and as results the loss and the gradient of
    each argument of role `param` (result attributes `tfm.name`, the
    parameter's name, and `tfm.sharded_like`, its index, so sharding
    propagation gives a gradient its parameter's sharding), at global
    shapes. Each op's gradient is the op's own (`AutodiffOpInterface`);
    values with several uses sum their gradients.

    Each forward `tfm.layer N` gets a `tfm.layer N backward` that yields the
    gradients of what the block uses from above. With `recompute=selective`
    (Korthikanti et al.) the attention core is recomputed inside
    `tfm.attention_grad` and the forward layer yields, after its output,
    every other activation its backward layer reads (views of weights are
    recomputed); with `recompute=none` each `tfm.attention` also returns
    its probabilities, which the forward layer keeps and
    `tfm.attention_grad` reads (a·s² per sequence and layer more memory,
    no recomputation); with `recompute=full` the forward layer keeps only
    its output and the backward layer runs the block again first.

    ```mlir
    %4:5 = tfm.layer 0 : tensor<2x16x64xf32>, ... {  // output, then kept values
      ...
    }
    ...
    %g:14 = tfm.layer 0 backward : tensor<2x16x64xf32>, tensor<64xf32>, ... {
      %dx = tfm.gelu_grad %4#3, %d tanh : tensor<2x16x256xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the function returning the loss">,
    Option<"name", "name", "std::string", /*default=*/"\"grad\"",
           "the name of the function built">,
    Option<"keepEntry", "keep-entry", "bool", /*default=*/"true",
           "keep the differentiated function (false: the gradient replaces it)">,
    Option<"recompute", "recompute", "pmlir::training::Recompute",
           /*default=*/"pmlir::training::Recompute::Selective",
           "what the backward pass recomputes instead of keeping",
           "pmlir::training::recomputeValues()">,
  ];
}

def Optimizer : Pass<"pmlir-optimizer", "mlir::ModuleOp"> {
  let summary = "builds a training step (accumulation, clipping, AdamW) from a gradient function";
  let description = [{
    From `@entry`, a gradient function (`pmlir-autodiff`'s: the loss, then
    the gradient of each parameter), builds `@name`, one training step at
    global shapes:

    - with `grad-accum=K` > 1 the inputs and labels gain a leading dimension
      of K microbatches (`tfm.microbatch`), the forward and backward passes
      run on each in turn, and the loss and the gradients are their mean;
    - the global gradient norm (`tfm.sum_squares` per gradient, summed,
      `tfm.sqrt`), returned as `grad_norm`; with `max-grad-norm` the
      gradients are clipped to it as `torch.nn.utils.clip_grad_norm_` does;
    - `tfm.adamw` per parameter, `torch.optim.AdamW`'s update.

    The optimizer state is arguments of role `optimizer_state`: each
    parameter's `<name>.exp_avg` and `<name>.exp_avg_sq` (`tfm.sharded_like`
    the parameter) and the `step`. The results are `loss`, `grad_norm`, then
    the new parameters, exp_avg, exp_avg_sq and step, each marked
    `tfm.updates` its argument: a runtime runs step after step on the same
    buffers, which the compiled step updates in place.

    ```mlir
    func.func @train_step(%ids: tensor<2x16xi64>, ..., %w: tensor<64x256xf32> {tfm.role = #tfm<role param>},
        ..., %w_m: tensor<64x256xf32> {tfm.name = "h.0.mlp.c_fc.weight.exp_avg", ...},
        ..., %step: tensor<f32> {tfm.name = "step", tfm.role = #tfm<role optimizer_state>})
        -> (tensor<f32> {tfm.name = "loss"}, tensor<f32> {tfm.name = "grad_norm"}, ...,
            tensor<64x256xf32> {tfm.name = "h.0.mlp.c_fc.weight", tfm.updates = 12 : i64}, ...)
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"grad\"",
           "the gradient function">,
    Option<"name", "name", "std::string", /*default=*/"\"train_step\"",
           "the name of the step built">,
    Option<"keepEntry", "keep-entry", "bool", /*default=*/"true",
           "keep the gradient function (false: the step replaces it)">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "AdamW's learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW's beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW's beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.01",
           "AdamW's decoupled weight decay">,
    Option<"maxGradNorm", "max-grad-norm", "double", /*default=*/"0",
           "clip the gradients to this global L2 norm (0: no clipping)">,
    Option<"gradAccum", "grad-accum", "int64_t", /*default=*/"1",
           "microbatches a step accumulates gradients over">,
  ];
}

#endif // PMLIR_TRANSFORMS_PASSES_TD
