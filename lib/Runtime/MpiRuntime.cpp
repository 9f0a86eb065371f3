//===- MpiRuntime.cpp - The pmlir_rt_* C ABI over MPI ---------------------===//
//
// Part of pmlir.
//
// Collectives on host buffers over MPI. Every group of the mesh gets its
// communicator from MPI_Comm_split: at init for each set of axes in
// ascending order (so that ranks running different programs, as pipeline
// stages do, never have to agree on creating one later), and on first use
// for an axes list in another order. A watchdog thread ends the job when one
// collective waits longer than the timeout: a peer that hangs would
// otherwise hang every rank. It never calls MPI, so MPI needs no thread
// support beyond MPI_THREAD_FUNNELED.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"

#include "Groups.h"
#include "Mesh.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace pmlir::rt;

namespace {

struct State {
  std::unique_ptr<Mesh> mesh;
  int rank = 0;
  bool ownsMpi = false;
  std::map<std::vector<int64_t>, Group> groups;
  double timeoutSeconds = 0;
  std::thread watchdog;
  std::atomic<bool> stopping{false};
  // Set while a collective runs: its start (steady clock, ns), name and
  // group, for the watchdog (groups never move or change once made).
  std::atomic<int64_t> waitingSince{0};
  std::atomic<const char *> waitingIn{nullptr};
  std::atomic<const Group *> waitingOn{nullptr};
};

State *state = nullptr;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

[[noreturn]] void pmlir::rt::failWith(const std::string &message) {
  std::fprintf(stderr, "pmlir-run: rank %d: %s\n", state ? state->rank : -1,
               message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

namespace {

void check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  failWith(std::string(what) + " failed: " + std::string(text, length));
}

MPI_Datatype mpiType(pmlir_rt_dtype dtype) {
  switch (dtype) {
  case PMLIR_RT_F32: return MPI_FLOAT;
  case PMLIR_RT_F64: return MPI_DOUBLE;
  case PMLIR_RT_I32: return MPI_INT32_T;
  case PMLIR_RT_I64: return MPI_INT64_T;
  }
  failWith("unknown element type " + std::to_string(int(dtype)));
}

MPI_Op mpiOp(pmlir_rt_reduction op) {
  switch (op) {
  case PMLIR_RT_SUM: return MPI_SUM;
  case PMLIR_RT_MAX: return MPI_MAX;
  case PMLIR_RT_MIN: return MPI_MIN;
  case PMLIR_RT_PRODUCT: return MPI_PROD;
  }
  failWith("unknown reduction " + std::to_string(int(op)));
}

int mpiCount(int64_t count, const char *what) {
  if (count < 0 || count > INT_MAX)
    failWith(std::string(what) + ": element count " + std::to_string(count) +
             " is outside [0, 2^31)");
  return static_cast<int>(count);
}

std::string axesText(const std::vector<int64_t> &axes) {
  std::string text;
  for (int64_t a : axes)
    text += (text.empty() ? "" : ",") + state->mesh->axisNames()[a];
  return text.empty() ? "no axes" : text;
}

Group split(const std::vector<int64_t> &axes) {
  std::vector<int> list(axes.begin(), axes.end());
  Group group;
  check(MPI_Comm_split(MPI_COMM_WORLD,
                       static_cast<int>(state->mesh->groupColor(state->rank, list)),
                       static_cast<int>(state->mesh->indexInGroup(state->rank, list)),
                       &group.comm),
        "MPI_Comm_split");
  MPI_Comm_set_errhandler(group.comm, MPI_ERRORS_RETURN);
  MPI_Comm_size(group.comm, &group.size);
  group.axes = axesText(axes);
  return group;
}

} // namespace

const Group &pmlir::rt::groupOf(const int64_t *axes, int64_t numAxes, const char *what) {
  if (!state)
    std::fprintf(stderr, "pmlir-run: %s before pmlir_rt_init\n", what), std::_Exit(1);
  std::vector<int64_t> key(axes, axes + numAxes);
  int64_t n = static_cast<int64_t>(state->mesh->axisNames().size());
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] < 0 || key[i] >= n)
      failWith(std::string(what) + ": mesh axis " + std::to_string(key[i]) +
               " does not exist (the mesh has " + std::to_string(n) + ")");
    for (size_t j = 0; j < i; ++j)
      if (key[j] == key[i])
        failWith(std::string(what) + ": mesh axis '" +
                 state->mesh->axisNames()[key[i]] + "' listed twice");
  }
  auto it = state->groups.find(key);
  if (it == state->groups.end())
    it = state->groups.emplace(key, split(key)).first;
  return it->second;
}

int pmlir::rt::memberIndex(const Group &group, int64_t index, const char *what) {
  if (index < 0 || index >= group.size)
    failWith(std::string(what) + " " + std::to_string(index) + " is outside the group of " +
             std::to_string(group.size) + " ranks over " + group.axes);
  return static_cast<int>(index);
}

double pmlir::rt::collectiveTimeout() { return state ? state->timeoutSeconds : 0; }

namespace {

/// Marks a collective as waiting for the watchdog.
struct Waiting {
  Waiting(const char *what, const Group &group) {
    if (state->timeoutSeconds <= 0)
      return;
    state->waitingIn.store(what);
    state->waitingOn.store(&group);
    state->waitingSince.store(nowNs());
  }
  ~Waiting() { state->waitingSince.store(0); }
};

void watch() {
  while (!state->stopping.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int64_t since = state->waitingSince.load();
    if (since == 0 || (nowNs() - since) * 1e-9 < state->timeoutSeconds)
      continue;
    // The main thread is inside MPI: report and leave without touching MPI;
    // mpirun ends the other ranks when this one exits.
    std::fprintf(stderr,
                 "pmlir-run: rank %d: %s over %s waited more than %g s for the "
                 "rest of its group; ending the job\n",
                 state->rank, state->waitingIn.load(), state->waitingOn.load()->axes.c_str(),
                 state->timeoutSeconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

} // namespace

extern "C" int pmlir_rt_init(const char *meshSpec, const char *rankOrder,
                             double timeoutSeconds, char *error, size_t errorSize) {
  auto setError = [&](const std::string &message) {
    if (error && errorSize)
      std::snprintf(error, errorSize, "%s", message.c_str());
    return 1;
  };
  if (state)
    return setError("pmlir_rt_init called twice");
  std::string message;
  std::optional<Mesh> mesh = Mesh::parse(meshSpec ? meshSpec : "",
                                         rankOrder ? rankOrder : "", message);
  if (!mesh)
    return setError(message);

  int initialized = 0;
  MPI_Initialized(&initialized);
  bool ownsMpi = false;
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return setError("MPI_Init_thread failed");
    ownsMpi = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != mesh->numRanks())
    return setError("mesh '" + std::string(meshSpec) + "' has " +
                    std::to_string(mesh->numRanks()) + " ranks but the job has " +
                    std::to_string(size) + " (mpirun -np)");

  state = new State;
  state->mesh = std::make_unique<Mesh>(std::move(*mesh));
  state->rank = rank;
  state->ownsMpi = ownsMpi;
  state->timeoutSeconds = timeoutSeconds;
  // Every set of axes, ascending: created here, by all ranks together.
  int64_t n = static_cast<int64_t>(state->mesh->axisNames().size());
  for (int64_t subset = 1; subset < (int64_t(1) << n); ++subset) {
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < n; ++a)
      if (subset & (int64_t(1) << a))
        axes.push_back(a);
    state->groups.emplace(axes, split(axes));
  }
  if (timeoutSeconds > 0)
    state->watchdog = std::thread(watch);
  return 0;
}

extern "C" void pmlir_rt_finalize(void) {
  if (!state)
    return;
  state->stopping.store(true);
  if (state->watchdog.joinable())
    state->watchdog.join();
  for (auto &[axes, group] : state->groups)
    MPI_Comm_free(&group.comm);
  bool ownsMpi = state->ownsMpi;
  delete state;
  state = nullptr;
  if (ownsMpi)
    MPI_Finalize();
}

extern "C" int64_t pmlir_rt_rank(void) { return state ? state->rank : 0; }
extern "C" int64_t pmlir_rt_num_ranks(void) {
  return state ? state->mesh->numRanks() : 1;
}

extern "C" int64_t pmlir_rt_group_size(const int64_t *axes, int64_t numAxes) {
  return groupOf(axes, numAxes, "group_size").size;
}

extern "C" int64_t pmlir_rt_index_in_group(const int64_t *axes, int64_t numAxes) {
  int index = 0;
  MPI_Comm_rank(groupOf(axes, numAxes, "index_in_group").comm, &index);
  return index;
}

extern "C" int64_t pmlir_rt_coordinate(int64_t axis) {
  groupOf(&axis, 1, "coordinate");
  return state->mesh->coordinates(state->rank)[axis];
}

extern "C" void pmlir_rt_all_reduce(const void *send, void *recv, int64_t count,
                                    pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                    const int64_t *axes, int64_t numAxes) {
  const Group &group = groupOf(axes, numAxes, "all_reduce");
  Waiting waiting("all_reduce", group);
  check(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv,
                      mpiCount(count, "all_reduce"), mpiType(dtype), mpiOp(op), group.comm),
        "all_reduce");
}

extern "C" void pmlir_rt_all_gather(const void *send, void *recv, int64_t count,
                                    pmlir_rt_dtype dtype, const int64_t *axes,
                                    int64_t numAxes) {
  const Group &group = groupOf(axes, numAxes, "all_gather");
  Waiting waiting("all_gather", group);
  int n = mpiCount(count, "all_gather");
  check(MPI_Allgather(send, n, mpiType(dtype), recv, n, mpiType(dtype), group.comm),
        "all_gather");
}

extern "C" void pmlir_rt_gather(const void *send, void *recv, int64_t count,
                                pmlir_rt_dtype dtype, int64_t root, const int64_t *axes,
                                int64_t numAxes) {
  const Group &group = groupOf(axes, numAxes, "gather");
  int rootIndex = memberIndex(group, root, "gather: root");
  Waiting waiting("gather", group);
  int n = mpiCount(count, "gather");
  check(MPI_Gather(send, n, mpiType(dtype), recv, n, mpiType(dtype), rootIndex, group.comm),
        "gather");
}

extern "C" void pmlir_rt_reduce_scatter(const void *send, void *recv, int64_t count,
                                        pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                        const int64_t *axes, int64_t numAxes) {
  const Group &group = groupOf(axes, numAxes, "reduce_scatter");
  Waiting waiting("reduce_scatter", group);
  check(MPI_Reduce_scatter_block(send, recv, mpiCount(count, "reduce_scatter"),
                                 mpiType(dtype), mpiOp(op), group.comm),
        "reduce_scatter");
}

extern "C" void pmlir_rt_all_to_all(const void *send, void *recv, int64_t count,
                                    pmlir_rt_dtype dtype, const int64_t *axes,
                                    int64_t numAxes) {
  const Group &group = groupOf(axes, numAxes, "all_to_all");
  Waiting waiting("all_to_all", group);
  int n = mpiCount(count, "all_to_all");
  check(MPI_Alltoall(send, n, mpiType(dtype), recv, n, mpiType(dtype), group.comm),
        "all_to_all");
}

extern "C" void pmlir_rt_broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype,
                                   int64_t root, const int64_t *axes, int64_t numAxes) {
  const Group &group = groupOf(axes, numAxes, "broadcast");
  int rootIndex = memberIndex(group, root, "broadcast: root");
  Waiting waiting("broadcast", group);
  check(MPI_Bcast(buf, mpiCount(count, "broadcast"), mpiType(dtype),
                  rootIndex, group.comm),
        "broadcast");
}

extern "C" void pmlir_rt_send(const void *buf, int64_t count, pmlir_rt_dtype dtype,
                              int64_t peer, const int64_t *axes, int64_t numAxes,
                              int64_t tag) {
  const Group &group = groupOf(axes, numAxes, "send");
  Waiting waiting("send", group);
  check(MPI_Send(buf, mpiCount(count, "send"), mpiType(dtype), memberIndex(group, peer, "send: peer"),
                 static_cast<int>(tag), group.comm),
        "send");
}

extern "C" void pmlir_rt_recv(void *buf, int64_t count, pmlir_rt_dtype dtype,
                              int64_t peer, const int64_t *axes, int64_t numAxes,
                              int64_t tag) {
  const Group &group = groupOf(axes, numAxes, "recv");
  Waiting waiting("recv", group);
  check(MPI_Recv(buf, mpiCount(count, "recv"), mpiType(dtype), memberIndex(group, peer, "recv: peer"),
                 static_cast<int>(tag), group.comm, MPI_STATUS_IGNORE),
        "recv");
}

extern "C" void pmlir_rt_fail(const char *message) { failWith(message); }
