//===- Groups.h - Process groups shared by the runtime's backends -*- C++ -*-===//
//
// Part of pmlir.
//
// The MPI side of the runtime owns the mesh and one communicator per group;
// the NCCL backend bootstraps its communicators over them.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_GROUPS_H
#define PMLIR_LIB_RUNTIME_GROUPS_H

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pmlir::rt {

/// The communicator of the group over an ordered axes list, and what error
/// messages call it.
struct Group {
  MPI_Comm comm;
  int size;
  std::string axes;             // "tp,dp"
  unsigned mask = 0;            // the set of axes, bit i for mesh axis i
  std::vector<int64_t> members; // world ranks, in group order
};

/// This rank's group over `axes` (mesh axis indices, the last fastest);
/// ends the job naming `what` when the list is not a list of mesh axes.
/// Groups never move once made.
const Group &groupOf(const int64_t *axes, int64_t numAxes, const char *what);

/// `index` as a member of `group` (a root or a peer), or the end of the job
/// with a message naming `what`.
int memberIndex(const Group &group, int64_t index, const char *what);

/// Prints "pmlir-run: rank R: message" and ends the whole job.
[[noreturn]] void failWith(const std::string &message);

/// Broadcasts `bytes` bytes at `data` from group member 0 to the others
/// over the group's MPI communicator, under the watchdog: a member that
/// never comes ends the job with a message naming it.
void broadcastBytes(void *data, int bytes, const Group &group, const char *what);

/// pmlir_rt_init's collective timeout in seconds (<= 0: none).
double collectiveTimeout();

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_GROUPS_H
