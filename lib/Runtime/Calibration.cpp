//===- Calibration.cpp - What this host's CPU kernels take ----------------===//
//
// Part of pmlir.
//
// A GEMM kernel is called through the table the JIT binds it from
// (pmlir_rt_cpu_kernel_symbols), on memref descriptors of contiguous
// operands built here: the same code, threads and shapes as the run.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Calibration.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Runtime/MemRefDescriptor.h"
#include "pmlir/Support/ElementCount.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// Calls a kernel of RuntimeAbi.def's CPU GEMM family through its own
/// function type (In operands, an Out result, ranks L and R) on
/// descriptors: the JIT's call, made from C++.
using Invoke = void (*)(void *kernel, void *lhs, void *rhs, void *out);
template <typename In, typename Out, int L, int R>
void invoke(void *kernel, void *lhs, void *rhs, void *out) {
  using Kernel = void (*)(StridedMemRefType<In, L> *, StridedMemRefType<In, R> *,
                          StridedMemRefType<Out, L> *, bool);
  reinterpret_cast<Kernel>(kernel)(static_cast<StridedMemRefType<In, L> *>(lhs),
                                   static_cast<StridedMemRefType<In, R> *>(rhs),
                                   static_cast<StridedMemRefType<Out, L> *>(out), false);
}
template <typename In, typename Out> std::optional<Invoke> invokeOfRanks(size_t l, size_t r) {
  if (l == 2 && r == 2)
    return invoke<In, Out, 2, 2>;
  if (l == 3 && r == 2)
    return invoke<In, Out, 3, 2>;
  if (l == 3 && r == 3)
    return invoke<In, Out, 3, 3>;
  if (l == 4 && r == 2)
    return invoke<In, Out, 4, 2>;
  if (l == 4 && r == 4)
    return invoke<In, Out, 4, 4>;
  return std::nullopt;
}

/// How to call `kernel` on operands of ranks `l` and `r`, and the bytes of
/// one element of its operands and of its result: its types as
/// RuntimeAbi.def's CPU GEMMs spell them.
struct KernelCall {
  Invoke invoke;
  int inBytes, outBytes;
};
std::optional<KernelCall> kernelCall(const std::string &kernel, size_t l, size_t r) {
  const std::string prefix = "pmlir_matmul_";
  if (kernel.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  std::string types =
      kernel.substr(prefix.size(), kernel.find("_r", prefix.size()) - prefix.size());
  std::optional<Invoke> call;
  if (types == "f32" && (call = invokeOfRanks<float, float>(l, r)))
    return KernelCall{*call, 4, 4};
  if (types == "bf16" && (call = invokeOfRanks<uint16_t, uint16_t>(l, r)))
    return KernelCall{*call, 2, 2};
  if (types == "bf16f32" && (call = invokeOfRanks<uint16_t, float>(l, r)))
    return KernelCall{*call, 2, 4};
  return std::nullopt;
}

/// The most bytes one timed call's operands take: a quarter of the host's
/// memory. A larger call is not timed (a model's 2^40-entry vocabulary
/// would end the process on its allocation).
int64_t maxTimedBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageBytes > 0 ? static_cast<int64_t>(pages) * pageBytes / 4
                                    : int64_t(1) << 30;
}

/// A GEMM kernel call ready to run: the kernel, its operands and the
/// descriptors over them.
class PreparedGemm {
public:
  /// nullopt where the runtime has no such kernel or the ranks do not fit.
  static std::unique_ptr<PreparedGemm> create(const pmlir::rt::GemmCall &call) {
    std::optional<KernelCall> how = call.lhs.size() == call.out.size()
                                        ? kernelCall(call.kernel, call.out.size(), call.rhs.size())
                                        : std::nullopt;
    if (!how)
      return nullptr;
    // An operand past kMaxTensorElements is past the host's memory too.
    std::optional<int64_t> lhsElements = pmlir::checkedProduct(call.lhs),
                           rhsElements = pmlir::checkedProduct(call.rhs),
                           outElements = pmlir::checkedProduct(call.out);
    if (!lhsElements || !rhsElements || !outElements ||
        (*lhsElements + *rhsElements) * how->inBytes + *outElements * how->outBytes >
            maxTimedBytes())
      return nullptr;
    std::string symbol = "_mlir_ciface_" + call.kernel;
    void *kernel = nullptr;
    for (const pmlir_rt_symbol *s = pmlir_rt_cpu_kernel_symbols(); s->name; ++s)
      if (symbol == s->name)
        kernel = s->address;
    if (!kernel)
      return nullptr;
    auto g = std::unique_ptr<PreparedGemm>(new PreparedGemm());
    g->kernel = kernel;
    g->invoke = how->invoke;
    g->a = filled(*lhsElements, how->inBytes);
    g->b = filled(*rhsElements, how->inBytes);
    g->c.assign(static_cast<size_t>(*outElements * how->outBytes), 0);
    g->lhs.emplace(g->a.data(), call.lhs);
    g->rhs.emplace(g->b.data(), call.rhs);
    g->out.emplace(g->c.data(), call.out);
    return g;
  }
  size_t bytes() const { return a.size() + b.size() + c.size(); }
  double time() {
    Clock::time_point t0 = Clock::now();
    invoke(kernel, lhs->get(), rhs->get(), out->get());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

private:
  PreparedGemm() = default;
  void *kernel = nullptr;
  Invoke invoke = nullptr;
  std::vector<char> a, b, c;
  std::optional<pmlir::rt::MemRefDescriptor> lhs, rhs, out;

  /// Operands of small values (0.5 in f32 and in bf16): no denormals, no
  /// overflow.
  static std::vector<char> filled(int64_t count, int width) {
    std::vector<char> v(static_cast<size_t>(count * width));
    for (int64_t i = 0; i < count; ++i) {
      if (width == 4) {
        float half = 0.5f;
        std::memcpy(v.data() + i * 4, &half, 4);
      } else {
        uint16_t half = 0x3F00;
        std::memcpy(v.data() + i * 2, &half, 2);
      }
    }
    return v;
  }
};

/// Operands held at once while passes go over every call: beyond it, each
/// call is timed in its own passes.
constexpr size_t kInterleavedBytes = size_t(512) << 20;

} // namespace

double pmlir::rt::quietSeconds(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.size() >= 3 ? samples[1] : samples.front();
}

std::vector<std::optional<double>> pmlir::rt::timeGemmKernels(const std::vector<GemmCall> &calls,
                                                              int passes) {
  std::vector<std::optional<double>> seconds(calls.size());
  std::vector<std::unique_ptr<PreparedGemm>> prepared;
  std::vector<size_t> which;
  size_t held = 0;
  // Times the calls prepared so far in interleaved passes, then lets them go.
  auto timeHeld = [&]() {
    std::vector<std::vector<double>> samples(prepared.size());
    for (size_t i = 0; i < prepared.size(); ++i)
      prepared[i]->time(); // warm-up: threads started, pages touched
    for (int pass = 0; pass < std::max(1, passes); ++pass)
      for (size_t i = 0; i < prepared.size(); ++i)
        samples[i].push_back(prepared[i]->time());
    for (size_t i = 0; i < prepared.size(); ++i)
      seconds[which[i]] = quietSeconds(std::move(samples[i]));
    prepared.clear();
    which.clear();
    held = 0;
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    std::unique_ptr<PreparedGemm> g = PreparedGemm::create(calls[i]);
    if (!g)
      continue;
    if (held + g->bytes() > kInterleavedBytes && !prepared.empty())
      timeHeld();
    held += g->bytes();
    prepared.push_back(std::move(g));
    which.push_back(i);
  }
  timeHeld();
  return seconds;
}

std::string pmlir::rt::calibrationHost() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + ", " + simdLevelName(cpuSimdLevel()) + ", " + f32GemmName();
}

double pmlir::rt::gemmPeakFlopsPerSecond(int64_t size) {
  std::optional<double> seconds =
      timeGemmKernels({{"pmlir_matmul_f32_r22_t00", {size, size}, {size, size}, {size, size}}})[0];
  double flops =
      2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  return seconds && *seconds > 0 ? flops / *seconds : 0;
}

double pmlir::rt::copyBytesPerSecond() {
  constexpr size_t kBytes = size_t(64) << 20;
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  std::vector<double> seconds;
  for (int run = 0; run < 5; ++run) {
    Clock::time_point t0 = Clock::now();
    std::memcpy(to.data(), from.data(), kBytes);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return static_cast<double>(kBytes) / quietSeconds(std::move(seconds));
}
