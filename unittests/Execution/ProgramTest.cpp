//===- ProgramTest.cpp - The JIT's module kept to its entry ---------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/HostJit.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using namespace pmlir::exec;

namespace {

// As the ExecutionEngine leaves a program: the entry and its packed
// wrapper, a layer the entry calls, a parallel body only a chunk calls
// (by address through the runtime), wrappers of the layer and the body,
// a function nothing calls, a runtime declaration, a global the layer
// reads.
constexpr const char *kProgram = R"(
@table = global [2 x float] zeroinitializer
declare void @pmlir_rt_parallel_for(ptr, ptr, i64, i64)
define float @layer(ptr %p) {
  %v = load float, ptr %p
  %t = load float, ptr @table
  %s = fadd float %v, %t
  ret float %s
}
define void @body(i64 %begin, i64 %end) {
  ret void
}
define internal void @body_chunk(ptr %context, i64 %begin, i64 %end) {
  call void @body(i64 %begin, i64 %end)
  ret void
}
define void @unused(i64 %x) {
  ret void
}
define float @_mlir_ciface_step(ptr %p) {
  call void @pmlir_rt_parallel_for(ptr @body_chunk, ptr null, i64 4, i64 1)
  %r = call float @layer(ptr %p)
  ret float %r
}
define void @_mlir__mlir_ciface_step(ptr %args) {
  %a = load ptr, ptr %args
  %p = load ptr, ptr %a
  %r = call float @_mlir_ciface_step(ptr %p)
  ret void
}
define void @_mlir_layer(ptr %args) {
  %a = load ptr, ptr %args
  %p = load ptr, ptr %a
  %r = call float @layer(ptr %p)
  ret void
}
define void @_mlir_body(ptr %args) {
  call void @body(i64 0, i64 1)
  ret void
}
)";

TEST(InternalizeAllBut, KeepsTheEntryAndWhatItReaches) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(kProgram, diagnostic, context);
  ASSERT_TRUE(module) << diagnostic.getMessage().str();

  internalizeAllBut(*module, {"_mlir__mlir_ciface_step"});

  llvm::Function *entry = module->getFunction("_mlir__mlir_ciface_step");
  ASSERT_TRUE(entry);
  EXPECT_TRUE(entry->hasExternalLinkage());
  for (const char *kept : {"_mlir_ciface_step", "layer", "body", "body_chunk"}) {
    llvm::Function *function = module->getFunction(kept);
    ASSERT_TRUE(function) << kept;
    EXPECT_TRUE(function->hasLocalLinkage()) << kept;
  }
  for (const char *erased : {"_mlir_layer", "_mlir_body", "unused"})
    EXPECT_FALSE(module->getFunction(erased)) << erased;
  llvm::Function *runtime = module->getFunction("pmlir_rt_parallel_for");
  ASSERT_TRUE(runtime);
  EXPECT_TRUE(runtime->isDeclaration());
  EXPECT_TRUE(runtime->hasExternalLinkage());
  ASSERT_TRUE(module->getGlobalVariable("table", /*AllowInternal=*/true));
  EXPECT_TRUE(module->getGlobalVariable("table", true)->hasLocalLinkage());
}

} // namespace
