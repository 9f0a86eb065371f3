//===- OptFuzzer.cpp - libFuzzer target: parse, verify, shard -------------===//
//
// Part of pmlir.
//
// What `pmlir-opt --pmlir-sharding-pipeline` does to any text: parse (with
// the nesting bound the tools apply), verify, then the Megatron recipe,
// propagation, partitioning and sequence parallelism on the module's mesh,
// or on dp = 2 x tp = 2 where it names none. Diagnostics are expected;
// a crash, a sanitizer report or an assertion is a finding.
//
//===----------------------------------------------------------------------===//

#include "pmlir/InitAllPMLIR.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/thread.h"

#include <optional>

using namespace mlir;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    pmlir::registerAllDialects(registry);
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
  PassManager pm(&ctx);
  pmlir::ShardingPipelineOptions options;
  options.recipe = pmlir::ShardingPipelineOptions::Recipe::Megatron;
  options.sequenceParallel = true;
  pmlir::buildShardingPipeline(pm, options);
  (void)pm.run(*module);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  // The tools run on a large stack; so does each input here.
  llvm::thread worker(std::optional<unsigned>(pmlir::kToolStackBytes), [&] { parseVerifyShard(text); });
  worker.join();
  return 0;
}
