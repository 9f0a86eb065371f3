//===- SpmdCheck.cpp - Proof that every rank's collectives match ----------===//
//
// Part of pmlir.
//
// See pmlir/Sharding/SpmdCheck.h. Two steps: a tracer that runs one rank's
// program symbolically (only the scalars that decide control flow and
// peers are computed, by the ops' own folders), and a simulation of all
// ranks' traces against each other under the runtime's rules.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/SpmdCheck.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/CostModel.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <deque>
#include <map>
#include <tuple>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::sharding;

namespace {

/// The most calls one rank's trace may hold: a bound on unrolled loops.
constexpr size_t kMaxCalls = size_t(1) << 22;
/// The most calls of all ranks together that are traced.
constexpr size_t kMaxTotalCalls = size_t(1) << 23;
/// The deepest chain of calls into functions that communicate.
constexpr int kMaxCallDepth = 64;

/// One communication call of a rank, as its program issues it.
struct Call {
  Operation *op;
  CollectiveKind kind;
  /// The grid axes of its group, as the op lists them.
  SmallVector<int16_t, 4> axes;
  Type element;
  /// Elements the rank passes in (a receive: the elements it receives).
  int64_t count = 0;
  /// all_reduce, reduce_scatter: the shard::ReductionKind.
  int64_t reduction = -1;
  /// all_gather: the gather axis; reduce_scatter: the scatter axis;
  /// all_to_all: the split and concat axes.
  int64_t axis = -1, secondAxis = -1;
  /// send, recv: the other rank; broadcast: the root.
  int64_t peer = -1;
  int64_t tag = 0;
};

/// The ranks of the mesh as the grid's coordinates, and their names.
class RankSpace {
public:
  RankSpace(const Grid &grid, const Mesh &mesh) : mesh(mesh) {
    for (const SubAxis &part : grid.parts()) {
      parts.push_back(part);
      shape.push_back(part.size);
    }
    for (int64_t r = 0; r < mesh.numRanks(); ++r) {
      std::vector<int64_t> meshCoordinates = mesh.coordinates(r);
      std::vector<int64_t> c;
      for (const SubAxis &part : parts)
        c.push_back(part.coordinate(meshCoordinates[part.index], mesh.axisSizes()[part.index]));
      rankAt.emplace(c, r);
      coordinates.push_back(std::move(c));
    }
  }

  int64_t numRanks() const { return static_cast<int64_t>(coordinates.size()); }
  ArrayRef<int64_t> gridShape() const { return shape; }
  const std::vector<int64_t> &coordinatesOf(int64_t rank) const { return coordinates[rank]; }
  int64_t rankAtCoordinates(const std::vector<int64_t> &c) const { return rankAt.at(c); }

  /// "rank 3 (dp=1, tp=1)".
  std::string name(int64_t rank) const {
    std::string s = "rank " + std::to_string(rank) + " (";
    std::vector<int64_t> c = mesh.coordinates(rank);
    for (size_t a = 0; a < c.size(); ++a)
      s += (a ? ", " : "") + mesh.axisNames()[a] + "=" + std::to_string(c[a]);
    return s + ")";
  }

  /// "tp", "dp,tp", "tp:(1)2".
  std::string axesName(ArrayRef<int16_t> axes) const {
    std::string s;
    for (int16_t a : axes)
      s += (s.empty() ? "" : ",") + (a < static_cast<int16_t>(parts.size())
                                         ? mesh.nameOf(parts[a])
                                         : "axis" + std::to_string(a));
    return s;
  }

private:
  const Mesh &mesh;
  std::vector<SubAxis> parts;
  SmallVector<int64_t> shape;
  std::vector<std::vector<int64_t>> coordinates;
  std::map<std::vector<int64_t>, int64_t> rankAt;
};

int64_t elementsOf(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  return type && type.hasStaticShape() ? type.getNumElements() : -1;
}

bool isScalar(Type t) { return isa<IndexType, IntegerType>(t); }

/// Whether `op` is a call the check traces: a collective that moves data
/// (an all_slice moves none) or a message.
bool isCommunication(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp, shard::AllToAllOp,
             shard::BroadcastOp, shard::SendOp, shard::RecvOp>(op);
}

/// Whether `op` or anything it runs (its regions, the functions it calls)
/// communicates; memoized.
class CommunicationIndex {
public:
  bool communicates(Operation *op) {
    if (auto it = memo.find(op); it != memo.end())
      return it->second;
    memo[op] = false; // a recursive call does not make itself communicate
    bool found = isCommunication(op);
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee =
              SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op, call.getCalleeAttr()))
        found = communicates(callee);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &inner : block)
          found |= communicates(&inner);
    return memo[op] = found;
  }

private:
  DenseMap<Operation *, bool> memo;
};

/// Whether two calls are the same call, apart from where they are.
bool sameCall(const Call &a, const Call &b) {
  return a.kind == b.kind && a.axes == b.axes && a.element == b.element && a.count == b.count &&
         a.reduction == b.reduction && a.axis == b.axis && a.secondAxis == b.secondAxis &&
         a.peer == b.peer && a.tag == b.tag;
}

/// "all_reduce (sum) of 1952 f32 over tp".
std::string describe(const RankSpace &ranks, const Call &c) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << stringifyCollectiveKind(c.kind);
  SmallVector<std::string> details;
  if (c.reduction >= 0)
    details.push_back(
        shard::stringifyReductionKind(static_cast<shard::ReductionKind>(c.reduction)).str());
  switch (c.kind) {
  case CollectiveKind::AllGather:
    details.push_back("gather axis " + std::to_string(c.axis));
    break;
  case CollectiveKind::ReduceScatter:
    details.push_back("scatter axis " + std::to_string(c.axis));
    break;
  case CollectiveKind::AllToAll:
    details.push_back("split axis " + std::to_string(c.axis) + ", concat axis " +
                      std::to_string(c.secondAxis));
    break;
  case CollectiveKind::Broadcast:
    details.push_back("root rank " + std::to_string(c.peer));
    break;
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
    details.push_back(std::string(c.kind == CollectiveKind::Send ? "to" : "from") + " rank " +
                      std::to_string(c.peer) + ", tag " + std::to_string(c.tag));
    break;
  default:
    break;
  }
  if (!details.empty())
    os << " (" << llvm::join(details, ", ") << ")";
  os << " of " << c.count << " " << c.element << " over " << ranks.axesName(c.axes);
  return s;
}

/// "4 f32".
std::string countAndType(const Call &c) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << c.count << " " << c.element;
  return s;
}

/// A message as a send or receive passes it: "4 f32 (tag 3) over pp".
std::string describeMessage(const RankSpace &ranks, const Call &c) {
  return countAndType(c) + " (tag " + std::to_string(c.tag) + ") over " + ranks.axesName(c.axes);
}

/// Runs one rank's program symbolically and lists its communication calls.
class Tracer {
public:
  Tracer(const RankSpace &ranks, int64_t rank, CommunicationIndex &index, std::vector<Call> &calls)
      : ranks(ranks), rank(rank), coordinates(ranks.coordinatesOf(rank)), index(index),
        out(&calls) {}

  LogicalResult traceBlock(Block &block) {
    for (Operation &op : block.without_terminator())
      if (failed(traceOp(&op)))
        return failure();
    return success();
  }

private:
  const RankSpace &ranks;
  int64_t rank;
  const std::vector<int64_t> &coordinates;
  CommunicationIndex &index;
  std::vector<Call> *out;
  DenseMap<Value, Attribute> known;
  /// Values no rank can know because an op gave none on known operands
  /// (arith's folders refuse a division by zero), with that op: where such
  /// a value names a peer, the op is the cause to name.
  DenseMap<Value, Operation *> undefinedBy;
  int callDepth = 0;

  std::optional<int64_t> valueOf(Value v) const {
    if (auto attr = dyn_cast_or_null<IntegerAttr>(known.lookup(v)))
      return attr.getType().isInteger(1) ? int64_t(!attr.getValue().isZero())
                                         : attr.getValue().getSExtValue();
    return std::nullopt;
  }

  void setIndex(Value v, int64_t value) {
    known[v] = IntegerAttr::get(IndexType::get(v.getContext()), value);
    undefinedBy.erase(v);
  }

  /// Binds `to` to what is known of `from`, forgetting what is not.
  void bind(ValueRange to, ValueRange from) {
    for (auto [t, f] : llvm::zip(to, from)) {
      if (Attribute a = known.lookup(f))
        known[t] = a;
      else
        known.erase(t);
      if (Operation *cause = undefinedBy.lookup(f))
        undefinedBy[t] = cause;
      else
        undefinedBy.erase(t);
    }
  }

  LogicalResult traceOp(Operation *op) {
    if (op->getNumRegions() == 0 && !isa<func::CallOp>(op)) {
      evaluate(op);
      return isCommunication(op) ? record(op) : success();
    }
    if (!index.communicates(op))
      return success();
    if (auto call = dyn_cast<func::CallOp>(op))
      return traceCall(call);
    if (auto ifOp = dyn_cast<scf::IfOp>(op))
      return traceIf(ifOp);
    if (auto forOp = dyn_cast<scf::ForOp>(op))
      return traceFor(forOp);
    if (op->hasTrait<tfm::OpTrait::InlineBody>()) {
      for (Region &region : op->getRegions())
        if (failed(traceBlock(region.front())))
          return failure();
      return success();
    }
    return op->emitError("pmlir-verify-spmd: cannot follow the collectives inside '")
           << op->getName() << "' (scf.if, scf.for and inline bodies are followed)";
  }

  /// The scalars the process indices and constants give, by the ops' own
  /// folders; everything else stays unknown.
  void evaluate(Operation *op) {
    if (op->getNumResults() == 0 || !llvm::all_of(op->getResultTypes(), isScalar))
      return;
    if (auto multi = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
      ArrayRef<int16_t> axes = multi.getAxes();
      for (auto [i, result] : llvm::enumerate(multi.getResults()))
        setIndex(result, coordinates[axes.empty() ? i : axes[i]]);
      return;
    }
    if (auto linear = dyn_cast<shard::ProcessLinearIndexOp>(op)) {
      int64_t index = 0;
      for (auto [c, size] : llvm::zip(coordinates, ranks.gridShape()))
        index = index * size + c;
      setIndex(linear.getResult(), index);
      return;
    }
    if (auto shape = dyn_cast<shard::GridShapeOp>(op)) {
      ArrayRef<int16_t> axes = shape.getAxes();
      for (auto [i, result] : llvm::enumerate(shape.getResults()))
        setIndex(result, ranks.gridShape()[axes.empty() ? i : axes[i]]);
      return;
    }
    if (!isPure(op))
      return;
    // Traced again (a loop's next iteration), an op's results are what its
    // operands give now.
    for (Value r : op->getResults()) {
      known.erase(r);
      undefinedBy.erase(r);
    }
    SmallVector<Attribute> operands;
    for (Value v : op->getOperands()) {
      Attribute a = known.lookup(v);
      if (!a) {
        // What an undefined value reaches is undefined by the same op.
        if (Operation *cause = undefinedBy.lookup(v))
          for (Value r : op->getResults())
            undefinedBy[r] = cause;
        return;
      }
      operands.push_back(a);
    }
    SmallVector<OpFoldResult> results;
    if (failed(op->fold(operands, results)) || results.size() != op->getNumResults()) {
      for (Value r : op->getResults())
        undefinedBy[r] = op;
      return;
    }
    for (auto [result, folded] : llvm::zip(op->getResults(), results)) {
      if (auto attr = dyn_cast<Attribute>(folded))
        known[result] = attr;
      else if (Attribute a = known.lookup(cast<Value>(folded)); a && cast<Value>(folded) != result)
        known[result] = a;
    }
  }

  LogicalResult traceCall(func::CallOp call) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
    if (!callee || callee.isExternal())
      return call.emitError("pmlir-verify-spmd: cannot follow a call of @")
             << call.getCallee() << ", which has no body";
    if (callDepth >= kMaxCallDepth)
      return call.emitError("pmlir-verify-spmd: calls nest deeper than ") << kMaxCallDepth;
    Block &body = callee.getBody().front();
    bind(body.getArguments(), call.getOperands());
    ++callDepth;
    LogicalResult traced = traceBlock(body);
    --callDepth;
    if (failed(traced))
      return failure();
    bind(call.getResults(), body.getTerminator()->getOperands());
    return success();
  }

  LogicalResult traceIf(scf::IfOp ifOp) {
    auto traceBranch = [&](Region &region) -> LogicalResult {
      if (region.empty())
        return success();
      if (failed(traceBlock(region.front())))
        return failure();
      bind(ifOp.getResults(), region.front().getTerminator()->getOperands());
      return success();
    };
    if (std::optional<int64_t> condition = valueOf(ifOp.getCondition()))
      return traceBranch(*condition ? ifOp.getThenRegion() : ifOp.getElseRegion());
    // A condition the rank does not decide: each rank may take either
    // branch, so both must communicate alike.
    std::vector<Call> *outer = out;
    std::vector<Call> thenCalls, elseCalls;
    out = &thenCalls;
    LogicalResult traced = traceBranch(ifOp.getThenRegion());
    out = &elseCalls;
    if (succeeded(traced))
      traced = traceBranch(ifOp.getElseRegion());
    out = outer;
    if (failed(traced))
      return failure();
    for (Value v : ifOp.getResults())
      known.erase(v);
    size_t n = std::min(thenCalls.size(), elseCalls.size());
    for (size_t i = 0; i <= n; ++i) {
      bool thenEnds = i == thenCalls.size(), elseEnds = i == elseCalls.size();
      if (thenEnds && elseEnds)
        break;
      if (thenEnds || elseEnds || !sameCall(thenCalls[i], elseCalls[i])) {
        InFlightDiagnostic d = ifOp.emitError()
                               << "pmlir-verify-spmd: on " << ranks.name(rank)
                               << " this scf.if's condition is not a function of the rank, and "
                                  "its branches communicate differently: ";
        if (thenEnds || elseEnds)
          d << "the " << (thenEnds ? "else" : "then") << " branch issues " << (i + 1)
            << " or more calls, the other " << i;
        else
          d << "call " << (i + 1) << " of the then branch is " << describe(ranks, thenCalls[i])
            << ", of the else branch " << describe(ranks, elseCalls[i]);
        return failure();
      }
    }
    out->insert(out->end(), thenCalls.begin(), thenCalls.end());
    return checkSize(ifOp);
  }

  LogicalResult traceFor(scf::ForOp forOp) {
    std::optional<int64_t> lower = valueOf(forOp.getLowerBound()),
                           upper = valueOf(forOp.getUpperBound()), step = valueOf(forOp.getStep());
    if (!lower || !upper || !step || *step <= 0)
      return forOp.emitError("pmlir-verify-spmd: this scf.for communicates, and its bounds are "
                             "not known from the rank (on ")
             << ranks.name(rank) << ")";
    Block &body = *forOp.getBody();
    bind(forOp.getRegionIterArgs(), forOp.getInitArgs());
    for (int64_t iv = *lower; iv < *upper; iv += *step) {
      setIndex(forOp.getInductionVar(), iv);
      if (failed(traceBlock(body)) || failed(checkSize(forOp)))
        return failure();
      bind(forOp.getRegionIterArgs(), body.getTerminator()->getOperands());
    }
    bind(forOp.getResults(), forOp.getRegionIterArgs());
    return success();
  }

  LogicalResult checkSize(Operation *op) {
    if (out->size() <= kMaxCalls)
      return success();
    return op->emitError("pmlir-verify-spmd: ")
           << ranks.name(rank) << " issues more than " << kMaxCalls << " communication calls";
  }

  /// The rank at in-group coordinates `statics` (dynamic ones from
  /// `dynamics`, in order) over `axes`, as the runtime reads them.
  FailureOr<int64_t> member(Operation *op, StringRef what, ArrayRef<int16_t> axes,
                            ArrayRef<int64_t> statics, ValueRange dynamics) {
    std::vector<int64_t> c = coordinates;
    size_t next = 0;
    for (auto [a, s] : llvm::zip(axes, statics)) {
      int64_t value = s;
      if (ShapedType::isDynamic(s)) {
        Value dynamic = next < dynamics.size() ? dynamics[next] : Value();
        std::optional<int64_t> v = dynamic ? valueOf(dynamic) : std::nullopt;
        ++next;
        if (!v) {
          if (Operation *cause = dynamic ? undefinedBy.lookup(dynamic) : nullptr) {
            InFlightDiagnostic d = op->emitError("pmlir-verify-spmd: the ")
                                   << what << " is undefined on " << ranks.name(rank)
                                   << ": an op it is computed from gives no value";
            d.attachNote(cause->getLoc())
                << "'" << cause->getName()
                << "' gives no value on its operands here (a division by zero?)";
            return d;
          }
          return op->emitError("pmlir-verify-spmd: the ")
                 << what << " is not a function of the rank (on " << ranks.name(rank) << ")";
        }
        value = *v;
      }
      if (value < 0 || value >= ranks.gridShape()[a])
        return op->emitError("pmlir-verify-spmd: on ")
               << ranks.name(rank) << " the " << what << " is " << value << " on grid axis " << a
               << ", outside its " << ranks.gridShape()[a] << " members";
      c[a] = value;
    }
    return ranks.rankAtCoordinates(c);
  }

  LogicalResult record(Operation *op) {
    Call call{op, CollectiveKind::AllReduce, {}, Type(), 0};
    auto setTensor = [&](Value v, ArrayRef<int16_t> axes) {
      call.element = cast<ShapedType>(v.getType()).getElementType();
      call.count = elementsOf(v);
      call.axes.assign(axes.begin(), axes.end());
    };
    auto tagOf = [](Operation *op) {
      auto tag = op->getAttrOfType<IntegerAttr>(kMessageTagAttr);
      return tag ? tag.getInt() : 0;
    };
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](shard::AllReduceOp c) {
              setTensor(c.getInput(), c.getGridAxes());
              call.reduction = static_cast<int64_t>(c.getReduction());
              return success();
            })
            .Case([&](shard::AllGatherOp c) {
              call.kind = CollectiveKind::AllGather;
              setTensor(c.getInput(), c.getGridAxes());
              call.axis = c.getGatherAxis().getSExtValue();
              return success();
            })
            .Case([&](shard::ReduceScatterOp c) {
              call.kind = CollectiveKind::ReduceScatter;
              setTensor(c.getInput(), c.getGridAxes());
              call.reduction = static_cast<int64_t>(c.getReduction());
              call.axis = c.getScatterAxis().getSExtValue();
              return success();
            })
            .Case([&](shard::AllToAllOp c) {
              call.kind = CollectiveKind::AllToAll;
              setTensor(c.getInput(), c.getGridAxes());
              call.axis = c.getSplitAxis().getSExtValue();
              call.secondAxis = c.getConcatAxis().getSExtValue();
              return success();
            })
            .Case([&](shard::BroadcastOp c) {
              call.kind = CollectiveKind::Broadcast;
              setTensor(c.getInput(), c.getGridAxes());
              FailureOr<int64_t> root =
                  member(op, "root", c.getGridAxes(), c.getRoot(), c.getRootDynamic());
              call.peer = succeeded(root) ? *root : -1;
              return success(succeeded(root));
            })
            .Case([&](shard::SendOp c) {
              call.kind = CollectiveKind::Send;
              setTensor(c.getInput(), c.getGridAxes());
              call.tag = tagOf(op);
              FailureOr<int64_t> peer = member(op, "destination", c.getGridAxes(),
                                               c.getDestination(), c.getDestinationDynamic());
              call.peer = succeeded(peer) ? *peer : -1;
              return success(succeeded(peer));
            })
            .Case([&](shard::RecvOp c) {
              call.kind = CollectiveKind::Recv;
              setTensor(c.getResult(), c.getGridAxes());
              call.tag = tagOf(op);
              if (!c.getSource())
                return LogicalResult(c.emitError(
                    "pmlir-verify-spmd: a receive from any member cannot be matched to its send"));
              FailureOr<int64_t> peer =
                  member(op, "source", c.getGridAxes(), *c.getSource(), c.getSourceDynamic());
              call.peer = succeeded(peer) ? *peer : -1;
              return success(succeeded(peer));
            })
            .Default([](Operation *) { return success(); });
    if (failed(ok))
      return failure();
    out->push_back(std::move(call));
    return checkSize(op);
  }
};

/// "1st", "2nd", "3rd", "4th", ..., "11th", "21st".
std::string ordinal(int64_t n) {
  int64_t tens = n % 100, units = n % 10;
  const char *suffix = (tens >= 11 && tens <= 13) ? "th"
                       : units == 1               ? "st"
                       : units == 2               ? "nd"
                       : units == 3               ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

/// "a", "a and b", "a, b and c".
std::string listed(ArrayRef<std::string> items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i)
    s += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return s;
}

/// What differs between two collectives of one group's turn, or between a
/// message as sent and as received (`message`: its element type and count
/// alone).
std::string differences(const Call &a, const Call &b, bool message = false) {
  SmallVector<std::string> d;
  if (!message) {
    if (a.kind != b.kind)
      d.push_back("the kind");
    if (a.axes != b.axes)
      d.push_back("the order of the grid axes");
    if (a.reduction != b.reduction)
      d.push_back("the reduction");
    if (a.axis != b.axis || a.secondAxis != b.secondAxis)
      d.push_back("the tensor axis");
    if (a.peer != b.peer)
      d.push_back("the root");
  }
  if (a.element != b.element)
    d.push_back("the element type");
  if (a.count != b.count)
    d.push_back("the count");
  return listed(d);
}

/// Runs every rank's trace against the others, as the runtime would.
class Simulation {
public:
  Simulation(const RankSpace &ranks, std::vector<std::vector<Call>> &calls)
      : ranks(ranks), calls(calls), next(calls.size(), 0) {
    for (int64_t r = 0; r < ranks.numRanks(); ++r) {
      groups.emplace_back();
      for (const Call &c : calls[r])
        groups.back().push_back(isCollective(c) ? groupOf(r, c.axes) : -1);
    }
  }

  LogicalResult run() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (int64_t r = 0; r < ranks.numRanks(); ++r) {
        while (next[r] < calls[r].size()) {
          FailureOr<bool> stepped = step(r);
          if (failed(stepped))
            return failure();
          if (!*stepped)
            break;
          progress = true;
        }
      }
    }
    // A receive that waits names its cause more closely than the
    // collectives its peers wait in for it.
    for (bool receives : {true, false})
      for (int64_t r = 0; r < ranks.numRanks(); ++r)
        if (next[r] < calls[r].size() &&
            (calls[r][next[r]].kind == CollectiveKind::Recv) == receives)
          return reportWait(r);
    for (auto &[key, queue] : mailbox)
      if (!queue.empty()) {
        const Call &sent = calls[std::get<0>(key)][queue.front()];
        return sent.op->emitError("pmlir-verify-spmd: ")
               << ranks.name(std::get<0>(key)) << " sends " << describeMessage(ranks, sent)
               << " to " << ranks.name(std::get<1>(key)) << ", which never receives it";
      }
    return success();
  }

private:
  const RankSpace &ranks;
  std::vector<std::vector<Call>> &calls;
  std::vector<size_t> next;
  /// The group of each collective call (-1 for messages).
  std::vector<std::vector<int64_t>> groups;
  /// Each group's members in rank order, and the collectives it completed.
  std::vector<std::vector<int64_t>> members;
  std::vector<int64_t> completed;
  std::map<std::pair<std::vector<int16_t>, std::vector<int64_t>>, int64_t> groupIds;
  /// Messages sent and not yet received, by (source, destination, tag):
  /// the indices of their sends in the source's calls.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<size_t>> mailbox;

  static bool isCollective(const Call &c) {
    return c.kind != CollectiveKind::Send && c.kind != CollectiveKind::Recv;
  }

  /// The group over grid axes `axes` that holds `rank`: the ranks that
  /// differ from it only there, whatever the order of the axes.
  int64_t groupOf(int64_t rank, ArrayRef<int16_t> axes) {
    std::vector<int16_t> set(axes.begin(), axes.end());
    llvm::sort(set);
    std::vector<int64_t> key = ranks.coordinatesOf(rank);
    for (int16_t a : set)
      key[a] = -1;
    auto [it, inserted] = groupIds.try_emplace({set, key}, int64_t(members.size()));
    if (inserted) {
      // Every coordinate on the group's axes, the others the rank's.
      std::vector<int64_t> group, c = ranks.coordinatesOf(rank);
      for (int16_t a : set)
        c[a] = 0;
      for (;;) {
        group.push_back(ranks.rankAtCoordinates(c));
        size_t i = set.size();
        while (i > 0 && ++c[set[i - 1]] == ranks.gridShape()[set[i - 1]])
          c[set[--i]] = 0;
        if (i == 0)
          break;
      }
      llvm::sort(group);
      members.push_back(std::move(group));
      completed.push_back(0);
    }
    return it->second;
  }

  /// Runs rank `r`'s next call if it can; false where it waits.
  FailureOr<bool> step(int64_t r) {
    const Call &c = calls[r][next[r]];
    if (c.kind == CollectiveKind::Send) {
      mailbox[{r, c.peer, c.tag}].push_back(next[r]++);
      return true;
    }
    if (c.kind == CollectiveKind::Recv) {
      std::deque<size_t> &queue = mailbox[{c.peer, r, c.tag}];
      if (queue.empty())
        return false;
      const Call &sent = calls[c.peer][queue.front()];
      queue.pop_front();
      if (sent.element != c.element || sent.count != c.count) {
        InFlightDiagnostic d = sent.op->emitError("pmlir-verify-spmd: ")
                               << ranks.name(c.peer) << " sends " << describeMessage(ranks, sent)
                               << " to " << ranks.name(r) << ", which receives it as "
                               << countAndType(c) << " (they differ in "
                               << differences(sent, c, /*message=*/true) << ")";
        d.attachNote(c.op->getLoc()) << "the receive of " << ranks.name(r);
        return failure();
      }
      ++next[r];
      return true;
    }
    int64_t g = groups[r][next[r]];
    for (int64_t m : members[g])
      if (next[m] >= calls[m].size() || groups[m][next[m]] != g)
        return false;
    int64_t first = members[g].front();
    const Call &reference = calls[first][next[first]];
    for (int64_t m : members[g]) {
      const Call &other = calls[m][next[m]];
      if (!sameCall(reference, other)) {
        InFlightDiagnostic d = reference.op->emitError("pmlir-verify-spmd: ")
                               << ranks.name(first) << " and " << ranks.name(m)
                               << " disagree in their " << ordinal(completed[g] + 1)
                               << " collective over " << ranks.axesName(reference.axes) << ": "
                               << ranks.name(first) << " issues " << describe(ranks, reference)
                               << ", " << ranks.name(m) << " " << describe(ranks, other)
                               << " (they differ in " << differences(reference, other) << ")";
        d.attachNote(other.op->getLoc()) << "the collective of " << ranks.name(m);
        return failure();
      }
    }
    ++completed[g];
    for (int64_t m : members[g])
      ++next[m];
    return true;
  }

  /// Where `r` waits for ever: names what it waits at, and the rank that
  /// does not come.
  LogicalResult reportWait(int64_t r) {
    const Call &c = calls[r][next[r]];
    auto whereIs = [&](int64_t other) {
      return next[other] < calls[other].size()
                 ? " waits in " + describe(ranks, calls[other][next[other]])
                 : std::string(" has ended its program");
    };
    if (c.kind == CollectiveKind::Recv) {
      InFlightDiagnostic d = c.op->emitError("pmlir-verify-spmd: ")
                             << ranks.name(r) << " waits for ever to receive "
                             << describeMessage(ranks, c) << " from " << ranks.name(c.peer)
                             << ", which" << whereIs(c.peer) << " and sends no more such messages";
      if (next[c.peer] < calls[c.peer].size())
        d.attachNote(calls[c.peer][next[c.peer]].op->getLoc())
            << "where " << ranks.name(c.peer) << " waits";
      return failure();
    }
    int64_t g = groups[r][next[r]];
    for (int64_t m : members[g]) {
      if (next[m] < calls[m].size() && groups[m][next[m]] == g)
        continue;
      InFlightDiagnostic d = c.op->emitError("pmlir-verify-spmd: ")
                             << ranks.name(r) << " waits for ever in its "
                             << ordinal(completed[g] + 1) << " collective over "
                             << ranks.axesName(c.axes) << ", " << describe(ranks, c) << ": "
                             << ranks.name(m) << ", of its group," << whereIs(m);
      if (next[m] < calls[m].size())
        d.attachNote(calls[m][next[m]].op->getLoc()) << "where " << ranks.name(m) << " waits";
      return failure();
    }
    return c.op->emitError("pmlir-verify-spmd: ") << ranks.name(r) << " waits for ever";
  }
};

} // namespace

LogicalResult pmlir::sharding::verifySpmd(const Grid &grid, const Mesh &mesh,
                                          ArrayRef<func::FuncOp> programs,
                                          function_ref<size_t(int64_t rank)> programOf) {
  RankSpace ranks(grid, mesh);
  CommunicationIndex index;
  std::vector<std::vector<Call>> calls(ranks.numRanks());
  size_t total = 0;
  for (int64_t r = 0; r < ranks.numRanks(); ++r) {
    func::FuncOp program = programs[programOf(r)];
    Tracer tracer(ranks, r, index, calls[r]);
    if (failed(tracer.traceBlock(program.getBody().front())))
      return failure();
    // Every rank's calls are held at once: past the bound the check stops
    // (as on a mesh of too many ranks) instead of exhausting memory.
    total += calls[r].size();
    if (total > kMaxTotalCalls) {
      program.emitWarning("pmlir-verify-spmd: the ranks issue more than ")
          << kMaxTotalCalls << " communication calls together (" << r + 1 << " of "
          << ranks.numRanks() << " ranks traced): the ranks' collectives are not proven to match";
      return success();
    }
  }
  return Simulation(ranks, calls).run();
}
