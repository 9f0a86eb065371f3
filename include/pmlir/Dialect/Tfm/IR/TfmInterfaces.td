//===- TfmInterfaces.td - What each tfm op is, for the passes -*- tablegen -*-===//
//
// Part of pmlir.
//
// Passes ask the op: its factor sharding rule and local rewrite in
// partition, how pending sums pass through it, whether it is sequence-local
// and keeps zero padding, its FLOPs, what a backward pass keeps of it and
// the gradients of its operands.
// docs/adding-an-op.md says which of these a new op needs.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMINTERFACES_TD
#define PMLIR_DIALECT_TFM_IR_TFMINTERFACES_TD

include "mlir/IR/OpBase.td"

def Tfm_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let description = [{
    An op that sharding propagation and partition can shard: its factor
    sharding rule (as Shardy's OpShardingRule) and, where the local op needs
    more than local shapes (a block offset, a local head count), a rewrite
    of the local op, or, where it is more than one op, the op's own
    partition. The default rule is an elementwise op's with trailing
    broadcast: every result dimension is one parallel factor and each
    operand holds the trailing ones.
  }];
  let cppNamespace = "::pmlir::tfm";
  let methods = [
    InterfaceMethod<"The op's factor sharding rule.",
      "::pmlir::tfm::ShardingRule", "getShardingRule", (ins), [{}], [{
        return ::pmlir::tfm::trailingBroadcastRule($_op.getOperation());
      }]>,
    InterfaceMethod<[{
        Completes `local`, the op cloned on local shapes during partition,
        with what its block of the global computation needs (operands for
        block offsets, attributes for local counts).
      }],
      "::llvm::LogicalResult", "partitionLocally",
      (ins "::mlir::Operation *":$local, "::pmlir::tfm::LocalPartition &":$partition), [{}], [{
        return ::mlir::success();
      }]>,
    InterfaceMethod<[{
        Partitions the op as a whole, where its program on a rank is more
        than the op on local shapes (Megatron's vocab-parallel cross
        entropy: local statistics combined over the vocabulary axes), by
        what `partition` offers: it sets the local value of every result.
        Returns std::nullopt where the op is partitioned from its rule (the
        default), failure after a diagnostic.
      }],
      "std::optional<::llvm::LogicalResult>", "partitionItself",
      (ins "::pmlir::tfm::OpPartition &":$partition), [{}], [{
        return std::nullopt;
      }]>,
  ];
}

def Tfm_CostOpInterface : OpInterface<"CostOpInterface"> {
  let description = [{
    What an op costs and what a backward pass keeps of it. The FLOPs are the
    dense count (2 per multiply-add; a causal mask is not subtracted); ops
    that are not matmul-like count none.
  }];
  let cppNamespace = "::pmlir::tfm";
  let methods = [
    InterfaceMethod<"Dense FLOPs of one call (0 when a dimension is dynamic).",
      "double", "getFlops", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        Appends the values a backward pass keeps of this op, each with the
        reason it is kept ("matmul_inputs", "norm_inputs", ...).
      }],
      "void", "getSavedForBackward",
      (ins "::llvm::SmallVectorImpl<::pmlir::tfm::SavedValue> &":$saved), [{}],
      [{ return; }]>,
    InterfaceMethod<[{
        Bytes the backward pass keeps that are no value of the program
        (attention's probabilities).
      }],
      "int64_t", "getSavedInternalBytes", (ins), [{}], [{ return 0; }]>,
  ];
}

def Tfm_AutodiffOpInterface : OpInterface<"AutodiffOpInterface"> {
  let description = [{
    A differentiable op: given the gradients of its results, it builds the
    gradients of its operands (a vector-Jacobian product) in tfm ops at
    the insertion point. pmlir-autodiff calls it in reverse program order.
  }];
  let cppNamespace = "::pmlir::tfm";
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands into `operandGrads` (one per
        operand, null for an operand without one: token ids, positions)
        from `resultGrads` (one per result, null where no gradient reaches
        the result; at least one is set). Fails with a diagnostic on the op
        where it has no gradient.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder, "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

class Tfm_OpTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::pmlir::tfm::OpTrait";
}

// Each position along the sequence (dimension 1 of [B, S, ...] values) is
// computed from that position alone: the op runs on sequence shards.
def Tfm_SequenceLocal : Tfm_OpTrait<"SequenceLocal">;
// Zeros in give zeros out: padding of uneven shards stays zeros.
def Tfm_KeepsZeroPadding : Tfm_OpTrait<"KeepsZeroPadding">;
// The op is linear in each operand alone: one operand pending over some
// axes (the others not) gives a result pending over them.
def Tfm_LinearInEachOperand : Tfm_OpTrait<"LinearInEachOperand">;
// The op sums its operands: the result is pending over the axes every
// float operand is pending over.
def Tfm_SumOfOperands : Tfm_OpTrait<"SumOfOperands">;
// The op is linear in all its operands together (a concatenation): as for
// a sum, the result is pending over the axes every float operand is
// pending over.
def Tfm_LinearInAllOperands : Tfm_OpTrait<"LinearInAllOperands">;

// The op's one-block body runs once where the op stands, reading values
// from above: its results are the values its terminator yields. Sharding
// sees through it (tfm.layer, pipe.fragment).
def Tfm_InlineBody : Tfm_OpTrait<"InlineBody">;

#endif // PMLIR_DIALECT_TFM_IR_TFMINTERFACES_TD
