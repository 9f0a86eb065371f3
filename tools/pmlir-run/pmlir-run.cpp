//===- pmlir-run.cpp - Compile and run a tfm model ------------------------===//
//
// Part of pmlir.
//
//   pmlir-run MODEL.mlir [--weights W.safetensors] [--inputs I.safetensors]
//             [--output O.safetensors] [--seed N] [--print] [--repeat N]
//             [--threads N] [--entry forward]
//   pmlir-run MODEL.mlir --mesh dp=2,tp=2 --recipe megatron [--sequence-parallel]
//             [--check [--tolerance T]] [--comm-report C.json] [--memory-report M.json]
//             [--backend mpi|nccl] [--timeout S] [--trace T.json]
//   pmlir-run MODEL.mlir --device gpu [--gpu-chip sm_90] [--precision f32|tf32|bf16] ...
//   pmlir-run --mesh tp=2,dp=2,pp=4 [--rank-order tp,dp,pp] --print-groups
//
// Arguments of the entry function bind to tensors by their `tfm.name`: first
// from --inputs, then from --weights (where Hugging Face's `transformer.`
// prefix of GPT-2 LM-head checkpoints is accepted). Without --weights every
// weight gets a deterministic seeded init; with it, a weight the file lacks
// is an error unless --init-missing asks for the seeded init. A missing
// input is an error. The program is compiled by pmlir-compile-pipeline and
// JIT-compiled (pmlir::exec::HostJit), or its object loaded from the cache.
// f32 tensors in the files are used in place from the memory mapping.
//
// A thin front end: the flags (pmlir::exec::RunFlags, each bound to its
// field of pmlir::exec::RunOptions) are parsed, and the execution library
// (lib/Execution) does the run. The pass managers it runs take the usual
// --mlir-print-ir-*, --mlir-timing and --mlir-* options, which --help
// lists under "Debugging"; LLVM's own options parse but --help hides them.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/RunFlags.h"
#include "pmlir/Execution/Runner.h"
#include "pmlir/InitAllPMLIR.h"
#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <string>

using namespace mlir;
using namespace pmlir;

static int runMain(int argc, char **argv) {
  // Pass names for --mlir-print-ir-after=<pass> and friends.
  registerAllPasses();
  registerPassManagerCLOptions();
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  registerDefaultTimingManagerCLOptions();
  exec::RunOptions options;
  exec::RunFlags flags(options, "pmlir-run");
  flags.hideOtherOptions();
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "pmlir-run: compiles a tfm model and runs it, a forward, its gradients or training "
      "steps, on the CPU or GPUs, on one process or a mesh of ranks\n");
  std::string error;
  if (!flags.finish(error)) {
    llvm::WithColor::error(llvm::errs(), "pmlir-run") << error << "\n";
    return 1;
  }
  if (options.printGroups)
    return exec::printGroups(options.mesh, options.rankOrder);
  options.relaunch.push_back(llvm::sys::fs::getMainExecutable(argv[0], (void *)&runMain));
  options.relaunch.insert(options.relaunch.end(), argv + 1, argv + argc);
  options.configurePassManager = [](PassManager &pm) {
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    applyDefaultTimingPassManagerCLOptions(pm);
    return success();
  };
  return exec::runModel(options);
}

int main(int argc, char **argv) {
  // Before anything: may start the program again with the GEMM kernels
  // for this CPU.
  rt::chooseGemmKernels(argv);
  exec::keepFreedMemory();
  llvm::InitLLVM init(argc, argv);
  return runToolMain("pmlir-run", [&] { return runMain(argc, argv); });
}
