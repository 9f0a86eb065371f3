//===- PrepareCInterface.cpp - The entry as a C function over memrefs -----===//
//
// Part of pmlir.
//
// pmlir-run calls the compiled entry through its C interface with
// arguments that may live in a read-only file mapping; the binding
// attributes are no longer needed by then and LLVM translation would warn
// on them.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-prepare-c-interface"

namespace pmlir {
#define GEN_PASS_DEF_PREPARECINTERFACE
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

struct PrepareCInterfacePass : public pmlir::impl::PrepareCInterfaceBase<PrepareCInterfacePass> {
  using PrepareCInterfaceBase::PrepareCInterfaceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    // The model's Hugging Face config has served too (pmlir-run read it
    // before lowering).
    module->removeAttr(kHuggingFaceConfigAttr);
    module.walk([&](func::FuncOp f) {
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        for (StringRef name : {kNameAttr, kDimsAttr, kRoleAttr, kShardingAttr, kGlobalTypeAttr,
                               kHeadTailDimAttr, kShardedLikeAttr})
          f.removeArgAttr(i, name);
      for (unsigned i = 0; i < f.getNumResults(); ++i)
        for (StringRef name :
             {kNameAttr, kShardingAttr, kGlobalTypeAttr, kHeadTailDimAttr, kShardedLikeAttr})
          f.removeResultAttr(i, StringAttr::get(context, name));
    });
    auto entryFunc = module.lookupSymbol<func::FuncOp>(entry);
    // A job without its entry would compile to nothing callable, and its
    // caller would learn so only when it looks the symbol up.
    if (!entryFunc || entryFunc.isExternal()) {
      module.emitError() << "pmlir-prepare-c-interface: no function @" << entry
                         << (entryFunc ? " with a body" : "")
                         << " to call through the C interface (the entry option names it)";
      return signalPassFailure();
    }
    // A pipelined program is lowered one pipeline rank at a time: the ops
    // of its stages have no lowering of their own.
    WalkResult staged = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      // (A trace's work markers stay: the runtime times them.)
      if (!isa<pmlir::pipe::FragmentOp, pmlir::pipe::TransferOp, pmlir::pipe::StageSumOp>(op))
        return WalkResult::advance();
      op->emitOpError() << "belongs to a program still cut into pipeline stages: lower one "
                           "pipeline rank of it first (pmlir-pipeline-lower, or "
                           "pmlir-compile-pipeline's pipeline-rank)";
      return WalkResult::interrupt();
    });
    if (staged.wasInterrupted())
      return signalPassFailure();
    // What the results update is the caller's to overwrite.
    llvm::SmallBitVector updated(entryFunc.getNumArguments());
    for (unsigned i = 0; i < entryFunc.getNumResults(); ++i)
      if (auto arg = entryFunc.getResultAttrOfType<IntegerAttr>(i, kUpdatesAttr))
        if (arg.getInt() >= 0 && arg.getInt() < entryFunc.getNumArguments())
          updated.set(arg.getInt());
    for (unsigned i = 0; i < entryFunc.getNumArguments(); ++i)
      entryFunc.setArgAttr(i, "bufferization.writable", BoolAttr::get(context, updated.test(i)));
    entryFunc->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
    LLVM_DEBUG(llvm::dbgs() << "@" << entry << ": C interface, " << entryFunc.getNumArguments()
                            << " arguments, " << updated.count() << " of them updated\n");
  }
};

} // namespace
