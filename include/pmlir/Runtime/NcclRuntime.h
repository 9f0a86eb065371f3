/*===- NcclRuntime.h - Collectives on GPU buffers over NCCL ------*- C -*-===*\
|*                                                                            *|
|* Part of pmlir.                                                             *|
|*                                                                            *|
|* The NCCL backend of the per-rank runtime, built when CUDA and NCCL are     *|
|* found. MPI (pmlir_rt_init) launches the ranks and owns the mesh; each      *|
|* group's NCCL communicator is made on the group's first NCCL collective     *|
|* from a unique id that the group's first member broadcasts over the group's *|
|* MPI communicator. One rank per GPU: rank r uses GPU (local rank) of its    *|
|* host. Buffers are device pointers; every call is ordered on the backend's  *|
|* stream and returns when it is complete, or ends the job (naming the rank,  *|
|* the collective and the group) on an NCCL error or past the timeout.        *|
\*===----------------------------------------------------------------------===*/

#ifndef PMLIR_RUNTIME_NCCLRUNTIME_H
#define PMLIR_RUNTIME_NCCLRUNTIME_H

#include "pmlir/Runtime/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* After pmlir_rt_init: picks this rank's GPU and makes the stream. Returns 0,
 * or non-zero with a message in `error` (no GPU, fewer GPUs on this host than
 * ranks). */
int pmlir_rt_nccl_init(char *error, size_t error_size);
void pmlir_rt_nccl_finalize(void);
/* This rank's CUDA device and the stream collectives are ordered on
 * (a cudaStream_t). */
int pmlir_rt_nccl_device(void);
void *pmlir_rt_nccl_stream(void);

/* As the host collectives of Runtime.h, on device buffers. */
void pmlir_rt_nccl_all_reduce(const void *send, void *recv, int64_t count,
                              pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                              const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_all_gather(const void *send, void *recv, int64_t count,
                              pmlir_rt_dtype dtype, const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                          int64_t root, const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_reduce_scatter(const void *send, void *recv, int64_t count,
                                  pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                  const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_all_to_all(const void *send, void *recv, int64_t count,
                              pmlir_rt_dtype dtype, const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t root,
                             const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_send(const void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
                        const int64_t *axes, int64_t num_axes);
void pmlir_rt_nccl_recv(void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
                        const int64_t *axes, int64_t num_axes);

#ifdef __cplusplus
}
#endif

#endif /* PMLIR_RUNTIME_NCCLRUNTIME_H */
