//===- ProgressBoardTest.cpp - Naming the ranks a timed-out rank waits for -===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/ProgressBoard.h"

#include <gtest/gtest.h>

using namespace pmlir::rt;

TEST(ProgressBoard, NamesTheMembersThatDidNotArrive) {
  auto board = ProgressBoard::inMemory(4);
  for (int64_t r = 0; r < 4; ++r)
    board->markStarted(r);
  // Group {0, 1} of kind 1: rank 0 enters its second collective,
  // rank 1 has finished one and computes.
  EXPECT_EQ(board->enter(0, 1, "all_reduce"), 1);
  board->leave(0);
  EXPECT_EQ(board->enter(1, 1, "all_reduce"), 1);
  board->leave(1);
  EXPECT_EQ(board->enter(0, 1, "all_gather"), 2);
  EXPECT_EQ(board->notArrived({0, 1}, 1, 2),
            "did not arrive: rank 1 (last here: #1; it is computing)");
  // Rank 1 waits elsewhere: in a collective of another kind of group.
  board->enter(1, 2, "reduce_scatter");
  EXPECT_EQ(board->notArrived({0, 1}, 1, 2),
            "did not arrive: rank 1 (last here: #1; it waits in reduce_scatter of another "
            "group)");
  // Once it arrives, nobody is missing.
  board->leave(1);
  board->enter(1, 1, "all_gather");
  EXPECT_EQ(board->notArrived({0, 1}, 1, 2), "");
}

TEST(ProgressBoard, RanksThatNeverStartedAreNotVisible) {
  auto board = ProgressBoard::inMemory(3);
  board->markStarted(0);
  board->markStarted(2);
  EXPECT_EQ(board->notArrived({0, 1, 2}, 0, 0),
            "not started on this host: rank 1 (a hung start-up, or a rank of another host)");
  EXPECT_EQ(board->whereIs(1, 1), "rank 1 is not visible (not started on this host)");
  EXPECT_EQ(board->whereIs(2, 1), "rank 2 is computing");
  board->enter(2, 1, "recv");
  EXPECT_EQ(board->whereIs(2, 1), "rank 2 waits in recv of this group");
}

TEST(ProgressBoard, SequenceNumbersCountPerKindOfGroup) {
  auto board = ProgressBoard::inMemory(2);
  board->markStarted(0);
  board->markStarted(1);
  // Keys are any nonzero numbers (the runtime hashes the group's axes).
  const int64_t tp = int64_t(1) << 40, tpMinor = -5;
  EXPECT_EQ(board->enter(0, tp, "all_reduce"), 1);
  EXPECT_EQ(board->enter(0, tpMinor, "all_gather"), 1);
  EXPECT_EQ(board->enter(0, tp, "all_reduce"), 2);
  EXPECT_EQ(board->enter(1, tp, "all_reduce"), 1);
  EXPECT_EQ(board->notArrived({0, 1}, tp, 2),
            "did not arrive: rank 1 (last here: #1; it waits in all_reduce #1 of this group)");
  // A kind rank 1 never met counts as none reached.
  board->leave(1);
  EXPECT_EQ(board->notArrived({0, 1}, tpMinor, 1),
            "did not arrive: rank 1 (last here: #0; it is computing)");
  // Point to point is not counted.
  EXPECT_EQ(board->enter(0, tp, "send", /*counted=*/false), 0);
  EXPECT_EQ(board->enter(0, tp, "all_reduce"), 3);
  // Kinds past the row's table are not numbered.
  for (int64_t k = 1; k <= ProgressBoard::kMaxGroupKinds; ++k)
    board->enter(1, 1000 + k, "all_reduce");
  EXPECT_EQ(board->enter(1, 5000, "all_reduce"), 0);
}
