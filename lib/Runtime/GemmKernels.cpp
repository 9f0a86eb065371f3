//===- GemmKernels.cpp - The CPU GEMM kernels, chosen by the CPU's features ===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/GemmKernels.h"
#include "HalfFloat.h"
#include "LoadedSymbol.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/Runtime.h"

#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

using namespace pmlir::rt;

namespace {

/// OpenBLAS's x86-64 cores (driver/others/dynamic.c) by the instructions
/// of their GEMM kernels.
struct Core {
  const char *name;
  SimdLevel level;
};
constexpr Core kCores[] = {
    {"katmai", SimdLevel::Sse},
    {"coppermine", SimdLevel::Sse},
    {"northwood", SimdLevel::Sse},
    {"prescott", SimdLevel::Sse},
    {"banias", SimdLevel::Sse},
    {"atom", SimdLevel::Sse},
    {"core2", SimdLevel::Sse},
    {"penryn", SimdLevel::Sse},
    {"dunnington", SimdLevel::Sse},
    {"nehalem", SimdLevel::Sse},
    {"athlon", SimdLevel::Sse},
    {"opteron", SimdLevel::Sse},
    {"opteron_sse3", SimdLevel::Sse},
    {"barcelona", SimdLevel::Sse},
    {"nano", SimdLevel::Sse},
    {"bobcat", SimdLevel::Sse},
    {"sandybridge", SimdLevel::Avx},
    {"bulldozer", SimdLevel::Avx},
    {"piledriver", SimdLevel::Avx},
    {"steamroller", SimdLevel::Avx},
    {"haswell", SimdLevel::Avx2},
    {"excavator", SimdLevel::Avx2},
    {"zen", SimdLevel::Avx2},
    {"skylakex", SimdLevel::Avx512},
    {"cooperlake", SimdLevel::Avx512Bf16},
    {"sapphirerapids", SimdLevel::Avx512Bf16},
};

/// Each level, in SimdLevel's order: its name, and the core pmlir asks
/// for at it (the oldest OpenBLAS release that has the core, 0.3.11 for
/// Cooperlake, knows its name).
struct Level {
  const char *name;
  const char *core;
};
constexpr Level kLevels[] = {{"SSE", nullptr},
                             {"AVX", "Sandybridge"},
                             {"AVX2", "Haswell"},
                             {"AVX-512", "SkylakeX"},
                             {"AVX-512 BF16", "Cooperlake"}};
static_assert(std::size(kLevels) == size_t(SimdLevel::Avx512Bf16) + 1, "a level per SimdLevel");

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// oneDNN, loaded at its first use: its bf16 GEMM (row-major, alpha A B +
/// beta C as dnnl_sgemm; exported beside dnnl_sgemm, declared by oneDNN's
/// own tests rather than its public header), its f32 GEMM dnnl_sgemm, its
/// version, and omp_set_num_threads of the OpenMP runtime it loaded.
struct OneDnn {
  using Gemm = dnnl_status_t (*)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float,
                                 const uint16_t *, dnnl_dim_t, const uint16_t *, dnnl_dim_t, float,
                                 float *, dnnl_dim_t);
  Gemm gemm = nullptr;
  using Sgemm = dnnl_status_t (*)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float,
                                  const float *, dnnl_dim_t, const float *, dnnl_dim_t, float,
                                  float *, dnnl_dim_t);
  Sgemm sgemm = nullptr;
  const dnnl_version_t *(*version)() = nullptr;
  void (*setThreads)(int) = nullptr;

  /// The matmul primitive, through oneDNN 2's C API; `engine` is null
  /// where a function did not load or the CPU engine was not made.
  struct Matmul {
    decltype(&dnnl_engine_create) engineCreate = nullptr;
    decltype(&dnnl_stream_create) streamCreate = nullptr;
    decltype(&dnnl_stream_wait) streamWait = nullptr;
    decltype(&dnnl_stream_destroy) streamDestroy = nullptr;
    decltype(&dnnl_memory_desc_init_by_strides) memoryDescInit = nullptr;
    decltype(&dnnl_memory_desc_init_by_tag) memoryDescInitByTag = nullptr;
    decltype(&dnnl_memory_desc_equal) memoryDescEqual = nullptr;
    decltype(&dnnl_matmul_desc_init) matmulDescInit = nullptr;
    decltype(&dnnl_primitive_desc_create) primitiveDescCreate = nullptr;
    decltype(&dnnl_primitive_desc_destroy) primitiveDescDestroy = nullptr;
    decltype(&dnnl_primitive_desc_query) primitiveDescQuery = nullptr;
    decltype(&dnnl_primitive_desc_query_md) primitiveDescQueryMd = nullptr;
    decltype(&dnnl_reorder_primitive_desc_create) reorderDescCreate = nullptr;
    decltype(&dnnl_primitive_create) primitiveCreate = nullptr;
    decltype(&dnnl_primitive_destroy) primitiveDestroy = nullptr;
    decltype(&dnnl_primitive_execute) primitiveExecute = nullptr;
    decltype(&dnnl_memory_create) memoryCreate = nullptr;
    decltype(&dnnl_memory_destroy) memoryDestroy = nullptr;
    dnnl_engine_t engine = nullptr;
  } matmul;
};
constexpr const char *kOneDnnLibrary = "libdnnl.so.2";
constexpr const char *kWidenedEnv = "PMLIR_TEST_BF16_GEMM_WIDENED";
constexpr const char *kOneDnnBf16Env = "PMLIR_TEST_BF16_GEMM_ONEDNN";
constexpr const char *kOpenBlasF32Env = "PMLIR_TEST_F32_GEMM_OPENBLAS";
constexpr const char *kUnpackedEnv = "PMLIR_TEST_BF16_WEIGHTS_UNPACKED";
constexpr const char *kPerGemmEnv = "PMLIR_TEST_BF16_BATCH_PER_GEMM";
constexpr const char *kMatmulWithoutAmxEnv = "PMLIR_TEST_BF16_MATMUL_WITHOUT_AMX";
/// The parts a oneDNN GEMM is split into: the threads setGemmThreads set.
std::atomic<int> gemmThreads{1};
/// The least work (FLOPs) of a part of a split GEMM: about 10 us of one
/// core, where waking a worker costs microseconds.
constexpr int64_t kGemmFlopsPerPart = int64_t(1) << 21;
/// A part's rows or columns are a multiple of this (a 64-byte vector of
/// f32), but for the last.
constexpr int64_t kGemmPartGrain = 16;

/// oneDNN's matmul functions from `handle`, and its CPU engine.
OneDnn::Matmul loadMatmul(void *handle) {
  OneDnn::Matmul api;
  bool all = true;
  auto bind = [&](auto &function, const char *name) {
    all = loadSymbol(handle, function, name) && all;
  };
  bind(api.engineCreate, "dnnl_engine_create");
  bind(api.streamCreate, "dnnl_stream_create");
  bind(api.streamWait, "dnnl_stream_wait");
  bind(api.streamDestroy, "dnnl_stream_destroy");
  bind(api.memoryDescInit, "dnnl_memory_desc_init_by_strides");
  bind(api.memoryDescInitByTag, "dnnl_memory_desc_init_by_tag");
  bind(api.memoryDescEqual, "dnnl_memory_desc_equal");
  bind(api.matmulDescInit, "dnnl_matmul_desc_init");
  bind(api.primitiveDescCreate, "dnnl_primitive_desc_create");
  bind(api.primitiveDescDestroy, "dnnl_primitive_desc_destroy");
  bind(api.primitiveDescQuery, "dnnl_primitive_desc_query");
  bind(api.primitiveDescQueryMd, "dnnl_primitive_desc_query_md");
  bind(api.reorderDescCreate, "dnnl_reorder_primitive_desc_create");
  bind(api.primitiveCreate, "dnnl_primitive_create");
  bind(api.primitiveDestroy, "dnnl_primitive_destroy");
  bind(api.primitiveExecute, "dnnl_primitive_execute");
  bind(api.memoryCreate, "dnnl_memory_create");
  bind(api.memoryDestroy, "dnnl_memory_destroy");
  if (!all || api.engineCreate(&api.engine, dnnl_cpu, 0) != dnnl_success)
    api.engine = nullptr;
  return api;
}

/// oneDNN's functions, or no gemm where it did not load.
const OneDnn &oneDnn() {
  static const OneDnn loaded = [] {
    OneDnn library;
    void *handle = dlopen(kOneDnnLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return library;
    loadSymbol(handle, library.gemm, "dnnl_gemm_bf16bf16f32");
    loadSymbol(handle, library.sgemm, "dnnl_sgemm");
    if (!loadSymbol(handle, library.version, "dnnl_version") ||
        !loadSymbol(handle, library.setThreads, "omp_set_num_threads")) {
      library.gemm = nullptr;
      library.sgemm = nullptr;
      return library;
    }
    library.matmul = loadMatmul(handle);
    return library;
  }();
  return loaded;
}

/// The bf16 GEMMs run on oneDNN's matmul primitive: those of an output of
/// 2^24 elements or more (64 MiB of f32) or with an output dimension of
/// 2^15 or more (a vocabulary's: the LM head's forward at any token count).
/// There oneDNN 2.6's bf16 GEMM API runs its AMX kernels at a half to two
/// thirds of the primitive's rate on one core (bench/onednn_bf16_matmul.cpp:
/// 177 against 388 GFLOP/s for the LM head's weight gradient, 165 against
/// 257 for its forward at 128 tokens, 6.4M outputs), while on the other
/// GEMMs measured (the layers' at 128 to 4096 tokens, 12.6M outputs and
/// below; the LM head's input gradient, whose vocabulary is its sum) the
/// two are within noise or the API is faster.
constexpr int64_t kMatmulMinOutput = int64_t(1) << 24;
constexpr int64_t kMatmulMinDimension = int64_t(1) << 15;

/// A oneDNN handle destroyed at the end of a scope.
template <typename Handle, typename Destroy> struct Owned {
  Handle handle = nullptr;
  Destroy destroy;
  explicit Owned(Destroy destroy) : destroy(destroy) {}
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() {
    if (handle)
      destroy(handle);
  }
};

/// Whether bf16 GEMMs may run on oneDNN's matmul primitive: a CPU with
/// AMX, where its brgemm kernels are measured, and the primitive loaded.
/// PMLIR_TEST_BF16_MATMUL_WITHOUT_AMX takes the primitive's paths on any
/// CPU with AVX-512 BF16 (oneDNN has brgemm kernels there too), so that
/// the suite checks them where there is no AMX.
bool matmulUsable() {
  // cpuid once: in a VM each one exits to the hypervisor.
  static const bool usable = (cpuHasAmx() || (std::getenv(kMatmulWithoutAmxEnv) &&
                                              cpuSimdLevel() >= SimdLevel::Avx512Bf16)) &&
                             oneDnn().matmul.engine;
  return usable;
}

/// The elements of B (k x n, n x k with `transB`, rows ldb apart) a GEMM
/// reads, from its first: k, n > 0.
int64_t operandSpan(bool transB, int64_t k, int64_t n, int64_t ldb) {
  return transB ? (n - 1) * ldb + k : (k - 1) * ldb + n;
}

/// A copy of a sub-matrix of a kept operand in the layout the matmul
/// primitive reads (`layout`, oneDNN's own blocked one): B of a GEMM, by
/// its first element, extent and rows.
struct PackedOperand {
  const uint16_t *b;
  int64_t k, n, ldb;
  bool transB;
  dnnl_memory_desc_t layout;
  dnnl_memory_t memory;
};

/// The operands keepBf16GemmOperand kept, by their first element, with the
/// packed copies GEMMs made of them (one per sub-matrix a GEMM read: the
/// parts of a split GEMM read slices) or their f32 copy.
struct KeptOperands {
  struct Operand {
    int64_t elements;
    std::vector<PackedOperand> packed;
    std::unique_ptr<float[]> widened;
  };
  std::mutex mutex;
  std::map<const uint16_t *, Operand> operands;

  /// The operand holding elements [b, b + span), or null; under `mutex`.
  /// Its first element in `start` where found and asked for.
  Operand *holding(const uint16_t *b, int64_t span, const uint16_t **start = nullptr) {
    auto after = operands.upper_bound(b);
    if (after == operands.begin())
      return nullptr;
    auto &[first, operand] = *std::prev(after);
    auto end = [](const uint16_t *p, int64_t elements) {
      return reinterpret_cast<uintptr_t>(p) + uintptr_t(elements) * sizeof(uint16_t);
    };
    if (end(b, span) > end(first, operand.elements))
      return nullptr;
    if (start)
      *start = first;
    return &operand;
  }
  bool holds(const uint16_t *b, int64_t span) {
    std::lock_guard lock(mutex);
    return holding(b, span);
  }
};
/// Never destroyed: a program's operands may be forgotten after the
/// statics' destruction has begun.
KeptOperands &keptOperands() {
  static auto *kept = new KeptOperands;
  return *kept;
}

/// The packed copy of B (plain layout `plain`, `span` elements) in the
/// weights layout of the matmul `pd`: made at the first GEMM that reads
/// that sub-matrix in that layout (oneDNN's reorder, on `stream`), then
/// kept with its operand. Null where oneDNN fails (no memory for the
/// copy) or B is no longer kept.
dnnl_memory_t packedCopy(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t &plain,
                         const uint16_t *b, int64_t k, int64_t n, int64_t ldb, bool transB,
                         dnnl_stream_t stream) {
  const OneDnn::Matmul &api = oneDnn().matmul;
  const dnnl_memory_desc_t *layout = api.primitiveDescQueryMd(pd, dnnl_query_weights_md, 0);
  if (!layout)
    return nullptr;
  KeptOperands &kept = keptOperands();
  std::lock_guard lock(kept.mutex);
  KeptOperands::Operand *operand = kept.holding(b, operandSpan(transB, k, n, ldb));
  if (!operand)
    return nullptr;
  for (const PackedOperand &p : operand->packed)
    if (p.b == b && p.k == k && p.n == n && p.ldb == ldb && p.transB == transB &&
        api.memoryDescEqual(&p.layout, layout))
      return p.memory;
  Owned<dnnl_memory_t, decltype(api.memoryDestroy)> from(api.memoryDestroy), to(api.memoryDestroy);
  Owned<dnnl_primitive_desc_t, decltype(api.primitiveDescDestroy)> reorderPd(
      api.primitiveDescDestroy);
  Owned<dnnl_primitive_t, decltype(api.primitiveDestroy)> reorder(api.primitiveDestroy);
  dnnl_status_t status =
      api.memoryCreate(&from.handle, &plain, api.engine, const_cast<uint16_t *>(b));
  if (status == dnnl_success)
    status = api.memoryCreate(&to.handle, layout, api.engine, DNNL_MEMORY_ALLOCATE);
  if (status == dnnl_success)
    status =
        api.reorderDescCreate(&reorderPd.handle, &plain, api.engine, layout, api.engine, nullptr);
  if (status == dnnl_success)
    status = api.primitiveCreate(&reorder.handle, reorderPd.handle);
  dnnl_exec_arg_t arguments[] = {{DNNL_ARG_FROM, from.handle}, {DNNL_ARG_TO, to.handle}};
  if (status == dnnl_success)
    status = api.primitiveExecute(reorder.handle, stream, 2, arguments);
  if (status == dnnl_success)
    status = api.streamWait(stream);
  if (status != dnnl_success)
    return nullptr;
  operand->packed.push_back({b, k, n, ldb, transB, *layout, to.handle});
  return std::exchange(to.handle, nullptr);
}

/// C = A B on oneDNN's bf16 GEMM API: into f32 C, or rounded from an f32
/// copy into bf16 C (bits), as the matmul primitive writes it.
dnnl_status_t apiGemm(char transA, char transB, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k,
                      const uint16_t *a, dnnl_dim_t lda, const uint16_t *b, dnnl_dim_t ldb,
                      float *c, dnnl_dim_t ldc) {
  return oneDnn().gemm(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
dnnl_status_t apiGemm(char transA, char transB, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k,
                      const uint16_t *a, dnnl_dim_t lda, const uint16_t *b, dnnl_dim_t ldb,
                      uint16_t *c, dnnl_dim_t ldc) {
  std::vector<float> sums(size_t(m) * size_t(n));
  dnnl_status_t status = apiGemm(transA, transB, m, n, k, a, lda, b, ldb, sums.data(), n);
  for (int64_t i = 0; status == dnnl_success && i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = floatToBf16(sums[i * n + j]);
  return status;
}

/// This thread's oneDNN stream, made at its first matmul.
dnnl_stream_t threadStream() {
  struct Stream {
    dnnl_stream_t stream = nullptr;
    ~Stream() {
      if (stream)
        oneDnn().matmul.streamDestroy(stream);
    }
  };
  static thread_local Stream stream;
  const OneDnn::Matmul &api = oneDnn().matmul;
  if (!stream.stream &&
      api.streamCreate(&stream.stream, api.engine, dnnl_stream_default_flags) != dnnl_success)
    return nullptr;
  return stream.stream;
}

/// A kept B's sub-matrix (k x n, n x k with `transB`, rows ldb apart),
/// which a matmul reads from its packed copy.
struct KeptB {
  int64_t k, n, ldb;
  bool transB;
};

/// oneDNN's matmul primitive for bf16 A and B into `Out` C (f32, or bf16
/// bits the primitive rounds to nearest even as it writes them, as
/// floatToBf16 does), all `rank`-dimensional (the batch's dimensions, then
/// rows and columns) by their dimensions and strides: made once (oneDNN's
/// primitive cache keeps its kernels), then run on any thread's stream, on
/// operands of those layouts.
template <typename Out> class Matmul {
public:
  /// With `packedB`, B is read from a packed copy in the primitive's own
  /// layout (it then never packs B itself). dnnl_unimplemented where
  /// oneDNN offers no brgemm kernel for the operands' layout (rows padded
  /// past the matrix: then it picks its GEMM API's kernels anyway).
  dnnl_status_t make(int rank, const dnnl_dim_t *aDims, const dnnl_dim_t *aStrides,
                     const dnnl_dim_t *bDims, const dnnl_dim_t *bStrides, const dnnl_dim_t *cDims,
                     const dnnl_dim_t *cStrides, bool packedB) {
    const OneDnn::Matmul &api = oneDnn().matmul;
    dnnl_memory_desc_t bLayout;
    dnnl_matmul_desc_t desc;
    dnnl_status_t status = api.memoryDescInit(&aDesc, rank, aDims, dnnl_bf16, aStrides);
    if (status == dnnl_success)
      status = api.memoryDescInit(&bDesc, rank, bDims, dnnl_bf16, bStrides);
    // A packed B's layout is the primitive's choice.
    if (status == dnnl_success)
      status = packedB
                   ? api.memoryDescInitByTag(&bLayout, rank, bDims, dnnl_bf16, dnnl_format_tag_any)
                   : api.memoryDescInit(&bLayout, rank, bDims, dnnl_bf16, bStrides);
    if (status == dnnl_success)
      status = api.memoryDescInit(&cDesc, rank, cDims,
                                  std::is_same_v<Out, float> ? dnnl_f32 : dnnl_bf16, cStrides);
    if (status == dnnl_success)
      status = api.matmulDescInit(&desc, &aDesc, &bLayout, nullptr, &cDesc);
    if (status == dnnl_success)
      status = api.primitiveDescCreate(&pd.handle, &desc, nullptr, api.engine, nullptr);
    const char *kernels = nullptr;
    if (status == dnnl_success &&
        (api.primitiveDescQuery(pd.handle, dnnl_query_impl_info_str, 0, &kernels) != dnnl_success ||
         !kernels || std::string_view(kernels).substr(0, 4) != "brg:"))
      return dnnl_unimplemented;
    if (status == dnnl_success)
      status = api.primitiveCreate(&primitive.handle, pd.handle);
    readsPackedB = packedB;
    return status;
  }

  /// C = A B on this thread's stream, with B read from its packed copy
  /// where `kept` (made at the first GEMM that reads it): kept exactly when
  /// made with `packedB`. dnnl_unimplemented, with nothing written, where
  /// no packed copy could be made.
  dnnl_status_t run(const uint16_t *a, const uint16_t *b, Out *c, const KeptB *kept) const {
    assert(!kept == !readsPackedB && "a packed B is read where the primitive was made for one");
    const OneDnn::Matmul &api = oneDnn().matmul;
    dnnl_stream_t stream = threadStream();
    if (!stream)
      return dnnl_runtime_error;
    Owned<dnnl_memory_t, decltype(api.memoryDestroy)> aMemory(api.memoryDestroy),
        bMemory(api.memoryDestroy), cMemory(api.memoryDestroy);
    dnnl_status_t status =
        api.memoryCreate(&aMemory.handle, &aDesc, api.engine, const_cast<uint16_t *>(a));
    dnnl_memory_t weights = nullptr;
    if (status == dnnl_success && kept) {
      weights = packedCopy(pd.handle, bDesc, b, kept->k, kept->n, kept->ldb, kept->transB, stream);
      // No copy (oneDNN could not allocate or reorder it): the caller runs
      // the GEMM on the plain B, as it would unkept.
      if (!weights)
        return dnnl_unimplemented;
    } else if (status == dnnl_success) {
      status = api.memoryCreate(&bMemory.handle, &bDesc, api.engine, const_cast<uint16_t *>(b));
      weights = bMemory.handle;
    }
    if (status == dnnl_success)
      status = api.memoryCreate(&cMemory.handle, &cDesc, api.engine, c);
    if (status != dnnl_success)
      return status;
    dnnl_exec_arg_t arguments[] = {{DNNL_ARG_SRC, aMemory.handle},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_DST, cMemory.handle}};
    status = api.primitiveExecute(primitive.handle, stream, 3, arguments);
    if (status == dnnl_success)
      status = api.streamWait(stream);
    return status;
  }

private:
  dnnl_memory_desc_t aDesc, bDesc, cDesc;
  bool readsPackedB = false;
  Owned<dnnl_primitive_desc_t, decltype(OneDnn::Matmul::primitiveDescDestroy)> pd{
      oneDnn().matmul.primitiveDescDestroy};
  Owned<dnnl_primitive_t, decltype(OneDnn::Matmul::primitiveDestroy)> primitive{
      oneDnn().matmul.primitiveDestroy};
};

/// C = A B on oneDNN's matmul primitive (Matmul), with
/// dnnl_gemm_bf16bf16f32's signature (row-major bf16 A and B, f32 or bf16
/// C) for alpha 1 and beta 0. A B inside a kept operand is read from its
/// packed copy. Where the primitive cannot (no brgemm kernel, no copy),
/// the GEMM API itself.
template <typename Out>
dnnl_status_t bf16Matmul(char transA, char transB, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k,
                         float alpha, const uint16_t *a, dnnl_dim_t lda, const uint16_t *b,
                         dnnl_dim_t ldb, float beta, Out *c, dnnl_dim_t ldc) {
  if (alpha != 1.0f || beta != 0.0f || !oneDnn().matmul.engine)
    return dnnl_unimplemented;
  bool packed = k > 0 && n > 0 && keptOperands().holds(b, operandSpan(transB == 'T', k, n, ldb));
  // A stored transposed is k x m with rows lda apart: element (i, p) at
  // p lda + i.
  dnnl_dims_t aDims = {m, k}, bDims = {k, n}, cDims = {m, n};
  dnnl_dims_t aStrides = {transA == 'T' ? 1 : lda, transA == 'T' ? lda : 1};
  dnnl_dims_t bStrides = {transB == 'T' ? 1 : ldb, transB == 'T' ? ldb : 1};
  dnnl_dims_t cStrides = {ldc, 1};
  KeptB kept{k, n, ldb, transB == 'T'};
  Matmul<Out> matmul;
  dnnl_status_t status = matmul.make(2, aDims, aStrides, bDims, bStrides, cDims, cStrides, packed);
  if (status == dnnl_success)
    status = matmul.run(a, b, c, packed ? &kept : nullptr);
  if (status == dnnl_unimplemented)
    return apiGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc);
  return status;
}

constexpr const char *kChoseEnv = "PMLIR_OPENBLAS_CHOSE";
constexpr const char *kTestCoreEnv = "PMLIR_TEST_OPENBLAS_CORE";
constexpr const char *kCoreTypeEnv = "OPENBLAS_CORETYPE";

} // namespace

const char *pmlir::rt::simdLevelName(SimdLevel level) { return kLevels[size_t(level)].name; }

SimdLevel pmlir::rt::cpuSimdLevel() {
#if defined(__x86_64__)
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return SimdLevel::Sse;
  bool avx = ecx & (1u << 28), fma = ecx & (1u << 12), osxsave = ecx & (1u << 27);
  if (!avx || !osxsave)
    return SimdLevel::Sse;
  // The registers the OS saves on a context switch: AVX's (XMM and YMM
  // state), AVX-512's (opmask, ZMM upper halves, ZMM 16-31).
  uint32_t xcr0Low, xcr0High;
  __asm__ volatile("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
  if ((xcr0Low & 0x6) != 0x6)
    return SimdLevel::Sse;
  bool osAvx512 = (xcr0Low & 0xe0) == 0xe0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return SimdLevel::Avx;
  bool avx2 = ebx & (1u << 5);
  bool avx512 = (ebx & (1u << 16)) && (ebx & (1u << 17)) && (ebx & (1u << 30)) &&
                (ebx & (1u << 31)); // F, DQ, BW, VL
  unsigned leaves = eax;
  if (!avx2 || !fma)
    return SimdLevel::Avx;
  if (!avx512 || !osAvx512)
    return SimdLevel::Avx2;
  if (leaves >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)))
    return SimdLevel::Avx512Bf16;
  return SimdLevel::Avx512;
#else
  return SimdLevel::Sse;
#endif
}

bool pmlir::rt::cpuHasAmx() {
#if defined(__x86_64__)
  unsigned eax, ebx, ecx, edx;
  // AMX-TILE: leaf 7, EDX bit 24. Never executed here, so the OS's tile
  // state does not matter.
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 24));
#else
  return false;
#endif
}

std::optional<SimdLevel> pmlir::rt::openBlasCoreLevel(std::string_view core) {
  std::string name = lowered(core);
  for (const Core &known : kCores)
    if (name == known.name)
      return known.level;
  return std::nullopt;
}

std::optional<std::string> pmlir::rt::betterOpenBlasCore(std::string_view chosen, SimdLevel cpu) {
  std::optional<SimdLevel> level = openBlasCoreLevel(chosen);
  const char *better = kLevels[size_t(cpu)].core;
  if (!level || *level >= cpu || !better)
    return std::nullopt;
  return std::string(better);
}

void pmlir::rt::chooseGemmKernels(char **argv) {
  // A build of OpenBLAS for one CPU has no other kernels to ask for.
  if (std::getenv(kCoreTypeEnv) ||
      std::string_view(openblas_get_config()).find("DYNAMIC_ARCH") == std::string_view::npos)
    return;
  const char *test = std::getenv(kTestCoreEnv);
  std::string chosen = test ? test : openblas_get_corename();
  std::optional<std::string> better = betterOpenBlasCore(chosen, cpuSimdLevel());
  if (!better)
    return;
  // Set, or no restart: the next start finds it set and goes on.
  if (setenv(kCoreTypeEnv, better->c_str(), 1) != 0 || setenv(kChoseEnv, chosen.c_str(), 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // Not re-executed: OpenBLAS's own kernels, as it chose them.
  unsetenv(kCoreTypeEnv);
  unsetenv(kChoseEnv);
}

#if defined(__x86_64__)
namespace {
/// The chains of a rate measurement, enough to cover the instructions'
/// latency on both of their ports, and the iterations of one run (about
/// 0.05 ms of FMAs, 0.2 ms of dot products at half their rate).
constexpr int kRateChains = 12;
constexpr int kRateIterations = 20000;

/// Twelve chains of f32 FMAs; their sum keeps them from being removed.
__attribute__((target("avx512f"), noinline)) float fmaChains() {
  __m512 acc[kRateChains];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < kRateChains; ++c)
    acc[c] = _mm512_set1_ps(float(c));
  // Fully unrolled: the chains live in registers.
  for (int i = 0; i < kRateIterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kRateChains; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  float sum = 0;
  for (int c = 0; c < kRateChains; ++c)
    sum += _mm512_reduce_add_ps(acc[c]);
  return sum;
}

/// Twelve chains of bf16 dot products (1 x 2^-24 per product).
__attribute__((target("avx512f,avx512bf16"), noinline)) float dotChains() {
  __m512 acc[kRateChains];
  __m512bh one, tiny;
  const __m512i oneBits = _mm512_set1_epi16(0x3f80), tinyBits = _mm512_set1_epi16(0x3380);
  std::memcpy(&one, &oneBits, sizeof(one));
  std::memcpy(&tiny, &tinyBits, sizeof(tiny));
  for (int c = 0; c < kRateChains; ++c)
    acc[c] = _mm512_set1_ps(float(c));
  for (int i = 0; i < kRateIterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kRateChains; ++c)
      acc[c] = _mm512_dpbf16_ps(acc[c], one, tiny);
  float sum = 0;
  for (int c = 0; c < kRateChains; ++c)
    sum += _mm512_reduce_add_ps(acc[c]);
  return sum;
}

/// Seconds `chains` takes, the best of three runs (a run the OS or a
/// neighbour interrupts only takes longer).
double bestSeconds(float (*chains)()) {
  volatile float sink = 0;
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    auto start = std::chrono::steady_clock::now();
    sink = sink + chains();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}
} // namespace
#endif

const Bf16DotRates &pmlir::rt::bf16DotRates() {
  static const Bf16DotRates rates = [] {
    Bf16DotRates measured;
#if defined(__x86_64__)
    if (cpuSimdLevel() < SimdLevel::Avx512Bf16)
      return measured;
    // A first run brings the core to its clock for 512-bit work.
    (void)fmaChains();
    double instructions = double(kRateChains) * kRateIterations;
    measured.f32Gflops = instructions * 32 / bestSeconds(fmaChains) * 1e-9;
    measured.bf16Gflops = instructions * 64 / bestSeconds(dotChains) * 1e-9;
#endif
    return measured;
  }();
  return rates;
}

Bf16Gemm pmlir::rt::bf16Gemm() {
  static const Bf16Gemm chosen = [] {
    if (cpuSimdLevel() < SimdLevel::Avx512Bf16 || std::getenv(kWidenedEnv) || !oneDnn().gemm)
      return Bf16Gemm::Widened;
    if (cpuHasAmx() || std::getenv(kOneDnnBf16Env) || std::getenv(kMatmulWithoutAmxEnv))
      return Bf16Gemm::OneDnn;
    const Bf16DotRates &rates = bf16DotRates();
    return rates.bf16Gflops >= rates.f32Gflops ? Bf16Gemm::OneDnn : Bf16Gemm::Widened;
  }();
  return chosen;
}

F32Gemm pmlir::rt::f32Gemm() {
  static const F32Gemm chosen = [] {
    if (std::getenv(kOpenBlasF32Env) || cpuSimdLevel() < SimdLevel::Avx512 || !oneDnn().sgemm)
      return F32Gemm::OpenBlas;
    return F32Gemm::OneDnn;
  }();
  return chosen;
}

namespace {
/// One call of a oneDNN GEMM, row-major C = A B (+ C with `accumulate`),
/// split into `parts` along C's rows (`byRows`) or columns.
template <typename Gemm, typename In, typename Out> struct SplitGemm {
  Gemm gemm;
  bool transA, transB;
  int64_t m, n, k;
  const In *a;
  int64_t lda;
  const In *b;
  int64_t ldb;
  Out *c;
  int64_t ldc;
  bool accumulate;
  bool byRows;
  int64_t parts;
  std::atomic<bool> failed{false};

  /// The rows or columns the parts share, and their grains.
  int64_t extent() const { return byRows ? m : n; }
  int64_t grains() const { return (extent() + kGemmPartGrain - 1) / kGemmPartGrain; }

  /// The first row or column of part `part`, on the grain.
  int64_t start(int64_t part) const {
    return std::min(extent(), grains() * part / parts * kGemmPartGrain);
  }

  /// Parts [first, last) on this thread, each one single-threaded call.
  void run(int64_t first, int64_t last) {
    // oneDNN's OpenMP threads stay idle: omp_set_num_threads is the calling
    // thread's setting, so each thread that calls oneDNN sets it once.
    static thread_local bool oneThread = false;
    if (!oneThread) {
      oneDnn().setThreads(1);
      oneThread = true;
    }
    for (int64_t part = first; part < last; ++part) {
      int64_t begin = start(part), end = start(part + 1);
      if (begin == end)
        continue;
      const In *partA = a, *partB = b;
      Out *partC = c;
      int64_t rows = m, columns = n;
      if (byRows) {
        partA += transA ? begin : begin * lda;
        partC += begin * ldc;
        rows = end - begin;
      } else {
        partB += transB ? begin * ldb : begin;
        partC += begin;
        columns = end - begin;
      }
      // oneDNN refuses a leading dimension below 1 (an empty matrix's).
      if (gemm(transA ? 'T' : 'N', transB ? 'T' : 'N', rows, columns, k, 1.0f, partA,
               std::max<int64_t>(lda, 1), partB, std::max<int64_t>(ldb, 1),
               accumulate ? 1.0f : 0.0f, partC, std::max<int64_t>(ldc, 1)) != dnnl_success)
        failed.store(true, std::memory_order_relaxed);
    }
  }
};
} // namespace

/// Row-major C = A B (+ C with `accumulate`) on oneDNN's GEMM `gemm`, on
/// the runtime's threads: one single-threaded call per part of C, in parts
/// of rows where C has more rows than columns and of columns otherwise, so
/// that the operand each part reads whole (and packs) is the smaller one;
/// always of rows with `rowsOnly`. The parts depend on the shape,
/// `rowsOnly` and setGemmThreads only, never on which
/// threads run them, so the sums do too (a GEMM inside a parallel loop
/// runs its parts one after another).
template <typename Gemm, typename In, typename Out>
static bool oneDnnGemm(Gemm gemm, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                       const In *a, int64_t lda, const In *b, int64_t ldb, Out *c, int64_t ldc,
                       bool accumulate, bool rowsOnly = false) {
  SplitGemm<Gemm, In, Out> split{gemm, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate};
  split.byRows = rowsOnly || m > n;
  double flops = 2.0 * double(m) * double(n) * double(k);
  split.parts = std::max<int64_t>(
      1, std::min<int64_t>({gemmThreads.load(std::memory_order_relaxed), split.grains(),
                            int64_t(flops / double(kGemmFlopsPerPart))}));
  auto body = +[](void *context, int64_t begin, int64_t end) {
    static_cast<SplitGemm<Gemm, In, Out> *>(context)->run(begin, end);
  };
  int64_t partCost = std::max<int64_t>(kGemmFlopsPerPart, int64_t(flops) / split.parts);
  pmlir_rt_parallel_for(reinterpret_cast<void *>(body), &split, split.parts, partCost);
  return !split.failed.load();
}

bool pmlir::rt::oneDnnF32Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                              const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                              int64_t ldc, bool accumulate) {
  return oneDnnGemm(oneDnn().sgemm, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

bool pmlir::rt::oneDnnBf16UsesMatmul(int64_t m, int64_t n, int64_t k, bool accumulate) {
  bool large = m * n >= kMatmulMinOutput || std::max(m, n) >= kMatmulMinDimension;
  return !accumulate && k > 0 && large && matmulUsable();
}

/// Whether a bf16 GEMM's B lies inside a kept operand, and may be read
/// packed.
static bool packedB(bool transB, int64_t m, int64_t n, int64_t k, const uint16_t *b, int64_t ldb,
                    bool accumulate) {
  return !accumulate && m > 0 && n > 0 && k > 0 && matmulUsable() &&
         keptOperands().holds(b, operandSpan(transB, k, n, ldb));
}

bool pmlir::rt::oneDnnBf16RunsMatmul(bool transB, int64_t m, int64_t n, int64_t k,
                                     const uint16_t *b, int64_t ldb, bool accumulate) {
  return oneDnnBf16UsesMatmul(m, n, k, accumulate) || packedB(transB, m, n, k, b, ldb, accumulate);
}

bool pmlir::rt::oneDnnBf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                               const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                               float *c, int64_t ldc, bool accumulate) {
  // A kept B is split by rows: each part reads the packed copy whole (the
  // primitive's brgemm kernels take no part of C's columns, whose rows
  // are padded past them).
  bool packed = packedB(transB, m, n, k, b, ldb, accumulate);
  OneDnn::Gemm gemm =
      packed || oneDnnBf16UsesMatmul(m, n, k, accumulate) ? &bf16Matmul<float> : oneDnn().gemm;
  return oneDnnGemm(gemm, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate,
                    /*rowsOnly=*/packed);
}

bool pmlir::rt::oneDnnBf16GemmToBf16(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                                     const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                                     uint16_t *c, int64_t ldc) {
  bool packed = packedB(transB, m, n, k, b, ldb, /*accumulate=*/false);
  return oneDnnGemm(&bf16Matmul<uint16_t>, transA, transB, m, n, k, a, lda, b, ldb, c, ldc,
                    /*accumulate=*/false, /*rowsOnly=*/packed);
}

namespace {
/// A batch of bf16 GEMMs as matmul operands (Matmul's dimensions and
/// strides), split into `parts` along batch dimension `split`.
template <typename Out> struct BatchedMatmul {
  int rank;
  dnnl_dims_t aDims, bDims, cDims, aStrides, bStrides, cStrides;
  const uint16_t *a, *b;
  Out *c;
  int split;
  int64_t parts;
  std::atomic<bool> failed{false};
  /// The primitives of the parts: a part's slice of dimension `split` is
  /// one of two extents (its split's floor or ceiling), each part's
  /// primitive the one made for its extent.
  Matmul<Out> matmuls[2];
  int64_t extents[2] = {0, 0};

  int64_t start(int64_t part) const { return aDims[split] * part / parts; }
  int64_t extent(int64_t part) const { return start(part + 1) - start(part); }

  /// Makes every part's primitive, before any part runs: dnnl_success
  /// where each has a brgemm kernel.
  dnnl_status_t make() {
    for (int64_t part = 0; part < parts; ++part) {
      int64_t slice = extent(part);
      if (slice == extents[0] || slice == extents[1])
        continue;
      int made = extents[0] ? 1 : 0;
      assert(!extents[made] && "a split's parts have two extents at most");
      dnnl_dims_t a2, b2, c2;
      std::copy(aDims, aDims + rank, a2);
      std::copy(bDims, bDims + rank, b2);
      std::copy(cDims, cDims + rank, c2);
      a2[split] = b2[split] = c2[split] = slice;
      dnnl_status_t status = matmuls[made].make(rank, a2, aStrides, b2, bStrides, c2, cStrides,
                                                /*packedB=*/false);
      if (status != dnnl_success)
        return status;
      extents[made] = slice;
    }
    return dnnl_success;
  }

  /// Part `part`: its slice of dimension `split` of every operand.
  dnnl_status_t run(int64_t part) const {
    int64_t begin = start(part);
    const Matmul<Out> &matmul = matmuls[extent(part) == extents[0] ? 0 : 1];
    return matmul.run(a + begin * aStrides[split], b + begin * bStrides[split],
                      c + begin * cStrides[split], nullptr);
  }
};

template <typename Out>
BatchedGemm batchedGemm(int batchRank, const int64_t *batch, int64_t m, int64_t n, int64_t k,
                        const uint16_t *a, const int64_t *aStrides, const uint16_t *b,
                        const int64_t *bStrides, Out *c, const int64_t *cStrides) {
  int rank = batchRank + 2;
  if (batchRank < 1 || rank > DNNL_MAX_NDIMS || m <= 0 || n <= 0 || k <= 0 || !matmulUsable() ||
      std::getenv(kPerGemmEnv))
    return BatchedGemm::NotRun;
  BatchedMatmul<Out> matmul;
  matmul.rank = rank;
  for (int d = 0; d < batchRank; ++d)
    matmul.aDims[d] = matmul.bDims[d] = matmul.cDims[d] = batch[d];
  matmul.aDims[batchRank] = matmul.cDims[batchRank] = m;
  matmul.aDims[batchRank + 1] = matmul.bDims[batchRank] = k;
  matmul.bDims[batchRank + 1] = matmul.cDims[batchRank + 1] = n;
  std::copy(aStrides, aStrides + rank, matmul.aStrides);
  std::copy(bStrides, bStrides + rank, matmul.bStrides);
  std::copy(cStrides, cStrides + rank, matmul.cStrides);
  matmul.a = a;
  matmul.b = b;
  matmul.c = c;
  matmul.split = 0;
  while (matmul.split + 1 < batchRank && batch[matmul.split] == 1)
    ++matmul.split;
  int64_t elements = 1;
  for (int d = 0; d < batchRank; ++d)
    elements *= batch[d];
  double flops = 2.0 * double(elements) * double(m) * double(n) * double(k);
  matmul.parts = std::max<int64_t>(
      1, std::min<int64_t>({gemmThreads.load(std::memory_order_relaxed), batch[matmul.split],
                            int64_t(flops / double(kGemmFlopsPerPart))}));
  // Every part has a brgemm kernel before any runs, or none runs.
  dnnl_status_t made = matmul.make();
  if (made == dnnl_unimplemented)
    return BatchedGemm::NotRun;
  if (made != dnnl_success)
    return BatchedGemm::Failed;
  auto body = +[](void *context, int64_t begin, int64_t end) {
    auto *batched = static_cast<BatchedMatmul<Out> *>(context);
    // oneDNN's OpenMP threads stay idle (as SplitGemm::run).
    static thread_local bool oneThread = false;
    if (!oneThread) {
      oneDnn().setThreads(1);
      oneThread = true;
    }
    for (int64_t part = begin; part < end; ++part)
      if (batched->run(part) != dnnl_success)
        batched->failed.store(true, std::memory_order_relaxed);
  };
  int64_t partCost = std::max<int64_t>(kGemmFlopsPerPart, int64_t(flops) / matmul.parts);
  pmlir_rt_parallel_for(reinterpret_cast<void *>(body), &matmul, matmul.parts, partCost);
  return matmul.failed.load() ? BatchedGemm::Failed : BatchedGemm::Ran;
}
} // namespace

BatchedGemm pmlir::rt::oneDnnBf16BatchedGemm(int batchRank, const int64_t *batch, int64_t m,
                                             int64_t n, int64_t k, const uint16_t *a,
                                             const int64_t *aStrides, const uint16_t *b,
                                             const int64_t *bStrides, float *c,
                                             const int64_t *cStrides) {
  return batchedGemm(batchRank, batch, m, n, k, a, aStrides, b, bStrides, c, cStrides);
}

BatchedGemm pmlir::rt::oneDnnBf16BatchedGemm(int batchRank, const int64_t *batch, int64_t m,
                                             int64_t n, int64_t k, const uint16_t *a,
                                             const int64_t *aStrides, const uint16_t *b,
                                             const int64_t *bStrides, uint16_t *c,
                                             const int64_t *cStrides) {
  return batchedGemm(batchRank, batch, m, n, k, a, aStrides, b, bStrides, c, cStrides);
}

KeptBf16Operands pmlir::rt::keptBf16Operands() {
  if (std::getenv(kUnpackedEnv))
    return KeptBf16Operands::None;
  if (bf16Gemm() == Bf16Gemm::Widened)
    return KeptBf16Operands::Widened;
  return matmulUsable() ? KeptBf16Operands::Packed : KeptBf16Operands::None;
}

void pmlir::rt::keepBf16GemmOperand(const uint16_t *data, int64_t elements) {
  if (!data || elements <= 0)
    return;
  KeptBf16Operands keeps = keptBf16Operands();
  if (keeps == KeptBf16Operands::None)
    return;
  forgetBf16GemmOperand(data);
  KeptOperands::Operand operand{elements, {}, nullptr};
  if (keeps == KeptBf16Operands::Widened) {
    // Without the memory for it, the GEMMs widen what they read per call.
    operand.widened.reset(new (std::nothrow) float[static_cast<size_t>(elements)]);
    if (!operand.widened)
      return;
    pmlir_rt_widen_bf16(data, operand.widened.get(), elements);
  }
  KeptOperands &kept = keptOperands();
  std::lock_guard lock(kept.mutex);
  kept.operands[data] = std::move(operand);
}

const float *pmlir::rt::widenedBf16GemmOperand(const uint16_t *first, int64_t span) {
  if (!first || span <= 0)
    return nullptr;
  KeptOperands &kept = keptOperands();
  std::lock_guard lock(kept.mutex);
  const uint16_t *start = nullptr;
  KeptOperands::Operand *operand = kept.holding(first, span, &start);
  if (!operand || !operand->widened)
    return nullptr;
  return operand->widened.get() + (first - start);
}

void pmlir::rt::forgetBf16GemmOperand(const uint16_t *data) {
  KeptOperands &kept = keptOperands();
  std::lock_guard lock(kept.mutex);
  auto operand = kept.operands.find(data);
  if (operand == kept.operands.end())
    return;
  // Packed copies exist only where oneDNN loaded.
  for (const PackedOperand &p : operand->second.packed)
    oneDnn().matmul.memoryDestroy(p.memory);
  kept.operands.erase(operand);
}

int64_t pmlir::rt::keptBf16GemmCopies() {
  KeptOperands &kept = keptOperands();
  std::lock_guard lock(kept.mutex);
  int64_t copies = 0;
  for (const auto &[data, operand] : kept.operands)
    copies += static_cast<int64_t>(operand.packed.size()) + (operand.widened ? 1 : 0);
  return copies;
}

bool pmlir::rt::oneDnnLoads() { return oneDnn().sgemm && oneDnn().gemm; }

void pmlir::rt::prepareGemmKernels() {
  // A 16 x 16 x 16 GEMM of each kind the process runs on oneDNN: what the
  // first one adds (its JIT-compiled kernels, its buffers, about 7 MiB)
  // is the same at any shape and stays.
  constexpr int64_t n = 16;
  if (f32Gemm() == F32Gemm::OneDnn) {
    std::vector<float> a(n * n), c(n * n);
    (void)oneDnnF32Gemm(false, false, n, n, n, a.data(), n, a.data(), n, c.data(), n, false);
  }
  if (bf16Gemm() == Bf16Gemm::OneDnn) {
    std::vector<uint16_t> a(n * n);
    std::vector<float> c(n * n);
    (void)oneDnnBf16Gemm(false, false, n, n, n, a.data(), n, a.data(), n, c.data(), n, false);
  }
}

void pmlir::rt::setGemmThreads(int threads) {
  openblas_set_num_threads(threads);
  gemmThreads.store(std::max(1, threads), std::memory_order_relaxed);
}

bool pmlir::rt::isThisCpusGemmChoice(std::string_view name) {
  // OPENBLAS_CORETYPE is pmlir's choice where PMLIR_OPENBLAS_CHOSE says
  // so, else the user's.
  return name == kChoseEnv || (name == kCoreTypeEnv && std::getenv(kChoseEnv));
}

/// "oneDNN 2.6.3": the library oneDNN() loaded.
static std::string oneDnnName() {
  const dnnl_version_t *version = oneDnn().version();
  return "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->patch);
}

std::string pmlir::rt::f32GemmName() {
  if (f32Gemm() == F32Gemm::OneDnn)
    return oneDnnName();
  return std::string("OpenBLAS ") + openblas_get_corename() + " kernels";
}

std::string pmlir::rt::gemmPath() {
  int threads = gemmThreads.load(std::memory_order_relaxed);
  std::string cpu = simdLevelName(cpuSimdLevel());
  std::string f32;
  if (f32Gemm() == F32Gemm::OneDnn) {
    f32 = oneDnnName() + " on the runtime's threads (pmlir's choice for this CPU's " + cpu + ")";
  } else {
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64":
    // its first two words.
    std::string config = openblas_get_config();
    size_t second = config.find(' ', config.find(' ') + 1);
    const char *forced = std::getenv(kCoreTypeEnv);
    const char *chose = std::getenv(kChoseEnv);
    std::string who;
    if (forced && chose)
      who = "pmlir's choice for this CPU's " + cpu + "; OpenBLAS chose " + chose;
    else if (forced)
      who = std::string(kCoreTypeEnv) + "=" + forced + "; this CPU runs " + cpu;
    else
      who = "OpenBLAS's choice; this CPU runs " + cpu;
    if (cpuSimdLevel() >= SimdLevel::Avx512)
      who += std::getenv(kOpenBlasF32Env)
                 ? "; " + std::string(kOpenBlasF32Env)
                 : std::string("; oneDNN's ") + kOneDnnLibrary + " did not load";
    f32 = config.substr(0, second) + ", " + openblas_get_corename() + " kernels (" + who + ")";
  }
  std::string bf16;
  if (bf16Gemm() == Bf16Gemm::OneDnn) {
    bf16 = oneDnnName() + " on AVX-512 BF16";
    if (std::getenv(kOneDnnBf16Env) && !cpuHasAmx())
      bf16 += std::string(" (") + kOneDnnBf16Env + ")";
    if (matmulUsable())
      bf16 += std::string(" (its matmul primitive for outputs of 2^24 elements or more or a "
                          "dimension of 2^15 or more, and for a program's bf16 weights, ") +
              (std::getenv(kUnpackedEnv) ? std::string("not packed: ") + kUnpackedEnv
                                         : "packed into its layout once") +
              (cpuHasAmx() ? "" : std::string("; ") + kMatmulWithoutAmxEnv) + ")";
  } else if (cpuSimdLevel() < SimdLevel::Avx512Bf16) {
    bf16 = "widened to f32 (this CPU has no AVX-512 BF16)";
  } else if (std::getenv(kWidenedEnv)) {
    bf16 = std::string("widened to f32 (") + kWidenedEnv + ")";
  } else if (!oneDnn().gemm) {
    bf16 = std::string("widened to f32 (oneDNN's ") + kOneDnnLibrary + " did not load)";
  } else {
    const Bf16DotRates &rates = bf16DotRates();
    char measured[160];
    std::snprintf(measured, sizeof(measured),
                  "widened to f32 (this CPU's bf16 dot products run at %.0f GFLOP/s a core "
                  "against %.0f for its f32 FMAs, and it has no AMX)",
                  rates.bf16Gflops, rates.f32Gflops);
    bf16 = measured;
  }
  if (bf16Gemm() == Bf16Gemm::Widened)
    bf16 += std::getenv(kUnpackedEnv) ? std::string(", a program's bf16 weights widened in every "
                                                    "GEMM (") +
                                            kUnpackedEnv + ")"
                                      : ", a program's bf16 weights widened once";
  return f32 + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
         "; bf16 operands: " + bf16;
}
