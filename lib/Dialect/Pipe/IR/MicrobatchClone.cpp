//===- MicrobatchClone.cpp - A program repeated over microbatches ---------===//
//
// Part of pmlir.
//
// Gradient accumulation (pmlir-optimizer) and pipelined forwards
// (pmlir-microbatch) both run a function once per microbatch of a batch
// stacked along a new leading dimension; the fragments of a program cut
// into pipeline stages then name their microbatch, which is what a
// schedule orders.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Pipe/IR/Pipe.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace pmlir;

namespace {

bool isBatchArgument(func::FuncOp func, unsigned i) {
  tfm::ArgumentRole role = tfm::argumentRole(func, i);
  return role == tfm::ArgumentRole::Input || role == tfm::ArgumentRole::Label;
}

} // namespace

std::pair<Type, DictionaryAttr> pipe::microbatchedArgument(func::FuncOp func, unsigned i,
                                                           int64_t k) {
  Type type = func.getArgumentTypes()[i];
  DictionaryAttr dict = func.getArgAttrDict(i);
  if (k <= 1 || !isBatchArgument(func, i))
    return {type, dict};
  MLIRContext *context = func.getContext();
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape = {k};
  llvm::append_range(shape, tensor.getShape());
  NamedAttrList attrs(dict);
  if (auto dims = func.getArgAttrOfType<ArrayAttr>(i, tfm::kDimsAttr)) {
    SmallVector<Attribute> withMicrobatch = {StringAttr::get(context, "microbatch")};
    llvm::append_range(withMicrobatch, dims);
    attrs.set(tfm::kDimsAttr, ArrayAttr::get(context, withMicrobatch));
  }
  return {RankedTensorType::get(shape, tensor.getElementType()), attrs.getDictionary(context)};
}

LogicalResult pipe::checkRepeatable(func::FuncOp func, int64_t k, StringRef what) {
  int64_t ops = 0;
  func.walk([&](Operation *) { ++ops; });
  // Compared by division: k * ops may not fit in 64 bits.
  if (ops > 0 && k > kMaxRepeatedOps / ops)
    return func.emitOpError() << "cannot be " << what << " " << k
                              << " microbatches: each is a clone of its " << ops
                              << " ops, more than the " << kMaxRepeatedOps
                              << " ops a program repeated over microbatches may hold";
  return success();
}

SmallVector<Value> pipe::cloneForMicrobatch(OpBuilder &b, func::FuncOp func, ValueRange args,
                                            int64_t micro, int64_t k) {
  Location loc = func.getLoc();
  IRMapping mapping;
  for (BlockArgument arg : func.getArguments()) {
    Value v = args[arg.getArgNumber()];
    if (k > 1 && isBatchArgument(func, arg.getArgNumber()))
      v = tfm::MicrobatchOp::create(b, loc, arg.getType(), v, b.getI64IntegerAttr(micro));
    mapping.map(arg, v);
  }
  Block &body = func.front();
  for (Operation &op : body.without_terminator()) {
    Operation *clone = b.clone(op, mapping);
    if (auto fragment = dyn_cast<FragmentOp>(clone))
      fragment.setMicrobatch(micro);
  }
  SmallVector<Value> returned;
  for (Value v : body.getTerminator()->getOperands())
    returned.push_back(mapping.lookupOrDefault(v));
  return returned;
}
