//===- TfmGradOps.td - Gradient and optimizer ops of tfm ---*- tablegen -*-===//
//
// Part of pmlir.
//
// The ops pmlir-autodiff builds backward passes from, where a composition
// of forward ops would be slower or less precise, and those pmlir-optimizer
// builds a training step from: each has a verifier, a sharding rule (so
// training programs shard like forwards) and a lowering. Included by
// TfmOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMGRADOPS_TD
#define PMLIR_DIALECT_TFM_IR_TFMGRADOPS_TD

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

def Tfm_WeightGradOp : Tfm_Op<"weight_grad", [Pure, Tfm_OwnRule, Tfm_LinearInEachOperand,
    Tfm_KeepsZeroPadding, DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops"]>]> {
  let summary = "the gradient of a matmul weight shared by every row: sum of lhs^T rhs";
  let description = [{
    `lhs` is `[batch..., M, K]` and `rhs` is `[batch..., M, N]`; the result
    `[K, N]` is the sum over every batch element and row of `lhs^T rhs`. For
    `y = x @ W` (`W` `[K, N]`) it is `dW = weight_grad(x, dy)`; for a weight
    stored `[N, K]` (`transpose_rhs`), `dW = weight_grad(dy, x)`. The batch
    and row dimensions are contracted, so a batch split over `dp` gives a
    gradient pending over `dp`: the data-parallel reduction.

    ```mlir
    %dw = tfm.weight_grad %x, %dy
        : tensor<4x128x768xf32>, tensor<4x128x3072xf32> -> tensor<768x3072xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_SumLeadingOp : Tfm_Op<"sum_leading", [Pure, Tfm_OwnRule, Tfm_LinearInEachOperand,
    Tfm_KeepsZeroPadding]> {
  let summary = "sums the leading dimensions away";
  let description = [{
    The result has the trailing dimensions of `input`; each element is the
    sum over the leading ones. It is the gradient of a broadcast operand of
    `tfm.add`, `tfm.sub` and `tfm.mul` (a bias, a position table).

    ```mlir
    %db = tfm.sum_leading %dy : tensor<4x128x768xf32> -> tensor<768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_FillOp : Tfm_Op<"fill", [Pure, Tfm_ShardingRuleOpInterface, Tfm_Differentiable]> {
  let summary = "a tensor with every element `value`";
  let description = [{
    The seed of a backward pass (the gradient 1 of the loss), the gradient
    of a value the loss does not depend on (zeros), and the start of a sum
    carried from layer to layer (Mixtral's router statistics). A constant:
    a gradient reaching it goes no further.

    ```mlir
    %z = tfm.fill 0.0 : tensor<768xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Tfm_ConcatOp : Tfm_Op<"concat", [Pure, Tfm_OwnRule, Tfm_LinearInAllOperands,
    Tfm_KeepsZeroPadding]> {
  let summary = "joins equal tensors along one dimension (the inverse of tfm.split)";
  let description = [{
    The operands have equal types; the result is their concatenation along
    `dim`. It is the gradient of `tfm.split` (GPT-2's fused QKV weight).

    ```mlir
    %w = tfm.concat %dq, %dk, %dv dim = 1
        : tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32> -> tensor<768x2304xf32>
    ```
  }];
  let arguments = (ins Variadic<Tfm_FloatTensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` `=` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activations, softmax and norms
//===----------------------------------------------------------------------===//

// Elementwise gradients of a one-operand function: dx = f'(x) * dy.
class Tfm_ActivationGradOp<string mnemonic, string what, list<Trait> traits = []>
    : Tfm_Op<mnemonic, !listconcat(traits, [Pure, AllTypesMatch<["input", "grad", "result"]>,
                                            Tfm_ShardingRuleOpInterface, Tfm_SequenceLocal,
                                            Tfm_KeepsZeroPadding])> {
  let summary = "the gradient of " # what;
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$grad);
  let results = (outs Tfm_FloatTensor:$result);
}

def Tfm_GeluGradOp : Tfm_ActivationGradOp<"gelu_grad", "tfm.gelu"> {
  let description = [{
    `result = gelu'(input) * grad`, with the derivative of the same form
    (`erf` or `tanh`) as the forward.

    ```mlir
    %dx = tfm.gelu_grad %x, %dy tanh : tensor<4x128x3072xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$grad,
                       Tfm_GeluApproximation:$approximation);
  let assemblyFormat = "$input `,` $grad $approximation attr-dict `:` type($input)";
}

def Tfm_SiluGradOp : Tfm_ActivationGradOp<"silu_grad", "tfm.silu"> {
  let description = [{
    `result = sigmoid(x) (1 + x (1 - sigmoid(x))) * grad`.

    ```mlir
    %dx = tfm.silu_grad %x, %dy : tensor<4x128x11008xf32>
    ```
  }];
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
}

def Tfm_SoftmaxGradOp : Tfm_Op<"softmax_grad", [Pure, AllTypesMatch<["output", "grad", "result"]>,
    Tfm_OwnRule]> {
  let summary = "the gradient of tfm.softmax from its output";
  let description = [{
    With `y = softmax(x)` over the last dimension:
    `result = y * (grad - sum(grad * y))`, the sum over the last dimension.

    ```mlir
    %dx = tfm.softmax_grad %y, %dy : tensor<4x12x128x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$output, Tfm_FloatTensor:$grad);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($output)";
}

// The input gradient of a norm over the last dimension.
class Tfm_NormGradOp<string mnemonic, string what>
    : Tfm_Op<mnemonic, [Pure, AllTypesMatch<["input", "grad", "result"]>, Tfm_OwnRule,
                        Tfm_SequenceLocal, Tfm_KeepsZeroPadding]> {
  let summary = "the input gradient of " # what;
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$gamma, Tfm_FloatTensor:$grad,
                       F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad `eps` `=` $epsilon attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def Tfm_LayerNormGradOp : Tfm_NormGradOp<"layernorm_grad", "tfm.layernorm"> {
  let description = [{
    With `xhat = (x - mean) * rstd` and `g = grad * gamma` per row of the
    last dimension (`H` elements):
    `result = rstd * (g - mean(g) - xhat * mean(g * xhat))`. `beta` does not
    enter it.

    ```mlir
    %dx = tfm.layernorm_grad %x, %g, %dy eps = 1.0e-05
        : tensor<4x128x768xf32>, tensor<768xf32>
    ```
  }];
}

def Tfm_RmsNormGradOp : Tfm_NormGradOp<"rmsnorm_grad", "tfm.rmsnorm"> {
  let description = [{
    With `rstd = 1 / sqrt(mean(x^2) + eps)` and `g = grad * gamma` per row:
    `result = rstd * (g - x * rstd^2 * mean(g * x))`.

    ```mlir
    %dx = tfm.rmsnorm_grad %x, %g, %dy eps = 1.0e-06
        : tensor<4x128x4096xf32>, tensor<4096xf32>
    ```
  }];
}

// The gradient of a norm's per-feature scale: a sum over the rows.
class Tfm_NormWeightGradOp<string mnemonic, string what>
    : Tfm_Op<mnemonic, [Pure, AllTypesMatch<["input", "grad"]>, Tfm_OwnRule,
                        Tfm_KeepsZeroPadding]> {
  let summary = "the gradient of " # what # "'s gamma";
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `eps` `=` $epsilon attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_LayerNormWeightGradOp : Tfm_NormWeightGradOp<"layernorm_weight_grad", "tfm.layernorm"> {
  let description = [{
    `result[h] = sum over rows of grad[..., h] * xhat[..., h]`, with `xhat`
    the input normalized as `tfm.layernorm` does before scaling. The rows are
    contracted: split rows give a gradient pending over their axes.

    ```mlir
    %dg = tfm.layernorm_weight_grad %x, %dy eps = 1.0e-05
        : tensor<4x128x768xf32> -> tensor<768xf32>
    ```
  }];
}

def Tfm_RmsNormWeightGradOp : Tfm_NormWeightGradOp<"rmsnorm_weight_grad", "tfm.rmsnorm"> {
  let description = [{
    `result[h] = sum over rows of grad[..., h] * x[..., h] * rstd`.

    ```mlir
    %dg = tfm.rmsnorm_weight_grad %x, %dy eps = 1.0e-06
        : tensor<4x128x4096xf32> -> tensor<4096xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Embedding, attention, loss
//===----------------------------------------------------------------------===//

def Tfm_EmbeddingGradOp : Tfm_Op<"embedding_grad", [Pure, Tfm_OwnRuleAndLocal,
    Tfm_LinearInEachOperand, Tfm_KeepsZeroPadding]> {
  let summary = "the gradient of an embedding table: a scatter-add of rows by token id";
  let description = [{
    `grad` is `[ids..., H]`; the result `[V, H]` holds in row `v` the sum of
    the rows of `grad` whose id is `v`. The ids are contracted: a batch
    split over `dp` gives a table gradient pending over `dp`. With
    `rows_from %offset` the result is the block of rows `[offset, offset +
    rows)` of a larger vocabulary (a vocab-parallel shard); ids outside it
    add nothing.

    ```mlir
    %dwte = tfm.embedding_grad %dy[%ids]
        : tensor<4x128x768xf32>, tensor<4x128xi64> -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$grad, Tfm_IdTensor:$ids, Optional<Index>:$row_offset);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $ids `]` (`rows_from` $row_offset^)? attr-dict `:` type($grad) `,` type($ids)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_AttentionGradOp : Tfm_Op<"attention_grad", [Pure, Tfm_OwnRuleAndLocal,
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops"]>]> {
  let summary = "the gradients of tfm.attention's query, key and value";
  let description = [{
    The operands are those of a `tfm.attention` (same `causal`, `scale`,
    `query_offset` and `head_tail`) and `grad`, the gradient of its result. The
    probabilities are recomputed (Korthikanti et al.'s selective
    recomputation of the attention core, as FlashAttention does): with
    `P = softmax(scale * Q K^T + mask)`, `dV = P^T dO`, `dP = dO V^T`,
    `dS = P * (dP - rowsum(P * dP))`, `dQ = scale * dS K`,
    `dK = scale * dS^T Q`. Grouped-query heads are rows of one GEMM per kv
    head, so the gradients of a shared key/value head sum over its group
    with no repeated keys or values.

    With `probabilities` (the second result of the forward `tfm.attention`,
    kept by `pmlir-autodiff recompute=none`), `P` is read instead of
    recomputed.

    ```mlir
    %dq, %dk, %dv = tfm.attention_grad %q, %k, %v, %do causal scale = 1.250000e-01
        : tensor<1x32x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>,
          tensor<1x32x128x64xf32>
        -> tensor<1x32x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>
    %dq2, %dk2, %dv2 = tfm.attention_grad %q, %k, %v, %do probabilities %p causal
        scale = 1.250000e-01
        : tensor<1x32x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>,
          tensor<1x32x128x64xf32>, tensor<1x32x128x128xf32>
        -> tensor<1x32x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key, Tfm_FloatTensor:$value,
                       Tfm_FloatTensor:$grad, Optional<Tfm_FloatTensor>:$probabilities,
                       UnitAttr:$causal, F64Attr:$scale, Optional<Index>:$query_offset,
                       OptionalAttr<Tfm_HeadTailAttr>:$head_tail);
  let results = (outs Tfm_FloatTensor:$query_grad, Tfm_FloatTensor:$key_grad,
                      Tfm_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $grad (`probabilities` $probabilities^)?
    (`causal` $causal^)? (`query_offset` $query_offset^)? (`head_tail` $head_tail^)?
    `scale` `=` $scale attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($grad)
    (`,` type($probabilities)^)?
    `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
  }];
  let hasVerifier = 1;
}

def Tfm_AttentionBlockGradOp : Tfm_Op<"attention_block_grad", [Pure]> {
  let summary = "the gradients of attention through one block of keys";
  let description = [{
    Ring attention's backward step. `output` and `lse` are the attention's
    result and log-sum-exp over the whole key sequence (all blocks merged),
    `grad` the gradient of that result; the key and value blocks and the
    mask are those of one `tfm.attention_block`. With
    `P = exp(scale * Q K^T + mask - lse)` (the block's columns of the full
    softmax) and `D = rowsum(grad * output)`: `dV = P^T dO`,
    `dS = P * (dO V^T - D)`, `dQ = scale * dS K` (this block's share of the
    query gradient), `dK = scale * dS^T Q`. Summed over the blocks, these
    are `tfm.attention_grad`'s gradients.

    ```mlir
    %dq, %dk, %dv = tfm.attention_block_grad %q, %k, %v, %do, %o, %lse causal
        scale = 1.250000e-01
        : tensor<1x32x64x64xf32>, tensor<1x8x64x64xf32>, tensor<1x8x64x64xf32>,
          tensor<1x32x64x64xf32>, tensor<1x32x64x64xf32>, tensor<1x32x64xf32>
        -> tensor<1x32x64x64xf32>, tensor<1x8x64x64xf32>, tensor<1x8x64x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key, Tfm_FloatTensor:$value,
                       Tfm_FloatTensor:$grad, Tfm_FloatTensor:$output, Tfm_FloatTensor:$lse,
                       UnitAttr:$causal, F64Attr:$scale, Optional<Index>:$query_offset);
  let results = (outs Tfm_FloatTensor:$query_grad, Tfm_FloatTensor:$key_grad,
                      Tfm_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $grad `,` $output `,` $lse
    (`causal` $causal^)? (`query_offset` $query_offset^)? `scale` `=` $scale attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($grad) `,` type($output) `,`
    type($lse) `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
  }];
  let hasVerifier = 1;
}

def Tfm_CountTokensOp : Tfm_Op<"count_tokens", [Pure, Tfm_OwnRule]> {
  let summary = "the number of labels that are not the ignore index";
  let description = [{
    The count `tfm.cross_entropy` divides by, as a float scalar. The tokens
    are contracted: labels split over `dp` give a count pending over `dp`.

    ```mlir
    %n = tfm.count_tokens %labels ignore_index = -100 : tensor<4x128xi64> -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_IdTensor:$labels, DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tfm_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $labels `ignore_index` `=` $ignore_index attr-dict `:` type($labels) `->` type($result)
  }];
}

def Tfm_CrossEntropyGradOp : Tfm_Op<"cross_entropy_grad", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["logits", "result"]>,
    Tfm_OwnRuleAndPartition]> {
  let summary = "the gradient of tfm.cross_entropy's logits";
  let description = [{
    `result[i..., j] = (softmax(logits[i...])[j] - (j == label)) * grad / count`
    for tokens whose label is not `ignore_index`, 0 for the others; `grad`
    is the gradient of the mean loss and `count` the number of counted
    tokens (`tfm.count_tokens`), both scalars.

    In a partitioned program the logits may be a block of columns
    `[vocab_from, vocab_from + Vb)` of a vocabulary of `vocab` entries
    (Megatron's vocab-parallel cross entropy): `max` is then each token's
    maximum over the whole vocabulary and `parts` the summed
    `tfm.cross_entropy_parts` (its first entry the softmax's denominator),
    and columns at or past `vocab` get 0. The logits are never gathered.

    ```mlir
    %dl = tfm.cross_entropy_grad %logits, %labels, %dloss, %n ignore_index = -100
        : tensor<4x128x50257xf32>, tensor<4x128xi64>, tensor<f32>, tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_IdTensor:$labels,
                       Tfm_ScalarFloatTensor:$grad, Tfm_ScalarFloatTensor:$count,
                       Optional<Tfm_FloatTensor>:$max, Optional<Tfm_FloatTensor>:$parts,
                       Optional<Index>:$vocab_from,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$vocab,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad `,` $count
    (`normalized` `by` $max^ `,` $parts)? (`vocab_from` $vocab_from^ `vocab` `=` $vocab)?
    `ignore_index` `=` $ignore_index attr-dict
    `:` type($logits) `,` type($labels) `,` type($grad) `,` type($count)
    (`,` type($max)^ `,` type($parts))?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Tfm_SqrtOp : Tfm_UnaryOp<"sqrt", [Tfm_SequenceLocal]> {
  let summary = "the square root of every element";
  let description = [{
    ```mlir
    %norm = tfm.sqrt %sum_of_squares : tensor<f32>
    ```
  }];
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tfm_SumSquaresOp : Tfm_Op<"sum_squares", [Pure, Tfm_OwnRule]> {
  let summary = "the sum of the squares of every element, a scalar";
  let description = [{
    A gradient's share of the global gradient norm. Every dimension is
    contracted: a gradient split over some axes gives a sum pending over
    them, which one scalar all-reduce completes.

    ```mlir
    %s = tfm.sum_squares %g : tensor<768x3072xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_ScalarFloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Tfm_MicrobatchOp : Tfm_Op<"microbatch", [Pure, Tfm_OwnRule]> {
  let summary = "microbatch `index` of a batch stacked along the first dimension";
  let description = [{
    `input` is `[K, ...]`, K microbatches; the result is `input[index]`. A
    training step with gradient accumulation runs its forward and backward
    passes on each microbatch in turn.

    ```mlir
    %ids = tfm.microbatch %all index = 1 : tensor<4x8x128xi64> -> tensor<8x128xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$index);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `index` `=` $index attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

// The step and the gradient norm of an optimizer: f32 scalars whatever the
// parameters' element type.
def Tfm_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Tfm_AdamWOp : Tfm_Op<"adamw", [Pure,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param", "new_exp_avg",
                   "new_exp_avg_sq"]>,
    Tfm_OwnRule, Tfm_KeepsZeroPadding]> {
  let summary = "one AdamW step of a parameter, torch.optim.AdamW's update";
  let description = [{
    With `t` the step (already counted: 1 at the first update) and `g` the
    gradient times `grad_scale`, clipped when `grad_norm` is given (scaled by
    `min(1, max_grad_norm / (grad_norm + 1e-6))`, as
    `torch.nn.utils.clip_grad_norm_` does), exactly as `torch.optim.AdamW`
    (decoupled weight decay, bias correction):

    ```
    p  = p * (1 - lr * weight_decay)
    m  = m + (1 - beta1) * (g - m)
    v  = beta2 * v + (1 - beta2) * g * g
    p  = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    ```

    The three results are the new parameter and state; bufferized, they
    overwrite the operands in place. Elementwise: it shards like its
    parameter.

    ```mlir
    %p1, %m1, %v1 = tfm.adamw %p, %g, %m, %v, %t lr = 1.0e-03 beta1 = 0.9 beta2 = 0.999
        eps = 1.0e-08 weight_decay = 1.0e-02 grad_scale = 1.0 : tensor<768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$param, Tfm_FloatTensor:$grad, Tfm_FloatTensor:$exp_avg,
                       Tfm_FloatTensor:$exp_avg_sq, Tfm_F32Scalar:$step,
                       Optional<Tfm_F32Scalar>:$grad_norm,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay, F64Attr:$grad_scale,
                       OptionalAttr<F64Attr>:$max_grad_norm);
  let results = (outs Tfm_FloatTensor:$new_param, Tfm_FloatTensor:$new_exp_avg,
                      Tfm_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step
    (`clip` $grad_norm^ `to` $max_grad_norm)?
    `lr` `=` $lr `beta1` `=` $beta1 `beta2` `=` $beta2 `eps` `=` $eps
    `weight_decay` `=` $weight_decay `grad_scale` `=` $grad_scale attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
}

#endif // PMLIR_DIALECT_TFM_IR_TFMGRADOPS_TD
