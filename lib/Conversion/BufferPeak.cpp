//===- BufferPeak.cpp - The heaviest point of a bufferized program --------===//
//
// Part of pmlir.
//
// measureBufferPeak walks a function's ops in order with the buffers live in
// its frame: a memref.alloc adds one, a memref.dealloc of it (or of a view of
// it) removes it, a call adds the callee's peak on top for its duration and
// leaves the buffers it returns. A callee's peak and what it returns do not
// depend on where it is called (shapes are static), so each function is
// walked once. Regions (an scf.if's branches, a loop's body) are walked from
// the state before them: the heavier branch counts, and a loop body that
// keeps buffers keeps them for every iteration.
//
// The pmlir-buffer-peak pass writes the result on the module
// (kBufferPeakAttr), where pmlir-run --predict reads it after lowering.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/BufferPeak.h"
#include "pmlir/Conversion/Passes.h"
#include "pmlir/Support/TypeBytes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <map>

namespace pmlir {
#define GEN_PASS_DEF_BUFFERPEAK
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

std::string pmlir::sourcePosition(Location location) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto file = location->findInstanceOf<FileLineColLoc>())
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  else
    location.print(os);
  return s;
}

llvm::StringRef pmlir::bufferSourceName(BufferSource source) {
  switch (source) {
  case BufferSource::ForwardLayers:
    return "forward_layers";
  case BufferSource::BackwardLayers:
    return "backward_layers";
  case BufferSource::Entry:
    return "entry";
  case BufferSource::InCall:
    return "in_call";
  }
  llvm_unreachable("unknown buffer source");
}

namespace {

constexpr size_t kLargest = 5;

/// One live buffer, as the heaviest point lists it.
struct Live {
  int64_t bytes = 0;
  /// Buffers of one op kept by every iteration of a loop: one a trip.
  int64_t copies = 1;
  BufferSource source = BufferSource::Entry;
  Type type;
  LocationAttr location;
};

std::string text(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// The buffer `v` is a view of (itself if it is none).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// What a function holds: its heaviest point above what was live when it
/// was called, the buffers live there, and the bytes it returns.
struct Profile {
  int64_t peak = 0;
  std::vector<Live> atPeak;
  std::string at;
  int64_t returned = 0;
};

class Walker {
public:
  Walker(ModuleOp module) : symbols(module) {}

  /// The profile of `func`, walked once.
  const Profile *profile(func::FuncOp func, std::string &error) {
    if (auto it = profiles.find(func); it != profiles.end())
      return &it->second;
    if (llvm::is_contained(walking, func)) {
      error = "@" + func.getSymName().str() + " calls itself";
      return nullptr;
    }
    walking.push_back(func);
    Frame frame;
    frame.func = func;
    bool ok = true;
    for (Block &block : func.getBody())
      if (!walkBlock(block, frame, error)) {
        ok = false;
        break;
      }
    walking.pop_back();
    if (!ok)
      return nullptr;
    Profile result;
    result.peak = frame.peak;
    result.atPeak = std::move(frame.atPeak);
    result.at = std::move(frame.at);
    result.returned = frame.current;
    return &profiles.emplace(func, std::move(result)).first->second;
  }

private:
  /// One function's walk: its live buffers by root value, their sum, and
  /// its heaviest point so far.
  struct Frame {
    func::FuncOp func;
    llvm::MapVector<Value, Live> live;
    int64_t current = 0;
    int64_t peak = 0;
    std::vector<Live> atPeak;
    std::string at;
  };

  /// Records the point at `op` if `above` (bytes held by what runs there,
  /// on top of the frame's live buffers) makes it the heaviest yet.
  void notePoint(Frame &frame, Operation *op, int64_t above, const Profile *callee) {
    if (frame.current + above <= frame.peak)
      return;
    frame.peak = frame.current + above;
    frame.atPeak.clear();
    for (auto &[root, live] : frame.live)
      frame.atPeak.push_back(live);
    std::string where = op->getName().getStringRef().str();
    if (auto call = dyn_cast<func::CallOp>(op))
      where += " @" + call.getCallee().str();
    where += " (" + sourcePosition(op->getLoc()) + ")";
    if (callee) {
      for (Live live : callee->atPeak) {
        live.source = BufferSource::InCall;
        frame.atPeak.push_back(live);
      }
      if (!callee->at.empty())
        where += " > " + callee->at;
    }
    frame.at = std::move(where);
  }

  bool add(Frame &frame, Value buffer, BufferSource source, Operation *op, std::string &error) {
    std::optional<int64_t> bytes = bufferBytes(buffer.getType());
    if (!bytes) {
      error = "the buffer of " + op->getName().getStringRef().str() + " at " +
              sourcePosition(op->getLoc()) + " has a dynamic shape (" + text(buffer.getType()) +
              "): its bytes are not known before the run";
      return false;
    }
    frame.live[buffer] = Live{*bytes, 1, source, buffer.getType(), op->getLoc()};
    frame.current += *bytes;
    return true;
  }

  bool walkBlock(Block &block, Frame &frame, std::string &error) {
    for (Operation &op : block)
      if (!walkOp(op, frame, error))
        return false;
    return true;
  }

  bool walkOp(Operation &op, Frame &frame, std::string &error) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (!add(frame, alloc.getResult(), BufferSource::Entry, &op, error))
        return false;
      notePoint(frame, &op, 0, nullptr);
      return true;
    }
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      Value root = rootOf(dealloc.getMemref());
      auto it = frame.live.find(root);
      if (it == frame.live.end()) {
        // A buffer of the caller's (an argument the function owns): it
        // leaves the caller's account when freed here.
        if (std::optional<int64_t> bytes = bufferBytes(dealloc.getMemref().getType()))
          frame.current -= *bytes;
        return true;
      }
      frame.current -= it->second.bytes;
      frame.live.erase(it);
      return true;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return true; // the runtime's and the libraries' own entry points
      const Profile *profile = this->profile(callee, error);
      if (!profile)
        return false;
      notePoint(frame, &op, profile->peak, profile);
      BufferSource source = callee->hasAttr(kForwardLayerAttr)    ? BufferSource::ForwardLayers
                            : callee->hasAttr(kBackwardLayerAttr) ? BufferSource::BackwardLayers
                                                                  : BufferSource::Entry;
      int64_t returned = 0;
      for (Value result : call.getResults())
        if (isa<MemRefType>(result.getType())) {
          if (!add(frame, result, source, &op, error))
            return false;
          returned += frame.live[result].bytes;
        }
      // What the callee returns that is no buffer of its own (a view of an
      // argument) was counted above as if it were: take it back out.
      frame.current -= returned - profile->returned;
      return true;
    }
    // Regions without buffers of their own (a linalg.generic's body, a
    // loop of loads and stores) change nothing.
    bool holdsBuffers =
        op.getNumRegions() != 0 &&
        op.walk([&](Operation *inner) {
            return inner != &op && isa<memref::AllocOp, memref::DeallocOp, func::CallOp>(inner)
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          }).wasInterrupted();
    if (!holdsBuffers)
      return true;
    // Each region from the state before the op; the heaviest end state
    // goes on (the heavier branch of an if).
    Frame before = frame;
    std::optional<Frame> heaviest;
    for (Region &region : op.getRegions()) {
      Frame inside = before;
      inside.peak = frame.peak;
      inside.at = frame.at;
      inside.atPeak = frame.atPeak;
      for (Block &block : region)
        if (!walkBlock(block, inside, error))
          return false;
      if (inside.peak > frame.peak) {
        frame.peak = inside.peak;
        frame.atPeak = inside.atPeak;
        frame.at = inside.at;
      }
      if (!heaviest || inside.current > heaviest->current)
        heaviest = std::move(inside);
    }
    if (heaviest) {
      frame.live = std::move(heaviest->live);
      frame.current = heaviest->current;
    }
    int64_t kept = frame.current - before.current;
    if (kept > 0 && isa<LoopLikeOpInterface>(op)) {
      std::optional<int64_t> trips;
      if (auto loop = dyn_cast<scf::ForOp>(op))
        if (std::optional<APInt> n = loop.getStaticTripCount())
          trips = static_cast<int64_t>(n->getZExtValue());
      if (!trips) {
        error = op.getName().getStringRef().str() + " at " + sourcePosition(op.getLoc()) +
                " keeps buffers over a number of iterations not known before the run";
        return false;
      }
      // Every iteration keeps what the first did; the last ends heaviest.
      for (auto &[root, live] : frame.live)
        if (!before.live.count(root)) {
          live.bytes *= *trips;
          live.copies *= *trips;
        }
      frame.current += kept * (*trips - 1);
      notePoint(frame, &op, 0, nullptr);
    }
    return true;
  }

  SymbolTable symbols;
  std::map<Operation *, Profile> profiles;
  SmallVector<Operation *> walking;
};

} // namespace

std::optional<BufferPeak> pmlir::measureBufferPeak(func::FuncOp entry, std::string &error) {
  auto module = entry->getParentOfType<ModuleOp>();
  Walker walker(module);
  const Profile *profile = walker.profile(entry, error);
  if (!profile)
    return std::nullopt;
  BufferPeak peak;
  peak.peakBytes = profile->peak;
  peak.resultBytes = profile->returned;
  peak.at = "@" + entry.getSymName().str() + (profile->at.empty() ? "" : ": " + profile->at);
  std::vector<Live> live = profile->atPeak;
  for (const Live &l : live)
    peak.bytesBySource[static_cast<size_t>(l.source)] += l.bytes;
  std::stable_sort(live.begin(), live.end(),
                   [](const Live &a, const Live &b) { return a.bytes > b.bytes; });
  for (const Live &l : live)
    for (int64_t copy = 0; copy < l.copies; ++copy)
      peak.liveBytes.push_back(l.bytes / l.copies);
  llvm::sort(peak.liveBytes, std::greater<int64_t>());
  for (size_t i = 0; i < std::min(kLargest, live.size()); ++i)
    peak.largest.push_back(
        {live[i].bytes,
         (live[i].copies > 1 ? std::to_string(live[i].copies) + " x " : "") + text(live[i].type),
         sourcePosition(Location(live[i].location))});
  return peak;
}

DictionaryAttr BufferPeak::toAttribute(MLIRContext *context) const {
  Builder b(context);
  SmallVector<NamedAttribute> sources;
  for (size_t s = 0; s < kNumBufferSources; ++s)
    sources.push_back(
        b.getNamedAttr(bufferSourceName(BufferSource(s)), b.getI64IntegerAttr(bytesBySource[s])));
  SmallVector<Attribute> buffers;
  for (const Buffer &buffer : largest)
    buffers.push_back(b.getDictionaryAttr({
        b.getNamedAttr("bytes", b.getI64IntegerAttr(buffer.bytes)),
        b.getNamedAttr("type", b.getStringAttr(buffer.type)),
        b.getNamedAttr("loc", b.getStringAttr(buffer.location)),
    }));
  return b.getDictionaryAttr({
      b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(peakBytes)),
      b.getNamedAttr("by_source", b.getDictionaryAttr(sources)),
      b.getNamedAttr("result_bytes", b.getI64IntegerAttr(resultBytes)),
      b.getNamedAttr("at", b.getStringAttr(at)),
      b.getNamedAttr("largest", b.getArrayAttr(buffers)),
      b.getNamedAttr("live_bytes", b.getDenseI64ArrayAttr(liveBytes)),
  });
}

std::optional<BufferPeak> BufferPeak::fromAttribute(DictionaryAttr attr) {
  auto integer = [](DictionaryAttr d, StringRef name) -> std::optional<int64_t> {
    if (auto i = d ? d.getAs<IntegerAttr>(name) : nullptr)
      return i.getInt();
    return std::nullopt;
  };
  BufferPeak peak;
  auto bytes = integer(attr, "peak_bytes");
  auto results = integer(attr, "result_bytes");
  auto sources = attr ? attr.getAs<DictionaryAttr>("by_source") : nullptr;
  auto at = attr ? attr.getAs<StringAttr>("at") : nullptr;
  auto largest = attr ? attr.getAs<ArrayAttr>("largest") : nullptr;
  auto live = attr ? attr.getAs<DenseI64ArrayAttr>("live_bytes") : nullptr;
  if (!bytes || !results || !sources || !at || !largest || !live)
    return std::nullopt;
  peak.liveBytes.assign(live.asArrayRef().begin(), live.asArrayRef().end());
  peak.peakBytes = *bytes;
  peak.resultBytes = *results;
  peak.at = at.str();
  for (size_t s = 0; s < kNumBufferSources; ++s) {
    auto n = integer(sources, bufferSourceName(BufferSource(s)));
    if (!n)
      return std::nullopt;
    peak.bytesBySource[s] = *n;
  }
  for (Attribute a : largest) {
    auto d = dyn_cast<DictionaryAttr>(a);
    auto n = integer(d, "bytes");
    auto type = d ? d.getAs<StringAttr>("type") : nullptr;
    auto loc = d ? d.getAs<StringAttr>("loc") : nullptr;
    if (!n || !type || !loc)
      return std::nullopt;
    peak.largest.push_back({*n, type.str(), loc.str()});
  }
  return peak;
}

namespace {

struct BufferPeakPass : public pmlir::impl::BufferPeakBase<BufferPeakPass> {
  using BufferPeakBase::BufferPeakBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func)
      return; // a module of other functions: nothing to measure
    std::string error;
    std::optional<BufferPeak> peak = measureBufferPeak(func, error);
    Builder b(&getContext());
    module->setAttr(kBufferPeakAttr,
                    peak ? peak->toAttribute(&getContext())
                         : b.getDictionaryAttr(b.getNamedAttr("error", b.getStringAttr(error))));
  }
};

} // namespace
