//===- ShardingRules.cpp - Factor-based sharding rules of tfm ops ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/ExpertBlock.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/Mesh.h"

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

/// A scalar of every element of `input` (a count, a sum): each dimension
/// is a contracting factor, whose split partial results are summed.
ShardingRule wholeReduction(Value input) {
  RuleBuilder b;
  SmallVector<int64_t> fs;
  for (int64_t d : cast<RankedTensorType>(input.getType()).getShape())
    fs.push_back(b.factor(d, FactorKind::Contracting));
  b.rule.operands = {RuleBuilder::oneEach(fs)};
  b.rule.results = {Dims{}};
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
  if (op->hasTrait<pmlir::tfm::OpTrait::SumOfOperands>() ||
      op->hasTrait<pmlir::tfm::OpTrait::LinearInAllOperands>())
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
  if (op.getProbabilities())
    b.rule.results.push_back(Dims{{batch}, {kvHeads, group}, {seq}, {keySeq}});
  b.rule.operands.resize(op->getNumOperands());
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

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

/// The batch and row dimensions are summed over: a batch split over dp
/// gives a gradient pending over dp.
ShardingRule WeightGradOp::getShardingRule() {
  WeightGradOp op = *this;
  RuleBuilder b;
  int64_t rank = rankOf(op.getLhs());
  SmallVector<int64_t> rows;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows.push_back(b.factor(dimOf(op.getLhs(), d), FactorKind::Contracting));
  int64_t k = b.factor(dimOf(op.getLhs(), rank - 1));
  int64_t n = b.factor(dimOf(op.getRhs(), rank - 1));
  Dims lhs = RuleBuilder::oneEach(rows), rhs = RuleBuilder::oneEach(rows);
  lhs.push_back({k});
  rhs.push_back({n});
  b.rule.operands = {lhs, rhs};
  b.rule.results = {Dims{{k}, {n}}};
  return b.rule;
}

ShardingRule SumLeadingOp::getShardingRule() {
  SumLeadingOp op = *this;
  RuleBuilder b;
  int64_t rank = rankOf(op.getInput()), kept = rankOf(op.getResult());
  SmallVector<int64_t> fs;
  for (int64_t d = 0; d < rank; ++d)
    fs.push_back(b.factor(dimOf(op.getInput(), d),
                          d < rank - kept ? FactorKind::Contracting : FactorKind::Parallel));
  b.rule.operands = {RuleBuilder::oneEach(fs)};
  b.rule.results = {RuleBuilder::oneEach(ArrayRef(fs).take_back(kept))};
  return b.rule;
}

/// As tfm.split's, mirrored: the joined dimension is parts (major,
/// replicated) times the part.
ShardingRule ConcatOp::getShardingRule() {
  ConcatOp op = *this;
  RuleBuilder b;
  int64_t dim = op.getDim();
  SmallVector<int64_t> fs = b.factorsOf(op.getInputs().front());
  int64_t parts = b.factor(op.getInputs().size(), FactorKind::Replicated);
  b.rule.operands.assign(op.getInputs().size(), RuleBuilder::oneEach(fs));
  Dims result = RuleBuilder::oneEach(fs);
  result[dim] = {parts, fs[dim]};
  b.rule.results = {result};
  return b.rule;
}

ShardingRule SoftmaxGradOp::getShardingRule() {
  return elementwise(getOperation(), FactorKind::Replicated);
}

/// The input gradient of a norm: rows independent, each needed whole; the
/// gamma operand holds the row's factor.
static ShardingRule normGrad(Operation *op) {
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op->getResult(0));
  b.rule.factors[fs.back()].kind = FactorKind::Replicated;
  Dims rows = RuleBuilder::oneEach(fs);
  b.rule.operands = {rows, Dims{{fs.back()}}, rows};
  b.rule.results = {rows};
  return b.rule;
}

ShardingRule LayerNormGradOp::getShardingRule() { return normGrad(getOperation()); }
ShardingRule RmsNormGradOp::getShardingRule() { return normGrad(getOperation()); }

/// The gamma gradient of a norm sums over the rows; each row is needed
/// whole for its statistics.
static ShardingRule normWeightGrad(Operation *op) {
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op->getOperand(0));
  for (int64_t f : ArrayRef(fs).drop_back())
    b.rule.factors[f].kind = FactorKind::Contracting;
  b.rule.factors[fs.back()].kind = FactorKind::Replicated;
  Dims rows = RuleBuilder::oneEach(fs);
  b.rule.operands = {rows, rows};
  b.rule.results = {Dims{{fs.back()}}};
  return b.rule;
}

ShardingRule LayerNormWeightGradOp::getShardingRule() { return normWeightGrad(getOperation()); }
ShardingRule RmsNormWeightGradOp::getShardingRule() { return normWeightGrad(getOperation()); }

/// The tokens are summed over; the vocabulary splits the table's rows
/// (vocab-parallel: each device adds the ids in its block).
ShardingRule EmbeddingGradOp::getShardingRule() {
  EmbeddingGradOp op = *this;
  RuleBuilder b;
  SmallVector<int64_t> ids;
  for (int64_t d : op.getIds().getType().getShape())
    ids.push_back(b.factor(d, FactorKind::Contracting));
  int64_t vocab = b.factor(dimOf(op.getResult(), 0));
  int64_t hidden = b.factor(dimOf(op.getResult(), 1));
  Dims grad = RuleBuilder::oneEach(ids);
  grad.push_back({hidden});
  b.rule.operands = {grad, RuleBuilder::oneEach(ids)};
  b.rule.results = {Dims{{vocab}, {hidden}}};
  return b.rule;
}

/// As attention's, with the query heads' group and the query sequence
/// contracted into the key and value gradients: a key/value head's
/// gradient sums over the query heads that read it and the queries, so a
/// split group or sequence leaves them pending where the query gradient
/// is split.
ShardingRule AttentionGradOp::getShardingRule() {
  AttentionGradOp op = *this;
  RuleBuilder b;
  int64_t batch = b.factor(dimOf(op.getQuery(), 0));
  int64_t kvHeads = b.factor(dimOf(op.getKey(), 1));
  int64_t group =
      b.factor(dimOf(op.getQuery(), 1) / dimOf(op.getKey(), 1), FactorKind::Contracting);
  int64_t seq = b.factor(dimOf(op.getQuery(), 2), FactorKind::Contracting);
  int64_t keySeq = b.factor(dimOf(op.getKey(), 2), FactorKind::Replicated);
  int64_t size = b.factor(dimOf(op.getQuery(), 3), FactorKind::Replicated);
  int64_t valueSize = b.factor(dimOf(op.getValue(), 3), FactorKind::Replicated);
  Dims query = {{batch}, {kvHeads, group}, {seq}, {size}};
  Dims key = {{batch}, {kvHeads}, {keySeq}, {size}};
  Dims value = {{batch}, {kvHeads}, {keySeq}, {valueSize}};
  b.rule.operands = {query, key, value, Dims{{batch}, {kvHeads, group}, {seq}, {valueSize}}};
  if (op.getProbabilities())
    b.rule.operands.push_back(Dims{{batch}, {kvHeads, group}, {seq}, {keySeq}});
  b.rule.operands.resize(op->getNumOperands());
  b.rule.results = {query, key, value};
  return b.rule;
}

ShardingRule CountTokensOp::getShardingRule() { return wholeReduction(getLabels()); }

/// Per token, like the logits; partition computes a vocabulary split as
/// Megatron's vocab-parallel cross entropy does (max and exp-sum
/// all-reduces), never gathering the logits.
ShardingRule CrossEntropyGradOp::getShardingRule() {
  CrossEntropyGradOp op = *this;
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op.getLogits());
  b.rule.operands = {RuleBuilder::oneEach(fs), RuleBuilder::oneEach(ArrayRef(fs).drop_back()),
                     Dims{}, Dims{}};
  b.rule.operands.resize(op->getNumOperands());
  b.rule.results = {RuleBuilder::oneEach(fs)};
  return b.rule;
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

/// Every element is its own update: parameter, gradient and state share
/// one factor per dimension; the step and the gradient norm are scalars.
ShardingRule AdamWOp::getShardingRule() {
  AdamWOp op = *this;
  RuleBuilder b;
  SmallVector<int64_t> fs = b.factorsOf(op.getParam());
  Dims elements = RuleBuilder::oneEach(fs);
  b.rule.operands = {elements, elements, elements, elements, Dims{}};
  if (op.getGradNorm())
    b.rule.operands.push_back(Dims{});
  b.rule.results = {elements, elements, elements};
  return b.rule;
}

ShardingRule SumSquaresOp::getShardingRule() { return wholeReduction(getInput()); }

/// The microbatches stay whole on every device (a device runs each in
/// turn); the rest splits like the microbatch.
ShardingRule MicrobatchOp::getShardingRule() {
  MicrobatchOp op = *this;
  RuleBuilder b;
  int64_t micro = b.factor(dimOf(op.getInput(), 0), FactorKind::Replicated);
  SmallVector<int64_t> fs = b.factorsOf(op.getResult());
  Dims input = {{micro}};
  llvm::append_range(input, RuleBuilder::oneEach(fs));
  b.rule.operands = {input};
  b.rule.results = {RuleBuilder::oneEach(fs)};
  return b.rule;
}

//===----------------------------------------------------------------------===//
// Mixture-of-experts ops
//===----------------------------------------------------------------------===//

// The router works per token, so its tokens split like any token's. The
// sorted order is one order over every token of the program: the sort, the
// sorted rows and the expert groups stay whole on each device, while the
// hidden dimension of the rows and both dimensions of each expert's weight
// split as a matmul's do (tensor parallelism inside the experts). A whole
// block of experts (tfm.moe_experts) is per token again: each device sorts
// its own tokens, and with its experts split (expert parallelism) it
// exchanges their rows with the devices holding them.

namespace {

/// Fresh factors of `kind`, one per dimension of `v`.
SmallVector<int64_t> factorsOfKind(RuleBuilder &b, Value v, FactorKind kind) {
  SmallVector<int64_t> fs;
  for (int64_t d : cast<RankedTensorType>(v.getType()).getShape())
    fs.push_back(b.factor(d, kind));
  return fs;
}

/// `leading` then `last`, one factor per dimension.
Dims withLast(ArrayRef<int64_t> leading, int64_t last) {
  Dims dims = RuleBuilder::oneEach(leading);
  dims.push_back({last});
  return dims;
}

/// One factor of `kind` per token dimension of `v` [..., X]: every
/// dimension but the last.
SmallVector<int64_t> tokenFactors(RuleBuilder &b, Value v, FactorKind kind = FactorKind::Parallel) {
  SmallVector<int64_t> fs;
  for (int64_t d : cast<RankedTensorType>(v.getType()).getShape().drop_back())
    fs.push_back(b.factor(d, kind));
  return fs;
}

/// The last dimension of `v` as one factor of `kind`.
int64_t lastFactor(RuleBuilder &b, Value v, FactorKind kind) {
  return b.factor(dimOf(v, rankOf(v) - 1), kind);
}

/// A routing's tokens [...], its choices [k] and its sorted rows [N], each
/// kept whole: the factors of `slots` and `sources`.
struct RoutingFactors {
  SmallVector<int64_t> tokens;
  int64_t choices, rows;
  RoutingFactors(RuleBuilder &b, Value slots, Value sources) {
    tokens = tokenFactors(b, slots, FactorKind::Replicated);
    choices = lastFactor(b, slots, FactorKind::Replicated);
    rows = b.factor(dimOf(sources, 0), FactorKind::Replicated);
  }
  Dims slots() const { return withLast(tokens, choices); }
};

} // namespace

ShardingRule MoeRouteOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getLogits());
  int64_t experts = lastFactor(b, getLogits(), FactorKind::Replicated);
  int64_t choices = lastFactor(b, getExperts(), FactorKind::Replicated);
  b.rule.operands = {withLast(tokens, experts)};
  b.rule.results = {withLast(tokens, choices), withLast(tokens, choices)};
  return b.rule;
}

ShardingRule MoeRouteGradOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getLogits());
  int64_t experts = lastFactor(b, getLogits(), FactorKind::Replicated);
  int64_t choices = lastFactor(b, getWeights(), FactorKind::Replicated);
  Dims chosen = withLast(tokens, choices);
  b.rule.operands = {withLast(tokens, experts), chosen, chosen, chosen};
  b.rule.results = {withLast(tokens, experts)};
  return b.rule;
}

ShardingRule MoeSortOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> pairs = factorsOfKind(b, getExperts(), FactorKind::Replicated);
  b.rule.operands = {RuleBuilder::oneEach(pairs)};
  b.rule.results = {RuleBuilder::oneEach(pairs),
                    RuleBuilder::oneEach(factorsOfKind(b, getSources(), FactorKind::Replicated)),
                    RuleBuilder::oneEach(factorsOfKind(b, getCounts(), FactorKind::Replicated))};
  return b.rule;
}

ShardingRule MoeDispatchOp::getShardingRule() {
  RuleBuilder b;
  RoutingFactors routing(b, getSlots(), getSources());
  int64_t hidden = lastFactor(b, getInput(), FactorKind::Parallel);
  b.rule.operands = {withLast(routing.tokens, hidden), routing.slots(), Dims{{routing.rows}}};
  if (getWeights())
    b.rule.operands.push_back(routing.slots());
  b.rule.results = {Dims{{routing.rows}, {hidden}}};
  return b.rule;
}

ShardingRule MoeCombineOp::getShardingRule() {
  RuleBuilder b;
  RoutingFactors routing(b, getSlots(), getSources());
  int64_t hidden = b.factor(dimOf(getInput(), 1));
  b.rule.operands = {Dims{{routing.rows}, {hidden}}, routing.slots(), Dims{{routing.rows}}};
  if (getWeights())
    b.rule.operands.push_back(routing.slots());
  b.rule.results = {withLast(routing.tokens, hidden)};
  return b.rule;
}

/// Each row's sum over its hidden dimension, so split hidden leaves it
/// pending.
ShardingRule MoeWeightGradOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getSlots(), FactorKind::Replicated);
  int64_t choices = lastFactor(b, getSlots(), FactorKind::Replicated);
  int64_t rows = b.factor(dimOf(getRows(), 0), FactorKind::Replicated);
  int64_t hidden = b.factor(dimOf(getRows(), 1), FactorKind::Contracting);
  b.rule.operands = {withLast(tokens, hidden), Dims{{rows}, {hidden}}, withLast(tokens, choices)};
  b.rule.results = {withLast(tokens, choices)};
  return b.rule;
}

ShardingRule GroupedMatmulOp::getShardingRule() {
  RuleBuilder b;
  int64_t rows = b.factor(dimOf(getLhs(), 0), FactorKind::Replicated);
  int64_t k = b.factor(dimOf(getLhs(), 1), FactorKind::Contracting);
  int64_t groups = b.factor(dimOf(getRhs(), 0), FactorKind::Replicated);
  int64_t n = b.factor(dimOf(getResult(), 1));
  Dims rhs = getTransposeRhs() ? Dims{{groups}, {n}, {k}} : Dims{{groups}, {k}, {n}};
  b.rule.operands = {Dims{{rows}, {k}}, rhs, Dims{{groups}}};
  b.rule.results = {Dims{{rows}, {n}}};
  return b.rule;
}

/// The rows are contracted group by group; a group's rows are whole on
/// each device, so no sum is left pending.
ShardingRule GroupedWeightGradOp::getShardingRule() {
  RuleBuilder b;
  int64_t rows = b.factor(dimOf(getLhs(), 0), FactorKind::Replicated);
  int64_t k = b.factor(dimOf(getLhs(), 1));
  int64_t n = b.factor(dimOf(getRhs(), 1));
  int64_t groups = b.factor(dimOf(getCounts(), 0), FactorKind::Replicated);
  b.rule.operands = {Dims{{rows}, {k}}, Dims{{rows}, {n}}, Dims{{groups}}};
  b.rule.results = {Dims{{groups}, {k}, {n}}};
  return b.rule;
}

/// The factors of a tfm.moe_experts (or its gradient): the tokens, the
/// experts and their FFN (summed over in each expert's down projection)
/// split; the hidden dimension and the choices stay whole. The experts may
/// split over the axes of the tokens (expert parallelism: a device's block
/// of the tokens goes to the devices of their experts), which the op's
/// partitionItself carries out.
struct ExpertFactors {
  SmallVector<int64_t> tokens;
  int64_t hidden, choices, experts, ffn;
  /// `exchanges`: the all-to-alls of the tokens' rows the op runs under
  /// expert parallelism (2 forward: to the experts and back; 4 in the
  /// gradient: the forward's again and the gradients' two).
  ExpertFactors(RuleBuilder &b, Value input, Value routing, Value w1, int64_t exchanges) {
    tokens = tokenFactors(b, input);
    hidden = lastFactor(b, input, FactorKind::Replicated);
    choices = lastFactor(b, routing, FactorKind::Replicated);
    experts = b.factor(dimOf(w1, 0));
    ffn = b.factor(dimOf(w1, 1), FactorKind::Contracting);
    for (int64_t token : tokens)
      b.rule.sharing.push_back({token, experts});
    // Each exchange moves every routed row: tokens x choices x hidden (of
    // static shapes; a program of dynamic ones is not priced).
    auto type = cast<RankedTensorType>(input.getType());
    auto routingType = cast<RankedTensorType>(routing.getType());
    if (type.hasStaticShape() && routingType.hasStaticShape())
      b.rule.exchanges = {type.getNumElements() * routingType.getShape().back() *
                              std::max<int64_t>(1, type.getElementTypeBitWidth() / 8),
                          exchanges};
  }
  Dims tokensBy(int64_t last) const { return withLast(tokens, last); }
  Dims gateUp() const { return {{experts}, {ffn}, {hidden}}; }
  Dims down() const { return {{experts}, {hidden}, {ffn}}; }
  SmallVector<std::optional<Dims>> operands() const {
    return {tokensBy(hidden), tokensBy(choices), tokensBy(choices), gateUp(), gateUp(), down()};
  }
};

ShardingRule MoeExpertsOp::getShardingRule() {
  RuleBuilder b;
  ExpertFactors f(b, getInput(), getExperts(), getW1(), /*exchanges=*/2);
  b.rule.operands = f.operands();
  b.rule.results = {f.tokensBy(f.hidden)};
  return b.rule;
}

ShardingRule MoeExpertsGradOp::getShardingRule() {
  RuleBuilder b;
  ExpertFactors f(b, getInput(), getExperts(), getW1(), /*exchanges=*/4);
  b.rule.operands = f.operands();
  b.rule.operands.push_back(f.tokensBy(f.hidden));
  b.rule.results = {f.tokensBy(f.hidden), f.tokensBy(f.choices), f.gateUp(), f.gateUp(), f.down()};
  return b.rule;
}

/// Sums over the tokens: a split batch leaves them pending, to be reduced
/// once for the loss. A token's softmax needs its whole row of experts.
ShardingRule MoeRouterStatsOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getLogits(), FactorKind::Contracting);
  int64_t experts = lastFactor(b, getLogits(), FactorKind::Replicated);
  int64_t choices = lastFactor(b, getExperts(), FactorKind::Replicated);
  int64_t rows = b.factor(2, FactorKind::Replicated);
  b.rule.operands = {withLast(tokens, experts), withLast(tokens, choices)};
  b.rule.results = {Dims{{rows}, {experts}}};
  return b.rule;
}

/// A count over the tokens: over a split batch, a sum left pending. The
/// choices past a capacity are counted sequence by sequence, each whole.
ShardingRule MoeExpertCountsOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getExperts(), FactorKind::Contracting);
  if (getCapacity())
    b.rule.factors[tokens.back()].kind = FactorKind::Replicated;
  int64_t choices = lastFactor(b, getExperts(), FactorKind::Replicated);
  int64_t experts = b.factor(getNumExperts(), FactorKind::Replicated);
  b.rule.operands = {withLast(tokens, choices)};
  b.rule.results = {Dims{{experts}}};
  return b.rule;
}

/// Sequence by sequence: the batch splits, each sequence and its choices
/// stay whole (a choice's place depends on every earlier one of its
/// sequence).
ShardingRule MoeCapacityOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getExperts());
  b.rule.factors[tokens.back()].kind = FactorKind::Replicated;
  int64_t choices = lastFactor(b, getExperts(), FactorKind::Replicated);
  Dims dims = withLast(tokens, choices);
  b.rule.operands = {dims, dims};
  b.rule.results = {dims};
  return b.rule;
}

/// Whole on every device, so that every rank that reports it reports the
/// same (a pending sum is all-reduced first).
ShardingRule StepMetricOp::getShardingRule() {
  RuleBuilder b;
  b.rule.operands = {RuleBuilder::oneEach(factorsOfKind(b, getValue(), FactorKind::Replicated))};
  return b.rule;
}

ShardingRule MoeRouterStatsGradOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> tokens = tokenFactors(b, getLogits());
  int64_t experts = lastFactor(b, getLogits(), FactorKind::Replicated);
  int64_t rows = b.factor(2, FactorKind::Replicated);
  b.rule.operands = {withLast(tokens, experts), Dims{{rows}, {experts}}};
  b.rule.results = {withLast(tokens, experts)};
  return b.rule;
}

/// A sum over the experts of a product of the two rows.
ShardingRule MoeBalanceLossOp::getShardingRule() {
  RuleBuilder b;
  int64_t rows = b.factor(2, FactorKind::Replicated);
  int64_t experts = b.factor(dimOf(getStats(), 1), FactorKind::Contracting);
  b.rule.operands = {Dims{{rows}, {experts}}};
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

/// A vocab-parallel block of the table's rows starts at its block offset.
LogicalResult EmbeddingGradOp::partitionLocally(Operation *local, LocalPartition &partition) {
  ArrayRef<StringRef> vocabAxes = partition.resultAxes(0)[0];
  if (vocabAxes.empty())
    return success();
  int64_t rows = cast<RankedTensorType>(local->getResult(0).getType()).getShape()[0];
  local->insertOperands(local->getNumOperands(), partition.blockStart(vocabAxes, rows, 0));
  return success();
}

/// As attention's: queries of a sequence block see keys up to their global
/// position.
LogicalResult AttentionGradOp::partitionLocally(Operation *local, LocalPartition &partition) {
  ArrayRef<StringRef> seqAxes = partition.resultAxes(0)[2];
  if (!getCausal() || seqAxes.empty())
    return success();
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  int64_t localSeq = cast<RankedTensorType>(local->getResult(0).getType()).getShape()[2];
  // Through the accessor: the operand segments (probabilities, offset)
  // follow.
  cast<AttentionGradOp>(local).getQueryOffsetMutable().assign(
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

bool ShardingRule::sumsOver(unsigned r, int64_t f) const {
  return factors[f].kind == FactorKind::Contracting &&
         llvm::none_of(results[r],
                       [&](const SmallVector<int64_t> &dim) { return llvm::is_contained(dim, f); });
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

//===----------------------------------------------------------------------===//
// Ops that partition themselves
//===----------------------------------------------------------------------===//

namespace {

/// A sharding of `dims` (with `parts`), no pending sums.
ShardingAttr shardingOf(MLIRContext *context, ArrayRef<SmallVector<StringRef>> dims,
                        ArrayRef<int64_t> parts = {}) {
  return ShardingAttr::get(context, dims, /*pending=*/{}, /*open=*/{}, /*priority=*/0, parts);
}

/// The axes of each dimension of `s`.
SmallVector<SmallVector<StringRef>> dimsOf(ShardingAttr s) {
  SmallVector<SmallVector<StringRef>> dims;
  for (int64_t d = 0; d < s.getRank(); ++d)
    dims.push_back(s.axesOf(d));
  return dims;
}

/// The local logits of a cross entropy as they come (tokens and vocabulary
/// split, pending sums taken), its labels split as the logits' tokens, and
/// the sharding of each.
struct VocabParallelInputs {
  Value logits, labels;
  ShardingAttr logitsSharding, perToken;
};

FailureOr<VocabParallelInputs> vocabParallelInputs(OpPartition &partition, Value logits,
                                                   Value labels) {
  MLIRContext *context = logits.getContext();
  ShardingAttr have = partition.shardingOf(logits);
  SmallVector<SmallVector<StringRef>> dims = dimsOf(have);
  VocabParallelInputs in;
  in.logitsSharding = shardingOf(context, dims, have.getParts());
  in.perToken = shardingOf(context, ArrayRef(dims).drop_back());
  FailureOr<Value> x = partition.localAs(logits, in.logitsSharding);
  FailureOr<Value> y = partition.localAs(labels, in.perToken);
  if (failed(x) || failed(y))
    return failure();
  in.logits = *x;
  in.labels = *y;
  return in;
}

/// Per token of the local logits `x` (a block of columns of a vocabulary
/// of `vocab` split over `vocabAxes`): the maximum over the whole
/// vocabulary and the summed tfm.cross_entropy_parts (the softmax's
/// denominator, the label's logit), by one max and one sum all-reduce over
/// the vocabulary axes; `from` is the block's first column (null when the
/// vocabulary is whole).
struct VocabStats {
  Value max, parts, from;
};

VocabStats vocabStats(OpPartition &partition, Location loc, Value x, Value labels,
                      ArrayRef<StringRef> vocabAxes, int64_t vocab) {
  OpBuilder &b = partition.builder();
  auto local = cast<RankedTensorType>(x.getType());
  Type t = local.getElementType();
  SmallVector<int64_t> tokens(local.getShape().drop_back());
  VocabStats stats;
  if (!vocabAxes.empty())
    stats.from = partition.blockStart(vocabAxes, local.getShape().back(), 0);
  stats.max = RowMaxOp::create(b, loc, RankedTensorType::get(tokens, t), x, stats.from,
                               stats.from ? b.getI64IntegerAttr(vocab) : IntegerAttr());
  if (!vocabAxes.empty())
    stats.max = partition.maxOver(stats.max, vocabAxes);
  SmallVector<int64_t> partsShape = tokens;
  partsShape.push_back(2);
  stats.parts = CrossEntropyPartsOp::create(b, loc, RankedTensorType::get(partsShape, t), x, labels,
                                            stats.max, b.getI64IntegerAttr(vocab), stats.from);
  if (!vocabAxes.empty())
    stats.parts = partition.sumOver(stats.parts, vocabAxes);
  return stats;
}

/// What tfm.cross_entropy's partition keeps for its gradient's: the local
/// logits and labels the statistics are of, then the statistics.
struct KeptVocabStats {
  Value logits, labels;
  VocabStats stats;

  SmallVector<Value> values() const { return {logits, labels, stats.max, stats.parts, stats.from}; }
  static std::optional<KeptVocabStats> of(ArrayRef<Value> kept) {
    if (kept.size() != 5)
      return std::nullopt;
    return KeptVocabStats{kept[0], kept[1], {kept[2], kept[3], kept[4]}};
  }
};

} // namespace

/// Megatron's vocab-parallel cross entropy: the logits stay as they come
/// (tokens and vocabulary split). Each device takes its block's row max,
/// all-reduced with max over the vocabulary axes, then its block's exp sum
/// and label logit, one all-reduce of [tokens, 2]; the per-token parts,
/// gathered over the token axes (8 bytes a token), give the mean. The
/// logits are never gathered. The max and parts are kept for the
/// gradient (tfm.cross_entropy_grad).
std::optional<LogicalResult> CrossEntropyOp::partitionItself(OpPartition &partition) {
  MLIRContext *context = getContext();
  Location loc = getLoc();
  FailureOr<VocabParallelInputs> in = vocabParallelInputs(partition, getLogits(), getLabels());
  if (failed(in))
    return failure();
  ArrayRef<int64_t> shape = getLogits().getType().getShape();
  SmallVector<SmallVector<StringRef>> logitsDims = dimsOf(in->logitsSharding);
  VocabStats stats =
      vocabStats(partition, loc, in->logits, in->labels, logitsDims.back(), shape.back());
  partition.keep(KeptVocabStats{in->logits, in->labels, stats}.values());

  SmallVector<int64_t> globalParts(shape.drop_back());
  globalParts.push_back(2);
  SmallVector<SmallVector<StringRef>> partsDims = dimsOf(in->perToken);
  partsDims.emplace_back();
  Type element = getLogits().getType().getElementType();
  FailureOr<Value> allParts = partition.reshard(
      RankedTensorType::get(globalParts, element), stats.parts, shardingOf(context, partsDims),
      ShardingAttr::replicated(context, globalParts.size()));
  FailureOr<Value> allLabels = partition.localAs(
      getLabels(), ShardingAttr::replicated(context, getLabels().getType().getRank()));
  if (failed(allParts) || failed(allLabels))
    return failure();
  Value loss = CrossEntropyCombineOp::create(partition.builder(), loc, getType(), *allParts,
                                             *allLabels, getIgnoreIndexAttr());
  return partition.setResult(getOperation()->getResult(0), loss,
                             ShardingAttr::replicated(context, 0));
}

/// The statistics the partition of a tfm.cross_entropy of `grad`'s logits
/// and labels, earlier in its block, kept for local logits `logits` and
/// labels `labels`.
static std::optional<VocabStats> forwardStats(CrossEntropyGradOp grad, OpPartition &partition,
                                              Value logits, Value labels) {
  for (Operation *user : grad.getLogits().getUsers()) {
    auto forward = dyn_cast<CrossEntropyOp>(user);
    if (!forward || forward.getLabels() != grad.getLabels())
      continue;
    std::optional<KeptVocabStats> kept = KeptVocabStats::of(partition.keptBy(forward));
    if (kept && kept->logits == logits && kept->labels == labels)
      return kept->stats;
  }
  return std::nullopt;
}

/// The backward of the vocab-parallel cross entropy: each device computes
/// its block of the logits' gradient from the whole vocabulary's max and
/// exp sum, never gathering the logits; columns past the vocabulary get
/// zeros. The max and sum are the forward's where its tfm.cross_entropy
/// comes before in the block (the logits read twice less, and on a split
/// vocabulary two all-reduces fewer); found again otherwise.
std::optional<LogicalResult> CrossEntropyGradOp::partitionItself(OpPartition &partition) {
  MLIRContext *context = getContext();
  Location loc = getLoc();
  OpBuilder &b = partition.builder();
  FailureOr<VocabParallelInputs> in = vocabParallelInputs(partition, getLogits(), getLabels());
  if (failed(in))
    return failure();
  ShardingAttr scalar = ShardingAttr::replicated(context, 0);
  FailureOr<Value> grad = partition.localAs(getGrad(), scalar);
  FailureOr<Value> count = partition.localAs(getCount(), scalar);
  if (failed(grad) || failed(count))
    return failure();
  SmallVector<StringRef> vocabAxes = in->logitsSharding.axesOf(in->logitsSharding.getRank() - 1);
  int64_t vocab = getLogits().getType().getShape().back();
  std::optional<VocabStats> stats = forwardStats(*this, partition, in->logits, in->labels);
  if (!stats && !vocabAxes.empty())
    stats = vocabStats(partition, loc, in->logits, in->labels, vocabAxes, vocab);
  Value local;
  if (!stats)
    local = CrossEntropyGradOp::create(b, loc, in->logits.getType(), in->logits, in->labels, *grad,
                                       *count, Value(), Value(), Value(), IntegerAttr(),
                                       getIgnoreIndexAttr());
  else
    local = CrossEntropyGradOp::create(b, loc, in->logits.getType(), in->logits, in->labels, *grad,
                                       *count, stats->max, stats->parts, stats->from,
                                       stats->from ? b.getI64IntegerAttr(vocab) : IntegerAttr(),
                                       getIgnoreIndexAttr());
  return partition.setResult(getOperation()->getResult(0), local, in->logitsSharding);
}

//===----------------------------------------------------------------------===//
// Expert parallelism
//===----------------------------------------------------------------------===//

namespace {

/// A tfm.moe_experts (or its gradient) on this device: its operands'
/// local values, the axes that split its tokens, its experts (the
/// expert-parallel group) and their FFN.
struct LocalExperts {
  ExpertOperands in;
  Value resultGrad;
  SmallVector<SmallVector<StringRef>> tokenDims;
  SmallVector<StringRef> expertAxes, ffnAxes;
  int64_t members = 1;
};

/// The local operands of `op`, the experts split as `w1` is and the
/// tokens as `input`'s are, over the expert axes too: each member of an
/// expert-parallel group routes its own tokens. The hidden dimension and
/// the routing's choices are whole.
FailureOr<LocalExperts> localExperts(OpPartition &partition, Operation *op,
                                     const ExpertOperands &global, Value resultGrad) {
  MLIRContext *context = op->getContext();
  LocalExperts local;
  ShardingAttr weights = partition.shardingOf(global.w1);
  local.expertAxes = weights.axesOf(0);
  local.ffnAxes = weights.axesOf(1);
  local.tokenDims = dimsOf(partition.shardingOf(global.input));
  local.tokenDims.pop_back();
  for (StringRef axis : local.expertAxes)
    if (llvm::none_of(local.tokenDims,
                      [&](const auto &axes) { return llvm::is_contained(axes, axis); }))
      local.tokenDims.front().push_back(axis);
  if (!local.expertAxes.empty()) {
    MeshAttr mesh = meshOf(op->getParentOfType<ModuleOp>(), "expert parallelism");
    if (!mesh)
      return failure();
    for (StringRef axis : local.expertAxes)
      local.members *= mesh.axisSize(axis);
    int64_t experts = global.numExperts();
    if (experts % local.members != 0) {
      InFlightDiagnostic diag = op->emitOpError() << "splits its " << experts << " experts over";
      for (StringRef axis : local.expertAxes)
        diag << " '" << axis << "'";
      return diag << " (" << local.members
                  << " devices), which must divide them: each device holds whole experts";
    }
  }
  auto tokensBy = [&](ArrayRef<StringRef> last) {
    SmallVector<SmallVector<StringRef>> dims = local.tokenDims;
    dims.emplace_back(last);
    return shardingOf(context, dims);
  };
  ShardingAttr tokens = tokensBy({});
  ShardingAttr gateUp = shardingOf(context, {local.expertAxes, local.ffnAxes, {}});
  ShardingAttr down = shardingOf(context, {local.expertAxes, {}, local.ffnAxes});
  SmallVector<std::pair<Value *, std::pair<Value, ShardingAttr>>> wanted = {
      {&local.in.input, {global.input, tokens}},     {&local.in.experts, {global.experts, tokens}},
      {&local.in.weights, {global.weights, tokens}}, {&local.in.w1, {global.w1, gateUp}},
      {&local.in.w3, {global.w3, gateUp}},           {&local.in.w2, {global.w2, down}}};
  if (resultGrad)
    wanted.push_back({&local.resultGrad, {resultGrad, tokens}});
  for (auto &[into, from] : wanted) {
    FailureOr<Value> v = partition.localAs(from.first, from.second);
    if (failed(v))
      return failure();
    *into = *v;
  }
  return local;
}

/// The exchange of `local`'s expert-parallel group, or null without one.
std::optional<ExpertExchange> exchangeOf(OpPartition &partition, const LocalExperts &local) {
  if (local.expertAxes.empty())
    return std::nullopt;
  OpBuilder &b = partition.builder();
  return ExpertExchange{FlatSymbolRefAttr::get(b.getContext(), pmlir::kGridName),
                        b.getDenseI16ArrayAttr(partition.gridAxesOf(local.expertAxes)),
                        local.members};
}

} // namespace

/// Expert parallelism, as Megatron's all-to-all token dispatcher: each
/// member of the group over the experts' axes sorts its own tokens by
/// expert, sends each member the rows of its experts, runs its experts'
/// grouped GEMMs and sends the rows back. The result is the member's
/// tokens, pending over the FFN's axes where tensor parallelism splits each
/// expert. Experts split over no axis compute as the rule says.
std::optional<LogicalResult> MoeExpertsOp::partitionItself(OpPartition &partition) {
  if (partition.shardingOf(getW1()).axesOf(0).empty())
    return std::nullopt;
  auto global = ExpertOperands::of(*this);
  FailureOr<LocalExperts> local = localExperts(partition, *this, global, Value());
  if (failed(local))
    return failure();
  std::optional<ExpertExchange> exchange = exchangeOf(partition, *local);
  Value y = buildExperts(partition.builder(), getLoc(), local->in, global.numExperts(), &*exchange);
  SmallVector<SmallVector<StringRef>> dims = local->tokenDims;
  dims.emplace_back();
  return partition.setResult(getOperation()->getResult(0), y,
                             ShardingAttr::get(getContext(), dims, local->ffnAxes, {}, 0, {}));
}

/// The gradient under any split: the token gradients pending over the
/// FFN's axes, the expert weights' over the token axes outside the
/// expert-parallel group (each group sees its own tokens).
std::optional<LogicalResult> MoeExpertsGradOp::partitionItself(OpPartition &partition) {
  MLIRContext *context = getContext();
  auto global = ExpertOperands::of(*this);
  FailureOr<LocalExperts> local = localExperts(partition, *this, global, getResultGrad());
  if (failed(local))
    return failure();
  std::optional<ExpertExchange> exchange = exchangeOf(partition, *local);
  FailureOr<SmallVector<Value>> grads =
      buildExpertsGradients(partition.builder(), getLoc(), local->in, local->resultGrad,
                            global.numExperts(), exchange ? &*exchange : nullptr);
  if (failed(grads))
    return failure();
  SmallVector<StringRef> tokenAxes;
  for (const auto &axes : local->tokenDims)
    for (StringRef axis : axes)
      if (!llvm::is_contained(local->expertAxes, axis))
        tokenAxes.push_back(axis);
  auto tokensBy = [&](ArrayRef<StringRef> last) {
    SmallVector<SmallVector<StringRef>> dims = local->tokenDims;
    dims.emplace_back(last);
    return dims;
  };
  SmallVector<ShardingAttr> computed = {
      ShardingAttr::get(context, tokensBy({}), local->ffnAxes, {}, 0, {}),
      ShardingAttr::get(context, tokensBy({}), local->ffnAxes, {}, 0, {}),
      ShardingAttr::get(context, {local->expertAxes, local->ffnAxes, {}}, tokenAxes, {}, 0, {}),
      ShardingAttr::get(context, {local->expertAxes, local->ffnAxes, {}}, tokenAxes, {}, 0, {}),
      ShardingAttr::get(context, {local->expertAxes, {}, local->ffnAxes}, tokenAxes, {}, 0, {})};
  for (auto [r, local, sharding] : llvm::zip(getOperation()->getResults(), *grads, computed))
    if (failed(partition.setResult(cast<OpResult>(r), local, sharding)))
      return failure();
  return success();
}
