//===- ModelSummary.h - Size and cost of a tfm model function -----*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_ANALYSIS_MODELSUMMARY_H
#define PMLIR_ANALYSIS_MODELSUMMARY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace pmlir {

struct ModelSummary {
  std::string function;
  int64_t layers = 0;
  /// Arguments that are not weights (token ids), as "name type".
  llvm::SmallVector<std::string> inputs;
  int64_t weightTensors = 0;
  int64_t parameters = 0;
  /// Bytes of the weights in their own element types.
  int64_t weightBytes = 0;
  llvm::SmallVector<mlir::Type> results;
  /// Matmul and attention FLOPs of one call, 2 per multiply-add.
  double flops = 0;
  /// Tensors with a dynamic dimension: their elements and FLOPs are not
  /// counted.
  int64_t dynamicTensors = 0;
  /// Count of each tfm op, in name order.
  std::map<std::string, int64_t> opCounts;

  void print(llvm::raw_ostream &os) const;
};

/// Summarizes `func`. Arguments named "input_ids" (or carrying no tfm.name)
/// are inputs; every other named argument is a weight.
ModelSummary summarizeModel(mlir::func::FuncOp func);

} // namespace pmlir

#endif // PMLIR_ANALYSIS_MODELSUMMARY_H
