//===- Backend.h - The collectives of one backend behind one interface -*- C++ -*-===//
//
// Part of pmlir.
//
// pmlir_rt_init picks one backend, and every pmlir_rt_* collective goes to
// it after the runtime has resolved the group and checked the root or peer.
// A backend may return before a call completes (NCCL on device buffers);
// wait() completes everything issued so far. MPI is always built; NCCL where
// CMake found CUDA and NCCL (PMLIR_HAS_NCCL).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_BACKEND_H
#define PMLIR_LIB_RUNTIME_BACKEND_H

#include "pmlir/Runtime/Runtime.h"

#include "Groups.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pmlir::rt {

/// Bytes of one element of `dtype` (0 for a code outside RuntimeAbi.def).
inline size_t elementBytes(pmlir_rt_dtype dtype) {
  switch (dtype) {
#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE)                                                  \
  case PMLIR_RT_##ENUM:                                                                            \
    return sizeof(CTYPE);
#include "pmlir/Runtime/RuntimeAbi.def"
  }
  return 0;
}

/// A send (`sending`: `buf` is read) or receive (`buf` is written) of a
/// message group (pmlir_rt_message_group), its peer a member of `group`.
struct PointToPoint {
  bool sending = false;
  void *buf = nullptr;
  int64_t count = 0;
  pmlir_rt_dtype dtype = PMLIR_RT_F32;
  int peer = -1;
  int64_t tag = 0;
  const Group *group = nullptr;
};

/// The collectives of Runtime.h on a resolved group: `count` elements per
/// block, `root` and `peer` as members of the group (checked), the tag as
/// given.
class CollectiveBackend {
public:
  virtual ~CollectiveBackend() = default;
  /// "mpi", "nccl".
  virtual const char *name() const = 0;

  virtual void allReduce(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                         pmlir_rt_reduction op, const Group &group) = 0;
  virtual void allGather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                         const Group &group) = 0;
  virtual void gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype, int root,
                      const Group &group) = 0;
  virtual void reduceScatter(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                             pmlir_rt_reduction op, const Group &group) = 0;
  virtual void allToAll(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                        const Group &group) = 0;
  /// Member j gets `sendCounts[j]` elements of `send` from `sendOffsets[j]`
  /// and this member `recvCounts[j]` elements from member j into `recv`
  /// at `recvOffsets[j]`: an all-to-all of blocks of any size.
  virtual void allToAllV(const void *send, const int64_t *sendCounts, const int64_t *sendOffsets,
                         void *recv, const int64_t *recvCounts, const int64_t *recvOffsets,
                         pmlir_rt_dtype dtype, const Group &group) = 0;
  virtual void broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype, int root,
                         const Group &group) = 0;
  virtual void send(const void *buf, int64_t count, pmlir_rt_dtype dtype, int peer, int64_t tag,
                    const Group &group) = 0;
  virtual void recv(void *buf, int64_t count, pmlir_rt_dtype dtype, int peer, int64_t tag,
                    const Group &group) = 0;

  /// The sends and receives of one message group, issued together: none of
  /// them waits for another of the group to complete. Here: the sends, which
  /// never wait for their receivers (a backend whose sends wait overrides
  /// this), then the receives, each in program order.
  virtual void exchange(const std::vector<PointToPoint> &messages) {
    for (const PointToPoint &m : messages)
      if (m.sending)
        send(m.buf, m.count, m.dtype, m.peer, m.tag, *m.group);
    for (const PointToPoint &m : messages)
      if (!m.sending)
        recv(m.buf, m.count, m.dtype, m.peer, m.tag, *m.group);
  }

  /// Returns when every call issued so far is complete, or ends the job.
  virtual void wait() {}
  /// The CUDA device and stream (cudaStream_t) of device collectives.
  virtual int device() const { return -1; }
  virtual void *stream() const { return nullptr; }
};

/// Collectives on host buffers over each group's MPI communicator. Call
/// once MPI is up.
std::unique_ptr<CollectiveBackend> createMpiBackend();

/// Collectives over NCCL, or null with the cause in `error`. Collective
/// over the world: every rank calls it once MPI is up. Defined only in
/// builds with NCCL.
std::unique_ptr<CollectiveBackend> createNcclBackend(std::string &error);

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_BACKEND_H
