//===- Binding.h - Tensors from safetensors files for a program -*- C++ -*-===//
//
// Part of pmlir.
//
// Binds the arguments of a compiled program by name: inputs and labels from
// the inputs file, then the weights file; a parameter in neither gets a
// seeded init when there is no weights file (or when asked), else binding
// fails naming every missing weight. On a mesh, a sharded argument is this
// rank's block of the global tensor (pmlir/Support/Layout.h). Pure C++:
// the argument list comes from describeEntry (Execution/Program.h).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_BINDING_H
#define PMLIR_EXECUTION_BINDING_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/Layout.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/SafeTensors.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::exec {

class CheckpointDirectory;

enum class ElementKind { F32, I32, I64 };

/// The bytes of one element of `element`.
inline size_t elementWidth(ElementKind element) { return element == ElementKind::I64 ? 8 : 4; }

/// What an argument is, as tfm::argumentRole() decides it.
using Role = tfm::ArgumentRole;

/// A tensor of the entry function as binding and assembly need it.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape; ///< this rank's shape
  ElementKind element = ElementKind::F32;
  Role role = Role::Param;
  /// Set for a sharded tensor: the axes of each dimension.
  std::optional<DimAxes> sharding;
  /// The equal parts each dimension is made of (empty: 1 each).
  std::vector<int64_t> parts;
  /// The global shape where the program gives it (tfm.global_type).
  std::optional<std::vector<int64_t>> global;
  /// The dimension whose blocks are in head-tail order (tfm.head_tail_dim).
  std::optional<size_t> headTailDim;
  /// Where this rank's block of a sharded tensor lies: decoded once for the
  /// entry function (layOut), read by binding, batches and assembly.
  std::optional<BlockLayout> block;
  /// A result that is the new value of this argument (tfm.updates): the
  /// compiled entry writes it into the argument's buffer.
  std::optional<size_t> updates;
  /// An argument some result updates: bound to a buffer of its own.
  bool updated = false;
};

/// Heap bytes whose allocation can fail with a message instead of an
/// abort: a seeded weight may be larger than the machine's memory.
struct Buffer {
  std::unique_ptr<uint8_t, void (*)(void *)> bytes{nullptr, &std::free};
  uint8_t *data() const { return bytes.get(); }
  /// `zeroed`: for blocks of padded shards, whose padding must be zeros.
  bool allocate(size_t size, bool zeroed = false);
};

/// One bound argument: its storage is either a file's mapping or `owned`.
struct BoundArgument {
  std::string name;
  std::vector<int64_t> shape;
  Buffer owned;
  void *data = nullptr;
  /// Seeded because the weights file lacks it (with initMissing).
  bool seeded = false;
};

struct BindOptions {
  const SafeTensorsSet *weights = nullptr;
  const SafeTensorsFile *inputs = nullptr;
  /// Where optimizer state binds from (a checkpoint's); without it the
  /// state starts at zero, as a fresh optimizer's.
  const SafeTensorsFile *state = nullptr;
  /// A checkpoint directory being resumed: parameters and optimizer state
  /// bind from it alone, each rank reading its blocks from the pieces that
  /// hold them (CheckpointDirectory.h).
  const CheckpointDirectory *checkpoint = nullptr;
  /// Give weights the weights file lacks the seeded init.
  bool initMissing = false;
  /// Inputs and labels are written before each run (training on a token
  /// file): bound to zeroed buffers, not read from the files.
  bool generatedInputs = false;
  uint64_t seed = 0;
  /// Threads that give unsharded parameters their seeded init, a tensor
  /// each at a time (its values come from its own generator, so they do
  /// not depend on the threads).
  int threads = 1;
  /// Where warnings about the files go (one rank speaks for all); null: none.
  std::function<void(const std::string &)> warn;
  /// Where warnings about this rank's own blocks go (every rank reads only
  /// its blocks of a sharded tensor to convert, and checks them); null: none.
  std::function<void(const std::string &)> warnBlock;
  /// Adds the bytes of parameters read from the files: a sharded one's
  /// block alone, an unsharded one whole.
  uint64_t *bytesRead = nullptr;
};

/// The block of the sharded tensor `spec` on the device at `coordinates`
/// of `mesh`: the one call of the layout decoder for a program's tensors.
/// On failure sets `error` (a phrase that follows the tensor's name).
std::optional<BlockLayout> blockOf(const TensorSpec &spec, const Mesh &mesh,
                                   const std::vector<int64_t> &coordinates, std::string &error);

/// Decodes, once for an entry function, where each of its sharded tensors
/// `specs` (its arguments or its results: `kind` says which, `entry` names
/// the function) has its block on the rank at `coordinates` of `mesh`
/// (null: not on a mesh, where a sharded tensor is an error): sets each
/// one's `block`. Returns false with a message in `error`.
bool layOut(std::vector<TensorSpec> &specs, const char *kind, const std::string &entry,
            const Mesh *mesh, const std::vector<int64_t> &coordinates, std::string &error);

/// Binds `args` (of the function `entry`, for messages; sharded ones laid
/// out by layOut): inputs and labels from the inputs file (a stack of
/// microbatches [K, B, ...] also from the file's [K * B, ...]), then the
/// weights file; optimizer state from the state file, or zeros. An
/// argument a result updates gets a buffer of its own. Returns false with a
/// message in `error`.
bool bindArguments(const std::vector<TensorSpec> &args, const std::string &entry,
                   const BindOptions &options, std::vector<BoundArgument> &bound,
                   std::string &error);

/// Deterministic init of a weight named `name` with `rank` dimensions:
/// 1-D `*.bias` -> 0, other 1-D (norm) weights -> 1, everything else
/// N(0, 0.02). The stream depends on the seed and the name only.
void seededInit(const std::string &name, float *out, int64_t n, size_t rank, uint64_t seed);

/// The checkpoint names `name` may have: its own, under Hugging Face's
/// `transformer.` prefix (GPT2LMHeadModel), and without `model.` (a base
/// LlamaModel's checkpoint).
std::vector<std::string> checkpointNames(const std::string &name);

/// The tensor of `weights` a parameter named `name` binds to: the first of
/// its checkpointNames the files hold (and the file holding it), or null.
const TensorView *findWeight(const SafeTensorsSet &weights, const std::string &name,
                             const SafeTensorsFile **file = nullptr);

/// The tensors of `weights` that no parameter of the model (`params`, by
/// their tfm.name, found as binding finds them) uses, each with why it may
/// be left alone, or "" where leaving it out may change the model: the
/// buffers Hugging Face's own models rebuild and never read from a file
/// (GPT-2's causal mask `attn.bias` and `attn.masked_bias`, Llama's
/// `rotary_emb.inv_freq`), and a tensor equal to one the model uses (a tied
/// LM head saved beside its embedding).
struct UnusedTensor {
  std::string name;
  std::string harmless; ///< why it changes nothing, or ""
};
std::vector<UnusedTensor> unusedTensors(const SafeTensorsSet &weights,
                                        const std::vector<std::string> &params);

/// The first of `n` floats that is not finite, or -1.
int64_t firstNonFinite(const float *values, int64_t n);
/// "nan", "inf" or "-inf".
const char *nonFiniteName(float value);
/// A token id of 8 (`wide`) or 4 bytes at flat index k of possibly
/// unaligned data.
int64_t loadId(const void *data, int64_t k, bool wide);
/// The number of elements of `shape`.
int64_t elementCount(const std::vector<int64_t> &shape);

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_BINDING_H
