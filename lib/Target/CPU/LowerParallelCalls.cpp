//===- LowerParallelCalls.cpp - Dispatches as pmlir_rt_parallel_for calls -===//
//
// Part of pmlir.
//
// The second half of pmlir-outline-parallel-loops, on the LLVM dialect:
// there a memref argument has become its descriptor's fields, so the
// captured values of a dispatch are plain scalars and pointers that one
// struct on the caller's stack can carry to the runtime's threads. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "pmlir/Runtime/RuntimeAbi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-lower-parallel-calls"

namespace pmlir {
#define GEN_PASS_DEF_LOWERPARALLELCALLS
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
namespace abi = pmlir::rt::abi;

namespace {

constexpr StringLiteral kBodyAttr = "pmlir.parallel_body";

/// The LLVM type of a kind of RuntimeAbi.def's scalar entries.
Type llvmType(MLIRContext *context, abi::Kind kind) {
  switch (kind) {
  case abi::PTR:
    return LLVM::LLVMPointerType::get(context);
  case abi::I32:
    return IntegerType::get(context, 32);
  case abi::I64:
    return IntegerType::get(context, 64);
  case abi::VOID:
    return LLVM::LLVMVoidType::get(context);
  case abi::BUFFER:
  case abi::AXES:
  case abi::COUNTS:
    break;
  }
  return Type();
}

struct LowerParallelCallsPass : public pmlir::impl::LowerParallelCallsBase<LowerParallelCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> dispatches;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (function->hasAttr(kBodyAttr))
        dispatches.push_back(function);
    if (dispatches.empty())
      return;

    // pmlir_rt_parallel_for, declared as the table has it.
    abi::EntryId id = abi::EntryId::parallel_for;
    const abi::Entry &entry = abi::entry(id);
    std::string runtimeName = abi::symbolName(id, "");
    auto runtime = symbols.lookup<LLVM::LLVMFuncOp>(runtimeName);
    if (!runtime) {
      SmallVector<Type> params;
      for (abi::Kind kind : entry.params)
        params.push_back(llvmType(context, kind));
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      runtime = LLVM::LLVMFuncOp::create(
          b, module.getLoc(), runtimeName,
          LLVM::LLVMFunctionType::get(llvmType(context, entry.result), params));
      symbols.insert(runtime);
    }

    // The users of every symbol, from one walk of the module (a walk for
    // each dispatch's was quadratic: 4.4 s of a GPT-2 small training step's
    // compile, its 172 dispatches).
    DenseMap<StringAttr, SmallVector<Operation *>> users;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        users[use.getSymbolRef().getRootReference()].push_back(use.getUser());

    for (LLVM::LLVMFuncOp dispatch : dispatches)
      if (failed(lower(dispatch, runtime, symbols, users[dispatch.getSymNameAttr()])))
        return signalPassFailure();
  }

  LogicalResult lower(LLVM::LLVMFuncOp dispatch, LLVM::LLVMFuncOp runtime, SymbolTable &symbols,
                      ArrayRef<Operation *> users) {
    MLIRContext *context = dispatch->getContext();
    Location loc = dispatch.getLoc();
    auto bodyRef = dispatch->getAttrOfType<FlatSymbolRefAttr>(kBodyAttr);
    auto body = bodyRef ? symbols.lookup<LLVM::LLVMFuncOp>(bodyRef.getValue()) : nullptr;
    if (!body)
      return dispatch.emitOpError("names no function as its ") << kBodyAttr;
    LLVM::LLVMFunctionType type = dispatch.getFunctionType();
    if (type != body.getFunctionType() || type.getNumParams() < 2)
      return dispatch.emitOpError("does not take its body's (count, work, captures...) arguments");
    auto pointer = LLVM::LLVMPointerType::get(context);
    auto i64 = IntegerType::get(context, 64);
    ArrayRef<Type> captured = type.getParams().drop_front(2);
    auto contextType = LLVM::LLVMStructType::getLiteral(context, captured);

    // @<body>_chunk(context, begin, end): the captures loaded, the body called.
    OpBuilder b(context);
    b.setInsertionPointAfter(body);
    auto chunk = LLVM::LLVMFuncOp::create(
        b, loc, (body.getName() + "_chunk").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), {pointer, i64, i64}),
        LLVM::Linkage::Internal);
    symbols.insert(chunk);
    Block *entry = chunk.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    SmallVector<Value> arguments{castIndex(b, loc, entry->getArgument(1), type.getParamType(0)),
                                 castIndex(b, loc, entry->getArgument(2), type.getParamType(1))};
    for (auto [i, field] : llvm::enumerate(captured)) {
      Value address = LLVM::GEPOp::create(b, loc, pointer, contextType, entry->getArgument(0),
                                          ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
      arguments.push_back(LLVM::LoadOp::create(b, loc, field, address));
    }
    LLVM::CallOp::create(b, loc, body, arguments);
    LLVM::ReturnOp::create(b, loc, ValueRange());

    // Each call: the captures stored into a struct of the caller's entry
    // block (one slot for every call there), the runtime called.
    SmallVector<LLVM::CallOp> calls;
    for (Operation *user : users) {
      auto call = dyn_cast<LLVM::CallOp>(user);
      if (!call)
        return user->emitOpError("uses ") << dispatch.getName() << " other than by a call";
      calls.push_back(call);
    }
    for (LLVM::CallOp call : calls) {
      auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
      OpBuilder atEntry = OpBuilder::atBlockBegin(&caller.getBody().front());
      Value one = LLVM::ConstantOp::create(atEntry, loc, i64, 1);
      Value slot = LLVM::AllocaOp::create(atEntry, loc, pointer, contextType, one);
      b.setInsertionPoint(call);
      for (auto [i, value] : llvm::enumerate(call.getArgOperands().drop_front(2))) {
        Value address = LLVM::GEPOp::create(b, loc, pointer, contextType, slot,
                                            ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
        LLVM::StoreOp::create(b, loc, value, address);
      }
      Value function = LLVM::AddressOfOp::create(b, loc, chunk);
      Value count = castIndex(b, loc, call.getArgOperands()[0], i64);
      Value work = castIndex(b, loc, call.getArgOperands()[1], i64);
      LLVM::CallOp::create(b, loc, runtime, ValueRange{function, slot, count, work});
      call->erase();
    }
    LLVM_DEBUG(llvm::dbgs() << "@" << body.getName() << ": " << calls.size() << " calls, "
                            << captured.size() << " captured fields\n");
    symbols.erase(dispatch);
    return success();
  }

  /// `value`, an index as the conversion made it, as `type`.
  static Value castIndex(OpBuilder &b, Location loc, Value value, Type type) {
    if (value.getType() == type)
      return value;
    if (cast<IntegerType>(value.getType()).getWidth() < cast<IntegerType>(type).getWidth())
      return LLVM::SExtOp::create(b, loc, type, value);
    return LLVM::TruncOp::create(b, loc, type, value);
  }
};

} // namespace
