//===- Graph.cpp - The auto-sharder's graph -------------------------------===//
//
// Part of pmlir.
//
// The nodes of a function for the auto-sharder (ops with a rule, tensor
// arguments, results), the uses between them, and the classes of nodes that
// share a variable: the same op of identical layers (one layer-identity key,
// tfm::layerStructureKey) and what only they use, found by refining colours.
//
//===----------------------------------------------------------------------===//

#include "AutoSharderImpl.h"

#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "pmlir-auto-sharding"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;
using namespace pmlir::sharding::autoshard;

Axes AutoSharder::Impl::meshAxes() const {
  Axes axes;
  for (auto [name, size] : llvm::zip(mesh.getAxes(), mesh.getSizes()))
    if (size > 1 && !llvm::is_contained(options.excludedAxes, name.getValue()))
      axes.push_back(name.getValue());
  return axes;
}

void AutoSharder::Impl::buildNodes() {
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    Node node;
    node.arg = arg;
    for (Sharding &s : evenShardings(type))
      node.strategies.push_back({{}, {std::move(s)}, 0});
    producer[arg] = {static_cast<int>(nodes.size()), 0};
    nodes.push_back(std::move(node));
    ++stats.arguments;
  }
  func->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == func.getOperation())
      return;
    position[op] = static_cast<int64_t>(order.size());
    order.push_back(op);
    if (op->hasTrait<mlir::OpTrait::IsTerminator>() ||
        op->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
      return;
    if (!llvm::all_of(op->getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); }) ||
        op->getNumResults() == 0)
      return;
    Node node;
    node.op = op;
    if (std::optional<ShardingRule> rule = getShardingRule(op)) {
      enumerate(op, *rule, node.strategies);
    } else {
      // An op sharding knows nothing of computes whole values.
      Strategy s;
      for (Value operand : op->getOperands())
        if (auto type = dyn_cast<RankedTensorType>(operand.getType()))
          s.operands.push_back(Sharding{SmallVector<Axes>(type.getRank()), {}});
        else
          s.operands.push_back(std::nullopt);
      for (Type t : op->getResultTypes())
        s.results.push_back(Sharding{SmallVector<Axes>(cast<RankedTensorType>(t).getRank()), {}});
      node.strategies.push_back(std::move(s));
    }
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      producer[op->getResult(r)] = {static_cast<int>(nodes.size()), r};
    nodes.push_back(std::move(node));
    ++stats.ops;
  });
  // The uses: operands the strategies shard, and updated parameters.
  for (auto [n, node] : llvm::enumerate(nodes)) {
    if (!node.op)
      continue;
    for (auto [i, operand] : llvm::enumerate(node.op->getOperands())) {
      if (!node.strategies.front().operands[i])
        continue;
      auto it = producer.find(pmlir::tfm::yieldedValue(operand));
      if (it != producer.end())
        uses.push_back(
            {it->second.first, it->second.second, static_cast<int>(n), static_cast<int>(i)});
    }
  }
  Operation *ret = func.getFunctionBody().back().getTerminator();
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto like = func.getResultAttrOfType<IntegerAttr>(i, kShardedLikeAttr);
    auto type = dyn_cast<RankedTensorType>(ret->getOperand(i).getType());
    auto from = producer.find(pmlir::tfm::yieldedValue(ret->getOperand(i)));
    if (!type || from == producer.end())
      continue;
    if (!like) {
      Node node;
      node.result = static_cast<int>(i);
      for (Sharding &s : evenShardings(type))
        node.strategies.push_back({{}, {std::move(s)}, 0});
      uses.push_back({from->second.first, from->second.second, static_cast<int>(nodes.size()), -1});
      nodes.push_back(std::move(node));
      continue;
    }
    if (like.getInt() < 0 || like.getInt() >= func.getNumArguments())
      continue;
    returnedAs[producer.lookup(func.getArgument(like.getInt())).first] = i;
    auto to = producer.find(func.getArgument(like.getInt()));
    if (from != producer.end() && to != producer.end() &&
        ret->getOperand(i).getType() == func.getArgument(like.getInt()).getType())
      uses.push_back({from->second.first, from->second.second, to->second.first, -1});
  }
  // An argument may also take any full sharding its users read it in (a
  // fused weight in parts).
  for (const Use &use : uses) {
    Node &from = nodes[use.from];
    if (!from.isArgument() || use.operand < 0)
      continue;
    for (const Strategy &s : nodes[use.to].strategies) {
      const Sharding &wanted = *s.operands[use.operand];
      if (!wanted.pending.empty() || llvm::any_of(from.strategies, [&](const Strategy &have) {
            return have.results[0] == wanted;
          }))
        continue;
      from.strategies.push_back({{}, {wanted}, 0});
    }
  }
  if (options.keepAnnotations)
    keepAnnotations();
  stats.nodes = static_cast<int64_t>(nodes.size());
}

std::string AutoSharder::Impl::printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

void AutoSharder::Impl::buildClasses() {
  // Colours: in-layer ops by their layer's class and place, fixed; the
  // others refined by their neighbours' colours until stable.
  std::vector<int64_t> colour(nodes.size());
  std::vector<bool> fixed(nodes.size(), false);
  std::map<std::string, int64_t> names;
  auto idOf = [&](const std::string &key) {
    return names.try_emplace(key, static_cast<int64_t>(names.size())).first->second;
  };
  std::map<std::string, int64_t> layerClasses;
  DenseMap<Operation *, std::pair<int64_t, int64_t>> placeInLayer;
  if (options.mergeLayers) {
    func->walk([&](Operation *layer) {
      if (!isa<LayerOp>(layer))
        return;
      ++stats.layers;
      int64_t cls =
          layerClasses
              .try_emplace(layerStructureKey(cast<LayerOp>(layer)), int64_t(layerClasses.size()))
              .first->second;
      int64_t place = 0;
      layer->getRegion(0).walk<WalkOrder::PreOrder>([&](Operation *op) {
        placeInLayer[op] = {cls, place++};
      });
    });
  }
  stats.layerClasses = static_cast<int64_t>(layerClasses.size());
  for (auto [n, node] : llvm::enumerate(nodes)) {
    std::string key;
    llvm::raw_string_ostream os(key);
    if (node.op) {
      auto place = placeInLayer.find(node.op);
      if (place != placeInLayer.end()) {
        os << "layer " << place->second.first << " op " << place->second.second;
        fixed[n] = true;
      } else if (options.mergeLayers) {
        // An op's place in a sequence (a microbatch's index) is no part
        // of its sharding rule.
        NamedAttrList attrs(node.op->getAttrDictionary());
        attrs.erase("index");
        os << node.op->getName() << printed(attrs.getDictionary(context));
        for (Type t : node.op->getOperandTypes())
          os << t;
        for (Type t : node.op->getResultTypes())
          os << t;
      } else {
        os << "op " << n;
      }
    } else if (node.result >= 0 && !options.mergeLayers) {
      os << "result " << node.result;
    } else if (node.result >= 0) {
      NamedAttrList attrs(func.getResultAttrDict(node.result));
      attrs.erase(kNameAttr);
      os << "result " << func.getResultTypes()[node.result]
         << printed(attrs.getDictionary(context));
    } else if (options.mergeLayers) {
      unsigned i = node.arg.getArgNumber();
      os << "arg " << node.arg.getType();
      NamedAttrList attrs(func.getArgAttrDict(i));
      attrs.erase(kNameAttr);
      attrs.erase(kShardedLikeAttr);
      os << printed(attrs.getDictionary(context));
    } else {
      os << "arg " << n;
    }
    colour[n] = idOf(key);
  }
  // Refine: an op or a result by its operands' colours, an argument by
  // its users'.
  std::vector<std::vector<std::pair<int, int>>> usersOf(nodes.size()), operandsOf(nodes.size());
  for (const Use &use : uses) {
    usersOf[use.from].push_back({use.to, use.operand});
    operandsOf[use.to].push_back({use.from, static_cast<int>(use.result)});
  }
  // A chain of ops of one kind (a running sum: a gradient accumulated
  // over microbatches, the squares of every gradient added up for the
  // norm) is one class: a link is told apart by what it adds, not by the
  // link it extends, which would make every depth a class of its own.
  const std::vector<int64_t> kind = colour;
  size_t count = names.size();
  for (int round = 0; round < 16 && options.mergeLayers; ++round) {
    std::map<std::vector<int64_t>, int64_t> next;
    std::vector<int64_t> refined(nodes.size());
    for (size_t n = 0; n < nodes.size(); ++n) {
      std::vector<int64_t> key{colour[n]};
      if (!fixed[n]) {
        if (!nodes[n].isArgument()) {
          for (auto [from, result] : operandsOf[n]) {
            if (kind[from] == kind[n])
              continue;
            key.push_back(colour[from]);
            key.push_back(result);
          }
        } else {
          std::vector<std::pair<int64_t, int64_t>> seen;
          for (auto [to, operand] : usersOf[n])
            seen.push_back({colour[to], operand});
          llvm::sort(seen);
          for (auto [c, o] : seen) {
            key.push_back(c);
            key.push_back(o);
          }
        }
      }
      refined[n] = next.try_emplace(key, static_cast<int64_t>(next.size())).first->second;
    }
    colour = refined;
    if (next.size() == count)
      break;
    count = next.size();
  }
  std::map<int64_t, int> classOfColour;
  for (size_t n = 0; n < nodes.size(); ++n) {
    auto [it, fresh] = classOfColour.try_emplace(colour[n], static_cast<int>(classes.size()));
    if (fresh)
      classes.emplace_back();
    classes[it->second].members.push_back(static_cast<int>(n));
    nodes[n].cls = it->second;
  }
  stats.classes = static_cast<int64_t>(classes.size());
}
