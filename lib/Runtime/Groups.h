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

namespace pmlir::rt {

/// The communicator of the group over an ordered axes list, and what error
/// messages call it.
struct Group {
  MPI_Comm comm;
  int size;
  std::string axes; // "tp,dp"
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

/// pmlir_rt_init's collective timeout in seconds (<= 0: none).
double collectiveTimeout();

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_GROUPS_H
