//===- OutlineParallelLoops.cpp - Large structured ops as chunked bodies --===//
//
// Part of pmlir.
//
// Each linalg op on buffers whose work may pay for threads becomes a
// function over a range of one parallel dimension (the op tiled there) and
// a dispatch that pmlir-lower-parallel-calls turns into a call of the
// runtime's pmlir_rt_parallel_for; ops alike share one body, and small
// ops alike one serial body. See Passes.td.
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
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#include <limits>

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

/// What a body does, whatever its name: the function as printed under a
/// name of no body's (in its own scope: printing it in the module's would
/// number the whole module's values for each body). Every flag is set here:
/// the command line's --mlir-print-* and --mlir-elide-* options change the
/// defaults, and a key that skipped regions or elided constants would make
/// different ops alike.
std::string bodyKey(func::FuncOp body) {
  StringAttr name = body.getSymNameAttr();
  body.setSymName("");
  std::string key;
  llvm::raw_string_ostream os(key);
  OpPrintingFlags flags;
  flags.useLocalScope()
      .printGenericOpForm()
      .skipRegions(false)
      .enableDebugInfo(false)
      .printUniqueSSAIDs(false)
      .printValueUsers(false)
      .printNameLocAsPrefix(false)
      .elideLargeElementsAttrs(std::numeric_limits<int64_t>::max())
      .elideLargeResourceString(std::numeric_limits<int64_t>::max());
  body->print(os, flags);
  body.setSymNameAttr(name);
  return key;
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
    dispatchOfBody.clear();
    serialBodies.clear();
    for (func::FuncOp function : functions) {
      SmallVector<linalg::LinalgOp> ops;
      function.walk([&](linalg::LinalgOp op) {
        if (op.hasPureBufferSemantics() && !op->getNumResults())
          ops.push_back(op);
      });
      int64_t outlined = 0;
      Operation *last = function;
      for (linalg::LinalgOp op : ops) {
        FailureOr<bool> split = outline(op, function, symbols, outlined, last);
        if (failed(split))
          return signalPassFailure();
        if (!*split)
          shareSerialBody(op, function, symbols, last);
      }
      compileForSize(function);
    }
    inlineUnsharedSerialBodies(symbols);
  }

  /// The body of a small op (one that stays on one thread), one per
  /// distinct op: `op` becomes a call of the body an op like it made, or of
  /// a new one. A training step accumulating microbatches repeats each
  /// microbatch's small ops (its gradient sums, the loss's scalars), and
  /// left in one function their loops cost LLVM's loop passes time
  /// quadratic in the function (16 microbatches of a 2-block model: 1,600
  /// loops, 6.9 s of `opt -O2` in IndVarSimplify and LoopRotate); shared, each is
  /// compiled once. An op no other op is like goes back where it was
  /// (inlineUnsharedSerialBodies).
  void shareSerialBody(linalg::LinalgOp op, func::FuncOp function, SymbolTable &symbols,
                       Operation *&last) {
    auto [captures, constants] = capturesOf(op);
    Location loc = op.getLoc();
    OpBuilder b(op);
    SmallVector<Value> passed = passedValues(b, loc, captures.getArrayRef());
    auto [body, clone] = bodyOf(op, "serial", {}, captures, constants, passed, last);
    b.setInsertionPointAfter(clone);
    func::ReturnOp::create(b, loc);

    SerialBody &shared = serialBodies[bodyKey(body)];
    if (shared.body) {
      body->erase();
    } else {
      std::string name;
      int64_t n = 0;
      do
        name = (function.getSymName() + "_serial" + Twine(n++)).str();
      while (symbols.lookup(name));
      body.setSymName(name);
      symbols.insert(body);
      compileForSize(body);
      // Small as it is, LLVM's inliner would put it back at every call.
      addPassthrough(body, "noinline");
      last = body;
      shared.body = body;
    }
    b.setInsertionPoint(op);
    shared.calls.push_back(
        {func::CallOp::create(b, loc, shared.body, passed), captures.takeVector()});
    op->erase();
  }

  /// Puts back, in place of its one call, each serial body no other op
  /// shares.
  void inlineUnsharedSerialBodies(SymbolTable &symbols) {
    for (auto &entry : serialBodies) {
      SerialBody &shared = entry.getValue();
      if (shared.calls.size() != 1)
        continue;
      auto &[call, captures] = shared.calls.front();
      OpBuilder b(call);
      IRMapping map;
      map.map(shared.body.getArguments(), captures);
      for (Operation &op : shared.body.getBody().front().without_terminator())
        b.clone(op, map);
      SmallVector<Value> passed(call.getOperands());
      call->erase();
      // The casts to any offset the call alone read.
      for (Value value : passed)
        if (auto cast = value.getDefiningOp<memref::CastOp>(); cast && cast->use_empty())
          cast->erase();
      symbols.erase(shared.body);
    }
    serialBodies.clear();
  }

  /// What the op reads from its function: its operands and the values its
  /// region uses, but constants, which are cloned in.
  static std::pair<llvm::SetVector<Value>, SmallVector<Operation *>>
  capturesOf(linalg::LinalgOp op) {
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
    return {std::move(captures), std::move(constants)};
  }

  /// A private function `name`, after `last`, of `leading` arguments and
  /// then those `passed` for `captures`, holding the `constants` and `op`
  /// cloned onto its arguments; and the clone of `op`.
  static std::pair<func::FuncOp, Operation *> bodyOf(linalg::LinalgOp op, StringRef name,
                                                     TypeRange leading,
                                                     const llvm::SetVector<Value> &captures,
                                                     ArrayRef<Operation *> constants,
                                                     ArrayRef<Value> passed, Operation *last) {
    SmallVector<Type> params(leading);
    for (Value value : passed)
      params.push_back(value.getType());
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(last);
    auto body = func::FuncOp::create(b, op.getLoc(), name, b.getFunctionType(params, {}));
    body.setPrivate();
    Block *entry = body.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (auto [capture, argument] :
         llvm::zip(captures, entry->getArguments().drop_front(leading.size())))
      map.map(capture, argument);
    for (Operation *constant : constants)
      b.clone(*constant, map);
    return {body, b.clone(*op, map)};
  }

  /// What a call passes for `captures`, at `b`: a slice at a static offset
  /// into another buffer (a microbatch's slice of the step's inputs, the
  /// first at offset 0) as a slice at any offset, so that the same op on
  /// another slice makes the same body.
  static SmallVector<Value> passedValues(OpBuilder &b, Location loc, ArrayRef<Value> captures) {
    SmallVector<Value> passed;
    for (Value capture : captures) {
      auto type = dyn_cast<MemRefType>(capture.getType());
      auto layout = type ? dyn_cast<StridedLayoutAttr>(type.getLayout()) : StridedLayoutAttr();
      if (!layout || ShapedType::isDynamic(layout.getOffset())) {
        passed.push_back(capture);
        continue;
      }
      auto anyOffset = MemRefType::get(
          type.getShape(), type.getElementType(),
          StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, layout.getStrides()),
          type.getMemorySpace());
      passed.push_back(memref::CastOp::create(b, loc, anyOffset, capture));
    }
    return passed;
  }

  /// What stays in `function` runs on one thread and, but for the rare op
  /// with no dimension to split, below min-work: LLVM's unrolled,
  /// interleaved vector loops (and their remainders) would only make it
  /// longer to compile. A GPT-2 small training step's three such functions
  /// were 85,000 lines of LLVM IR after -O2, 22,000 for size.
  static void compileForSize(func::FuncOp function) { addPassthrough(function, "optsize"); }

  /// Adds the LLVM function attribute `name` to `function`.
  static void addPassthrough(func::FuncOp function, StringRef name) {
    MLIRContext *context = function.getContext();
    auto attribute = StringAttr::get(context, name);
    SmallVector<Attribute> passthrough;
    if (auto existing = function->getAttrOfType<ArrayAttr>(kPassthroughAttr))
      llvm::append_range(passthrough, existing);
    if (!llvm::is_contained(passthrough, attribute))
      passthrough.push_back(attribute);
    function->setAttr(kPassthroughAttr, ArrayAttr::get(context, passthrough));
  }

  /// Outlines `op` of `function` (the `outlined`th there) after `last`,
  /// the function or its last body, as a body the runtime's threads run in
  /// chunks; returns whether it did (not for an op too small, or with no
  /// dimension to split).
  FailureOr<bool> outline(linalg::LinalgOp op, func::FuncOp function, SymbolTable &symbols,
                          int64_t &outlined, Operation *&last) {
    std::optional<unsigned> dim = splitDimension(op);
    if (!dim)
      return false;
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
      return false;

    auto [captures, constants] = capturesOf(op);

    Location loc = op.getLoc();
    MLIRContext *context = op->getContext();
    OpBuilder b(op);
    SmallVector<Value> passed = passedValues(b, loc, captures.getArrayRef());
    IndexType index = b.getIndexType();

    // The body: the op on iterations [begin, end) of `dim`.
    std::string name;
    do
      name = (function.getSymName() + "_parallel" + Twine(outlined++)).str();
    while (symbols.lookup(name) || symbols.lookup(name + "_dispatch"));
    auto [body, clone] = bodyOf(op, name, {index, index}, captures, constants, passed, last);
    FunctionType type = body.getFunctionType();
    Block *entry = &body.getBody().front();
    b.setInsertionPointAfter(clone);
    auto whole = cast<TilingInterface>(clone);
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

    // A body like one made before (the same op on the same types: the
    // gradient sums and updates of a step's microbatches, a block's
    // repeated norms) runs through that one's dispatch: LLVM compiles each
    // distinct body once.
    func::FuncOp &dispatch = dispatchOfBody[bodyKey(body)];
    if (dispatch) {
      body->erase();
    } else {
      symbols.insert(body);
      last = body;
      OpBuilder declare(context);
      declare.setInsertionPoint(function);
      dispatch = func::FuncOp::create(declare, loc, name + "_dispatch", type);
      dispatch.setPrivate();
      dispatch->setAttr("pmlir.parallel_body", FlatSymbolRefAttr::get(body.getSymNameAttr()));
      symbols.insert(dispatch);
    }

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
    arguments.append(passed.begin(), passed.end());
    func::CallOp::create(b, loc, dispatch, arguments);
    LLVM_DEBUG(llvm::dbgs() << "@" << dispatch.getSymName() << ": dimension " << *dim << " of "
                            << op->getName() << ", " << captures.size() << " captures\n");
    op->erase();
    return true;
  }

  /// The dispatch of each distinct body made, by bodyKey.
  llvm::StringMap<func::FuncOp> dispatchOfBody;
  /// A small op's body and the calls of it, by bodyKey.
  struct SerialBody {
    func::FuncOp body;
    /// Each call, with the values its op read.
    SmallVector<std::pair<func::CallOp, SmallVector<Value>>> calls;
  };
  llvm::StringMap<SerialBody> serialBodies;
};

} // namespace
