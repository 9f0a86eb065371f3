//===- Groups.h - Process groups and waits shared by the backends -*- C++ -*-===//
//
// Part of pmlir.
//
// The runtime's core (Runtime.cpp) owns the mesh, one MPI communicator per
// group and the watchdog; the backends run their collectives on these
// groups, under the watchdog (MPI) or under the timeout it reads (NCCL),
// and the NCCL backend bootstraps its communicators over the MPI ones.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_GROUPS_H
#define PMLIR_LIB_RUNTIME_GROUPS_H

#include <mpi.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace pmlir::rt {

/// The first of the environment variables `names` that is set, as a number
/// (mpirun's OMPI_COMM_WORLD_*), else `fallback`.
int64_t environmentNumber(std::initializer_list<const char *> names, int64_t fallback);

/// The communicator of the group over an ordered axes list, and what error
/// messages call it.
struct Group {
  MPI_Comm comm;
  int size;
  std::string axes;             // "tp,dp" or "tp:(2)2"
  int64_t boardKey = 0;         // its kind on the progress board
  std::vector<int64_t> members; // world ranks, in group order
  /// The collectives this rank has issued on the group (counted by
  /// --check-collectives, whose messages name the call by it).
  mutable int64_t calls = 0;
};

/// This rank's group over `axes` (codes of mesh axes or parts of them,
/// SubAxis::code; the last fastest); ends the job naming `what` when the
/// list names no axis or part, or two that share devices. A group met for
/// the first time is made here by every rank together (MPI_Comm_split), as
/// every rank runs the same collectives. Groups never move once made.
const Group &groupOf(const int64_t *axes, int64_t numAxes, const char *what);

/// The group of every rank in the job.
const Group &everyone(const char *what);

/// This rank's place on the mesh: "pp 0, dp 1, tp 0" (the mesh's order).
std::string coordinatesText();

/// `index` as a member of `group` (a root or a peer), or the end of the job
/// with a message naming `what`.
int memberIndex(const Group &group, int64_t index, const char *what);

/// This rank's index in `group`.
int indexIn(const Group &group);

/// Prints "pmlir-run: rank R: message" and ends the whole job.
[[noreturn]] void failWith(const std::string &message);

/// Ends the job naming `what` unless `rc` is MPI_SUCCESS.
void checkMpi(int rc, const char *what);

/// Broadcasts `bytes` bytes at `data` from group member 0 to the others
/// over the group's MPI communicator, under the watchdog, and returns once
/// every member has it: a member that never comes ends the job, on every
/// member that came (the root too), with a message naming it.
void broadcastBytes(void *data, int bytes, const Group &group, const char *what);

/// pmlir_rt_init's collective timeout in seconds (<= 0: none).
double collectiveTimeout();

/// Marks the main thread as waiting in `what` on `group` (null: start-up)
/// for the watchdog, which ends the job past the timeout, and posts it to
/// the progress board. `peer`: the member a send or recv waits for;
/// collectives count on the board, point to point (which the other members
/// skip) does not.
class Waiting {
public:
  Waiting(const char *what, const Group *group, int64_t peer = -1);
  Waiting(const char *what, const Group &group) : Waiting(what, &group) {}
  ~Waiting();
  Waiting(const Waiting &) = delete;
  Waiting &operator=(const Waiting &) = delete;
};

/// Whether waits use MPI's blocking calls (false where the host runs more
/// ranks than cores, or with PMLIR_RT_SPIN_US: then they poll and sleep).
bool mpiBlockingWaits();

/// Completes `request`: busy-polls for the rank's spin time, then sleeps
/// between polls.
void completeMpi(MPI_Request &request, const char *what);

/// Runs an MPI call: `blocking()` (OpenMPI's tuned algorithms), or where
/// waits sleep its non-blocking twin `start(&request)`, completed by
/// completeMpi().
template <typename Blocking, typename Start>
void mpiCall(const char *what, Blocking blocking, Start start) {
  if (mpiBlockingWaits())
    return checkMpi(blocking(), what);
  MPI_Request request;
  checkMpi(start(&request), what);
  completeMpi(request, what);
}

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_GROUPS_H
