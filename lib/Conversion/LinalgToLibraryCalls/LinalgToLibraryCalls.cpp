//===- LinalgToLibraryCalls.cpp - Bufferized linalg ops to kernel calls ---===//
//
// Part of pmlir.
//
// Upstream convert-linalg-to-std rewrites every linalg op, named library call
// or not; this pass rewrites only the ops pmlir marked for its kernels.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-linalg-to-library-calls"

namespace pmlir {
#define GEN_PASS_DEF_LINALGTOLIBRARYCALLS
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// memref<AxBxf32, any layout> -> memref<?x?xf32, strided<[?, ?], offset: ?>>
MemRefType fullyDynamic(MemRefType type) {
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(shape, type.getElementType(), layout, type.getMemorySpace());
}

struct LinalgToLibraryCallsPass
    : public pmlir::impl::LinalgToLibraryCallsBase<LinalgToLibraryCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<linalg::GenericOp> ops;
    module.walk([&](linalg::GenericOp op) {
      std::optional<StringRef> name = op.getLibraryCall();
      if (name && name->starts_with("pmlir_") && op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops) {
      // A zero fill of the output right before the op need not be written
      // and read back: the kernel is told to overwrite instead.
      bool accumulate = true;
      LLVM_DEBUG(llvm::dbgs() << "library call " << *op.getLibraryCall() << " at " << op.getLoc()
                              << "\n");
      if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
          fill && fill.getOutputs()[0] == op.getDpsInits()[0] &&
          matchPattern(fill.getInputs()[0], m_AnyZeroFloat())) {
        fill.erase();
        accumulate = false;
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<Value> operands;
      SmallVector<Type> types;
      for (Value v : op->getOperands()) {
        MemRefType type = fullyDynamic(cast<MemRefType>(v.getType()));
        operands.push_back(memref::CastOp::create(b, loc, type, v));
        types.push_back(type);
      }
      operands.push_back(arith::ConstantOp::create(b, loc, b.getBoolAttr(accumulate)));
      types.push_back(b.getI1Type());
      StringRef name = *op.getLibraryCall();
      auto fnType = b.getFunctionType(types, {});
      if (auto existing = symbols.lookup<func::FuncOp>(name)) {
        if (existing.getFunctionType() != fnType) {
          op.emitOpError() << "library call @" << name << " used with type " << fnType << " and "
                           << existing.getFunctionType();
          return signalPassFailure();
        }
      } else {
        OpBuilder top(module.getBodyRegion());
        auto decl = func::FuncOp::create(top, loc, name, fnType);
        decl.setPrivate();
        decl->setAttr("llvm.emit_c_interface", top.getUnitAttr());
        symbols.insert(decl);
      }
      func::CallOp::create(b, loc, name, TypeRange{}, operands);
      op.erase();
    }
  }
};

} // namespace
