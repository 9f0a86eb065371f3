//===- DropShardings.cpp - The global program without its shardings -------===//
//
// Part of pmlir.
//
// What pmlir-run --check runs as the reference: the same global program,
// unsharded.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-drop-shardings"

namespace pmlir {
#define GEN_PASS_DEF_DROPSHARDINGS
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

struct DropShardingsPass : public pmlir::impl::DropShardingsBase<DropShardingsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    module->removeAttr(kMeshAttr);
    int64_t constraints = 0;
    module.walk([&](Operation *op) {
      if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
        constraint.getResult().replaceAllUsesWith(constraint.getInput());
        constraint.erase();
        ++constraints;
        return;
      }
      op->removeAttr(kResultShardingsAttr);
      auto func = dyn_cast<func::FuncOp>(op);
      if (!func)
        return;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, kShardingAttr);
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        func.removeResultAttr(i, StringAttr::get(&getContext(), kShardingAttr));
    });
    LLVM_DEBUG(llvm::dbgs() << "dropped " << constraints << " sharding constraints\n");
  }
};

} // namespace
