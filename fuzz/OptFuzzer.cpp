//===- OptFuzzer.cpp - libFuzzer target: parse, verify, shard -------------===//
//
// Part of pmlir.
//
// What pmlir-opt does to any text: parse (with the nesting bound the tools
// apply) and verify (the pipe dialect's schedules simulated by their
// verifier among them); a partitioned program (a shard.grid) is checked by
// pmlir-verify-spmd. Then on one copy the sharding pipeline (the Megatron
// recipe, propagation, partitioning and sequence parallelism on the
// module's mesh, or on dp = 2 x tp = 2 where it names none), and on others
// what pmlir-run compiles for: a training step on pp = 2 x tp = 2
// scheduled 1F1B (autodiff, the optimizer, stages, the schedule, sharding,
// the check of every rank's collectives, one pipeline rank); a training
// step with ring attention over cp = 2 in the balanced layout; an
// auto-sharded forward on tp = 2; and the forward lowered for the GPU to
// NVVM. Diagnostics are expected; a crash, a sanitizer report or an
// assertion is a finding.
//
//===----------------------------------------------------------------------===//

#include "pmlir/InitAllPMLIR.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/thread.h"

#include <optional>

using namespace mlir;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    pmlir::registerAllDialects(registry);
    pmlir::registerAllPasses();
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

void parseVerifyShard(llvm::StringRef text) {
  std::string why;
  if (!pmlir::checkNesting(text, "fuzz", why))
    return;
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  // As the tools: grids are checked before the verifier divides by them.
  ParserConfig config(&ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module || !pmlir::unverifiableGrid(*module).empty() || failed(verify(*module)))
    return;
  if (!(*module)->hasAttr(pmlir::tfm::kMeshAttr)) {
    auto dp = StringAttr::get(&ctx, "dp"), tp = StringAttr::get(&ctx, "tp");
    (*module)->setAttr(pmlir::tfm::kMeshAttr,
                       pmlir::tfm::MeshAttr::get(&ctx, {dp, tp}, {2, 2}));
  }
  auto runPipeline = [&](ModuleOp target, llvm::StringRef pipeline) {
    PassManager pm(&ctx);
    if (failed(parsePassPipeline(pipeline, pm)))
      std::abort(); // the pipeline's text is the fuzzer's own
    (void)pm.run(target);
  };
  if (module->lookupSymbol(pmlir::kGridName)) {
    OwningOpRef<ModuleOp> partitioned = module->clone();
    runPipeline(*partitioned, "builtin.module(pmlir-verify-spmd)");
  }
  OwningOpRef<ModuleOp> training = module->clone();
  OwningOpRef<ModuleOp> ring = module->clone(), automatic = module->clone(), gpu = module->clone();
  PassManager pm(&ctx);
  pmlir::ShardingPipelineOptions options;
  options.recipe = pmlir::ShardingPipelineOptions::Recipe::Megatron;
  options.sequenceParallel = true;
  pmlir::buildShardingPipeline(pm, options);
  (void)pm.run(*module);

  // The training step pmlir-run compiles for pipeline rank 0 of
  // pp = 2 x tp = 2 (the module's own mesh, where it has one, is refused
  // with a diagnostic).
  for (ModuleOp copy : {*training, *ring, *automatic, *gpu})
    copy->removeAttr(pmlir::tfm::kMeshAttr);
  runPipeline(*training, "builtin.module(pmlir-compile-pipeline{program=train mesh=pp=2,tp=2 "
                         "recipe=megatron pipeline-schedule=1f1b microbatches=2 to=rank})");
  runPipeline(*ring, "builtin.module(pmlir-compile-pipeline{program=train mesh=cp=2 "
                     "recipe=megatron context-attention=ring context-layout=balanced to=rank})");
  runPipeline(*automatic, "builtin.module(pmlir-compile-pipeline{mesh=tp=2 recipe=auto to=rank})");
  runPipeline(*gpu, "builtin.module(pmlir-compile-pipeline{target=gpu gpu-format=nvvm})");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  // The tools run on a large stack; so does each input here.
  llvm::thread worker(std::optional<unsigned>(pmlir::kToolStackBytes), [&] { parseVerifyShard(text); });
  worker.join();
  return 0;
}
