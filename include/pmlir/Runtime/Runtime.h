/*===- Runtime.h - The per-rank runtime that compiled programs call -*- C -*-===*\
|*                                                                            *|
|* Part of pmlir.                                                             *|
|*                                                                            *|
|* One process per rank, launched by mpirun. pmlir_rt_init brings up MPI and  *|
|* the mesh: named axes with sizes, ranks mapped to coordinates (tp fastest,  *|
|* then cp, ep, dp, pp, unless a rank order is given) and one communicator    *|
|* per group. Collectives run on the group of the given mesh axes that holds  *|
|* this rank; axes are indices into the mesh as written ("tp=2,dp=2": tp is   *|
|* 0), or parts of an axis coded as pmlir::SubAxis::code says ("tp:(2)2" of   *|
|* a tp of 4: the ranks that share tp / 2), listed in the order that orders   *|
|* the group (the last fastest).                                              *|
|* Errors end the whole job with a message that names the rank.              *|
|*                                                                            *|
|* One set of entry points for every backend, chosen at init:                 *|
|* - MPI: buffers are host memory; every call returns complete.               *|
|* - NCCL (builds with CUDA and NCCL; one GPU per rank): a call whose buffers *|
|*   are all device memory is ordered on pmlir_rt_stream() and may return     *|
|*   before it completes; pmlir_rt_wait() completes it. A call with a host    *|
|*   buffer stages it through device memory and returns complete, so CPU      *|
|*   programs run unchanged. Point to point has no tags in NCCL: sends and    *|
|*   receives between two members match in the order they are called (the     *|
|*   tags must pair up in that same order), and a send completes only when    *|
|*   its receive is posted (pmlir_rt_message_group issues the two together).  *|
\*===----------------------------------------------------------------------===*/

#ifndef PMLIR_RUNTIME_RUNTIME_H
#define PMLIR_RUNTIME_RUNTIME_H

#include "pmlir/Runtime/CpuKernels.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, reductions and step metrics, from the one ABI table
 * (RuntimeAbi.def). */
typedef enum {
#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE) PMLIR_RT_##ENUM = CODE,
#include "pmlir/Runtime/RuntimeAbi.def"
} pmlir_rt_dtype;

typedef enum {
#define PMLIR_RT_REDUCTION(ENUM, CODE, NAME) PMLIR_RT_##ENUM = CODE,
#include "pmlir/Runtime/RuntimeAbi.def"
} pmlir_rt_reduction;

typedef enum {
#define PMLIR_RT_STEP_METRIC(ENUM, CODE, NAME) PMLIR_RT_STEP_METRIC_##ENUM = CODE,
#include "pmlir/Runtime/RuntimeAbi.def"
} pmlir_rt_step_metric_kind;

/* Where the collectives run. */
typedef enum {
  PMLIR_RT_BACKEND_MPI = 0,
  PMLIR_RT_BACKEND_NCCL = 1,
} pmlir_rt_backend;

/* A mesh: `num_axes` axes, axis i named `axis_names[i]` with
 * `axis_sizes[i]` devices; ranks count through the axes `rank_order[0]`,
 * `rank_order[1]`, ... (axis indices, fastest first, every axis once; NULL
 * for the default order: tp, cp, ep, dp, pp). */
typedef struct {
  int num_axes;
  const char *const *axis_names;
  const int64_t *axis_sizes;
  const int *rank_order;
} pmlir_rt_mesh;

/* Starts MPI (unless it is up), the mesh `mesh` and the collectives of
 * `backend` (NCCL: rank i of a host takes visible GPU i mod the visible
 * count). The job must have exactly as many ranks as the mesh. A collective
 * that waits longer than `timeout_seconds` (<= 0: no limit) ends the job.
 * Returns 0, or non-zero with a message in `error` on every rank (a mesh
 * that is no mesh, or a backend that cannot start on one rank, starts on
 * none). */
int pmlir_rt_init(const pmlir_rt_mesh *mesh, double timeout_seconds, pmlir_rt_backend backend,
                  char *error, size_t error_size);
/* Waits for the collectives issued so far, then for every rank, and ends
 * the runtime. */
void pmlir_rt_finalize(void);
/* Every rank meets here once it has compiled its program, before the first
 * run, so that a run's time is its own. Without the timeout: ranks compile
 * different programs (pipeline stages) for different times. */
void pmlir_rt_ready(void);
/* Every rank meets here, like pmlir_rt_ready without the timeout, with
 * whether it failed (a failure it would otherwise end the job with): the
 * lowest rank that failed, or -1 where none did. Where ranks fail alike
 * (the same file, the same program) or apart, the caller lets that rank
 * alone say why and every rank ends cleanly, instead of each printing its
 * own and aborting. */
int64_t pmlir_rt_first_failed_rank(int failed);

/* Waits until the collectives issued so far are complete, under the
 * timeout (an NCCL error or a wait past it ends the job). Nothing to wait
 * for on MPI. */
void pmlir_rt_wait(void);
/* The CUDA device of this rank and the stream (a cudaStream_t) that device
 * collectives are ordered on: work that produces a collective's input or
 * reads its output belongs on that stream. -1 and null on MPI. */
int pmlir_rt_device(void);
void *pmlir_rt_stream(void);

int64_t pmlir_rt_rank(void);
int64_t pmlir_rt_num_ranks(void);
/* The job's hosts (MPI's processor names) and the ranks each runs, for
 * people: "a (ranks 0, 1), b (ranks 2, 3)"; cut to `size` bytes, always
 * terminated. Empty before pmlir_rt_init. */
void pmlir_rt_describe_hosts(char *text, size_t size);
/* Size of the group over `axes` and this rank's index in it. */
int64_t pmlir_rt_group_size(const int64_t *axes, int64_t num_axes);
int64_t pmlir_rt_index_in_group(const int64_t *axes, int64_t num_axes);
/* This rank's coordinate on mesh axis `axis`, or on the part of one that
 * `axis` codes. */
int64_t pmlir_rt_coordinate(int64_t axis);

/* Runs body(context, begin, end), a void (*)(void *, int64_t, int64_t),
 * over [0, count) in contiguous chunks, one a thread, on the process's
 * worker threads with the caller among them, and returns when all are
 * done. Inline, as one chunk, where the work (count * unit_cost, the
 * operations of one iteration) would not pay for waking threads, on one
 * thread, and inside a chunk. The chunks are the same on every call with
 * the same count and threads. */
void pmlir_rt_parallel_for(void *body, void *context, int64_t count, int64_t unit_cost);
/* The threads pmlir_rt_parallel_for runs on, the caller's counted (n < 1:
 * one), and how many it has. */
void pmlir_rt_set_parallel_threads(int n);
int pmlir_rt_parallel_threads(void);
/* The calls of pmlir_rt_parallel_for so far (those inside a chunk not
 * counted) and how many of them were split over threads. */
void pmlir_rt_parallel_counts(int64_t *calls, int64_t *split);
/* The threads a rank uses when none are asked for: the cores this process
 * may run on, shared among the ranks of its host. */
int pmlir_rt_default_threads(void);
/* The cores this process may run on, and the ranks of its job on its host
 * (mpirun's local size; 1 outside mpirun). */
int pmlir_rt_host_cores(void);
int pmlir_rt_ranks_on_host(void);

/* Fault injection for --check's tests: the `nth` all-reduce from now on
 * (counted from 1) reduces over this rank alone instead of its group, as a
 * wrong reduction group would; 0 injects none. */
void pmlir_rt_test_wrong_group(int64_t nth);

/* --check-collectives: before each collective, every member of its group
 * compares what it is about to issue (kind, element type, count, reduction
 * or root, its place among the group's collectives) with the others'; a
 * send's with its receive. A difference ends the job naming the two ranks
 * and the two calls, where it would otherwise hang or swap data. Costs a
 * small all-gather (or message) each. */
void pmlir_rt_check_collectives(int on);

/* recv = op over the group of send (count elements each). */
void pmlir_rt_all_reduce(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                         pmlir_rt_reduction op, const int64_t *axes, int64_t num_axes);
/* recv = the group's send blocks (count each) in group order. */
void pmlir_rt_all_gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                         const int64_t *axes, int64_t num_axes);
/* recv on group member `root` = the group's send blocks (count each) in
 * group order; recv is not touched on other members. */
void pmlir_rt_gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                     int64_t root, const int64_t *axes, int64_t num_axes);
/* recv = block i (count elements) of op over the group of send, i = this
 * rank's index in the group. */
void pmlir_rt_reduce_scatter(const void *send, void *recv, int64_t count,
                             pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                             const int64_t *axes, int64_t num_axes);
/* Block j of send (count elements) goes to group member j; recv block j
 * comes from member j. */
void pmlir_rt_all_to_all(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                         const int64_t *axes, int64_t num_axes);
/* Expert parallelism's dropless token exchange (tfm.moe_all_to_all): the
 * group's n members hold `experts` / n consecutive experts each. `rows`
 * is this member's rows (`row_elements` each) sorted by expert, counts[e]
 * of expert e. The members exchange their counts (an all-gather), then
 * each sends every member its rows of that member's experts. `received`
 * (room for `capacity` rows) gets this member's experts' rows by expert,
 * then by sender, zeros after them; expert_counts[e] how many expert e of
 * its own got. */
void pmlir_rt_moe_all_to_all(const void *rows, void *received, int64_t row_elements,
                             const int64_t *counts, int64_t experts, int64_t *expert_counts,
                             int64_t capacity, pmlir_rt_dtype dtype, const int64_t *axes,
                             int64_t num_axes);
/* Its inverse with the same counts: `received` as pmlir_rt_moe_all_to_all
 * leaves it goes back to the members it came from, into `rows` in their
 * sorted order. */
void pmlir_rt_moe_all_to_all_back(const void *received, void *rows, int64_t row_elements,
                                  const int64_t *counts, int64_t experts, pmlir_rt_dtype dtype,
                                  const int64_t *axes, int64_t num_axes);
/* buf of group member `root` to every member. */
void pmlir_rt_broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t root,
                        const int64_t *axes, int64_t num_axes);
/* Point to point with group member `peer`; a receive matches the send
 * with its tag (NCCL: the next send of the peer, see above). */
void pmlir_rt_send(const void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
                   const int64_t *axes, int64_t num_axes, int64_t tag);
void pmlir_rt_recv(void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
                   const int64_t *axes, int64_t num_axes, int64_t tag);
/* The next `count` sends and receives form one group: each is held until
 * the last of them is called, and then all are issued together, so that
 * none waits for another (NCCL: one ncclGroupStart/End; MPI: the sends,
 * which never wait, then the receives). A pipeline stage that sends one
 * way and receives the other in one group cannot deadlock with its
 * neighbour doing the same. The group's buffers must stay valid until its
 * last call, and no send may read a buffer a receive of the group writes;
 * nothing but sends and receives may be called inside it. */
void pmlir_rt_message_group(int64_t count);

/* Tracing (pmlir-run --trace): spans of each rank's work, written as one
 * Chrome trace (Perfetto and chrome://tracing open it). Off until
 * pmlir_rt_trace_start, which every rank calls: it meets the others, so
 * that their times start together. Compiled pipelines mark each fragment
 * they run (work code of RuntimeAbi.def's PMLIR_RT_WORK, stage,
 * microbatch); the runtime adds its collectives and point-to-point
 * messages (on NCCL the time they take to issue, not to complete); the host
 * marks regions of its own ("step 2"). pmlir_rt_trace_write, called by
 * every rank, gathers the spans on rank 0, which writes `path`; returns
 * non-zero with `error` on rank 0 when it cannot. */
void pmlir_rt_trace_start(void);
void pmlir_rt_trace_begin(int64_t work, int64_t stage, int64_t microbatch);
void pmlir_rt_trace_end(int64_t work, int64_t stage, int64_t microbatch);
void pmlir_rt_trace_region_begin(const char *name);
void pmlir_rt_trace_region_end(void);
int pmlir_rt_trace_write(const char *path, char *error, size_t error_size);

/* Step metrics (tfm.step_metric): values a program adds, call after call,
 * to metric (`kind`, a code of RuntimeAbi.def's PMLIR_RT_STEP_METRIC,
 * `index`), which the host reads after a step and clears before the next.
 * Not collective: each rank keeps what its program added. A GPU
 * program's values are device memory, read once its stream has them. */
void pmlir_rt_step_metric(int64_t kind, int64_t index, const int64_t *values, int64_t count);
/* Copies up to `capacity` of metric (kind, index)'s sums into `values` and
 * returns how many it has: 0 when this rank's program added none. */
int64_t pmlir_rt_step_metric_values(int64_t kind, int64_t index, int64_t *values, int64_t capacity);
void pmlir_rt_clear_step_metrics(void);

/* The entry points that pmlir-lower-shard-to-runtime calls (RuntimeAbi.def:
 * `_mlir_ciface_pmlir_rt_*` over memref descriptors, and plain ones), for a
 * JIT to bind by name; terminated by an entry whose name is null. */
const pmlir_rt_symbol *pmlir_rt_collective_symbols(void);

/* Ends the whole job: prints "pmlir-run: rank R: message" and aborts every
 * rank. */
void pmlir_rt_fail(const char *message);

#ifdef __cplusplus
}
#endif

#endif /* PMLIR_RUNTIME_RUNTIME_H */
