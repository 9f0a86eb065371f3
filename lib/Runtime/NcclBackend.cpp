//===- NcclBackend.cpp - Collectives over NCCL ----------------------------===//
//
// Part of pmlir.
//
// One GPU per rank: local rank i takes visible device i mod the visible
// count (so one GPU per rank through CUDA_VISIBLE_DEVICES works too), and
// two ranks on one physical GPU are refused unless PMLIR_RT_NCCL_SHARED_GPU=1
// (tests: with a distinct NCCL_HOSTID per rank NCCL runs them as separate
// hosts over sockets). Every call is ordered on the backend's one stream.
//
// A group's NCCL communicator is made when the group first runs a
// collective: every member of an SPMD group reaches that call together,
// which is what ncclCommInitRank needs, and a program that never uses a
// group pays nothing for it. The id broadcast runs under the watchdog and
// the init is non-blocking, polled against the timeout, so a member that
// never comes is named instead of waited for.
//
// Device buffers: the call is enqueued and returns; an event recorded after
// it lets wait() name the collective that does not finish. Host buffers
// (today's CPU programs) go through a staging buffer on the device, grown
// as needed, and the call returns complete. Nothing here blocks without a
// limit: wait() polls the events and the communicator's asynchronous error
// against the timeout, and on an error or past the timeout aborts the
// communicators (which frees the GPU from a stuck kernel) and ends the job
// naming the rank, the collective and the group. Communicators are
// non-blocking, so an enqueue may return before its kernel is on the stream
// (while NCCL connects to the peers): each is polled to completion, under
// the same limit, before anything else is ordered after it.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Groups.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace pmlir::rt;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

void checkCuda(cudaError_t rc, const std::string &what) {
  if (rc != cudaSuccess)
    failWith(what + ": " + cudaGetErrorString(rc));
}

/// ncclInProgress is no failure: the operation goes on in the background
/// (non-blocking communicators) and settle() waits for it.
void checkNccl(ncclResult_t rc, const std::string &what) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    failWith(what + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t ncclType(pmlir_rt_dtype dtype) {
  switch (dtype) {
  case PMLIR_RT_F32:
    return ncclFloat32;
  case PMLIR_RT_F64:
    return ncclFloat64;
  case PMLIR_RT_I32:
    return ncclInt32;
  case PMLIR_RT_I64:
    return ncclInt64;
  case PMLIR_RT_BF16:
    return ncclBfloat16;
  case PMLIR_RT_F16:
    return ncclFloat16;
  }
  failWith("unknown element type " + std::to_string(int(dtype)));
}

ncclRedOp_t ncclOp(pmlir_rt_reduction op) {
  switch (op) {
  case PMLIR_RT_SUM:
    return ncclSum;
  case PMLIR_RT_MAX:
    return ncclMax;
  case PMLIR_RT_MIN:
    return ncclMin;
  case PMLIR_RT_PRODUCT:
    return ncclProd;
  }
  failWith("unknown reduction " + std::to_string(int(op)));
}

/// Whether NCCL cannot use `pointer` in place: pageable or pinned host
/// memory. Managed memory is the GPU's too.
bool isHost(const void *pointer) {
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError(); // not CUDA's: host memory, and no sticky error
    return true;
  }
  return attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost;
}

const char *blockAt(const void *base, int64_t block, int64_t count, pmlir_rt_dtype dtype) {
  return static_cast<const char *>(base) + block * count * elementBytes(dtype);
}

class NcclBackend final : public CollectiveBackend {
public:
  NcclBackend(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  ~NcclBackend() override;

  const char *name() const override { return "nccl"; }
  int device() const override { return device_; }
  void *stream() const override { return stream_; }

  void allReduce(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                 pmlir_rt_reduction op, const Group &group) override {
    size_t bytes = count * elementBytes(dtype);
    run("all_reduce", group, send, bytes, recv, bytes,
        [&](ncclComm_t comm, const void *in, void *out) {
          checkNccl(ncclAllReduce(in, out, count, ncclType(dtype), ncclOp(op), comm, stream_),
                    "ncclAllReduce");
        });
  }

  void allGather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                 const Group &group) override {
    size_t bytes = count * elementBytes(dtype);
    run("all_gather", group, send, bytes, recv, bytes * group.size,
        [&](ncclComm_t comm, const void *in, void *out) {
          checkNccl(ncclAllGather(in, out, count, ncclType(dtype), comm, stream_), "ncclAllGather");
        });
  }

  void gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype, int root,
              const Group &group) override {
    size_t bytes = count * elementBytes(dtype);
    bool atRoot = indexIn(group) == root;
    // recv is not touched off the root (it may be null there).
    run("gather", group, send, bytes, recv, atRoot ? bytes * group.size : 0,
        [&](ncclComm_t comm, const void *in, void *out) {
          checkNccl(ncclGroupStart(), "ncclGroupStart");
          if (atRoot)
            for (int j = 0; j < group.size; ++j)
              checkNccl(ncclRecv(const_cast<char *>(blockAt(out, j, count, dtype)), count,
                                 ncclType(dtype), j, comm, stream_),
                        "ncclRecv");
          checkNccl(ncclSend(in, count, ncclType(dtype), root, comm, stream_), "ncclSend");
          checkNccl(ncclGroupEnd(), "gather");
        });
  }

  void reduceScatter(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                     pmlir_rt_reduction op, const Group &group) override {
    size_t bytes = count * elementBytes(dtype);
    run("reduce_scatter", group, send, bytes * group.size, recv, bytes,
        [&](ncclComm_t comm, const void *in, void *out) {
          checkNccl(ncclReduceScatter(in, out, count, ncclType(dtype), ncclOp(op), comm, stream_),
                    "ncclReduceScatter");
        });
  }

  void allToAll(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                const Group &group) override {
    size_t bytes = count * elementBytes(dtype) * group.size;
    run("all_to_all", group, send, bytes, recv, bytes,
        [&](ncclComm_t comm, const void *in, void *out) {
          checkNccl(ncclGroupStart(), "ncclGroupStart");
          for (int j = 0; j < group.size; ++j) {
            checkNccl(
                ncclSend(blockAt(in, j, count, dtype), count, ncclType(dtype), j, comm, stream_),
                "ncclSend");
            checkNccl(ncclRecv(const_cast<char *>(blockAt(out, j, count, dtype)), count,
                               ncclType(dtype), j, comm, stream_),
                      "ncclRecv");
          }
          checkNccl(ncclGroupEnd(), "all_to_all");
        });
  }

  void allToAllV(const void *send, const int64_t *sendCounts, const int64_t *sendOffsets,
                 void *recv, const int64_t *recvCounts, const int64_t *recvOffsets,
                 pmlir_rt_dtype dtype, const Group &group) override {
    size_t inBytes = 0, outBytes = 0, width = elementBytes(dtype);
    for (int j = 0; j < group.size; ++j) {
      inBytes = std::max<size_t>(inBytes, (sendOffsets[j] + sendCounts[j]) * width);
      outBytes = std::max<size_t>(outBytes, (recvOffsets[j] + recvCounts[j]) * width);
    }
    run("all_to_all", group, send, inBytes, recv, outBytes,
        [&](ncclComm_t comm, const void *in, void *out) {
          checkNccl(ncclGroupStart(), "ncclGroupStart");
          for (int j = 0; j < group.size; ++j) {
            if (sendCounts[j] > 0)
              checkNccl(ncclSend(blockAt(in, sendOffsets[j], 1, dtype), sendCounts[j],
                                 ncclType(dtype), j, comm, stream_),
                        "ncclSend");
            if (recvCounts[j] > 0)
              checkNccl(ncclRecv(const_cast<char *>(blockAt(out, recvOffsets[j], 1, dtype)),
                                 recvCounts[j], ncclType(dtype), j, comm, stream_),
                        "ncclRecv");
          }
          checkNccl(ncclGroupEnd(), "all_to_all");
        });
  }

  void broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype, int root,
                 const Group &group) override {
    size_t bytes = count * elementBytes(dtype);
    run("broadcast", group, buf, bytes, buf, bytes,
        [&](ncclComm_t comm, const void *, void *inOut) {
          checkNccl(ncclBroadcast(inOut, inOut, count, ncclType(dtype), root, comm, stream_),
                    "ncclBroadcast");
        });
  }

  // NCCL has no tags: messages between two members match in call order.
  void send(const void *buf, int64_t count, pmlir_rt_dtype dtype, int peer, int64_t,
            const Group &group) override {
    run("send", group, buf, count * elementBytes(dtype), nullptr, 0,
        [&](ncclComm_t comm, const void *in, void *) {
          checkNccl(ncclSend(in, count, ncclType(dtype), peer, comm, stream_), "ncclSend");
        });
  }

  void recv(void *buf, int64_t count, pmlir_rt_dtype dtype, int peer, int64_t,
            const Group &group) override {
    run("recv", group, nullptr, 0, buf, count * elementBytes(dtype),
        [&](ncclComm_t comm, const void *, void *out) {
          checkNccl(ncclRecv(out, count, ncclType(dtype), peer, comm, stream_), "ncclRecv");
        });
  }

  void exchange(const std::vector<PointToPoint> &messages) override;

  void wait() override;

private:
  /// A collective on the stream, and the event recorded after it.
  struct Issued {
    cudaEvent_t done;
    ncclComm_t comm;
    const char *what;
    const Group *group;
  };

  ncclComm_t commOf(const Group &group);
  /// Polls `comm` until its last operation has left the background
  /// (ncclInProgress), under the timeout.
  void settle(ncclComm_t comm, const std::string &what);
  /// Marks `what`, just enqueued on `comm`, as issued.
  void issued(ncclComm_t comm, const char *what, const Group &group);
  /// Runs `enqueue(comm, in, out)` on device pointers: `in` and `out`
  /// themselves, or staged copies of those in host memory (`inBytes` read
  /// from `in`, `outBytes` written to `out`; in == out: one buffer).
  template <typename Enqueue>
  void run(const char *what, const Group &group, const void *in, size_t inBytes, void *out,
           size_t outBytes, Enqueue enqueue);
  /// At least `bytes` of device memory for staging.
  char *staging(size_t bytes);
  /// Aborts every communicator (freeing the GPU from their kernels) and
  /// ends the job.
  [[noreturn]] void abortAndFail(const std::string &message);

  int device_;
  cudaStream_t stream_;
  std::map<const Group *, ncclComm_t> comms_;
  std::vector<Issued> issued_;
  std::vector<cudaEvent_t> spareEvents_;
  char *staging_ = nullptr;
  size_t stagingBytes_ = 0;
};

NcclBackend::~NcclBackend() {
  // Finalizing a communicator flushes it and meets its peers; non-blocking,
  // so it is polled under the timeout like everything else.
  for (auto &[group, comm] : comms_) {
    checkNccl(ncclCommFinalize(comm), "ncclCommFinalize");
    settle(comm, "finalizing the NCCL communicator over " + group->axes);
  }
  for (auto &[group, comm] : comms_)
    ncclCommDestroy(comm);
  for (const Issued &op : issued_)
    cudaEventDestroy(op.done);
  for (cudaEvent_t event : spareEvents_)
    cudaEventDestroy(event);
  if (staging_)
    cudaFree(staging_);
  cudaStreamDestroy(stream_);
}

void NcclBackend::abortAndFail(const std::string &message) {
  for (auto &[group, comm] : comms_)
    ncclCommAbort(comm);
  comms_.clear();
  failWith(message);
}

void NcclBackend::settle(ncclComm_t comm, const std::string &what) {
  Clock::time_point start = Clock::now();
  double timeout = collectiveTimeout();
  for (;;) {
    ncclResult_t state = ncclInProgress;
    checkNccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess)
      return;
    if (state != ncclInProgress)
      abortAndFail(what + " failed: " + ncclGetErrorString(state));
    if (timeout > 0 && secondsSince(start) > timeout)
      abortAndFail(what + " waited more than " + secondsText(timeout) +
                   " s for the rest of its group; ending the job");
    std::this_thread::yield();
  }
}

ncclComm_t NcclBackend::commOf(const Group &group) {
  auto it = comms_.find(&group);
  if (it != comms_.end())
    return it->second;
  int index = indexIn(group);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (index == 0)
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  // A member that never reaches this collective is named by the watchdog
  // here, where the others wait for the id.
  broadcastBytes(&id, sizeof(id), group, "broadcast of the NCCL id");
  // Non-blocking init polled against the timeout: a member that takes the
  // id and then stops would leave ncclCommInitRank waiting forever.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  std::string what = "ncclCommInitRank for the group over " + group.axes;
  checkNccl(ncclCommInitRankConfig(&comm, group.size, id, index, &config), what);
  comms_.emplace(&group, comm); // aborted with the others on failure
  settle(comm, what);
  return comm;
}

void NcclBackend::issued(ncclComm_t comm, const char *what, const Group &group) {
  settle(comm, std::string(what) + " over " + group.axes);
  cudaEvent_t done;
  if (spareEvents_.empty()) {
    checkCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  } else {
    done = spareEvents_.back();
    spareEvents_.pop_back();
  }
  checkCuda(cudaEventRecord(done, stream_), "cudaEventRecord");
  issued_.push_back({done, comm, what, &group});
}

void NcclBackend::wait() {
  // The limit runs from the last collective that finished: a long queue of
  // collectives that all progress is no hang.
  Clock::time_point since = Clock::now();
  double timeout = collectiveTimeout();
  size_t next = 0;
  while (next < issued_.size()) {
    const Issued &op = issued_[next];
    auto what = [&] { return std::string(op.what) + " over " + op.group->axes; };
    cudaError_t rc = cudaEventQuery(op.done);
    if (rc == cudaSuccess) {
      spareEvents_.push_back(op.done);
      ++next;
      since = Clock::now();
      continue;
    }
    if (rc != cudaErrorNotReady)
      checkCuda(rc, what());
    ncclResult_t async = ncclSuccess;
    checkNccl(ncclCommGetAsyncError(op.comm, &async), "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress)
      abortAndFail(what() + " failed: " + ncclGetErrorString(async));
    if (timeout > 0 && secondsSince(since) > timeout)
      abortAndFail(what() + " waited more than " + secondsText(timeout) +
                   " s for the rest of its group; ending the job");
    std::this_thread::yield();
  }
  issued_.clear();
}

void NcclBackend::exchange(const std::vector<PointToPoint> &messages) {
  // The communicators first: making one meets the group's members, which
  // cannot happen inside an NCCL group.
  std::vector<ncclComm_t> comms;
  for (const PointToPoint &m : messages)
    comms.push_back(commOf(*m.group));
  // Host buffers are staged, each in a region of its own: the group's
  // transfers run at once.
  constexpr size_t kNoStaging = SIZE_MAX;
  std::vector<size_t> offsets;
  size_t stagedBytes = 0;
  for (const PointToPoint &m : messages) {
    size_t bytes = m.count * elementBytes(m.dtype);
    offsets.push_back(bytes && isHost(m.buf) ? stagedBytes : kNoStaging);
    if (offsets.back() != kNoStaging)
      stagedBytes += (bytes + 255) / 256 * 256;
  }
  char *base = nullptr;
  if (stagedBytes) {
    // As in run(): the stream is drained under the timeout first.
    wait();
    base = staging(stagedBytes);
  }
  auto deviceBuffer = [&](size_t i) -> void * {
    return offsets[i] == kNoStaging ? messages[i].buf : base + offsets[i];
  };
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].sending && offsets[i] != kNoStaging)
      checkCuda(cudaMemcpyAsync(deviceBuffer(i), messages[i].buf,
                                messages[i].count * elementBytes(messages[i].dtype),
                                cudaMemcpyHostToDevice, stream_),
                "send: copying the input to the GPU");
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < messages.size(); ++i) {
    const PointToPoint &m = messages[i];
    if (m.sending)
      checkNccl(ncclSend(deviceBuffer(i), m.count, ncclType(m.dtype), m.peer, comms[i], stream_),
                "ncclSend");
    else
      checkNccl(ncclRecv(deviceBuffer(i), m.count, ncclType(m.dtype), m.peer, comms[i], stream_),
                "ncclRecv");
  }
  checkNccl(ncclGroupEnd(), "the message group's sends and receives");
  // Each communicator of the group settles (non-blocking: the group may
  // still be connecting) and has its event.
  for (size_t i = 0; i < messages.size(); ++i)
    if (std::find(comms.begin(), comms.begin() + i, comms[i]) == comms.begin() + i)
      issued(comms[i], "send/recv", *messages[i].group);
  if (!stagedBytes)
    return;
  wait();
  for (size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].sending && offsets[i] != kNoStaging)
      checkCuda(cudaMemcpyAsync(messages[i].buf, deviceBuffer(i),
                                messages[i].count * elementBytes(messages[i].dtype),
                                cudaMemcpyDeviceToHost, stream_),
                "recv: copying the output from the GPU");
  checkCuda(cudaStreamSynchronize(stream_), "recv: copying the output from the GPU");
}

char *NcclBackend::staging(size_t bytes) {
  if (bytes <= stagingBytes_)
    return staging_;
  // Grown geometrically, so that a run of growing calls reallocates rarely.
  size_t grown = std::max(bytes, 2 * stagingBytes_);
  if (staging_)
    checkCuda(cudaFree(staging_), "cudaFree");
  staging_ = nullptr;
  stagingBytes_ = 0;
  checkCuda(cudaMalloc(&staging_, grown),
            "cudaMalloc of " + std::to_string(grown) + " bytes to stage host buffers");
  stagingBytes_ = grown;
  return staging_;
}

template <typename Enqueue>
void NcclBackend::run(const char *what, const Group &group, const void *in, size_t inBytes,
                      void *out, size_t outBytes, Enqueue enqueue) {
  ncclComm_t comm = commOf(group);
  bool stageIn = inBytes && isHost(in);
  bool stageOut = outBytes && isHost(out);
  if (!stageIn && !stageOut) {
    enqueue(comm, in, out);
    issued(comm, what, group);
    return;
  }
  // The stream is drained first, under the timeout: a copy between the
  // device and pageable memory may wait for the stream, and that wait has
  // no limit.
  wait();
  bool inPlace = stageIn && in == out;
  size_t inRegion = stageIn ? (inPlace ? std::max(inBytes, outBytes) : inBytes) : 0;
  size_t outOffset = (inRegion + 255) / 256 * 256;
  char *base = staging(outOffset + (stageOut && !inPlace ? outBytes : 0));
  const void *deviceIn = in;
  void *deviceOut = out;
  if (stageIn) {
    checkCuda(cudaMemcpyAsync(base, in, inBytes, cudaMemcpyHostToDevice, stream_),
              std::string(what) + ": copying the input to the GPU");
    deviceIn = base;
  }
  if (stageOut)
    deviceOut = inPlace ? base : base + outOffset;
  enqueue(comm, deviceIn, deviceOut);
  issued(comm, what, group);
  wait();
  if (stageOut) {
    std::string copying = std::string(what) + ": copying the output from the GPU";
    checkCuda(cudaMemcpyAsync(out, deviceOut, outBytes, cudaMemcpyDeviceToHost, stream_), copying);
    checkCuda(cudaStreamSynchronize(stream_), copying);
  }
}

} // namespace

std::unique_ptr<CollectiveBackend> pmlir::rt::createNcclBackend(std::string &error) {
  // Ranks on this host, and this one's index among them. Every rank takes
  // part in the exchange below even when it has no GPU, so that none waits
  // for one that gave up.
  MPI_Comm host;
  checkMpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host),
           "MPI_Comm_split_type");
  int local = 0, locals = 0;
  MPI_Comm_rank(host, &local);
  MPI_Comm_size(host, &locals);
  int devices = 0;
  cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    cudaGetLastError();
    error = std::string("the NCCL backend needs a GPU: ") +
            (rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device");
  }
  // Rank i of a host takes visible device i mod the visible count: all of
  // them where each rank sees one GPU (CUDA_VISIBLE_DEVICES per rank), one
  // each where every rank sees them all.
  int device = devices > 0 ? local % devices : -1;
  unsigned char uuid[16] = {};
  if (error.empty()) {
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, device) != cudaSuccess)
      error = "cudaGetDeviceProperties failed for device " + std::to_string(device);
    else
      std::memcpy(uuid, properties.uuid.bytes, sizeof(uuid));
  }
  std::vector<unsigned char> uuids(sizeof(uuid) * static_cast<size_t>(locals));
  checkMpi(MPI_Allgather(uuid, sizeof(uuid), MPI_BYTE, uuids.data(), sizeof(uuid), MPI_BYTE, host),
           "MPI_Allgather");
  MPI_Comm_free(&host);
  if (!error.empty())
    return nullptr;
  // Two ranks on one physical GPU are refused (NCCL would fail later with
  // less to say), unless a test asks for it: with a distinct NCCL_HOSTID per
  // rank NCCL then treats the ranks as hosts of their own.
  const char *shared = std::getenv("PMLIR_RT_NCCL_SHARED_GPU");
  if (!(shared && std::string(shared) == "1"))
    for (int other = 0; other < locals; ++other)
      if (other != local && std::memcmp(&uuids[sizeof(uuid) * other], uuid, sizeof(uuid)) == 0) {
        error = "local ranks " + std::to_string(std::min(local, other)) + " and " +
                std::to_string(std::max(local, other)) + " of this host (" +
                std::to_string(locals) + " ranks, " + std::to_string(devices) +
                " visible GPUs) would share one GPU: the NCCL backend needs one GPU per rank";
        return nullptr;
      }
  if ((rc = cudaSetDevice(device)) != cudaSuccess) {
    error = "cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(rc);
    return nullptr;
  }
  cudaStream_t stream = nullptr;
  if ((rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
    error = std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorString(rc);
    return nullptr;
  }
  return std::make_unique<NcclBackend>(device, stream);
}
