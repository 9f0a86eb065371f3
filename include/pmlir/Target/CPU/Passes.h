//===- Passes.h - The CPU target ---------------------------------*- C++ -*-===//
//
// Part of pmlir.
//
// What only a CPU chooses: which contractions run as BLAS kernels, inline
// polynomial math, which loops run on the runtime's threads, and the pipeline from tfm to the LLVM
// dialect that pmlir-run compiles.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TARGET_CPU_PASSES_H
#define PMLIR_TARGET_CPU_PASSES_H

#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Support/Precision.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Target/CPU/Passes.h.inc"

/// What pmlir-cpu-pipeline lowers for.
struct CpuPipelineOptions : public mlir::PassPipelineOptions<CpuPipelineOptions> {
  Option<std::string> entry{*this, "entry",
                            llvm::cl::desc("the function callers enter through its C interface"),
                            llvm::cl::init("forward")};
  Option<Precision> precision{*this, "precision",
                              llvm::cl::desc("the arithmetic (f32 or bf16: a CPU has no tf32)"),
                              llvm::cl::init(Precision::F32), precisionValues()};
  Option<bool> roundArgumentsOnce{*this, "round-arguments-once", roundArgumentsOnceHelp(),
                                  llvm::cl::init(true)};
  Option<bool> predict{*this, "predict",
                       llvm::cl::desc("write what pmlir-run --predict reads on the module "
                                      "(pmlir-buffer-peak, pmlir-step-work)"),
                       llvm::cl::init(false)};
  Option<int64_t> rank{*this, "rank",
                       llvm::cl::desc("with predict: the job's rank the program runs on "
                                      "(pmlir-step-work)"),
                       llvm::cl::init(-1)};
};

/// Why `options` make no CPU program (precision tf32, a rank without
/// predict), or nullopt: checked when the pipeline is built.
std::optional<std::string> unusableCpuPipelineOption(const CpuPipelineOptions &options);

/// tfm -> linalg -> bufferization -> loops -> LLVM dialect, for the JIT:
/// exactly what pmlir-run compiles.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                              const CpuPipelineOptions &options = CpuPipelineOptions());

#define GEN_PASS_REGISTRATION
#include "pmlir/Target/CPU/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_TARGET_CPU_PASSES_H
