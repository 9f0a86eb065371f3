//===- StepWork.cpp - What a bufferized program does, in program order ---===//
//
// Part of pmlir.
//
// measureStepWork walks a function's ops in order. A linalg op carrying a
// library call is a GEMM kernel call of its operands' shapes; another linalg
// op is a loop nest over its static ranges; a memref.copy moves its bytes; a
// call of the runtime's collectives, sends or receives (RuntimeAbi.def) ends
// the compute segment and adds a communication, its bytes, axes, peer and
// tag read from the constants the lowering passes; a call of a function of
// the module adds that function's events (each function walked once); a
// loop of a known trip count repeats its body's; the heavier branch of an
// if counts. After the GPU pipeline has made its kernels, a gpu.launch_func
// is one kernel (its buffers' bytes, their elements its operations), a
// call of a GEMM kernel a GEMM, and a gpu.memcpy a copy. The pmlir-step-work pass writes the result
// on the module (kStepWorkAttr), where pmlir-run --predict reads it after lowering.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/StepWork.h"
#include "pmlir/Conversion/BufferPeak.h"
#include "pmlir/Conversion/Passes.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/TypeBytes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace pmlir {
#define GEN_PASS_DEF_STEPWORK
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;
using sharding::CollectiveKind;

double StepWork::Gemm::flops() const {
  // out(batch..., m, n) over k: k is the lhs dimension that is not m.
  if (out.size() < 2 || lhs.size() < 2)
    return 0;
  double outElements = 1;
  for (int64_t d : out)
    outElements *= static_cast<double>(d);
  // The kernel's name ends in its transposes ("_t10": lhs transposed).
  bool transA = kernel.size() >= 2 && kernel[kernel.size() - 2] == '1';
  int64_t k = transA ? lhs[lhs.size() - 2] : lhs[lhs.size() - 1];
  return 2 * outElements * static_cast<double>(k);
}

StepWork::Compute &StepWork::Compute::operator+=(const Compute &other) {
  for (auto [gemm, calls] : other.gemmCalls)
    gemmCalls[gemm] += calls;
  parallelLoopBytes += other.parallelLoopBytes;
  parallelLoopOperations += other.parallelLoopOperations;
  serialLoopBytes += other.serialLoopBytes;
  serialLoopOperations += other.serialLoopOperations;
  copyBytes += other.copyBytes;
  loops += other.loops;
  return *this;
}

StepWork::Compute StepWork::total() const {
  Compute all;
  for (const Event &event : events)
    if (!event.communication)
      all += event.compute;
  return all;
}

double StepWork::gemmFlops() const {
  double flops = 0;
  for (auto [gemm, calls] : total().gemmCalls)
    flops += gemms[gemm].flops() * static_cast<double>(calls);
  return flops;
}

namespace {

/// The bytes of `v`, seen through the casts and reshapes that make a
/// runtime call's memref<?xT> of a static buffer.
std::optional<int64_t> staticBytes(Value v) {
  while (true) {
    if (std::optional<int64_t> bytes = bufferBytes(v.getType()))
      return bytes;
    Operation *def = v.getDefiningOp();
    if (auto cast = dyn_cast_if_present<memref::CastOp>(def))
      v = cast.getSource();
    else if (auto view = dyn_cast_if_present<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else
      return std::nullopt;
  }
}

/// The static shape of `v`, seen through the casts that make a library
/// call's memref<?x?xT> of a static buffer.
std::optional<std::vector<int64_t>> staticShape(Value v) {
  while (true) {
    if (auto type = dyn_cast<MemRefType>(v.getType()); type && type.hasStaticShape())
      return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
    auto cast = v.getDefiningOp<memref::CastOp>();
    if (!cast)
      return std::nullopt;
    v = cast.getSource();
  }
}

/// The constant codes of a runtime call's axes: a memref.get_global of a
/// constant global, through casts.
std::optional<std::vector<int64_t>> axisCodes(Value v, SymbolTable &symbols) {
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  auto get = v.getDefiningOp<memref::GetGlobalOp>();
  auto global = get ? symbols.lookup<memref::GlobalOp>(get.getName()) : nullptr;
  auto values =
      global ? dyn_cast_if_present<DenseIntElementsAttr>(global.getInitialValueAttr()) : nullptr;
  if (!values)
    return std::nullopt;
  std::vector<int64_t> codes;
  for (const APInt &code : values.getValues<APInt>())
    codes.push_back(code.getSExtValue());
  return codes;
}

std::optional<CollectiveKind> collectiveOf(rt::abi::EntryId id) {
  switch (id) {
  case rt::abi::EntryId::all_reduce:
    return CollectiveKind::AllReduce;
  case rt::abi::EntryId::all_gather:
    return CollectiveKind::AllGather;
  case rt::abi::EntryId::reduce_scatter:
    return CollectiveKind::ReduceScatter;
  case rt::abi::EntryId::all_to_all:
    return CollectiveKind::AllToAll;
  case rt::abi::EntryId::broadcast:
    return CollectiveKind::Broadcast;
  case rt::abi::EntryId::send:
    return CollectiveKind::Send;
  case rt::abi::EntryId::recv:
    return CollectiveKind::Recv;
  default:
    return std::nullopt;
  }
}

/// The operations one iteration of `op` runs (its body less the yield, a
/// math function as kMathOperations), at least one (a fill, a copy).
int64_t operationsPerIteration(linalg::LinalgOp op) {
  int64_t count = 0;
  op->getRegion(0).walk([&](Operation *inner) {
    if (inner->hasTrait<OpTrait::IsTerminator>())
      return;
    count += isa<math::MathDialect>(inner->getDialect()) ? kMathOperations : 1;
  });
  return std::max<int64_t>(1, count);
}

/// Appends `events` to `into`, the first compute joining a trailing one.
void append(std::vector<StepWork::Event> &into, const std::vector<StepWork::Event> &events,
            int64_t times = 1) {
  for (int64_t t = 0; t < times; ++t)
    for (const StepWork::Event &event : events) {
      if (!event.communication && !into.empty() && !into.back().communication) {
        into.back().compute += event.compute;
        continue;
      }
      into.push_back(event);
    }
}

class Walker {
public:
  /// `mesh` and `rank`: where the program runs, when known.
  Walker(ModuleOp module, std::optional<Mesh> mesh, int64_t rank)
      : symbols(module), mesh(std::move(mesh)), rank(rank) {}

  std::vector<StepWork::Gemm> gemms;

  /// The events of one call of `func`, walked once.
  const std::vector<StepWork::Event> *eventsOf(func::FuncOp func, std::string &error) {
    if (auto it = walked.find(func); it != walked.end())
      return &it->second;
    if (llvm::is_contained(walking, func)) {
      error = "@" + func.getSymName().str() + " calls itself";
      return nullptr;
    }
    walking.push_back(func);
    std::vector<StepWork::Event> events;
    bool ok = true;
    for (Block &block : func.getBody())
      if (!walkBlock(block, events, error)) {
        ok = false;
        break;
      }
    walking.pop_back();
    if (!ok)
      return nullptr;
    return &walked.try_emplace(func, std::move(events)).first->second;
  }

private:
  SymbolTable symbols;
  std::optional<Mesh> mesh;
  int64_t rank;
  llvm::DenseMap<func::FuncOp, std::vector<StepWork::Event>> walked;
  SmallVector<func::FuncOp> walking;
  std::map<StepWork::Gemm, int64_t> gemmIndex;
  /// The sends and receives still to come of the message group being
  /// walked (pmlir-group-messages keeps a group inside one block).
  int64_t messagesToGroup = 0;

  static StepWork::Compute &compute(std::vector<StepWork::Event> &events) {
    if (events.empty() || events.back().communication)
      events.emplace_back();
    return events.back().compute;
  }

  bool walkBlock(Block &block, std::vector<StepWork::Event> &events, std::string &error) {
    for (Operation &op : block)
      if (!walkOp(op, events, error))
        return false;
    return true;
  }

  bool dynamic(Operation &op, std::string &error) {
    error = op.getName().getStringRef().str() + " at " + sourcePosition(op.getLoc()) +
            " works on a dynamic shape: its work is not known before the run";
    return false;
  }

  /// A call of GEMM kernel `kernel` on `lhs`, `rhs` into `out`.
  bool addGemm(Operation &op, StringRef kernel, Value lhs, Value rhs, Value out,
               std::vector<StepWork::Event> &events, std::string &error) {
    auto l = staticShape(lhs), r = staticShape(rhs), o = staticShape(out);
    if (!l || !r || !o)
      return dynamic(op, error);
    StepWork::Gemm gemm{kernel.str(), *l, *r, *o};
    auto [it, inserted] = gemmIndex.try_emplace(gemm, static_cast<int64_t>(gemms.size()));
    if (inserted)
      gemms.push_back(std::move(gemm));
    compute(events).gemmCalls[it->second] += 1;
    return true;
  }

  /// A GPU kernel: a launch that reads and writes its buffers, their bytes,
  /// and as its operations their elements (a load or a store each).
  bool walkLaunch(gpu::LaunchFuncOp launch, std::vector<StepWork::Event> &events,
                  std::string &error) {
    int64_t bytes = 0, elements = 0;
    for (Value operand : launch.getKernelOperands())
      if (isa<BaseMemRefType>(operand.getType())) {
        std::optional<int64_t> b = staticBytes(operand);
        std::optional<std::vector<int64_t>> shape = staticShape(operand);
        if (!b || !shape)
          return dynamic(*launch, error);
        bytes += *b;
        int64_t n = 1;
        for (int64_t d : *shape)
          n *= d;
        elements += n;
      }
    StepWork::Compute &c = compute(events);
    ++c.loops;
    c.parallelLoopBytes += bytes;
    c.parallelLoopOperations += elements;
    return true;
  }

  bool walkLinalg(linalg::LinalgOp op, std::vector<StepWork::Event> &events, std::string &error) {
    if (auto kernel = op->getAttrOfType<StringAttr>("library_call");
        kernel && op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1)
      return addGemm(*op, kernel.getValue(), op.getDpsInputs()[0], op.getDpsInputs()[1],
                     op.getDpsInits()[0], events, error);
    int64_t iterations = 1;
    for (int64_t extent : op.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(extent))
        return dynamic(*op, error);
      iterations *= extent;
    }
    int64_t bytes = 0;
    for (Value operand : op->getOperands())
      if (isa<MemRefType>(operand.getType())) {
        std::optional<int64_t> b = bufferBytes(operand.getType());
        if (!b)
          return dynamic(*op, error);
        bytes += *b;
      }
    int64_t operations = iterations * operationsPerIteration(op);
    StepWork::Compute &c = compute(events);
    ++c.loops;
    if (operations >= rt::abi::kParallelMinWork) {
      c.parallelLoopBytes += bytes;
      c.parallelLoopOperations += operations;
    } else {
      c.serialLoopBytes += bytes;
      c.serialLoopOperations += operations;
    }
    return true;
  }

  /// The integer `v` holds on this rank: a constant, the rank's coordinate
  /// or index in a group (the runtime's answers, from the mesh), and
  /// integer arithmetic on them.
  std::optional<int64_t> evaluate(Value v) {
    APInt constant;
    if (matchPattern(v, m_ConstantInt(&constant)))
      return constant.getSExtValue();
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto call = dyn_cast<func::CallOp>(def)) {
      const rt::abi::Entry *entry = rt::abi::entryOfSymbol(call.getCallee().str());
      if (!entry || !mesh || rank < 0 || rank >= mesh->numRanks() || call.getNumOperands() != 1)
        return std::nullopt;
      auto id = static_cast<rt::abi::EntryId>(entry - rt::abi::entries().data());
      if (id == rt::abi::EntryId::coordinate) {
        std::optional<int64_t> code = evaluate(call.getOperand(0));
        std::optional<SubAxis> part = code ? mesh->axisOfCode(*code) : std::nullopt;
        if (!part)
          return std::nullopt;
        int64_t whole = mesh->coordinates(rank)[part->index];
        return part->coordinate(whole, mesh->axisSizes()[part->index]);
      }
      if (id == rt::abi::EntryId::index_in_group) {
        std::optional<std::vector<int64_t>> codes = axisCodes(call.getOperand(0), symbols);
        if (!codes)
          return std::nullopt;
        std::vector<SubAxis> parts;
        for (int64_t code : *codes) {
          std::optional<SubAxis> part = mesh->axisOfCode(code);
          if (!part)
            return std::nullopt;
          parts.push_back(*part);
        }
        return mesh->indexInGroup(rank, parts);
      }
      return std::nullopt;
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp,
            arith::TruncIOp>(def))
      return evaluate(def->getOperand(0));
    if (def->getNumOperands() != 2)
      return std::nullopt;
    std::optional<int64_t> a = evaluate(def->getOperand(0)), b = evaluate(def->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    if (isa<arith::AddIOp>(def))
      return *a + *b;
    if (isa<arith::SubIOp>(def))
      return *a - *b;
    if (isa<arith::MulIOp>(def))
      return *a * *b;
    if (*b == 0)
      return std::nullopt;
    if (isa<arith::RemUIOp, arith::RemSIOp>(def))
      return *a % *b;
    if (isa<arith::DivUIOp, arith::DivSIOp>(def))
      return *a / *b;
    return std::nullopt;
  }

  bool walkRuntimeCall(func::CallOp call, const rt::abi::Entry &entry,
                       std::vector<StepWork::Event> &events, std::string &error) {
    auto id = static_cast<rt::abi::EntryId>(&entry - rt::abi::entries().data());
    if (id == rt::abi::EntryId::message_group) {
      std::optional<int64_t> count = evaluate(call.getOperand(0));
      if (!count) {
        error = "the count of " + call.getCallee().str() + " at " + sourcePosition(call.getLoc()) +
                " is no constant";
        return false;
      }
      messagesToGroup = *count;
      return true;
    }
    if (id == rt::abi::EntryId::moe_all_to_all || id == rt::abi::EntryId::moe_all_to_all_back) {
      error = call.getCallee().str() + " at " + sourcePosition(call.getLoc()) +
              " sends as many rows as the tokens choose its experts, which is data";
      return false;
    }
    std::optional<CollectiveKind> kind = collectiveOf(id);
    if (!kind)
      return true; // coordinates, trace spans, parallel loops' dispatch
    StepWork::Communication comm;
    comm.kind = *kind;
    std::vector<int64_t> integers;
    for (auto [operand, param] : llvm::zip(call.getOperands(), entry.params)) {
      if (param == rt::abi::BUFFER) {
        std::optional<int64_t> bytes = staticBytes(operand);
        if (!bytes)
          return dynamic(*call, error);
        comm.bytes = std::max(comm.bytes, *bytes);
      } else if (param == rt::abi::AXES) {
        std::optional<std::vector<int64_t>> axes = axisCodes(operand, symbols);
        if (!axes) {
          error = "the axes of " + call.getCallee().str() + " at " + sourcePosition(call.getLoc()) +
                  " are no constant";
          return false;
        }
        comm.axes = std::move(*axes);
      } else if (param == rt::abi::I64) {
        std::optional<int64_t> value = evaluate(operand);
        if (!value) {
          error = "the peer or tag of " + call.getCallee().str() + " at " +
                  sourcePosition(call.getLoc()) +
                  " is neither a constant nor computed from the rank's coordinates" +
                  (mesh && rank >= 0 ? "" : " (no rank given)");
          return false;
        }
        integers.push_back(*value);
      }
    }
    // (peer, tag) of a send or receive; (root) of a broadcast.
    if (!integers.empty())
      comm.peer = integers[0];
    if (integers.size() > 1)
      comm.tag = integers[1];
    if (messagesToGroup > 0 &&
        (comm.kind == CollectiveKind::Send || comm.kind == CollectiveKind::Recv))
      comm.groupedWithNext = --messagesToGroup > 0;
    events.push_back({{}, comm});
    return true;
  }

  bool walkOp(Operation &op, std::vector<StepWork::Event> &events, std::string &error) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      return walkLinalg(linalgOp, events, error);
    if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      std::optional<int64_t> bytes = bufferBytes(copy.getSource().getType());
      if (!bytes)
        return dynamic(op, error);
      compute(events).copyBytes += *bytes;
      return true;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
      return walkLaunch(launch, events, error);
    if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
      std::optional<int64_t> bytes = staticBytes(copy.getSrc());
      if (!bytes)
        return dynamic(op, error);
      compute(events).copyBytes += *bytes;
      return true;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (const rt::abi::Entry *entry = rt::abi::entryOfSymbol(call.getCallee().str()))
        return walkRuntimeCall(call, *entry, events, error);
      // A GEMM linalg op lowered to its library call (the GPU's kernels).
      if (rt::abi::isGemmKernel(call.getCallee()) && call.getNumOperands() >= 3)
        return addGemm(op, call.getCallee(), call.getOperand(0), call.getOperand(1),
                       call.getOperand(2), events, error);
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return true; // the libraries' own entry points
      const std::vector<StepWork::Event> *inner = eventsOf(callee, error);
      if (!inner)
        return false;
      append(events, *inner);
      return true;
    }
    if (op.getNumRegions() == 0)
      return true;
    // A region's events from scratch; the heaviest branch counts, a loop's
    // body once per trip.
    std::optional<std::vector<StepWork::Event>> heaviest;
    auto weight = [](const std::vector<StepWork::Event> &list) {
      int64_t w = 0;
      for (const StepWork::Event &e : list)
        w += e.communication ? 1
                             : static_cast<int64_t>(e.compute.gemmCalls.size()) + e.compute.loops +
                                   (e.compute.copyBytes > 0);
      return w;
    };
    for (Region &region : op.getRegions()) {
      std::vector<StepWork::Event> inside;
      for (Block &block : region)
        if (!walkBlock(block, inside, error))
          return false;
      if (!heaviest || weight(inside) > weight(*heaviest))
        heaviest = std::move(inside);
    }
    if (!heaviest || heaviest->empty())
      return true;
    int64_t trips = 1;
    if (isa<LoopLikeOpInterface>(op)) {
      std::optional<int64_t> known;
      if (auto loop = dyn_cast<scf::ForOp>(op))
        if (std::optional<APInt> n = loop.getStaticTripCount())
          known = static_cast<int64_t>(n->getZExtValue());
      if (!known) {
        error = op.getName().getStringRef().str() + " at " + sourcePosition(op.getLoc()) +
                " runs a number of iterations not known before the run";
        return false;
      }
      trips = *known;
    }
    append(events, *heaviest, trips);
    return true;
  }
};

} // namespace

std::optional<StepWork> pmlir::measureStepWork(func::FuncOp entry, int64_t rank,
                                               std::string &error) {
  auto module = entry->getParentOfType<ModuleOp>();
  std::optional<Mesh> mesh;
  if (auto attr = module->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr)) {
    std::string why;
    mesh = attr.toMesh(why);
  }
  Walker walker(module, std::move(mesh), rank);
  const std::vector<StepWork::Event> *events = walker.eventsOf(entry, error);
  if (!events)
    return std::nullopt;
  StepWork work;
  work.gemms = std::move(walker.gemms);
  work.events = *events;
  return work;
}

DictionaryAttr StepWork::toAttribute(MLIRContext *context) const {
  Builder b(context);
  SmallVector<Attribute> gemmList;
  for (const Gemm &gemm : gemms)
    gemmList.push_back(b.getDictionaryAttr({
        b.getNamedAttr("kernel", b.getStringAttr(gemm.kernel)),
        b.getNamedAttr("lhs", b.getDenseI64ArrayAttr(gemm.lhs)),
        b.getNamedAttr("rhs", b.getDenseI64ArrayAttr(gemm.rhs)),
        b.getNamedAttr("out", b.getDenseI64ArrayAttr(gemm.out)),
    }));
  // A compute segment: [0, parallel loop bytes, parallel loop operations,
  // serial loop bytes, serial loop operations, copy bytes, loops, then
  // (gemm, calls) pairs]; a communication: [1, kind, bytes, peer, tag,
  // grouped with the next, axes...].
  SmallVector<Attribute> eventList;
  for (const Event &event : events) {
    SmallVector<int64_t> fields;
    if (const std::optional<Communication> &comm = event.communication) {
      fields = {1,         static_cast<int64_t>(comm->kind), comm->bytes, comm->peer,
                comm->tag, comm->groupedWithNext ? 1 : 0};
      fields.append(comm->axes.begin(), comm->axes.end());
    } else {
      const Compute &c = event.compute;
      fields = {0,
                c.parallelLoopBytes,
                c.parallelLoopOperations,
                c.serialLoopBytes,
                c.serialLoopOperations,
                c.copyBytes,
                c.loops};
      for (auto [gemm, calls] : c.gemmCalls) {
        fields.push_back(gemm);
        fields.push_back(calls);
      }
    }
    eventList.push_back(b.getDenseI64ArrayAttr(fields));
  }
  return b.getDictionaryAttr({
      b.getNamedAttr("gemms", b.getArrayAttr(gemmList)),
      b.getNamedAttr("events", b.getArrayAttr(eventList)),
  });
}

std::optional<StepWork> StepWork::fromAttribute(DictionaryAttr attr) {
  auto gemmList = attr ? attr.getAs<ArrayAttr>("gemms") : nullptr;
  auto eventList = attr ? attr.getAs<ArrayAttr>("events") : nullptr;
  if (!gemmList || !eventList)
    return std::nullopt;
  StepWork work;
  for (Attribute a : gemmList) {
    auto d = dyn_cast<DictionaryAttr>(a);
    auto kernel = d ? d.getAs<StringAttr>("kernel") : nullptr;
    auto lhs = d ? d.getAs<DenseI64ArrayAttr>("lhs") : nullptr;
    auto rhs = d ? d.getAs<DenseI64ArrayAttr>("rhs") : nullptr;
    auto out = d ? d.getAs<DenseI64ArrayAttr>("out") : nullptr;
    if (!kernel || !lhs || !rhs || !out)
      return std::nullopt;
    work.gemms.push_back({kernel.str(),
                          {lhs.asArrayRef().begin(), lhs.asArrayRef().end()},
                          {rhs.asArrayRef().begin(), rhs.asArrayRef().end()},
                          {out.asArrayRef().begin(), out.asArrayRef().end()}});
  }
  for (Attribute a : eventList) {
    auto array = dyn_cast<DenseI64ArrayAttr>(a);
    if (!array || array.empty())
      return std::nullopt;
    ArrayRef<int64_t> f = array.asArrayRef();
    Event event;
    if (f[0] == 1) {
      if (f.size() < 6 || f[1] < 0 || f[1] > static_cast<int64_t>(CollectiveKind::Recv))
        return std::nullopt;
      event.communication = Communication{static_cast<CollectiveKind>(f[1]),
                                          f[2],
                                          std::vector<int64_t>(f.begin() + 6, f.end()),
                                          f[3],
                                          f[4],
                                          f[5] != 0};
    } else {
      if (f.size() < 7 || (f.size() - 7) % 2 != 0)
        return std::nullopt;
      Compute &c = event.compute;
      c.parallelLoopBytes = f[1];
      c.parallelLoopOperations = f[2];
      c.serialLoopBytes = f[3];
      c.serialLoopOperations = f[4];
      c.copyBytes = f[5];
      c.loops = f[6];
      for (size_t i = 7; i < f.size(); i += 2) {
        if (f[i] < 0 || f[i] >= static_cast<int64_t>(work.gemms.size()))
          return std::nullopt;
        c.gemmCalls[f[i]] = f[i + 1];
      }
    }
    work.events.push_back(std::move(event));
  }
  return work;
}

namespace {

struct StepWorkPass : public pmlir::impl::StepWorkBase<StepWorkPass> {
  using StepWorkBase::StepWorkBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func)
      return; // a module of other functions: nothing to measure
    std::string error;
    std::optional<StepWork> work = measureStepWork(func, rank, error);
    Builder b(&getContext());
    module->setAttr(kStepWorkAttr,
                    work ? work->toAttribute(&getContext())
                         : b.getDictionaryAttr(b.getNamedAttr("error", b.getStringAttr(error))));
  }
};

} // namespace
