//===- NcclRuntime.cpp - The pmlir_rt_nccl_* C ABI over NCCL --------------===//
//
// Part of pmlir.
//
// Collectives on device buffers. A group's NCCL communicator is made when
// the group first runs an NCCL collective: every member of an SPMD group
// reaches that call together, which is what ncclCommInitRank needs, and a
// program that never uses a group pays nothing for it. The id broadcast runs
// under the MPI side's watchdog and the init is non-blocking, polled against
// the timeout, so a member that never comes is named instead of waited for. The wait after each
// call polls the stream instead of blocking in it, so that an NCCL error
// reported asynchronously (a peer gone) or the collective timeout ends the
// job with a message instead of a hang; on timeout the communicator is
// aborted first, which frees the GPU from the stuck kernel.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/NcclRuntime.h"

#include "Groups.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace pmlir::rt;

namespace {

struct State {
  int device = -1;
  cudaStream_t stream = nullptr;
  std::map<const Group *, ncclComm_t> comms;
};

State *state = nullptr;

void checkCuda(cudaError_t rc, const std::string &what) {
  if (rc != cudaSuccess)
    failWith(what + ": " + cudaGetErrorString(rc));
}

void checkNccl(ncclResult_t rc, const std::string &what) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    failWith(what + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t ncclType(pmlir_rt_dtype dtype) {
  switch (dtype) {
  case PMLIR_RT_F32: return ncclFloat32;
  case PMLIR_RT_F64: return ncclFloat64;
  case PMLIR_RT_I32: return ncclInt32;
  case PMLIR_RT_I64: return ncclInt64;
  }
  failWith("unknown element type " + std::to_string(int(dtype)));
}

size_t elementBytes(pmlir_rt_dtype dtype) {
  return dtype == PMLIR_RT_F32 || dtype == PMLIR_RT_I32 ? 4 : 8;
}

ncclRedOp_t ncclOp(pmlir_rt_reduction op) {
  switch (op) {
  case PMLIR_RT_SUM: return ncclSum;
  case PMLIR_RT_MAX: return ncclMax;
  case PMLIR_RT_MIN: return ncclMin;
  case PMLIR_RT_PRODUCT: return ncclProd;
  }
  failWith("unknown reduction " + std::to_string(int(op)));
}

/// The group's NCCL communicator (made on first use) and the group.
std::pair<ncclComm_t, const Group *> commOf(const int64_t *axes, int64_t numAxes,
                                            const char *what) {
  if (!state)
    failWith(std::string(what) + " before pmlir_rt_nccl_init");
  const Group &group = groupOf(axes, numAxes, what);
  auto it = state->comms.find(&group);
  if (it != state->comms.end())
    return {it->second, &group};
  int index = 0;
  MPI_Comm_rank(group.comm, &index);
  ncclUniqueId id;
  if (index == 0)
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  // A member that never reaches this collective is named by the watchdog
  // here, where the others wait for the id.
  broadcastBytes(&id, sizeof(id), group, "broadcast of the NCCL id");
  // Non-blocking init polled against the timeout: a member that takes the
  // id and then stops would leave ncclCommInitRank waiting forever.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm;
  checkNccl(ncclCommInitRankConfig(&comm, group.size, id, index, &config),
            "ncclCommInitRank for the group over " + group.axes);
  auto start = std::chrono::steady_clock::now();
  double timeout = collectiveTimeout();
  for (;;) {
    ncclResult_t async = ncclInProgress;
    checkNccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    if (async == ncclSuccess)
      break;
    if (async != ncclInProgress) {
      ncclCommAbort(comm);
      failWith("ncclCommInitRank for the group over " + group.axes + " failed: " +
               ncclGetErrorString(async));
    }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout > 0 && waited > timeout) {
      ncclCommAbort(comm);
      failWith("ncclCommInitRank for the group over " + group.axes + " waited more than " +
               std::to_string(timeout) + " s for the rest of its group; ending the job");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  state->comms.emplace(&group, comm);
  return {comm, &group};
}

/// Waits for the stream: ends the job on an asynchronous NCCL error or when
/// the wait passes the collective timeout.
void await(ncclComm_t comm, const Group &group, const char *what) {
  auto start = std::chrono::steady_clock::now();
  double timeout = collectiveTimeout();
  for (;;) {
    cudaError_t rc = cudaStreamQuery(state->stream);
    if (rc == cudaSuccess)
      return;
    if (rc != cudaErrorNotReady)
      checkCuda(rc, std::string(what) + " over " + group.axes);
    ncclResult_t async = ncclSuccess;
    checkNccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm);
      failWith(std::string(what) + " over " + group.axes + " failed: " +
               ncclGetErrorString(async));
    }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout > 0 && waited > timeout) {
      ncclCommAbort(comm);
      failWith(std::string(what) + " over " + group.axes + " waited more than " +
               std::to_string(timeout) + " s for the rest of its group; ending the job");
    }
    std::this_thread::yield();
  }
}

const char *at(const void *base, int64_t block, int64_t count, pmlir_rt_dtype dtype) {
  return static_cast<const char *>(base) + block * count * elementBytes(dtype);
}

} // namespace

extern "C" int pmlir_rt_nccl_init(char *error, size_t errorSize) {
  auto setError = [&](const std::string &message) {
    if (error && errorSize)
      std::snprintf(error, errorSize, "%s", message.c_str());
    return 1;
  };
  if (state)
    return setError("pmlir_rt_nccl_init called twice");
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0)
    return setError(std::string("the NCCL backend needs a GPU: ") +
                    (rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device"));
  // Ranks on this host, and this one's index among them. Rank i of a host
  // takes visible device i mod the visible count: all of them where each
  // rank sees one GPU (CUDA_VISIBLE_DEVICES per rank), one each where every
  // rank sees them all.
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int local = 0, locals = 0;
  MPI_Comm_rank(host, &local);
  MPI_Comm_size(host, &locals);
  int device = local % devices;
  // Two ranks on one physical GPU are refused (NCCL would fail later with
  // less to say), unless a test asks for it: with a distinct NCCL_HOSTID per
  // rank NCCL then treats the ranks as hosts of their own.
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess)
    return setError("cudaGetDeviceProperties failed for device " + std::to_string(device));
  std::vector<char> uuids(16 * static_cast<size_t>(locals));
  MPI_Allgather(properties.uuid.bytes, 16, MPI_BYTE, uuids.data(), 16, MPI_BYTE, host);
  MPI_Comm_free(&host);
  const char *shared = std::getenv("PMLIR_RT_NCCL_SHARED_GPU");
  if (!(shared && std::string(shared) == "1"))
    for (int other = 0; other < locals; ++other)
      if (other != local && std::memcmp(&uuids[16 * other], properties.uuid.bytes, 16) == 0)
        return setError("local ranks " + std::to_string(std::min(local, other)) + " and " +
                        std::to_string(std::max(local, other)) + " of this host (" +
                        std::to_string(locals) + " ranks, " + std::to_string(devices) +
                        " visible GPUs) would share one GPU: the NCCL backend needs one GPU "
                        "per rank");
  state = new State;
  state->device = device;
  checkCuda(cudaSetDevice(device), "cudaSetDevice");
  checkCuda(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking),
            "cudaStreamCreate");
  return 0;
}

extern "C" void pmlir_rt_nccl_finalize(void) {
  if (!state)
    return;
  for (auto &[group, comm] : state->comms)
    ncclCommDestroy(comm);
  cudaStreamDestroy(state->stream);
  delete state;
  state = nullptr;
}

extern "C" int pmlir_rt_nccl_device(void) { return state ? state->device : -1; }
extern "C" void *pmlir_rt_nccl_stream(void) { return state ? state->stream : nullptr; }

extern "C" void pmlir_rt_nccl_all_reduce(const void *send, void *recv, int64_t count,
                                         pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                         const int64_t *axes, int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "all_reduce");
  checkNccl(ncclAllReduce(send, recv, count, ncclType(dtype), ncclOp(op), comm,
                          state->stream),
            "ncclAllReduce");
  await(comm, *group, "all_reduce");
}

extern "C" void pmlir_rt_nccl_all_gather(const void *send, void *recv, int64_t count,
                                         pmlir_rt_dtype dtype, const int64_t *axes,
                                         int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "all_gather");
  checkNccl(ncclAllGather(send, recv, count, ncclType(dtype), comm, state->stream),
            "ncclAllGather");
  await(comm, *group, "all_gather");
}

extern "C" void pmlir_rt_nccl_gather(const void *send, void *recv, int64_t count,
                                     pmlir_rt_dtype dtype, int64_t root,
                                     const int64_t *axes, int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "gather");
  int rootIndex = memberIndex(*group, root, "gather: root");
  int me = 0;
  MPI_Comm_rank(group->comm, &me);
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  if (me == rootIndex)
    for (int j = 0; j < group->size; ++j)
      checkNccl(ncclRecv(const_cast<char *>(at(recv, j, count, dtype)), count,
                         ncclType(dtype), j, comm, state->stream),
                "ncclRecv");
  checkNccl(ncclSend(send, count, ncclType(dtype), rootIndex, comm, state->stream),
            "ncclSend");
  checkNccl(ncclGroupEnd(), "gather");
  await(comm, *group, "gather");
}

extern "C" void pmlir_rt_nccl_reduce_scatter(const void *send, void *recv, int64_t count,
                                             pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                             const int64_t *axes, int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "reduce_scatter");
  checkNccl(ncclReduceScatter(send, recv, count, ncclType(dtype), ncclOp(op), comm,
                              state->stream),
            "ncclReduceScatter");
  await(comm, *group, "reduce_scatter");
}

extern "C" void pmlir_rt_nccl_all_to_all(const void *send, void *recv, int64_t count,
                                         pmlir_rt_dtype dtype, const int64_t *axes,
                                         int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "all_to_all");
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  for (int j = 0; j < group->size; ++j) {
    checkNccl(ncclSend(at(send, j, count, dtype), count, ncclType(dtype), j, comm,
                       state->stream),
              "ncclSend");
    checkNccl(ncclRecv(const_cast<char *>(at(recv, j, count, dtype)), count,
                       ncclType(dtype), j, comm, state->stream),
              "ncclRecv");
  }
  checkNccl(ncclGroupEnd(), "all_to_all");
  await(comm, *group, "all_to_all");
}

extern "C" void pmlir_rt_nccl_broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype,
                                        int64_t root, const int64_t *axes,
                                        int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "broadcast");
  int rootIndex = memberIndex(*group, root, "broadcast: root");
  checkNccl(ncclBroadcast(buf, buf, count, ncclType(dtype), rootIndex, comm, state->stream),
            "ncclBroadcast");
  await(comm, *group, "broadcast");
}

extern "C" void pmlir_rt_nccl_send(const void *buf, int64_t count, pmlir_rt_dtype dtype,
                                   int64_t peer, const int64_t *axes, int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "send");
  checkNccl(ncclSend(buf, count, ncclType(dtype), memberIndex(*group, peer, "send: peer"),
                     comm, state->stream),
            "ncclSend");
  await(comm, *group, "send");
}

extern "C" void pmlir_rt_nccl_recv(void *buf, int64_t count, pmlir_rt_dtype dtype,
                                   int64_t peer, const int64_t *axes, int64_t numAxes) {
  auto [comm, group] = commOf(axes, numAxes, "recv");
  checkNccl(ncclRecv(buf, count, ncclType(dtype), memberIndex(*group, peer, "recv: peer"),
                     comm, state->stream),
            "ncclRecv");
  await(comm, *group, "recv");
}
