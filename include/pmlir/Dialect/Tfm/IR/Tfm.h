//===- Tfm.h - The tfm transformer dialect ------------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFM_H
#define PMLIR_DIALECT_TFM_IR_TFM_H

#include "pmlir/Support/Layout.h"
#include "pmlir/Support/Mesh.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pmlir/Dialect/Tfm/IR/TfmInterfaces.h"

#include "pmlir/Dialect/Tfm/IR/TfmDialect.h.inc"
#include "pmlir/Dialect/Tfm/IR/TfmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pmlir/Dialect/Tfm/IR/TfmAttrs.h.inc"

#define GET_OP_CLASSES
#include "pmlir/Dialect/Tfm/IR/TfmOps.h.inc"

namespace pmlir::tfm {

/// Argument attribute naming a weight's checkpoint tensor ("h.0.ln_1.weight").
inline constexpr llvm::StringLiteral kNameAttr = "tfm.name";
/// Argument attribute giving each dimension's role (["in", "out"]).
inline constexpr llvm::StringLiteral kDimsAttr = "tfm.dims";
/// Function argument and result attribute: how the global tensor is split
/// over the mesh, a #tfm.sharding (or, in hand-written per-rank programs, the
/// plain per-dimension list [[], ["tp"]]). In a global program it seeds
/// sharding propagation; in a per-rank program pmlir-run binds each rank's
/// block of the global tensor and assembles sharded results.
inline constexpr llvm::StringLiteral kShardingAttr = "tfm.sharding";
/// Function argument and result attribute of a per-rank program: the type
/// of the global tensor whose block the argument or result is. pmlir-run
/// needs it where shards are padded (a split the devices do not divide),
/// as the local shape then does not tell the global one.
inline constexpr llvm::StringLiteral kGlobalTypeAttr = "tfm.global_type";
/// Argument attribute saying what an argument is: an ArgumentRoleAttr
/// (`#tfm<role param>`; TfmOps.td's cases param, input, label,
/// optimizer_state), or, as programs written before it have it, the case's
/// name as a string ("param"). Read it through argumentRole().
inline constexpr llvm::StringLiteral kRoleAttr = "tfm.role";

/// The role `attr` (a tfm.role's value) names: an ArgumentRoleAttr or the
/// name of one of its cases; nullopt for anything else.
std::optional<ArgumentRole> argumentRoleOf(mlir::Attribute attr);

/// What makes two layers the same block: the layer's attributes but its
/// index, and its body's ops with their attributes and types, each operand
/// a value of the body or the k-th value the body reads from outside (in
/// order of first use) with its type. Equal for layers that compute alike
/// on their own inputs, whatever their index or location: the one key of
/// layer identity (pmlir-outline-layers gives such layers one function,
/// auto-sharding one strategy).
std::string layerStructureKey(LayerOp layer);

/// What argument `index` of `func` is: its tfm.role, or for programs
/// written without roles, an input if it has no tfm.name, else a label if
/// it is named "labels", an input if it is named "input_ids" or its
/// elements are not floats, a parameter otherwise. The one place that decides it.
ArgumentRole argumentRole(mlir::FunctionOpInterface func, unsigned index);

/// Result attribute: the index of the argument whose sharding the result
/// takes where it has none of its own (a parameter's gradient or updated
/// value, in functions pmlir-autodiff and pmlir-optimizer build).
inline constexpr llvm::StringLiteral kShardedLikeAttr = "tfm.sharded_like";

/// Result attribute: the index of the argument the result is the new value
/// of (a training step's parameters and optimizer state). A runtime runs the
/// next step with it in the argument's place; compiled, it is written into
/// the argument's buffer.
inline constexpr llvm::StringLiteral kUpdatesAttr = "tfm.updates";

/// Module attribute: the ZeRO stage pmlir-zero sharded the training
/// step's model state by (the reports read it).
inline constexpr llvm::StringLiteral kZeroStageAttr = "tfm.zero_stage";

/// Module attribute: the mesh axis over which the program's sequence is in
/// head-tail order (pmlir-head-tail-sequence). pmlir-partition marks each
/// entry argument and result with a dimension split over it with
/// tfm.head_tail_dim.
inline constexpr llvm::StringLiteral kHeadTailAxisAttr = "tfm.head_tail_axis";
/// Function argument and result attribute of a per-rank program: the
/// dimension of the global tensor whose blocks are in head-tail order
/// (pmlir::HeadTailOrder), part of the tensor's layout as tfm.sharding and
/// tfm.global_type are: pmlir-run binds each rank the head and tail chunks
/// of such a dimension and assembles results back in sequence order.
inline constexpr llvm::StringLiteral kHeadTailDimAttr = "tfm.head_tail_dim";

/// Module attribute of a model pmlir-gen built: the fields of the Hugging
/// Face config.json of the same model (a dictionary), which
/// `pmlir-run --export-hf` writes beside the trained parameters.
inline constexpr llvm::StringLiteral kHuggingFaceConfigAttr = "tfm.huggingface_config";

/// Module attribute of global programs: the #tfm.mesh they are sharded over.
inline constexpr llvm::StringLiteral kMeshAttr = "tfm.mesh";
/// Op attribute that sharding propagation writes: one #tfm.sharding per
/// result.
inline constexpr llvm::StringLiteral kResultShardingsAttr = "tfm.shardings";

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_TFM_H
