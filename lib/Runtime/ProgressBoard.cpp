//===- ProgressBoard.cpp - Which rank a hung job waits for ---------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "ProgressBoard.h"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace pmlir::rt;

namespace {
// The collectives a row can name (an index into this table, so that a
// row holds no pointer into another process).
constexpr const char *kWhat[] = {"(none)",    "all_reduce", "all_gather", "gather",
                                 "reduce_scatter", "all_to_all", "broadcast", "send",
                                 "recv",      "barrier",    "the end of the run"};
constexpr int64_t kNumWhat = sizeof(kWhat) / sizeof(kWhat[0]);

int64_t whatIndex(const char *what) {
  for (int64_t i = 1; i < kNumWhat; ++i)
    if (std::strcmp(kWhat[i], what) == 0)
      return i;
  return 0;
}
} // namespace

/// One rank's progress. Lock-free atomics of a fixed layout, shared
/// between processes.
struct ProgressBoard::Row {
  std::atomic<int64_t> started;
  std::atomic<int64_t> inMask;     // mask + 1 of the collective it is in; 0 if none
  std::atomic<int64_t> inWhat;     // index into kWhat
  std::atomic<int64_t> entered[1 << kMaxAxes];
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "rows are shared between processes");

std::unique_ptr<ProgressBoard> ProgressBoard::open(int64_t rank, int64_t ranks) {
  const char *job = std::getenv("OMPI_MCA_ess_base_jobid");
  if (!job)
    job = std::getenv("PMIX_NAMESPACE");
  if (!job || ranks <= 0 || rank < 0 || rank >= ranks)
    return nullptr;
  std::unique_ptr<ProgressBoard> board(new ProgressBoard());
  board->name = "/pmlir-" + std::string(job);
  for (size_t i = 1; i < board->name.size(); ++i)
    if (board->name[i] == '/')
      board->name[i] = '_';
  board->numRanks = ranks;
  board->bytes = sizeof(Row) * static_cast<size_t>(ranks);
  // Every rank of the host creates or opens the same object and sizes it
  // alike; new pages read as zero.
  int fd = shm_open(board->name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return nullptr;
  if (ftruncate(fd, static_cast<off_t>(board->bytes)) != 0) {
    ::close(fd);
    return nullptr;
  }
  void *memory = mmap(nullptr, board->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (memory == MAP_FAILED)
    return nullptr;
  board->rows = static_cast<Row *>(memory);
  board->mapped = true;
  return board;
}

std::unique_ptr<ProgressBoard> ProgressBoard::inMemory(int64_t ranks) {
  std::unique_ptr<ProgressBoard> board(new ProgressBoard());
  board->numRanks = ranks;
  board->owned.reset(new Row[ranks]());
  board->rows = board->owned.get();
  return board;
}

ProgressBoard::~ProgressBoard() {
  if (mapped)
    munmap(rows, bytes);
}

void ProgressBoard::unlinkName() {
  if (mapped && !name.empty())
    shm_unlink(name.c_str());
}

ProgressBoard::Row &ProgressBoard::row(int64_t rank) const { return rows[rank]; }

void ProgressBoard::markStarted(int64_t rank) { row(rank).started.store(1); }

int64_t ProgressBoard::enter(int64_t rank, unsigned mask, const char *what) {
  Row &r = row(rank);
  int64_t sequence = 0;
  if (mask < (1u << kMaxAxes))
    sequence = r.entered[mask].fetch_add(1) + 1;
  r.inWhat.store(whatIndex(what));
  r.inMask.store(static_cast<int64_t>(mask) + 1);
  return sequence;
}

void ProgressBoard::leave(int64_t rank) { row(rank).inMask.store(0); }

std::string ProgressBoard::whereIs(int64_t member, unsigned mask) const {
  if (member < 0 || member >= numRanks || !row(member).started.load())
    return "rank " + std::to_string(member) + " is not visible (not started on this host)";
  const Row &r = row(member);
  if (int64_t in = r.inMask.load())
    return "rank " + std::to_string(member) + " waits in " +
           kWhat[r.inWhat.load() % kNumWhat] +
           (static_cast<unsigned>(in - 1) == mask ? " of this group" : " of another group");
  return "rank " + std::to_string(member) + " is computing";
}

std::string ProgressBoard::notArrived(const std::vector<int64_t> &members, unsigned mask,
                                      int64_t sequence) const {
  std::string missing, unknown;
  for (int64_t member : members) {
    if (member < 0 || member >= numRanks)
      continue;
    const Row &r = row(member);
    if (!r.started.load()) {
      // No row: it never started, or it runs on another host.
      unknown += (unknown.empty() ? "" : ", ") + std::to_string(member);
      continue;
    }
    if (mask == 0 || mask >= (1u << kMaxAxes))
      continue;
    int64_t reached = r.entered[mask].load();
    if (reached >= sequence)
      continue;
    std::string where;
    if (int64_t in = r.inMask.load())
      where = "; it waits in " + std::string(kWhat[r.inWhat.load() % kNumWhat]) +
              (in - 1 == mask ? " #" + std::to_string(reached) + " of this group"
                              : " of another group");
    else
      where = "; it is computing";
    missing += (missing.empty() ? "" : ", ") + std::string("rank ") + std::to_string(member) +
               " (last here: #" + std::to_string(reached) + where + ")";
  }
  std::string text;
  if (!missing.empty())
    text = "did not arrive: " + missing;
  if (!unknown.empty())
    text += (text.empty() ? "" : "; ") + std::string("not started on this host: rank") +
            (unknown.find(',') != std::string::npos ? "s " : " ") + unknown +
            " (a hung start-up, or a rank of another host)";
  return text;
}
