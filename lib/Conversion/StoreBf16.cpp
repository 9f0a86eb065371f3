//===- StoreBf16.cpp - activations stored in bf16, computed in f32 --------===//
//
// Part of pmlir.
//
// Mixed precision as autocast does it, decided once on the whole program:
// the tensors written between kernels take half the bytes, while the
// arithmetic, the sums of GEMMs and every reduction's statistics stay f32.
// What leaves a function (results, call operands, collectives, in-place
// updates of arguments) stays f32, so that a program's interface and the
// runtime's ABI do not change.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Conversion/Bf16Rounding.h"
#include "pmlir/Conversion/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-store-bf16"

namespace pmlir {
#define GEN_PASS_DEF_STOREBF16
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

RankedTensorType asBf16(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.clone(BFloat16Type::get(type.getContext()));
}

bool isGemm(linalg::GenericOp op) {
  std::optional<pmlir::GemmShape> gemm = pmlir::matchGemm(op);
  return gemm && gemm->types() == "f32";
}

/// The ops whose result keeps its source's values, in another shape or
/// order, and so its element type: reshapes, slices and transposes.
bool movesData(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::ExtractSliceOp,
             linalg::TransposeOp>(op);
}

/// A result that may be written in bf16 by the op itself: one of an
/// elementwise generic (every loop parallel) whose output starts from
/// tensor.empty and is not read, or a GEMM's whose output starts from a
/// zero fill of tensor.empty.
bool writableInBf16(OpResult result) {
  if (!pmlir::f32Tensor(result.getType()) ||
      cast<RankedTensorType>(result.getType()).getRank() == 0)
    return false;
  auto generic = dyn_cast<linalg::GenericOp>(result.getOwner());
  if (!generic || generic.getLibraryCall())
    return false;
  OpOperand *init = generic.getDpsInitOperand(result.getResultNumber());
  if (isGemm(generic)) {
    auto fill = init->get().getDefiningOp<linalg::FillOp>();
    return fill && fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() &&
           matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  }
  return llvm::all_of(generic.getIteratorTypesArray(),
                      [](utils::IteratorType t) { return t == utils::IteratorType::parallel; }) &&
         init->get().getDefiningOp<tensor::EmptyOp>() &&
         generic.getMatchingBlockArgument(init).use_empty();
}

/// A bf16 init like `init` (a tensor.empty, or a fill of one), built before
/// `before`.
Value bf16Init(OpBuilder &b, Value init, Operation *before) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(before);
  Location loc = init.getLoc();
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    Value empty = bf16Init(b, fill.getOutputs()[0], before);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(b.getBF16Type()));
    return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  }
  auto empty = init.getDefiningOp<tensor::EmptyOp>();
  return tensor::EmptyOp::create(b, loc, asBf16(init.getType()), empty.getDynamicSizes());
}

struct StoreBf16Pass : public pmlir::impl::StoreBf16Base<StoreBf16Pass> {
  void runOnOperation() override {
    getOperation()->walk([&](func::FuncOp f) { storeInBf16(f); });
  }

  void storeInBf16(func::FuncOp f) {
    // The GEMMs, found before any operand changes type.
    SmallVector<linalg::GenericOp> gemms;
    f.walk([&](linalg::GenericOp op) {
      if (isGemm(op))
        gemms.push_back(op);
    });
    llvm::DenseSet<Operation *> isGemmOp;
    for (linalg::GenericOp op : gemms)
      isGemmOp.insert(op);
    // Statistics: what a reduction (not a GEMM) writes, and what
    // elementwise work computes from statistics alone (a norm's mean and
    // reciprocal deviation from its sums). They stay f32: their bytes are
    // a row's, and the rows they scale would inherit their rounding.
    llvm::DenseSet<Value> statistics;
    f.walk([&](linalg::GenericOp op) {
      bool reduces = llvm::any_of(op.getIteratorTypesArray(), [](utils::IteratorType t) {
        return t == utils::IteratorType::reduction;
      });
      bool fromStatistics =
          op.getNumDpsInputs() > 0 &&
          llvm::all_of(op.getDpsInputs(), [&](Value input) { return statistics.contains(input); });
      if ((reduces && !isGemmOp.contains(op)) || (!reduces && fromStatistics))
        for (Value r : op->getResults())
          statistics.insert(r);
    });
    // The values to store in bf16: every candidate, less those with a use
    // that must see f32, until none is left to remove.
    llvm::SetVector<Value> stored;
    f.walk([&](Operation *op) {
      auto transpose = dyn_cast<linalg::TransposeOp>(op);
      bool movable =
          movesData(op) && (!transpose || transpose.getInit().getDefiningOp<tensor::EmptyOp>());
      for (OpResult r : op->getResults())
        if ((writableInBf16(r) && !statistics.contains(r)) ||
            (movable && pmlir::f32Tensor(r.getType())))
          stored.insert(r);
    });
    auto readsBf16 = [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (auto generic = dyn_cast<linalg::GenericOp>(user))
        return generic.isDpsInput(&use);
      // A reshape, slice or transpose of the value: stored in bf16 too.
      return movesData(user) && use.getOperandNumber() == 0 && stored.contains(user->getResult(0));
    };
    for (bool changed = true; changed;) {
      SmallVector<Value> mustStayF32;
      for (Value v : stored) {
        Operation *def = v.getDefiningOp();
        if (!llvm::all_of(v.getUses(), readsBf16) ||
            (movesData(def) && !stored.contains(def->getOperand(0))))
          mustStayF32.push_back(v);
      }
      for (Value v : mustStayF32)
        stored.remove(v);
      changed = !mustStayF32.empty();
    }
    LLVM_DEBUG(llvm::dbgs() << "@" << f.getSymName() << ": " << stored.size()
                            << " values stored in bf16\n");

    OpBuilder b(f.getContext());
    // Producers first (the walk's order): each writes bf16.
    for (Value v : stored) {
      auto result = cast<OpResult>(v);
      Operation *op = result.getOwner();
      if (isGemmOp.contains(op))
        continue;
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        OpOperand *init = generic.getDpsInitOperand(result.getResultNumber());
        init->set(bf16Init(b, init->get(), op));
        generic.getMatchingBlockArgument(init).setType(b.getBF16Type());
        auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
        b.setInsertionPoint(yield);
        OpOperand &value = yield->getOpOperand(result.getResultNumber());
        value.set(arith::TruncFOp::create(b, yield.getLoc(), b.getBF16Type(), value.get()));
      } else if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
        transpose.getInitMutable().assign(bf16Init(b, transpose.getInit(), op));
        for (BlockArgument arg : transpose.getRegion().getArguments())
          arg.setType(b.getBF16Type());
      }
      v.setType(asBf16(v.getType()));
    }

    // GEMMs on bf16 operands, f32 sums, rounded to bf16 where stored.
    llvm::DenseMap<Value, Value> casts;
    for (linalg::GenericOp gemm : gemms)
      rebuildGemm(b, gemm, stored.contains(gemm.getResult(0)), casts);

    // Every reader of a bf16 value extends it to f32 where it reads it.
    f.walk([&](linalg::GenericOp op) {
      for (OpOperand *input : op.getDpsInputOperands()) {
        auto tensor = dyn_cast<RankedTensorType>(input->get().getType());
        BlockArgument arg = op.getMatchingBlockArgument(input);
        if (!tensor || !tensor.getElementType().isBF16() || !arg.getType().isF32())
          continue;
        arg.setType(b.getBF16Type());
        b.setInsertionPointToStart(op.getBody());
        auto ext = arith::ExtFOp::create(b, op.getLoc(), b.getF32Type(), arg);
        arg.replaceAllUsesExcept(ext, ext);
      }
    });
  }

  /// `v` in bf16: itself where stored so, else one cast of it (an
  /// elementwise generic right after its definition) shared by its GEMMs.
  Value bf16Operand(OpBuilder &b, Value v, llvm::DenseMap<Value, Value> &casts) {
    if (cast<RankedTensorType>(v.getType()).getElementType().isBF16())
      return v;
    auto [it, inserted] = casts.try_emplace(v, Value());
    if (!inserted)
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    return it->second = pmlir::buildBf16Rounding(b, v.getLoc(), v);
  }

  /// The GEMM `op` again on bf16 operands, its products and sums in f32,
  /// its result rounded to bf16 where `storedInBf16` (then from a bf16 zero
  /// fill), else f32 into the same init.
  void rebuildGemm(OpBuilder &b, linalg::GenericOp op, bool storedInBf16,
                   llvm::DenseMap<Value, Value> &casts) {
    Value lhs = bf16Operand(b, op.getDpsInputs()[0], casts);
    Value rhs = bf16Operand(b, op.getDpsInputs()[1], casts);
    Value init = op.getDpsInits()[0];
    if (storedInBf16)
      init = bf16Init(b, init, op);
    b.setInsertionPoint(op);
    Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
    auto gemm = linalg::GenericOp::create(
        b, op.getLoc(), TypeRange{init.getType()}, ValueRange{lhs, rhs}, ValueRange{init},
        op.getIndexingMapsArray(), op.getIteratorTypesArray(),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value x = arith::ExtFOp::create(nb, l, f32, args[0]);
          Value y = arith::ExtFOp::create(nb, l, f32, args[1]);
          Value acc = storedInBf16 ? arith::ExtFOp::create(nb, l, f32, args[2]) : args[2];
          Value sum = arith::AddFOp::create(nb, l, acc, arith::MulFOp::create(nb, l, x, y));
          if (storedInBf16)
            sum = arith::TruncFOp::create(nb, l, bf16, sum);
          linalg::YieldOp::create(nb, l, sum);
        });
    op.getResult(0).replaceAllUsesWith(gemm.getResult(0));
    op.erase();
  }
};

} // namespace
