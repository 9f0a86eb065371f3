//===- RingAttention.cpp - Keys and values passed around the cp ring ------===//
//
// Part of pmlir.
//
// On a partitioned program whose attention gathers its keys and values
// over the context-parallel axis: each rank keeps its own key/value block
// and passes blocks around the ring instead (rank r sends to r + 1 and
// receives from r - 1, cp - 1 times), computing each block's attention
// (tfm.attention_block) while the next block travels and combining the
// blocks with an online softmax (tfm.attention_merge), so the result is
// exact. Under the causal mask the block of a later rank is wholly masked
// and is skipped (scf.if on the rank's index): rank r computes r + 1 of
// the cp blocks.
//
// The backward pass (an attention gradient on gathered keys and values,
// whose key and value gradients pmlir-partition reduce-scatters over cp:
// the context-parallel-attention pass pins them so) recomputes the
// forward ring for the output and log-sum-exp, then passes the key and
// value blocks around again with their gradient accumulators
// (tfm.attention_block_grad per block); one last step brings each
// accumulator home, where the reduce-scatter delivered it.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Grid.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-ring-attention"

namespace pmlir {
#define GEN_PASS_DEF_RINGATTENTION
#include "pmlir/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

constexpr int64_t kSeqDim = 2;

/// The ring over one grid axis, as seen from this rank.
struct Ring {
  OpBuilder &b;
  Location loc;
  int16_t axis;
  int64_t size;
  Value index, next, previous;

  Ring(OpBuilder &b, Location loc, int16_t axis, int64_t size)
      : b(b), loc(loc), axis(axis), size(size) {
    index = shard::ProcessMultiIndexOp::create(b, loc, pmlir::kGridName, ArrayRef<int16_t>{axis})
                .getResult()[0];
    Value n = arith::ConstantIndexOp::create(b, loc, size);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    next = arith::RemUIOp::create(b, loc, arith::AddIOp::create(b, loc, index, one), n);
    previous = arith::RemUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, size - 1)), n);
  }

  /// Sends `x` to the next rank; returns the send, whose result is `x`.
  Value send(Value x) {
    return shard::SendOp::create(b, loc, x.getType(), pmlir::kGridName, ArrayRef<int16_t>{axis}, x,
                                 ArrayRef<int64_t>{ShapedType::kDynamic}, ValueRange{next})
        .getResult();
  }

  /// What the previous rank sent; `sent` (this rank's send of the same
  /// shape) orders the receive after it.
  Value receive(Value sent) {
    return shard::RecvOp::create(
               b, loc, sent.getType(), FlatSymbolRefAttr::get(b.getContext(), pmlir::kGridName),
               b.getDenseI16ArrayAttr({axis}), sent, b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
               ValueRange{previous})
        .getResult();
  }

  /// Whether the block that arrives at step `step` (rank index - step's)
  /// comes from an earlier rank: under a causal mask, the only blocks with
  /// keys the queries see besides the rank's own.
  Value fromEarlierRank(int64_t step) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                 arith::ConstantIndexOp::create(b, loc, step), index);
  }

  /// `compute` where `visible` holds, `otherwise` where it does not; all
  /// of them unconditionally where `visible` is null.
  SmallVector<Value> guarded(Value visible, ValueRange otherwise,
                             function_ref<SmallVector<Value>()> compute) {
    if (!visible)
      return compute();
    auto ifOp = scf::IfOp::create(b, loc, otherwise.getTypes(), visible, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      scf::YieldOp::create(b, loc, compute());
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      scf::YieldOp::create(b, loc, otherwise);
    }
    return SmallVector<Value>(ifOp.getResults());
  }
};

struct RingAttentionPass : public pmlir::impl::RingAttentionBase<RingAttentionPass> {
  using RingAttentionBase::RingAttentionBase;

  int16_t gridAxis = -1;
  int64_t ringSize = 0;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = meshOf(module, "ring attention");
    if (!mesh)
      return signalPassFailure();
    if (mesh.axisIndex(axis) < 0) {
      emitError(module.getLoc()) << "ring attention passes keys and values around mesh axis '"
                                 << axis << "', which mesh " << mesh << " does not have";
      return signalPassFailure();
    }
    auto gridOp = dyn_cast_or_null<shard::GridOp>(module.lookupSymbol(pmlir::kGridName));
    if (!gridOp) {
      emitError(module.getLoc()) << "ring attention runs on a partitioned program (shard.grid "
                                    "@mesh); run pmlir-partition first";
      return signalPassFailure();
    }
    FailureOr<pmlir::sharding::Grid> grid = pmlir::sharding::Grid::declaredBy(gridOp, mesh);
    if (failed(grid))
      return signalPassFailure();
    StringRef cp = axis;
    SmallVector<int16_t> axes = grid->axesOf(cp);
    if (axes.size() != 1) {
      emitError(module.getLoc()) << "ring attention needs mesh axis '" << axis
                                 << "' whole on the grid; the program cuts it into parts";
      return signalPassFailure();
    }
    gridAxis = axes.front();
    ringSize = mesh.axisSize(axis);

    // Collected first: a backward rewrite erases the reduce-scatters after
    // its op.
    SmallVector<AttentionOp> forwards;
    SmallVector<AttentionGradOp> backwards;
    module.walk([&](AttentionOp op) {
      if (!op.getProbabilities() && gathered(op.getKey()) && gathered(op.getValue()))
        forwards.push_back(op);
    });
    module.walk([&](AttentionGradOp op) {
      if (!op.getProbabilities() && gathered(op.getKey()) && gathered(op.getValue()) &&
          scattered(op.getKeyGrad()) && scattered(op.getValueGrad()))
        backwards.push_back(op);
    });
    for (AttentionOp op : forwards)
      rewriteForward(op);
    for (AttentionGradOp op : backwards)
      rewriteBackward(op);
    // The gathers the rings replaced.
    SmallVector<shard::AllGatherOp> unused;
    module.walk([&](shard::AllGatherOp op) {
      if (op->use_empty() && op.getGridAxes() == ArrayRef<int16_t>{gridAxis})
        unused.push_back(op);
    });
    for (shard::AllGatherOp op : unused)
      op.erase();
    LLVM_DEBUG(llvm::dbgs() << forwards.size() << " attentions and " << backwards.size()
                            << " attention gradients on the ring\n");
  }

  /// An all_gather of the sequence over the ring's axis alone.
  bool gathered(Value v) const {
    auto gather = v.getDefiningOp<shard::AllGatherOp>();
    return gather && gather.getGridAxes() == ArrayRef<int16_t>{gridAxis} &&
           gather.getGatherAxis().getSExtValue() == kSeqDim;
  }

  /// Used only by a reduce_scatter of the sequence over the ring's axis.
  bool scattered(Value v) const {
    return v.hasOneUse() && llvm::all_of(v.getUsers(), [&](Operation *user) {
             auto scatter = dyn_cast<shard::ReduceScatterOp>(user);
             return scatter && scatter.getGridAxes() == ArrayRef<int16_t>{gridAxis} &&
                    scatter.getScatterAxis().getSExtValue() == kSeqDim &&
                    scatter.getReduction() == shard::ReductionKind::Sum;
           });
  }

  static UnitAttr unit(OpBuilder &b, bool set) { return set ? b.getUnitAttr() : UnitAttr(); }

  static Value localOf(Value gathered) {
    return gathered.getDefiningOp<shard::AllGatherOp>().getInput();
  }

  /// The forward ring: the attention's result and log-sum-exp over every
  /// block.
  std::pair<Value, Value> forwardRing(Ring &ring, Value query, Value key, Value value, bool causal,
                                      FloatAttr scale) {
    OpBuilder &b = ring.b;
    Location loc = ring.loc;
    auto q = cast<RankedTensorType>(query.getType());
    auto v = cast<RankedTensorType>(value.getType());
    Type resultType = q.clone({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)});
    Type lseType = q.clone({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)});
    auto block = [&](Value k, Value vv, bool diagonal) {
      auto op = AttentionBlockOp::create(b, loc, TypeRange{resultType, lseType}, query, k, vv,
                                         unit(b, causal && diagonal), scale, Value());
      return std::make_pair(Value(op.getResult()), Value(op.getLse()));
    };
    Value k = key, vv = value, out, lse;
    for (int64_t step = 0; step < ringSize; ++step) {
      Value sentK, sentV;
      if (step + 1 < ringSize) {
        sentK = ring.send(k);
        sentV = ring.send(vv);
      }
      if (step == 0) {
        std::tie(out, lse) = block(k, vv, /*diagonal=*/true);
      } else {
        SmallVector<Value> merged =
            ring.guarded(causal ? ring.fromEarlierRank(step) : Value(), {out, lse}, [&]() {
              auto [o, l] = block(k, vv, /*diagonal=*/false);
              auto merge =
                  AttentionMergeOp::create(b, loc, TypeRange{resultType, lseType}, out, lse, o, l);
              return SmallVector<Value>{Value(merge.getResult()), Value(merge.getLse())};
            });
        out = merged[0];
        lse = merged[1];
      }
      if (step + 1 < ringSize) {
        k = ring.receive(sentK);
        vv = ring.receive(sentV);
      }
    }
    return {out, lse};
  }

  void rewriteForward(AttentionOp op) {
    OpBuilder b(op);
    Ring ring(b, op.getLoc(), gridAxis, ringSize);
    auto [out, lse] = forwardRing(ring, op.getQuery(), localOf(op.getKey()), localOf(op.getValue()),
                                  op.getCausal(), op.getScaleAttr());
    op.getResult().replaceAllUsesWith(out);
    op.erase();
  }

  void rewriteBackward(AttentionGradOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Ring ring(b, loc, gridAxis, ringSize);
    Value query = op.getQuery(), key = localOf(op.getKey()), value = localOf(op.getValue());
    bool causal = op.getCausal();
    auto [out, lse] = forwardRing(ring, query, key, value, causal, op.getScaleAttr());
    auto blockGrad = [&](Value k, Value v, bool diagonal) {
      auto g = AttentionBlockGradOp::create(
          b, loc, TypeRange{query.getType(), k.getType(), v.getType()}, query, k, v, op.getGrad(),
          out, lse, unit(b, causal && diagonal), op.getScaleAttr(), Value());
      return SmallVector<Value>{Value(g.getQueryGrad()), Value(g.getKeyGrad()),
                                Value(g.getValueGrad())};
    };
    auto add = [&](Value x, Value y) {
      return AddOp::create(b, loc, x.getType(), x, y).getResult();
    };
    Value k = key, v = value, dq, dk, dv;
    for (int64_t step = 0; step < ringSize; ++step) {
      if (step == 0) {
        SmallVector<Value> g = blockGrad(k, v, /*diagonal=*/true);
        dq = g[0], dk = g[1], dv = g[2];
      } else {
        SmallVector<Value> acc =
            ring.guarded(causal ? ring.fromEarlierRank(step) : Value(), {dq, dk, dv}, [&]() {
              SmallVector<Value> g = blockGrad(k, v, /*diagonal=*/false);
              return SmallVector<Value>{add(dq, g[0]), add(dk, g[1]), add(dv, g[2])};
            });
        dq = acc[0], dk = acc[1], dv = acc[2];
      }
      // The block moves on with its gradients; the last step brings each
      // rank's own block's gradients home.
      Value sentDk = ring.send(dk), sentDv = ring.send(dv);
      Value sentK, sentV;
      if (step + 1 < ringSize) {
        sentK = ring.send(k);
        sentV = ring.send(v);
      }
      dk = ring.receive(sentDk);
      dv = ring.receive(sentDv);
      if (step + 1 < ringSize) {
        k = ring.receive(sentK);
        v = ring.receive(sentV);
      }
    }
    Operation *scatterK = *op.getKeyGrad().getUsers().begin();
    Operation *scatterV = *op.getValueGrad().getUsers().begin();
    scatterK->getResult(0).replaceAllUsesWith(dk);
    scatterV->getResult(0).replaceAllUsesWith(dv);
    scatterK->erase();
    scatterV->erase();
    op.getQueryGrad().replaceAllUsesWith(dq);
    op.erase();
  }
};

} // namespace
