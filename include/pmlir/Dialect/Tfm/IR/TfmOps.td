//===- TfmOps.td - tfm operation definitions ---------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMOPS_TD
#define PMLIR_DIALECT_TFM_IR_TFMOPS_TD

include "pmlir/Dialect/Tfm/IR/TfmDialect.td"
include "pmlir/Dialect/Tfm/IR/TfmAttrs.td"
include "pmlir/Dialect/Tfm/IR/TfmInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Types and attributes
//===----------------------------------------------------------------------===//

def Tfm_Float : AnyTypeOf<[F32, BF16, F16]>;
def Tfm_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def Tfm_IdTensor : RankedTensorOf<[I32, I64]>;
def Tfm_I64Tensor : RankedTensorOf<[I64]>;
def Tfm_ScalarFloatTensor : 0DTensorOf<[F32, BF16, F16]>;

def Tfm_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "form of the GELU nonlinearity", [
      I32EnumAttrCase<"erf", 0>,
      I32EnumAttrCase<"tanh", 1>
    ]> {
  let cppNamespace = "::pmlir::tfm";
}

// What a function argument is: its `tfm.role` (`#tfm<role param>`; the
// case's name as a string, `"param"`, is read alike) and, in C++, the one
// enum every layer reads it as (tfm::argumentRole decides it for arguments
// without one).
def Tfm_ArgumentRole : I32EnumAttr<"ArgumentRole", "what a function argument is", [
      I32EnumAttrCase<"Param", 0, "param">,
      I32EnumAttrCase<"Input", 1, "input">,
      I32EnumAttrCase<"Label", 2, "label">,
      I32EnumAttrCase<"OptimizerState", 3, "optimizer_state">
    ]> {
  let cppNamespace = "::pmlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_ArgumentRoleAttr : EnumAttr<Tfm_Dialect, Tfm_ArgumentRole, "role">;

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, traits>;

// An op with its own sharding rule; with its own local rewrite in partition;
// with a partition of its own (ShardingRules.cpp).
defvar Tfm_OwnRule = DeclareOpInterfaceMethods<Tfm_ShardingRuleOpInterface, ["getShardingRule"]>;
defvar Tfm_OwnRuleAndLocal = DeclareOpInterfaceMethods<Tfm_ShardingRuleOpInterface,
                                                       ["getShardingRule", "partitionLocally"]>;
defvar Tfm_OwnRuleAndPartition = DeclareOpInterfaceMethods<Tfm_ShardingRuleOpInterface,
                                                           ["getShardingRule", "partitionItself"]>;
// What a backward pass keeps of the op; its FLOPs.
defvar Tfm_Saves = DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getSavedForBackward"]>;
// The op's gradients (Gradients.cpp).
defvar Tfm_Differentiable = DeclareOpInterfaceMethods<Tfm_AutodiffOpInterface>;

// Pure elementwise ops whose result has the type of their one operand.
class Tfm_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Tfm_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                            Tfm_ShardingRuleOpInterface])> {
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Embedding and positions
//===----------------------------------------------------------------------===//

def Tfm_EmbeddingOp : Tfm_Op<"embedding", [Tfm_Differentiable, Pure, Tfm_OwnRuleAndLocal]> {
  let summary = "gathers rows of an embedding table by token id";
  let description = [{
    `result[i..., :] = table[ids[i...], :]`. The table is `[vocab, hidden]`;
    `ids` has any rank and the result appends the hidden dimension to it. An
    id outside `[0, vocab)` is a runtime error, not undefined behaviour.

    With `rows_from %offset`, the table is the block of rows `[offset, offset
    + rows)` of a larger vocabulary (a vocab-parallel shard, made by
    `pmlir-partition`): an id in the block gives row `id - offset`, any other
    id a zero row, so the sum over the shards is the full lookup (Megatron's
    VocabParallelEmbedding).

    ```mlir
    %x = tfm.embedding %wte[%ids]
        : tensor<50257x768xf32>, tensor<1x128xi64> -> tensor<1x128x768xf32>
    %part = tfm.embedding %wte_shard[%ids] rows_from %offset
        : tensor<25129x768xf32>, tensor<1x128xi64> -> tensor<1x128x768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$table, Tfm_IdTensor:$ids,
                       Optional<Index>:$row_offset);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` (`rows_from` $row_offset^)? attr-dict `:` type($table) `,`
    type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_ArangeOp : Tfm_Op<"arange", [Pure, Tfm_OwnRuleAndLocal]> {
  let summary = "the positions start, start + 1, ..., start + n - 1";
  let description = [{
    A rank-1 integer tensor of consecutive positions. GPT-2 feeds it to the
    position embedding and Llama to `tfm.rope`; under sequence sharding each
    rank's slice carries the global positions of its tokens: the optional
    `plus %offset` (an index, the first position of the rank's block) is added
    to `start`. With `head_tail` (a sequence balanced for causal context
    parallelism, `#tfm.head_tail`), element `i` is `start` plus the position
    of index `i + offset` in that order.

    ```mlir
    %pos = tfm.arange start = 0 : tensor<128xi64>
    %local = tfm.arange start = 0 plus %offset : tensor<64xi64>
    %balanced = tfm.arange start = 0 plus %offset
        head_tail <ranks = 2, length = 128> : tensor<64xi64>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$start, Optional<Index>:$offset,
                       OptionalAttr<Tfm_HeadTailAttr>:$head_tail);
  let results = (outs 1DTensorOf<[I32, I64]>:$result);
  let assemblyFormat = [{
    `start` `=` $start (`plus` $offset^)? (`head_tail` $head_tail^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matmul and elementwise
//===----------------------------------------------------------------------===//

def Tfm_MatmulOp : Tfm_Op<"matmul", [Pure, Tfm_OwnRule, Tfm_LinearInEachOperand,
    Tfm_KeepsZeroPadding, Tfm_Differentiable,
    DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops", "getSavedForBackward"]>]> {
  let summary = "batched matrix product with optional transposed operands";
  let description = [{
    `lhs` is `[batch..., M, K]` (`[batch..., K, M]` with `transpose_lhs`);
    `rhs` is `[K, N]`, shared by every batch element (a weight), or
    `[batch..., K, N]` with the same batch dimensions as `lhs`
    (`[..., N, K]` with `transpose_rhs`). The result is `[batch..., M, N]`.
    `transpose_rhs` lets Llama's `[out, in]` Linear weights and a tied LM head
    be used as stored.

    ```mlir
    %y = tfm.matmul %x, %w
        : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
    %l = tfm.matmul %h, %wte transpose_rhs
        : tensor<1x128x768xf32>, tensor<50257x768xf32> -> tensor<1x128x50257xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

// Binary elementwise ops: `rhs` is `lhs`'s shape or a trailing suffix of it
// (a bias or a position table), broadcast over the leading dimensions.
class Tfm_BinaryOp<string mnemonic, string what, list<Trait> traits = []>
    : Tfm_Op<mnemonic, !listconcat(traits, [Pure,
        TypesMatchWith<"result has the type of lhs", "lhs", "result", "$_self">,
        Tfm_ShardingRuleOpInterface, Tfm_SequenceLocal, Tfm_KeepsZeroPadding])> {
  let summary = "elementwise " # what # " with trailing-dimension broadcast";
  let description = [{
    `result = lhs }] # what # [{ broadcast(rhs)`, where the shape of `rhs` equals
    the trailing dimensions of `lhs`: `[B, S, H]` with `[H]` adds a bias,
    with `[S, H]` a position table, with `[B, S, H]` a residual.

    ```mlir
    %y = tfm.}] # mnemonic # [{ %x, %b : tensor<1x128x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
}

def Tfm_AddOp : Tfm_BinaryOp<"add", "+", [Tfm_SumOfOperands, Tfm_Differentiable]>;
def Tfm_SubOp : Tfm_BinaryOp<"sub", "-", [Tfm_SumOfOperands, Tfm_Differentiable]>;
def Tfm_MulOp : Tfm_BinaryOp<"mul", "*", [Tfm_LinearInEachOperand, Tfm_Saves,
                                          Tfm_Differentiable]>;

def Tfm_ScaleOp : Tfm_Op<"scale", [Pure, SameOperandsAndResultType,
    Tfm_ShardingRuleOpInterface, Tfm_SequenceLocal, Tfm_KeepsZeroPadding, Tfm_LinearInEachOperand,
    Tfm_Differentiable]> {
  let summary = "multiplies every element by a constant";
  let description = [{
    ```mlir
    %y = tfm.scale %x, 0.125 : tensor<1x12x128x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input `,` $factor attr-dict `:` type($input)";
}

def Tfm_GeluOp : Tfm_UnaryOp<"gelu", [Tfm_SequenceLocal, Tfm_KeepsZeroPadding, Tfm_Saves,
                                      Tfm_Differentiable]> {
  let summary = "Gaussian error linear unit, exact (erf) or tanh form";
  let description = [{
    `erf`: `0.5 x (1 + erf(x / sqrt(2)))`; `tanh` (GPT-2's `gelu_new`):
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = tfm.gelu %x tanh : tensor<1x128x3072xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input,
                       Tfm_GeluApproximation:$approximation);
  let assemblyFormat = "$input $approximation attr-dict `:` type($input)";
}

def Tfm_SiluOp : Tfm_UnaryOp<"silu", [Tfm_SequenceLocal, Tfm_KeepsZeroPadding, Tfm_Saves,
                                      Tfm_Differentiable]> {
  let summary = "x * sigmoid(x)";
  let description = [{
    ```mlir
    %y = tfm.silu %x : tensor<1x128x11008xf32>
    ```
  }];
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Tfm_LayerNormOp : Tfm_Op<"layernorm",
    [Pure, AllTypesMatch<["input", "result"]>, AllTypesMatch<["gamma", "beta"]>, Tfm_OwnRule,
     Tfm_SequenceLocal, Tfm_Saves, Tfm_Differentiable]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta`, with the biased
    variance over the last dimension; `gamma` and `beta` are `[hidden]`.

    ```mlir
    %y = tfm.layernorm %x, %g, %b eps = 1.0e-05
        : tensor<1x128x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$gamma,
                       Tfm_FloatTensor:$beta, F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `eps` `=` $epsilon attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def Tfm_RmsNormOp : Tfm_Op<"rmsnorm", [Pure, AllTypesMatch<["input", "result"]>, Tfm_OwnRule,
    Tfm_SequenceLocal, Tfm_KeepsZeroPadding, Tfm_Saves, Tfm_Differentiable]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * gamma`; `gamma` is `[hidden]`.

    ```mlir
    %y = tfm.rmsnorm %x, %g eps = 1.0e-06 : tensor<1x128x4096xf32>, tensor<4096xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$gamma,
                       F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `eps` `=` $epsilon attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def Tfm_SoftmaxOp : Tfm_UnaryOp<"softmax", [Tfm_Differentiable, Tfm_OwnRule]> {
  let summary = "softmax over the last dimension";
  let description = [{
    ```mlir
    %p = tfm.softmax %s : tensor<1x12x128x128xf32>
    ```
  }];
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tfm_SplitHeadsOp : Tfm_Op<"split_heads", [Pure, Tfm_OwnRuleAndLocal, Tfm_LinearInEachOperand,
    Tfm_KeepsZeroPadding, Tfm_Differentiable]> {
  let summary = "[B, S, A*D] -> [B, A, S, D]";
  let description = [{
    Splits the hidden dimension into `heads` heads and moves the head
    dimension before the sequence.

    ```mlir
    %q = tfm.split_heads %x heads = 12
        : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `heads` `=` $heads attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_MergeHeadsOp : Tfm_Op<"merge_heads", [Pure, Tfm_OwnRule, Tfm_LinearInEachOperand,
    Tfm_KeepsZeroPadding, Tfm_Differentiable]> {
  let summary = "[B, A, S, D] -> [B, S, A*D]";
  let description = [{
    The inverse of `tfm.split_heads`.

    ```mlir
    %x = tfm.merge_heads %o : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_RopeOp : Tfm_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>, Tfm_OwnRule,
    Tfm_LinearInEachOperand, Tfm_KeepsZeroPadding, Tfm_Differentiable]> {
  let summary = "rotary position embedding, Hugging Face rotate-half convention";
  let description = [{
    For `x` of shape `[B, A, S, D]` (D even) and `positions` of shape `[S]`:
    with `inv_freq[i] = theta^(-2i/D)` for `i < D/2` and
    `angle[s, j] = positions[s] * inv_freq[j mod D/2]`,
    `result = x * cos(angle) + rotate_half(x) * sin(angle)`, where
    `rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])`. This is
    `apply_rotary_pos_emb` of Hugging Face's Llama. With `inverse` it rotates
    by `-angle` (its gradient: the rotation is orthogonal).

    ```mlir
    %q2 = tfm.rope %q, %pos theta = 1.0e+04
        : tensor<1x32x128x128xf32>, tensor<128xi64>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_IdTensor:$positions,
                       F64Attr:$theta, UnitAttr:$inverse);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions `theta` `=` $theta (`inverse` $inverse^)? attr-dict `:` type($input) `,`
    type($positions)
  }];
  let hasVerifier = 1;
}

def Tfm_AttentionOp : Tfm_Op<"attention", [Tfm_Differentiable, Pure, Tfm_OwnRuleAndLocal,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>,
    DeclareOpInterfaceMethods<Tfm_CostOpInterface,
                              ["getFlops", "getSavedForBackward", "getSavedInternalBytes"]>]> {
  let summary = "scaled dot-product attention, causal and grouped-query";
  let description = [{
    `query` is `[B, Hq, S, D]`, `key` is `[B, Hkv, Skv, D]`, `value` is
    `[B, Hkv, Skv, Dv]`; the result is `[B, Hq, S, Dv]`. `Hq` is a multiple of
    `Hkv`: query head `h` reads key/value head `h / (Hq / Hkv)` (grouped-query
    attention; `Hkv = 1` is multi-query). With `causal`, query `i` attends to
    keys `j <= i + (Skv - S)`, the last query seeing every key; with
    `query_offset %o` (an index: the queries are a block of a longer query
    sequence, as on a rank of a sequence-sharded program) to keys
    `j <= i + o`. With `head_tail` (`#tfm.head_tail`: the sequence balanced
    for causal context parallelism) the mask compares the positions of
    those indices in that order; the keys are the whole sequence.

    `result = softmax(scale * query @ key^T + mask) @ value`.

    With a second result type, the op also returns the probabilities
    `softmax(scale * query @ key^T + mask)`, `[B, Hq, S, Skv]`: a training
    step that keeps them for the backward pass (`pmlir-autodiff
    recompute=none`) instead of recomputing them.

    ```mlir
    %o = tfm.attention %q, %k, %v causal scale = 1.250000e-01
        : tensor<1x32x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>
        -> tensor<1x32x128x64xf32>
    %o2, %p = tfm.attention %q, %k, %v causal scale = 1.250000e-01
        : tensor<1x32x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>
        -> tensor<1x32x128x64xf32>, tensor<1x32x128x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value, UnitAttr:$causal, F64Attr:$scale,
                       Optional<Index>:$query_offset, OptionalAttr<Tfm_HeadTailAttr>:$head_tail);
  let results = (outs Tfm_FloatTensor:$result, Optional<Tfm_FloatTensor>:$probabilities);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)? (`query_offset` $query_offset^)?
    (`head_tail` $head_tail^)?
    `scale` `=` $scale attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($result)
    (`,` type($probabilities)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_AttentionBlockOp : Tfm_Op<"attention_block", [Pure]> {
  let summary = "attention of queries against one block of keys, with its log-sum-exp";
  let description = [{
    Ring attention's step: `tfm.attention`'s operands and mask (`causal`,
    `query_offset`: query `i` sees keys `j <= i + offset`), where the keys
    and values are one block of a longer sequence. Besides the result,
    normalized over the block's keys, it returns `lse` `[B, Hq, S]`, the
    log of each query's softmax denominator over the block (the max
    included), so that `tfm.attention_merge` combines blocks exactly
    (online softmax). Every query must see at least one key of the block
    (a non-negative offset under `causal`): ring attention skips blocks
    wholly masked.

    ```mlir
    %o, %lse = tfm.attention_block %q, %k, %v causal scale = 1.250000e-01
        : tensor<1x32x64x64xf32>, tensor<1x8x64x64xf32>, tensor<1x8x64x64xf32>
        -> tensor<1x32x64x64xf32>, tensor<1x32x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value, UnitAttr:$causal, F64Attr:$scale,
                       Optional<Index>:$query_offset);
  let results = (outs Tfm_FloatTensor:$result, Tfm_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)? (`query_offset` $query_offset^)?
    `scale` `=` $scale attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($result) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Tfm_AttentionMergeOp : Tfm_Op<"attention_merge", [Pure,
    AllTypesMatch<["result", "lhs", "rhs"]>,
    AllTypesMatch<["lse", "lhs_lse", "rhs_lse"]>]> {
  let summary = "combines the attention of two key blocks (online softmax)";
  let description = [{
    With `lse = log(exp(lhs_lse) + exp(rhs_lse))`,
    `result = lhs * exp(lhs_lse - lse) + rhs * exp(rhs_lse - lse)`: the
    attention of the queries against both blocks' keys, from each block's
    normalized result and log-sum-exp (`tfm.attention_block`). Results
    `[..., Dv]`, log-sum-exps `[...]`.

    ```mlir
    %o, %lse = tfm.attention_merge %o1, %lse1, %o2, %lse2
        : tensor<1x32x64x64xf32>, tensor<1x32x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$lhs_lse,
                       Tfm_FloatTensor:$rhs, Tfm_FloatTensor:$rhs_lse);
  let results = (outs Tfm_FloatTensor:$result, Tfm_FloatTensor:$lse);
  let assemblyFormat = [{
    $lhs `,` $lhs_lse `,` $rhs `,` $rhs_lse attr-dict `:` type($lhs) `,` type($lhs_lse)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Tfm_SplitOp : Tfm_Op<"split", [Tfm_Differentiable, Pure, Tfm_OwnRule, Tfm_LinearInEachOperand,
    Tfm_KeepsZeroPadding]> {
  let summary = "splits a tensor into equal parts along one dimension";
  let description = [{
    GPT-2 stores the query, key and value projections as one `[H, 3H]` Conv1D
    weight; `tfm.split` cuts it into three `[H, H]` weights so that each
    projection is its own matmul.

    ```mlir
    %wq, %wk, %wv = tfm.split %w dim = 1
        : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Variadic<Tfm_FloatTensor>:$results);
  let assemblyFormat = [{
    $input `dim` `=` $dim attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Tfm_LayerOp : Tfm_Op<"layer", [SingleBlockImplicitTerminator<"YieldOp">,
                                   RecursiveMemoryEffects, Tfm_InlineBody]> {
  let summary = "one transformer block";
  let description = [{
    Marks the boundary of transformer block `index`. The body uses values
    from above (the residual stream and the weights) and yields the block's
    outputs. Pipeline partitioning cuts between layers and clusters them;
    lowering inlines the body. A `backward` layer (made by pmlir-autodiff)
    holds the gradients of block `index`: it yields the gradients of the
    values its forward layer uses from above, and its forward layer yields,
    after the block's outputs, the activations it keeps for it.

    ```mlir
    %h1 = tfm.layer 0 : tensor<1x128x768xf32> {
      ...
      tfm.yield %out : tensor<1x128x768xf32>
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$index, UnitAttr:$backward);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$index (`backward` $backward^)? attr-dict `:` type($results) $body";
  let hasVerifier = 1;
}

def Tfm_YieldOp : Tfm_Op<"yield", [Pure, Terminator, HasParent<"LayerOp">,
                                   ReturnLike]> {
  let summary = "returns the outputs of a tfm.layer";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Tfm_ShardingConstraintOp : Tfm_Op<"sharding_constraint",
    [Pure, Tfm_Differentiable, SameOperandsAndResultType, Tfm_ShardingRuleOpInterface,
        Tfm_LinearInEachOperand]> {
  let summary = "pins the sharding of a value";
  let description = [{
    The result is the input, with sharding `sharding` on the module's
    `tfm.mesh`: propagation takes it as given, as it does the shardings of
    function arguments and results, and partitioning reshards the input into
    it. Pending axes are allowed: a constraint may keep a sum pending.

    ```mlir
    %y = tfm.sharding_constraint %x to <[["dp"], [], []]> : tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Tfm_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tfm_CrossEntropyOp : Tfm_Op<"cross_entropy", [Tfm_Differentiable, Pure,
    Tfm_OwnRuleAndPartition]> {
  let summary = "mean token cross entropy with an ignore index";
  let description = [{
    `logits` is `[..., V]`, `labels` has `logits`' shape without the last
    dimension. The result is the mean of `logsumexp(logits) - logits[label]`
    over the tokens whose label is not `ignore_index` (PyTorch's
    `cross_entropy(reduction="mean")`); with no such token it is NaN, as in
    PyTorch.

    ```mlir
    %loss = tfm.cross_entropy %logits, %labels ignore_index = -100
        : tensor<1x128x50257xf32>, tensor<1x128xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_IdTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tfm_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `ignore_index` `=` $ignore_index attr-dict
    `:` type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_RowMaxOp : Tfm_Op<"row_max", [Pure]> {
  let summary = "the maximum over the last dimension";
  let description = [{
    `result[i...] = max_j input[i..., j]`. With `vocab_from %o vocab = V`,
    `input` holds the columns `[o, o + n)` of a vocabulary of `V` entries,
    and columns at or past `V` (padding) are left out. A vocab-parallel
    cross entropy (made by `pmlir-partition`) takes each device's block
    maximum and all-reduces it with `max` into the maximum over the whole
    vocabulary.

    ```mlir
    %m = tfm.row_max %logits vocab_from %off vocab = 97
        : tensor<2x16x49xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Optional<Index>:$vocab_from,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$vocab);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`vocab_from` $vocab_from^ `vocab` `=` $vocab)? attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_CrossEntropyPartsOp : Tfm_Op<"cross_entropy_parts", [Pure]> {
  let summary = "one vocabulary block's share of each token's cross entropy";
  let description = [{
    `logits` is `[..., Vb]`: the columns `[vocab_from, vocab_from + Vb)` of
    logits over a vocabulary of `vocab` entries (without `vocab_from`, all
    of them: `Vb = vocab`); columns at or past `vocab` are padding and
    count for nothing. `max` is each token's maximum over the whole
    vocabulary. The result is `[..., 2]`:

    - `result[i..., 0]`: the sum over the block's columns of
      `exp(logits[i..., j] - max[i...])`;
    - `result[i..., 1]`: `logits[i..., label - vocab_from] - max[i...]` if
      the token's label lies in the block, else 0.

    Summed over the blocks (one `all_reduce`), `log(result[..., 0]) -
    result[..., 1]` is each token's cross entropy: Megatron's vocab-parallel
    cross entropy, which never gathers the logits.

    ```mlir
    %p = tfm.cross_entropy_parts %logits, %labels, %max vocab_from %off vocab = 97
        : tensor<2x16x49xf32>, tensor<2x16xi64>, tensor<2x16xf32> -> tensor<2x16x2xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_IdTensor:$labels,
                       Tfm_FloatTensor:$max, ConfinedAttr<I64Attr, [IntPositive]>:$vocab,
                       Optional<Index>:$vocab_from);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $max (`vocab_from` $vocab_from^)? `vocab` `=` $vocab attr-dict
    `:` type($logits) `,` type($labels) `,` type($max) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_CrossEntropyCombineOp : Tfm_Op<"cross_entropy_combine", [Pure]> {
  let summary = "mean cross entropy from the summed parts of its vocabulary blocks";
  let description = [{
    `parts` is `[..., 2]`, the sum over a vocabulary's blocks of
    `tfm.cross_entropy_parts`; `labels` is `[...]`. The result is the mean
    of `log(parts[..., 0]) - parts[..., 1]` over the tokens whose label is
    not `ignore_index`, what `tfm.cross_entropy` computes from the whole
    logits.

    ```mlir
    %loss = tfm.cross_entropy_combine %parts, %labels ignore_index = -100
        : tensor<2x16x2xf32>, tensor<2x16xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$parts, Tfm_IdTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tfm_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $parts `,` $labels `ignore_index` `=` $ignore_index attr-dict
    `:` type($parts) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

// What a program measures of itself for pmlir-run's line after each step.
// The runtime knows each kind by the code of the same name in
// RuntimeAbi.def (PMLIR_RT_STEP_METRIC).
def Tfm_StepMetricKind : I32EnumAttr<"StepMetricKind", "what a tfm.step_metric measures", [
      I32EnumAttrCase<"ExpertTokens", 0, "expert_tokens">,
      I32EnumAttrCase<"DroppedTokens", 1, "dropped_tokens">
    ]> {
  let cppNamespace = "::pmlir::tfm";
}

def Tfm_StepMetricOp : Tfm_Op<"step_metric", [MemoryEffects<[MemWrite]>, Tfm_OwnRule]> {
  let summary = "adds a value the program computes to a metric reported after each step";
  let description = [{
    `value` (`[n]`, i64) is added, element by element, to the metric
    `kind` number `index` of the step under way: called once a microbatch,
    the metric is the step's sum. `pmlir-run` reports it after the step
    (`expert_tokens`: how many of the tokens' choices each expert of
    sparse layer `index` got, its minimum and maximum; `dropped_tokens`:
    how many each dropped past its capacity, their sum). The value must be
    whole on every device (its sharding rule replicates it: a value summed
    over a split batch is all-reduced first), so any rank that holds it
    reports the same. Backward passes do not run it again.

    ```mlir
    tfm.step_metric %counts kind = expert_tokens index = 3 : tensor<8xi64>
    ```
  }];
  let arguments = (ins Tfm_I64Tensor:$value, Tfm_StepMetricKind:$kind,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$index);
  let assemblyFormat = [{
    $value `kind` `=` $kind `index` `=` $index attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

include "pmlir/Dialect/Tfm/IR/TfmGradOps.td"
include "pmlir/Dialect/Tfm/IR/TfmExpertOps.td"

#endif // PMLIR_DIALECT_TFM_IR_TFMOPS_TD
