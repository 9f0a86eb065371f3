//===- Runtime.cpp - The pmlir_rt_* C ABI: mesh, groups, watchdog, dispatch ===//
//
// Part of pmlir.
//
// MPI launches and bootstraps the ranks whatever the backend. Every group of
// the mesh gets its communicator from MPI_Comm_split: at init for each set
// of axes in ascending order (so that ranks running different programs, as
// pipeline stages do, never have to agree on creating one later), and on
// first use for an axes list in another order. The collectives resolve
// their group here and go to the backend pmlir_rt_init chose (Backend.h).
//
// A watchdog thread ends the job when start-up (MPI_Init, the group splits,
// the backend's start), one MPI collective, or the barrier that ends the
// run waits longer than the timeout: a peer that hangs would otherwise hang
// every rank. The message names the members that did not arrive, read from
// the host's progress board. The watchdog never calls MPI, so MPI needs no
// thread support beyond MPI_THREAD_FUNNELED.
//
// Where a host runs more ranks than cores, a wait busy-polls 100 us, then
// polls with short sleeps: MPI's unbounded busy polling would take the core
// from the very rank being waited for. Elsewhere the calls are MPI's
// blocking ones: non-blocking collectives advance only while polled, and
// sleeping between polls slowed large transfers several times over.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/GpuRuntime.h"

#include "Backend.h"
#include "Groups.h"
#include "ProgressBoard.h"
#include "Trace.h"
#include "pmlir/Support/Mesh.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace pmlir;
using namespace pmlir::rt;

namespace {

/// What the main thread waits in, for the watchdog: a collective of
/// `group` (null: start-up) with its sequence number over the group's axes.
struct Wait {
  const char *what = nullptr;
  const Group *group = nullptr;
  int64_t sequence = 0;
  int64_t peer = -1; // point to point: the other side's world rank
};

struct State {
  std::unique_ptr<Mesh> mesh;
  int rank = 0;
  int ranks = 1;
  bool ownsMpi = false;
  // How long a wait busy-polls before it sleeps between polls; < 0: MPI's
  // blocking calls, which never sleep.
  int64_t spinNs = -1;
  std::map<std::vector<int64_t>, Group> groups;
  std::unique_ptr<ProgressBoard> board;
  // Every rank's host (MPI's processor name), known after start-up: the
  // board shows only this host's ranks.
  std::vector<std::string> hostOf;
  double timeoutSeconds = 0;
  std::thread watchdog;
  std::atomic<bool> stopping{false};
  // Set while the main thread waits: since when (steady clock, ns; 0: not
  // waiting), and in what (written before `waitingSince`; groups never
  // move or change once made).
  std::atomic<int64_t> waitingSince{0};
  Wait waiting;
  // pmlir_rt_test_wrong_group: the all-reduce to misdirect, and the count.
  int64_t wrongGroupAt = 0, allReduces = 0;
  // pmlir_rt_check_collectives: each collective's fingerprint is compared
  // across its group before it runs; the fingerprints sent ahead of
  // messages, in flight (a deque: their addresses stay put).
  bool checkCollectives = false;
  int64_t tagUpperBound = 32767;
  std::deque<std::pair<MPI_Request, std::array<int64_t, 5>>> fingerprintsSent;
  // pmlir_rt_message_group: the group's messages still to come, and those
  // called so far (issued together when the last comes).
  int64_t messagesToCome = 0;
  std::vector<PointToPoint> messageGroup;
  // Made after the groups, destroyed before them.
  std::unique_ptr<CollectiveBackend> backend;
};

State *state = nullptr;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

[[noreturn]] void pmlir::rt::failWith(const std::string &message) {
  std::fprintf(stderr, "pmlir-run: rank %d: %s\n", state ? state->rank : -1, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

void pmlir::rt::checkMpi(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  failWith(std::string(what) + " failed: " + std::string(text, length));
}

int64_t pmlir::rt::environmentNumber(std::initializer_list<const char *> names, int64_t fallback) {
  for (const char *name : names)
    if (const char *value = std::getenv(name))
      return std::strtoll(value, nullptr, 10);
  return fallback;
}

namespace {

/// The parts of a valid axes list (groupOf checked it).
std::vector<SubAxis> partsOf(const std::vector<int64_t> &codes) {
  std::vector<SubAxis> parts;
  for (int64_t code : codes)
    parts.push_back(*state->mesh->axisOfCode(code));
  return parts;
}

std::string axesText(const std::vector<SubAxis> &parts) {
  std::string text;
  for (const SubAxis &part : parts)
    text += (text.empty() ? "" : ",") + state->mesh->nameOf(part);
  return text.empty() ? "no axes" : text;
}

/// The progress board's key of the group kind over `codes`: the same on
/// every rank, whatever order the axes are listed in (the order changes
/// the members' order, not the set); never 0.
int64_t boardKey(std::vector<int64_t> codes) {
  std::sort(codes.begin(), codes.end());
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (int64_t code : codes)
    for (int byte = 0; byte < 8; ++byte)
      hash = (hash ^ ((static_cast<uint64_t>(code) >> (8 * byte)) & 0xff)) * 1099511628211ull;
  return hash == 0 ? 1 : static_cast<int64_t>(hash);
}

Group split(const std::vector<int64_t> &codes) {
  std::vector<SubAxis> parts = partsOf(codes);
  Group group;
  group.boardKey = boardKey(codes);
  group.members = state->mesh->group(state->rank, parts);
  checkMpi(
      MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(state->mesh->groupColor(state->rank, parts)),
                     static_cast<int>(state->mesh->indexInGroup(state->rank, parts)), &group.comm),
      "MPI_Comm_split");
  MPI_Comm_set_errhandler(group.comm, MPI_ERRORS_RETURN);
  MPI_Comm_size(group.comm, &group.size);
  group.axes = axesText(parts);
  return group;
}

} // namespace

const Group &pmlir::rt::groupOf(const int64_t *axes, int64_t numAxes, const char *what) {
  if (!state)
    std::fprintf(stderr, "pmlir-run: %s before pmlir_rt_init\n", what), std::_Exit(1);
  std::vector<int64_t> key(axes, axes + numAxes);
  auto it = state->groups.find(key);
  if (it != state->groups.end())
    return it->second;
  const Mesh &mesh = *state->mesh;
  std::vector<SubAxis> parts;
  for (int64_t code : key) {
    std::optional<SubAxis> part = mesh.axisOfCode(code);
    if (!part)
      failWith(std::string(what) + ": axis code " + std::to_string(code) +
               " names no axis of the mesh, nor a part of one that divides it (the mesh has " +
               std::to_string(mesh.axisNames().size()) + " axes)");
    for (const SubAxis &other : parts)
      if (other.overlaps(*part))
        failWith(std::string(what) + ": mesh axes '" + mesh.nameOf(other) + "' and '" +
                 mesh.nameOf(*part) + "' share devices (an axis listed twice)");
    parts.push_back(*part);
  }
  return state->groups.emplace(key, split(key)).first->second;
}

const Group &pmlir::rt::everyone(const char *what) {
  std::vector<int64_t> all(state->mesh->axisNames().size());
  for (size_t a = 0; a < all.size(); ++a)
    all[a] = static_cast<int64_t>(a);
  return groupOf(all.data(), static_cast<int64_t>(all.size()), what);
}

std::string pmlir::rt::coordinatesText() {
  if (!state)
    return "";
  std::string text;
  std::vector<int64_t> coords = state->mesh->coordinates(state->rank);
  for (size_t a = 0; a < coords.size(); ++a)
    text += (a ? ", " : "") + state->mesh->axisNames()[a] + " " + std::to_string(coords[a]);
  return text;
}

int pmlir::rt::memberIndex(const Group &group, int64_t index, const char *what) {
  if (index < 0 || index >= group.size)
    failWith(std::string(what) + " " + std::to_string(index) + " is outside the group of " +
             std::to_string(group.size) + " ranks over " + group.axes);
  return static_cast<int>(index);
}

int pmlir::rt::indexIn(const Group &group) {
  int index = 0;
  MPI_Comm_rank(group.comm, &index);
  return index;
}

double pmlir::rt::collectiveTimeout() { return state ? state->timeoutSeconds : 0; }

pmlir::rt::Waiting::Waiting(const char *what, const Group *group, int64_t peer) {
  int64_t sequence = 0;
  if (state->board && group)
    sequence = state->board->enter(state->rank, group->boardKey, what, /*counted=*/peer < 0);
  if (state->timeoutSeconds <= 0)
    return;
  int64_t peerRank = peer >= 0 && group ? group->members[peer] : -1;
  state->waiting = Wait{what, group, sequence, peerRank};
  state->waitingSince.store(nowNs(), std::memory_order_release);
}

pmlir::rt::Waiting::~Waiting() {
  state->waitingSince.store(0);
  if (state->board)
    state->board->leave(state->rank);
}

bool pmlir::rt::mpiBlockingWaits() { return state->spinNs < 0; }

void pmlir::rt::completeMpi(MPI_Request &request, const char *what) {
  // Sleeps long enough that the scheduler runs the other rank, not the
  // waiter again at once (measured: 5 us sleeps lose what 20 us ones gain);
  // bench/oversubscribed.py measures the choice.
  int64_t start = nowNs();
  for (int sleeps = 0;;) {
    int done = 0;
    checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done)
      return;
    if (nowNs() - start >= state->spinNs)
      std::this_thread::sleep_for(std::chrono::microseconds(++sleeps < 100 ? 20 : 100));
  }
}

void pmlir::rt::broadcastBytes(void *data, int bytes, const Group &group, const char *what) {
  Waiting waiting(what, group);
  mpiCall(
      what, [&] { return MPI_Bcast(data, bytes, MPI_BYTE, 0, group.comm); },
      [&](MPI_Request *r) { return MPI_Ibcast(data, bytes, MPI_BYTE, 0, group.comm, r); });
  // The root's broadcast may return before any member has taken the data,
  // and the root would then wait for a missing member somewhere no watchdog
  // names it (inside ncclCommInitRank): every member, the root too, waits
  // here for the whole group.
  mpiCall(
      what, [&] { return MPI_Barrier(group.comm); },
      [&](MPI_Request *r) { return MPI_Ibarrier(group.comm, r); });
}

namespace {

/// Whether the board of this host shows `member`: it runs here, or the
/// hosts are not known yet (start-up).
bool onThisHost(int64_t member) {
  return state->hostOf.empty() || state->hostOf[member] == state->hostOf[state->rank];
}

/// The members of `members` that run on other hosts, host by host: "ranks
/// 2, 3 run on b, whose progress this host does not see"; empty if none.
std::string elsewhere(const std::vector<int64_t> &members) {
  std::map<std::string, std::vector<int64_t>> byHost;
  for (int64_t member : members)
    if (!onThisHost(member))
      byHost[state->hostOf[member]].push_back(member);
  std::string text;
  for (auto &[host, ranks] : byHost) {
    text += text.empty() ? "" : "; ";
    text += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i)
      text += (i ? ", " : "") + std::to_string(ranks[i]);
    text += (ranks.size() == 1 ? " runs on " : " run on ") + host +
            ", whose progress this host does not see";
  }
  return text;
}

/// Joins the parts of a message that are not empty with "; ".
std::string joined(std::initializer_list<std::string> parts) {
  std::string text;
  for (const std::string &part : parts)
    if (!part.empty())
      text += (text.empty() ? "" : "; ") + part;
  return text;
}

void watch() {
  while (!state->stopping.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int64_t since = state->waitingSince.load(std::memory_order_acquire);
    if (since == 0 || (nowNs() - since) * 1e-9 < state->timeoutSeconds)
      continue;
    // The main thread is inside MPI: report and leave without touching MPI;
    // mpirun ends the other ranks when this one exits.
    const Wait &wait = state->waiting;
    std::string what, who, awaited = wait.group ? "the rest of its group" : "the rest of the job";
    if (!wait.group) {
      what = std::string(wait.what) + " of the job's " + std::to_string(state->ranks) + " ranks";
      std::vector<int64_t> all(state->ranks);
      for (int64_t r = 0; r < state->ranks; ++r)
        all[r] = r;
      if (state->board)
        who = state->board->notArrived(all, 0, 0);
    } else if (wait.peer >= 0) {
      // A message: the one peer it waits for.
      awaited = "rank " + std::to_string(wait.peer);
      what = std::string(wait.what) + (std::string(wait.what) == "send" ? " to " : " from ") +
             awaited + " over " + wait.group->axes;
      if (!onThisHost(wait.peer))
        who = elsewhere({wait.peer});
      else if (state->board)
        who = state->board->whereIs(wait.peer, wait.group->boardKey);
    } else {
      what = std::string(wait.what) + (wait.sequence ? " #" + std::to_string(wait.sequence) : "") +
             " over " + wait.group->axes;
      std::vector<int64_t> here;
      for (int64_t member : wait.group->members)
        if (onThisHost(member))
          here.push_back(member);
      who =
          joined({state->board ? state->board->notArrived(here, wait.group->boardKey, wait.sequence)
                               : std::string(),
                  elsewhere(wait.group->members)});
    }
    std::fprintf(stderr,
                 "pmlir-run: rank %d: %s waited more than %g s for %s%s%s; ending the job\n",
                 state->rank, what.c_str(), state->timeoutSeconds, awaited.c_str(),
                 who.empty() ? "" : "; ", who.c_str());
    std::fflush(stderr);
    if (state->board && !wait.group)
      state->board->unlinkName(); // the job ends before the others would
    std::_Exit(1);
  }
}

/// The lowest rank of the job that `failed`, or -1 where none did: every
/// rank calls it. Without the timeout (no Waiting): a rank that failed
/// early waits for the others still starting, reading or compiling.
int firstFailedRank(bool failed, const char *what) {
  int mine = failed ? state->rank : INT_MAX, first = INT_MAX;
  mpiCall(
      what, [&] { return MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); },
      [&](MPI_Request *r) {
        return MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, r);
      });
  return first == INT_MAX ? -1 : first;
}

/// A rank and size from the launcher's environment, before MPI is up.
/// The backend `kind`, started on every rank, or a message: its own cause
/// on a rank where it failed, and that rank on the others. Collective over
/// the world, so that no rank goes on to collectives the others never
/// join.
std::string startBackend(pmlir_rt_backend kind) {
  std::string error;
  switch (kind) {
  case PMLIR_RT_BACKEND_MPI:
    state->backend = createMpiBackend();
    break;
  case PMLIR_RT_BACKEND_NCCL:
#ifdef PMLIR_HAS_NCCL
    state->backend = createNcclBackend(error);
#else
    error = "this build has no NCCL backend (CUDA and NCCL were not found at configure time)";
#endif
    break;
  default:
    error = "unknown backend " + std::to_string(int(kind)) + " (known: mpi, nccl)";
  }
  int first = firstFailedRank(!error.empty(), "start-up");
  if (first < 0)
    return "";
  state->backend.reset();
  if (!error.empty())
    return error;
  return std::string(kind == PMLIR_RT_BACKEND_NCCL ? "the NCCL" : "the") +
         " backend did not start on rank " + std::to_string(first);
}

} // namespace

/// Stops the watchdog, frees the groups and the state, and ends MPI where
/// the runtime started it: the end of a run, or a start-up every rank
/// failed alike.
static void tearDown() {
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

extern "C" int pmlir_rt_init(const pmlir_rt_mesh *meshAxes, double timeoutSeconds,
                             pmlir_rt_backend backend, char *error, size_t errorSize) {
  auto setError = [&](const std::string &message) {
    if (error && errorSize)
      std::snprintf(error, errorSize, "%s", message.c_str());
    return 1;
  };
  if (state)
    return setError("pmlir_rt_init called twice");
  if (!meshAxes || meshAxes->num_axes < 1 || !meshAxes->axis_names || !meshAxes->axis_sizes)
    return setError("pmlir_rt_init: no mesh (no axes)");
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<std::string> rankOrder;
  for (int i = 0; i < meshAxes->num_axes; ++i) {
    names.push_back(meshAxes->axis_names[i] ? meshAxes->axis_names[i] : "");
    sizes.push_back(meshAxes->axis_sizes[i]);
  }
  for (int i = 0; meshAxes->rank_order && i < meshAxes->num_axes; ++i) {
    int axis = meshAxes->rank_order[i];
    if (axis < 0 || axis >= meshAxes->num_axes)
      return setError("pmlir_rt_init: rank order names axis " + std::to_string(axis) + " of " +
                      std::to_string(meshAxes->num_axes));
    rankOrder.push_back(names[axis]);
  }
  std::string message;
  std::optional<Mesh> mesh = Mesh::create(names, sizes, rankOrder, message);
  if (!mesh)
    return setError(message);

  // Start-up waits for every rank (MPI_Init, the group splits, the
  // backend): under the watchdog too, with the board naming ranks that
  // never started.
  state = new State;
  state->mesh = std::make_unique<Mesh>(std::move(*mesh));
  state->rank =
      static_cast<int>(environmentNumber({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, 0));
  state->ranks = static_cast<int>(environmentNumber({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1));
  state->timeoutSeconds = timeoutSeconds;
  int64_t localRanks = environmentNumber({"OMPI_COMM_WORLD_LOCAL_SIZE"}, 1);
  // MPI's blocking calls, unless the host has more ranks than cores: then
  // busy-poll 100 us and sleep between polls after that.
  bool oversubscribed = localRanks > static_cast<int64_t>(std::thread::hardware_concurrency());
  int64_t spinUs = oversubscribed ? 100 : -1;
  if (const char *spin = std::getenv("PMLIR_RT_SPIN_US"))
    spinUs = std::atoll(spin);
  state->spinNs = spinUs < 0 ? -1 : spinUs * 1000;
  state->board = ProgressBoard::open(state->rank, state->ranks);
  if (state->board)
    state->board->markStarted(state->rank);
  if (timeoutSeconds > 0)
    state->watchdog = std::thread(watch);
  // The start-up wait ends (with its scope) before a failure tears the
  // state down.
  std::string failure = [&]() -> std::string {
    Waiting startUp("start-up", nullptr);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return "MPI_Init_thread failed";
      state->ownsMpi = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    state->rank = rank;
    if (size != state->mesh->numRanks())
      return "mesh '" + state->mesh->spec() + "' has " + std::to_string(state->mesh->numRanks()) +
             " ranks but the job has " + std::to_string(size) + " (mpirun -np)";
    if (size != state->ranks)
      state->board.reset(); // not the launcher's numbering: rows would lie
    state->ranks = size;
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(host, &length);
    std::vector<char> hosts(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
    if (MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME,
                      MPI_CHAR, MPI_COMM_WORLD) != MPI_SUCCESS)
      return "MPI_Allgather of the ranks' hosts failed";
    std::vector<std::string> hostOf;
    for (int r = 0; r < size; ++r)
      hostOf.emplace_back(hosts.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME,
                          strnlen(hosts.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME,
                                  MPI_MAX_PROCESSOR_NAME));
    state->hostOf = std::move(hostOf);
    // Every set of axes, ascending: created here, by all ranks together.
    // The empty one too (each rank alone: a pipeline rank gathering its
    // results on a mesh of pp alone).
    int64_t n = static_cast<int64_t>(state->mesh->axisNames().size());
    for (int64_t subset = 0; subset < (int64_t(1) << n); ++subset) {
      std::vector<int64_t> axes;
      for (int64_t a = 0; a < n; ++a)
        if (subset & (int64_t(1) << a))
          axes.push_back(a);
      state->groups.emplace(axes, split(axes));
    }
    return startBackend(backend);
  }();
  if (!failure.empty()) {
    // Every rank fails alike (the mesh is everyone's, and startBackend
    // agrees), so all can leave MPI cleanly.
    tearDown();
    return setError(failure);
  }
  // Every rank of the job has passed start-up, so has mapped the board.
  if (state->board && environmentNumber({"OMPI_COMM_WORLD_LOCAL_RANK"}, 0) == 0)
    state->board->unlinkName();
  return 0;
}

extern "C" void pmlir_rt_finalize(void) {
  if (!state)
    return;
  if (state->messagesToCome > 0)
    failWith("the program ends inside a message group: " + std::to_string(state->messagesToCome) +
             " of its sends and receives never came");
  state->backend->wait();
  for (auto &[request, fingerprint] : state->fingerprintsSent)
    checkMpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "send");
  state->fingerprintsSent.clear();
  // Every rank meets here before MPI_Finalize, which would wait without a
  // limit for a rank still busy (rank 0 checking or writing the output).
  {
    const Group &all = everyone("finalize");
    Waiting waiting("the end of the run", all);
    mpiCall(
        "the end of the run", [&] { return MPI_Barrier(all.comm); },
        [&](MPI_Request *r) { return MPI_Ibarrier(all.comm, r); });
  }
  pmlir_rt_gpu_shutdown();
  state->backend.reset();
  tearDown();
}

extern "C" void pmlir_rt_ready(void) {
  if (!state)
    return;
  // No Waiting: the watchdog's limit is for collectives, not compiles.
  const Group &all = everyone("ready");
  mpiCall(
      "ready", [&] { return MPI_Barrier(all.comm); },
      [&](MPI_Request *r) { return MPI_Ibarrier(all.comm, r); });
}

extern "C" int64_t pmlir_rt_first_failed_rank(int failed) {
  if (!state)
    return failed ? 0 : -1;
  return firstFailedRank(failed != 0, "first failed rank");
}

extern "C" int64_t pmlir_rt_rank(void) { return state ? state->rank : 0; }
extern "C" int64_t pmlir_rt_num_ranks(void) { return state ? state->mesh->numRanks() : 1; }

extern "C" void pmlir_rt_describe_hosts(char *text, size_t size) {
  if (size == 0)
    return;
  std::string description;
  std::vector<std::pair<std::string, std::vector<int>>> hosts; // in order of first rank
  for (int r = 0; state && r < static_cast<int>(state->hostOf.size()); ++r) {
    auto it = std::find_if(hosts.begin(), hosts.end(),
                           [&](const auto &host) { return host.first == state->hostOf[r]; });
    if (it == hosts.end())
      it = hosts.insert(hosts.end(), {state->hostOf[r], {}});
    it->second.push_back(r);
  }
  for (auto &[host, ranks] : hosts) {
    description +=
        (description.empty() ? "" : ", ") + host + (ranks.size() == 1 ? " (rank " : " (ranks ");
    for (size_t i = 0; i < ranks.size(); ++i)
      description += (i ? ", " : "") + std::to_string(ranks[i]);
    description += ")";
  }
  std::snprintf(text, size, "%s", description.c_str());
}

extern "C" int64_t pmlir_rt_group_size(const int64_t *axes, int64_t numAxes) {
  return groupOf(axes, numAxes, "group_size").size;
}

extern "C" int64_t pmlir_rt_index_in_group(const int64_t *axes, int64_t numAxes) {
  return indexIn(groupOf(axes, numAxes, "index_in_group"));
}

extern "C" int64_t pmlir_rt_coordinate(int64_t axis) {
  groupOf(&axis, 1, "coordinate");
  SubAxis part = *state->mesh->axisOfCode(axis);
  int64_t onAxis = state->mesh->coordinates(state->rank)[part.index];
  return part.coordinate(onAxis, state->mesh->axisSizes()[part.index]);
}

namespace {

/// The group over `axes` for collective `what`, once its element type and
/// count are known to be valid.
const Group &collectiveGroup(const char *what, int64_t count, pmlir_rt_dtype dtype,
                             const int64_t *axes, int64_t numAxes, bool message = false) {
  if (!message && state && state->messagesToCome > 0)
    failWith(std::string(what) + " called inside a message group, " +
             std::to_string(state->messagesToCome) +
             " of whose sends and receives are still to come (a group holds only those)");
  const Group &group = groupOf(axes, numAxes, what);
  if (elementBytes(dtype) == 0)
    failWith(std::string(what) + ": unknown element type " + std::to_string(int(dtype)));
  if (count < 0)
    failWith(std::string(what) + ": element count " + std::to_string(count) + " is negative");
  return group;
}

/// What a rank is about to issue (--check-collectives): the same on every
/// member of a group, or the program of some rank is not the others'.
struct Fingerprint {
  int64_t kind;   // index in kKinds
  int64_t dtype;  // pmlir_rt_dtype
  int64_t count;  // elements a member sends (a send's and its recv's alike)
  int64_t detail; // the reduction, the root, or the tag; -1: none
  int64_t call;   // the how-manieth collective on the group, from 1; 0 for a message
  bool operator==(const Fingerprint &o) const {
    return kind == o.kind && dtype == o.dtype && count == o.count && detail == o.detail &&
           call == o.call;
  }
};
/// What a fingerprint describes, and its name in messages.
enum CallKind : int64_t {
  AllReduce,
  AllGather,
  Gather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  Message
};
constexpr const char *kKinds[] = {"all_reduce", "all_gather", "gather",   "reduce_scatter",
                                  "all_to_all", "broadcast",  "send/recv"};
static_assert(std::size(kKinds) == Message + 1, "a name per call kind");
/// A message's fingerprint goes under its own tag plus this, so that it
/// pairs with its receive as the message does (by sender and tag); the
/// programs' tags stay below it.
constexpr int64_t kFingerprintTagBase = int64_t(1) << 20;

std::string ordinal(int64_t n) {
  const char *suffix = n % 100 / 10 == 1 ? "th"
                       : n % 10 == 1     ? "st"
                       : n % 10 == 2     ? "nd"
                       : n % 10 == 3     ? "rd"
                                         : "th";
  return std::to_string(n) + suffix;
}

std::string describe(const Fingerprint &f) {
  std::string dtype = "?";
  switch (f.dtype) {
#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE)                                                  \
  case CODE:                                                                                       \
    dtype = #SUFFIX;                                                                               \
    break;
#include "pmlir/Runtime/RuntimeAbi.def"
  }
  bool message = f.kind == Message;
  std::string text = (message ? std::string() : ordinal(f.call) + " collective there, ") +
                     (f.kind >= 0 && f.kind < int64_t(std::size(kKinds)) ? kKinds[f.kind] : "?") +
                     " of " + std::to_string(f.count) + " " + dtype;
  if (f.detail >= 0) {
    std::string what = message                                          ? "tag "
                       : f.kind == AllReduce || f.kind == ReduceScatter ? "reduction "
                                                                        : "root ";
    if (what == "reduction ") {
      switch (f.detail) {
#define PMLIR_RT_REDUCTION(ENUM, CODE, NAME)                                                       \
  case CODE:                                                                                       \
    what += #NAME;                                                                                 \
    break;
#include "pmlir/Runtime/RuntimeAbi.def"
      default:
        what += std::to_string(f.detail);
      }
    } else {
      what += std::to_string(f.detail);
    }
    text += " (" + what + ")";
  }
  return text;
}

/// --check-collectives before a collective of `group`: every member's
/// fingerprint to every member (one small all-gather over the group's MPI
/// communicator, under the watchdog), and a member whose fingerprint is
/// not member 0's ends the job naming both ranks and both collectives.
void agreeOnCollective(CallKind kind, const Group &group, int64_t count, pmlir_rt_dtype dtype,
                       int64_t detail) {
  if (!state->checkCollectives)
    return;
  const char *what = kKinds[kind];
  Fingerprint mine{kind, int64_t(dtype), count, detail, ++group.calls};
  std::vector<Fingerprint> all(group.size);
  {
    Waiting waiting(what, group);
    mpiCall(
        what,
        [&] {
          return MPI_Allgather(&mine, sizeof(Fingerprint), MPI_BYTE, all.data(),
                               sizeof(Fingerprint), MPI_BYTE, group.comm);
        },
        [&](MPI_Request *r) {
          return MPI_Iallgather(&mine, sizeof(Fingerprint), MPI_BYTE, all.data(),
                                sizeof(Fingerprint), MPI_BYTE, group.comm, r);
        });
  }
  if (mine == all[0])
    return;
  failWith("--check-collectives: ranks " + std::to_string(group.members[0]) + " and " +
           std::to_string(state->rank) + " disagree over " + group.axes + ": rank " +
           std::to_string(group.members[0]) + " issues its " + describe(all[0]) + ", rank " +
           std::to_string(state->rank) + " its " + describe(mine));
}

/// --check-collectives before a send (`sending`) or recv with member
/// `member`: the sender's fingerprint goes ahead of the message, without
/// waiting for the receiver (as a send need not), and the receiver ends
/// the job naming both where it is not its own. Messages count apart from
/// the group's collectives: only their two ends see them.
void agreeOnMessage(const Group &group, int member, bool sending, int64_t count,
                    pmlir_rt_dtype dtype, int64_t tag) {
  if (!state->checkCollectives)
    return;
  const char *what = sending ? "send" : "recv";
  int64_t tagUpperBound = state->tagUpperBound;
  if (tag < 0 || tag + kFingerprintTagBase > tagUpperBound)
    failWith(std::string("--check-collectives: a ") + what + " under tag " + std::to_string(tag) +
             " needs MPI tags up to " + std::to_string(tag + kFingerprintTagBase) +
             ", and this MPI allows " + std::to_string(tagUpperBound));
  int fingerprintTag = static_cast<int>(tag + kFingerprintTagBase);
  Fingerprint mine{Message, int64_t(dtype), count, tag, 0};
  if (sending) {
    // The sends that have completed are done with; the rest wait for
    // pmlir_rt_finalize.
    auto &sent = state->fingerprintsSent;
    while (!sent.empty()) {
      int done = 0;
      checkMpi(MPI_Test(&sent.front().first, &done, MPI_STATUS_IGNORE), what);
      if (!done)
        break;
      sent.pop_front();
    }
    sent.push_back({MPI_REQUEST_NULL, {mine.kind, mine.dtype, mine.count, mine.detail, 0}});
    checkMpi(MPI_Isend(sent.back().second.data(), 5, MPI_INT64_T, member, fingerprintTag,
                       group.comm, &sent.back().first),
             what);
    return;
  }
  std::array<int64_t, 5> received{};
  {
    Waiting waiting(what, &group, member);
    mpiCall(
        what,
        [&] {
          return MPI_Recv(received.data(), 5, MPI_INT64_T, member, fingerprintTag, group.comm,
                          MPI_STATUS_IGNORE);
        },
        [&](MPI_Request *r) {
          return MPI_Irecv(received.data(), 5, MPI_INT64_T, member, fingerprintTag, group.comm, r);
        });
  }
  Fingerprint theirs{received[0], received[1], received[2], received[3], received[4]};
  if (theirs == mine)
    return;
  failWith("--check-collectives: rank " + std::to_string(group.members[member]) + " sends a " +
           describe(theirs) + " over " + group.axes + ", and rank " + std::to_string(state->rank) +
           " receives a " + describe(mine));
}

void checkReduction(const char *what, pmlir_rt_reduction op) {
  switch (op) {
#define PMLIR_RT_REDUCTION(ENUM, CODE, NAME) case PMLIR_RT_##ENUM:
#include "pmlir/Runtime/RuntimeAbi.def"
    return;
  }
  failWith(std::string(what) + ": unknown reduction " + std::to_string(int(op)));
}

} // namespace

extern "C" void pmlir_rt_test_wrong_group(int64_t nth) {
  if (!state)
    std::fprintf(stderr, "pmlir-run: test_wrong_group before pmlir_rt_init\n"), std::_Exit(1);
  state->wrongGroupAt = nth;
  state->allReduces = 0;
}

extern "C" void pmlir_rt_check_collectives(int on) {
  if (!state)
    std::fprintf(stderr, "pmlir-run: check_collectives before pmlir_rt_init\n"), std::_Exit(1);
  state->checkCollectives = on != 0;
  // The largest tag MPI allows (at least 32767), which the fingerprints'
  // tags must stay under.
  int found = 0, *attribute = nullptr;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attribute, &found);
  state->tagUpperBound = found && attribute ? *attribute : 32767;
}

extern "C" void pmlir_rt_all_reduce(const void *send, void *recv, int64_t count,
                                    pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                    const int64_t *axes, int64_t numAxes) {
  if (state && state->wrongGroupAt > 0 && ++state->allReduces == state->wrongGroupAt)
    numAxes = 0;
  const Group &group = collectiveGroup("all_reduce", count, dtype, axes, numAxes);
  checkReduction("all_reduce", op);
  agreeOnCollective(AllReduce, group, count, dtype, op);
  TracedCall traced("all_reduce", group, count * int64_t(elementBytes(dtype)));
  state->backend->allReduce(send, recv, count, dtype, op, group);
}

extern "C" void pmlir_rt_all_gather(const void *send, void *recv, int64_t count,
                                    pmlir_rt_dtype dtype, const int64_t *axes, int64_t numAxes) {
  const Group &group = collectiveGroup("all_gather", count, dtype, axes, numAxes);
  agreeOnCollective(AllGather, group, count, dtype, -1);
  TracedCall traced("all_gather", group, count * int64_t(elementBytes(dtype)));
  state->backend->allGather(send, recv, count, dtype, group);
}

extern "C" void pmlir_rt_gather(const void *send, void *recv, int64_t count, pmlir_rt_dtype dtype,
                                int64_t root, const int64_t *axes, int64_t numAxes) {
  const Group &group = collectiveGroup("gather", count, dtype, axes, numAxes);
  agreeOnCollective(Gather, group, count, dtype, root);
  TracedCall traced("gather", group, count * int64_t(elementBytes(dtype)));
  state->backend->gather(send, recv, count, dtype, memberIndex(group, root, "gather: root"), group);
}

extern "C" void pmlir_rt_reduce_scatter(const void *send, void *recv, int64_t count,
                                        pmlir_rt_dtype dtype, pmlir_rt_reduction op,
                                        const int64_t *axes, int64_t numAxes) {
  const Group &group = collectiveGroup("reduce_scatter", count, dtype, axes, numAxes);
  checkReduction("reduce_scatter", op);
  agreeOnCollective(ReduceScatter, group, count, dtype, op);
  TracedCall traced("reduce_scatter", group, count * int64_t(elementBytes(dtype)));
  state->backend->reduceScatter(send, recv, count, dtype, op, group);
}

extern "C" void pmlir_rt_all_to_all(const void *send, void *recv, int64_t count,
                                    pmlir_rt_dtype dtype, const int64_t *axes, int64_t numAxes) {
  const Group &group = collectiveGroup("all_to_all", count, dtype, axes, numAxes);
  agreeOnCollective(AllToAll, group, count, dtype, -1);
  TracedCall traced("all_to_all", group, count * int64_t(elementBytes(dtype)));
  state->backend->allToAll(send, recv, count, dtype, group);
}

namespace {

/// Where a member of an expert-parallel group sends and receives: each
/// member's counts per expert (exchanged first), and in elements the blocks
/// it sends every member and receives from every member.
struct ExpertTraffic {
  int n = 0, me = 0;
  int64_t experts = 0, local = 0, width = 0;
  std::vector<int64_t> all; // [n, experts]
  std::vector<int64_t> sendCounts, sendOffsets, recvCounts, recvOffsets;

  /// Rows of expert `e` of this member's that member `q` sends.
  int64_t rowsFrom(int q, int64_t e) const { return all[q * experts + me * local + e]; }
};

ExpertTraffic expertTraffic(const char *what, const Group &group, const int64_t *counts,
                            int64_t experts, int64_t width) {
  if (state->backend->device() >= 0)
    failWith(std::string(what) + ": expert parallelism runs on the CPU (the experts have no GPU "
                                 "lowering yet)");
  ExpertTraffic t;
  t.n = group.size;
  t.me = int(indexIn(group));
  t.experts = experts;
  t.width = width;
  if (experts <= 0 || experts % t.n != 0)
    failWith(std::string(what) + ": " + std::to_string(experts) + " experts over " +
             std::to_string(t.n) + " members of " + group.axes +
             " (each member holds experts / members whole experts)");
  t.local = experts / t.n;
  t.all.resize(t.n * experts);
  // Dropless: how much each member receives is data, so the counts go first.
  agreeOnCollective(AllGather, group, experts, PMLIR_RT_I64, -1);
  {
    TracedCall traced("all_gather", group, experts * int64_t(sizeof(int64_t)));
    state->backend->allGather(counts, t.all.data(), experts, PMLIR_RT_I64, group);
  }
  int64_t sent = 0, received = 0;
  for (int q = 0; q < t.n; ++q) {
    int64_t out = 0, in = 0;
    for (int64_t e = 0; e < t.local; ++e) {
      out += counts[q * t.local + e];
      in += t.rowsFrom(q, e);
    }
    t.sendOffsets.push_back(sent * width);
    t.sendCounts.push_back(out * width);
    t.recvOffsets.push_back(received * width);
    t.recvCounts.push_back(in * width);
    sent += out;
    received += in;
  }
  for (int64_t c : t.all)
    if (c < 0)
      failWith(std::string(what) + ": a member's count of rows is negative (" + std::to_string(c) +
               ")");
  return t;
}

/// Copies between the received blocks (by sender, each by expert) and the
/// rows by expert, then by sender: `toExperts` from the first to the
/// second. Returns the rows of this member's experts.
int64_t reorderExpertRows(const ExpertTraffic &t, char *bySender, char *byExpert,
                          size_t elementSize, bool toExperts) {
  size_t rowBytes = t.width * elementSize;
  std::vector<int64_t> next(t.n);
  for (int q = 0; q < t.n; ++q)
    next[q] = t.recvOffsets[q] / std::max<int64_t>(t.width, 1);
  int64_t row = 0;
  for (int64_t e = 0; e < t.local; ++e)
    for (int q = 0; q < t.n; ++q) {
      int64_t rows = t.rowsFrom(q, e);
      char *a = bySender + next[q] * rowBytes, *b = byExpert + row * rowBytes;
      if (rows > 0)
        std::memcpy(toExperts ? b : a, toExperts ? a : b, rows * rowBytes);
      next[q] += rows;
      row += rows;
    }
  return row;
}

} // namespace

extern "C" void pmlir_rt_moe_all_to_all(const void *rows, void *received, int64_t rowElements,
                                        const int64_t *counts, int64_t experts,
                                        int64_t *expertCounts, int64_t capacity,
                                        pmlir_rt_dtype dtype, const int64_t *axes,
                                        int64_t numAxes) {
  const Group &group = collectiveGroup("moe_all_to_all", rowElements, dtype, axes, numAxes);
  ExpertTraffic t = expertTraffic("moe_all_to_all", group, counts, experts, rowElements);
  int64_t total = t.recvOffsets.back() + t.recvCounts.back();
  if (total > capacity * rowElements)
    failWith("moe_all_to_all: " + std::to_string(total / std::max<int64_t>(rowElements, 1)) +
             " rows arrive for room for " + std::to_string(capacity));
  size_t size = elementBytes(dtype);
  std::vector<char> bySender(total * size);
  agreeOnCollective(AllToAll, group, rowElements, dtype, -1);
  {
    TracedCall traced("all_to_all", group,
                      (t.sendOffsets.back() + t.sendCounts.back()) * int64_t(size));
    state->backend->allToAllV(rows, t.sendCounts.data(), t.sendOffsets.data(), bySender.data(),
                              t.recvCounts.data(), t.recvOffsets.data(), dtype, group);
  }
  char *out = static_cast<char *>(received);
  int64_t got = reorderExpertRows(t, bySender.data(), out, size, /*toExperts=*/true);
  std::memset(out + got * rowElements * size, 0, (capacity - got) * rowElements * size);
  for (int64_t e = 0; e < t.local; ++e) {
    expertCounts[e] = 0;
    for (int q = 0; q < t.n; ++q)
      expertCounts[e] += t.rowsFrom(q, e);
  }
}

extern "C" void pmlir_rt_moe_all_to_all_back(const void *received, void *rows, int64_t rowElements,
                                             const int64_t *counts, int64_t experts,
                                             pmlir_rt_dtype dtype, const int64_t *axes,
                                             int64_t numAxes) {
  const Group &group = collectiveGroup("moe_all_to_all_back", rowElements, dtype, axes, numAxes);
  ExpertTraffic t = expertTraffic("moe_all_to_all_back", group, counts, experts, rowElements);
  size_t size = elementBytes(dtype);
  std::vector<char> bySender((t.recvOffsets.back() + t.recvCounts.back()) * size);
  reorderExpertRows(t, bySender.data(), static_cast<char *>(const_cast<void *>(received)), size,
                    /*toExperts=*/false);
  agreeOnCollective(AllToAll, group, rowElements, dtype, -1);
  TracedCall traced("all_to_all", group,
                    (t.recvOffsets.back() + t.recvCounts.back()) * int64_t(size));
  // The way the rows came, backwards: what came from a member goes to it.
  state->backend->allToAllV(bySender.data(), t.recvCounts.data(), t.recvOffsets.data(), rows,
                            t.sendCounts.data(), t.sendOffsets.data(), dtype, group);
}

extern "C" void pmlir_rt_broadcast(void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t root,
                                   const int64_t *axes, int64_t numAxes) {
  const Group &group = collectiveGroup("broadcast", count, dtype, axes, numAxes);
  agreeOnCollective(Broadcast, group, count, dtype, root);
  TracedCall traced("broadcast", group, count * int64_t(elementBytes(dtype)));
  state->backend->broadcast(buf, count, dtype, memberIndex(group, root, "broadcast: root"), group);
}

namespace {

/// The message group's sends and receives, issued together once its last
/// has come: the sends' fingerprints go out before any receive's is waited
/// for, as no message of the group waits for another.
void issueMessageGroup() {
  std::vector<PointToPoint> messages = std::move(state->messageGroup);
  state->messageGroup.clear();
  for (bool sending : {true, false})
    for (const PointToPoint &m : messages)
      if (m.sending == sending)
        agreeOnMessage(*m.group, m.peer, sending, m.count, m.dtype, m.tag);
  std::vector<std::unique_ptr<TracedCall>> traced;
  for (const PointToPoint &m : messages)
    traced.push_back(std::make_unique<TracedCall>(
        m.sending ? "send" : "recv", *m.group, m.count * int64_t(elementBytes(m.dtype)), m.peer));
  state->backend->exchange(messages);
}

/// A send or receive: issued now, or held for its message group.
void message(bool sending, void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
             const int64_t *axes, int64_t numAxes, int64_t tag) {
  const char *what = sending ? "send" : "recv";
  const Group &group = collectiveGroup(what, count, dtype, axes, numAxes, /*message=*/true);
  int member = memberIndex(group, peer, sending ? "send: peer" : "recv: peer");
  if (state->messagesToCome > 0) {
    state->messageGroup.push_back({sending, buf, count, dtype, member, tag, &group});
    if (--state->messagesToCome == 0)
      issueMessageGroup();
    return;
  }
  agreeOnMessage(group, member, sending, count, dtype, tag);
  TracedCall traced(what, group, count * int64_t(elementBytes(dtype)), member);
  if (sending)
    state->backend->send(buf, count, dtype, member, tag, group);
  else
    state->backend->recv(buf, count, dtype, member, tag, group);
}

} // namespace

extern "C" void pmlir_rt_send(const void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
                              const int64_t *axes, int64_t numAxes, int64_t tag) {
  // Only read: the backends take one pointer type for both directions.
  message(/*sending=*/true, const_cast<void *>(buf), count, dtype, peer, axes, numAxes, tag);
}

extern "C" void pmlir_rt_recv(void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer,
                              const int64_t *axes, int64_t numAxes, int64_t tag) {
  message(/*sending=*/false, buf, count, dtype, peer, axes, numAxes, tag);
}

extern "C" void pmlir_rt_message_group(int64_t count) {
  if (!state)
    std::fprintf(stderr, "pmlir-run: message_group before pmlir_rt_init\n"), std::_Exit(1);
  if (count < 1)
    failWith("message_group: a group of " + std::to_string(count) +
             " messages; a group holds at least one");
  if (state->messagesToCome > 0)
    failWith("message_group of " + std::to_string(count) + " called inside another, " +
             std::to_string(state->messagesToCome) + " of whose messages are still to come");
  state->messagesToCome = count;
}

extern "C" void pmlir_rt_wait(void) {
  if (state)
    state->backend->wait();
}

extern "C" int pmlir_rt_device(void) { return state ? state->backend->device() : -1; }
extern "C" void *pmlir_rt_stream(void) { return state ? state->backend->stream() : nullptr; }

extern "C" void pmlir_rt_fail(const char *message) { failWith(message); }

namespace {

/// The step metrics added since they were last cleared, by (kind, index).
/// Only the rank's own thread runs its program's calls.
std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> &stepMetrics() {
  static std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> metrics;
  return metrics;
}

} // namespace

extern "C" void pmlir_rt_step_metric(int64_t kind, int64_t index, const int64_t *values,
                                     int64_t count) {
  std::vector<int64_t> here(static_cast<size_t>(std::max<int64_t>(count, 0)));
  // A GPU program's buffers are device memory.
  if (*pmlir_rt_gpu_chip() != '\0')
    pmlir_rt_gpu_copy_to_host(here.data(), values, here.size() * sizeof(int64_t));
  else
    std::copy(values, values + here.size(), here.begin());
  std::vector<int64_t> &sums = stepMetrics()[{kind, index}];
  if (sums.empty())
    sums.assign(here.size(), 0);
  if (sums.size() != here.size())
    failWith("step metric " + std::to_string(kind) + " #" + std::to_string(index) + ": " +
             std::to_string(here.size()) + " values added to " + std::to_string(sums.size()));
  for (size_t i = 0; i < here.size(); ++i)
    sums[i] += here[i];
}

extern "C" int64_t pmlir_rt_step_metric_values(int64_t kind, int64_t index, int64_t *values,
                                               int64_t capacity) {
  auto it = stepMetrics().find({kind, index});
  if (it == stepMetrics().end())
    return 0;
  const std::vector<int64_t> &sums = it->second;
  std::copy_n(sums.begin(), std::min<int64_t>(capacity, static_cast<int64_t>(sums.size())), values);
  return static_cast<int64_t>(sums.size());
}

extern "C" void pmlir_rt_clear_step_metrics(void) { stepMetrics().clear(); }
