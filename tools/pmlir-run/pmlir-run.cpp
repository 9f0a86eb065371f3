//===- pmlir-run.cpp - Compile and run a tfm model on the CPU -------------===//
//
// Part of pmlir.
//
//   pmlir-run MODEL.mlir [--weights W.safetensors] [--inputs I.safetensors]
//             [--output O.safetensors] [--seed N] [--print] [--repeat N]
//             [--threads N] [--entry forward]
//   pmlir-run MODEL.mlir --mesh dp=2,tp=2 --recipe megatron [--sequence-parallel]
//             [--check [--tolerance T]] [--comm-report C.json] [--memory-report M.json]
//   pmlir-run --mesh tp=2,dp=2,pp=4 [--rank-order tp,dp,pp] --print-groups
//
// Arguments of the entry function bind to tensors by their `tfm.name`: first
// from --inputs, then from --weights (where Hugging Face's `transformer.`
// prefix of GPT-2 LM-head checkpoints is accepted). Without --weights every
// weight gets a deterministic seeded init; with it, a weight the file lacks
// is an error unless --init-missing asks for the seeded init. A missing
// input is an error. The program is
// lowered with pmlir-cpu-pipeline and JIT-compiled by MLIR's ExecutionEngine.
// f32 tensors in the files are used in place from the memory mapping.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/OutputFile.h"
#include "pmlir/Support/SafeTensors.h"
#include "pmlir/Support/ToolMain.h"
#include "pmlir/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <malloc.h>
#include <numeric>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <random>

using namespace mlir;
using namespace pmlir;

static llvm::cl::opt<std::string> modelFile(llvm::cl::Positional,
                                            llvm::cl::desc("MODEL.mlir"));
static llvm::cl::opt<std::string>
    meshSpec("mesh", llvm::cl::desc("device mesh: named axes with sizes, e.g. tp=2,dp=2,pp=4"));
static llvm::cl::opt<std::string> rankOrder(
    "rank-order",
    llvm::cl::desc("mesh axes from fastest- to slowest-varying rank "
                   "(default: tp, cp, ep, dp, pp as present)"));
static llvm::cl::opt<double> collectiveTimeout(
    "timeout",
    llvm::cl::desc("on a mesh: end the job when one collective waits longer than this "
                   "many seconds (0: no limit)"),
    llvm::cl::init(60));
static llvm::cl::opt<bool> printGroups(
    "print-groups",
    llvm::cl::desc("print the process groups of each mesh axis, one line per group, and exit"));
static llvm::cl::opt<std::string> weightsFile("weights",
                                              llvm::cl::desc("weights (safetensors)"));
static llvm::cl::opt<std::string> inputsFile("inputs",
                                             llvm::cl::desc("inputs (safetensors)"));
static llvm::cl::opt<std::string>
    outputFile("output", llvm::cl::desc("write the results here (safetensors)"));
static llvm::cl::opt<std::string> entryName("entry",
                                            llvm::cl::desc("entry function"),
                                            llvm::cl::init("forward"));
static llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("seed of the init of missing weights"),
         llvm::cl::init(0));
static llvm::cl::opt<bool> initMissing(
    "init-missing",
    llvm::cl::desc("with --weights: give weights the file lacks the seeded init (a warning "
                   "lists them) instead of refusing the run"));
// Fault injection for the fault tests: rank R stops (sleeps until killed)
// at a phase, so that the others' timeouts can be seen to name it.
static llvm::cl::opt<int> testHangRank("test-hang-rank", llvm::cl::Hidden, llvm::cl::init(-1));
static llvm::cl::opt<std::string> testHangAt("test-hang-at", llvm::cl::Hidden,
                                             llvm::cl::desc("start-up, check or output"));
static llvm::cl::opt<bool> printResults(
    "print", llvm::cl::desc("print shape, mean, std and first values of each result"));
static llvm::cl::opt<unsigned>
    repeat("repeat",
           llvm::cl::desc("after a warm-up, run N times and print the median time"),
           llvm::cl::init(0));

static llvm::cl::opt<std::string> recipe(
    "recipe",
    llvm::cl::desc("shard the global model with a recipe on --mesh (megatron: Megatron-LM's "
                   "tensor parallelism on axis tp, batch on dp), then propagate and partition"));
static llvm::cl::opt<bool> check(
    "check", llvm::cl::desc("also run the unsharded program and print the relative error of "
                            "the sharded output; exit 1 past --tolerance"));
static llvm::cl::opt<double>
    tolerance("tolerance", llvm::cl::desc("largest relative error --check accepts"),
              llvm::cl::init(1e-5));
static llvm::cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    llvm::cl::desc("with a sharded program: Megatron's sequence parallelism (tensor-parallel "
                   "all-reduces become reduce-scatter + all-gather, norms on sequence shards)"));
static llvm::cl::opt<std::string> memoryReportFile(
    "memory-report",
    llvm::cl::desc("write the activation bytes each layer keeps for the backward pass, per "
                   "rank, to this JSON file"));
static llvm::cl::opt<std::string> commReportFile(
    "comm-report",
    llvm::cl::desc("write the collectives of the partitioned program to this JSON file"));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "pmlir-run") << message << "\n";
  return 1;
}

static void warn(const llvm::Twine &message) {
  llvm::WithColor::warning(llvm::errs(), "pmlir-run") << message << "\n";
}

/// Stops here forever if the fault tests asked rank `rank` to hang at `phase`.
static void maybeHang(int64_t rank, llvm::StringRef phase) {
  if (testHangRank != rank || testHangAt != phase)
    return;
  llvm::errs() << "pmlir-run: rank " << rank << ": hanging at " << phase << " (--test-hang-at)\n";
  for (;;)
    pause();
}

namespace {

/// A ranked memref descriptor as the C interface lays it out:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Descriptor {
  std::vector<int64_t> words;

  Descriptor(void *data, llvm::ArrayRef<int64_t> shape) {
    words.resize(3 + 2 * shape.size());
    setPointers(data);
    words[2] = 0;
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      words[3 + i] = shape[i];
      words[3 + shape.size() + i] = stride;
      stride *= shape[i];
    }
  }
  void setPointers(void *data) {
    std::memcpy(&words[0], &data, sizeof(void *));
    std::memcpy(&words[1], &data, sizeof(void *));
  }
  void *allocated() const {
    void *p;
    std::memcpy(&p, &words[0], sizeof(void *));
    return p;
  }
  void *aligned() const {
    void *p;
    std::memcpy(&p, &words[1], sizeof(void *));
    return p;
  }
};

/// Heap bytes whose allocation can fail with a message instead of an
/// abort: a seeded weight may be larger than the machine's memory.
struct Buffer {
  std::unique_ptr<uint8_t, void (*)(void *)> bytes{nullptr, &std::free};
  uint8_t *data() const { return bytes.get(); }
  /// `zeroed`: for blocks of padded shards, whose padding must be zeros.
  bool allocate(size_t size, bool zeroed = false) {
    size = size ? size : 1;
    bytes.reset(static_cast<uint8_t *>(zeroed ? std::calloc(size, 1) : std::malloc(size)));
    return bytes != nullptr;
  }
};

/// One bound argument: its storage is either the mapping or `owned`.
struct Argument {
  std::string name;
  std::vector<int64_t> shape;
  Buffer owned;
  void *data = nullptr;
  /// Seeded because the weights file lacks it (with --init-missing).
  bool seeded = false;
};

/// "1.5 GiB"
std::string formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6)
    bytes /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", bytes, units[u]);
  return text;
}

/// The first of `n` floats that is not finite, or -1.
int64_t firstNonFinite(const float *values, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    if (!std::isfinite(values[k]))
      return k;
  return -1;
}

/// A token id of element type i32 or i64 at flat index k (the data of a
/// safetensors tensor need not be aligned).
int64_t loadId(const void *data, int64_t k, bool wide) {
  if (wide) {
    int64_t v;
    std::memcpy(&v, static_cast<const uint8_t *>(data) + 8 * k, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, static_cast<const uint8_t *>(data) + 4 * k, 4);
  return v;
}

/// The checkpoint names `name` may have: its own, under Hugging Face's
/// `transformer.` prefix (GPT2LMHeadModel), and without `model.` (a base
/// LlamaModel's checkpoint).
std::vector<std::string> checkpointNames(const std::string &name) {
  std::vector<std::string> names = {name, "transformer." + name};
  if (llvm::StringRef(name).starts_with("model."))
    names.push_back(name.substr(6));
  return names;
}

/// The names in `file` closest to `name` (edit distance), for a message.
std::string closestNames(const SafeTensorsFile &file, const std::string &name) {
  std::vector<std::pair<unsigned, std::string>> scored;
  for (const TensorView &t : file.tensors())
    scored.push_back({llvm::StringRef(t.name).edit_distance(name), t.name});
  std::sort(scored.begin(), scored.end());
  std::string text;
  for (size_t i = 0; i < std::min<size_t>(2, scored.size()); ++i)
    text += (i ? ", '" : "'") + scored[i].second + "'";
  return text.empty() ? "the file has no tensors" : "closest: " + text;
}

std::string attrText(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

int64_t product(llvm::ArrayRef<int64_t> shape) { return ShapedType::getNumElements(shape); }

/// Deterministic init of a weight named `name`: 1-D `*.bias` -> 0, other
/// 1-D (norm) weights -> 1, everything else N(0, 0.02). The stream depends on
/// the seed and the name only, so binding order does not change values.
void seededInit(const std::string &name, float *out, int64_t n, size_t rank) {
  bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
  if (rank == 1) {
    std::fill(out, out + n, bias ? 0.0f : 1.0f);
    return;
  }
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(name));
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int64_t i = 0; i < n; ++i)
    out[i] = normal(rng);
}

/// The per-dimension mesh axes of a `tfm.sharding`: a #tfm.sharding's dims
/// or the plain list [[...], ...].
ArrayAttr shardingDims(Attribute sharding) {
  if (auto attr = dyn_cast_or_null<tfm::ShardingAttr>(sharding))
    return attr.getDims();
  return dyn_cast_or_null<ArrayAttr>(sharding);
}

/// Where this rank's slice of a sharded argument sits in the global tensor.
struct Slice {
  std::vector<int64_t> global, offsets; // per dimension
};

/// The global shape of a sharded argument or result: its tfm.global_type,
/// or none (the local shape times the parts).
std::optional<std::vector<int64_t>> globalShapeOf(Attribute globalType) {
  auto type = dyn_cast_or_null<TypeAttr>(globalType);
  auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : RankedTensorType();
  if (!tensor)
    return std::nullopt;
  return std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end());
}

/// The slice of a value with `tfm.sharding` (per dimension, the mesh axes
/// that split it, major first) on the rank at mesh coordinates `coords`, or
/// an error. Each rank's block is `local`; the global tensor is `global`
/// where given (shards the parts do not divide are padded at the end), else
/// `local` times the parts.
/// `mesh` as a #tfm.mesh (axes in the same order).
tfm::MeshAttr meshAttrOf(MLIRContext *context, const rt::Mesh &mesh) {
  SmallVector<StringAttr> axes;
  for (const std::string &name : mesh.axisNames())
    axes.push_back(StringAttr::get(context, name));
  return tfm::MeshAttr::get(context, axes, mesh.axisSizes());
}

std::optional<Slice> sliceOf(ArrayAttr sharding, llvm::ArrayRef<int64_t> local,
                             const std::optional<std::vector<int64_t>> &global,
                             tfm::MeshAttr mesh, llvm::ArrayRef<int64_t> coords,
                             std::string &error) {
  if (global && global->size() != local.size()) {
    error = "has tfm.global_type of rank " + std::to_string(global->size()) + " for " +
            std::to_string(local.size()) + " dimensions";
    return std::nullopt;
  }
  if (sharding.size() != local.size()) {
    error = "has " + std::to_string(sharding.size()) + " entries in tfm.sharding for " +
            std::to_string(local.size()) + " dimensions";
    return std::nullopt;
  }
  Slice slice;
  for (size_t d = 0; d < local.size(); ++d) {
    auto axes = dyn_cast<ArrayAttr>(sharding[d]);
    if (!axes) {
      error = "tfm.sharding entry " + std::to_string(d) + " is not a list of mesh axes";
      return std::nullopt;
    }
    int64_t parts = 1, index = 0;
    for (Attribute a : axes) {
      auto name = dyn_cast<StringAttr>(a);
      std::optional<tfm::MeshAttr::SubAxis> sub =
          name ? mesh.subAxis(name.getValue()) : std::nullopt;
      if (!sub) {
        error = "tfm.sharding names mesh axis " +
                (name ? "'" + name.str() + "'" : std::string("(not a string)")) +
                ", which --mesh does not have";
        return std::nullopt;
      }
      // A sub-axis "a:(p)s": the coordinate along a, without the parts
      // below it, modulo s.
      int64_t below = mesh.getSizes()[sub->index] / (sub->pre * sub->size);
      parts *= sub->size;
      index = index * sub->size + (coords[sub->index] / below) % sub->size;
    }
    int64_t size = global ? (*global)[d] : local[d] * parts;
    if (tfm::shardSize(size, parts) != local[d]) {
      error = "has blocks of " + std::to_string(local[d]) + " in dimension " +
              std::to_string(d) + ", which is not " + std::to_string(size) + " split in " +
              std::to_string(parts);
      return std::nullopt;
    }
    slice.global.push_back(size);
    slice.offsets.push_back(local[d] * index);
  }
  return slice;
}

/// Calls copyRow(global offset, local offset, length) for each innermost
/// row of the `local`-shaped block at `slice.offsets` of a row-major tensor
/// of shape `slice.global`, leaving out the block's padding (what lies
/// beyond the global tensor).
template <typename CopyRow>
void forEachRow(const Slice &slice, llvm::ArrayRef<int64_t> local, CopyRow copyRow) {
  size_t rank = local.size();
  if (rank == 0)
    return copyRow(0, 0, 1);
  std::vector<int64_t> index(rank, 0);
  int64_t row = local.back();
  int64_t inside = std::min(row, slice.global.back() - slice.offsets.back());
  for (int64_t done = 0, n = product(local); done < n; done += row) {
    int64_t offset = 0;
    bool padding = inside <= 0;
    for (size_t d = 0; d < rank; ++d) {
      padding |= slice.offsets[d] + index[d] >= slice.global[d];
      offset = offset * slice.global[d] + slice.offsets[d] + index[d];
    }
    if (!padding)
      copyRow(offset, done, inside);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < local[d])
        break;
      index[d] = 0;
    }
  }
}

/// Copies the block `slice` out of `global` (elements of `width` bytes),
/// reading only that block.
void copySlice(const uint8_t *global, const Slice &slice, llvm::ArrayRef<int64_t> local,
               size_t width, uint8_t *out) {
  forEachRow(slice, local, [&](int64_t at, int64_t to, int64_t n) {
    std::copy(global + at * width, global + (at + n) * width, out + to * width);
  });
}

/// Writes `block` into its place `slice` in `global`.
void pasteSlice(const float *block, const Slice &slice, llvm::ArrayRef<int64_t> local,
                float *global) {
  forEachRow(slice, local, [&](int64_t at, int64_t from, int64_t n) {
    std::copy(block + from, block + from + n, global + at);
  });
}

/// Sets `error` and returns false.
bool failBind(std::string &error, const llvm::Twine &message) {
  error = message.str();
  return false;
}

/// Binds every argument of `entry` by its tfm.name, from `inputs` then
/// `weights`; a weight in neither gets the seeded init when there is no
/// weights file or --init-missing asks for it, else binding fails listing
/// every missing weight. On a mesh, a sharded argument gets this rank's
/// block of the global tensor.
bool bindArguments(func::FuncOp entry, const std::optional<rt::Mesh> &mesh, int64_t rank,
                   const SafeTensorsFile *weights, const SafeTensorsFile *inputs,
                   std::vector<Argument> &args, std::string &error) {
  std::string where = " of @" + entry.getSymName().str();
  // One rank speaks for all about the files.
  bool warnNonFinite = rank == 0, warnSeeded = rank == 0;
  std::vector<std::string> missing;
  tfm::MeshAttr meshAttr = mesh ? meshAttrOf(entry.getContext(), *mesh) : tfm::MeshAttr();
  args.clear();
  args.resize(entry.getNumArguments());
  for (BlockArgument arg : entry.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return failBind(error, "argument #" + std::to_string(i) + where +
                                 " must be a tensor of static shape");
    auto nameAttr = entry.getArgAttrOfType<StringAttr>(i, tfm::kNameAttr);
    if (!nameAttr)
      return failBind(error, "argument #" + std::to_string(i) + where +
                                 " has no tfm.name to bind it by");
    Argument &a = args[i];
    a.name = nameAttr.str();
    a.shape.assign(type.getShape().begin(), type.getShape().end());
    Type element = type.getElementType();
    if (!element.isF32() && !element.isInteger(64) && !element.isInteger(32))
      return failBind(error, "argument '" + a.name + "' has unsupported element type");
    size_t width = element.getIntOrFloatBitWidth() / 8;

    // A sharded argument: bind the global tensor, then keep this rank's block.
    std::optional<Slice> slice;
    if (ArrayAttr sharding = shardingDims(entry.getArgAttr(i, tfm::kShardingAttr))) {
      if (!mesh)
        return failBind(error, "argument '" + a.name +
                                   "' is sharded (tfm.sharding); run it with --mesh");
      if (!(slice = sliceOf(sharding, a.shape,
                            globalShapeOf(entry.getArgAttr(i, tfm::kGlobalTypeAttr)),
                            meshAttr, mesh->coordinates(rank),
                            error)))
        return failBind(error, "argument '" + a.name + "' " + error);
    }
    std::vector<int64_t> shape = slice ? slice->global : a.shape;
    std::string perRank = slice ? ", " + formatDims(a.shape) + " per rank" : "";
    int64_t n = product(shape);

    const TensorView *view = nullptr;
    const SafeTensorsFile *from = nullptr;
    if (inputs && (view = inputs->find(a.name)))
      from = inputs;
    for (const std::string &candidate : checkpointNames(a.name))
      if (weights && !view && (view = weights->find(candidate)))
        from = weights;
    bool isInput = a.name == "input_ids" || !element.isF32();
    if (!view && isInput)
      return failBind(error, "input '" + a.name + "' (argument #" + std::to_string(i) + ", " +
                                 formatDims(shape) + ") is in neither --inputs nor --weights");
    if (view && view->shape != shape)
      return failBind(error, "tensor '" + a.name + "' in " + from->path() + ": expected " +
                                 (slice ? "global shape " : "shape ") + formatDims(shape) +
                                 " (argument #" + std::to_string(i) + where + perRank +
                                 "), got " + formatDims(view->shape));
    auto allocate = [&](Buffer &buffer, int64_t elements, size_t bytesEach,
                        bool zeroed = false) {
      uint64_t bytes = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(elements), bytesEach, &bytes) ||
          !buffer.allocate(bytes, zeroed))
        return failBind(error, "cannot allocate " +
                                   formatBytes(double(elements) * double(bytesEach)) + " for '" +
                                   a.name + "' " + formatDims(shape) +
                                   ": not enough memory");
      return true;
    };
    if (!view) {
      if (weights && !initMissing) {
        missing.push_back(a.name);
        continue;
      }
      a.seeded = weights != nullptr;
      if (!allocate(a.owned, n, sizeof(float)))
        return false;
      seededInit(a.name, reinterpret_cast<float *>(a.owned.data()), n, shape.size());
      a.data = a.owned.data();
    } else if (element.isF32()) {
      if (view->dtype == DType::F32 &&
          reinterpret_cast<uintptr_t>(view->data) % alignof(float) == 0) {
        a.data = const_cast<uint8_t *>(view->data); // used in place
      } else {
        if (!allocate(a.owned, n, sizeof(float)))
          return false;
        if (!convertToF32(*view, reinterpret_cast<float *>(a.owned.data()), error))
          return failBind(error, "tensor '" + a.name + "' in " + from->path() +
                                     ": expected dtype F32, F16, BF16 or F64, got " +
                                     dtypeName(view->dtype));
        a.data = a.owned.data();
      }
    } else {
      if (view->dtype != DType::I64 && view->dtype != DType::I32)
        return failBind(error, "tensor '" + a.name + "' in " + from->path() +
                                   ": expected dtype I64 or I32, got " + dtypeName(view->dtype));
      if (!allocate(a.owned, n, width))
        return false;
      for (int64_t k = 0; k < n; ++k) {
        int64_t v = loadId(view->data, k, view->dtype == DType::I64);
        if (width == 8)
          reinterpret_cast<int64_t *>(a.owned.data())[k] = v;
        else
          reinterpret_cast<int32_t *>(a.owned.data())[k] = static_cast<int32_t>(v);
      }
      a.data = a.owned.data();
    }
    if (view && element.isF32() && warnNonFinite) {
      const float *values = static_cast<const float *>(a.data);
      if (int64_t k = firstNonFinite(values, n); k >= 0)
        warn("weight '" + a.name + "' in " + from->path() +
             " has non-finite values, the first at flat index " + llvm::Twine(k) + " (" +
             (std::isnan(values[k]) ? "nan" : values[k] > 0 ? "inf" : "-inf") +
             "): the results will not be finite");
    }
    if (slice) {
      // Padding beyond the global tensor stays zero: contractions over a
      // padded dimension rely on it.
      Buffer block;
      if (!allocate(block, product(a.shape), width, /*zeroed=*/true))
        return false;
      copySlice(static_cast<const uint8_t *>(a.data), *slice, a.shape, width, block.data());
      a.owned = std::move(block);
      a.data = a.owned.data();
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t k = 0; k < missing.size() && k < 10; ++k)
      list += "\n  '" + missing[k] + "' (" + closestNames(*weights, missing[k]) + ")";
    if (missing.size() > 10)
      list += "\n  ... and " + std::to_string(missing.size() - 10) + " more";
    return failBind(error, weights->path() + " lacks " + std::to_string(missing.size()) +
                               " of the weights of @" + entry.getSymName().str() + ":" + list +
                               "\n(--init-missing gives them the seeded init)");
  }
  if (warnSeeded) {
    std::string list;
    for (const Argument &a : args)
      if (a.seeded)
        list += (list.empty() ? "" : ", ") + a.name;
    if (!list.empty())
      warn("--init-missing: " + weights->path() + " lacks these weights, which get the seeded "
           "init: " + list);
  }
  return true;
}

/// A model function compiled for this host, with its arguments bound.
struct Program {
  std::unique_ptr<ExecutionEngine> engine;
  std::string symbol;
  std::vector<Descriptor> descriptors; // the result's, then the arguments'
  std::vector<void *> pointers, packed;

  /// Lowers `module` (consumed: its binding attributes are dropped) and
  /// JIT-compiles `entry`, whose arguments are `args`.
  bool compile(ModuleOp module, func::FuncOp entry, std::vector<Argument> &args,
               std::string &error) {
    MLIRContext *context = module.getContext();
    symbol = "_mlir_ciface_" + entry.getSymName().str();
    // Arguments may live in a read-only mapping: never write them. The
    // binding attributes have served (on every function: LLVM translation
    // would warn on them).
    module.walk([&](func::FuncOp f) {
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        for (StringRef name :
             {tfm::kNameAttr, tfm::kDimsAttr, tfm::kShardingAttr, tfm::kGlobalTypeAttr})
          f.removeArgAttr(i, name);
      for (unsigned i = 0; i < f.getNumResults(); ++i)
        for (StringRef name : {tfm::kNameAttr, tfm::kShardingAttr, tfm::kGlobalTypeAttr})
          f.removeResultAttr(i, StringAttr::get(context, name));
    });
    for (unsigned i = 0; i < entry.getNumArguments(); ++i)
      entry.setArgAttr(i, "bufferization.writable", BoolAttr::get(context, false));
    entry->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
    auto resultType = cast<RankedTensorType>(entry.getResultTypes()[0]);
    PassManager pm(context);
    buildCpuLoweringPipeline(pm);
    if (failed(pm.run(module)))
      return failBind(error, "lowering @" + entry.getSymName() + " failed");
    // Optimize for this host: without its target machine LLVM's cost model
    // sees no vector registers and leaves every loop scalar.
    auto hostMachine = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!hostMachine)
      return failBind(error, "no target for this host: " + llvm::toString(hostMachine.takeError()));
    auto targetMachine = hostMachine->createTargetMachine();
    if (!targetMachine)
      return failBind(error,
                      "no target for this host: " + llvm::toString(targetMachine.takeError()));
    ExecutionEngineOptions options;
    auto transformer = makeOptimizingTransformer(3, 0, targetMachine->get());
    options.transformer = transformer;
    auto created = ExecutionEngine::create(module, options);
    if (!created)
      return failBind(error, "JIT compilation failed: " + llvm::toString(created.takeError()));
    engine = std::move(*created);
    engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap map;
      for (const pmlir_rt_symbol *table :
           {pmlir_rt_cpu_kernel_symbols(), pmlir_rt_collective_symbols()})
        for (const pmlir_rt_symbol *s = table; s->name; ++s)
          map[interner(s->name)] = {llvm::orc::ExecutorAddr::fromPtr(s->address),
                                    llvm::JITSymbolFlags::Exported};
      return map;
    });
    descriptors.reserve(args.size() + 1);
    descriptors.emplace_back(nullptr, resultType.getShape());
    for (Argument &a : args)
      descriptors.emplace_back(a.data, a.shape);
    for (Descriptor &d : descriptors)
      pointers.push_back(d.words.data());
    for (void *&p : pointers)
      packed.push_back(&p);
    return true;
  }

  bool run(std::string &error) {
    if (llvm::Error err = engine->invokePacked(symbol, packed))
      return failBind(error, llvm::toString(std::move(err)));
    return true;
  }
  const float *result() const { return static_cast<const float *>(descriptors[0].aligned()); }
  void releaseResult() {
    std::free(descriptors[0].allocated());
    descriptors[0].setPointers(nullptr);
  }
};

bool underMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
}

/// Runs this same command on `ranks` processes of this host through mpirun
/// and returns its exit status.
int launchRanks(int64_t ranks, int argc, char **argv) {
  std::vector<std::string> words = {"mpirun", "-np", std::to_string(ranks), "--bind-to",
                                    "none"};
  // More ranks than cores: ranks that wait must leave the core to the rank
  // they wait for (the runtime's own waits do so in that case too).
  if (ranks > static_cast<int64_t>(std::thread::hardware_concurrency()))
    for (const char *word : {"--oversubscribe", "--mca", "mpi_yield_when_idle", "1"})
      words.push_back(word);
  if (geteuid() == 0)
    words.push_back("--allow-run-as-root");
  words.push_back(llvm::sys::fs::getMainExecutable(argv[0], (void *)&launchRanks));
  for (int i = 1; i < argc; ++i)
    words.push_back(argv[i]);
  std::vector<char *> cargs;
  for (std::string &w : words)
    cargs.push_back(w.data());
  cargs.push_back(nullptr);
  pid_t child = fork();
  if (child < 0)
    return fail("cannot start mpirun: fork failed");
  if (child == 0) {
    execvp("mpirun", cargs.data());
    std::fprintf(stderr, "pmlir-run: error: cannot run mpirun (install openmpi-bin): %s\n",
                 std::strerror(errno));
    std::_Exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return fail("mpirun ended by signal " + std::to_string(WTERMSIG(status)));
}

} // namespace

constexpr int kMaxThreads = 1024;

/// Takes `--threads N` / `--threads=N` out of the arguments: libLLVM already
/// registers a `threads` option, so pmlir-run reads its own before LLVM's
/// parser sees the rest. Returns -1 on a malformed value or one past
/// kMaxThreads.
static int takeThreadsFlag(std::vector<char *> &args) {
  int threads = 0;
  std::vector<char *> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef arg(args[i]);
    llvm::StringRef value;
    if ((arg == "--threads" || arg == "-threads") && i + 1 < args.size())
      value = args[++i];
    else if (arg.consume_front("--threads=") || arg.consume_front("-threads="))
      value = arg;
    else {
      rest.push_back(args[i]);
      continue;
    }
    if (value.getAsInteger(10, threads) || threads <= 0 || threads > kMaxThreads)
      return -1;
  }
  args = rest;
  return threads;
}

static int runMain(int argc, char **argv) {
  std::vector<char *> argList(argv, argv + argc);
  int threads = takeThreadsFlag(argList);
  if (threads < 0)
    return fail("--threads expects a number of threads from 1 to " + llvm::Twine(kMaxThreads));
  llvm::cl::ParseCommandLineOptions(
      static_cast<int>(argList.size()), argList.data(),
      "pmlir CPU runner\n\n  --threads N   threads of the GEMMs (default: "
      "all cores)\n");
  if (printGroups) {
    if (meshSpec.empty())
      return fail("--print-groups needs --mesh");
    std::string error;
    std::optional<rt::Mesh> mesh = rt::Mesh::parse(meshSpec, rankOrder, error);
    if (!mesh)
      return fail(error);
    llvm::outs() << mesh->describeGroups();
    return 0;
  }
  if (!rankOrder.empty() && meshSpec.empty())
    return fail("--rank-order needs --mesh");
  if (!recipe.empty() && recipe != "megatron")
    return fail("unknown --recipe '" + recipe + "' (known: megatron)");
  if (!recipe.empty() && meshSpec.empty())
    return fail("--recipe needs --mesh");
  if (modelFile.empty())
    return fail("no model: pmlir-run MODEL.mlir [options]");
  // Outputs are checked before any work: a missing directory, or an output
  // that would replace an input or another output, is refused up front.
  {
    std::vector<std::pair<const char *, std::string>> outputs, inputFiles = {
        {"the model", modelFile}, {"--weights", weightsFile}, {"--inputs", inputsFile}};
    for (auto [flag, path] : {std::pair<const char *, std::string>{"--output", outputFile},
                              {"--comm-report", commReportFile},
                              {"--memory-report", memoryReportFile}}) {
      if (path.empty() || path == "-")
        continue;
      OutputTarget target;
      std::string error;
      if (!resolveOutput(path, target, error))
        return fail(std::string(flag) + ": " + error);
      for (auto [other, otherPath] : inputFiles)
        if (!otherPath.empty() && sameFile(path, otherPath))
          return fail(std::string(flag) + " '" + path + "' is " + other + " '" + otherPath +
                      "': pmlir-run does not overwrite its inputs");
      for (auto [other, otherPath] : outputs)
        if (path == otherPath || sameFile(path, otherPath))
          return fail(std::string(flag) + " and " + other + " name the same file '" + path +
                      "'");
      outputs.push_back({flag, path});
    }
  }
  DialectRegistry registry;
  registry.insert<tfm::TfmDialect, func::FuncDialect, arith::ArithDialect,
                  linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                  shard::ShardDialect,
                  tensor::TensorDialect, bufferization::BufferizationDialect>();
  registerCpuLoweringInterfaces(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // Text nested deeper than the stack holds is refused, and bytecode is read
  // once in a child process, where a crash or hang of the upstream reader on
  // a corrupt file cannot take this process along. Not in a rank under
  // mpirun: MPI forbids fork there, and pmlir-run's own launch checked.
  if (std::string why; !checkModelInput(modelFile, registry, !underMpirun(), why))
    return fail(why);
  // On a mesh: started plainly, launch the ranks; under mpirun, be one.
  std::optional<rt::Mesh> mesh;
  int64_t rank = 0;
  if (!meshSpec.empty()) {
    std::string error;
    if (!(mesh = rt::Mesh::parse(meshSpec, rankOrder, error)))
      return fail(error);
    if (!underMpirun())
      return launchRanks(mesh->numRanks(), argc, argv);
    if (const char *worldRank = std::getenv("OMPI_COMM_WORLD_RANK"))
      maybeHang(std::atoll(worldRank), "start-up");
    char text[512];
    if (pmlir_rt_init(meshSpec.c_str(), rankOrder.c_str(), collectiveTimeout, text,
                      sizeof(text)))
      return fail(text);
    rank = pmlir_rt_rank();
  }
  // Only rank 0 prints and writes; a failure anywhere names its rank.
  auto fail = [&](const llvm::Twine &message) {
    if (mesh)
      pmlir_rt_fail(message.str().c_str());
    return ::fail(message);
  };
  // A failure of rank 0 alone once every collective is done (--check, the
  // output file): the others are finalizing, and an MPI_Abort racing their
  // MPI_Finalize can leave mpirun hanging, so end cleanly with exit 1.
  auto failAtEnd = [&](const llvm::Twine &message) {
    if (!mesh)
      return ::fail(message);
    ::fail("rank " + llvm::Twine(rank) + ": " + message);
    pmlir_rt_finalize();
    return 1;
  };
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // The compiled forward mallocs and frees its activations on every call.
  // Keep freed memory in the heap (up to glibc's largest mmap threshold)
  // instead of unmapping it, or each call pays a page fault per 4 KiB.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  MLIRContext context(registry);
  // The mesh as the compiler sees it: shardings and sub-axes resolve on it.
  context.getOrLoadDialect<tfm::TfmDialect>();
  tfm::MeshAttr meshAttr = mesh ? meshAttrOf(&context, *mesh) : tfm::MeshAttr();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(modelFile, sourceMgr, &context);
  if (!module)
    return 1;
  auto entry = module->lookupSymbol<func::FuncOp>(entryName);
  if (!entry)
    return fail("no function @" + entryName + " in " + modelFile);

  // A global program with a mesh (from the model or --recipe) is sharded
  // here: recipe, propagation, partition.
  bool partitioned = !module->getOps<shard::GridOp>().empty();
  bool sharding = !partitioned && (!recipe.empty() || (*module)->getAttr(tfm::kMeshAttr));
  if (!recipe.empty() && partitioned)
    return fail("--recipe shards a global program, but " + modelFile +
                " is already partitioned (it has a shard.grid)");
  if (sharding && !mesh)
    return fail(recipe.empty() ? modelFile + " has a tfm.mesh: run it with --mesh"
                               : "--recipe needs --mesh");
  for (auto [given, flag] : {std::pair<bool, const char *>{check, "--check"},
                             {sequenceParallel, "--sequence-parallel"},
                             {!commReportFile.empty(), "--comm-report"},
                             {!memoryReportFile.empty(), "--memory-report"}})
    if (given && !sharding)
      return fail(std::string(flag) +
                  " needs a global program to shard: --recipe, or a model with tfm.mesh");
  OwningOpRef<ModuleOp> reference;
  // Token ids index embedding tables and labels the logits' columns: per
  // argument, the vocabulary and the one value outside it a label may take.
  struct IdRange {
    int64_t vocab;
    std::optional<int64_t> ignored;
  };
  std::map<unsigned, IdRange> idRanges;
  auto argumentOf = [&](Value v) -> std::optional<unsigned> {
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner()->getParentOp() == entry)
      return arg.getArgNumber();
    return std::nullopt;
  };
  entry.walk([&](Operation *op) {
    if (auto embedding = dyn_cast<tfm::EmbeddingOp>(op))
      if (auto i = argumentOf(embedding.getIds()))
        idRanges[*i] = {embedding.getTable().getType().getShape()[0], std::nullopt};
    if (auto loss = dyn_cast<tfm::CrossEntropyOp>(op))
      if (auto i = argumentOf(loss.getLabels()))
        idRanges[*i] = {loss.getLogits().getType().getShape().back(), loss.getIgnoreIndex()};
  });
  // The result's name in --output and in --check's line.
  std::string resultName = "logits";
  if (auto name = entry.getResultAttrOfType<StringAttr>(0, tfm::kNameAttr))
    resultName = name.str();
  if (sharding) {
    auto have = module->getOperation()->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr);
    if (have && have != meshAttr)
      return fail("the model's tfm.mesh " + attrText(have) + " is not --mesh " + meshSpec);
    (*module)->setAttr(tfm::kMeshAttr, meshAttr);
    if (check && rank == 0)
      reference = module->clone();
    PassManager pm(&context);
    ShardingPipelineOptions options;
    if (!recipe.empty())
      options.recipe = ShardingPipelineOptions::Recipe::Megatron;
    options.sequenceParallel = sequenceParallel;
    buildShardingPipeline(pm, options);
    // Every rank compiles the same program: rank 0 speaks for them.
    std::optional<ScopedDiagnosticHandler> quiet;
    if (rank != 0)
      quiet.emplace(&context, [](Diagnostic &) { return success(); });
    if (failed(pm.run(*module))) {
      // Every rank fails alike: rank 0 says why, and all end cleanly (an
      // MPI_Abort racing the others' MPI_Finalize can leave mpirun hanging).
      if (rank == 0)
        ::fail("rank 0: sharding " + modelFile + " on --mesh " + meshSpec + " failed");
      pmlir_rt_finalize();
      return 1;
    }
    // The reports, written by rank 0 alone: a failure there is its own, and
    // ends the job (MPI_Abort) while the others compile.
    if (rank == 0 && (!commReportFile.empty() || !memoryReportFile.empty())) {
      PassManager reports(&context);
      if (!commReportFile.empty())
        reports.addPass(createCommReport(CommReportOptions{commReportFile}));
      if (!memoryReportFile.empty())
        reports.addPass(createMemoryReport(MemoryReportOptions{memoryReportFile}));
      if (failed(reports.run(*module)))
        return fail("writing the reports failed");
    }
  }
  if (entry.getNumResults() != 1)
    return fail("@" + entryName + " must return one tensor, returns " +
                std::to_string(entry.getNumResults()));

  auto resultType = dyn_cast<RankedTensorType>(entry.getResultTypes()[0]);
  if (!resultType || !resultType.hasStaticShape() || !resultType.getElementType().isF32())
    return fail("@" + entryName + " must return an f32 tensor of static shape, returns " +
                typeText(entry.getResultTypes()[0]));
  std::vector<int64_t> resultShape(resultType.getShape().begin(),
                                   resultType.getShape().end());
  // A sharded result: each rank holds its block, rank 0 assembles them.
  ArrayAttr resultSharding = shardingDims(entry.getResultAttr(0, tfm::kShardingAttr));
  std::optional<std::vector<int64_t>> resultGlobal =
      globalShapeOf(entry.getResultAttr(0, tfm::kGlobalTypeAttr));
  std::optional<Slice> resultSlice;
  if (resultSharding) {
    std::string error;
    if (!mesh)
      return fail("the result of @" + entryName + " is sharded (tfm.sharding); run it with --mesh");
    if (!(resultSlice = sliceOf(resultSharding, resultShape, resultGlobal,
                                meshAttr, mesh->coordinates(rank), error)))
      return fail("the result of @" + entryName + " " + error);
  }

  // Grid axis i is mesh axis i: the shapes must agree.
  std::string error;
  WalkResult badGrid = module->walk([&](shard::GridOp grid) {
    llvm::ArrayRef<int64_t> shape = grid.getShape();
    std::vector<int64_t> want = mesh ? mesh->axisSizes() : std::vector<int64_t>{};
    if (!mesh || std::vector<int64_t>(shape.begin(), shape.end()) != want) {
      std::string got;
      for (int64_t d : shape)
        got += (got.empty() ? "" : "x") + std::to_string(d);
      error = "grid @" + grid.getSymName().str() + " has shape " + got +
              (mesh ? ", but --mesh " + meshSpec + " has other axis sizes"
                    : "; run it with a --mesh of those axis sizes");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (badGrid.wasInterrupted())
    return fail(error);

  std::unique_ptr<SafeTensorsFile> weights, inputs;
  if (!weightsFile.empty() && !(weights = SafeTensorsFile::open(weightsFile, error)))
    return fail(error);
  if (!inputsFile.empty() && !(inputs = SafeTensorsFile::open(inputsFile, error)))
    return fail(error);

  std::vector<Argument> args;
  if (!bindArguments(entry, mesh, rank, weights.get(), inputs.get(), args, error))
    return fail(error);

  // Out-of-range token ids and labels are refused here.
  for (auto [argNumber, range] : idRanges) {
    const Argument &ids = args[argNumber];
    bool wide = cast<RankedTensorType>(entry.getArgumentTypes()[argNumber])
                    .getElementType()
                    .getIntOrFloatBitWidth() == 64;
    for (int64_t k = 0, n = product(ids.shape); k < n; ++k) {
      int64_t v = loadId(ids.data, k, wide);
      if ((v < 0 || v >= range.vocab) && v != range.ignored)
        return fail((range.ignored ? "label " : "token id ") + std::to_string(v) +
                    " at flat index " + std::to_string(k) + " of '" + ids.name +
                    "' is outside the vocabulary [0, " + std::to_string(range.vocab) + ")" +
                    (range.ignored ? " and not the ignore index " + std::to_string(*range.ignored)
                                   : ""));
    }
  }

  // Tokens per run of the whole job (for --repeat): the global token ids'
  // count, not this rank's share of a batch split over dp.
  int64_t jobTokens = 1;
  if (resultSlice && resultSlice->global.size() >= 2)
    jobTokens = product(llvm::ArrayRef<int64_t>(resultSlice->global).drop_back());
  else if (resultType.getRank() >= 2)
    jobTokens = product(resultType.getShape().drop_back());
  for (auto [argNumber, range] : idRanges)
    if (!range.ignored) {
      std::optional<std::vector<int64_t>> global =
          globalShapeOf(entry.getArgAttr(argNumber, tfm::kGlobalTypeAttr));
      jobTokens = product(global ? llvm::ArrayRef<int64_t>(*global)
                                 : llvm::ArrayRef<int64_t>(args[argNumber].shape));
      break;
    }

  Program program;
  if (!program.compile(*module, entry, args, error))
    return fail(error);
  pmlir_rt_set_num_threads(threads);
  if (!program.run(error))
    return fail(error);

  if (repeat > 0) {
    std::vector<double> ms;
    for (unsigned r = 0; r < repeat; ++r) {
      program.releaseResult();
      auto start = std::chrono::steady_clock::now();
      if (!program.run(error))
        return fail(error);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    if (rank == 0)
      llvm::outs() << llvm::format("forward: median %.3f ms, %.1f tokens/s (%lld tokens a run)\n",
                                   median, jobTokens / (median / 1000.0),
                                   static_cast<long long>(jobTokens));
  }

  const float *logits = program.result();
  int64_t n = product(resultShape);
  // Without a sharding, results are replicated on a mesh (the program's own
  // collectives make them so) and rank 0 speaks for the job. A sharded
  // result is gathered to rank 0 and each block put in its place.
  std::vector<float> assembled;
  if (resultSlice) {
    std::vector<int64_t> allAxes(mesh->axisSizes().size());
    std::iota(allAxes.begin(), allAxes.end(), 0);
    int64_t ranks = mesh->numRanks();
    std::vector<float> blocks(rank == 0 ? n * ranks : 0);
    pmlir_rt_gather(logits, blocks.data(), n, PMLIR_RT_F32, 0, allAxes.data(),
                    static_cast<int64_t>(allAxes.size()));
    if (rank == 0) {
      assembled.resize(product(resultSlice->global));
      for (int64_t member = 0; member < ranks; ++member) {
        // Member j of the group over all axes, the last axis fastest.
        std::vector<int64_t> coords(allAxes.size());
        for (int64_t a = static_cast<int64_t>(coords.size()) - 1, j = member; a >= 0; --a) {
          coords[a] = j % mesh->axisSizes()[a];
          j /= mesh->axisSizes()[a];
        }
        std::string unused;
        pasteSlice(blocks.data() + member * n,
                   *sliceOf(resultSharding, resultShape, resultGlobal, meshAttr, coords, unused),
                   resultShape, assembled.data());
      }
      logits = assembled.data();
      n = static_cast<int64_t>(assembled.size());
      resultShape = resultSlice->global;
    }
  }
  // A non-finite result is named as such: with --check it is no sharding
  // mismatch, and without it a silent NaN costs users days.
  std::optional<int64_t> nonFinite;
  if (rank == 0) {
    if (int64_t k = firstNonFinite(logits, n); k >= 0) {
      nonFinite = k;
      int64_t count = 0;
      for (int64_t j = k; j < n; ++j)
        count += !std::isfinite(logits[j]);
      warn("result '" + resultName + "' has " + llvm::Twine(count) + " non-finite of " +
           llvm::Twine(n) + " values, the first at flat index " + llvm::Twine(k) + " (" +
           (std::isnan(logits[k]) ? "nan" : logits[k] > 0 ? "inf" : "-inf") +
           "): non-finite weights or inputs, or an overflow");
    }
  }
  // The unsharded program on rank 0, from the same weights and inputs.
  if (check && rank == 0) {
    maybeHang(rank, "check");
    auto globalEntry = reference->lookupSymbol<func::FuncOp>(entryName);
    for (unsigned i = 0; i < globalEntry.getNumArguments(); ++i)
      globalEntry.removeArgAttr(i, tfm::kShardingAttr);
    globalEntry.removeResultAttr(0, StringAttr::get(&context, tfm::kShardingAttr));
    globalEntry.walk([](tfm::ShardingConstraintOp op) {
      op.getResult().replaceAllUsesWith(op.getInput());
      op.erase();
    });
    std::vector<Argument> globalArgs;
    Program unsharded;
    if (!bindArguments(globalEntry, std::nullopt, 0, weights.get(), inputs.get(), globalArgs,
                       error) ||
        !unsharded.compile(*reference, globalEntry, globalArgs, error) || !unsharded.run(error))
      return failAtEnd("the unsharded run of --check: " + error);
    const float *expected = unsharded.result();
    if (int64_t k = firstNonFinite(expected, n); k >= 0)
      return failAtEnd("--check: the unsharded result '" + resultName +
                       "' is not finite either (the first at flat index " + llvm::Twine(k) +
                       "), so the comparison says nothing about sharding");
    if (nonFinite)
      return failAtEnd("--check: the sharded result '" + resultName +
                       "' is not finite at flat index " + llvm::Twine(*nonFinite) +
                       " where the unsharded run's is " +
                       llvm::formatv("{0}", expected[*nonFinite]).str() + ": a sharding fault");
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < n; ++k) {
      diff += (double(logits[k]) - expected[k]) * (double(logits[k]) - expected[k]);
      norm += double(expected[k]) * expected[k];
    }
    double relative = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    unsharded.releaseResult();
    bool ok = relative <= tolerance;
    llvm::outs() << "check: " << resultName
                 << llvm::format(" relative error %.3g (tolerance %.3g): %s\n", relative,
                                 double(tolerance), ok ? "ok" : "FAILED");
    if (!ok)
      return failAtEnd("--check: the sharded result '" + resultName +
                       "' differs from the unsharded run by " +
                  llvm::formatv("{0:e3}", relative).str() + " (relative), more than --tolerance " +
                  llvm::formatv("{0:e3}", double(tolerance)).str());
  }
  if (printResults && rank == 0) {
    double sum = 0, squares = 0;
    for (int64_t k = 0; k < n; ++k)
      sum += logits[k];
    double mean = sum / n;
    for (int64_t k = 0; k < n; ++k)
      squares += (logits[k] - mean) * (logits[k] - mean);
    llvm::outs() << resultName << ": shape " << formatDims(resultShape)
                 << llvm::format(", mean %.6g, std %.6g, first", mean,
                                 std::sqrt(squares / n));
    for (int64_t k = 0; k < std::min<int64_t>(n, 5); ++k)
      llvm::outs() << llvm::format(" %.6g", logits[k]);
    llvm::outs() << "\n";
  }
  if (!outputFile.empty() && rank == 0) {
    maybeHang(rank, "output");
    if (!writeSafeTensors(outputFile, {{resultName, DType::F32, resultShape, logits}}, {},
                          error))
      return failAtEnd(error);
  }
  program.releaseResult();
  if (mesh)
    pmlir_rt_finalize();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return runToolMain("pmlir-run", [&] { return runMain(argc, argv); });
}
