//===- ShardingRules.cpp - Factor-based sharding rules of tfm ops ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

using namespace mlir;
using namespace pmlir::tfm;

namespace {

using Dims = SmallVector<SmallVector<int64_t>>;

/// Builds a rule factor by factor.
struct RuleBuilder {
  ShardingRule rule;

  int64_t factor(int64_t size, FactorKind kind = FactorKind::Parallel) {
    rule.factors.push_back({size, kind});
    return static_cast<int64_t>(rule.factors.size()) - 1;
  }
  /// One fresh parallel factor per dimension of `v`.
  SmallVector<int64_t> factorsOf(Value v) {
    SmallVector<int64_t> fs;
    for (int64_t d : cast<RankedTensorType>(v.getType()).getShape())
      fs.push_back(factor(d));
    return fs;
  }
  static Dims oneEach(ArrayRef<int64_t> fs) {
    Dims dims;
    for (int64_t f : fs)
      dims.push_back({f});
    return dims;
  }
};

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }
int64_t dimOf(Value v, int64_t d) { return cast<RankedTensorType>(v.getType()).getShape()[d]; }

/// Same-shape ops: every operand and result dimension is one factor;
/// `lastKind` for the last one (softmax and norms replicate it).
ShardingRule elementwise(Operation *op, FactorKind lastKind) {
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op->getResult(0));
  if (!fs.empty())
    b.rule.factors[fs.back()].kind = lastKind;
  b.rule.operands.assign(op->getNumOperands(), RuleBuilder::oneEach(fs));
  b.rule.results.push_back(RuleBuilder::oneEach(fs));
  return b.rule;
}

/// Norms over the last dimension: the per-feature weights share it.
ShardingRule norm(Operation *op) {
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op->getResult(0));
  b.rule.factors[fs.back()].kind = FactorKind::Replicated;
  b.rule.operands.push_back(RuleBuilder::oneEach(fs));
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    b.rule.operands.push_back(Dims{{fs.back()}});
  b.rule.results.push_back(RuleBuilder::oneEach(fs));
  return b.rule;
}

} // namespace

ShardingRule pmlir::tfm::trailingBroadcastRule(Operation *op) {
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op->getResult(0));
  for (Value operand : op->getOperands())
    b.rule.operands.push_back(
        RuleBuilder::oneEach(ArrayRef(fs).drop_front(fs.size() - rankOf(operand))));
  b.rule.results.push_back(RuleBuilder::oneEach(fs));
  b.rule.pending = pendingRuleOf(op);
  return b.rule;
}

PendingRule pmlir::tfm::pendingRuleOf(Operation *op) {
  if (op->hasTrait<pmlir::tfm::OpTrait::SumOfOperands>())
    return PendingRule::Additive;
  if (op->hasTrait<pmlir::tfm::OpTrait::LinearInEachOperand>())
    return PendingRule::LinearInOne;
  return PendingRule::None;
}

ShardingRule SoftmaxOp::getShardingRule() {
  return elementwise(getOperation(), FactorKind::Replicated);
}

ShardingRule LayerNormOp::getShardingRule() { return norm(getOperation()); }
ShardingRule RmsNormOp::getShardingRule() { return norm(getOperation()); }

ShardingRule MatmulOp::getShardingRule() {
  MatmulOp op = *this;
  RuleBuilder b;
  int64_t rank = rankOf(op.getLhs());
  SmallVector<int64_t> batch;
  for (int64_t d = 0; d + 2 < rank; ++d)
    batch.push_back(b.factor(dimOf(op.getLhs(), d)));
  int64_t m = b.factor(dimOf(op.getResult(), rank - 2));
  int64_t n = b.factor(dimOf(op.getResult(), rank - 1));
  int64_t k = b.factor(dimOf(op.getLhs(), op.getTransposeLhs() ? rank - 2 : rank - 1),
                       FactorKind::Contracting);
  Dims lhs = RuleBuilder::oneEach(batch);
  lhs.push_back({op.getTransposeLhs() ? k : m});
  lhs.push_back({op.getTransposeLhs() ? m : k});
  Dims rhs = rankOf(op.getRhs()) == 2 ? Dims{} : RuleBuilder::oneEach(batch);
  rhs.push_back({op.getTransposeRhs() ? n : k});
  rhs.push_back({op.getTransposeRhs() ? k : n});
  Dims result = RuleBuilder::oneEach(batch);
  result.push_back({m});
  result.push_back({n});
  b.rule.operands = {lhs, rhs};
  b.rule.results = {result};
  return b.rule;
}

/// Vocab-parallel: a device holding rows [v0, v1) of the table looks up the
/// ids in that range and contributes zeros for the rest; the sum over the
/// vocab axes is the lookup (Megatron's VocabParallelEmbedding).
ShardingRule EmbeddingOp::getShardingRule() {
  EmbeddingOp op = *this;
  RuleBuilder b;
  SmallVector<int64_t> ids = b.factorsOf(op.getIds());
  int64_t vocab = b.factor(dimOf(op.getTable(), 0), FactorKind::Contracting);
  int64_t hidden = b.factor(dimOf(op.getTable(), 1));
  b.rule.operands = {Dims{{vocab}, {hidden}}, RuleBuilder::oneEach(ids)};
  Dims result = RuleBuilder::oneEach(ids);
  result.push_back({hidden});
  b.rule.results = {result};
  return b.rule;
}

/// [B, S, A*D] <-> [B, A, S, D]: the hidden dimension is heads (major) times
/// head size.
static ShardingRule heads(Value split, bool splitting) {
  RuleBuilder b;
  int64_t batch = b.factor(dimOf(split, 0)), heads = b.factor(dimOf(split, 1));
  int64_t seq = b.factor(dimOf(split, 2)), size = b.factor(dimOf(split, 3));
  Dims merged = {{batch}, {seq}, {heads, size}};
  Dims separate = {{batch}, {heads}, {seq}, {size}};
  b.rule.operands = {splitting ? merged : separate};
  b.rule.results = {splitting ? separate : merged};
  return b.rule;
}

ShardingRule SplitHeadsOp::getShardingRule() { return heads(getResult(), /*splitting=*/true); }
ShardingRule MergeHeadsOp::getShardingRule() { return heads(getInput(), /*splitting=*/false); }

/// Query heads are kv heads (major) times the group; the key sequence and
/// the head size are reduced over inside a softmax, so they replicate.
ShardingRule AttentionOp::getShardingRule() {
  AttentionOp op = *this;
  RuleBuilder b;
  int64_t batch = b.factor(dimOf(op.getQuery(), 0));
  int64_t kvHeads = b.factor(dimOf(op.getKey(), 1));
  int64_t group = b.factor(dimOf(op.getQuery(), 1) / dimOf(op.getKey(), 1));
  int64_t seq = b.factor(dimOf(op.getQuery(), 2));
  int64_t keySeq = b.factor(dimOf(op.getKey(), 2), FactorKind::Replicated);
  int64_t size = b.factor(dimOf(op.getQuery(), 3), FactorKind::Replicated);
  int64_t valueSize = b.factor(dimOf(op.getValue(), 3));
  b.rule.operands = {Dims{{batch}, {kvHeads, group}, {seq}, {size}},
                     Dims{{batch}, {kvHeads}, {keySeq}, {size}},
                     Dims{{batch}, {kvHeads}, {keySeq}, {valueSize}}};
  b.rule.results = {Dims{{batch}, {kvHeads, group}, {seq}, {valueSize}}};
  return b.rule;
}

/// Positions follow the sequence; the rotation pairs the two halves of the
/// head dimension, which replicates.
ShardingRule RopeOp::getShardingRule() {
  RopeOp op = *this;
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op.getResult());
  b.rule.factors[fs[3]].kind = FactorKind::Replicated;
  b.rule.operands = {RuleBuilder::oneEach(fs), Dims{{fs[2]}}};
  b.rule.results = {RuleBuilder::oneEach(fs)};
  return b.rule;
}

/// The split dimension is parts (major, replicated: a device cannot hold a
/// different part for each result) times the part.
ShardingRule SplitOp::getShardingRule() {
  SplitOp op = *this;
  RuleBuilder b;
  int64_t dim = op.getDim();
  SmallVector<int64_t> fs = b.factorsOf(op.getResult(0));
  int64_t parts = b.factor(op.getNumResults(), FactorKind::Replicated);
  Dims input = RuleBuilder::oneEach(fs);
  input[dim] = {parts, fs[dim]};
  b.rule.operands = {input};
  for (unsigned i = 0; i < op.getNumResults(); ++i)
    b.rule.results.push_back(RuleBuilder::oneEach(fs));
  return b.rule;
}

ShardingRule ArangeOp::getShardingRule() {
  ArangeOp op = *this;
  RuleBuilder b;
  b.rule.results = {RuleBuilder::oneEach(b.factorsOf(op.getResult()))};
  return b.rule;
}

/// Tokens and vocabulary both reduce into the scalar loss; partitioning
/// computes it from split logits without gathering them (Megatron's
/// vocab-parallel cross entropy: max and sum all-reduces over the
/// vocabulary, the per-token parts gathered over the tokens), so every
/// factor may be split.
ShardingRule CrossEntropyOp::getShardingRule() {
  CrossEntropyOp op = *this;
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op.getLogits());
  b.rule.operands = {RuleBuilder::oneEach(fs),
                     RuleBuilder::oneEach(ArrayRef(fs).drop_back())};
  b.rule.results = {Dims{}};
  return b.rule;
}

std::optional<ShardingRule> pmlir::tfm::getShardingRule(Operation *op) {
  auto rule = dyn_cast<ShardingRuleOpInterface>(op);
  if (!rule)
    return std::nullopt;
  ShardingRule result = rule.getShardingRule();
  result.pending = pendingRuleOf(op);
  return result;
}

//===----------------------------------------------------------------------===//
// Local rewrites in partition
//===----------------------------------------------------------------------===//

LogicalResult SplitHeadsOp::partitionLocally(Operation *local, LocalPartition &) {
  auto heads = cast<SplitHeadsOp>(local);
  heads.setHeads(heads.getResult().getType().getShape()[1]);
  return success();
}

/// Vocab-parallel (the vocabulary is its contracting factor): the local
/// table is a block of rows, starting at the operand added here.
LogicalResult EmbeddingOp::partitionLocally(Operation *local, LocalPartition &partition) {
  ArrayRef<StringRef> vocabAxes = partition.contractedAxes();
  if (vocabAxes.empty())
    return success();
  int64_t rows = cast<RankedTensorType>(partition.localOf(getTable()).getType()).getShape()[0];
  local->insertOperands(local->getNumOperands(), partition.blockStart(vocabAxes, rows, 0));
  return success();
}

/// A sequence block's positions start at its block offset.
LogicalResult ArangeOp::partitionLocally(Operation *local, LocalPartition &partition) {
  ArrayRef<StringRef> axes = partition.resultAxes(0)[0];
  if (axes.empty())
    return success();
  int64_t n = cast<RankedTensorType>(local->getResult(0).getType()).getShape()[0];
  local->insertOperands(local->getNumOperands(), partition.blockStart(axes, n, 0));
  return success();
}

/// Queries of a sequence block see keys up to their global position.
LogicalResult AttentionOp::partitionLocally(Operation *local, LocalPartition &partition) {
  ArrayRef<StringRef> seqAxes = partition.resultAxes(0)[2];
  if (!getCausal() || seqAxes.empty())
    return success();
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  int64_t localSeq = cast<RankedTensorType>(local->getResult(0).getType()).getShape()[2];
  local->insertOperands(local->getNumOperands(),
                        partition.blockStart(seqAxes, localSeq, k[2] - q[2]));
  return success();
}

MeshAttr pmlir::tfm::meshOf(Operation *module, StringRef who) {
  auto mesh = module->getAttrOfType<MeshAttr>(kMeshAttr);
  if (!mesh)
    emitError(module->getLoc()) << who
                        << " needs the module attribute tfm.mesh "
                           "(e.g. tfm.mesh = #tfm.mesh<dp = 2, tp = 2>)";
  return mesh;
}

Sharding Sharding::of(ShardingAttr attr) {
  Sharding s;
  for (int64_t d = 0; d < attr.getRank(); ++d)
    s.dims.push_back(attr.axesOf(d));
  s.pending = attr.pendingAxes();
  return s;
}

ShardingAttr Sharding::toAttr(MLIRContext *context, bool withPending) const {
  return ShardingAttr::get(context, dims, withPending ? ArrayRef(pending) : ArrayRef<StringRef>{});
}

int64_t pmlir::tfm::devicesOf(MeshAttr mesh, ArrayRef<StringRef> axes) {
  int64_t n = 1;
  for (StringRef a : axes)
    n *= mesh.axisSize(a);
  return n;
}

void pmlir::tfm::factorAxes(ArrayRef<int64_t> factors, ArrayRef<StringRef> dimAxes,
                            const ShardingRule &rule, MeshAttr mesh,
                            SmallVectorImpl<Axes> &perFactor) {
  // An axis larger than what remains of a factor that divides it splits:
  // the factor takes its major part, the next factor sees the rest.
  SmallVector<StringRef> queue(dimAxes);
  size_t next = 0;
  for (auto [i, f] : llvm::enumerate(factors)) {
    int64_t remaining = rule.factors[f].size;
    while (next < queue.size()) {
      int64_t n = mesh.axisSize(queue[next]);
      if (remaining % n == 0) {
        remaining /= n;
        perFactor[f].push_back(queue[next++]);
        continue;
      }
      std::optional<MeshAttr::SubAxis> sub = mesh.subAxis(queue[next]);
      if (sub && remaining > 1 && n % remaining == 0) {
        perFactor[f].push_back(mesh.subAxisName(sub->index, sub->pre, remaining));
        queue[next] = mesh.subAxisName(sub->index, sub->pre * remaining, n / remaining);
        remaining = 1;
      }
      break;
    }
    if (remaining != 1 && i + 1 == factors.size() && rule.isMinorEverywhere(f)) {
      int64_t devices = devicesOf(mesh, perFactor[f]);
      while (next < queue.size() && devices * mesh.axisSize(queue[next]) <= rule.factors[f].size) {
        devices *= mesh.axisSize(queue[next]);
        perFactor[f].push_back(queue[next++]);
      }
    }
    if (remaining != 1)
      break;
  }
}

bool ShardingRule::isMinorEverywhere(int64_t f) const {
  auto minorIn = [&](ArrayRef<SmallVector<int64_t>> dims) {
    return llvm::all_of(dims, [&](const SmallVector<int64_t> &factors) {
      return !llvm::is_contained(factors, f) || factors.back() == f;
    });
  };
  return llvm::all_of(operands, [&](const auto &dims) { return !dims || minorIn(*dims); }) &&
         llvm::all_of(results, minorIn);
}
