//===- Schedule.h - Pipeline schedules as per-rank action lists -*- C++ -*-===//
//
// Part of pmlir.
//
// A pipeline schedule in torch.distributed.pipelining's terms: for each
// pipeline rank, the list of actions it runs in order, each an action kind
// on one stage and one microbatch ("1F3" runs stage 1's forward on
// microbatch 3). A stage lives on the rank whose list runs it: rank s mod
// ranks in the generated loop schedules (with v virtual stages per rank,
// rank r holds stages r, r + ranks, ...: Megatron's interleaving), ranks r
// and 2 ranks - 1 - r in a V (ZB-V). Plain C++: the generators, the CSV
// reader and writer, the checks and the simulator are shared by the
// passes, pmlir-run and tests.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PIPELINING_SCHEDULE_H
#define PMLIR_PIPELINING_SCHEDULE_H

#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// ActionKind (F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B) and ScheduleKind
// (none, gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, csv), with their
// stringify* and symbolize*: PipeEnums.td.
#include "pmlir/Dialect/Pipe/IR/PipeEnums.h.inc"

namespace pmlir::pipe {

/// Forward, backward, input gradient or weight gradient: a fragment's
/// work, as against a transfer.
bool isCompute(ActionKind kind);

struct Action {
  int64_t stage = 0;
  ActionKind kind = ActionKind::Forward;
  int64_t microbatch = 0;

  /// "<stage><kind><microbatch>", e.g. "0F1", "2SEND_B0".
  std::string str() const;
  /// Parses str()'s format; nullopt on anything else.
  static std::optional<Action> parse(std::string_view text);
  bool operator==(const Action &o) const {
    return stage == o.stage && kind == o.kind && microbatch == o.microbatch;
  }
};

// A ScheduleKind says how a program's stages are scheduled on the pipeline
// ranks: not at all (None), by one of the generators (buildSchedule), or as
// a CSV file of actions says (Csv, parseScheduleCsv).

/// A generator's kind by its name (none and csv are no generators).
std::optional<ScheduleKind> parseScheduleKind(std::string_view name);
/// Whether buildSchedule builds schedules of `kind`.
bool isGenerated(ScheduleKind kind);
/// Whether the generator's schedules of `kind` split each backward into
/// input and weight gradients (I and W: the zero-bubble ones), so that a
/// forward-only program has nothing of theirs to run.
bool splitsBackward(ScheduleKind kind);

/// The alternatives of an option that picks a schedule, each with its
/// name.
llvm::cl::ValuesClass scheduleKindValues();

struct ActionCosts;

struct Schedule {
  int64_t ranks = 1;  ///< pipeline ranks (the pp axis' size)
  int64_t stages = 1; ///< ranks x virtual stages
  int64_t microbatches = 1;
  /// Each rank's actions, in the order it runs them.
  std::vector<std::vector<Action>> actions;
  /// The rank of each stage (placeStages()); empty: stage mod ranks.
  std::vector<int64_t> stageRanks;

  int64_t rankOf(int64_t stage) const {
    return stage >= 0 && stage < static_cast<int64_t>(stageRanks.size()) ? stageRanks[stage]
                                                                         : stage % ranks;
  }
  /// Places each stage on the first rank whose list runs it (stage mod
  /// ranks for a stage no list runs).
  void placeStages();
  /// Whether the backward is split into I and W.
  bool splitsBackward() const;
  /// Whether any rank runs a backward (B, I or W): a schedule without is a
  /// forward-only (inference) one.
  bool hasBackward() const;
  /// The schedule's forwards alone, in each rank's order: the inference
  /// schedule of a training schedule. Its transfers are those the forwards
  /// need.
  Schedule forwardOnly() const;
  /// Whether any rank's list holds a transfer (SEND or RECV).
  bool hasTransfers() const;
  /// The same schedule with its transfers made explicit: a SEND after each
  /// compute action whose output another rank reads and a RECV just before
  /// the compute action that reads it. Schedules that have them keep theirs.
  Schedule withTransfers() const;
  /// withTransfers(), with each SEND moved to where, on `costs` and with
  /// sends that never wait, its RECV is reached with the data there: after
  /// its compute action and no later than that meeting (the simulator's
  /// times stay what they were). Every rank then meets its
  /// messages in one order, that of the times they are met, so where a
  /// send waits for its receive (NCCL) no ranks wait for each other
  /// forever: the first message not yet met finds both its ranks past
  /// every earlier one. A schedule that already places its transfers, or
  /// that deadlocks, is returned as withTransfers() returns it.
  Schedule withMeetingTransfers(const ActionCosts &costs) const;
};

/// The most compute actions (F and B, or F, I and W, a stage and
/// microbatch) a generated schedule holds.
inline constexpr int64_t kMaxScheduleActions = int64_t(1) << 24;

/// Whether buildSchedule builds `kind` for these counts, without building
/// it (a launcher checks its flags with it): interleaving needs
/// microbatches divisible by the ranks, ZB-V two stages per rank, the
/// others one, every count is positive, and the schedule holds at most
/// kMaxScheduleActions. False with a message in
/// `error` where not.
bool canBuildSchedule(ScheduleKind kind, int64_t ranks, int64_t virtualStages, int64_t microbatches,
                      std::string &error);

/// The schedule `kind` for `ranks` pipeline ranks with `virtualStages`
/// stages each and `microbatches` microbatches, compute actions only. Fails
/// (nullopt, a message in `error`) where canBuildSchedule does.
std::optional<Schedule> buildSchedule(ScheduleKind kind, int64_t ranks, int64_t virtualStages,
                                      int64_t microbatches, std::string &error);

/// torch.distributed.pipelining's CSV: one line per rank, its actions
/// separated by commas ("0F0,0F1,0B0,..."), empty cells ignored.
std::optional<Schedule> parseScheduleCsv(std::string_view text, int64_t stages,
                                         int64_t microbatches, std::string &error);
std::string printScheduleCsv(const Schedule &schedule);

/// Checks that every stage's F and backward (B, or I then W) run once per
/// microbatch on the stage's rank, that no action names a stage or
/// microbatch out of range, and that transfers pair up. The message names
/// the first missing, repeated or misplaced action.
bool verifySchedule(const Schedule &schedule, std::string &error);

/// What each action costs in the simulator, in any unit of time.
struct ActionCosts {
  double forward = 1, backwardInput = 1, backwardWeight = 1;
  /// A transfer's delay between the SEND and the matching RECV.
  double transfer = 0;
  /// Per stage (multiplies the costs above) when not empty.
  std::vector<double> stageScale;
  /// Per stage, its own costs (replacing forward, backwardInput and
  /// backwardWeight; stageScale still multiplies them) when not empty.
  struct Stage {
    double forward = 1, backwardInput = 1, backwardWeight = 1;
  };
  std::vector<Stage> stages;
  double backward() const { return backwardInput + backwardWeight; }
};

struct SimulatedAction {
  Action action;
  int64_t rank;
  double start, end;
};

struct Simulation {
  bool deadlocked = false;
  /// Where each rank stopped, when deadlocked: "rank 1 waits at 1F0 for
  /// 0F0 (rank 0, which waits at ...)".
  std::string deadlock;
  double makespan = 0;
  /// 1 - (busy time of all ranks) / (ranks x makespan).
  double bubble = 0;
  std::vector<double> busy; ///< per rank
  /// Per stage: microbatches between F and their last backward (one at a
  /// time in a forward-only schedule, which keeps no activations).
  std::vector<int64_t> peakInFlight;
  /// Per rank, when its last action ends.
  std::vector<double> rankEnd;
  /// Compute and transfer actions, by start (empty unless asked for).
  std::vector<SimulatedAction> timeline;
};

/// Runs `schedule` (transfers made explicit as withTransfers() does) on
/// `costs`: each rank runs its actions in order, a SEND returns at once, a
/// RECV waits for its SEND plus the transfer delay, F(s, k) needs F(s-1, k)
/// (received), B or I of (s, k) needs its F and the next stage's backward,
/// W needs I. `withTimeline` keeps every action's start and end (a
/// planner that needs only each rank's end leaves it out). The schedule is
/// one verifySchedule accepts: an action outside its stages and
/// microbatches is not recorded as run, so what waits for it deadlocks.
/// Without a deadlock, rankEnd holds each rank's end; with one, it is
/// empty.
Simulation simulate(const Schedule &schedule, const ActionCosts &costs, bool withTimeline = true);

/// The share of a model one pipeline rank holds under `schedule`, with its
/// layers balanced over the stages: of the parameters and optimizer state,
/// its stages' share; of one microbatch's activations (what a whole
/// model's forward keeps for its backward), its stages' share times the
/// microbatches in flight on each (the simulator's peak, on unit costs).
/// The heaviest rank's.
struct MemoryShares {
  double state = 1, activations = 1;
};
MemoryShares memoryShares(const Schedule &schedule);

/// The bubble the formulas predict with F = costs.forward, B = I + W:
/// (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(v m + p-1) interleaved,
/// and ZB-H1's (p-1)(F+I-W) / (m(F+I+W) + (p-1)(F+I-W)). None for ZB-V,
/// whose bubble the simulator gives (with F = I = W, each rank idles p-1
/// stage forwards while the first microbatch goes down the V: half of
/// ZB-H1's idle).
std::optional<double> formulaBubble(ScheduleKind kind, int64_t ranks, int64_t virtualStages,
                                    int64_t microbatches, const ActionCosts &costs);

} // namespace pmlir::pipe

#endif // PMLIR_PIPELINING_SCHEDULE_H
