//===- GpuRuntimeAbsent.cpp - The GPU entry points of a build without CUDA ===//
//
// Part of pmlir.
//
// pmlir-run links the GPU side of the runtime in every build; without CUDA
// its initialization says why no GPU can be used, and nothing else is
// reached.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/GpuRuntime.h"

#include <cstdio>
#include <cstdlib>

namespace {

[[noreturn]] void unavailable(const char *what) {
  std::fprintf(stderr, "pmlir-run: error: %s: this pmlir was built without CUDA\n", what);
  std::exit(1);
}

} // namespace

extern "C" int pmlir_rt_gpu_init(int, char *error, size_t errorSize) {
  std::snprintf(error, errorSize,
                "this pmlir was built without CUDA (configure it where the CUDA toolkit is "
                "installed)");
  return 1;
}

extern "C" const char *pmlir_rt_gpu_chip(void) { return ""; }
extern "C" void *pmlir_rt_gpu_stream(void) { return nullptr; }
extern "C" void *pmlir_rt_gpu_alloc(size_t, const char *) { unavailable("device memory"); }
extern "C" void pmlir_rt_gpu_free(void *) {}
extern "C" void pmlir_rt_gpu_copy_to_device(void *, const void *, size_t) {
  unavailable("a copy to the device");
}
extern "C" void pmlir_rt_gpu_copy_to_host(void *, const void *, size_t) {
  unavailable("a copy to the host");
}
extern "C" void pmlir_rt_gpu_synchronize(void) {}
extern "C" void pmlir_rt_gpu_shutdown(void) {}
extern "C" size_t pmlir_rt_gpu_bytes_in_use(void) { return 0; }
extern "C" size_t pmlir_rt_gpu_peak_bytes(void) { return 0; }

extern "C" const pmlir_rt_symbol *pmlir_rt_gpu_symbols(void) {
  static const pmlir_rt_symbol none[] = {{nullptr, nullptr}};
  return none;
}
