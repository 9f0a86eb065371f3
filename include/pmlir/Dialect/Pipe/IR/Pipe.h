//===- Pipe.h - The pipe pipeline dialect -------------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_PIPE_IR_PIPE_H
#define PMLIR_DIALECT_PIPE_IR_PIPE_H

#include "pmlir/Dialect/Pipe/Schedule.h"
#include "pmlir/Dialect/Tfm/IR/TfmInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pmlir/Dialect/Pipe/IR/PipeDialect.h.inc"

#define GET_OP_CLASSES
#include "pmlir/Dialect/Pipe/IR/PipeOps.h.inc"

namespace pmlir::pipe {

/// Function attribute of a program cut into stages: their number.
inline constexpr llvm::StringLiteral kStagesAttr = "pipe.stages";

/// The stage that computes `v`: its fragment's, a transfer's destination,
/// a stage sum's first stage, or that of the first operand of a top-level
/// op that has one. std::nullopt for arguments and values of no stage.
std::optional<int64_t> stageOf(mlir::Value v);

/// The fragment kinds.
inline constexpr llvm::StringLiteral kForward = "F", kBackward = "B", kBackwardInput = "I",
                                     kBackwardWeight = "W";

} // namespace pmlir::pipe

#endif // PMLIR_DIALECT_PIPE_IR_PIPE_H
