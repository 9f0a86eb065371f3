/*===- GpuRuntime.h - The GPU side of the per-rank runtime -----*- C -*-===*\
|*                                                                          *|
|* Part of pmlir.                                                           *|
|*                                                                          *|
|* What a program compiled by pmlir-gpu-pipeline calls, and what pmlir-run  *|
|* drives it with. One GPU and one stream per rank: the kernels, the        *|
|* cuBLASLt GEMMs and (on a mesh with --backend nccl) the NCCL collectives   *|
|* are all ordered on it. Device memory comes from a stream-ordered pool   *|
|* that keeps what it has allocated (no cudaMalloc per tensor per call).   *|
|* Kernel modules load once, from the program's global constructors, and   *|
|* each kernel's handle is looked up once. Errors end the job with a       *|
|* message naming the call, the kernel or tensor and CUDA's error string.  *|
|*                                                                          *|
|* The compiled host code reaches it through upstream MLIR's GPU runtime   *|
|* ABI (mgpuModuleLoad, mgpuLaunchKernel, mgpuMemAlloc, ...: gpu-to-llvm's *|
|* calls), in which mgpuStreamCreate returns the rank's stream, and        *|
|* through the GEMM kernels pmlir-select-gpu-kernels names. Builds without  *|
|* CUDA have these entry points too: pmlir_rt_gpu_init then says so.       *|
\*===----------------------------------------------------------------------===*/

#ifndef PMLIR_RUNTIME_GPURUNTIME_H
#define PMLIR_RUNTIME_GPURUNTIME_H

#include "pmlir/Runtime/CpuKernels.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Takes this rank's GPU: the collective backend's device when NCCL runs
 * (pmlir_rt_device), else visible device `device` (or 0 when negative),
 * with a stream of its own. Returns 0, or non-zero with the cause in
 * `error` (cuBLASLt did not load, no CUDA driver, no GPU, a build without
 * CUDA). */
int pmlir_rt_gpu_init(int device, char *error, size_t error_size);

/* The GPU's architecture as the compiler names it ("sm_90"); "" before
 * pmlir_rt_gpu_init. */
const char *pmlir_rt_gpu_chip(void);

/* The rank's stream (a cudaStream_t). */
void *pmlir_rt_gpu_stream(void);

/* Device memory for a tensor named `what` (in the error when the device
 * is full: its name, the bytes asked for and those in use), freed with
 * pmlir_rt_gpu_free. Stream-ordered on the rank's stream. */
void *pmlir_rt_gpu_alloc(size_t bytes, const char *what);
void pmlir_rt_gpu_free(void *pointer);

/* Copies between host and device memory, ordered on the rank's stream;
 * a copy to the host returns when the data is there. */
void pmlir_rt_gpu_copy_to_device(void *device, const void *host, size_t bytes);
void pmlir_rt_gpu_copy_to_host(void *host, const void *device, size_t bytes);

/* Returns when everything issued on the rank's stream is done. */
void pmlir_rt_gpu_synchronize(void);

/* The end of a run on a mesh (pmlir_rt_finalize calls it before the
 * collective backend and MPI end, which may take the CUDA context with
 * them): waits for the stream and frees every buffer still allocated;
 * frees after it are no-ops and allocations fail. */
void pmlir_rt_gpu_shutdown(void);

/* The cuBLASLt workspace a rank's GPU holds beside the pool, in bytes. */
#define PMLIR_RT_GPU_GEMM_WORKSPACE_BYTES ((size_t)32 << 20)

/* Device memory in use by the pool and its peak, in bytes. */
size_t pmlir_rt_gpu_bytes_in_use(void);
size_t pmlir_rt_gpu_peak_bytes(void);

/* The entry points compiled GPU programs call (mgpu*, the GEMMs), for the
 * JIT; terminated by an entry whose name is null. */
const pmlir_rt_symbol *pmlir_rt_gpu_symbols(void);

#ifdef __cplusplus
}
#endif

#endif /* PMLIR_RUNTIME_GPURUNTIME_H */
