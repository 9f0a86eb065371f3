//===- Pipe.h - The pipe pipeline dialect -------------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_PIPE_IR_PIPE_H
#define PMLIR_DIALECT_PIPE_IR_PIPE_H

#include "pmlir/Dialect/Tfm/IR/TfmInterfaces.h"
#include "pmlir/Pipelining/Schedule.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pmlir/Dialect/Pipe/IR/PipeDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pmlir/Dialect/Pipe/IR/PipeAttrs.h.inc"

#define GET_OP_CLASSES
#include "pmlir/Dialect/Pipe/IR/PipeOps.h.inc"

namespace pmlir::pipe {

/// Function attribute of a program cut into stages: their number.
inline constexpr llvm::StringLiteral kStagesAttr = "pipe.stages";

/// The stage that computes `v`: its fragment's, a transfer's destination,
/// a stage sum's first stage, or that of the first operand of a top-level
/// op that has one. std::nullopt for arguments and values of no stage.
std::optional<int64_t> stageOf(mlir::Value v);

/// Argument `i` of `func` in a program that repeats it over `k`
/// microbatches: an input or label gains a leading dimension of `k`
/// ("microbatch" first in its tfm.dims) when k > 1; the others stay as they
/// are. Its type and attributes.
std::pair<mlir::Type, mlir::DictionaryAttr> microbatchedArgument(mlir::func::FuncOp func,
                                                                 unsigned i, int64_t k);

/// The most ops a program repeated over microbatches may hold: each
/// microbatch is a clone of the function's body, and at about 200 bytes an
/// op this is a gigabyte of IR before anything is lowered.
inline constexpr int64_t kMaxRepeatedOps = int64_t(1) << 22;

/// Fails with a diagnostic on `func` naming `what` (e.g. "accumulated
/// over") when `k` clones of its body would hold more than kMaxRepeatedOps
/// ops.
mlir::LogicalResult checkRepeatable(mlir::func::FuncOp func, int64_t k, llvm::StringRef what);

/// Clones the body of `func` but its return at `b`'s insertion point for
/// microbatch `micro` of `k`: `args` (at least func's arguments, typed by
/// microbatchedArgument) stand for its arguments, an input or label read
/// through tfm.microbatch when k > 1, and each pipe.fragment is stamped
/// with `micro`. Returns the clones of the values `func` returns.
llvm::SmallVector<mlir::Value> cloneForMicrobatch(mlir::OpBuilder &b, mlir::func::FuncOp func,
                                                  mlir::ValueRange args, int64_t micro, int64_t k);

} // namespace pmlir::pipe

#endif // PMLIR_DIALECT_PIPE_IR_PIPE_H
