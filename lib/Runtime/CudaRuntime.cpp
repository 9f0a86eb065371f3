//===- CudaRuntime.cpp - One GPU and one stream per rank ------------------===//
//
// Part of pmlir.
//
// The GPU side of the runtime (pmlir/Runtime/GpuRuntime.h), on the CUDA
// runtime API and cuBLASLt only: the driver library is loaded by cudart when
// a GPU is first used, so a build with CUDA still starts on a machine
// without one and says so.
//
// - cuBLASLt is loaded by pmlir_rt_gpu_init, not linked: its library is
//   over 500 MB, and loading it leaves about 210 MiB resident and takes
//   0.1 s, which every CPU process of a CUDA build (each rank, each tool)
//   would otherwise pay.
// - Streams: the rank's one stream (NCCL's when the collectives run there).
//   mgpuStreamCreate returns it and mgpuStreamDestroy leaves it, so the
//   upstream host lowering's per-function stream costs nothing and every
//   kernel, GEMM and collective is ordered on one stream.
// - Modules: each cubin is loaded once (cudaLibraryLoadData) from the
//   program's global constructor; kernel handles are cached by (module,
//   name), so the lookup before each launch is a hash probe.
// - Memory: CUDA's stream-ordered pool (cudaMallocAsync) on the rank's
//   stream, told to keep what it has allocated: after the first call no
//   tensor reaches cudaMalloc.
// - GEMMs: row-major C = op(A) op(B) as column-major C^T = op(B)^T op(A)^T on
//   cuBLASLt, the layouts, the descriptors and the heuristic's algorithm
//   cached per shape; batches as strided batches (a shared weight: batch
//   stride 0, or folded into M when the activations are contiguous).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/GpuRuntime.h"
#include "pmlir/Runtime/Runtime.h"

#include "Groups.h"
#include "LoadedSymbol.h"
#include "StridedMemRef.h"
#include "Trace.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace {

using pmlir::rt::isContiguous;

[[noreturn]] void fail(const std::string &message) {
  int up = 0, finalized = 0;
  MPI_Initialized(&up);
  MPI_Finalized(&finalized);
  if (up && !finalized)
    pmlir::rt::failWith(message);
  std::fprintf(stderr, "pmlir-run: error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void check(cudaError_t rc, const std::string &what) {
  if (rc != cudaSuccess)
    fail(what + ": " + cudaGetErrorString(rc));
}

/// The cuBLASLt functions pmlir calls, from the library dlopen found.
struct CublasLt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtGetStatusString) statusString = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layoutSet = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preferenceCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preferenceSet = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preferenceDestroy = nullptr;
  /// Why the library is unusable; empty when every function loaded.
  std::string error;
};

/// cuBLASLt of the major version the runtime was compiled against, loaded
/// once, on the first call (pmlir_rt_gpu_init's).
const CublasLt &cublasLt() {
  static const CublasLt loaded = [] {
    CublasLt api;
    std::string library = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::string why = dlerror();
      handle = dlopen((PMLIR_CUBLASLT_DIR "/" + library).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        api.error = "cuBLASLt, which runs the GPU's GEMMs, did not load: " + why;
        return api;
      }
    }
    std::string missing;
    auto bind = [&](auto &function, const char *name) {
      if (!pmlir::rt::loadSymbol(handle, function, name))
        missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    bind(api.create, "cublasLtCreate");
    bind(api.statusString, "cublasLtGetStatusString");
    bind(api.matmul, "cublasLtMatmul");
    bind(api.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    bind(api.descCreate, "cublasLtMatmulDescCreate");
    bind(api.descSet, "cublasLtMatmulDescSetAttribute");
    bind(api.layoutCreate, "cublasLtMatrixLayoutCreate");
    bind(api.layoutSet, "cublasLtMatrixLayoutSetAttribute");
    bind(api.preferenceCreate, "cublasLtMatmulPreferenceCreate");
    bind(api.preferenceSet, "cublasLtMatmulPreferenceSetAttribute");
    bind(api.preferenceDestroy, "cublasLtMatmulPreferenceDestroy");
    if (!missing.empty())
      api.error = "cuBLASLt (" + library + ") lacks " + missing;
    return api;
  }();
  return loaded;
}

void check(cublasStatus_t rc, const std::string &what) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    fail(what + ": " + cublasLt().statusString(rc));
}

std::string bytesText(size_t bytes) {
  char text[32];
  if (bytes >= (size_t(1) << 30))
    std::snprintf(text, sizeof(text), "%.2f GiB", bytes / double(size_t(1) << 30));
  else
    std::snprintf(text, sizeof(text), "%.2f MiB", bytes / double(size_t(1) << 20));
  return text;
}

/// The architecture a cubin is for, from its ELF header ("sm_90"), or "".
std::string cubinChip(const void *data, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  if (size < 0x34 ||
      std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      bytes[4] != 2)
    return "";
  uint32_t flags;
  std::memcpy(&flags, bytes + 0x30, sizeof(flags));
  // CUDA 12+ cubins keep the SM in bits 8-15, older ones in bits 0-7.
  unsigned sm = (flags >> 8) & 0xff;
  if (sm < 20)
    sm = flags & 0xff;
  return "sm_" + std::to_string(sm);
}

struct GemmKey {
  bool transA, transB;
  int64_t m, n, k, lda, ldb, ldc, batch, strideA, strideB, strideC;
  cublasComputeType_t compute;
  cudaDataType_t inType, outType;
  bool operator<(const GemmKey &o) const {
    return std::tie(transA, transB, m, n, k, lda, ldb, ldc, batch, strideA, strideB, strideC,
                    compute, inType, outType) <
           std::tie(o.transA, o.transB, o.m, o.n, o.k, o.lda, o.ldb, o.ldc, o.batch, o.strideA,
                    o.strideB, o.strideC, o.compute, o.inType, o.outType);
  }
};

struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
};

struct Gpu {
  int device = -1;
  cudaStream_t stream = nullptr;
  bool ownStream = false;
  std::string chip;
  cudaMemPool_t pool = nullptr;
  size_t inUse = 0, peak = 0;
  std::unordered_map<void *, size_t> sizes;
  /// pmlir_rt_gpu_shutdown ran: every buffer is freed, the context may be
  /// gone.
  bool shutDown = false;
  cublasLtHandle_t blas = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = PMLIR_RT_GPU_GEMM_WORKSPACE_BYTES;
  std::map<GemmKey, GemmPlan> plans;
  std::map<std::pair<void *, std::string>, cudaKernel_t> kernels;
  std::unordered_map<void *, std::string> kernelNames;
  /// Cubins loaded so far and each one's place among them, to tell apart
  /// kernels of one name.
  int modules = 0;
  std::unordered_map<void *, int> libraryIndex;
  std::mutex lock;
  /// --trace: the work enqueued since the stream last finished, between
  /// two events each, and events to reuse.
  struct PendingSpan {
    std::string name, category, args;
    cudaEvent_t start, end;
  };
  std::vector<PendingSpan> pendingSpans;
  std::vector<cudaEvent_t> freeEvents;
};

Gpu *gpu = nullptr;

Gpu &ready(const char *what) {
  if (!gpu)
    fail(std::string(what) + ": the GPU runtime is not initialized (pmlir_rt_gpu_init)");
  if (gpu->shutDown)
    fail(std::string(what) + ": the GPU runtime has shut down at the end of the run");
  return *gpu;
}

//===----------------------------------------------------------------------===//
// --trace: the stream's work timed by events
//===----------------------------------------------------------------------===//

cudaEvent_t takeEvent(Gpu &g) {
  if (!g.freeEvents.empty()) {
    cudaEvent_t e = g.freeEvents.back();
    g.freeEvents.pop_back();
    return e;
  }
  cudaEvent_t e;
  check(cudaEventCreate(&e), "an event for --trace");
  return e;
}

/// The work enqueued on the stream while it lives, between two events,
/// when --trace records; nothing otherwise, not even the span's name and
/// arguments (`describe`: JSON members), which are made only then.
class GpuSpan {
public:
  template <typename Describe> GpuSpan(Gpu &g, const char *category, Describe describe) : g(g) {
    if (!pmlir::rt::tracing())
      return;
    auto [name, args] = describe();
    span = {std::move(name), category, std::move(args), takeEvent(g), takeEvent(g)};
    check(cudaEventRecord(span->start, g.stream), "an event for --trace");
  }
  ~GpuSpan() {
    if (!span)
      return;
    check(cudaEventRecord(span->end, g.stream), "an event for --trace");
    g.pendingSpans.push_back(std::move(*span));
  }
  GpuSpan(const GpuSpan &) = delete;
  GpuSpan &operator=(const GpuSpan &) = delete;

private:
  Gpu &g;
  std::optional<Gpu::PendingSpan> span;
};

/// Waits for the stream; with spans pending, places them on the trace's
/// clock: the device times each against an event recorded last, which
/// completes as the wait returns.
void synchronize(Gpu &g, const std::string &what) {
  if (g.pendingSpans.empty()) {
    check(cudaStreamSynchronize(g.stream), what);
    return;
  }
  cudaEvent_t last = takeEvent(g);
  check(cudaEventRecord(last, g.stream), "an event for --trace");
  check(cudaStreamSynchronize(g.stream), what);
  int64_t lastNs = pmlir::rt::traceClockNs();
  auto at = [&](cudaEvent_t e) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e, last), "timing the GPU's work for --trace");
    return lastNs - static_cast<int64_t>(double(ms) * 1e6);
  };
  for (Gpu::PendingSpan &span : g.pendingSpans) {
    pmlir::rt::traceGpuSpan(span.name, span.category, at(span.start), at(span.end), span.args);
    g.freeEvents.push_back(span.start);
    g.freeEvents.push_back(span.end);
  }
  g.pendingSpans.clear();
  g.freeEvents.push_back(last);
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

/// A 2-D operand as cuBLASLt sees it: a column-major matrix of `rows` x
/// `cols` with leading dimension `ld`, used as is or transposed.
struct Operand {
  int64_t rows, cols, ld;
  bool transposed;
};

/// The row-major stored matrix [r, c] with strides (sr, sc), to be used
/// transposed or not, as a column-major operand: row-major [r, c] with row
/// stride sr is column-major [c, r]; a column-major view (sr == 1) is the
/// row-major [c, r] transposed.
bool columnMajor(int64_t r, int64_t c, int64_t sr, int64_t sc, bool transposed, Operand &out) {
  if (sc == 1 || c == 1) {
    out = {c, r, std::max(sr, std::max<int64_t>(c, 1)), transposed};
    return true;
  }
  if (sr == 1 || r == 1) {
    out = {r, c, std::max(sc, std::max<int64_t>(r, 1)), !transposed};
    return true;
  }
  return false;
}

/// The CUDA type of a kernel's element: f32, or bf16 (passed as its bits).
template <typename T> constexpr cudaDataType_t cudaTypeOf() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

/// C = A B (+ C), A and B of `inType`, C of `outType`, the products summed
/// in `compute`; strides and leading dimensions in elements.
void gemm(const char *name, cublasComputeType_t compute, cudaDataType_t inType,
          cudaDataType_t outType, const void *a, Operand opA, int64_t strideA, const void *b,
          Operand opB, int64_t strideB, void *c, int64_t m, int64_t n, int64_t ldc, int64_t strideC,
          int64_t batch, bool accumulate) {
  Gpu &g = ready(name);
  // Row-major C[m, n] = A B is column-major C^T[n, m] = B^T A^T: the first
  // operand is B.
  int64_t k = opA.transposed ? opA.rows : opA.cols;
  if (k == 0) {
    // An empty contraction (the weight gradient of an expert no row was
    // routed to): C is zero, or kept when accumulating, without cuBLASLt.
    if (!accumulate) {
      size_t width = outType == CUDA_R_32F ? 4 : 2;
      for (int64_t i = 0; i < batch; ++i)
        check(cudaMemset2DAsync(static_cast<char *>(c) + i * strideC * width, ldc * width, 0,
                                n * width, m, g.stream),
              std::string(name) + ": zeroing an empty contraction's result");
    }
    return;
  }
  const CublasLt &lt = cublasLt();
  GemmKey key{opB.transposed, opA.transposed, n,       m,       k,       opB.ld, opA.ld, ldc,
              batch,          strideB,        strideA, strideC, compute, inType, outType};
  std::lock_guard<std::mutex> guard(g.lock);
  auto it = g.plans.find(key);
  if (it == g.plans.end()) {
    GemmPlan plan;
    std::string what = std::string(name) + " (" + std::to_string(m) + "x" + std::to_string(n) +
                       "x" + std::to_string(k) + ", batch " + std::to_string(batch) + ")";
    check(lt.descCreate(&plan.desc, compute, CUDA_R_32F), what + ": descriptor");
    cublasOperation_t ta = opB.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = opA.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(lt.descSet(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), what);
    check(lt.descSet(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), what);
    auto layout = [&](cublasLtMatrixLayout_t &l, cudaDataType_t type, int64_t rows, int64_t cols,
                      int64_t ld, int64_t stride) {
      check(lt.layoutCreate(&l, type, rows, cols, ld), what + ": layout");
      if (batch > 1) {
        int32_t count = static_cast<int32_t>(batch);
        check(lt.layoutSet(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), what);
        check(lt.layoutSet(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
              what);
      }
    };
    layout(plan.a, inType, opB.rows, opB.cols, opB.ld, strideB);
    layout(plan.b, inType, opA.rows, opA.cols, opA.ld, strideA);
    layout(plan.c, outType, n, m, ldc, strideC);
    cublasLtMatmulPreference_t preference;
    check(lt.preferenceCreate(&preference), what);
    check(lt.preferenceSet(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g.workspaceBytes,
                           sizeof(g.workspaceBytes)),
          what);
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    check(lt.heuristic(g.blas, plan.desc, plan.a, plan.b, plan.c, plan.c, preference, 1, &result,
                       &found),
          what + ": no algorithm");
    lt.preferenceDestroy(preference);
    if (found == 0)
      fail(what + ": cuBLASLt has no algorithm for it");
    plan.algo = result.algo;
    it = g.plans.emplace(key, plan).first;
  }
  const GemmPlan &plan = it->second;
  float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  GpuSpan traced(g, "gemm", [&] {
    return std::pair(std::string(name),
                     "\"m\":" + std::to_string(m) + ",\"n\":" + std::to_string(n) +
                         ",\"k\":" + std::to_string(k) + ",\"batch\":" + std::to_string(batch));
  });
  check(lt.matmul(g.blas, plan.desc, &alpha, b, plan.a, a, plan.b, &beta, c, plan.c, c, plan.c,
                  &plan.algo, g.workspace, g.workspaceBytes, g.stream),
        name);
}

/// The batch dimensions 0..Rank-3 of `m` as one stride, where they nest.
template <typename T, int Rank>
bool batchStride(const StridedMemRefType<T, Rank> *m, int64_t &stride) {
  stride = Rank > 2 ? m->strides[Rank - 3] : 0;
  for (int i = 0; i + 3 < Rank; ++i)
    if (m->sizes[i + 1] != 1 && m->strides[i] != m->strides[i + 1] * m->sizes[i + 1])
      return false;
  return true;
}

/// out = lhs @ rhs (+ out) for a kernel's memref descriptors: operands of
/// `In` and a result of `Out`, float or bf16 bits (uint16_t).
template <int L, int R, bool TA, bool TB, typename In, typename Out>
void matmul(const char *name, cublasComputeType_t compute, StridedMemRefType<In, L> *lhs,
            StridedMemRefType<In, R> *rhs, StridedMemRefType<Out, L> *out, bool accumulate) {
  constexpr cudaDataType_t inType = cudaTypeOf<In>(), outType = cudaTypeOf<Out>();
  static_assert(L >= 2 && (R == 2 || R == L), "unsupported ranks");
  int64_t m = out->sizes[L - 2], n = out->sizes[L - 1];
  int64_t batch = 1;
  for (int i = 0; i < L - 2; ++i)
    batch *= out->sizes[i];
  if (batch == 0 || m == 0 || n == 0)
    return;
  if (out->strides[L - 1] != 1 && n != 1)
    fail(std::string(name) + ": the result is not contiguous along its rows");
  Operand a, b;
  const In *aData = lhs->data + lhs->offset, *bData = rhs->data + rhs->offset;
  Out *cData = out->data + out->offset;
  // A weight shared by a contiguous batch: one GEMM of batch * m rows.
  if (R == 2 && !TA && isContiguous(lhs) && isContiguous(out)) {
    int64_t k = lhs->sizes[L - 1];
    if (!columnMajor(batch * m, k, k, 1, false, a) ||
        !columnMajor(rhs->sizes[0], rhs->sizes[1], rhs->strides[0], rhs->strides[1], TB, b))
      fail(std::string(name) + ": an operand has no unit stride");
    gemm(name, compute, inType, outType, aData, a, 0, bData, b, 0, cData, batch * m, n, n, 0, 1,
         accumulate);
    return;
  }
  if (!columnMajor(lhs->sizes[L - 2], lhs->sizes[L - 1], lhs->strides[L - 2], lhs->strides[L - 1],
                   TA, a) ||
      !columnMajor(rhs->sizes[R - 2], rhs->sizes[R - 1], rhs->strides[R - 2], rhs->strides[R - 1],
                   TB, b))
    fail(std::string(name) + ": an operand has no unit stride in its last two dimensions");
  int64_t strideA = 0, strideB = 0, strideC = 0;
  bool nested = batchStride(lhs, strideA) && batchStride(out, strideC);
  if constexpr (R == L)
    nested = nested && batchStride(rhs, strideB);
  if (nested) {
    gemm(name, compute, inType, outType, aData, a, strideA, bData, b, strideB, cData, m, n,
         out->strides[L - 2], strideC, batch, accumulate);
    return;
  }
  // Batch dimensions that do not nest: one GEMM per batch element.
  for (int64_t i = 0; i < batch; ++i) {
    int64_t offA = 0, offB = 0, offC = 0, rest = i;
    for (int d = L - 3; d >= 0; --d) {
      int64_t index = rest % out->sizes[d];
      rest /= out->sizes[d];
      offA += index * lhs->strides[d];
      offC += index * out->strides[d];
      if constexpr (R == L)
        offB += index * rhs->strides[d];
    }
    gemm(name, compute, inType, outType, aData + offA, a, 0, bData + offB, b, 0, cData + offC, m, n,
         out->strides[L - 2], 0, 1, accumulate);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// The runtime's GPU entry points
//===----------------------------------------------------------------------===//

extern "C" int pmlir_rt_gpu_init(int device, char *error, size_t errorSize) {
  auto failed = [&](const std::string &message) {
    std::snprintf(error, errorSize, "%s", message.c_str());
    return 1;
  };
  if (gpu)
    return 0;
  // cuBLASLt first: a machine without a GPU still tells whether the
  // libraries a GPU run needs are all there.
  const CublasLt &lt = cublasLt();
  if (!lt.error.empty())
    return failed(lt.error);
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc == cudaErrorInsufficientDriver || rc == cudaErrorNoDevice)
    return failed(std::string("no GPU: this machine has no CUDA driver or device (") +
                  cudaGetErrorString(rc) + ")");
  if (rc != cudaSuccess)
    return failed(std::string("no GPU: ") + cudaGetErrorString(rc));
  if (devices == 0)
    return failed("no GPU: the CUDA driver sees no device");
  auto g = std::make_unique<Gpu>();
  if (pmlir_rt_device() >= 0) {
    g->device = pmlir_rt_device();
    g->stream = static_cast<cudaStream_t>(pmlir_rt_stream());
  } else {
    g->device = device < 0 ? 0 : device;
    if (g->device >= devices)
      return failed("GPU " + std::to_string(g->device) + " asked for, " + std::to_string(devices) +
                    " visible");
  }
  if ((rc = cudaSetDevice(g->device)) != cudaSuccess)
    return failed("cudaSetDevice(" + std::to_string(g->device) + "): " + cudaGetErrorString(rc));
  if (!g->stream) {
    if ((rc = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess)
      return failed(std::string("cudaStreamCreate: ") + cudaGetErrorString(rc));
    g->ownStream = true;
  }
  cudaDeviceProp properties;
  if ((rc = cudaGetDeviceProperties(&properties, g->device)) != cudaSuccess)
    return failed(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(rc));
  g->chip = "sm_" + std::to_string(properties.major * 10 + properties.minor);
  if ((rc = cudaDeviceGetDefaultMemPool(&g->pool, g->device)) != cudaSuccess)
    return failed(std::string("cudaDeviceGetDefaultMemPool: ") + cudaGetErrorString(rc));
  // Keep every byte the pool has allocated: the next call reuses it.
  uint64_t keep = UINT64_MAX;
  cudaMemPoolSetAttribute(g->pool, cudaMemPoolAttrReleaseThreshold, &keep);
  if (lt.create(&g->blas) != CUBLAS_STATUS_SUCCESS)
    return failed("cublasLtCreate failed");
  if ((rc = cudaMalloc(&g->workspace, g->workspaceBytes)) != cudaSuccess)
    return failed(std::string("cuBLASLt workspace: ") + cudaGetErrorString(rc));
  gpu = g.release();
  return 0;
}

extern "C" const char *pmlir_rt_gpu_chip(void) { return gpu ? gpu->chip.c_str() : ""; }

extern "C" void *pmlir_rt_gpu_stream(void) { return gpu ? gpu->stream : nullptr; }

extern "C" void *pmlir_rt_gpu_alloc(size_t bytes, const char *what) {
  Gpu &g = ready("device memory");
  void *p = nullptr;
  cudaError_t rc = cudaMallocAsync(&p, std::max<size_t>(bytes, 1), g.pool, g.stream);
  if (rc != cudaSuccess) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    fail("out of device memory: " + std::string(what) + " needs " + bytesText(bytes) + ", " +
         bytesText(g.inUse) + " of the device's " + bytesText(total) +
         " are in use by this program (" + cudaGetErrorString(rc) + ")");
  }
  std::lock_guard<std::mutex> guard(g.lock);
  g.sizes[p] = bytes;
  g.inUse += bytes;
  g.peak = std::max(g.peak, g.inUse);
  return p;
}

extern "C" void pmlir_rt_gpu_free(void *p) {
  // After the shutdown the buffer is already freed (and the context may be
  // destroyed): a program's destructor frees its buffers after the run.
  if (!p || !gpu || gpu->shutDown)
    return;
  Gpu &g = *gpu;
  {
    std::lock_guard<std::mutex> guard(g.lock);
    auto it = g.sizes.find(p);
    if (it != g.sizes.end()) {
      g.inUse -= it->second;
      g.sizes.erase(it);
    }
  }
  check(cudaFreeAsync(p, g.stream), "cudaFreeAsync");
}

extern "C" void pmlir_rt_gpu_copy_to_device(void *device, const void *host, size_t bytes) {
  Gpu &g = ready("copy to the device");
  GpuSpan traced(g, "copy", [&] {
    return std::pair(std::string("copy to the device"), "\"bytes\":" + std::to_string(bytes));
  });
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, g.stream),
        "copy of " + bytesText(bytes) + " to the device");
}

extern "C" void pmlir_rt_gpu_copy_to_host(void *host, const void *device, size_t bytes) {
  Gpu &g = ready("copy to the host");
  {
    GpuSpan traced(g, "copy", [&] {
      return std::pair(std::string("copy to the host"), "\"bytes\":" + std::to_string(bytes));
    });
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, g.stream),
          "copy of " + bytesText(bytes) + " to the host");
  }
  synchronize(g, "copy of " + bytesText(bytes) + " to the host");
}

extern "C" void pmlir_rt_gpu_synchronize(void) {
  if (gpu && !gpu->shutDown)
    synchronize(*gpu, "the GPU's work");
}

extern "C" void pmlir_rt_gpu_shutdown(void) {
  if (!gpu || gpu->shutDown)
    return;
  Gpu &g = *gpu;
  synchronize(g, "the GPU's work at the end of the run");
  {
    std::lock_guard<std::mutex> guard(g.lock);
    for (auto [p, bytes] : g.sizes)
      check(cudaFreeAsync(p, g.stream), "cudaFreeAsync at the end of the run");
    g.sizes.clear();
    g.inUse = 0;
  }
  check(cudaStreamSynchronize(g.stream), "the frees at the end of the run");
  g.shutDown = true;
}

extern "C" size_t pmlir_rt_gpu_bytes_in_use(void) { return gpu ? gpu->inUse : 0; }
extern "C" size_t pmlir_rt_gpu_peak_bytes(void) { return gpu ? gpu->peak : 0; }

//===----------------------------------------------------------------------===//
// Upstream MLIR's GPU runtime ABI, as gpu-to-llvm calls it
//===----------------------------------------------------------------------===//

extern "C" void *mgpuModuleLoad(void *data, size_t size) {
  Gpu &g = ready("loading the program's kernels");
  cudaLibrary_t library = nullptr;
  cudaError_t rc = cudaLibraryLoadData(&library, data, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (rc == cudaErrorNoKernelImageForDevice || rc == cudaErrorInvalidKernelImage ||
      rc == cudaErrorUnsupportedPtxVersion) {
    std::string chip = cubinChip(data, size);
    fail("the program's kernels are compiled for " + (chip.empty() ? "another GPU" : chip) +
         ", this GPU is " + g.chip + " (compile for it: --gpu-chip " + g.chip +
         "): " + cudaGetErrorString(rc));
  }
  check(rc, "loading the program's kernels (cudaLibraryLoadData)");
  std::lock_guard<std::mutex> guard(g.lock);
  g.libraryIndex[library] = g.modules++;
  return library;
}

extern "C" void *mgpuModuleLoadJIT(void *data, int optLevel) {
  (void)optLevel;
  return mgpuModuleLoad(data, 0);
}

extern "C" void mgpuModuleUnload(void *library) {
  // At exit the CUDA runtime may be gone before the program's destructors.
  cudaLibraryUnload(static_cast<cudaLibrary_t>(library));
}

extern "C" void *mgpuModuleGetFunction(void *library, const char *name) {
  Gpu &g = ready(name);
  std::lock_guard<std::mutex> guard(g.lock);
  auto key = std::make_pair(library, std::string(name));
  auto it = g.kernels.find(key);
  if (it != g.kernels.end())
    return it->second;
  cudaKernel_t kernel = nullptr;
  check(cudaLibraryGetKernel(&kernel, static_cast<cudaLibrary_t>(library), name),
        std::string("kernel ") + name);
  g.kernels.emplace(key, kernel);
  // Every cubin's kernel is named for the function it came from: the
  // cubin's place in the program tells them apart.
  g.kernelNames[kernel] = std::string(name) + " #" + std::to_string(g.libraryIndex[library]);
  return kernel;
}

extern "C" void mgpuLaunchKernel(void *kernel, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                                 intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                                 int32_t sharedBytes, void *stream, void **params, void **extra,
                                 size_t paramsCount) {
  (void)extra;
  (void)paramsCount;
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;
  Gpu &g = ready("a kernel launch");
  GpuSpan traced(g, "kernel", [&] {
    return std::pair(g.kernelNames[kernel],
                     "\"grid\":[" + std::to_string(gridX) + "," + std::to_string(gridY) + "," +
                         std::to_string(gridZ) + "],\"block\":[" + std::to_string(blockX) + "," +
                         std::to_string(blockY) + "," + std::to_string(blockZ) + "]");
  });
  cudaError_t rc = cudaLaunchKernel(kernel, dim3(gridX, gridY, gridZ), dim3(blockX, blockY, blockZ),
                                    params, sharedBytes, static_cast<cudaStream_t>(stream));
  if (rc != cudaSuccess) {
    std::string name = "a kernel";
    if (g.kernelNames.count(kernel))
      name = "kernel " + g.kernelNames[kernel];
    fail("launching " + name + " (" + std::to_string(gridX) + "x" + std::to_string(gridY) + "x" +
         std::to_string(gridZ) + " blocks of " + std::to_string(blockX) + "x" +
         std::to_string(blockY) + "x" + std::to_string(blockZ) + "): " + cudaGetErrorString(rc));
  }
}

extern "C" void *mgpuStreamCreate(void) { return ready("a stream").stream; }

extern "C" void mgpuStreamDestroy(void *stream) { (void)stream; }

extern "C" void mgpuStreamSynchronize(void *stream) {
  if (gpu && stream == gpu->stream)
    synchronize(*gpu, "the program's kernels");
  else
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "the program's kernels");
}

extern "C" void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  (void)stream;
  if (hostShared)
    fail("host-shared device memory is not supported");
  return pmlir_rt_gpu_alloc(bytes, "a buffer of the program");
}

extern "C" void mgpuMemFree(void *pointer, void *stream) {
  (void)stream;
  pmlir_rt_gpu_free(pointer);
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)),
        "a copy of the program (" + bytesText(bytes) + ")");
}

//===----------------------------------------------------------------------===//
// The GEMM kernels and the symbol table
//===----------------------------------------------------------------------===//

// The GEMM family of RuntimeAbi.def (PMLIR_RT_GPU_GEMM's types and compute
// modes times its ranks and the four transposes): f32 and tf32 on f32, bf16
// (a bf16 result) and bf16f32 (an f32 result) on bf16 operands (their bits,
// uint16_t), every sum in fp32.
#define PMLIR_GPU_MATMUL(P, IN, OUT, COMPUTE, L, R, TA, TB)                                        \
  extern "C" void _mlir_ciface_pmlir_gpu_matmul_##P##_r##L##R##_t##TA##TB(                         \
      StridedMemRefType<IN, L> *lhs, StridedMemRefType<IN, R> *rhs,                                \
      StridedMemRefType<OUT, L> *out, bool accumulate) {                                           \
    matmul<L, R, TA, TB>("pmlir_gpu_matmul_" #P "_r" #L#R "_t" #TA #TB, COMPUTE, lhs, rhs, out,    \
                         accumulate);                                                              \
  }
#define PMLIR_GPU_MATMULS(P, IN, OUT, COMPUTE, L, R)                                               \
  PMLIR_GPU_MATMUL(P, IN, OUT, COMPUTE, L, R, 0, 0)                                                \
  PMLIR_GPU_MATMUL(P, IN, OUT, COMPUTE, L, R, 0, 1)                                                \
  PMLIR_GPU_MATMUL(P, IN, OUT, COMPUTE, L, R, 1, 0)                                                \
  PMLIR_GPU_MATMUL(P, IN, OUT, COMPUTE, L, R, 1, 1)
#define PMLIR_RT_GPU_GEMM(P, IN, OUT, COMPUTE)                                                     \
  PMLIR_RT_FOR_GEMM_RANKS(PMLIR_GPU_MATMULS, P, IN, OUT, COMPUTE)
#include "pmlir/Runtime/RuntimeAbi.def"

#define PMLIR_GPU_SYMBOL(P, L, R, TA, TB)                                                          \
  {"_mlir_ciface_pmlir_gpu_matmul_" #P "_r" #L#R "_t" #TA #TB,                                     \
   reinterpret_cast<void *>(&_mlir_ciface_pmlir_gpu_matmul_##P##_r##L##R##_t##TA##TB)},
#define PMLIR_GPU_SYMBOLS(P, IN, OUT, COMPUTE, L, R)                                               \
  PMLIR_GPU_SYMBOL(P, L, R, 0, 0)                                                                  \
  PMLIR_GPU_SYMBOL(P, L, R, 0, 1) PMLIR_GPU_SYMBOL(P, L, R, 1, 0) PMLIR_GPU_SYMBOL(P, L, R, 1, 1)
#define PMLIR_MGPU_SYMBOL(NAME) {#NAME, reinterpret_cast<void *>(&NAME)},

extern "C" const pmlir_rt_symbol *pmlir_rt_gpu_symbols(void) {
  static const pmlir_rt_symbol symbols[] = {
#define PMLIR_RT_GPU_GEMM(P, IN, OUT, COMPUTE)                                                     \
  PMLIR_RT_FOR_GEMM_RANKS(PMLIR_GPU_SYMBOLS, P, IN, OUT, COMPUTE)
#include "pmlir/Runtime/RuntimeAbi.def"
      PMLIR_MGPU_SYMBOL(mgpuModuleLoad) PMLIR_MGPU_SYMBOL(mgpuModuleLoadJIT)
          PMLIR_MGPU_SYMBOL(mgpuModuleUnload) PMLIR_MGPU_SYMBOL(mgpuModuleGetFunction)
              PMLIR_MGPU_SYMBOL(mgpuLaunchKernel) PMLIR_MGPU_SYMBOL(mgpuStreamCreate)
                  PMLIR_MGPU_SYMBOL(mgpuStreamDestroy) PMLIR_MGPU_SYMBOL(mgpuStreamSynchronize)
                      PMLIR_MGPU_SYMBOL(mgpuMemAlloc) PMLIR_MGPU_SYMBOL(mgpuMemFree)
                          PMLIR_MGPU_SYMBOL(mgpuMemcpy){nullptr, nullptr}};
  return symbols;
}
