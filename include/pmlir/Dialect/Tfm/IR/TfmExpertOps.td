//===- TfmExpertOps.td - Mixture-of-experts ops of tfm -----*- tablegen -*-===//
//
// Part of pmlir.
//
// A sparse (mixture-of-experts) layer in the manner of Mixtral and
// Megatron's dropless grouped MLP: the router picks each token's experts,
// the (token, choice) pairs are sorted by expert, the tokens are copied into
// that order, each expert's rows go through one GEMM of the grouped matmul,
// and the results are weighted and summed back per token. Every shape is
// static: a layer of T tokens and top-k routing always sorts T * k rows;
// only how many of them each expert gets (the counts) is data. Included by
// TfmOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMEXPERTOPS_TD
#define PMLIR_DIALECT_TFM_IR_TFMEXPERTOPS_TD

//===----------------------------------------------------------------------===//
// Routing
//===----------------------------------------------------------------------===//

def Tfm_MoeRouteOp : Tfm_Op<"moe_route", [Pure, Tfm_OwnRule, Tfm_SequenceLocal,
    Tfm_Differentiable, Tfm_Saves]> {
  let summary = "each token's top-k experts and their weights (Mixtral's router)";
  let description = [{
    `logits` is `[..., E]`, a router's score of each expert for each token.
    With `p = softmax(logits)` over the experts, `experts[..., j]` is the
    expert of the `j`-th largest probability (equal ones in expert order)
    and `weights[..., j] = p[experts[..., j]]`; with `normalize`, the `k`
    weights of a token are divided by their sum (Mixtral, and Qwen-MoE's
    `norm_topk_prob`), which makes them the softmax of the chosen logits.
    Both results are `[..., k]`.

    ```mlir
    %w, %e = tfm.moe_route %logits top_k = 2 normalize
        : tensor<4x128x8xf32> -> tensor<4x128x2xf32>, tensor<4x128x2xi64>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, ConfinedAttr<I64Attr, [IntPositive]>:$top_k,
                       UnitAttr:$normalize);
  let results = (outs Tfm_FloatTensor:$weights, Tfm_I64Tensor:$experts);
  let assemblyFormat = [{
    $logits `top_k` `=` $top_k (`normalize` $normalize^)? attr-dict `:` type($logits) `->`
    type($weights) `,` type($experts)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeSortOp : Tfm_Op<"moe_sort", [Pure, Tfm_OwnRule]> {
  let summary = "orders the (token, choice) pairs of a routing by expert";
  let description = [{
    `experts` is `[..., k]` (`tfm.moe_route`'s), `N` elements in all. Its
    elements, in row-major order, are sorted by expert, stably: the sorted
    order holds expert 0's pairs first in the order they come, then expert
    1's, and so on.

    - `slots` (`[..., k]`): where each pair stands in the sorted order;
    - `sources` (`[N]`): which pair (its row-major index) stands at each
      place, the inverse permutation;
    - `counts` (`[num_experts]`): how many pairs each expert has; they sum
      to `N`.

    An expert id outside `[0, num_experts)` (only hand-written IR can hold
    one: `tfm.moe_route` gives none) is taken as the nearest valid one.

    ```mlir
    %slots, %sources, %counts = tfm.moe_sort %e num_experts = 8
        : tensor<4x128x2xi64> -> tensor<4x128x2xi64>, tensor<1024xi64>, tensor<8xi64>
    ```
  }];
  let arguments = (ins Tfm_I64Tensor:$experts,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_experts);
  let results = (outs Tfm_I64Tensor:$slots, Tfm_I64Tensor:$sources, Tfm_I64Tensor:$counts);
  let assemblyFormat = [{
    $experts `num_experts` `=` $num_experts attr-dict `:` type($experts) `->` type($slots) `,`
    type($sources) `,` type($counts)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeExpertCountsOp : Tfm_Op<"moe_expert_counts", [Pure, Tfm_OwnRule]> {
  let summary = "how many of the tokens' choices name each expert (or overflow it)";
  let description = [{
    `experts` is `[..., k]` (`tfm.moe_route`'s). Element `e` of the result
    (`[num_experts]`) counts the elements of `experts` equal to `e`: the
    rows expert `e` computes, `tfm.moe_sort`'s `counts` without the sort.
    With `capacity`, it counts only those of them that
    `tfm.moe_capacity` with that capacity drops. Over a split batch the
    counts are sums to reduce. An expert id outside `[0, num_experts)` is
    taken as the nearest valid one, as `tfm.moe_sort` takes it. With
    `head_tail`, as `tfm.moe_capacity`'s.

    ```mlir
    %counts = tfm.moe_expert_counts %e num_experts = 8 : tensor<4x128x2xi64> -> tensor<8xi64>
    %dropped = tfm.moe_expert_counts %e num_experts = 8 capacity = 40
        : tensor<4x128x2xi64> -> tensor<8xi64>
    ```
  }];
  let arguments = (ins Tfm_I64Tensor:$experts,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_experts,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$capacity,
                       OptionalAttr<Tfm_HeadTailAttr>:$head_tail);
  let results = (outs Tfm_I64Tensor:$counts);
  let assemblyFormat = [{
    $experts `num_experts` `=` $num_experts (`capacity` `=` $capacity^)?
    (`head_tail` $head_tail^)? attr-dict `:` type($experts) `->` type($counts)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeCapacityOp : Tfm_Op<"moe_capacity", [Pure, Tfm_OwnRule, Tfm_Differentiable,
    Tfm_LinearInEachOperand, AllTypesMatch<["weights", "result"]>]> {
  let summary = "zeroes the routing weights of choices past their expert's capacity";
  let description = [{
    `weights` and `experts` are a routing's (`[..., S, k]`: sequences of
    `S` tokens, each with `k` choices). Within each sequence the choices
    take their experts' places first come, first served, in row-major
    order (token by token, a token's choices in order): a choice is kept
    when fewer than `capacity` earlier choices of its sequence name the
    same expert, and dropped otherwise. The result is `weights` with the
    dropped choices' weights zero, so that a dropped choice adds nothing to
    its token (which keeps its residual), as Hugging Face's Switch
    Transformers router drops tokens per sequence; Mixtral's `k` weights
    are renormalized before. `tfm.moe_expert_counts` with the same
    `capacity` counts the dropped choices. Linear in `weights`: its
    gradient is the same op on the weights' gradient. With `head_tail` (a
    sequence balanced for causal context parallelism,
    `pmlir-head-tail-sequence`) the tokens of each sequence are stored in
    that order, and they come first come, first served in their sequence's
    order all the same.

    ```mlir
    %kept = tfm.moe_capacity %w, %e capacity = 40 num_experts = 8
        : tensor<4x128x2xf32>, tensor<4x128x2xi64>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$weights, Tfm_I64Tensor:$experts,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$capacity,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_experts,
                       OptionalAttr<Tfm_HeadTailAttr>:$head_tail);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $weights `,` $experts `capacity` `=` $capacity `num_experts` `=` $num_experts
    (`head_tail` $head_tail^)? attr-dict `:` type($weights) `,` type($experts)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dispatch, experts, combine
//===----------------------------------------------------------------------===//

def Tfm_MoeDispatchOp : Tfm_Op<"moe_dispatch", [Pure, Tfm_OwnRule, Tfm_Differentiable,
    Tfm_LinearInEachOperand]> {
  let summary = "copies each token once per chosen expert, in the sorted order";
  let description = [{
    `input` is `[..., H]`, the tokens; `slots` (`[..., k]`) and `sources`
    (`[N]`, `N` = tokens times `k`) are `tfm.moe_sort`'s. Row `r` of the
    result `[N, H]` is the token of the pair `sources[r]`, times that
    pair's element of `weights` (`[..., k]`) where given: the rows of each
    expert follow one another, as `tfm.grouped_matmul` reads them. `slots`
    says where each pair went (the gradient is a `tfm.moe_combine`).

    ```mlir
    %rows = tfm.moe_dispatch %x, %slots, %sources
        : tensor<4x128x64xf32>, tensor<4x128x2xi64>, tensor<1024xi64> -> tensor<1024x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_I64Tensor:$slots, Tfm_I64Tensor:$sources,
                       Optional<Tfm_FloatTensor>:$weights);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots `,` $sources (`weights` $weights^)? attr-dict `:` type($input) `,`
    type($slots) `,` type($sources) (`,` type($weights)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeCombineOp : Tfm_Op<"moe_combine", [Pure, Tfm_OwnRule, Tfm_Differentiable,
    Tfm_LinearInEachOperand, Tfm_Saves]> {
  let summary = "sums each token's expert results, weighted, back in token order";
  let description = [{
    `input` is `[N, H]`, rows in the sorted order of `tfm.moe_sort`;
    `slots` (`[..., k]`) and `sources` (`[N]`) are its results. The result
    `[..., H]` is, per token, the sum over its `k` pairs of the row at the
    pair's slot, times the pair's element of `weights` (`[..., k]`, the
    router's) where given. `sources` says where each row came from (the
    gradient is a `tfm.moe_dispatch`).

    ```mlir
    %y = tfm.moe_combine %rows, %slots, %sources weights %w
        : tensor<1024x64xf32>, tensor<4x128x2xi64>, tensor<1024xi64>, tensor<4x128x2xf32>
        -> tensor<4x128x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_I64Tensor:$slots, Tfm_I64Tensor:$sources,
                       Optional<Tfm_FloatTensor>:$weights);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots `,` $sources (`weights` $weights^)? attr-dict `:` type($input) `,`
    type($slots) `,` type($sources) (`,` type($weights)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_GroupedMatmulOp : Tfm_Op<"grouped_matmul", [Pure, Tfm_OwnRule, Tfm_Differentiable,
    Tfm_LinearInEachOperand, Tfm_KeepsZeroPadding,
    DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops", "getSavedForBackward"]>]> {
  let summary = "one matrix product per expert over its consecutive rows";
  let description = [{
    `lhs` is `[N, K]`, its rows in groups that follow one another: group `e`
    holds the next `counts[e]` rows (`counts` is `[E]`). `rhs` is `[E, K,
    F]`, one weight per group (`[E, F, K]` with `transpose_rhs`: Mixtral's
    `[out, in]` expert weights, stacked). Each group's rows of the result
    `[N, F]` are its rows of `lhs` times its weight. Rows past the sum of
    the counts are zeros; a count that would pass row `N` is cut there.

    ```mlir
    %h = tfm.grouped_matmul %rows, %w1, %counts transpose_rhs
        : tensor<1024x64xf32>, tensor<8x176x64xf32>, tensor<8xi64> -> tensor<1024x176xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs, Tfm_I64Tensor:$counts,
                       UnitAttr:$transpose_rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $counts (`transpose_rhs` $transpose_rhs^)? attr-dict `:` type($lhs) `,`
    type($rhs) `,` type($counts) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The experts of a sparse block, whole
//===----------------------------------------------------------------------===//

def Tfm_MoeExpertsOp : Tfm_Op<"moe_experts", [Pure, Tfm_OwnRuleAndPartition,
    Tfm_Differentiable,
    DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops", "getSavedForBackward"]>]> {
  let summary = "routed tokens through their SwiGLU experts, weighted back (Mixtral's block)";
  let description = [{
    `input` is `[..., H]`, the tokens; `experts` and `weights` (`[..., k]`)
    are a routing's (`tfm.moe_route`'s). `w1` and `w3` are `[E, F, H]`,
    `w2` `[E, H, F]`: each expert's SwiGLU, `[out, in]` as Mixtral stores
    them. Each token's result `[..., H]` is the sum over its `k` choices of
    the choice's weight times `w2[e] (silu(w1[e] x) * w3[e] x)` of its
    expert `e`.

    The op is the unit expert parallelism splits: a device with a block of
    the tokens and a block of the experts (`w1`, `w3`, `w2` split along
    `E`) sorts its tokens by expert, sends each expert's rows to the device
    holding it and gets them back (`tfm.moe_all_to_all`,
    `tfm.moe_all_to_all_back`). Without that split it computes locally, and
    it is lowered as `tfm.moe_sort`, `tfm.moe_dispatch`, grouped matmuls
    and `tfm.moe_combine`.

    ```mlir
    %y = tfm.moe_experts %x, %e, %w, %w1, %w3, %w2
        : tensor<4x128x64xf32>, tensor<4x128x2xi64>, tensor<4x128x2xf32>,
          tensor<8x176x64xf32>, tensor<8x176x64xf32>, tensor<8x64x176xf32>
        -> tensor<4x128x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_I64Tensor:$experts,
                       Tfm_FloatTensor:$weights, Tfm_FloatTensor:$w1, Tfm_FloatTensor:$w3,
                       Tfm_FloatTensor:$w2);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $experts `,` $weights `,` $w1 `,` $w3 `,` $w2 attr-dict `:` type($input) `,`
    type($experts) `,` type($weights) `,` type($w1) `,` type($w3) `,` type($w2) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeExpertsGradOp : Tfm_Op<"moe_experts_grad", [Pure, Tfm_OwnRuleAndPartition,
    DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops"]>]> {
  let summary = "the gradients of tfm.moe_experts";
  let description = [{
    The operands of a `tfm.moe_experts` and the gradient of its result
    (`result_grad`); the gradients of its tokens, routing weights and the
    three expert weights. The experts' forward is computed again (the op
    keeps nothing between forward and backward but its operands).

    ```mlir
    %dx, %dw, %dw1, %dw3, %dw2 = tfm.moe_experts_grad %x, %e, %w, %w1, %w3, %w2, %dy
        : tensor<4x128x64xf32>, tensor<4x128x2xi64>, tensor<4x128x2xf32>,
          tensor<8x176x64xf32>, tensor<8x176x64xf32>, tensor<8x64x176xf32>,
          tensor<4x128x64xf32>
        -> tensor<4x128x64xf32>, tensor<4x128x2xf32>, tensor<8x176x64xf32>,
           tensor<8x176x64xf32>, tensor<8x64x176xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_I64Tensor:$experts,
                       Tfm_FloatTensor:$weights, Tfm_FloatTensor:$w1, Tfm_FloatTensor:$w3,
                       Tfm_FloatTensor:$w2, Tfm_FloatTensor:$result_grad);
  let results = (outs Tfm_FloatTensor:$input_grad, Tfm_FloatTensor:$weights_grad,
                      Tfm_FloatTensor:$w1_grad, Tfm_FloatTensor:$w3_grad,
                      Tfm_FloatTensor:$w2_grad);
  let assemblyFormat = [{
    $input `,` $experts `,` $weights `,` $w1 `,` $w3 `,` $w2 `,` $result_grad attr-dict `:`
    type($input) `,` type($experts) `,` type($weights) `,` type($w1) `,` type($w3) `,`
    type($w2) `,` type($result_grad) `->` type($input_grad) `,` type($weights_grad) `,`
    type($w1_grad) `,` type($w3_grad) `,` type($w2_grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Expert parallelism (partitioned programs)
//===----------------------------------------------------------------------===//

def Tfm_MoeAllToAllOp : Tfm_Op<"moe_all_to_all", [Pure, Tfm_Differentiable]> {
  let summary = "sends each expert's sorted rows to the device holding the expert";
  let description = [{
    A collective over the `n` devices of `grid_axes` of `grid`, each
    holding `E / n` consecutive experts of `E`. `rows` (`[R, H]`) is this
    device's rows sorted by expert and `counts` (`[E]`) how many rows each
    expert has here (`tfm.moe_sort`'s). The devices first exchange their
    counts; then each sends each other its rows of the other's experts
    (dropless: the counts say how many) and receives the rows of its own.
    `result` (`[n * R, H]`, the most a device can receive) holds them by
    expert, then by sender, each sender's in its order, as one sort of all
    the devices' rows by expert would; rows past them are zeros.
    `expert_counts` (`[E / n]`) is how many rows each of its experts got.

    ```mlir
    %recv, %n = tfm.moe_all_to_all %rows, %counts {grid = @mesh, grid_axes = array<i16: 1>}
        : tensor<512x64xf32>, tensor<8xi64> -> tensor<1024x64xf32>, tensor<4xi64>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$rows, Tfm_I64Tensor:$counts,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs Tfm_FloatTensor:$result, Tfm_I64Tensor:$expert_counts);
  let assemblyFormat = [{
    $rows `,` $counts attr-dict `:` type($rows) `,` type($counts) `->` type($result) `,`
    type($expert_counts)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeAllToAllBackOp : Tfm_Op<"moe_all_to_all_back", [Pure, Tfm_Differentiable]> {
  let summary = "returns the expert rows of tfm.moe_all_to_all to the devices they came from";
  let description = [{
    The inverse of `tfm.moe_all_to_all` with the same `counts` (`[E]`, this
    device's count of rows per expert): `rows` (`[n * R, H]`) are this
    device's experts' rows as that op leaves them, and `result` (`[R, H]`)
    this device's own rows back in its sorted order. Each is the other's
    gradient.

    ```mlir
    %back = tfm.moe_all_to_all_back %out, %counts {grid = @mesh, grid_axes = array<i16: 1>}
        : tensor<1024x64xf32>, tensor<8xi64> -> tensor<512x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$rows, Tfm_I64Tensor:$counts,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $rows `,` $counts attr-dict `:` type($rows) `,` type($counts) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The load-balancing loss
//===----------------------------------------------------------------------===//

def Tfm_MoeRouterStatsOp : Tfm_Op<"moe_router_stats", [Pure, Tfm_OwnRule, Tfm_Differentiable]> {
  let summary = "a router's sums over tokens: its probabilities, its choices";
  let description = [{
    `logits` is `[..., E]` (a router's), `experts` `[..., k]` (its
    `tfm.moe_route`'s choices). The result `[2, E]` holds, per expert, the
    sum over the tokens of its softmax probability (row 0) and the number
    of the tokens' choices that name it (row 1). Summed over the layers,
    the two rows are what Hugging Face's `load_balancing_loss_func` takes
    the means of; over a split batch they are sums to reduce. Only row 0
    has a gradient.

    ```mlir
    %s = tfm.moe_router_stats %logits, %e
        : tensor<4x128x8xf32>, tensor<4x128x2xi64> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_I64Tensor:$experts);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $experts attr-dict `:` type($logits) `,` type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeBalanceLossOp : Tfm_Op<"moe_balance_loss", [Pure, Tfm_OwnRule, Tfm_Differentiable]> {
  let summary = "the load-balancing loss of Switch Transformer and Mixtral";
  let description = [{
    `stats` is `[2, E]`: `tfm.moe_router_stats` summed over the sparse
    layers. The result is `scale * sum_e stats[0, e] * stats[1, e]`. With
    `scale = coef * E / (L * T)^2` for `L` layers of `T` tokens it is
    Hugging Face's Mixtral `router_aux_loss_coef * load_balancing_loss_func`
    (the fraction of choices each expert receives times its mean
    probability, summed, times `E`).

    ```mlir
    %aux = tfm.moe_balance_loss %stats scale = 1.0e-05 : tensor<2x8xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$stats, F64Attr:$scale);
  let results = (outs Tfm_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $stats `scale` `=` $scale attr-dict `:` type($stats) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def Tfm_MoeRouteGradOp : Tfm_Op<"moe_route_grad", [Pure, Tfm_OwnRule]> {
  let summary = "the gradient of tfm.moe_route's logits";
  let description = [{
    `logits` (`[..., E]`), `weights` and `experts` (`[..., k]`) are a
    `tfm.moe_route`'s operand and results, `weights_grad` the gradient of
    its weights. With `q[e]` the weight of expert `e` where it was chosen
    (and 0 elsewhere) under `normalize`, its probability `softmax(logits)[e]`
    without, and `G[e]` the gradient of the weight of expert `e` where it
    was chosen (0 elsewhere), the result is
    `q * (G - sum_j weights[j] * weights_grad[j])`. The choice of experts
    has no gradient.

    ```mlir
    %dl = tfm.moe_route_grad %logits, %w, %e, %dw normalize
        : tensor<4x128x8xf32>, tensor<4x128x2xf32>, tensor<4x128x2xi64>, tensor<4x128x2xf32>
        -> tensor<4x128x8xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_FloatTensor:$weights,
                       Tfm_I64Tensor:$experts, Tfm_FloatTensor:$weights_grad,
                       UnitAttr:$normalize);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $weights `,` $experts `,` $weights_grad (`normalize` $normalize^)? attr-dict
    `:` type($logits) `,` type($weights) `,` type($experts) `,` type($weights_grad) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeWeightGradOp : Tfm_Op<"moe_weight_grad", [Pure, Tfm_OwnRule]> {
  let summary = "the gradient of the routing weights of tfm.moe_combine (or dispatch)";
  let description = [{
    `tokens` is `[..., H]` in token order, `rows` `[N, H]` in the sorted
    order, `slots` (`[..., k]`) `tfm.moe_sort`'s. Element `[..., j]` of the
    result (`[..., k]`) is the dot product of a token's row of `tokens` with
    the row of `rows` at its `j`-th pair's slot. For
    `y = tfm.moe_combine(x, ... weights w)` the gradient of `w` is
    `moe_weight_grad(dy, x, slots)`; for a weighted `tfm.moe_dispatch` of
    `x` it is `moe_weight_grad(x, dy, slots)`.

    ```mlir
    %dw = tfm.moe_weight_grad %dy, %rows, %slots
        : tensor<4x128x64xf32>, tensor<1024x64xf32>, tensor<4x128x2xi64> -> tensor<4x128x2xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$tokens, Tfm_FloatTensor:$rows, Tfm_I64Tensor:$slots);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $rows `,` $slots attr-dict `:` type($tokens) `,` type($rows) `,` type($slots)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_GroupedWeightGradOp : Tfm_Op<"grouped_weight_grad", [Pure, Tfm_OwnRule,
    Tfm_LinearInEachOperand, Tfm_KeepsZeroPadding,
    DeclareOpInterfaceMethods<Tfm_CostOpInterface, ["getFlops"]>]> {
  let summary = "per group of consecutive rows, lhs^T rhs: grouped_matmul's weight gradient";
  let description = [{
    `lhs` is `[N, K]` and `rhs` `[N, F]`, their rows in the groups of
    `counts` (`[E]`) as `tfm.grouped_matmul` reads them. Element `e` of the
    result `[E, K, F]` is the product of group `e`'s rows of `lhs`,
    transposed, with its rows of `rhs`: zeros for an empty group. For
    `y = grouped_matmul(x, w)` with `w` `[E, K, F]` the gradient of `w` is
    `grouped_weight_grad(x, dy)`; for `w` stored `[E, F, K]`
    (`transpose_rhs`) it is `grouped_weight_grad(dy, x)`.

    ```mlir
    %dw = tfm.grouped_weight_grad %dh, %rows, %counts
        : tensor<1024x176xf32>, tensor<1024x64xf32>, tensor<8xi64> -> tensor<8x176x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs, Tfm_I64Tensor:$counts);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $counts attr-dict `:` type($lhs) `,` type($rhs) `,` type($counts) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_MoeRouterStatsGradOp : Tfm_Op<"moe_router_stats_grad", [Pure, Tfm_OwnRule]> {
  let summary = "the gradient of tfm.moe_router_stats's logits";
  let description = [{
    `logits` is `[..., E]`, `stats_grad` `[2, E]` the gradient of a
    `tfm.moe_router_stats`'s result. With `p = softmax(logits)` and `g`
    row 0 of `stats_grad`, each token's gradient is `p * (g - sum(p * g))`
    (row 1 counts choices, which have none).

    ```mlir
    %dl = tfm.moe_router_stats_grad %logits, %ds
        : tensor<4x128x8xf32>, tensor<2x8xf32> -> tensor<4x128x8xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_FloatTensor:$stats_grad);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $stats_grad attr-dict `:` type($logits) `,` type($stats_grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // PMLIR_DIALECT_TFM_IR_TFMEXPERTOPS_TD
