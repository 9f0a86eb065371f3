//===- RuntimeAbi.h - The runtime's C ABI as data for a compiler -*- C++ -*-===//
//
// Part of pmlir.
//
// RuntimeAbi.def read into tables: what the lowerings that call the runtime
// need to name and declare its entry points. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_RUNTIME_RUNTIMEABI_H
#define PMLIR_RUNTIME_RUNTIMEABI_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pmlir::rt::abi {

/// Work (iterations times the operations of one) below which a loop runs
/// on its caller's thread alone: waking a sleeping worker costs
/// microseconds, and a vectorized loop does about this much in that time.
/// pmlir-outline-parallel-loops leaves such loops inline;
/// pmlir_rt_parallel_for runs them inline.
inline constexpr int64_t kParallelMinWork = int64_t(1) << 18;

/// The kinds of parameters and results in RuntimeAbi.def.
enum Kind { VOID, BUFFER, AXES, COUNTS, I32, I64, PTR };

enum class EntryId {
#define PMLIR_RT_TYPED_ENTRY(NAME, ...) NAME,
#define PMLIR_RT_ENTRY(NAME, ...) NAME,
#include "pmlir/Runtime/RuntimeAbi.def"
};

struct Entry {
  const char *name; ///< without the pmlir_rt_ prefix
  /// One entry per element type (name_<suffix>).
  bool typed;
  /// Called through its C interface (memref descriptors).
  bool cInterface;
  Kind result;
  std::vector<Kind> params;
};

struct DType {
  int code;
  const char *suffix; ///< "f32"
};

/// The entries in table order (EntryId indexes it).
inline const std::vector<Entry> &entries() {
  static const std::vector<Entry> table = {
#define PMLIR_RT_TYPED_ENTRY(NAME, RESULT, ...) {#NAME, true, true, RESULT, {__VA_ARGS__}},
#define PMLIR_RT_ENTRY(NAME, C_INTERFACE, RESULT, ...)                                             \
  {#NAME, false, C_INTERFACE == 1, RESULT, {__VA_ARGS__}},
#include "pmlir/Runtime/RuntimeAbi.def"
  };
  return table;
}

/// The entry `id` of the table.
inline const Entry &entry(EntryId id) { return entries()[static_cast<size_t>(id)]; }

/// The symbol compiled code calls for `id` (on elements with `suffix` for a
/// typed entry): "pmlir_rt_all_reduce_f32", "pmlir_rt_coordinate".
inline std::string symbolName(EntryId id, std::string_view suffix) {
  const Entry &e = entry(id);
  std::string name = std::string("pmlir_rt_") + e.name;
  if (e.typed)
    name += "_" + std::string(suffix);
  return name;
}

/// The entry compiled code calls as `symbol` ("pmlir_rt_all_reduce_f32"),
/// or null when `symbol` is none of the runtime's.
const Entry *entryOfSymbol(std::string_view symbol);

/// The element types the typed entries exist for.
inline const std::vector<DType> &dtypes() {
  static const std::vector<DType> table = {
#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE) {CODE, #SUFFIX},
#include "pmlir/Runtime/RuntimeAbi.def"
  };
  return table;
}

inline const Entry *entryOfSymbol(std::string_view symbol) {
  constexpr std::string_view prefix = "pmlir_rt_";
  if (symbol.substr(0, prefix.size()) != prefix)
    return nullptr;
  for (size_t i = 0; i < entries().size(); ++i) {
    const Entry &e = entries()[i];
    if (!e.typed && symbolName(EntryId(i), "") == symbol)
      return &e;
    if (e.typed)
      for (const DType &dtype : dtypes())
        if (symbolName(EntryId(i), dtype.suffix) == symbol)
          return &e;
  }
  return nullptr;
}

/// The code of the reduction the shard dialect spells `name` ("sum").
inline std::optional<int> reductionCode(std::string_view name) {
#define PMLIR_RT_REDUCTION(ENUM, CODE, NAME)                                                       \
  if (name == #NAME)                                                                               \
    return CODE;
#include "pmlir/Runtime/RuntimeAbi.def"
  return std::nullopt;
}

/// The code of the step metric tfm spells `name` ("expert_tokens").
inline std::optional<int> stepMetricCode(std::string_view name) {
#define PMLIR_RT_STEP_METRIC(ENUM, CODE, NAME)                                                     \
  if (name == #NAME)                                                                               \
    return CODE;
#include "pmlir/Runtime/RuntimeAbi.def"
  return std::nullopt;
}

/// The code of the pipeline work that pipe.fragment spells `name` ("F").
inline std::optional<int> workCode(std::string_view name) {
#define PMLIR_RT_WORK(ENUM, CODE, NAME)                                                            \
  if (name == #NAME)                                                                               \
    return CODE;
#include "pmlir/Runtime/RuntimeAbi.def"
  return std::nullopt;
}

/// The runtimes' GEMM families (the table's PMLIR_RT_CPU_GEMM, _GPU_GEMM).
enum class GemmFamily { Cpu, Gpu };

/// The prefix of the family's kernels: "pmlir_matmul", "pmlir_gpu_matmul".
inline std::string_view gemmPrefix(GemmFamily family) {
  return family == GemmFamily::Cpu ? "pmlir_matmul" : "pmlir_gpu_matmul";
}

/// Whether the family has a kernel on operands and a result of `types`
/// ("f32", "bf16f32", ...) with a result of rank `outRank` and a rhs of
/// rank `rhsRank`.
inline bool hasGemmKernel(GemmFamily family, std::string_view types, unsigned outRank,
                          unsigned rhsRank) {
  bool typed = false;
  if (family == GemmFamily::Cpu) {
#define PMLIR_RT_CPU_GEMM(TYPES, IN, OUT) typed |= types == #TYPES;
#include "pmlir/Runtime/RuntimeAbi.def"
  } else {
#define PMLIR_RT_GPU_GEMM(TYPES, IN, OUT, COMPUTE) typed |= types == #TYPES;
#include "pmlir/Runtime/RuntimeAbi.def"
  }
#define PMLIR_RT_GEMM_RANKS_ARE(UNUSED, OUT_RANK, RHS_RANK)                                        \
  if (typed && outRank == OUT_RANK && rhsRank == RHS_RANK)                                         \
    return true;
  PMLIR_RT_FOR_GEMM_RANKS(PMLIR_RT_GEMM_RANKS_ARE, 0)
#undef PMLIR_RT_GEMM_RANKS_ARE
  return false;
}

/// The kernel's symbol (without `_mlir_ciface_`): "pmlir_matmul_f32_r32_t01".
inline std::string gemmKernelName(GemmFamily family, std::string_view types, unsigned outRank,
                                  unsigned rhsRank, bool lhsTransposed, bool rhsTransposed) {
  return std::string(gemmPrefix(family)) + "_" + std::string(types) + "_r" +
         std::to_string(outRank) + std::to_string(rhsRank) + "_t" + (lhsTransposed ? "1" : "0") +
         (rhsTransposed ? "1" : "0");
}

/// A GEMM kernel's family and operand types, its name less the ranks and
/// transposes gemmKernelName adds ("pmlir_gpu_matmul_bf16" of
/// "pmlir_gpu_matmul_bf16_r32_t01"); any other name as it is.
inline std::string_view gemmKernelTypes(std::string_view kernel) {
  auto suffix = [&](char letter) {
    size_t at = kernel.size() >= 4 ? kernel.size() - 4 : 0;
    if (kernel.size() < 4 || kernel[at] != '_' || kernel[at + 1] != letter)
      return false;
    kernel = kernel.substr(0, at);
    return true;
  };
  std::string_view whole = kernel;
  if (!suffix('t') || !suffix('r'))
    return whole;
  return kernel;
}

/// The bytes of an operand's element and of the result's of GEMM kernel
/// `kernel` (either family), or nullopt where it is none.
inline std::optional<std::pair<int64_t, int64_t>> gemmElementBytes(std::string_view kernel) {
  std::string_view types = gemmKernelTypes(kernel);
  std::string cpu = std::string(gemmPrefix(GemmFamily::Cpu)) + "_";
  std::string gpu = std::string(gemmPrefix(GemmFamily::Gpu)) + "_";
#define PMLIR_RT_CPU_GEMM(TYPES, IN, OUT)                                                          \
  if (types == cpu + #TYPES)                                                                       \
    return std::pair<int64_t, int64_t>(sizeof(IN), sizeof(OUT));
#define PMLIR_RT_GPU_GEMM(TYPES, IN, OUT, COMPUTE)                                                 \
  if (types == gpu + #TYPES)                                                                       \
    return std::pair<int64_t, int64_t>(sizeof(IN), sizeof(OUT));
#include "pmlir/Runtime/RuntimeAbi.def"
  return std::nullopt;
}

/// Every GEMM kernel's family and operand types, gemmKernelTypes' names
/// ("pmlir_matmul_f32", "pmlir_gpu_matmul_bf16", ...).
inline std::vector<std::string> gemmKernelTypeNames() {
  std::vector<std::string> names;
#define PMLIR_RT_CPU_GEMM(TYPES, IN, OUT)                                                          \
  names.push_back(std::string(gemmPrefix(GemmFamily::Cpu)) + "_" #TYPES);
#define PMLIR_RT_GPU_GEMM(TYPES, IN, OUT, COMPUTE)                                                 \
  names.push_back(std::string(gemmPrefix(GemmFamily::Gpu)) + "_" #TYPES);
#include "pmlir/Runtime/RuntimeAbi.def"
  return names;
}

/// Whether `name` is a GEMM kernel's (gemmKernelName's form, either family).
inline bool isGemmKernel(std::string_view name) {
  return gemmKernelTypes(name).size() != name.size() && gemmElementBytes(name).has_value();
}

} // namespace pmlir::rt::abi

#endif // PMLIR_RUNTIME_RUNTIMEABI_H
