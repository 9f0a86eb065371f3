//===- pmlir-opt.cpp - The pmlir optimizer driver -------------------------===//
//
// Part of pmlir.
//
// mlir-opt with the tfm dialect, the upstream dialects pmlir programs use, and
// every pmlir pass and pipeline.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<pmlir::tfm::TfmDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect,
                  mlir::shard::ShardDialect, mlir::tensor::TensorDialect>();
  // Upstream canonicalize, cse, inline, ... next to the pmlir passes.
  mlir::registerTransformsPasses();
  pmlir::registerPMLIRPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "pmlir optimizer driver\n", registry));
}
