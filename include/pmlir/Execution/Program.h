//===- Program.h - A compiled program with its arguments bound --*- C++ -*-===//
//
// Part of pmlir.
//
// What pmlir-run JIT-compiles: the entry function's signature as binding
// needs it (describeEntry), and the LLVM-dialect module that the CPU
// pipeline made of it, compiled for this host (HostJit, its object kept in
// the ObjectCache) with the runtime's entry points bound by name
// (JitProgram).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_PROGRAM_H
#define PMLIR_EXECUTION_PROGRAM_H

#include "pmlir/Execution/Binding.h"
#include "pmlir/Runtime/MemRefDescriptor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <vector>

namespace pmlir::exec {
class HostJit;
} // namespace pmlir::exec

namespace pmlir::exec {

/// The entry function as binding and result assembly see it.
struct EntrySignature {
  std::string name;
  std::vector<TensorSpec> arguments;
  /// The results, each named by its tfm.name ("logits" for a lone result
  /// without one, "result<i>" otherwise).
  std::vector<TensorSpec> results;
};

/// Reads the signature of `entry` (per-rank shapes, shardings, roles). Fails
/// with a message on what pmlir-run cannot bind or return: an argument that
/// is no tensor of static shape, has no tfm.name or an element type other
/// than f32, i32, i64; a result that is not an f32 tensor of static shape;
/// two results of one name; no result at all unless `mayReturnNothing` (a
/// pipeline rank whose stages' results go to another).
bool describeEntry(mlir::func::FuncOp entry, EntrySignature &signature, std::string &error,
                   bool mayReturnNothing = false);

using rt::MemRefDescriptor;

/// How the host code of a program is compiled and where its tensors live.
struct CompileOptions {
  /// LLVM's optimization level (0-3).
  unsigned optLevel = 2;
  /// A program of pmlir-gpu-pipeline: its arguments are copied to the
  /// device when bound (and stay there), its results copied back when
  /// read; the runtime's GPU side must be initialized.
  bool device = false;
  /// Whether an object compiled here is kept in the ObjectCache (one found
  /// there is loaded either way). --predict keeps none: a process that
  /// compiled holds LLVM's freed memory and one that loaded does not, so
  /// the prediction sees the process of the run that follows it only if
  /// it leaves the cache as it found it.
  bool keepObject = true;
};

/// The entry of a module lowered to the LLVM dialect (by
/// pmlir-cpu-pipeline or pmlir-gpu-pipeline), JIT-compiled for this host.
class JitProgram {
public:
  ~JitProgram();
  /// Compiles `lowered`, whose entry has `signature`, for this host's CPU
  /// with LLVM's -O`options.optLevel` pipeline, or loads the object the
  /// ObjectCache (its default directory) keeps for it. Returns null with a
  /// message in `error`.
  static std::unique_ptr<JitProgram> create(mlir::ModuleOp lowered, const EntrySignature &signature,
                                            const CompileOptions &options, std::string &error);
  /// Passes `args` (bound for the signature's arguments) to every run: the
  /// descriptors are built once, outside the timed runs of --repeat; a
  /// device program's arguments are copied to the device here, and the
  /// bf16 forms the compiled entry takes of some (kRoundedArgumentsAttr)
  /// are made here. With `releaseBf16Only` (a caller that will neither
  /// write nor read them again: a forward), the f32 buffers of the
  /// arguments the entry reads only in bf16 (kBf16OnlyArgumentsAttr) are
  /// freed as soon as their forms are made, and a device program never
  /// copies them to the device; a file's mapping stays.
  void bind(std::vector<BoundArgument> &args, bool releaseBf16Only = false);
  /// The arguments `which` (indices into the bound ones) were written since
  /// they were bound (a step's new token ids): a device program's are
  /// copied to the device from the host buffers of `args`, and the bf16
  /// forms of any are made again. toHost copies a device program's back
  /// into the host buffers (the parameters a training step updated, before
  /// they are saved or checked); a CPU program's arguments are the host
  /// buffers.
  void toDevice(const std::vector<BoundArgument> &args, llvm::ArrayRef<size_t> which);
  void toHost(std::vector<BoundArgument> &args, llvm::ArrayRef<size_t> which);
  /// Runs the entry on the bound arguments. The results stay valid until
  /// releaseResults() or the next run.
  bool run(std::string &error);
  /// Result `i` of the last run (null for one that updates an argument:
  /// the run wrote it there).
  const float *result(size_t i = 0) const;
  void releaseResults();

  /// Seconds spent compiling: `llvm` by create (the translation to LLVM
  /// IR, its optimization and code generation or the cached object's
  /// load), `lowering` by whoever ran the pass pipeline that made the
  /// LLVM-dialect module.
  struct CompileSeconds {
    double lowering = 0, llvm = 0;
  } seconds;
  /// Whether the object came from the ObjectCache, and what went wrong
  /// with the cache if anything did (the program compiled anyway).
  bool objectFromCache() const;
  const std::string &objectCacheWarning() const;

private:
  JitProgram() = default;
  std::unique_ptr<HostJit> jit;
  std::string symbol;
  /// The C interface returns one result as its descriptor and several as a
  /// struct of descriptors: both are the descriptors' words in a row.
  std::vector<int64_t> resultWords;
  /// The word where each result's descriptor starts, or kInPlace.
  std::vector<size_t> resultAt;
  static constexpr size_t kInPlace = ~size_t(0);
  std::vector<MemRefDescriptor> descriptors; // the arguments', then the bf16 forms'
  /// The arguments the compiled entry also takes in bf16, in the order it
  /// takes those forms after its own arguments, and the forms (bf16 bits)
  /// on the host: a CPU program reads them there.
  std::vector<size_t> roundedFrom, bf16Only;
  std::vector<std::vector<uint16_t>> rounded;
  /// Per form: whether the entry updates it (its argument is one a result
  /// updates, pmlir/Conversion/RoundedArguments.h).
  std::vector<bool> formUpdated;
  /// Makes the bf16 form `k` of `args` (and copies it to the device); a
  /// CPU program's GEMMs keep one the entry does not update
  /// (pmlir::rt::keepBf16GemmOperand) until forgetRounded() or its next
  /// rounding.
  void round(const std::vector<BoundArgument> &args, size_t k);
  void forgetRounded();
  std::vector<void *> pointers, packed;
  /// A device program: the bytes of each argument's element, its device
  /// copies, and the host copies of the last run's results, made when
  /// first read.
  bool device = false;
  std::vector<size_t> argumentElementBytes;
  std::vector<std::vector<int64_t>> resultShapes;
  std::vector<void *> deviceArguments;
  size_t argumentBytes(size_t i, const std::vector<int64_t> &shape) const;
  mutable std::vector<std::vector<float>> hostResults;
};

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_PROGRAM_H
