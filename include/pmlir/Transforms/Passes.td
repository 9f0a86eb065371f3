//===- Passes.td - pmlir passes ----------------------------*- tablegen -*-===//
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

#endif // PMLIR_TRANSFORMS_PASSES_TD
