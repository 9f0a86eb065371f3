//===- Passes.td - Training passes -------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
// The passes of training: gradients and the optimizer step.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRAINING_TRANSFORMS_PASSES_TD
#define PMLIR_TRAINING_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // PMLIR_TRAINING_TRANSFORMS_PASSES_TD
