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
  std::atomic<int64_t> inKey;  // the group kind of the collective it is in; 0 if none
  std::atomic<int64_t> inWhat; // index into kWhat
  // Collectives entered per group kind: the kinds in the order the rank
  // first met them, the key written before its count (only the row's own
  // rank writes; others read).
  struct Count {
    std::atomic<int64_t> key;
    std::atomic<int64_t> entered;
  } counts[kMaxGroupKinds];

  /// The count of `key`, or null: with `claim`, a fresh one for a new key
  /// while there is room.
  std::atomic<int64_t> *countOf(int64_t key, bool claim) {
    for (Count &c : counts) {
      int64_t k = c.key.load();
      if (k == key)
        return &c.entered;
      if (k == 0) {
        if (!claim)
          return nullptr;
        c.key.store(key);
        return &c.entered;
      }
    }
    return nullptr;
  }
  int64_t entered(int64_t key) const {
    for (const Count &c : counts)
      if (c.key.load() == key)
        return c.entered.load();
    return 0;
  }
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

int64_t ProgressBoard::enter(int64_t rank, int64_t key, const char *what, bool counted) {
  Row &r = row(rank);
  int64_t sequence = 0;
  if (counted)
    if (std::atomic<int64_t> *count = r.countOf(key, /*claim=*/true))
      sequence = count->fetch_add(1) + 1;
  r.inWhat.store(whatIndex(what));
  r.inKey.store(key);
  return sequence;
}

void ProgressBoard::leave(int64_t rank) { row(rank).inKey.store(0); }

std::string ProgressBoard::whereIs(int64_t member, int64_t key) const {
  if (member < 0 || member >= numRanks || !row(member).started.load())
    return "rank " + std::to_string(member) + " is not visible (not started on this host)";
  const Row &r = row(member);
  if (int64_t in = r.inKey.load())
    return "rank " + std::to_string(member) + " waits in " + kWhat[r.inWhat.load() % kNumWhat] +
           (in == key ? " of this group" : " of another group");
  return "rank " + std::to_string(member) + " is computing";
}

std::string ProgressBoard::notArrived(const std::vector<int64_t> &members, int64_t key,
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
    if (key == 0 || sequence == 0)
      continue;
    int64_t reached = r.entered(key);
    if (reached >= sequence)
      continue;
    std::string where;
    if (int64_t in = r.inKey.load())
      where = "; it waits in " + std::string(kWhat[r.inWhat.load() % kNumWhat]) +
              (in == key ? " #" + std::to_string(reached) + " of this group" : " of another group");
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
