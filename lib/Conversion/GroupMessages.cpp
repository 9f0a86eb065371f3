//===- GroupMessages.cpp - Sends and receives issued together -------------===//
//
// Part of pmlir.
//
// A run of the runtime's sends and receives that follow each other in a
// block, with nothing between them that reads or writes memory, is one
// message group: pmlir_rt_message_group(count) before it, and the deallocs
// inside it moved after it, since the runtime holds the group's buffers
// until its last call. On NCCL, where a send waits for its receive, a
// pipeline stage's send forward and receive backward then cannot deadlock
// with its neighbour's send backward and receive forward. With
// sink-messages a run also moves down past compute that leaves its buffers
// alone (MLIR's alias analysis decides what may be them) to the next
// message: a ring step's sends then meet the next block's receives.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Runtime/RuntimeAbi.h"

#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-group-messages"

namespace pmlir {
#define GEN_PASS_DEF_GROUPMESSAGES
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
namespace abi = pmlir::rt::abi;

namespace {

enum class Direction { None, Send, Recv };

/// Whether `op` calls the runtime's send or recv (on any element type).
Direction directionOf(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  const abi::Entry *entry = call ? abi::entryOfSymbol(call.getCallee()) : nullptr;
  if (entry == &abi::entry(abi::EntryId::send))
    return Direction::Send;
  if (entry == &abi::entry(abi::EntryId::recv))
    return Direction::Recv;
  return Direction::None;
}

bool isMessage(Operation *op) { return directionOf(op) != Direction::None; }

/// The buffer `value` is a view of, back through views and casts.
Value rootOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (isa<CastOpInterface>(def) && def->getNumOperands() == 1)
      value = def->getOperand(0);
    else
      break;
  }
  return value;
}

/// Whether `op` may stay inside a message group: it neither reads nor
/// writes memory (constants, views, the axes' globals) or only allocates.
bool mayStayInside(Operation *op) {
  if (op->getNumRegions() != 0)
    return false;
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects && effects.onlyHasEffect<MemoryEffects::Allocate>();
}

/// pmlir_rt_message_group, declared as RuntimeAbi.def has it.
func::FuncOp declareMessageGroup(ModuleOp module, SymbolTable &symbols) {
  abi::EntryId id = abi::EntryId::message_group;
  std::string name = abi::symbolName(id, "");
  if (auto existing = symbols.lookup<func::FuncOp>(name))
    return existing;
  const abi::Entry &entry = abi::entry(id);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  SmallVector<Type> params;
  for (abi::Kind kind : entry.params) {
    assert(kind == abi::I64 && "message_group takes integers");
    (void)kind;
    params.push_back(b.getI64Type());
  }
  auto fn = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType(params, {}));
  fn.setPrivate();
  symbols.insert(fn);
  return fn;
}

/// The messages of one group as it is being built, and the buffers they
/// read and write.
struct Run {
  explicit Run(AliasAnalysis &aliases) : aliases(aliases) {}

  AliasAnalysis &aliases;
  SmallVector<Operation *> messages;
  /// The buffers the run's sends read and its receives write.
  SmallVector<Value> sent, received;
  /// Frees met inside the run or passed by it: after it.
  SmallVector<Operation *> deallocs;

  bool mayAlias(Value buffer, ArrayRef<Value> buffers) const {
    return isa<BaseMemRefType>(buffer.getType()) &&
           llvm::any_of(buffers, [&](Value b) { return !aliases.alias(buffer, b).isNo(); });
  }
  bool holds(Value buffer) const { return mayAlias(buffer, sent) || mayAlias(buffer, received); }

  /// Whether `message` may join: no receive into a buffer a send of the
  /// run reads, or the other way round (the group's messages run at once,
  /// MPI's sends first; a ring forwards the block it has just received).
  /// A buffer allocated after the run's first message is none of the
  /// run's: theirs stay allocated until the group ends (frees move after
  /// it).
  bool admits(Operation *message) const {
    Value buffer = message->getOperand(0);
    Operation *first = messages.front();
    if (Operation *allocation = rootOf(buffer).getDefiningOp<memref::AllocOp>();
        allocation && allocation->getBlock() == first->getBlock() &&
        first->isBeforeInBlock(allocation))
      return true;
    return !mayAlias(buffer, directionOf(message) == Direction::Send ? received : sent);
  }
  void add(Operation *message) {
    messages.push_back(message);
    (directionOf(message) == Direction::Send ? sent : received).push_back(message->getOperand(0));
  }

  /// Whether the run's messages can move past `op`: it holds no call (a
  /// block's function, which a pipeline's schedule placed between its
  /// messages; a collective), writes and frees nothing that may be a
  /// buffer the sends read and touches nothing that may be one the
  /// receives write.
  bool commutesWith(Operation *op) const {
    auto touches = [&](Operation *inner) {
      return llvm::any_of(inner->getOperands(), [&](Value v) { return holds(v); });
    };
    WalkResult result = op->walk([&](Operation *inner) {
      if (isa<CallOpInterface>(inner))
        return WalkResult::interrupt();
      // An op's own effects first (a linalg op declares them and has
      // recursive effects besides); a region op's nested ops are walked.
      auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
      if (!effects)
        return inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() || !touches(inner)
                   ? WalkResult::advance()
                   : WalkResult::interrupt();
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffects(instances);
      for (const MemoryEffects::EffectInstance &e : instances) {
        Value v = e.getValue();
        if (!v) {
          if (touches(inner))
            return WalkResult::interrupt();
          continue;
        }
        if (mayAlias(v, received) ||
            (!isa<MemoryEffects::Read>(e.getEffect()) && mayAlias(v, sent)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return !result.wasInterrupted();
  }
};

struct GroupMessagesPass : public pmlir::impl::GroupMessagesBase<GroupMessagesPass> {
  using GroupMessagesBase::GroupMessagesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    AliasAnalysis &aliases = getAnalysis<AliasAnalysis>();
    SmallVector<Block *> blocks;
    module.walk([&](Block *block) {
      if (llvm::any_of(*block, [](Operation &op) { return isMessage(&op); }))
        blocks.push_back(block);
    });
    int64_t groups = 0;
    for (Block *block : blocks)
      for (auto it = block->begin(); it != block->end();) {
        if (!isMessage(&*it)) {
          ++it;
          continue;
        }
        Run run(aliases);
        run.add(&*it);
        extend(run);
        Operation *last = run.messages.back();
        it = std::next(last->getIterator());
        if (run.messages.size() < 2)
          continue;
        func::FuncOp runtime = declareMessageGroup(module, symbols);
        Operation *first = run.messages.front();
        OpBuilder b(first);
        Value size = arith::ConstantOp::create(
            b, first->getLoc(), b.getI64IntegerAttr(static_cast<int64_t>(run.messages.size())));
        func::CallOp::create(b, first->getLoc(), runtime, ValueRange{size});
        // After the last message, in their order.
        Operation *after = last;
        for (Operation *dealloc : run.deallocs) {
          dealloc->moveAfter(after);
          after = dealloc;
        }
        ++groups;
      }
    LLVM_DEBUG(llvm::dbgs() << "message groups: " << groups << "\n");
  }

  /// Adds to `run` the messages after its last: those that follow with only
  /// pure ops, allocations and frees between (the frees then go after the
  /// run); with sinkMessages, also those after ops its messages can move
  /// past, which they then do.
  void extend(Run &run) {
    Operation *last = run.messages.back();
    SmallVector<Operation *> frees;
    for (Operation *op = last->getNextNode(); op; op = op->getNextNode()) {
      if (isMessage(op)) {
        if (!run.admits(op))
          return;
        // Past what lies between: the run's messages move down to it.
        if (op != last->getNextNode() && !adjacent(last, op))
          for (Operation *message : run.messages)
            message->moveBefore(op);
        llvm::append_range(run.deallocs, frees);
        frees.clear();
        run.add(op);
        last = op;
        continue;
      }
      if (isa<memref::DeallocOp>(op)) {
        frees.push_back(op);
        continue;
      }
      if (mayStayInside(op))
        continue;
      if (!(sinkMessages && run.commutesWith(op)))
        return;
    }
  }

  /// Whether only pure ops, allocations and frees lie between `from` and
  /// `to`.
  static bool adjacent(Operation *from, Operation *to) {
    for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode())
      if (!isa<memref::DeallocOp>(op) && !mayStayInside(op))
        return false;
    return true;
  }
};

} // namespace
