//===- Microbatches.cpp - A forward repeated over microbatches ------------===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Pipelining.h. The forward of each microbatch is a clone
// of the function's body (pipe::cloneForMicrobatch, as the training step's
// gradient accumulation does); the results of the microbatches are joined
// back into the results of the whole batch, so the repeated function
// computes what the function computes on that batch.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Pipelining.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace pmlir;

LogicalResult pmlir::pipeline::repeatOverMicrobatches(func::FuncOp func, int64_t microbatches) {
  if (microbatches < 1)
    return func.emitOpError() << "cannot be repeated over " << microbatches << " microbatches";
  if (failed(pipe::checkRepeatable(func, microbatches, "repeated over")))
    return failure();
  if (func.getBlocks().size() != 1)
    return func.emitOpError() << "must have one block to be repeated over microbatches";
  Block &body = func.front();
  bool alreadyRepeated = !body.getOps<tfm::MicrobatchOp>().empty();
  for (auto fragment : body.getOps<pipe::FragmentOp>())
    alreadyRepeated |= fragment.getMicrobatch().has_value();
  if (alreadyRepeated)
    return func.emitOpError() << "is already repeated over microbatches (it reads them with "
                                 "tfm.microbatch)";
  for (auto layer : body.getOps<tfm::LayerOp>())
    if (layer.getBackward())
      return func.emitOpError()
             << "is a gradient function: a training step accumulates its microbatches "
                "(pmlir-optimizer's grad-accum)";
  bool anyBatch = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    tfm::ArgumentRole role = tfm::argumentRole(func, i);
    if (role != tfm::ArgumentRole::Input && role != tfm::ArgumentRole::Label)
      continue;
    anyBatch = true;
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!type || type.getRank() == 0)
      return func.emitOpError() << "has input #" << i
                                << " without a batch dimension to split into microbatches";
  }
  if (!anyBatch)
    return func.emitOpError() << "has no input (tfm.role input or label) to split into "
                                 "microbatches";
  // Results of the whole batch: tensors joined along their first (batch)
  // dimension, scalars (a mean loss) averaged.
  SmallVector<Type> resultTypes;
  for (auto [r, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !isa<FloatType>(tensor.getElementType()))
      return func.emitOpError() << "has result #" << r << " of type " << type
                                << ", but only float tensors are joined over microbatches";
    if (tensor.getRank() == 0 || microbatches == 1) {
      resultTypes.push_back(tensor);
      continue;
    }
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] *= microbatches;
    resultTypes.push_back(RankedTensorType::get(shape, tensor.getElementType()));
  }

  MLIRContext *context = func.getContext();
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto [type, attrs] = pipe::microbatchedArgument(func, i, microbatches);
    argTypes.push_back(type);
    argAttrs.push_back(attrs ? attrs : DictionaryAttr::get(context));
  }
  OpBuilder b(func);
  auto repeated = func::FuncOp::create(b, func.getLoc(), func.getName(),
                                       b.getFunctionType(argTypes, resultTypes));
  repeated->setAttrs(func->getAttrs());
  repeated.setType(b.getFunctionType(argTypes, resultTypes));
  repeated.setAllArgAttrs(argAttrs);
  Block *entry = repeated.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<SmallVector<Value>> perMicrobatch(func.getNumResults());
  for (int64_t micro = 0; micro < microbatches; ++micro) {
    SmallVector<Value> returned =
        pipe::cloneForMicrobatch(b, func, entry->getArguments(), micro, microbatches);
    for (auto [r, v] : llvm::enumerate(returned))
      perMicrobatch[r].push_back(v);
  }
  Location loc = func.getLoc();
  SmallVector<Value> results;
  for (auto [values, type] : llvm::zip(perMicrobatch, resultTypes)) {
    if (microbatches == 1) {
      results.push_back(values.front());
    } else if (cast<RankedTensorType>(type).getRank() > 0) {
      results.push_back(tfm::ConcatOp::create(b, loc, type, values, b.getI64IntegerAttr(0)));
    } else {
      Value total = values.front();
      for (Value v : ArrayRef(values).drop_front())
        total = tfm::AddOp::create(b, loc, type, total, v);
      results.push_back(
          tfm::ScaleOp::create(b, loc, type, total, b.getF64FloatAttr(1.0 / microbatches)));
    }
  }
  func::ReturnOp::create(b, loc, results);
  func.erase();
  return success();
}
