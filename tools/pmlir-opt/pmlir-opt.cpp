//===- pmlir-opt.cpp - The pmlir optimizer driver -------------------------===//
//
// Part of pmlir.
//
// mlir-opt with the tfm dialect, the upstream dialects pmlir programs use, and
// every pmlir pass and pipeline. The output file is written under a temporary
// name and renamed into place on success, so a failing run leaves no partial
// file and an existing file untouched.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<pmlir::tfm::TfmDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect,
                  mlir::shard::ShardDialect, mlir::tensor::TensorDialect>();
  pmlir::registerCpuLoweringInterfaces(registry);
  // Upstream canonicalize, cse, inline, ... next to the pmlir passes.
  mlir::registerTransformsPasses();
  pmlir::registerPMLIRPasses();
  pmlir::registerPipelines();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "pmlir optimizer driver\n", registry);
  if (output == "-")
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, input, output, registry));

  llvm::SmallString<128> temporary;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          output + ".%%%%%%.tmp", temporary)) {
    llvm::WithColor::error(llvm::errs(), "pmlir-opt")
        << "cannot write '" << output << "': " << ec.message() << "\n";
    return EXIT_FAILURE;
  }
  // On failure MlirOptMain removes the file it was given.
  if (mlir::failed(mlir::MlirOptMain(argc, argv, input, temporary, registry))) {
    llvm::sys::fs::remove(temporary);
    return EXIT_FAILURE;
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, output)) {
    llvm::sys::fs::remove(temporary);
    llvm::WithColor::error(llvm::errs(), "pmlir-opt")
        << "cannot write '" << output << "': " << ec.message() << "\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
