//===- Passes.td - Analysis passes -------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
// The passes of analysis reports: the model summary, collectives and activation memory.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_ANALYSIS_TRANSFORMS_PASSES_TD
#define PMLIR_ANALYSIS_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // PMLIR_ANALYSIS_TRANSFORMS_PASSES_TD
