//===- GpuScatterByColumns.cpp - A scatter into rows, a thread a column ---===//
//
// Part of pmlir.
//
// A sequential loop over tokens whose only writes are one parallel loop
// over a row's columns (embedding_grad) becomes a parallel loop over the
// columns (and groups of rows) with the tokens walked in order in each
// thread.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "KernelLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-gpu-scatter-by-columns"

namespace pmlir {
#define GEN_PASS_DEF_GPUSCATTERBYCOLUMNS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::kernel_loops;

namespace {

struct GpuScatterByColumnsPass
    : public pmlir::impl::GpuScatterByColumnsBase<GpuScatterByColumnsPass> {
  using GpuScatterByColumnsBase::GpuScatterByColumnsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        scatterByColumns(func);
  }

  /// The column a store or load of `access` reaches in its buffer's rows,
  /// where every thread of `loop` (its last dimension the only one wider
  /// than 1) reaches a column of its own: the access is indexed last by the
  /// loop's last dimension, into the buffer or a view of whole rows of it.
  static bool ownColumn(Operation *access, scf::ParallelOp loop) {
    auto indices = isa<memref::LoadOp>(access) ? cast<memref::LoadOp>(access).getIndices()
                                               : cast<memref::StoreOp>(access).getIndices();
    Value memref = isa<memref::LoadOp>(access) ? cast<memref::LoadOp>(access).getMemRef()
                                               : cast<memref::StoreOp>(access).getMemRef();
    if (indices.empty())
      return false;
    // The last index, seen through an identity affine.apply (the loops
    // linalg ops become index through their maps).
    Value column = indices.back();
    if (auto apply = column.getDefiningOp<affine::AffineApplyOp>();
        apply && apply.getAffineMap().isIdentity() && apply.getMapOperands().size() == 1)
      column = apply.getMapOperands()[0];
    if (column != loop.getInductionVars().back())
      return false;
    auto subview = memref.getDefiningOp<memref::SubViewOp>();
    if (!subview)
      return memref == baseOf(memref);
    auto source = cast<MemRefType>(subview.getSource().getType());
    int64_t last = source.getRank() - 1;
    return subview.getType().getRank() == source.getRank() && !source.isDynamicDim(last) &&
           subview.getStaticOffsets().back() == 0 && subview.getStaticStrides().back() == 1 &&
           subview.getStaticSizes().back() == source.getDimSize(last) &&
           subview.getSource() == baseOf(memref);
  }

  /// A scatter into rows: a sequential loop (over tokens) whose only
  /// writes are one parallel loop over a row's columns (embedding_grad's
  /// row += gradient row), every access to the rows it writes in each
  /// thread's own column -> the parallel loop outside, the sequential one
  /// in each thread: one thread a column walks the tokens in order, as the
  /// sequential loop did, instead of one thread doing every column of
  /// every token. The sums are the same, in the same order.
  void scatterByColumns(func::FuncOp func) {
    SmallVector<scf::ForOp> loops;
    for (Operation &op : func.getBody().front())
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && loop.getNumResults() == 0)
        loops.push_back(loop);
    for (scf::ForOp loop : loops) {
      SmallVector<scf::ParallelOp> inner;
      loop.getBody()->walk([&](scf::ParallelOp p) { inner.push_back(p); });
      if (inner.size() != 1 || inner[0]->getParentOfType<scf::ParallelOp>() ||
          inner[0].getNumResults() != 0)
        continue;
      scf::ParallelOp columns = inner[0];
      unsigned rank = columns.getNumLoops();
      // One dimension wider than 1, the last; bounds known outside.
      bool shaped = true;
      for (unsigned d = 0; d < rank; ++d) {
        std::optional<int64_t> lower = getConstantIntValue(columns.getLowerBound()[d]);
        std::optional<int64_t> upper = getConstantIntValue(columns.getUpperBound()[d]);
        std::optional<int64_t> step = getConstantIntValue(columns.getStep()[d]);
        if (!lower || !upper || !step || *step != 1 || (d + 1 < rank && *upper - *lower != 1))
          shaped = false;
      }
      if (!shaped)
        continue;
      // Writes: only stores in the parallel loop, each in its thread's
      // column, and every other access to those buffers too.
      llvm::DenseSet<Value> written;
      bool legal = true;
      loop.getBody()->walk([&](Operation *op) {
        if (isa<memref::StoreOp>(op)) {
          if (!columns->isAncestor(op) || !ownColumn(op, columns))
            legal = false;
          written.insert(baseOf(cast<memref::StoreOp>(op).getMemRef()));
        } else if (!isa<memref::LoadOp>(op) && !isPure(op) &&
                   !isa<scf::IfOp, scf::ParallelOp, scf::YieldOp, scf::ReduceOp>(op)) {
          legal = false;
        }
      });
      loop.getBody()->walk([&](memref::LoadOp load) {
        if (written.contains(baseOf(load.getMemRef())) &&
            (!columns->isAncestor(load) || !ownColumn(load, columns)))
          legal = false;
      });
      if (!legal || written.empty())
        continue;
      // The rows the tokens write, where every access to the written
      // buffers is in one row a token (a subview of one row, at the same
      // offsets): that row is its owner's, a group of rows by their index
      // modulo the groups, each group's threads skipping the other groups'
      // tokens. Each element is still summed by one thread in token order.
      int64_t rows = ShapedType::kDynamic;
      Value rowKey = sharedRowOffset(loop, columns, written, rows);
      int64_t groups = 1;
      if (rowKey && scatterRowGroups > 1)
        groups = ShapedType::isDynamic(rows) ? scatterRowGroups
                                             : std::min<int64_t>(scatterRowGroups, rows);
      OpBuilder b(loop);
      Location loc = loop.getLoc();
      SmallVector<Value> lower, upper, steps;
      if (groups > 1) {
        lower.push_back(arith::ConstantIndexOp::create(b, loc, 0));
        upper.push_back(arith::ConstantIndexOp::create(b, loc, groups));
        steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
      }
      for (unsigned d = 0; d < rank; ++d) {
        auto constant = [&](Value v) {
          return arith::ConstantIndexOp::create(b, loc, *getConstantIntValue(v)).getResult();
        };
        lower.push_back(constant(columns.getLowerBound()[d]));
        upper.push_back(constant(columns.getUpperBound()[d]));
        steps.push_back(constant(columns.getStep()[d]));
      }
      auto outer = scf::ParallelOp::create(b, loc, lower, upper, steps);
      OpBuilder ob = OpBuilder::atBlockBegin(outer.getBody());
      IRMapping mapping;
      auto copy = cast<scf::ForOp>(ob.clone(*loop, mapping));
      auto moved = cast<scf::ParallelOp>(mapping.lookup(columns.getOperation()));
      // The parallel loop's body in place of it, at the outer loop's
      // indices (after the group's, where the rows are grouped), under
      // "the token's row is the group's" where they are.
      SmallVector<Value> outerIvs = outer.getInductionVars();
      for (auto [iv, column] :
           llvm::zip(moved.getInductionVars(), ArrayRef(outerIvs).drop_front(groups > 1 ? 1 : 0)))
        iv.replaceAllUsesWith(column);
      Block *into = moved->getBlock();
      Block::iterator at(moved);
      if (groups > 1) {
        OpBuilder gb(moved);
        Location l = moved.getLoc();
        Value key = mapping.lookupOrDefault(rowKey);
        Value group =
            arith::RemUIOp::create(gb, l, key, arith::ConstantIndexOp::create(gb, l, groups));
        Value owned =
            arith::CmpIOp::create(gb, l, arith::CmpIPredicate::eq, group, outerIvs.front());
        auto ifOwned = scf::IfOp::create(gb, l, owned, /*withElseRegion=*/false);
        into = ifOwned.thenBlock();
        at = Block::iterator(into->getTerminator());
      }
      Block *body = moved.getBody();
      body->getTerminator()->erase();
      into->getOperations().splice(at, body->getOperations());
      moved.erase();
      (void)copy;
      loop.erase();
      LLVM_DEBUG(llvm::dbgs() << "a scatter into rows by columns at " << loc << ", its rows in "
                              << groups << " groups\n");
    }
  }

  /// The row offset every access to `written` in `loop` shares, where each
  /// is through a subview one row high (every dimension but the last of
  /// size 1) at the same offsets, one of them a value defined outside
  /// `columns`: the row a token writes, and in `rows` the extent of its
  /// dimension where it is static. Null where there is none.
  static Value sharedRowOffset(scf::ForOp loop, scf::ParallelOp columns,
                               const llvm::DenseSet<Value> &written, int64_t &rows) {
    std::optional<SmallVector<OpFoldResult>> offsets;
    MemRefType source;
    bool shared = true;
    auto see = [&](Value memref) {
      if (!written.contains(baseOf(memref)))
        return;
      auto subview = memref.getDefiningOp<memref::SubViewOp>();
      if (!subview || columns->isAncestor(subview)) {
        shared = false;
        return;
      }
      ArrayRef<int64_t> sizes = subview.getStaticSizes();
      if (llvm::any_of(sizes.drop_back(), [](int64_t size) { return size != 1; })) {
        shared = false;
        return;
      }
      SmallVector<OpFoldResult> leading = subview.getMixedOffsets();
      leading.pop_back();
      if (!offsets) {
        offsets = leading;
        source = subview.getSourceType();
      } else if (*offsets != leading) {
        shared = false;
      }
    };
    loop.getBody()->walk([&](Operation *op) {
      if (auto load = dyn_cast<memref::LoadOp>(op))
        see(load.getMemRef());
      else if (auto store = dyn_cast<memref::StoreOp>(op))
        see(store.getMemRef());
    });
    if (!shared || !offsets)
      return {};
    for (int64_t d = static_cast<int64_t>(offsets->size()) - 1; d >= 0; --d)
      if (auto value = dyn_cast<Value>((*offsets)[d])) {
        rows = source.getDimSize(d);
        return value;
      }
    return {};
  }
};

} // namespace
