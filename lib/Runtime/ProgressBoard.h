//===- ProgressBoard.h - Which rank a hung job waits for ---------*- C++ -*-===//
//
// Part of pmlir.
//
// A rank that waits too long can only say that it waits; the rank that hung
// says nothing. So every rank posts its progress to a table in shared memory
// that the ranks of its host map (/dev/shm/pmlir-<job>): that it started,
// how many collectives it entered over each set of mesh axes, and which one
// it is in now. A timed-out rank reads its group members' rows and names
// those that did not reach the collective it waits in, by sequence number,
// and what they are doing instead. Ranks on other hosts have rows on their
// own host's table and are reported as not visible. As in PyTorch's
// desync report, counting per set of ranks works because every member of a
// group enters that group's collectives in the same order. A kind of group
// (a set of mesh axes or parts of axes) is a key that every rank computes
// alike from the set. Pure logic and
// POSIX shared memory: no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_PROGRESSBOARD_H
#define PMLIR_LIB_RUNTIME_PROGRESSBOARD_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pmlir::rt {

class ProgressBoard {
public:
  /// Collectives are counted for up to this many kinds of group per rank
  /// (a row holds a fixed table of them); those past it are not numbered.
  static constexpr int kMaxGroupKinds = 64;

  /// The board of this job on this host, from the launcher's environment
  /// (OpenMPI's job id and rank), or null outside mpirun. `rank` and
  /// `ranks` are the world rank and size.
  static std::unique_ptr<ProgressBoard> open(int64_t rank, int64_t ranks);
  /// A board in this process only (tests): every row is visible.
  static std::unique_ptr<ProgressBoard> inMemory(int64_t ranks);
  ~ProgressBoard();

  /// Removes the board's name; the mappings stay (call once every rank
  /// of the host has it open).
  void unlinkName();

  void markStarted(int64_t rank);
  /// Enters the next collective of the group kind `key` (not 0; what: its
  /// name, a string literal); returns its sequence number (1 for the
  /// first), or 0 when `counted` is false (point to point, which the other
  /// members skip) or the row has no room left for the kind.
  int64_t enter(int64_t rank, int64_t key, const char *what, bool counted = true);
  void leave(int64_t rank);

  /// A sentence on the `members` (world ranks) that are not in or past
  /// collective `sequence` of kind `key`, and where they are; empty when
  /// all are visible and arrived. With key 0, on those that never started.
  std::string notArrived(const std::vector<int64_t> &members, int64_t key, int64_t sequence) const;

  /// Where `member` is: in which collective, computing, or not visible.
  std::string whereIs(int64_t member, int64_t key) const;

private:
  struct Row;
  ProgressBoard() = default;
  Row &row(int64_t rank) const;

  Row *rows = nullptr;
  int64_t numRanks = 0;
  size_t bytes = 0;
  bool mapped = false;
  std::string name;
  std::unique_ptr<Row[]> owned;
};

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_PROGRESSBOARD_H
