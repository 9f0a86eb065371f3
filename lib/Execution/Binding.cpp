//===- Binding.cpp - Tensors from safetensors files for a program ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Binding.h"
#include "pmlir/Execution/CheckpointDirectory.h"

#include "pmlir/Support/Bytes.h"
#include "pmlir/Training/Optimizer.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <pthread.h>
#include <random>

using namespace pmlir;
using namespace pmlir::exec;

bool Buffer::allocate(size_t size, bool zeroed) {
  size = size ? size : 1;
  bytes.reset(static_cast<uint8_t *>(zeroed ? std::calloc(size, 1) : std::malloc(size)));
  return bytes != nullptr;
}

int64_t exec::firstNonFinite(const float *values, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    if (!std::isfinite(values[k]))
      return k;
  return -1;
}

const char *exec::nonFiniteName(float value) {
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

int64_t exec::loadId(const void *data, int64_t k, bool wide) {
  if (wide) {
    int64_t v;
    std::memcpy(&v, static_cast<const uint8_t *>(data) + 8 * k, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, static_cast<const uint8_t *>(data) + 4 * k, 4);
  return v;
}

int64_t exec::elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<std::string> exec::checkpointNames(const std::string &name) {
  std::vector<std::string> names = {name, "transformer." + name};
  if (llvm::StringRef(name).starts_with("model."))
    names.push_back(name.substr(6));
  return names;
}

void exec::seededInit(const std::string &name, float *out, int64_t n, size_t rank, uint64_t seed) {
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

namespace {

/// The names in `file` closest to `name` (edit distance), for a message.
std::string closestNames(const SafeTensorsSet &weights, const std::string &name) {
  std::vector<std::pair<unsigned, std::string>> scored;
  for (auto &[tensor, entry] : weights.tensors())
    scored.push_back({llvm::StringRef(tensor).edit_distance(name), tensor});
  std::sort(scored.begin(), scored.end());
  std::string text;
  for (size_t i = 0; i < std::min<size_t>(2, scored.size()); ++i)
    text += (i ? ", '" : "'") + scored[i].second + "'";
  return text.empty() ? "the file has no tensors" : "closest: " + text;
}

/// Warns where this rank's block `a` of a weight read from `path` holds a
/// value that is not finite.
void warnNonFiniteBlock(const BoundArgument &a, const std::string &path,
                        const BindOptions &options) {
  const float *values = static_cast<const float *>(a.data);
  if (int64_t k = firstNonFinite(values, elementCount(a.shape)); k >= 0)
    options.warnBlock("weight '" + a.name + "' in " + path +
                      " has non-finite values in this rank's block, the first at its flat index " +
                      std::to_string(k) + " (" + nonFiniteName(values[k]) +
                      "): the results will not be finite");
}

/// Fails where `a`, bound for `spec`, is AdamW's second moment of a
/// parameter (its `exp_avg_sq`) and holds a negative value in this rank's
/// block. It is a running mean of squares: a negative one (a corrupt or
/// hand-edited checkpoint) makes every update of its parameter NaN, which
/// the step would blame on the learning rate.
bool checkSecondMoment(const TensorSpec &spec, const BoundArgument &a, std::string &error) {
  llvm::StringRef kind = training::kOptimizerStateKinds[1];
  llvm::StringRef name = a.name;
  if (spec.role != Role::OptimizerState || spec.element != ElementKind::F32 || !a.data ||
      !name.ends_with(kind) || !name.drop_back(kind.size()).ends_with("."))
    return true;
  const float *values = static_cast<const float *>(a.data);
  int64_t n = elementCount(a.shape);
  for (int64_t k = 0; k < n; ++k)
    if (values[k] < 0) {
      char value[32];
      std::snprintf(value, sizeof value, "%g", values[k]);
      error = "optimizer state '" + a.name + "' holds " + value + " at flat index " +
              std::to_string(k) + (spec.block ? " of this rank's block" : "") +
              ": AdamW's second moment is a running mean of squares, never negative (a corrupt "
              "or hand-edited checkpoint)";
      return false;
    }
  return true;
}

/// Binds one argument; `missing` collects parameters the weights lack.
/// An unsharded parameter to seed is allocated and left to `seeds` (seeded
/// after every argument is bound, on several threads); a sharded one is
/// seeded whole here and cut to this rank's block at once, so that one
/// global tensor at a time is held.
bool bindOne(const TensorSpec &spec, size_t index, const std::string &entry,
             const BindOptions &options, BoundArgument &a, std::vector<std::string> &missing,
             std::vector<size_t> &seeds, std::string &error) {
  std::string where = " of @" + entry;
  auto failWith = [&](const std::string &message) {
    error = message;
    return false;
  };
  a.name = spec.name;
  a.shape = spec.shape;
  size_t width = elementWidth(spec.element);

  // A sharded argument: bind the global tensor, then keep this rank's block.
  const std::optional<BlockLayout> &layout = spec.block;
  if (spec.sharding && !layout)
    return failWith("argument '" + a.name + "' of @" + entry +
                    " is sharded (tfm.sharding) but was not laid out on a mesh");
  std::vector<int64_t> shape = layout ? layout->shape : a.shape;
  std::string perRank = layout ? ", " + formatDims(a.shape) + " per rank" : "";
  int64_t n = elementCount(shape);

  const SafeTensorsSet *weights = options.weights;
  const SafeTensorsFile *inputs = options.inputs;
  const TensorView *view = nullptr;
  const SafeTensorsFile *from = nullptr;
  bool isState = spec.role == Role::OptimizerState;
  bool isParam = spec.role == Role::Param;
  if (options.checkpoint && (isParam || isState)) {
    // Bound below, from the checkpoint directory alone.
  } else if (isState) {
    // Optimizer state comes from a checkpoint or starts at zero.
    if (options.state && (view = options.state->find(a.name)))
      from = options.state;
    else if (options.state)
      return failWith(options.state->path() + " has no optimizer state '" + a.name + "' " +
                      formatDims(shape) + " (argument #" + std::to_string(index) + where +
                      "): it was saved for another model");
  } else if (spec.role != Role::Param && options.generatedInputs) {
    // Written before each run.
  } else {
    if (inputs && (view = inputs->find(a.name)))
      from = inputs;
    if (weights && !view)
      view = findWeight(*weights, a.name, &from);
  }
  // A parameter stacked from a Hugging Face checkpoint's parts (one per
  // expert) whose part the set lacks: that part is named, and the
  // parameter is not seeded whole over the parts given.
  auto missingPart = [&](const std::string &stackedName, int64_t part) {
    return failWith("'" + stackedPartName(stackedName, part) + "' is missing from " +
                    weights->path() + ": the parameter '" + a.name + "' " + formatDims(shape) +
                    " (argument #" + std::to_string(index) + where + ") stacks " +
                    std::to_string(shape[0]) + " parts, 0 to " + std::to_string(shape[0] - 1) +
                    " (--init-missing seeds whole parameters, not a part of one)");
  };
  // Part 0 missing, a later one given.
  if (!view && weights && isParam && isStackedName(a.name) && !shape.empty() &&
      weights->find(stackedPartName(a.name, 1)))
    return missingPart(a.name, 0);
  if (!view && !isParam && !isState && !options.generatedInputs)
    return failWith(std::string(spec.role == Role::Label ? "label" : "input") + " '" + a.name +
                    "' (argument #" + std::to_string(index) + ", " + formatDims(shape) +
                    ") is in neither --inputs nor --weights");
  // Microbatches stacked [K, B, ...] bind from the batch of all of them,
  // [K * B, ...]: the same elements in the same order.
  bool stackable = view && !isParam && !isState && shape.size() >= 2 &&
                   view->shape.size() + 1 == shape.size() &&
                   std::equal(view->shape.begin() + 1, view->shape.end(), shape.begin() + 2);
  bool stacked = stackable && view->shape[0] == shape[0] * shape[1];
  if (stackable && !stacked)
    return failWith("tensor '" + a.name + "' in " + from->path() + " holds a batch of " +
                    std::to_string(view->shape[0]) + ", which is not the " +
                    std::to_string(shape[0]) + " microbatches of " + std::to_string(shape[1]) +
                    " that argument #" + std::to_string(index) + where + " stacks (" +
                    formatDims(shape) + "): give a batch of " +
                    std::to_string(shape[0] * shape[1]));
  // The parts stop at the first one the set lacks.
  if (view && weights && isStackedName(view->name) && !weights->find(view->name) &&
      !shape.empty() && view->shape.size() == shape.size() && view->shape[0] < shape[0])
    return missingPart(view->name, view->shape[0]);
  if (view && view->shape != shape && !stacked)
    return failWith("tensor '" + a.name + "' in " + from->path() + ": expected " +
                    (layout ? "global shape " : "shape ") + formatDims(shape) + " (argument #" +
                    std::to_string(index) + where + perRank + "), got " + formatDims(view->shape));
  auto allocate = [&](Buffer &buffer, int64_t elements, size_t bytesEach, bool zeroed = false) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(elements), bytesEach, &bytes) ||
        !buffer.allocate(bytes, zeroed))
      return failWith("cannot allocate " + formatBytes(double(elements) * double(bytesEach)) +
                      " for '" + a.name + "' " + formatDims(shape) + ": not enough memory");
    return true;
  };
  if (options.checkpoint && (isParam || isState)) {
    // A checkpoint directory: this rank's block from the pieces holding it.
    const CheckpointDirectory &checkpoint = *options.checkpoint;
    const CheckpointDirectory::Tensor *saved = checkpoint.find(a.name);
    const char *kind = isParam ? "parameter" : "optimizer state";
    if (!saved)
      return failWith(checkpoint.path() + " has no " + kind + " '" + a.name + "' " +
                      formatDims(shape) + " (argument #" + std::to_string(index) + where +
                      "): it was saved for another model");
    if (saved->parameter != isParam || saved->shape != shape)
      return failWith("tensor '" + a.name + "' in " + checkpoint.path() + ": expected " + kind +
                      " of " + (layout ? "global shape " : "shape ") + formatDims(shape) +
                      " (argument #" + std::to_string(index) + where + perRank + "), got " +
                      (saved->parameter ? "parameter" : "optimizer state") + " of " +
                      formatDims(saved->shape));
    if (!allocate(a.owned, elementCount(a.shape), sizeof(float), /*zeroed=*/true))
      return false;
    a.data = a.owned.data();
    uint64_t bytes = 0;
    if (!checkpoint.read(a.name, layout ? &*layout : nullptr,
                         reinterpret_cast<float *>(a.owned.data()), bytes, error))
      return false;
    if (isParam && options.bytesRead)
      *options.bytesRead += bytes;
    if (options.warnBlock && (layout || options.warn))
      warnNonFiniteBlock(a, checkpoint.path(), options);
    return true;
  }
  if (!view && !isParam && !isState) {
    // This rank's block, written before each run.
    if (!allocate(a.owned, elementCount(a.shape), width, /*zeroed=*/true))
      return false;
    a.data = a.owned.data();
    return true;
  }
  if (!view && isState) {
    if (!allocate(a.owned, n, sizeof(float), /*zeroed=*/true))
      return false;
    a.data = a.owned.data();
  } else if (!view) {
    if (weights && !options.initMissing) {
      missing.push_back(a.name);
      return true;
    }
    a.seeded = weights != nullptr;
    if (!allocate(a.owned, n, sizeof(float)))
      return false;
    a.data = a.owned.data();
    if (!layout) {
      seeds.push_back(index);
      return true;
    }
    seededInit(a.name, reinterpret_cast<float *>(a.owned.data()), n, shape.size(), options.seed);
  } else if (spec.element == ElementKind::F32 && layout &&
             (view->dtype != DType::F32 ||
              reinterpret_cast<uintptr_t>(view->data) % alignof(float) != 0)) {
    // A block of a tensor to convert: copied out of the file in its own
    // dtype, then converted, so that the rank reads its block alone.
    size_t rawWidth = dtypeSize(view->dtype);
    int64_t local = elementCount(a.shape);
    Buffer raw, block;
    if (!allocate(raw, local, rawWidth, /*zeroed=*/true) || !allocate(block, local, sizeof(float)))
      return false;
    layout->copyOut(view->data, rawWidth, raw.data());
    TensorView blockView{view->name, view->dtype, a.shape, raw.data(), local * rawWidth};
    if (!convertToF32(blockView, reinterpret_cast<float *>(block.data()), error))
      return failWith("tensor '" + a.name + "' in " + from->path() +
                      ": expected dtype F32, F16, BF16 or F64, got " + dtypeName(view->dtype));
    if (isParam && options.bytesRead)
      *options.bytesRead += layout->elementsInside() * rawWidth;
    a.owned = std::move(block);
    a.data = a.owned.data();
    if (options.warnBlock)
      warnNonFiniteBlock(a, from->path(), options);
    return true;
  } else if (spec.element == ElementKind::F32) {
    if (view->dtype == DType::F32 &&
        reinterpret_cast<uintptr_t>(view->data) % alignof(float) == 0) {
      a.data = const_cast<uint8_t *>(view->data); // used in place, never written
    } else {
      if (!allocate(a.owned, n, sizeof(float)))
        return false;
      if (!convertToF32(*view, reinterpret_cast<float *>(a.owned.data()), error))
        return failWith("tensor '" + a.name + "' in " + from->path() +
                        ": expected dtype F32, F16, BF16 or F64, got " + dtypeName(view->dtype));
      a.data = a.owned.data();
    }
  } else {
    if (view->dtype != DType::I64 && view->dtype != DType::I32)
      return failWith("tensor '" + a.name + "' in " + from->path() +
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
  // A sharded tensor is checked block by block, each rank its own.
  if (view && spec.element == ElementKind::F32 && !layout && options.warn) {
    const float *values = static_cast<const float *>(a.data);
    if (int64_t k = firstNonFinite(values, n); k >= 0)
      options.warn("weight '" + a.name + "' in " + from->path() +
                   " has non-finite values, the first at flat index " + std::to_string(k) + " (" +
                   nonFiniteName(values[k]) + "): the results will not be finite");
  }
  if (view && isParam && options.bytesRead)
    *options.bytesRead += layout ? layout->elementsInside() * dtypeSize(view->dtype) : view->bytes;
  if (layout) {
    // Padding beyond the global tensor stays zero: contractions over a
    // padded dimension rely on it.
    Buffer block;
    if (!allocate(block, elementCount(a.shape), width, /*zeroed=*/true))
      return false;
    layout->copyOut(a.data, width, block.data());
    a.owned = std::move(block);
    a.data = a.owned.data();
    if (view && spec.element == ElementKind::F32 && options.warnBlock)
      warnNonFiniteBlock(a, from->path(), options);
  } else if (spec.updated && a.data != a.owned.data()) {
    // The program writes an updated argument: never into a file mapping.
    Buffer own;
    if (!allocate(own, n, width))
      return false;
    std::memcpy(own.data(), a.data, n * width);
    a.owned = std::move(own);
    a.data = a.owned.data();
  }
  return true;
}

/// The parameters left to seed (indices of `bound`, allocated whole): each
/// thread takes the next one until none is left.
struct SeedWork {
  std::vector<BoundArgument> &bound;
  std::vector<size_t> seeds;
  uint64_t seed;
  std::atomic<size_t> next{0};

  void run() {
    for (size_t k = next++; k < seeds.size(); k = next++) {
      BoundArgument &a = bound[seeds[k]];
      seededInit(a.name, reinterpret_cast<float *>(a.owned.data()), elementCount(a.shape),
                 a.shape.size(), seed);
    }
  }
};

/// Seeds the parameters `seeds` on up to options.threads threads, the
/// largest first, each tensor on one.
void seedOnThreads(std::vector<BoundArgument> &bound, std::vector<size_t> seeds,
                   const BindOptions &options) {
  std::sort(seeds.begin(), seeds.end(), [&](size_t x, size_t y) {
    return elementCount(bound[x].shape) > elementCount(bound[y].shape);
  });
  SeedWork work{bound, std::move(seeds), options.seed};
  auto body = +[](void *context) -> void * {
    static_cast<SeedWork *>(context)->run();
    return nullptr;
  };
  std::vector<pthread_t> helpers;
  size_t wanted = std::min<size_t>(std::max(options.threads, 1), work.seeds.size());
  for (size_t t = 1; t < wanted; ++t) {
    pthread_t helper;
    // No more threads: those started and this one do the rest.
    if (pthread_create(&helper, nullptr, body, &work) != 0)
      break;
    helpers.push_back(helper);
  }
  work.run();
  for (pthread_t helper : helpers)
    pthread_join(helper, nullptr);
}

} // namespace

std::optional<BlockLayout> exec::blockOf(const TensorSpec &spec, const Mesh &mesh,
                                         const std::vector<int64_t> &coordinates,
                                         std::string &error) {
  return BlockLayout::decode(mesh, *spec.sharding, spec.shape, spec.global, coordinates, error,
                             spec.parts, spec.headTailDim);
}

bool exec::layOut(std::vector<TensorSpec> &specs, const char *kind, const std::string &entry,
                  const Mesh *mesh, const std::vector<int64_t> &coordinates, std::string &error) {
  for (TensorSpec &spec : specs) {
    spec.block.reset();
    if (!spec.sharding)
      continue;
    std::string what = std::string(kind) + " '" + spec.name + "' of @" + entry;
    if (!mesh) {
      error = what + " is sharded (tfm.sharding); run it with --mesh";
      return false;
    }
    if (!(spec.block = blockOf(spec, *mesh, coordinates, error))) {
      error = what + " " + error;
      return false;
    }
  }
  return true;
}

bool exec::bindArguments(const std::vector<TensorSpec> &args, const std::string &entry,
                         const BindOptions &options, std::vector<BoundArgument> &bound,
                         std::string &error) {
  std::vector<std::string> missing;
  std::vector<size_t> seeds;
  bound.clear();
  bound.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!bindOne(args[i], i, entry, options, bound[i], missing, seeds, error) ||
        !checkSecondMoment(args[i], bound[i], error))
      return false;
  seedOnThreads(bound, seeds, options);
  if (!missing.empty()) {
    std::string list;
    for (size_t k = 0; k < missing.size() && k < 10; ++k)
      list += "\n  '" + missing[k] + "' (" + closestNames(*options.weights, missing[k]) + ")";
    if (missing.size() > 10)
      list += "\n  ... and " + std::to_string(missing.size() - 10) + " more";
    error = options.weights->path() + " lacks " + std::to_string(missing.size()) +
            " of the weights of @" + entry + ":" + list +
            "\n(--init-missing gives them the seeded init)";
    return false;
  }
  if (options.warn) {
    std::string list;
    for (const BoundArgument &a : bound)
      if (a.seeded)
        list += (list.empty() ? "" : ", ") + a.name;
    if (!list.empty())
      options.warn("--init-missing: " + options.weights->path() +
                   " lacks these weights, which get the seeded init: " + list);
  }
  return true;
}

namespace {

/// Whether two tensors of one shape hold the same numbers.
bool sameValues(const TensorView &a, const TensorView &b) {
  if (a.shape != b.shape)
    return false;
  if (a.dtype == b.dtype)
    return a.bytes == b.bytes && std::memcmp(a.data, b.data, a.bytes) == 0;
  int64_t n = a.numElements();
  std::vector<float> x(n), y(n);
  std::string error;
  return convertToF32(a, x.data(), error) && convertToF32(b, y.data(), error) && x == y;
}

} // namespace

const TensorView *exec::findWeight(const SafeTensorsSet &weights, const std::string &name,
                                   const SafeTensorsFile **file) {
  for (const std::string &candidate : checkpointNames(name))
    if (const TensorView *view = weights.find(candidate, file))
      return view;
  // A stacked parameter (pmlir's own checkpoints hold it whole) from a
  // Hugging Face checkpoint's parts.
  for (const std::string &candidate : checkpointNames(name))
    if (const TensorView *view = weights.findStacked(candidate, file))
      return view;
  return nullptr;
}

std::vector<exec::UnusedTensor> exec::unusedTensors(const SafeTensorsSet &weights,
                                                    const std::vector<std::string> &params) {
  std::map<std::string, const TensorView *> used;
  for (const std::string &param : params) {
    const TensorView *view = findWeight(weights, param);
    if (!view)
      continue;
    if (!weights.find(view->name)) {
      // Stacked from parts: each part is used.
      for (int64_t i = 0; i < view->shape[0]; ++i)
        if (const TensorView *part = weights.find(stackedPartName(view->name, i)))
          used.emplace(part->name, part);
      continue;
    }
    used.emplace(view->name, view);
  }
  std::vector<UnusedTensor> unused;
  for (auto &[name, entry] : weights.tensors()) {
    if (used.count(name))
      continue;
    UnusedTensor tensor{name, ""};
    llvm::StringRef n(name);
    if (n.ends_with(".attn.bias") || n.ends_with(".attn.masked_bias"))
      tensor.harmless = "GPT-2's attention mask buffer, which transformers rebuilds too";
    else if (n.ends_with(".rotary_emb.inv_freq"))
      tensor.harmless = "rotary frequencies, which transformers recomputes from rope_theta too";
    else
      for (auto &[other, view] : used)
        if (sameValues(*entry.view, *view)) {
          tensor.harmless = "equal to '" + other + "', which the model uses (a tied copy)";
          break;
        }
    unused.push_back(std::move(tensor));
  }
  return unused;
}
