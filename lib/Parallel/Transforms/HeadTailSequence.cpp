//===- HeadTailSequence.cpp - Balance causal attention over cp ------------===//
//
// Part of pmlir.
//
// Under a causal mask, a rank holding a contiguous block of the sequence
// late in it attends to many more keys than the first rank: with the
// sequence split over cp, rank r does (2r + 1) / cp² of the work. In
// head-tail order (pmlir::HeadTailOrder) each rank's block is a chunk from
// the front of the sequence and one from its back, and the work evens out.
//
// The program keeps its shapes and shardings and computes on the permuted
// sequence: everything but positions, the causal mask and an expert
// capacity's first come, first served is indifferent to the order of
// tokens (embeddings, norms, projections, MLPs, the mean of a loss). So
// this pass marks the positions (tfm.arange), the causal attentions and the
// capacities (tfm.moe_capacity, and tfm.moe_expert_counts of what one
// drops) of the sequence with #tfm.head_tail, and the module with the
// axis, so that pmlir-run binds each rank its two chunks of the token ids
// and labels and assembles results in sequence order.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Parallel/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-head-tail-sequence"

namespace pmlir {
#define GEN_PASS_DEF_HEADTAILSEQUENCE
#include "pmlir/Parallel/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

struct HeadTailSequencePass : public pmlir::impl::HeadTailSequenceBase<HeadTailSequencePass> {
  using HeadTailSequenceBase::HeadTailSequenceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = meshOf(module, "the head-tail sequence order");
    if (!mesh)
      return signalPassFailure();
    if (mesh.axisIndex(axis) < 0) {
      emitError(module.getLoc()) << "the head-tail sequence order balances attention over mesh "
                                 << "axis '" << axis << "', which mesh " << mesh
                                 << " does not have";
      return signalPassFailure();
    }
    int64_t ranks = mesh.axisSize(axis);
    if (ranks == 1)
      return;
    FailureOr<int64_t> length = sequenceLength(module);
    if (failed(length))
      return signalPassFailure();
    if (*length % ranks != 0 || *length < 2 * ranks) {
      emitError(module.getLoc()) << "a sequence of " << *length << " on " << axis << " = " << ranks
                                 << " has no head-tail order: it needs equal blocks of "
                                 << "at least 2 positions (a head and a tail chunk)";
      return signalPassFailure();
    }
    auto order = HeadTailAttr::get(&getContext(), ranks, *length);
    auto seqOf = [](Value v, int64_t dim) { return cast<ShapedType>(v.getType()).getDimSize(dim); };
    int64_t positions = 0, attentions = 0, capacities = 0;
    module.walk([&](Operation *op) {
      if (auto arange = dyn_cast<ArangeOp>(op); arange && seqOf(arange, 0) == *length) {
        arange.setHeadTailAttr(order);
        ++positions;
      }
      auto mark = [&](auto attention) {
        if (attention && attention.getCausal() && !attention.getQueryOffset() &&
            seqOf(attention.getQuery(), 2) == *length && seqOf(attention.getKey(), 2) == *length) {
          attention.setHeadTailAttr(order);
          ++attentions;
        }
      };
      mark(dyn_cast<AttentionOp>(op));
      mark(dyn_cast<AttentionGradOp>(op));
      // A routing [..., S, k]: its sequence is next to last.
      auto experts = [&](Value routing) {
        auto type = cast<ShapedType>(routing.getType());
        return type.getRank() >= 2 && type.getDimSize(type.getRank() - 2) == *length;
      };
      if (auto capacity = dyn_cast<MoeCapacityOp>(op); capacity && experts(capacity.getExperts())) {
        capacity.setHeadTailAttr(order);
        ++capacities;
      }
      if (auto counts = dyn_cast<MoeExpertCountsOp>(op);
          counts && counts.getCapacity() && experts(counts.getExperts())) {
        counts.setHeadTailAttr(order);
        ++capacities;
      }
    });
    module->setAttr(kHeadTailAxisAttr, StringAttr::get(&getContext(), axis));
    LLVM_DEBUG(llvm::dbgs() << "head-tail order over " << axis << " = " << ranks << ": "
                            << positions << " positions, " << attentions << " attentions, "
                            << capacities << " capacities\n");
  }

  /// The length of the arguments' sequence dimension (tfm.dims "seq"), each
  /// of them split over the axis alone (the data pmlir-run permutes).
  FailureOr<int64_t> sequenceLength(ModuleOp module) {
    std::optional<int64_t> length;
    for (auto func : module.getOps<func::FuncOp>()) {
      for (BlockArgument arg : func.getArguments()) {
        unsigned i = arg.getArgNumber();
        auto roles = func.getArgAttrOfType<ArrayAttr>(i, kDimsAttr);
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!roles || !type)
          continue;
        for (auto [d, role] : llvm::enumerate(roles)) {
          auto text = dyn_cast<StringAttr>(role);
          if (!text || text.getValue() != "seq")
            continue;
          auto sharding = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
          if (!sharding || sharding.axesOf(d) != SmallVector<StringRef>{StringRef(axis)}) {
            InFlightDiagnostic diag = emitError(arg.getLoc()) << "argument #" << i;
            if (auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr))
              diag << " ('" << name.getValue() << "')";
            diag << " of @" << func.getSymName() << ": the head-tail order needs its sequence "
                 << "(dimension " << d << ") split over '" << axis << "' alone";
            return failure();
          }
          int64_t n = type.getDimSize(d);
          if (length && *length != n) {
            emitError(arg.getLoc()) << "argument #" << i << " of @" << func.getSymName()
                                    << " has a sequence of " << n << ", another argument one of "
                                    << *length << ": the head-tail order needs one length";
            return failure();
          }
          length = n;
        }
      }
    }
    if (!length) {
      emitError(module.getLoc()) << "the head-tail sequence order finds no argument with a "
                                    "'seq' dimension (tfm.dims) to order";
      return failure();
    }
    return *length;
  }
};

} // namespace
