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
// with its neighbour's send backward and receive forward.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Runtime/RuntimeAbi.h"

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

/// The buffer a message reads or writes, back through views and casts to
/// the value they are views of (an allocation, an argument, a call's
/// result).
Value rootBuffer(Operation *message) {
  Value buffer = message->getOperand(0);
  while (Operation *def = buffer.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      buffer = view.getViewSource();
    else if (auto cast = dyn_cast<CastOpInterface>(def); cast && def->getNumOperands() == 1)
      buffer = def->getOperand(0);
    else
      break;
  }
  return buffer;
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

struct GroupMessagesPass : public pmlir::impl::GroupMessagesBase<GroupMessagesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
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
        // The run from this message: its messages, and the deallocs among
        // them.
        Operation *first = &*it, *last = first;
        int64_t count = 1;
        SmallVector<Operation *> deallocs, deallocsSinceLast;
        // The group's messages run at once (and MPI's sends first): a
        // receive into a buffer a send of the group reads, either way
        // round, ends the run (a ring forwards the block it has just
        // received).
        llvm::SmallPtrSet<Value, 4> sent, received;
        (directionOf(first) == Direction::Send ? sent : received).insert(rootBuffer(first));
        for (auto next = std::next(it); next != block->end(); ++next) {
          Operation *op = &*next;
          if (Direction direction = directionOf(op); direction != Direction::None) {
            Value buffer = rootBuffer(op);
            bool sends = direction == Direction::Send;
            if ((sends ? received : sent).contains(buffer))
              break;
            (sends ? sent : received).insert(buffer);
            last = op;
            ++count;
            llvm::append_range(deallocs, deallocsSinceLast);
            deallocsSinceLast.clear();
          } else if (isa<memref::DeallocOp>(op)) {
            deallocsSinceLast.push_back(op);
          } else if (!mayStayInside(op)) {
            break;
          }
        }
        it = std::next(last->getIterator());
        if (count < 2)
          continue;
        func::FuncOp runtime = declareMessageGroup(module, symbols);
        OpBuilder b(first);
        Value size = arith::ConstantOp::create(b, first->getLoc(), b.getI64IntegerAttr(count));
        func::CallOp::create(b, first->getLoc(), runtime, ValueRange{size});
        // After the last message, in their order.
        Operation *after = last;
        for (Operation *dealloc : deallocs) {
          dealloc->moveAfter(after);
          after = dealloc;
        }
        ++groups;
      }
    LLVM_DEBUG(llvm::dbgs() << "message groups: " << groups << "\n");
  }
};

} // namespace
