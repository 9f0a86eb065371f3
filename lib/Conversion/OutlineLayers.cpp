//===- OutlineLayers.cpp - One function per distinct transformer block ----===//
//
// Part of pmlir.
//
// Every tfm.layer becomes a call of a private function whose arguments are
// the values the layer body captures (its weights and activations, in order
// of first use). Layers of one structure (tfm::layerStructureKey) share one
// function, so a 96-layer model compiles one block, not 96 copies of it.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/BufferPeak.h"
#include "pmlir/Conversion/Passes.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-outline-layers"

namespace pmlir {
#define GEN_PASS_DEF_OUTLINELAYERS
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

namespace {

/// A private function of `layer`'s body taking the values it captures.
func::FuncOp outline(ModuleOp module, func::FuncOp parent, tfm::LayerOp layer,
                     const SetVector<Value> &captured, SymbolTable &symbols) {
  SmallVector<Type> argTypes;
  for (Value v : captured)
    argTypes.push_back(v.getType());
  auto b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, layer.getLoc(), (parent.getName() + "_layer").str(),
                                 b.getFunctionType(argTypes, layer.getResultTypes()));
  fn.setPrivate();
  // Which pass of a block it is, for pmlir-buffer-peak's account.
  fn->setAttr(layer.getBackward() ? kBackwardLayerAttr : kForwardLayerAttr, b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(captured, entry->getArguments()))
    mapping.map(v, arg);
  OpBuilder body = OpBuilder::atBlockEnd(entry);
  Block &layerBody = layer.getBody().front();
  for (Operation &op : layerBody.without_terminator())
    body.clone(op, mapping);
  SmallVector<Value> results;
  for (Value v : cast<tfm::YieldOp>(layerBody.getTerminator()).getValues())
    results.push_back(mapping.lookup(v));
  func::ReturnOp::create(body, layer.getLoc(), results);
  symbols.insert(fn); // renames on a clash: forward_layer_0, ...
  return fn;
}

struct OutlineLayersPass : public pmlir::impl::OutlineLayersBase<OutlineLayersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::StringMap<func::FuncOp> byStructure;
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp parent : functions) {
      SmallVector<tfm::LayerOp> layers;
      parent.walk([&](tfm::LayerOp layer) { layers.push_back(layer); });
      for (tfm::LayerOp layer : layers) {
        SetVector<Value> captured;
        getUsedValuesDefinedAbove(layer.getBody(), captured);
        LLVM_DEBUG(llvm::dbgs() << "layer " << layer.getIndex() << " of @" << parent.getSymName()
                                << " captures " << captured.size() << " values\n");
        func::FuncOp &fn = byStructure[tfm::layerStructureKey(layer)];
        if (!fn)
          fn = outline(module, parent, layer, captured, symbols);
        OpBuilder call(layer);
        auto callOp = func::CallOp::create(call, layer.getLoc(), fn, captured.getArrayRef());
        layer.replaceAllUsesWith(callOp.getResults());
        layer.erase();
      }
    }
  }
};

} // namespace
