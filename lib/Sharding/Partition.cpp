//===- Partition.cpp - Per-rank SPMD program from a sharded global one ----===//
//
// Part of pmlir.
//
// Input: a global program whose values all have shardings (after
// pmlir-sharding-propagation). Output: the program one rank runs, on local
// shapes, with upstream `shard` collectives on a `shard.grid` made from
// tfm.mesh: its axes, each cut into the parts (sub-axes) the program uses
// (pmlir/Sharding/Grid.h).
//
// Each op is partitioned from its sharding rule, unless it partitions itself
// (ShardingRuleOpInterface::partitionItself: the vocab-parallel cross
// entropy). The mesh axes of every factor come from the op's result
// shardings (contracting factors: from its operands, on the axes the result
// is pending over); a factor whose axes a
// dimension cannot hold contiguously (a minor factor split under an unsplit
// major one) is computed unsplit. The operands are resharded to what the
// factors say, the op runs on local shapes, and its result is resharded to
// its annotated sharding if the op computed another one (a replicated fused
// weight's split parts: a local slice). Reshards are planned and emitted by
// the sharding engine (pmlir/Sharding/Reshard.h): pending sums become
// reduce_scatter where the target splits the reduced axes along a dimension,
// all_reduce otherwise; an axis moving from the minor end of one dimension
// to another is an all_to_all; axes leaving a dimension are all_gathered,
// axes joining one are all_sliced (no communication).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Partition.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Reshard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "pmlir-partition"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;

namespace {

using pmlir::kGridName;

/// A partitioned value: the local tensor and the sharding it holds.
struct Local {
  Value value;
  Sharding sharding;
};

struct Partitioner {
  Partitioner(Grid &grid, OpBuilder &b) : mesh(grid.getMesh()), grid(grid), b(b) {}

  MeshAttr mesh;
  Grid &grid;
  OpBuilder &b;
  /// Global value -> its local value as computed.
  DenseMap<Value, Local> locals;
  /// Reshards already made in a block: (global value, target, block).
  std::map<std::tuple<const void *, const void *, Block *>, Value> reshards;
  /// Local values whose padding may hold other values than zeros (an op
  /// that maps zeros to non-zeros ran on padded shards): a padded dimension
  /// may be contracted only where one operand's padding is zeros.
  DenseSet<Value> dirtyPadding;
  /// Local values an op's partition kept for later ops of its block
  /// (OpPartition::keep), by the global op.
  DenseMap<Operation *, SmallVector<Value>> kept;

  /// Whether `s` pads some dimension of `global`.
  bool hasPadding(RankedTensorType global, const Sharding &s) const {
    return llvm::any_of(llvm::enumerate(s.dims),
                        [&](auto d) { return padded(global, d.index(), d.value()); });
  }

  RankedTensorType localType(RankedTensorType global, const Sharding &s) const {
    return pmlir::sharding::localType(mesh, global, s);
  }
  RankedTensorType localType(Value global, const Sharding &s) const {
    return localType(cast<RankedTensorType>(global.getType()), s);
  }

  /// Whether `axes` split dimension `d` of `global` unevenly: its shards
  /// are padded.
  bool padded(RankedTensorType global, int64_t d, ArrayRef<StringRef> axes) const {
    return global.getShape()[d] % devicesOf(mesh, axes) != 0;
  }

  Value blockStart(Location loc, ArrayRef<StringRef> axes, int64_t localSize, int64_t base) {
    return pmlir::sharding::emitBlockStart(b, loc, grid, axes, localSize, base);
  }

  /// Realizes the change of sharding `from` -> `to` of the local value `v`
  /// of a global value of type `global` with collectives.
  FailureOr<Value> reshard(RankedTensorType global, Value v, const Sharding &from,
                           const Sharding &to, Operation *user) {
    LLVM_DEBUG(llvm::dbgs() << "reshard for " << user->getName() << " at " << user->getLoc() << ": "
                            << from.toAttr(b.getContext()) << " -> " << to.toAttr(b.getContext())
                            << "\n");
    std::string why;
    std::optional<ReshardPlan> plan = planReshard(mesh, global, from, to, why);
    if (!plan) {
      InFlightDiagnostic diag = user->emitOpError()
                                << "cannot reshard an operand from " << from.toAttr(b.getContext())
                                << " to " << to.toAttr(b.getContext());
      if (!why.empty())
        diag << ": " << why;
      return diag;
    }
    Value resharded = emitReshard(b, user->getLoc(), grid, *plan, v);
    assert(resharded.getType() == localType(global, to) && "reshard lost the shape");
    if (dirtyPadding.contains(v) && hasPadding(global, to))
      dirtyPadding.insert(resharded);
    return resharded;
  }

  /// The local value of `global` with sharding `want`, resharded once per
  /// block.
  FailureOr<Value> get(Value global, const Sharding &want, Operation *user) {
    const Local &have = locals.at(global);
    if (have.sharding == want)
      return have.value;
    auto key =
        std::make_tuple(global.getAsOpaquePointer(),
                        want.toAttr(b.getContext()).getAsOpaquePointer(), b.getInsertionBlock());
    if (auto it = reshards.find(key); it != reshards.end())
      return it->second;
    FailureOr<Value> v =
        reshard(cast<RankedTensorType>(global.getType()), have.value, have.sharding, want, user);
    if (succeeded(v))
      reshards[key] = *v;
    return v;
  }

  Sharding resultSharding(Operation *op, unsigned i) {
    auto shardings = op->getAttrOfType<ArrayAttr>(kResultShardingsAttr);
    return Sharding::of(cast<ShardingAttr>(shardings[i]));
  }

  LogicalResult partition(Operation *op);
  /// A tfm.layer or pipe.fragment: the body partitioned in place.
  LogicalResult partitionInlineBody(Operation *op);
  LogicalResult partitionRuled(Operation *op, const ShardingRule &rule);
};

namespace {

/// What partition offers an op's local rewrite: the op's contracted axes,
/// its results' axes as computed, and block offsets computed before it.
class LocalRewrite : public LocalPartition {
public:
  LocalRewrite(Partitioner &partitioner, Operation *local, ArrayRef<StringRef> contracted,
               ArrayRef<Sharding> computed, const IRMapping &mapping)
      : partitioner(partitioner), local(local), contracted(contracted), computed(computed),
        mapping(mapping) {}

  ArrayRef<StringRef> contractedAxes() const override { return contracted; }
  ArrayRef<SmallVector<StringRef>> resultAxes(unsigned i) const override {
    return computed[i].dims;
  }
  Value localOf(Value global) const override { return mapping.lookup(global); }
  Value blockStart(ArrayRef<StringRef> axes, int64_t localSize, int64_t base) override {
    OpBuilder::InsertionGuard guard(partitioner.b);
    partitioner.b.setInsertionPoint(local);
    return partitioner.blockStart(local->getLoc(), axes, localSize, base);
  }

private:
  Partitioner &partitioner;
  Operation *local;
  ArrayRef<StringRef> contracted;
  ArrayRef<Sharding> computed;
  const IRMapping &mapping;
};

/// What partition offers an op that partitions itself.
class SelfPartition : public OpPartition {
public:
  SelfPartition(Partitioner &partitioner, Operation *op) : partitioner(partitioner), op(op) {}

  OpBuilder &builder() override { return partitioner.b; }
  ShardingAttr shardingOf(Value global) const override {
    return partitioner.locals.at(global).sharding.toAttr(op->getContext());
  }
  FailureOr<Value> localAs(Value global, ShardingAttr want) override {
    return partitioner.get(global, Sharding::of(want), op);
  }
  FailureOr<Value> reshard(RankedTensorType global, Value local, ShardingAttr from,
                           ShardingAttr to) override {
    return partitioner.reshard(global, local, Sharding::of(from), Sharding::of(to), op);
  }
  Value blockStart(ArrayRef<StringRef> axes, int64_t localSize, int64_t base) override {
    return partitioner.blockStart(op->getLoc(), axes, localSize, base);
  }
  Value sumOver(Value local, ArrayRef<StringRef> axes) override {
    return allReduce(local, axes, shard::ReductionKind::Sum);
  }
  Value maxOver(Value local, ArrayRef<StringRef> axes) override {
    return allReduce(local, axes, shard::ReductionKind::Max);
  }
  SmallVector<int16_t> gridAxesOf(ArrayRef<StringRef> axes) override {
    return partitioner.grid.axesOf(axes);
  }
  LogicalResult setResult(OpResult result, Value local, ShardingAttr computed) override {
    Sharding have = Sharding::of(computed);
    partitioner.locals[result] = {local, have};
    Sharding want = partitioner.resultSharding(op, result.getResultNumber());
    if (want == have)
      return success();
    FailureOr<Value> v =
        partitioner.reshard(cast<RankedTensorType>(result.getType()), local, have, want, op);
    if (failed(v))
      return failure();
    partitioner.locals[result] = {*v, want};
    return success();
  }

  void keep(ValueRange values) override { llvm::append_range(partitioner.kept[op], values); }
  ArrayRef<Value> keptBy(Operation *earlier) const override {
    if (earlier->getBlock() != op->getBlock() || !earlier->isBeforeInBlock(op))
      return {};
    auto it = partitioner.kept.find(earlier);
    return it == partitioner.kept.end() ? ArrayRef<Value>() : ArrayRef<Value>(it->second);
  }

private:
  Value allReduce(Value local, ArrayRef<StringRef> axes, shard::ReductionKind kind) {
    return shard::AllReduceOp::create(partitioner.b, op->getLoc(), local.getType(), kGridName,
                                      partitioner.grid.axesOf(axes), local, kind);
  }

  Partitioner &partitioner;
  Operation *op;
};

} // namespace

LogicalResult Partitioner::partitionInlineBody(Operation *op) {
  Operation *local = b.cloneWithoutRegions(*op);
  local->removeAttr(kResultShardingsAttr);
  OpBuilder::InsertionGuard guard(b);
  b.createBlock(&local->getRegion(0));
  Block &old = op->getRegion(0).front();
  for (Operation &inner : old.without_terminator())
    if (failed(partition(&inner)))
      return failure();
  SmallVector<Value> yielded;
  for (auto [value, result] : llvm::zip(old.getTerminator()->getOperands(), op->getResults())) {
    FailureOr<Value> v = get(value, resultSharding(op, result.getResultNumber()), op);
    if (failed(v))
      return failure();
    yielded.push_back(*v);
  }
  Operation *terminator = b.clone(*old.getTerminator());
  terminator->setOperands(yielded);
  for (auto [result, v] : llvm::zip(local->getResults(), yielded)) {
    result.setType(v.getType());
    if (dirtyPadding.contains(v))
      dirtyPadding.insert(result);
    locals[op->getResult(result.getResultNumber())] = {
        result, resultSharding(op, result.getResultNumber())};
  }
  return success();
}

LogicalResult Partitioner::partitionRuled(Operation *op, const ShardingRule &opRule) {
  SmallVector<Sharding> results;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    results.push_back(resultSharding(op, i));
  // Parted tensors split the factor of their parted dimensions.
  SmallVector<const Sharding *> shardingsOf;
  for (Value operand : op->getOperands().take_front(opRule.operands.size())) {
    auto it = locals.find(operand);
    shardingsOf.push_back(it == locals.end() ? nullptr : &it->second.sharding);
  }
  for (const Sharding &s : results)
    shardingsOf.push_back(&s);
  ShardingRule rule = refineForParts(opRule, shardingsOf);
  size_t numFactors = rule.factors.size();

  // Factor axes: parallel factors from the results, contracting ones from
  // the operands, where the result is pending over them. Where results
  // split a factor further than others (a ZeRO update's new state against
  // its whole parameter), the op runs on the finer blocks and the coarser
  // results are gathered.
  SmallVector<Axes> axes(numFactors);
  for (auto [r, dims] : llvm::enumerate(rule.results)) {
    SmallVector<Axes> perFactor(numFactors);
    for (auto [d, factors] : llvm::enumerate(dims))
      factorAxes(factors, results[r].dims[d], rule, mesh, perFactor, results[r].partsOf(d));
    for (size_t f = 0; f < numFactors; ++f)
      if (axes[f].empty() ||
          (perFactor[f].size() > axes[f].size() &&
           ArrayRef(perFactor[f]).take_front(axes[f].size()) == ArrayRef(axes[f])))
        axes[f] = perFactor[f];
  }
  Axes resultPending = results.empty() ? Axes{} : results.front().pending;
  for (size_t f = 0; f < numFactors; ++f) {
    if (rule.factors[f].kind != FactorKind::Contracting)
      continue;
    for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operands)) {
      if (!dims || !axes[f].empty())
        continue;
      SmallVector<Axes> perFactor(numFactors);
      for (auto [d, factors] : llvm::enumerate(*dims))
        factorAxes(factors, locals.at(operand).sharding.dims[d], rule, mesh, perFactor,
                   locals.at(operand).sharding.partsOf(d));
      if (llvm::all_of(perFactor[f],
                       [&](StringRef a) { return llvm::is_contained(resultPending, a); }))
        axes[f] = perFactor[f];
    }
  }
  for (size_t f = 0; f < numFactors; ++f)
    if (rule.factors[f].kind == FactorKind::Replicated)
      axes[f].clear();
  // A factor split under an unsplit major factor of some dimension is not a
  // contiguous block there, unless every factor above it is unsplit (then
  // they are parts): compute it unsplit.
  auto allDims = [&]() {
    SmallVector<ArrayRef<SmallVector<int64_t>>> all;
    for (const auto &dims : rule.operands)
      if (dims)
        all.push_back(*dims);
    for (const auto &dims : rule.results)
      all.push_back(dims);
    return all;
  };
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (ArrayRef<SmallVector<int64_t>> dims : allDims())
      for (const SmallVector<int64_t> &factors : dims) {
        bool splitAbove = false;
        for (size_t i = 1; i < factors.size(); ++i) {
          splitAbove |= !axes[factors[i - 1]].empty();
          if (splitAbove &&
              devicesOf(mesh, axes[factors[i - 1]]) != rule.factors[factors[i - 1]].size &&
              !axes[factors[i]].empty()) {
            axes[factors[i]].clear();
            dropped = true;
          }
        }
      }
  }
  auto shardingOf = [&](ArrayRef<SmallVector<int64_t>> dims) {
    Sharding s;
    for (const SmallVector<int64_t> &factors : dims) {
      auto [dimAxes, parts] = pmlir::sharding::dimAxes(factors, axes, rule, mesh);
      s.dims.push_back(dimAxes);
      s.setParts(s.dims.size() - 1, parts);
    }
    return s;
  };

  // Pending sums that pass through the op: on an additive op every operand
  // keeps them; on a linear one only the first operand pending on them.
  Axes contracted;
  for (size_t f = 0; f < numFactors; ++f)
    if (rule.factors[f].kind == FactorKind::Contracting)
      llvm::append_range(contracted, axes[f]);
  Axes passed;
  for (StringRef a : resultPending)
    if (!llvm::is_contained(contracted, a))
      passed.push_back(a);

  IRMapping mapping;
  bool passedTaken = false;
  for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operands)) {
    if (!dims) {
      mapping.map(operand, locals.at(operand).value);
      continue;
    }
    Sharding want = shardingOf(*dims);
    const Sharding &have = locals.at(operand).sharding;
    bool keepsPending = false;
    if (!passed.empty() && rule.pending == PendingRule::Additive)
      keepsPending = true;
    else if (!passed.empty() && rule.pending == PendingRule::LinearInOne && !passedTaken &&
             llvm::all_of(passed, [&](StringRef a) { return llvm::is_contained(have.pending, a); }))
      keepsPending = passedTaken = true;
    if (keepsPending)
      want.pending = passed;
    FailureOr<Value> v = get(operand, want, op);
    if (failed(v))
      return failure();
    mapping.map(operand, *v);
  }

  // Padding holds zeros in the arguments and after a pad; a padded
  // contracting factor needs zeros in the padding of one of its operands.
  for (size_t f = 0; f < numFactors; ++f) {
    if (rule.factors[f].kind != FactorKind::Contracting ||
        rule.factors[f].size % devicesOf(mesh, axes[f]) == 0)
      continue;
    bool zeros = false;
    for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operands))
      if (dims && llvm::any_of(*dims, [&](const auto &fs) { return llvm::is_contained(fs, f); }))
        zeros |= !dirtyPadding.contains(mapping.lookup(operand));
    if (!zeros)
      return op->emitOpError() << "contracts a dimension of size " << rule.factors[f].size
                               << " split unevenly over " << devicesOf(mesh, axes[f])
                               << " devices, but no operand's padding is known to be zeros";
  }
  // Ops that map zeros to zeros keep zero padding zeros.
  bool keepsZeros = op->hasTrait<pmlir::tfm::OpTrait::KeepsZeroPadding>() &&
                    llvm::none_of(op->getOperands(), [&](Value operand) {
                      return dirtyPadding.contains(mapping.lookup(operand));
                    });

  // The op on local shapes.
  Operation *local = b.clone(*op, mapping);
  local->removeAttr(kResultShardingsAttr);
  SmallVector<Sharding> computed;
  for (auto [i, dims] : llvm::enumerate(rule.results)) {
    Sharding s = shardingOf(dims);
    for (size_t f = 0; f < numFactors; ++f)
      if (rule.sumsOver(i, f))
        llvm::append_range(s.pending, axes[f]);
    llvm::append_range(s.pending, passed);
    local->getResult(i).setType(localType(op->getResult(i), s));
    computed.push_back(s);
  }
  // What the op needs beyond local shapes (block offsets, local counts).
  if (auto ruled = dyn_cast<ShardingRuleOpInterface>(op)) {
    LocalRewrite rewrite(*this, local, contracted, computed, mapping);
    if (failed(ruled.partitionLocally(local, rewrite)))
      return failure();
  }

  for (auto [i, s] : llvm::enumerate(computed)) {
    Value global = op->getResult(i);
    auto globalType = cast<RankedTensorType>(global.getType());
    if (!keepsZeros && hasPadding(globalType, s))
      dirtyPadding.insert(local->getResult(i));
    locals[global] = {local->getResult(i), s};
    if (s != results[i]) {
      FailureOr<Value> v = reshard(globalType, local->getResult(i), s, results[i], op);
      if (failed(v))
        return failure();
      locals[global] = {*v, results[i]};
    }
  }
  return success();
}

LogicalResult Partitioner::partition(Operation *op) {
  if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
    Sharding want = Sharding::of(constraint.getSharding());
    FailureOr<Value> v = get(constraint.getInput(), want, op);
    if (failed(v))
      return failure();
    locals[constraint.getResult()] = {*v, want};
    return success();
  }
  if (op->getNumResults() != 0) {
    auto shardings = op->getAttrOfType<ArrayAttr>(kResultShardingsAttr);
    if (!shardings) {
      // Propagation annotates the tfm ops and the bodies it partitions in
      // place (tfm.layer, pipe.fragment): for any other op, running it
      // again would not help.
      if (!isa<TfmDialect>(op->getDialect()) && !op->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
        return op->emitOpError()
               << "is no tfm op, so pmlir-sharding-propagation gives it no tfm.shardings and "
                  "partition cannot place it on the mesh";
      return op->emitOpError() << "has no tfm.shardings; run pmlir-sharding-propagation first";
    }
    if (shardings.size() != op->getNumResults())
      return op->emitOpError() << "has " << shardings.size() << " tfm.shardings for "
                               << op->getNumResults() << " results";
    for (auto [attr, result] : llvm::zip(shardings, op->getResults())) {
      auto sharding = dyn_cast<ShardingAttr>(attr);
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!sharding || !type || sharding.getRank() != type.getRank())
        return op->emitOpError() << "has tfm.shardings entry " << attr << " for a result of type "
                                 << result.getType();
      for (int64_t d = 0; d < type.getRank(); ++d) {
        Axes axes = sharding.axesOf(d);
        for (StringRef a : axes)
          if (!mesh.subAxis(a))
            return op->emitOpError() << "has tfm.shardings entry " << attr << " naming mesh axis '"
                                     << a << "', which the mesh " << mesh << " does not have";
        if (type.getShape()[d] < devicesOf(mesh, axes))
          return op->emitOpError()
                 << "has tfm.shardings entry " << attr << " splitting dimension " << d << " of "
                 << type << " over " << devicesOf(mesh, axes) << " devices, more than its size";
      }
    }
  }
  if (op->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
    return partitionInlineBody(op);
  if (auto ruled = dyn_cast<ShardingRuleOpInterface>(op)) {
    SelfPartition self(*this, op);
    if (std::optional<LogicalResult> done = ruled.partitionItself(self))
      return *done;
  }
  std::optional<ShardingRule> rule = getShardingRule(op);
  if (!rule)
    return op->emitOpError() << "has no sharding rule, so it cannot be partitioned";
  return partitionRuled(op, *rule);
}

/// The functions of a module partitioned on its grid.
struct ModulePartitioner {
  LogicalResult run(ModuleOp module) {
    LLVM_DEBUG(llvm::dbgs() << "partitioning " << module->getName() << "\n");
    MeshAttr mesh = meshOf(module, "partitioning");
    if (!mesh)
      return failure();
    if (auto axis = module->getAttrOfType<StringAttr>(kHeadTailAxisAttr))
      headTailAxis = axis.getValue();
    // The grid holds every part the shardings name. A reshard may still ask
    // for a part none names (an axis shared among an op's factors): then the
    // program is partitioned again from a copy, on a grid cut for it too.
    std::vector<std::string> parts = Grid::subAxesNamedIn(module, mesh);
    OwningOpRef<ModuleOp> original = module.clone();
    for (int attempt = 0;; ++attempt) {
      std::optional<Grid> grid = gridFor(module, mesh, parts);
      if (!grid)
        return failure();
      for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
        if (!func.isExternal() && failed(partition(func, *grid)))
          return failure();
      if (grid->uncut().empty())
        return success();
      if (attempt == 1)
        return module.emitError() << "partitioning still needs the sub-axis '"
                                  << grid->uncut().front() << "' on a grid cut for it";
      LLVM_DEBUG(llvm::dbgs() << "partitioning again on a grid cut for "
                              << llvm::join(grid->uncut(), ", ") << "\n");
      llvm::append_range(parts, grid->uncut());
      Block &body = *module.getBody();
      body.clear();
      body.getOperations().splice(body.end(), original->getBody()->getOperations());
      original = module.clone();
    }
  }

  /// The grid of `module`: the one it declares (a program partitioned in
  /// steps), else one cut for `parts` and declared here.
  std::optional<Grid> gridFor(ModuleOp module, MeshAttr mesh, ArrayRef<std::string> parts) {
    if (auto declared = module.lookupSymbol<shard::GridOp>(kGridName)) {
      FailureOr<Grid> grid = Grid::declaredBy(declared, mesh);
      if (failed(grid))
        return std::nullopt;
      return *grid;
    }
    std::string error;
    std::optional<Grid> grid = Grid::cut(mesh, parts, error);
    if (!grid) {
      module.emitError() << "partitioning needs a grid for the sub-axes of its shardings: "
                         << error;
      return std::nullopt;
    }
    OpBuilder b(module.getBodyRegion());
    grid->declare(b, module.getLoc());
    return grid;
  }

  /// The axis over which the program's sequence is in head-tail order
  /// (pmlir-head-tail-sequence), or empty.
  StringRef headTailAxis;

  /// The dimension of an entry tensor sharded as `s` that is in head-tail
  /// order: the one split over the head-tail axis (the layout decoder
  /// checks that it is split over nothing else).
  std::optional<int64_t> headTailDim(const Sharding &s) const {
    for (auto [d, axes] : llvm::enumerate(s.dims))
      if (!headTailAxis.empty() && llvm::is_contained(axes, headTailAxis))
        return d;
    return std::nullopt;
  }

  /// The first axis of `s` that names no axis or sub-axis of `mesh`.
  static std::optional<StringRef> unknownAxis(const Sharding &s, MeshAttr mesh) {
    for (ArrayRef<StringRef> axes : s.dims)
      for (StringRef a : axes)
        if (!mesh.subAxis(a))
          return a;
    for (StringRef a : s.pending)
      if (!mesh.subAxis(a))
        return a;
    return std::nullopt;
  }

  LogicalResult partition(func::FuncOp func, Grid &grid) {
    OpBuilder b(func.getContext());
    Partitioner p(grid, b);
    Block &old = func.getBody().front();
    Block *body = new Block();
    func.getBody().push_front(body);
    auto shardingOfArg = [&](unsigned i) {
      auto attr = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      int64_t rank = cast<RankedTensorType>(func.getArgumentTypes()[i]).getRank();
      return Sharding::of(attr ? attr : ShardingAttr::replicated(func.getContext(), rank));
    };
    for (BlockArgument arg : old.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()))
        return emitError(arg.getLoc()) << "@" << func.getSymName() << ": argument #"
                                       << arg.getArgNumber() << " is not a tensor";
      Sharding s = shardingOfArg(arg.getArgNumber());
      if (std::optional<StringRef> bad = unknownAxis(s, grid.getMesh()))
        return emitError(arg.getLoc())
               << "@" << func.getSymName() << ": argument #" << arg.getArgNumber()
               << " names mesh axis '" << *bad << "', which the mesh " << grid.getMesh()
               << " does not have";
      if (!s.pending.empty())
        return emitError(arg.getLoc())
               << "@" << func.getSymName() << ": argument #" << arg.getArgNumber()
               << " has pending axes; an input is a full value";
      BlockArgument local = body->addArgument(p.localType(arg, s), arg.getLoc());
      p.locals[arg] = {local, s};
      if (local.getType() != arg.getType())
        func.setArgAttr(arg.getArgNumber(), kGlobalTypeAttr, TypeAttr::get(arg.getType()));
      if (std::optional<int64_t> d = headTailDim(s))
        func.setArgAttr(arg.getArgNumber(), kHeadTailDimAttr, b.getI64IntegerAttr(*d));
    }
    b.setInsertionPointToStart(body);
    for (Operation &op : old.without_terminator())
      if (failed(p.partition(&op)))
        return failure();
    auto ret = cast<func::ReturnOp>(old.getTerminator());
    SmallVector<Value> results;
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      auto attr = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttr);
      int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
      Sharding want = Sharding::of(attr ? attr : ShardingAttr::replicated(func.getContext(), rank));
      want.pending.clear(); // a result is a full value
      if (std::optional<StringRef> bad = unknownAxis(want, grid.getMesh()))
        return emitError(ret.getLoc())
               << "@" << func.getSymName() << ": result #" << i << " names mesh axis '" << *bad
               << "', which the mesh " << grid.getMesh() << " does not have";
      FailureOr<Value> v = p.get(value, want, ret);
      if (failed(v))
        return failure();
      results.push_back(*v);
      func.setResultAttr(i, kShardingAttr, want.toAttr(func.getContext()));
      if (v->getType() != value.getType())
        func.setResultAttr(i, kGlobalTypeAttr, TypeAttr::get(value.getType()));
      if (std::optional<int64_t> d = headTailDim(want))
        func.setResultAttr(i, kHeadTailDimAttr, b.getI64IntegerAttr(*d));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    old.dropAllReferences();
    old.dropAllDefinedValueUses();
    old.erase();
    func.setType(FunctionType::get(func.getContext(), body->getArgumentTypes(),
                                   ValueRange(results).getTypes()));
    return success();
  }
};

} // namespace

LogicalResult pmlir::sharding::partitionModule(ModuleOp module) {
  return ModulePartitioner().run(module);
}
