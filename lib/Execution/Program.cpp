//===- Program.cpp - A compiled program with its arguments bound ----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Program.h"

#include "pmlir/Execution/HostJit.h"
#include "pmlir/Execution/ObjectCache.h"

#include "pmlir/Conversion/RoundedArguments.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Runtime/GpuRuntime.h"
#include "pmlir/Runtime/Runtime.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <chrono>
#include <cstring>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::exec;

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The per-dimension mesh axes of a `tfm.sharding`: a #tfm.sharding's dims
/// or the plain list [[...], ...] of hand-written per-rank programs.
std::optional<DimAxes> shardingOf(Attribute attr, std::string &error) {
  ArrayAttr dims;
  if (auto sharding = dyn_cast_or_null<tfm::ShardingAttr>(attr))
    dims = sharding.getDims();
  else
    dims = dyn_cast_or_null<ArrayAttr>(attr);
  if (!dims)
    return std::nullopt;
  DimAxes axes;
  for (auto [d, entry] : llvm::enumerate(dims)) {
    auto list = dyn_cast<ArrayAttr>(entry);
    if (!list) {
      error = "tfm.sharding entry " + std::to_string(d) + " is not a list of mesh axes";
      return std::nullopt;
    }
    axes.emplace_back();
    for (Attribute a : list) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name) {
        error = "tfm.sharding names mesh axis (not a string), which --mesh does not have";
        return std::nullopt;
      }
      axes.back().push_back(name.str());
    }
  }
  return axes;
}

/// The part counts of a #tfm.sharding (empty: none).
std::vector<int64_t> partsOf(Attribute attr) {
  auto sharding = dyn_cast_or_null<tfm::ShardingAttr>(attr);
  if (!sharding)
    return {};
  return std::vector<int64_t>(sharding.getParts().begin(), sharding.getParts().end());
}

/// The dimension a tfm.head_tail_dim names (nullopt: none); a negative
/// one sets `error`.
std::optional<size_t> headTailDimOf(Attribute attr, std::string &error) {
  auto dim = dyn_cast_or_null<IntegerAttr>(attr);
  if (!dim)
    return std::nullopt;
  if (dim.getInt() < 0) {
    error = "has tfm.head_tail_dim " + std::to_string(dim.getInt()) + ", which is no dimension";
    return std::nullopt;
  }
  return static_cast<size_t>(dim.getInt());
}

std::optional<std::vector<int64_t>> globalShapeOf(Attribute attr) {
  auto type = dyn_cast_or_null<TypeAttr>(attr);
  auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : RankedTensorType();
  if (!tensor)
    return std::nullopt;
  return std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end());
}

} // namespace

bool exec::describeEntry(func::FuncOp entry, EntrySignature &signature, std::string &error,
                         bool mayReturnNothing) {
  std::string where = " of @" + entry.getSymName().str();
  signature = EntrySignature();
  signature.name = entry.getSymName().str();
  if (entry.getNumResults() == 0 && !mayReturnNothing) {
    error = "@" + signature.name + " returns nothing; pmlir-run runs functions that return tensors";
    return false;
  }
  for (unsigned i = 0; i < entry.getNumResults(); ++i) {
    auto resultType = dyn_cast<RankedTensorType>(entry.getResultTypes()[i]);
    std::string which = entry.getNumResults() == 1 ? "the result" : "result #" + std::to_string(i);
    if (!resultType || !resultType.hasStaticShape() || !resultType.getElementType().isF32()) {
      error = which + where + " must be an f32 tensor of static shape, is " +
              typeText(entry.getResultTypes()[i]);
      return false;
    }
    TensorSpec result;
    result.name = entry.getNumResults() == 1 ? "logits" : "result" + std::to_string(i);
    if (auto name = entry.getResultAttrOfType<StringAttr>(i, tfm::kNameAttr))
      result.name = name.str();
    for (const TensorSpec &other : signature.results)
      if (other.name == result.name) {
        error = which + where + " has the name '" + result.name + "' of an earlier result";
        return false;
      }
    result.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    std::string bad;
    result.sharding = shardingOf(entry.getResultAttr(i, tfm::kShardingAttr), bad);
    if (bad.empty())
      result.headTailDim = headTailDimOf(entry.getResultAttr(i, tfm::kHeadTailDimAttr), bad);
    if (!bad.empty()) {
      error = which + where + " " + bad;
      return false;
    }
    result.global = globalShapeOf(entry.getResultAttr(i, tfm::kGlobalTypeAttr));
    result.parts = partsOf(entry.getResultAttr(i, tfm::kShardingAttr));
    if (auto updates = entry.getResultAttrOfType<IntegerAttr>(i, tfm::kUpdatesAttr)) {
      if (updates.getInt() < 0 || updates.getInt() >= entry.getNumArguments() ||
          entry.getArgumentTypes()[updates.getInt()] != resultType) {
        error = which + where + " updates argument #" + std::to_string(updates.getInt()) +
                ", which is no argument of its type";
        return false;
      }
      result.updates = updates.getInt();
    }
    signature.results.push_back(std::move(result));
  }

  llvm::StringSet<> argumentNames;
  for (BlockArgument arg : entry.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape()) {
      error = "argument #" + std::to_string(i) + where + " must be a tensor of static shape";
      return false;
    }
    auto name = entry.getArgAttrOfType<StringAttr>(i, tfm::kNameAttr);
    if (!name) {
      error = "argument #" + std::to_string(i) + where + " has no tfm.name to bind it by";
      return false;
    }
    // Files bind arguments by name: two of one name would take one tensor.
    if (!argumentNames.insert(name.getValue()).second) {
      error = "argument #" + std::to_string(i) + where + " has the tfm.name '" + name.str() +
              "' of an earlier argument";
      return false;
    }
    TensorSpec spec;
    spec.name = name.str();
    spec.shape.assign(type.getShape().begin(), type.getShape().end());
    Type element = type.getElementType();
    if (element.isF32())
      spec.element = ElementKind::F32;
    else if (element.isInteger(64))
      spec.element = ElementKind::I64;
    else if (element.isInteger(32))
      spec.element = ElementKind::I32;
    else {
      error = "argument '" + spec.name + "' has unsupported element type";
      return false;
    }
    spec.role = tfm::argumentRole(entry, i);
    std::string bad;
    spec.sharding = shardingOf(entry.getArgAttr(i, tfm::kShardingAttr), bad);
    if (bad.empty())
      spec.headTailDim = headTailDimOf(entry.getArgAttr(i, tfm::kHeadTailDimAttr), bad);
    if (!bad.empty()) {
      error = "argument '" + spec.name + "' " + bad;
      return false;
    }
    spec.global = globalShapeOf(entry.getArgAttr(i, tfm::kGlobalTypeAttr));
    spec.parts = partsOf(entry.getArgAttr(i, tfm::kShardingAttr));
    signature.arguments.push_back(std::move(spec));
  }
  for (const TensorSpec &result : signature.results)
    if (result.updates)
      signature.arguments[*result.updates].updated = true;
  return true;
}

bool JitProgram::objectFromCache() const { return jit->fromCache(); }
const std::string &JitProgram::objectCacheWarning() const { return jit->cacheWarning(); }

JitProgram::~JitProgram() {
  releaseResults();
  forgetRounded();
  for (void *p : deviceArguments)
    if (p)
      pmlir_rt_gpu_free(p);
}

std::unique_ptr<JitProgram> JitProgram::create(ModuleOp lowered, const EntrySignature &signature,
                                               const CompileOptions &compile, std::string &error) {
  std::unique_ptr<JitProgram> program(new JitProgram());
  program->symbol = "_mlir_ciface_" + signature.name;
  program->device = compile.device;
  for (const TensorSpec &argument : signature.arguments)
    program->argumentElementBytes.push_back(elementWidth(argument.element));
  for (int64_t i : roundedArguments(lowered)) {
    if (i < 0 || static_cast<size_t>(i) >= signature.arguments.size() ||
        signature.arguments[i].element != ElementKind::F32) {
      error = "the lowered @" + signature.name + " takes the bf16 form of argument #" +
              std::to_string(i) + " (" + kRoundedArgumentsAttr.str() +
              "), which is no f32 argument of it";
      return nullptr;
    }
    program->roundedFrom.push_back(static_cast<size_t>(i));
    program->formUpdated.push_back(signature.arguments[i].updated);
  }
  for (int64_t i : bf16OnlyArguments(lowered)) {
    if (!llvm::is_contained(program->roundedFrom, static_cast<size_t>(i))) {
      error = "the lowered @" + signature.name + " reads argument #" + std::to_string(i) +
              " only in bf16 (" + kBf16OnlyArgumentsAttr.str() + "), but takes no bf16 form of it";
      return nullptr;
    }
    program->bf16Only.push_back(static_cast<size_t>(i));
  }
  for (const TensorSpec &result : signature.results)
    program->resultShapes.push_back(result.shape);
  for (const TensorSpec &result : signature.results) {
    // A result that updates an argument is written into it, not returned.
    if (result.updates) {
      program->resultAt.push_back(kInPlace);
      continue;
    }
    MemRefDescriptor descriptor(nullptr, result.shape);
    program->resultAt.push_back(program->resultWords.size());
    llvm::append_range(program->resultWords, descriptor.words);
  }
  auto start = std::chrono::steady_clock::now();
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = translateModuleToLLVMIR(lowered, *context);
  if (!module) {
    error = "JIT compilation failed: the module does not translate to LLVM IR";
    return nullptr;
  }
  std::vector<std::pair<const char *, void *>> symbols;
  for (const pmlir_rt_symbol *table :
       {pmlir_rt_cpu_kernel_symbols(), pmlir_rt_collective_symbols(), pmlir_rt_gpu_symbols()})
    for (const pmlir_rt_symbol *s = table; s->name; ++s)
      symbols.emplace_back(s->name, s->address);
  HostJit::Options options;
  options.optLevel = compile.optLevel;
  options.keepCompiled = compile.keepObject;
  std::optional<ObjectCache> cache;
  if (std::optional<std::string> directory = ObjectCache::defaultDirectory())
    cache.emplace(*directory);
  options.cache = cache ? &*cache : nullptr;
  auto created =
      HostJit::create(std::move(module), std::move(context), program->symbol, symbols, options);
  if (!created) {
    error = "JIT compilation failed: " + llvm::toString(created.takeError());
    return nullptr;
  }
  program->jit = std::move(*created);
  program->seconds.llvm =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return program;
}

void JitProgram::bind(std::vector<BoundArgument> &args, bool releaseBf16Only) {
  releaseResults();
  descriptors.clear();
  pointers.clear();
  packed.clear();
  for (void *p : deviceArguments)
    if (p)
      pmlir_rt_gpu_free(p);
  deviceArguments.clear();
  descriptors.reserve(args.size() + roundedFrom.size());
  auto unread = [&](size_t i) { return releaseBf16Only && llvm::is_contained(bf16Only, i); };
  for (auto [i, a] : llvm::enumerate(args)) {
    if (!device) {
      descriptors.emplace_back(a.data, a.shape);
      continue;
    }
    if (unread(i)) {
      // Never read there: the descriptor points at nothing.
      deviceArguments.push_back(nullptr);
      descriptors.emplace_back(nullptr, a.shape);
      continue;
    }
    // The weights go to the device once, here, and stay.
    size_t bytes = argumentBytes(i, a.shape);
    void *copy = pmlir_rt_gpu_alloc(bytes, a.name.c_str());
    pmlir_rt_gpu_copy_to_device(copy, a.data, bytes);
    deviceArguments.push_back(copy);
    descriptors.emplace_back(copy, a.shape);
  }
  // The bf16 forms, after the arguments, as the entry takes them.
  forgetRounded();
  rounded.assign(roundedFrom.size(), {});
  for (size_t k = 0; k < roundedFrom.size(); ++k) {
    const BoundArgument &a = args[roundedFrom[k]];
    void *at = nullptr;
    if (device) {
      at = pmlir_rt_gpu_alloc(static_cast<size_t>(elementCount(a.shape)) * sizeof(uint16_t),
                              (a.name + " (bf16)").c_str());
      deviceArguments.push_back(at);
    }
    round(args, k);
    descriptors.emplace_back(device ? at : rounded[k].data(), a.shape);
    if (unread(roundedFrom[k]) && a.owned.data()) {
      // Freed as soon as its form is made: the f32 and bf16 weights are
      // never all held at once.
      args[roundedFrom[k]].owned = Buffer();
      args[roundedFrom[k]].data = nullptr;
    }
  }
  // The results' descriptors come first; a function that returns nothing
  // (every result in place, or a pipeline rank's) has no such argument.
  if (!resultWords.empty())
    pointers.push_back(resultWords.data());
  for (MemRefDescriptor &d : descriptors)
    pointers.push_back(d.words.data());
  for (void *&p : pointers)
    packed.push_back(&p);
}

size_t JitProgram::argumentBytes(size_t i, const std::vector<int64_t> &shape) const {
  size_t bytes = argumentElementBytes[i];
  for (int64_t d : shape)
    bytes *= static_cast<size_t>(d);
  return bytes;
}

void JitProgram::round(const std::vector<BoundArgument> &args, size_t k) {
  const BoundArgument &a = args[roundedFrom[k]];
  int64_t n = elementCount(a.shape);
  pmlir::rt::forgetBf16GemmOperand(rounded[k].data());
  rounded[k].resize(static_cast<size_t>(n));
  pmlir_rt_round_to_bf16(static_cast<const float *>(a.data), rounded[k].data(), n);
  if (!device) {
    // Read unchanged by every run until it is made again, unless the runs
    // update it: the GEMMs may keep it packed, or widened.
    if (!formUpdated[k])
      pmlir::rt::keepBf16GemmOperand(rounded[k].data(), n);
    return;
  }
  pmlir_rt_gpu_copy_to_device(deviceArguments[args.size() + k], rounded[k].data(),
                              static_cast<size_t>(n) * sizeof(uint16_t));
  // The device holds it: the host's copy would only take memory.
  std::vector<uint16_t>().swap(rounded[k]);
}

void JitProgram::forgetRounded() {
  for (const std::vector<uint16_t> &form : rounded)
    pmlir::rt::forgetBf16GemmOperand(form.data());
}

void JitProgram::toDevice(const std::vector<BoundArgument> &args, llvm::ArrayRef<size_t> which) {
  for (size_t k = 0; k < roundedFrom.size(); ++k)
    if (llvm::is_contained(which, roundedFrom[k]))
      round(args, k);
  if (!device)
    return;
  for (size_t i : which)
    pmlir_rt_gpu_copy_to_device(deviceArguments[i], args[i].data, argumentBytes(i, args[i].shape));
}

void JitProgram::toHost(std::vector<BoundArgument> &args, llvm::ArrayRef<size_t> which) {
  if (!device)
    return;
  for (size_t i : which)
    pmlir_rt_gpu_copy_to_host(args[i].data, deviceArguments[i], argumentBytes(i, args[i].shape));
}

bool JitProgram::run(std::string &error) {
  releaseResults();
  jit->packedEntry()(packed.data());
  if (!device)
    return true;
  // The run is over when the stream is done; its results come to the host
  // when they are read (timed runs leave them on the device).
  pmlir_rt_gpu_synchronize();
  hostResults.assign(resultAt.size(), {});
  return true;
}

const float *JitProgram::result(size_t i) const {
  if (resultAt[i] == kInPlace)
    return nullptr;
  if (device) {
    if (hostResults[i].empty()) {
      int64_t elements = 1;
      for (int64_t d : resultShapes[i])
        elements *= d;
      // A descriptor's words: allocated, aligned, offset, sizes, strides.
      void *p;
      std::memcpy(&p, &resultWords[resultAt[i] + 1], sizeof(void *));
      hostResults[i].resize(elements);
      pmlir_rt_gpu_copy_to_host(hostResults[i].data(),
                                static_cast<const float *>(p) + resultWords[resultAt[i] + 2],
                                elements * sizeof(float));
    }
    return hostResults[i].data();
  }
  void *p;
  std::memcpy(&p, &resultWords[resultAt[i] + 1], sizeof(void *));
  return static_cast<const float *>(p);
}

void JitProgram::releaseResults() {
  // A buffer returned twice is freed once.
  std::vector<void *> freed;
  for (size_t at : resultAt) {
    if (at == kInPlace)
      continue;
    void *allocated;
    std::memcpy(&allocated, &resultWords[at], sizeof(void *));
    if (allocated && llvm::find(freed, allocated) == freed.end()) {
      if (device)
        pmlir_rt_gpu_free(allocated);
      else
        std::free(allocated);
      freed.push_back(allocated);
    }
    void *null = nullptr;
    std::memcpy(&resultWords[at], &null, sizeof(void *));
    std::memcpy(&resultWords[at + 1], &null, sizeof(void *));
  }
}
