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
// In head-tail order (#tfm.head_tail, pmlir-head-tail-sequence) each
// rank's block is a head chunk q0/k0 from the front of the sequence and a
// tail chunk q1/k1 from its back. The tails follow every head, so q1 sees
// all of k0 from any rank and q0 none of k1; a block from an earlier rank
// adds (q0, k0) and a later rank's (q1, k1), each unmasked. Every step
// past the first is two full chunk-by-chunk blocks on every rank, chosen
// by scf.if, where contiguous blocks give rank r r + 1 blocks and idle
// the others.
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

#include "pmlir/Parallel/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Grid.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-ring-attention"

namespace pmlir {
#define GEN_PASS_DEF_RINGATTENTION
#include "pmlir/Parallel/Transforms/Passes.h.inc"
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

  /// `then` where `condition` holds, else `otherwise`; both give values of
  /// the types of `types`.
  SmallVector<Value> choose(Value condition, TypeRange types,
                            function_ref<SmallVector<Value>()> then,
                            function_ref<SmallVector<Value>()> otherwise) {
    auto ifOp = scf::IfOp::create(b, loc, types, condition, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, loc, then());
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, otherwise());
    return SmallVector<Value>(ifOp.getResults());
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
      if (failed(checkOrder(op)))
        return signalPassFailure();
    for (AttentionGradOp op : backwards)
      if (failed(checkOrder(op)))
        return signalPassFailure();
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

  /// Rows [begin, begin + count) of the sequence dimension of `x` (an
  /// attention operand or result, or a log-sum-exp).
  static Value rows(OpBuilder &b, Location loc, Value x, int64_t begin, int64_t count) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
        strides(type.getRank(), 1);
    offsets[kSeqDim] = begin;
    sizes[kSeqDim] = count;
    MLIRContext *context = b.getContext();
    return tensor::ExtractSliceOp::create(b, loc, x, getAsIndexOpFoldResult(context, offsets),
                                          getAsIndexOpFoldResult(context, sizes),
                                          getAsIndexOpFoldResult(context, strides));
  }

  /// `into` with rows `part` from `begin` on.
  static Value withRows(OpBuilder &b, Location loc, Value into, int64_t begin, Value part) {
    auto type = cast<RankedTensorType>(part.getType());
    SmallVector<int64_t> offsets(type.getRank(), 0), strides(type.getRank(), 1);
    offsets[kSeqDim] = begin;
    MLIRContext *context = b.getContext();
    return tensor::InsertSliceOp::create(
        b, loc, part, into, getAsIndexOpFoldResult(context, offsets),
        getAsIndexOpFoldResult(context, type.getShape()), getAsIndexOpFoldResult(context, strides));
  }

  /// The head rows then the tail rows, as one tensor of `type`.
  static Value joinRows(OpBuilder &b, Location loc, Type type, Value head, Value tail) {
    auto t = cast<RankedTensorType>(type);
    Value all = tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
    int64_t h = cast<RankedTensorType>(head.getType()).getDimSize(kSeqDim);
    return withRows(b, loc, withRows(b, loc, all, 0, head), h, tail);
  }

  /// `into` with `part` added to its rows from `begin` on.
  static Value addRows(OpBuilder &b, Location loc, Value into, int64_t begin, Value part) {
    int64_t n = cast<RankedTensorType>(part.getType()).getDimSize(kSeqDim);
    Value sum = AddOp::create(b, loc, part.getType(), rows(b, loc, into, begin, n), part);
    return withRows(b, loc, into, begin, sum);
  }

  static Value localOf(Value gathered) {
    return gathered.getDefiningOp<shard::AllGatherOp>().getInput();
  }

  /// The forward ring: the attention's result and log-sum-exp over every
  /// block. `order`: the sequence's head-tail order, or null for
  /// contiguous blocks.
  std::pair<Value, Value> forwardRing(Ring &ring, Value query, Value key, Value value, bool causal,
                                      FloatAttr scale, HeadTailAttr order) {
    OpBuilder &b = ring.b;
    Location loc = ring.loc;
    auto q = cast<RankedTensorType>(query.getType());
    auto v = cast<RankedTensorType>(value.getType());
    Type resultType = q.clone({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)});
    Type lseType = q.clone({q.getDimSize(0), q.getDimSize(1), q.getDimSize(2)});
    // Queries against keys, masked below the diagonal of the last queries
    // and keys (the default offset: the queries are the last ones).
    auto block = [&](Value queries, Value k, Value vv, bool masked) {
      auto qt = cast<RankedTensorType>(queries.getType());
      int64_t n = qt.getDimSize(kSeqDim);
      auto op = AttentionBlockOp::create(
          b, loc,
          TypeRange{qt.clone({q.getDimSize(0), q.getDimSize(1), n, v.getDimSize(3)}),
                    qt.clone({q.getDimSize(0), q.getDimSize(1), n})},
          queries, k, vv, unit(b, masked), scale, Value());
      return SmallVector<Value>{op.getResult(), op.getLse()};
    };
    auto merge = [&](Value o, Value l, ArrayRef<Value> block) {
      auto op = AttentionMergeOp::create(b, loc, TypeRange{o.getType(), l.getType()}, o, l,
                                         block[0], block[1]);
      return SmallVector<Value>{op.getResult(), op.getLse()};
    };
    int64_t head = order ? order.order().head() : 0, tail = order ? order.order().tail() : 0;
    auto headRows = [&](Value x) { return rows(b, loc, x, 0, head); };
    auto tailRows = [&](Value x) { return rows(b, loc, x, head, tail); };
    Value k = key, vv = value, out, lse;
    for (int64_t step = 0; step < ringSize; ++step) {
      Value sentK, sentV;
      if (step + 1 < ringSize) {
        sentK = ring.send(k);
        sentV = ring.send(vv);
      }
      SmallVector<Value> merged;
      if (step == 0 && !order) {
        merged = block(query, k, vv, causal);
      } else if (step == 0) {
        // The rank's own chunks: (q0, k0) and (q1, k1) on the diagonal,
        // (q1, k0) whole: the tail queries against [k0; k1] masked as the
        // last queries of the block.
        SmallVector<Value> front = block(headRows(query), headRows(k), headRows(vv), true);
        SmallVector<Value> back = block(tailRows(query), k, vv, true);
        merged = {joinRows(b, loc, resultType, front[0], back[0]),
                  joinRows(b, loc, lseType, front[1], back[1])};
      } else if (!order) {
        merged = ring.guarded(causal ? ring.fromEarlierRank(step) : Value(), {out, lse},
                              [&]() { return merge(out, lse, block(query, k, vv, false)); });
      } else {
        merged = ring.choose(
            ring.fromEarlierRank(step), {resultType, lseType},
            [&]() {
              // An earlier rank's chunks: every query sees its head.
              return merge(out, lse, block(query, headRows(k), headRows(vv), false));
            },
            [&]() {
              // A later rank's: the tail queries see both its chunks.
              SmallVector<Value> back =
                  merge(tailRows(out), tailRows(lse), block(tailRows(query), k, vv, false));
              return SmallVector<Value>{withRows(b, loc, out, head, back[0]),
                                        withRows(b, loc, lse, head, back[1])};
            });
      }
      out = merged[0];
      lse = merged[1];
      if (step + 1 < ringSize) {
        k = ring.receive(sentK);
        vv = ring.receive(sentV);
      }
    }
    return {out, lse};
  }

  /// Whether the op's local queries are the two chunks of its order (the
  /// sequence split over the ring's axis alone); diagnoses otherwise.
  template <typename Op> LogicalResult checkOrder(Op op) {
    HeadTailAttr order = op.getHeadTailAttr();
    int64_t queries = op.getQuery().getType().getDimSize(kSeqDim);
    if (!order || (order.getRanks() == ringSize && order.order().block() == queries))
      return success();
    return op.emitOpError() << "ring attention over " << axis << " = " << ringSize
                            << " needs blocks of " << order << ", " << queries
                            << " queries here: the sequence is split over '" << axis << "' alone";
  }

  void rewriteForward(AttentionOp op) {
    OpBuilder b(op);
    Ring ring(b, op.getLoc(), gridAxis, ringSize);
    auto [out, lse] = forwardRing(ring, op.getQuery(), localOf(op.getKey()), localOf(op.getValue()),
                                  op.getCausal(), op.getScaleAttr(), op.getHeadTailAttr());
    op.getResult().replaceAllUsesWith(out);
    op.erase();
  }

  void rewriteBackward(AttentionGradOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Ring ring(b, loc, gridAxis, ringSize);
    Value query = op.getQuery(), key = localOf(op.getKey()), value = localOf(op.getValue());
    Value grad = op.getGrad();
    bool causal = op.getCausal();
    HeadTailAttr order = op.getHeadTailAttr();
    auto [out, lse] = forwardRing(ring, query, key, value, causal, op.getScaleAttr(), order);
    auto blockGrad = [&](Value q, Value k, Value v, Value dO, Value o, Value l, bool masked) {
      auto g =
          AttentionBlockGradOp::create(b, loc, TypeRange{q.getType(), k.getType(), v.getType()}, q,
                                       k, v, dO, o, l, unit(b, masked), op.getScaleAttr(), Value());
      return SmallVector<Value>{Value(g.getQueryGrad()), Value(g.getKeyGrad()),
                                Value(g.getValueGrad())};
    };
    auto add = [&](Value x, Value y) {
      return AddOp::create(b, loc, x.getType(), x, y).getResult();
    };
    int64_t head = order ? order.order().head() : 0, tail = order ? order.order().tail() : 0;
    auto headRows = [&](Value x) { return rows(b, loc, x, 0, head); };
    auto tailRows = [&](Value x) { return rows(b, loc, x, head, tail); };
    // The tail queries' block gradient against `k` and `v`.
    auto tailGrad = [&](Value k, Value v, bool masked) {
      return blockGrad(tailRows(query), k, v, tailRows(grad), tailRows(out), tailRows(lse), masked);
    };
    Value k = key, v = value, dq, dk, dv;
    for (int64_t step = 0; step < ringSize; ++step) {
      SmallVector<Value> acc;
      if (step == 0 && !order) {
        acc = blockGrad(query, k, v, grad, out, lse, causal);
      } else if (step == 0) {
        // As the forward's first step: (q0, k0) and (q1, [k0; k1]).
        SmallVector<Value> front = blockGrad(headRows(query), headRows(k), headRows(v),
                                             headRows(grad), headRows(out), headRows(lse), true);
        SmallVector<Value> back = tailGrad(k, v, true);
        acc = {joinRows(b, loc, query.getType(), front[0], back[0]),
               addRows(b, loc, back[1], 0, front[1]), addRows(b, loc, back[2], 0, front[2])};
      } else if (!order) {
        acc = ring.guarded(causal ? ring.fromEarlierRank(step) : Value(), {dq, dk, dv}, [&]() {
          SmallVector<Value> g = blockGrad(query, k, v, grad, out, lse, false);
          return SmallVector<Value>{add(dq, g[0]), add(dk, g[1]), add(dv, g[2])};
        });
      } else {
        acc = ring.choose(
            ring.fromEarlierRank(step), {dq.getType(), dk.getType(), dv.getType()},
            [&]() {
              // An earlier rank's head chunk, seen by every query.
              SmallVector<Value> g =
                  blockGrad(query, headRows(k), headRows(v), grad, out, lse, false);
              return SmallVector<Value>{add(dq, g[0]), addRows(b, loc, dk, 0, g[1]),
                                        addRows(b, loc, dv, 0, g[2])};
            },
            [&]() {
              // A later rank's chunks, seen by the tail queries.
              SmallVector<Value> g = tailGrad(k, v, false);
              return SmallVector<Value>{addRows(b, loc, dq, head, g[0]), add(dk, g[1]),
                                        add(dv, g[2])};
            });
      }
      dq = acc[0], dk = acc[1], dv = acc[2];
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
