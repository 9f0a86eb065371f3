//===- OutlineParallelLoops.cpp - Large structured ops as chunked bodies --===//
//
// Part of pmlir.
//
// Each linalg op on buffers whose work may pay for threads becomes a
// function over a range of one parallel dimension (the op tiled there) and
// a dispatch that pmlir-lower-parallel-calls turns into a call of the
// runtime's pmlir_rt_parallel_for. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-outline-parallel-loops"

namespace pmlir {
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPS
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// A dimension with fewer iterations than this is split only when no
/// outer one has as many: 16 leaves every thread of a small machine
/// several rows and keeps the chunks contiguous in memory.
constexpr int64_t kOuterDimMinIterations = 16;

/// The function attributes the lowering to LLVM passes on as they are.
constexpr StringLiteral kPassthroughAttr = "passthrough";

/// The parallel dimension of `op` to split, or none: one that every output
/// is indexed by (else chunks would write the same elements), the
/// outermost with at least kOuterDimMinIterations iterations (or a dynamic
/// count), else the one with the most.
std::optional<unsigned> splitDimension(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  std::optional<unsigned> longest;
  for (unsigned d = 0; d < iterators.size(); ++d) {
    if (iterators[d] != utils::IteratorType::parallel)
      continue;
    bool indexesEveryOutput = llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
      return op.getMatchingIndexingMap(&init).isFunctionOfDim(d);
    });
    if (!indexesEveryOutput)
      continue;
    if (ShapedType::isDynamic(extents[d]) || extents[d] >= kOuterDimMinIterations)
      return d;
    if (extents[d] > 1 && (!longest || extents[d] > extents[*longest]))
      longest = d;
  }
  return longest;
}

/// The operations one iteration of `op` runs (its body less the yield),
/// at least one (a fill, a copy).
int64_t operationsPerIteration(linalg::LinalgOp op) {
  int64_t count = 0;
  op->getRegion(0).walk([&](Operation *inner) {
    if (!inner->hasTrait<OpTrait::IsTerminator>())
      ++count;
  });
  return std::max<int64_t>(1, count);
}

struct OutlineParallelLoopsPass
    : public pmlir::impl::OutlineParallelLoopsBase<OutlineParallelLoopsPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    linalg::registerTilingInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions;
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration())
        functions.push_back(function);
    for (func::FuncOp function : functions) {
      SmallVector<linalg::LinalgOp> ops;
      function.walk([&](linalg::LinalgOp op) {
        if (op.hasPureBufferSemantics() && !op->getNumResults())
          ops.push_back(op);
      });
      int64_t outlined = 0;
      Operation *last = function;
      for (linalg::LinalgOp op : ops)
        if (failed(outline(op, function, symbols, outlined, last)))
          return signalPassFailure();
      compileForSize(function);
    }
  }

  /// What stays in `function` runs on one thread and, but for the rare op
  /// with no dimension to split, below min-work: LLVM's unrolled,
  /// interleaved vector loops (and their remainders) would only make it
  /// longer to compile. A GPT-2 small training step's three such functions
  /// were 85,000 lines of LLVM IR after -O2, 22,000 for size.
  static void compileForSize(func::FuncOp function) {
    MLIRContext *context = function.getContext();
    auto optsize = StringAttr::get(context, "optsize");
    SmallVector<Attribute> passthrough;
    if (auto existing = function->getAttrOfType<ArrayAttr>(kPassthroughAttr))
      llvm::append_range(passthrough, existing);
    if (!llvm::is_contained(passthrough, optsize))
      passthrough.push_back(optsize);
    function->setAttr(kPassthroughAttr, ArrayAttr::get(context, passthrough));
  }

  /// Outlines `op` of `function` (the `outlined`th there) after `last`,
  /// the function or its last body.
  LogicalResult outline(linalg::LinalgOp op, func::FuncOp function, SymbolTable &symbols,
                        int64_t &outlined, Operation *&last) {
    std::optional<unsigned> dim = splitDimension(op);
    if (!dim)
      return success();
    int64_t perIteration = operationsPerIteration(op);
    // The static part of the work; a dynamic extent may make it anything.
    int64_t staticWork = perIteration;
    bool dynamic = false;
    for (int64_t extent : op.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(extent))
        dynamic = true;
      else
        staticWork =
            extent != 0 && staticWork > INT64_MAX / extent ? INT64_MAX : staticWork * extent;
    }
    if (!dynamic && staticWork < minWork)
      return success();

    // What the body reads from the function: the operands and the values
    // its region uses, constants apart (cloned in).
    llvm::SetVector<Value> captures(op->getOperands().begin(), op->getOperands().end());
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op->getRegions(), above);
    SmallVector<Operation *> constants;
    for (Value value : above) {
      if (Operation *def = value.getDefiningOp(); def && matchPattern(value, m_Constant()))
        constants.push_back(def);
      else
        captures.insert(value);
    }

    Location loc = op.getLoc();
    MLIRContext *context = op->getContext();
    OpBuilder b(context);
    IndexType index = b.getIndexType();
    SmallVector<Type> params{index, index};
    for (Value capture : captures)
      params.push_back(capture.getType());
    FunctionType type = b.getFunctionType(params, {});

    // The body: the op on iterations [begin, end) of `dim`.
    std::string name;
    do
      name = (function.getSymName() + "_parallel" + Twine(outlined++)).str();
    while (symbols.lookup(name) || symbols.lookup(name + "_dispatch"));
    b.setInsertionPointAfter(last);
    auto body = func::FuncOp::create(b, loc, name, type);
    body.setPrivate();
    last = body;
    Block *entry = body.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (auto [capture, argument] : llvm::zip(captures, entry->getArguments().drop_front(2)))
      map.map(capture, argument);
    for (Operation *constant : constants)
      b.clone(*constant, map);
    auto whole = cast<TilingInterface>(b.clone(*op, map));
    SmallVector<Range> domain = whole.getIterationDomain(b);
    SmallVector<OpFoldResult> offsets, sizes;
    for (const Range &range : domain) {
      offsets.push_back(range.offset);
      sizes.push_back(range.size);
    }
    Value begin = entry->getArgument(0), end = entry->getArgument(1);
    offsets[*dim] = begin;
    sizes[*dim] = arith::SubIOp::create(b, loc, end, begin).getResult();
    FailureOr<TilingResult> tiled = whole.getTiledImplementation(b, offsets, sizes);
    if (failed(tiled))
      return op->emitOpError("could not be split along its dimension ") << *dim;
    whole->erase();
    func::ReturnOp::create(b, loc);
    symbols.insert(body);

    // The dispatch, at the op: the count of `dim` and the work of one of
    // its iterations (the other extents times the operations of one).
    b.setInsertionPoint(op);
    SmallVector<Range> here = cast<TilingInterface>(op.getOperation()).getIterationDomain(b);
    Value count = getValueOrCreateConstantIndexOp(b, loc, here[*dim].size);
    Value unitCost = arith::ConstantIndexOp::create(b, loc, perIteration);
    for (unsigned d = 0; d < here.size(); ++d)
      if (d != *dim)
        unitCost = b.createOrFold<arith::MulIOp>(
            loc, unitCost, getValueOrCreateConstantIndexOp(b, loc, here[d].size));
    SmallVector<Value> arguments{count, unitCost};
    arguments.append(captures.begin(), captures.end());
    OpBuilder declare(context);
    declare.setInsertionPoint(function);
    auto dispatch = func::FuncOp::create(declare, loc, name + "_dispatch", type);
    dispatch.setPrivate();
    dispatch->setAttr("pmlir.parallel_body", FlatSymbolRefAttr::get(body.getSymNameAttr()));
    symbols.insert(dispatch);
    func::CallOp::create(b, loc, dispatch, arguments);
    LLVM_DEBUG(llvm::dbgs() << "@" << name << ": dimension " << *dim << " of " << op->getName()
                            << ", " << captures.size() << " captures\n");
    op->erase();
    return success();
  }
};

} // namespace
