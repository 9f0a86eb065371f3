//===- ScheduleTest.cpp - Pipeline schedules and their simulator ----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Schedule.h"

#include <gtest/gtest.h>

#include <set>

using namespace pmlir::pipe;

namespace {

Schedule build(ScheduleKind kind, int64_t p, int64_t v, int64_t m) {
  std::string error;
  std::optional<Schedule> s = buildSchedule(kind, p, v, m, error);
  EXPECT_TRUE(s) << error;
  EXPECT_TRUE(s && verifySchedule(*s, error)) << error;
  return s ? *s : Schedule();
}

TEST(ScheduleTest, ActionsPrintAndParseAsTorchDoes) {
  for (const char *text :
       {"0F0", "12B3", "1I0", "3W11", "0SEND_F2", "1RECV_F2", "2SEND_B0", "1RECV_B7"}) {
    std::optional<Action> a = Action::parse(text);
    ASSERT_TRUE(a) << text;
    EXPECT_EQ(a->str(), text);
  }
  EXPECT_EQ(Action::parse(" 1B2 ")->kind, ActionKind::Backward);
  for (const char *bad : {"", "F0", "0F", "0X1", "0F1x", "-1F0", "0SEND0", "0F-1"})
    EXPECT_FALSE(Action::parse(bad)) << bad;
}

TEST(ScheduleTest, GPipeAndOneFOneBBubbleIsTheFormula) {
  ActionCosts costs; // F = 1, B = I + W = 2
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 4}, {4, 8}, {4, 4}, {8, 16}, {4, 2}}) {
      Simulation sim = simulate(build(kind, p, 1, m), costs);
      ASSERT_FALSE(sim.deadlocked) << sim.deadlock;
      EXPECT_NEAR(sim.bubble, *formulaBubble(kind, p, 1, m, costs), 1e-12)
          << stringifyScheduleKind(kind).str() << " p=" << p << " m=" << m;
      EXPECT_DOUBLE_EQ(sim.makespan, (m + p - 1) * 3.0);
    }
}

TEST(ScheduleTest, InFlightMicrobatches) {
  ActionCosts costs;
  const int64_t p = 4, m = 8;
  Simulation gpipe = simulate(build(ScheduleKind::GPipe, p, 1, m), costs);
  Simulation oneF = simulate(build(ScheduleKind::OneFOneB, p, 1, m), costs);
  for (int64_t s = 0; s < p; ++s) {
    EXPECT_EQ(gpipe.peakInFlight[s], m);
    EXPECT_EQ(oneF.peakInFlight[s], p - s);
  }
  // Fewer microbatches than stages: all of them.
  Simulation few = simulate(build(ScheduleKind::OneFOneB, 4, 1, 2), costs);
  EXPECT_EQ(few.peakInFlight[0], 2);
}

TEST(ScheduleTest, InterleavingDividesTheBubbleByV) {
  const int64_t p = 4, m = 8;
  for (int64_t v : {2, 4}) {
    // Each of the v chunks on a rank is 1/v of the rank's layers.
    ActionCosts costs;
    costs.forward = 1.0 / v;
    costs.backwardInput = costs.backwardWeight = 1.0 / v;
    Simulation sim = simulate(build(ScheduleKind::Interleaved1F1B, p, v, m), costs);
    ASSERT_FALSE(sim.deadlocked) << sim.deadlock;
    EXPECT_NEAR(sim.bubble, *formulaBubble(ScheduleKind::Interleaved1F1B, p, v, m, costs), 1e-9)
        << "v=" << v;
    Simulation plain = simulate(build(ScheduleKind::OneFOneB, p, 1, m), ActionCosts());
    EXPECT_LT(sim.bubble, plain.bubble);
  }
  // With v = 1 it warms up deeper than 1F1B, to the same bubble.
  EXPECT_DOUBLE_EQ(simulate(build(ScheduleKind::Interleaved1F1B, 4, 1, 8), ActionCosts()).bubble,
                   simulate(build(ScheduleKind::OneFOneB, 4, 1, 8), ActionCosts()).bubble);
}

TEST(ScheduleTest, ZeroBubbleH1IsAThirdOfOneFOneB) {
  ActionCosts costs; // F = I = W = 1
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {4, 16}, {8, 24}}) {
    Simulation zb = simulate(build(ScheduleKind::ZeroBubbleH1, p, 1, m), costs);
    Simulation oneF = simulate(build(ScheduleKind::OneFOneB, p, 1, m), costs);
    ASSERT_FALSE(zb.deadlocked) << zb.deadlock;
    double zbIdle = zb.makespan - 3.0 * m, oneFIdle = oneF.makespan - 3.0 * m;
    EXPECT_NEAR(zbIdle / oneFIdle, 1.0 / 3, 1e-9) << "p=" << p << " m=" << m;
    EXPECT_NEAR(zb.bubble, *formulaBubble(ScheduleKind::ZeroBubbleH1, p, 1, m, costs), 1e-9);
    // Rank r holds r weight gradients back: p in flight on every rank,
    // 1F1B's deepest (rank 0's).
    for (int64_t s = 0; s < p; ++s)
      EXPECT_EQ(zb.peakInFlight[s], oneF.peakInFlight[0]) << "stage " << s;
  }
}

TEST(ScheduleTest, ForwardOnlyIsTheForwardsInOrder) {
  ActionCosts costs;
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1})
    for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 4}, {4, 8}, {4, 2}}) {
      Schedule s = build(kind, p, 1, m).forwardOnly();
      EXPECT_FALSE(s.hasBackward());
      std::string error;
      ASSERT_TRUE(verifySchedule(s, error)) << error;
      for (int64_t r = 0; r < p; ++r) {
        ASSERT_EQ(static_cast<int64_t>(s.actions[r].size()), m);
        for (int64_t k = 0; k < m; ++k)
          EXPECT_EQ(s.actions[r][k], (Action{r, ActionKind::Forward, k}));
      }
      // Each rank idles while the first microbatch fills the pipeline:
      // (p-1)/(m+p-1), the training formula with F alone.
      Simulation sim = simulate(s, costs);
      ASSERT_FALSE(sim.deadlocked) << sim.deadlock;
      EXPECT_NEAR(sim.bubble, double(p - 1) / double(m + p - 1), 1e-12);
      for (int64_t stage = 0; stage < p; ++stage)
        EXPECT_EQ(sim.peakInFlight[stage], 1);
    }
  // Interleaved: each rank's forwards keep the schedule's order, and a
  // forward-only CSV is accepted as it is.
  Schedule interleaved = build(ScheduleKind::Interleaved1F1B, 2, 2, 4).forwardOnly();
  EXPECT_EQ(interleaved.actions[0].size(), 8u);
  EXPECT_FALSE(simulate(interleaved, costs).deadlocked);
  std::string error;
  std::optional<Schedule> csv = parseScheduleCsv("0F0,0F1\n1F0,1F1\n", 2, 2, error);
  ASSERT_TRUE(csv) << error;
  EXPECT_TRUE(verifySchedule(*csv, error)) << error;
  EXPECT_FALSE(csv->hasBackward());
}

TEST(ScheduleTest, ZeroBubbleVRunsAV) {
  ActionCosts costs; // F = I = W = 1 per stage
  for (auto [p, m] : {std::pair<int64_t, int64_t>{2, 4}, {2, 8}, {4, 8}, {4, 16}, {8, 16}}) {
    Schedule v = build(ScheduleKind::ZeroBubbleV, p, 2, m);
    ASSERT_EQ(v.stages, 2 * p);
    for (int64_t r = 0; r < p; ++r) {
      EXPECT_EQ(v.rankOf(r), r);
      EXPECT_EQ(v.rankOf(2 * p - 1 - r), r);
    }
    Simulation sim = simulate(v, costs);
    ASSERT_FALSE(sim.deadlocked) << sim.deadlock << " p=" << p << " m=" << m;
    // Each rank idles the p-1 stage forwards the first microbatch takes to
    // reach the last rank, and no more: half of ZB-H1's (p-1)(F+I-W) on
    // stages of twice the work.
    double busy = 2.0 * m * 3;
    EXPECT_NEAR(sim.bubble, (p - 1) / (busy + p - 1), 1e-9) << "p=" << p << " m=" << m;
    Simulation h1 = simulate(build(ScheduleKind::ZeroBubbleH1, p, 1, m), costs);
    EXPECT_LT(sim.bubble, h1.bubble);
    // 1F1B's memory: the first rank keeps 2p microbatches of half-size
    // stages (p of 1F1B's), the last stage (on rank 0) one.
    EXPECT_EQ(sim.peakInFlight[0], std::min(2 * p, m));
    EXPECT_EQ(sim.peakInFlight[2 * p - 1], 1);
  }
  EXPECT_FALSE(formulaBubble(ScheduleKind::ZeroBubbleV, 4, 2, 8, costs));
  // Fewer microbatches than the V's depth: the schedule drops the missing
  // ones and still runs.
  EXPECT_FALSE(simulate(build(ScheduleKind::ZeroBubbleV, 4, 2, 3), costs).deadlocked);
  std::string error;
  EXPECT_FALSE(buildSchedule(ScheduleKind::ZeroBubbleV, 4, 1, 8, error));
  EXPECT_NE(error.find("zb-v runs two stages per rank"), std::string::npos) << error;
}

TEST(ScheduleTest, APlantedDeadlockNamesEachRank) {
  std::string error;
  std::optional<Schedule> s = parseScheduleCsv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", 2, 2, error);
  ASSERT_TRUE(s) << error;
  ASSERT_TRUE(verifySchedule(*s, error)) << error;
  Simulation sim = simulate(*s, ActionCosts());
  EXPECT_TRUE(sim.deadlocked);
  EXPECT_TRUE(sim.rankEnd.empty()); // no end to read
  EXPECT_NE(sim.deadlock.find("rank 0 waits at 0RECV_B0 for 1SEND_B0"), std::string::npos)
      << sim.deadlock;
  EXPECT_NE(sim.deadlock.find("rank 1 waits at 1RECV_F1 for 0SEND_F1"), std::string::npos)
      << sim.deadlock;
}

TEST(ScheduleTest, CsvRoundTripAndExplicitTransfers) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 1, 3).withTransfers();
  std::string error;
  ASSERT_TRUE(verifySchedule(s, error)) << error;
  std::string csv = printScheduleCsv(s);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,"
                                           "0RECV_B1,0B1,0RECV_B2,0B2");
  std::optional<Schedule> back = parseScheduleCsv(csv, 2, 3, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->actions, s.actions);
  EXPECT_EQ(simulate(*back, ActionCosts()).makespan, simulate(s, ActionCosts()).makespan);
}

/// Runs `s`'s transfers as NCCL runs pmlir's messages: a rank posts its
/// next transfers that follow each other as one group (pmlir-group-messages)
/// and goes on when each has met its other side, posted by the peer. The
/// ranks that never reach their last action, or none.
std::vector<int64_t> stuckWithMeetingSends(const Schedule &s) {
  auto isTransfer = [](const Action &a) { return !isCompute(a.kind); };
  // The action a transfer meets, on the peer's rank.
  auto meets = [&](const Action &a) {
    switch (a.kind) {
    case ActionKind::SendForward:
      return Action{a.stage + 1, ActionKind::RecvForward, a.microbatch};
    case ActionKind::SendBackward:
      return Action{a.stage - 1, ActionKind::RecvBackward, a.microbatch};
    case ActionKind::RecvForward:
      return Action{a.stage - 1, ActionKind::SendForward, a.microbatch};
    default:
      return Action{a.stage + 1, ActionKind::SendBackward, a.microbatch};
    }
  };
  std::vector<size_t> next(s.ranks, 0);
  // Each rank's posted group: [next, end of its run of transfers).
  auto groupEnd = [&](int64_t r) {
    size_t e = next[r];
    while (e < s.actions[r].size() && isTransfer(s.actions[r][e]))
      ++e;
    return e;
  };
  auto posted = [&](int64_t r, const Action &a) {
    for (size_t i = next[r], e = groupEnd(r); i < e; ++i)
      if (s.actions[r][i] == a)
        return true;
    return false;
  };
  std::set<std::string> met;
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < s.ranks; ++r) {
      // Compute runs; a group waits until each transfer in it has met.
      while (next[r] < s.actions[r].size() && !isTransfer(s.actions[r][next[r]])) {
        ++next[r];
        progress = true;
      }
      size_t e = groupEnd(r);
      bool all = e > next[r];
      for (size_t i = next[r]; i < e; ++i) {
        const Action &a = s.actions[r][i];
        Action other = meets(a);
        if (met.count(a.str()) || posted(s.rankOf(other.stage), other)) {
          met.insert(a.str());
          met.insert(other.str());
        } else {
          all = false;
        }
      }
      if (all) {
        next[r] = e;
        progress = true;
      }
    }
  }
  std::vector<int64_t> stuck;
  for (int64_t r = 0; r < s.ranks; ++r)
    if (next[r] < s.actions[r].size())
      stuck.push_back(r);
  return stuck;
}

TEST(ScheduleTest, MeetingTransfersNeverWaitForEachOther) {
  struct Case {
    ScheduleKind kind;
    int64_t p, v, m;
  };
  std::vector<Case> cases;
  for (int64_t p : {2, 3, 4})
    for (int64_t m : {p, 2 * p, 2 * p + 1}) {
      cases.push_back({ScheduleKind::GPipe, p, 1, m});
      cases.push_back({ScheduleKind::OneFOneB, p, 1, m});
      cases.push_back({ScheduleKind::ZeroBubbleH1, p, 1, m});
      cases.push_back({ScheduleKind::ZeroBubbleV, p, 2, m});
      if (m % p == 0)
        cases.push_back({ScheduleKind::Interleaved1F1B, p, 2, m});
    }
  bool someCrossed = false;
  for (const Case &c : cases) {
    Schedule built = build(c.kind, c.p, c.v, c.m);
    std::string name = stringifyScheduleKind(c.kind).str() + " p=" + std::to_string(c.p) +
                       " v=" + std::to_string(c.v) + " m=" + std::to_string(c.m);
    Schedule plain = built.withTransfers(), meeting = built.withMeetingTransfers(ActionCosts());
    someCrossed |= !stuckWithMeetingSends(plain).empty();
    std::string error;
    EXPECT_TRUE(verifySchedule(meeting, error)) << name << ": " << error;
    EXPECT_TRUE(stuckWithMeetingSends(meeting).empty()) << name << "\n"
                                                        << printScheduleCsv(meeting);
    for (int64_t r = 0; r < c.p; ++r) {
      // The same actions, the compute and the receives in their order;
      // each send after what it sends.
      auto without = [](const std::vector<Action> &list) {
        std::vector<Action> kept;
        for (const Action &a : list)
          if (a.kind != ActionKind::SendForward && a.kind != ActionKind::SendBackward)
            kept.push_back(a);
        return kept;
      };
      EXPECT_EQ(without(meeting.actions[r]), without(plain.actions[r])) << name;
      EXPECT_EQ(meeting.actions[r].size(), plain.actions[r].size()) << name;
    }
    // Placed where they are met, the sends cost the schedule no time.
    EXPECT_DOUBLE_EQ(simulate(meeting, ActionCosts()).makespan,
                     simulate(plain, ActionCosts()).makespan)
        << name;
  }
  // Sends right after their compute do wait for each other somewhere.
  EXPECT_TRUE(someCrossed);
}

TEST(ScheduleTest, BadSchedulesSayWhy) {
  std::string error;
  auto check = [&](const char *csv, int64_t stages, int64_t m, const char *expected) {
    std::optional<Schedule> s = parseScheduleCsv(csv, stages, m, error);
    if (s) {
      EXPECT_FALSE(verifySchedule(*s, error)) << csv;
    }
    EXPECT_NE(error.find(expected), std::string::npos) << csv << ": " << error;
  };
  check("0F0,0B0\n1F0,1B0\n", 2, 2, "no rank runs 0F1");
  check("0F0,0F0,0B0\n1F0,1B0\n", 2, 1, "runs 0F0 twice");
  // A stage lives on the first rank that runs it.
  check("0F0,1B0\n1F0,0B0\n", 2, 1, "rank 1 runs 1F0, but stage 1 lives on rank 0");
  check("0F0,0B0\n1F0,1B0,1F5\n", 2, 1, "microbatch 5 of 1");
  check("0F0,0B0\n1F0,1Q0\n", 2, 1, "'1Q0' is no action");
  check("0F0,0B0\n1F0,1B0\n2F0,2B0\n", 2, 1, "3 ranks, which do not divide the 2 stages");
  check("0F0,0I0,0W0,0B0\n1F0,1I0,1W0\n", 2, 1, "whole backward 0B0");
  check("0F0,0SEND_F0,0B0\n1F0,1B0\n", 2, 1, "which the schedule's other transfers need");
  check("", 2, 1, "no rank's actions");

  EXPECT_FALSE(buildSchedule(ScheduleKind::Interleaved1F1B, 4, 2, 6, error));
  EXPECT_NE(error.find("divisible by the 4 pipeline ranks"), std::string::npos) << error;
  EXPECT_FALSE(buildSchedule(ScheduleKind::OneFOneB, 4, 2, 8, error));
  EXPECT_NE(error.find("need interleaved-1f1b"), std::string::npos) << error;
  EXPECT_FALSE(buildSchedule(ScheduleKind::GPipe, 4, 1, 0, error));
  EXPECT_EQ(parseScheduleKind("zb-h1"), ScheduleKind::ZeroBubbleH1);
  EXPECT_FALSE(parseScheduleKind("zbh1"));
}

// What the planner reads of a simulation: each rank's end without the
// timeline, and the same run whether the schedule's transfers are made
// explicit before or by the simulator.
TEST(ScheduleTest, RankEndsWithoutTheTimeline) {
  ActionCosts costs;
  costs.transfer = 0.25;
  costs.stages = {{1, 2, 0.5}, {1.5, 1, 1}, {0.5, 0.5, 0.5}, {2, 1, 1}};
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1,
                    ScheduleKind::ZeroBubbleV}) {
    int64_t v = kind == ScheduleKind::ZeroBubbleV ? 2 : 1;
    Schedule schedule = build(kind, 4 / v, v, 6);
    schedule.placeStages();
    Simulation full = simulate(schedule, costs);
    Simulation brief = simulate(schedule.withTransfers(), costs, /*withTimeline=*/false);
    ASSERT_FALSE(full.deadlocked) << full.deadlock;
    EXPECT_TRUE(brief.timeline.empty());
    ASSERT_EQ(full.rankEnd.size(), static_cast<size_t>(schedule.ranks));
    EXPECT_EQ(full.rankEnd, brief.rankEnd) << stringifyScheduleKind(kind).str();
    EXPECT_EQ(full.makespan, brief.makespan);
    EXPECT_EQ(full.peakInFlight, brief.peakInFlight);
    std::vector<double> lastEnd(schedule.ranks, 0);
    for (const SimulatedAction &a : full.timeline)
      lastEnd[a.rank] = std::max(lastEnd[a.rank], a.end);
    EXPECT_EQ(lastEnd, full.rankEnd) << stringifyScheduleKind(kind).str();
    EXPECT_DOUBLE_EQ(*std::max_element(full.rankEnd.begin(), full.rankEnd.end()), full.makespan);
  }
}

} // namespace
