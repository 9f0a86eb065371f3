//===- MpiBackend.cpp - Collectives on host buffers over MPI --------------===//
//
// Part of pmlir.
//
// Each call is MPI's collective on the group's communicator, under the
// watchdog (Waiting) and the host's wait policy (mpiCall), and returns
// complete. bf16 and f16 travel as 2-byte MPI_UINT16_T; their reductions
// are user-defined MPI operations that compute in f32 and round back to the
// nearest even (HalfFloat.h), as MPI has no 16-bit float types.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Groups.h"
#include "HalfFloat.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

using namespace pmlir::rt;

namespace {

int mpiCount(int64_t count, const char *what) {
  if (count < 0 || count > INT_MAX)
    failWith(std::string(what) + ": element count " + std::to_string(count) +
             " is outside [0, 2^31)");
  return static_cast<int>(count);
}

MPI_Datatype mpiType(pmlir_rt_dtype dtype) {
  switch (dtype) {
  case PMLIR_RT_F32:
    return MPI_FLOAT;
  case PMLIR_RT_F64:
    return MPI_DOUBLE;
  case PMLIR_RT_I32:
    return MPI_INT32_T;
  case PMLIR_RT_I64:
    return MPI_INT64_T;
  case PMLIR_RT_BF16:
  case PMLIR_RT_F16:
    return MPI_UINT16_T;
  }
  failWith("unknown element type " + std::to_string(int(dtype)));
}

struct Sum {
  float operator()(float a, float b) const { return a + b; }
};
struct Max {
  float operator()(float a, float b) const { return std::max(a, b); }
};
struct Min {
  float operator()(float a, float b) const { return std::min(a, b); }
};
struct Product {
  float operator()(float a, float b) const { return a * b; }
};

/// inout[i] = in[i] op inout[i] on 16-bit floats, through f32.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), typename Op>
void reduce16(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = Store(Op()(Load(a[i]), Load(b[i])));
}

class MpiBackend final : public CollectiveBackend {
public:
  MpiBackend() {
    createOps<bf16ToFloat, floatToBf16>(bf16Ops);
    createOps<f16ToFloat, floatToF16>(f16Ops);
  }
  ~MpiBackend() override {
    for (MPI_Op *ops : {bf16Ops, f16Ops})
      for (int i = 0; i < kReductions; ++i)
        MPI_Op_free(&ops[i]);
  }

  const char *name() const override { return "mpi"; }

  void allReduce(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                 pmlir_rt_reduction op, const Group &group) override {
    Waiting waiting("all_reduce", group);
    const void *in = send == recv ? MPI_IN_PLACE : send;
    int n = mpiCount(count, "all_reduce");
    MPI_Datatype type = mpiType(dtype);
    MPI_Op mop = mpiOp(op, dtype);
    mpiCall(
        "all_reduce", [&] { return MPI_Allreduce(in, recv, n, type, mop, group.comm); },
        [&](MPI_Request *r) { return MPI_Iallreduce(in, recv, n, type, mop, group.comm, r); });
  }

  void allGather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                 const Group &group) override {
    Waiting waiting("all_gather", group);
    int n = mpiCount(count, "all_gather");
    MPI_Datatype type = mpiType(dtype);
    mpiCall(
        "all_gather", [&] { return MPI_Allgather(send, n, type, recv, n, type, group.comm); },
        [&](MPI_Request *r) {
          return MPI_Iallgather(send, n, type, recv, n, type, group.comm, r);
        });
  }

  void gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype, int root,
              const Group &group) override {
    Waiting waiting("gather", group);
    int n = mpiCount(count, "gather");
    MPI_Datatype type = mpiType(dtype);
    mpiCall(
        "gather", [&] { return MPI_Gather(send, n, type, recv, n, type, root, group.comm); },
        [&](MPI_Request *r) {
          return MPI_Igather(send, n, type, recv, n, type, root, group.comm, r);
        });
  }

  void reduceScatter(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                     pmlir_rt_reduction op, const Group &group) override {
    Waiting waiting("reduce_scatter", group);
    int n = mpiCount(count, "reduce_scatter");
    MPI_Datatype type = mpiType(dtype);
    MPI_Op mop = mpiOp(op, dtype);
    mpiCall(
        "reduce_scatter",
        [&] { return MPI_Reduce_scatter_block(send, recv, n, type, mop, group.comm); },
        [&](MPI_Request *r) {
          return MPI_Ireduce_scatter_block(send, recv, n, type, mop, group.comm, r);
        });
  }

  void allToAll(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                const Group &group) override {
    Waiting waiting("all_to_all", group);
    int n = mpiCount(count, "all_to_all");
    MPI_Datatype type = mpiType(dtype);
    mpiCall(
        "all_to_all", [&] { return MPI_Alltoall(send, n, type, recv, n, type, group.comm); },
        [&](MPI_Request *r) { return MPI_Ialltoall(send, n, type, recv, n, type, group.comm, r); });
  }

  void allToAllV(const void *send, const int64_t *sendCounts, const int64_t *sendOffsets,
                 void *recv, const int64_t *recvCounts, const int64_t *recvOffsets,
                 pmlir_rt_dtype dtype, const Group &group) override {
    Waiting waiting("all_to_all", group);
    const int64_t *given[4] = {sendCounts, sendOffsets, recvCounts, recvOffsets};
    std::vector<int> counts[4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < group.size; ++j)
        counts[i].push_back(mpiCount(given[i][j], "all_to_all"));
    MPI_Datatype type = mpiType(dtype);
    mpiCall(
        "all_to_all",
        [&] {
          return MPI_Alltoallv(send, counts[0].data(), counts[1].data(), type, recv,
                               counts[2].data(), counts[3].data(), type, group.comm);
        },
        [&](MPI_Request *r) {
          return MPI_Ialltoallv(send, counts[0].data(), counts[1].data(), type, recv,
                                counts[2].data(), counts[3].data(), type, group.comm, r);
        });
  }

  void broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype, int root,
                 const Group &group) override {
    Waiting waiting("broadcast", group);
    int n = mpiCount(count, "broadcast");
    MPI_Datatype type = mpiType(dtype);
    mpiCall(
        "broadcast", [&] { return MPI_Bcast(buf, n, type, root, group.comm); },
        [&](MPI_Request *r) { return MPI_Ibcast(buf, n, type, root, group.comm, r); });
  }

  /// Buffered: the data is copied and the send returns at once, so that a
  /// pipeline schedule's sends never wait for their receivers (a rank
  /// sends the next stage its activations while that stage still sends
  /// gradients back); wait() and later sends complete the copies.
  void send(const void *buf, int64_t count, pmlir_rt_dtype dtype, int peer, int64_t tag,
            const Group &group) override {
    int n = mpiCount(count, "send"), t = static_cast<int>(tag);
    reapSends();
    PendingSend &pending = sends.emplace_back();
    const auto *bytes = static_cast<const uint8_t *>(buf);
    pending.data.assign(bytes, bytes + count * elementBytes(dtype));
    checkMpi(
        MPI_Isend(pending.data.data(), n, mpiType(dtype), peer, t, group.comm, &pending.request),
        "send");
  }

  void wait() override {
    for (PendingSend &pending : sends)
      completeMpi(pending.request, "send");
    sends.clear();
  }

  void recv(void *buf, int64_t count, pmlir_rt_dtype dtype, int peer, int64_t tag,
            const Group &group) override {
    Waiting waiting("recv", &group, peer);
    int n = mpiCount(count, "recv"), t = static_cast<int>(tag);
    MPI_Datatype type = mpiType(dtype);
    mpiCall(
        "recv", [&] { return MPI_Recv(buf, n, type, peer, t, group.comm, MPI_STATUS_IGNORE); },
        [&](MPI_Request *r) { return MPI_Irecv(buf, n, type, peer, t, group.comm, r); });
  }

private:
  struct PendingSend {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<uint8_t> data;
  };
  /// Buffered sends in flight, oldest first.
  std::deque<PendingSend> sends;

  /// Frees the copies of sends that have completed.
  void reapSends() {
    while (!sends.empty()) {
      int done = 0;
      checkMpi(MPI_Test(&sends.front().request, &done, MPI_STATUS_IGNORE), "send");
      if (!done)
        return;
      sends.pop_front();
    }
  }

  static constexpr int kReductions = 4; // sum, max, min, product, by code

  template <float (*Load)(uint16_t), uint16_t (*Store)(float)> static void createOps(MPI_Op *ops) {
    checkMpi(MPI_Op_create(reduce16<Load, Store, Sum>, 1, &ops[PMLIR_RT_SUM]), "MPI_Op_create");
    checkMpi(MPI_Op_create(reduce16<Load, Store, Max>, 1, &ops[PMLIR_RT_MAX]), "MPI_Op_create");
    checkMpi(MPI_Op_create(reduce16<Load, Store, Min>, 1, &ops[PMLIR_RT_MIN]), "MPI_Op_create");
    checkMpi(MPI_Op_create(reduce16<Load, Store, Product>, 1, &ops[PMLIR_RT_PRODUCT]),
             "MPI_Op_create");
  }

  MPI_Op mpiOp(pmlir_rt_reduction op, pmlir_rt_dtype dtype) const {
    if (dtype == PMLIR_RT_BF16 || dtype == PMLIR_RT_F16)
      return (dtype == PMLIR_RT_BF16 ? bf16Ops : f16Ops)[op];
    switch (op) {
    case PMLIR_RT_SUM:
      return MPI_SUM;
    case PMLIR_RT_MAX:
      return MPI_MAX;
    case PMLIR_RT_MIN:
      return MPI_MIN;
    case PMLIR_RT_PRODUCT:
      return MPI_PROD;
    }
    failWith("unknown reduction " + std::to_string(int(op)));
  }

  // Indexed by reduction code (RuntimeAbi.def numbers them from 0).
  MPI_Op bf16Ops[kReductions];
  MPI_Op f16Ops[kReductions];
};

static_assert(PMLIR_RT_SUM == 0 && PMLIR_RT_MAX == 1 && PMLIR_RT_MIN == 2 && PMLIR_RT_PRODUCT == 3,
              "the 16-bit reductions are indexed by reduction code");

} // namespace

std::unique_ptr<CollectiveBackend> pmlir::rt::createMpiBackend() {
  return std::make_unique<MpiBackend>();
}
