//===- Trace.h - The runtime's spans for pmlir-run --trace ------*- C++ -*-===//
//
// Part of pmlir.
//
// What the collectives of Runtime.cpp, the GPU work of CudaRuntime.cpp and
// the CPU's GEMM calls of CpuKernels.cpp add to the trace (Runtime.h has
// the entry points). Recording costs a clock read and a vector append, and
// nothing while the trace is off.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_TRACE_H
#define PMLIR_LIB_RUNTIME_TRACE_H

#include "Groups.h"

#include <cstdint>
#include <string>

namespace pmlir::rt {

/// A collective or message of `bytes` bytes on `group` (with member `peer`
/// for point to point), traced from construction to destruction.
class TracedCall {
public:
  TracedCall(const char *what, const Group &group, int64_t bytes, int64_t peer = -1);
  ~TracedCall();
  TracedCall(const TracedCall &) = delete;
  TracedCall &operator=(const TracedCall &) = delete;

private:
  const char *what;
  const Group *group;
  int64_t bytes, peer;
  int64_t startNs = -1;
};

/// Whether pmlir-run --trace is recording.
bool tracing();

/// The trace's clock: nanoseconds of the host's steady clock.
int64_t traceClockNs();

/// A span of the GPU's work (a kernel, a GEMM, a copy) on the rank's GPU
/// track, timed on the device and placed on the trace's clock.
void traceGpuSpan(std::string name, std::string category, int64_t startNs, int64_t endNs,
                  std::string args);

/// Whether --trace records and this is the thread that started it: the
/// spans are that thread's alone (the runtime's other threads may call a
/// kernel too; theirs are not recorded).
bool tracingThisThread();

/// A span of the host's kernel calls (a GEMM) on the rank's kernel track.
void traceKernelSpan(std::string name, std::string category, int64_t startNs, int64_t endNs,
                     std::string args);

/// A kernel call of the host, traced from construction to destruction when
/// tracingThisThread(); nothing otherwise, not even its name and arguments
/// (`describe`: a pair of the name and JSON members), made only then.
class TracedKernel {
public:
  template <typename Describe> TracedKernel(const char *category, Describe describe) {
    if (!tracingThisThread())
      return;
    auto [spanName, spanArgs] = describe();
    name = std::move(spanName);
    args = std::move(spanArgs);
    this->category = category;
    startNs = traceClockNs();
  }
  ~TracedKernel() {
    if (startNs >= 0)
      traceKernelSpan(std::move(name), category, startNs, traceClockNs(), std::move(args));
  }
  TracedKernel(const TracedKernel &) = delete;
  TracedKernel &operator=(const TracedKernel &) = delete;

private:
  std::string name, args;
  const char *category = nullptr;
  int64_t startNs = -1;
};

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_TRACE_H
