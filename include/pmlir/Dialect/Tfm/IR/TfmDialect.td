//===- TfmDialect.td - The tfm transformer dialect ---------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMDIALECT_TD
#define PMLIR_DIALECT_TFM_IR_TFMDIALECT_TD

include "mlir/IR/OpBase.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let cppNamespace = "::pmlir::tfm";
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
  let summary = "Transformer operations on ranked tensors at global shapes";
  let description = [{
    The `tfm` dialect describes transformer models at the granularity that
    parallelization reasons about: embeddings, matmuls, norms, attention,
    rotary embeddings and the loss. Operands are ranked tensors of `f32`,
    `bf16` or `f16`; token ids are `i32` or `i64` tensors.

    A model is a `func.func` whose arguments are the token ids and the weights.
    Each weight argument carries its Hugging Face checkpoint name in the
    `tfm.name` argument attribute and the meaning of each of its dimensions in
    `tfm.dims` (for example `["in", "out"]` for GPT-2's Conv1D weights,
    `["out", "in"]` for Llama's Linear weights), so that checkpoints bind to
    arguments by name and later passes can shard weights by dimension role.

    Each transformer block is a `tfm.layer` region, so layer boundaries stay
    visible to the passes that cut pipelines and cluster layers.

    Verifiers name the operand or attribute at fault and print the expected
    and the actual shape or type.
  }];
}

#endif // PMLIR_DIALECT_TFM_IR_TFMDIALECT_TD
