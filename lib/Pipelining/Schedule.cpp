//===- Schedule.cpp - Pipeline schedules as per-rank action lists ---------===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Schedule.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Schedule.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <charconv>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

using namespace pmlir::pipe;

#include "pmlir/Dialect/Pipe/IR/PipeEnums.cpp.inc"

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<int64_t> parseCount(std::string_view s) {
  int64_t v = 0;
  if (s.empty() || s.size() > 12)
    return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0)
    return std::nullopt;
  return v;
}

bool isBackwardKind(ActionKind k) {
  return k == ActionKind::Backward || k == ActionKind::BackwardInput;
}

} // namespace

bool pmlir::pipe::isCompute(ActionKind kind) {
  return kind == ActionKind::Forward || kind == ActionKind::Backward ||
         kind == ActionKind::BackwardInput || kind == ActionKind::BackwardWeight;
}

std::string Action::str() const {
  return std::to_string(stage) + stringifyActionKind(kind).str() + std::to_string(microbatch);
}

std::optional<Action> Action::parse(std::string_view text) {
  text = trim(text);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  std::optional<int64_t> stage = parseCount(text.substr(0, digits));
  if (!stage)
    return std::nullopt;
  std::string_view rest = text.substr(digits);
  for (uint32_t value = 0; value <= getMaxEnumValForActionKind(); ++value) {
    ActionKind kind = static_cast<ActionKind>(value);
    llvm::StringRef name = stringifyActionKind(kind);
    if (llvm::StringRef(rest.substr(0, name.size())) != name)
      continue;
    std::optional<int64_t> microbatch = parseCount(rest.substr(name.size()));
    if (!microbatch)
      return std::nullopt;
    return Action{*stage, kind, *microbatch};
  }
  return std::nullopt;
}

bool pmlir::pipe::isGenerated(ScheduleKind kind) {
  return kind != ScheduleKind::None && kind != ScheduleKind::Csv;
}

bool pmlir::pipe::splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::ZeroBubbleH1 || kind == ScheduleKind::ZeroBubbleV;
}

llvm::cl::ValuesClass pmlir::pipe::scheduleKindValues() {
  auto value = [](ScheduleKind kind, llvm::StringRef description) {
    return llvm::cl::OptionEnumValue{stringifyScheduleKind(kind), static_cast<int>(kind),
                                     description};
  };
  return llvm::cl::ValuesClass{
      value(ScheduleKind::None, "no pipeline"),
      value(ScheduleKind::GPipe, "all forwards, then all backwards"),
      value(ScheduleKind::OneFOneB, "one forward, one backward"),
      value(ScheduleKind::Interleaved1F1B, "1F1B over several stages a rank (virtual stages)"),
      value(ScheduleKind::ZeroBubbleH1,
            "1F1B with the backward split into input and weight gradients"),
      value(ScheduleKind::ZeroBubbleV,
            "zero-bubble V: two stages a rank, a microbatch down the ranks and back"),
      value(ScheduleKind::Csv, "each rank's actions from torch.distributed.pipelining's CSV")};
}

std::optional<ScheduleKind> pmlir::pipe::parseScheduleKind(std::string_view name) {
  std::optional<ScheduleKind> kind = symbolizeScheduleKind(name);
  if (!kind || !isGenerated(*kind))
    return std::nullopt;
  return kind;
}

bool Schedule::splitsBackward() const {
  for (const auto &list : actions)
    for (const Action &a : list)
      if (a.kind == ActionKind::BackwardInput || a.kind == ActionKind::BackwardWeight)
        return true;
  return false;
}

void Schedule::placeStages() {
  stageRanks.assign(stages, -1);
  for (size_t r = 0; r < actions.size(); ++r)
    for (const Action &a : actions[r])
      if (a.stage >= 0 && a.stage < stages && stageRanks[a.stage] < 0)
        stageRanks[a.stage] = static_cast<int64_t>(r);
  for (int64_t s = 0; s < stages; ++s)
    if (stageRanks[s] < 0)
      stageRanks[s] = ranks > 0 ? s % ranks : 0;
}

bool Schedule::hasBackward() const {
  for (const auto &list : actions)
    for (const Action &a : list)
      if (isCompute(a.kind) && a.kind != ActionKind::Forward)
        return true;
  return false;
}

Schedule Schedule::forwardOnly() const {
  Schedule out = *this;
  for (auto &list : out.actions)
    list.erase(std::remove_if(list.begin(), list.end(),
                              [](const Action &a) {
                                return a.kind != ActionKind::Forward &&
                                       a.kind != ActionKind::SendForward &&
                                       a.kind != ActionKind::RecvForward;
                              }),
               list.end());
  return out;
}

bool Schedule::hasTransfers() const {
  for (const auto &list : actions)
    for (const Action &a : list)
      if (!isCompute(a.kind))
        return true;
  return false;
}

Schedule Schedule::withTransfers() const {
  if (hasTransfers())
    return *this;
  Schedule out = *this;
  for (auto &list : out.actions) {
    std::vector<Action> explicitList;
    for (const Action &a : list) {
      int64_t here = rankOf(a.stage);
      bool forward = a.kind == ActionKind::Forward, backward = isBackwardKind(a.kind);
      if (forward && a.stage > 0 && rankOf(a.stage - 1) != here)
        explicitList.push_back({a.stage, ActionKind::RecvForward, a.microbatch});
      if (backward && a.stage + 1 < stages && rankOf(a.stage + 1) != here)
        explicitList.push_back({a.stage, ActionKind::RecvBackward, a.microbatch});
      explicitList.push_back(a);
      if (forward && a.stage + 1 < stages && rankOf(a.stage + 1) != here)
        explicitList.push_back({a.stage, ActionKind::SendForward, a.microbatch});
      if (backward && a.stage > 0 && rankOf(a.stage - 1) != here)
        explicitList.push_back({a.stage, ActionKind::SendBackward, a.microbatch});
    }
    list = std::move(explicitList);
  }
  return out;
}

Schedule Schedule::withMeetingTransfers(const ActionCosts &costs) const {
  Schedule out = withTransfers();
  for (const auto &list : actions)
    for (const Action &a : list)
      if (!isCompute(a.kind))
        return out; // the schedule's own transfers
  Simulation sim = simulate(out, costs);
  if (sim.deadlocked)
    return out;
  using Key = std::tuple<int64_t, int, int64_t>;
  auto key = [](const Action &a) { return Key{a.stage, int(a.kind), a.microbatch}; };
  std::map<Key, double> start, end;
  for (const SimulatedAction &s : sim.timeline) {
    start[key(s.action)] = s.start;
    end[key(s.action)] = s.end;
  }
  ActionKind backward = splitsBackward() ? ActionKind::BackwardInput : ActionKind::Backward;
  for (auto &list : out.actions) {
    // The rank's other actions stay in order; each SEND goes after the
    // action that computes what it sends, before the first that ends after
    // its message is met or is a RECV met no sooner. The simulator then
    // runs each SEND no later than it meets its RECV, so every action
    // keeps its time.
    std::vector<Action> others;
    struct Send {
      Action action;
      double met;
      size_t slot;
    };
    std::vector<Send> sends;
    for (const Action &a : list)
      if (a.kind != ActionKind::SendForward && a.kind != ActionKind::SendBackward)
        others.push_back(a);
    for (const Action &a : list) {
      bool forward = a.kind == ActionKind::SendForward;
      if (!forward && a.kind != ActionKind::SendBackward)
        continue;
      Action received{forward ? a.stage + 1 : a.stage - 1,
                      forward ? ActionKind::RecvForward : ActionKind::RecvBackward, a.microbatch};
      Action computed{a.stage, forward ? ActionKind::Forward : backward, a.microbatch};
      double met = start.at(key(received));
      auto producer = std::find(others.begin(), others.end(), computed);
      size_t slot = producer == others.end() ? 0 : producer - others.begin() + 1;
      auto before = [&](const Action &other) {
        return other.kind == ActionKind::RecvForward || other.kind == ActionKind::RecvBackward
                   ? start.at(key(other)) >= met
                   : end.at(key(other)) > met;
      };
      while (slot < others.size() && !before(others[slot]))
        ++slot;
      sends.push_back({a, met, slot});
    }
    std::stable_sort(sends.begin(), sends.end(), [](const Send &x, const Send &y) {
      return std::tie(x.slot, x.met) < std::tie(y.slot, y.met);
    });
    std::vector<Action> placed;
    size_t next = 0;
    for (size_t i = 0; i <= others.size(); ++i) {
      for (; next < sends.size() && sends[next].slot == i; ++next)
        placed.push_back(sends[next].action);
      if (i < others.size())
        placed.push_back(others[i]);
    }
    list = std::move(placed);
  }
  return out;
}

bool pmlir::pipe::canBuildSchedule(ScheduleKind kind, int64_t ranks, int64_t virtualStages,
                                   int64_t microbatches, std::string &error) {
  if (ranks < 1 || virtualStages < 1 || microbatches < 1) {
    error = "a pipeline schedule needs at least one rank, virtual stage and microbatch (got " +
            std::to_string(ranks) + ", " + std::to_string(virtualStages) + ", " +
            std::to_string(microbatches) + ")";
    return false;
  }
  // Every action is held (and simulated) one by one: the bound keeps a
  // schedule within memory before it is built.
  int64_t stages = 0, actions = 0;
  int64_t perStageMicrobatch = splitsBackward(kind) ? 3 : 2;
  if (llvm::MulOverflow(ranks, virtualStages, stages) ||
      llvm::MulOverflow(stages, microbatches, actions) ||
      llvm::MulOverflow(actions, perStageMicrobatch, actions) || actions > kMaxScheduleActions) {
    error = "a pipeline schedule of " + std::to_string(ranks) + " ranks x " +
            std::to_string(virtualStages) + " virtual stages x " + std::to_string(microbatches) +
            " microbatches runs more than the " + std::to_string(kMaxScheduleActions) +
            " compute actions a schedule may hold (" + std::to_string(perStageMicrobatch) +
            " a stage and microbatch)";
    return false;
  }
  std::string name = stringifyScheduleKind(kind).str();
  if (!isGenerated(kind)) {
    error = "schedule " + name + " is no generator (a csv schedule is read from its file)";
    return false;
  }
  if (kind == ScheduleKind::ZeroBubbleV && virtualStages != 2) {
    error = "schedule zb-v runs two stages per rank (rank r holds stages r and 2 ranks - 1 - r), "
            "not " +
            std::to_string(virtualStages) + ": give 2 virtual stages";
    return false;
  }
  if (kind != ScheduleKind::Interleaved1F1B && kind != ScheduleKind::ZeroBubbleV &&
      virtualStages != 1) {
    error = "schedule " + name + " runs one stage per rank; " + std::to_string(virtualStages) +
            " virtual stages need interleaved-1f1b";
    return false;
  }
  if (kind == ScheduleKind::Interleaved1F1B && microbatches % ranks != 0) {
    error = "schedule interleaved-1f1b needs a number of microbatches divisible by the " +
            std::to_string(ranks) + " pipeline ranks, got " + std::to_string(microbatches);
    return false;
  }
  return true;
}

std::optional<Schedule> pmlir::pipe::buildSchedule(ScheduleKind kind, int64_t ranks,
                                                   int64_t virtualStages, int64_t microbatches,
                                                   std::string &error) {
  if (!canBuildSchedule(kind, ranks, virtualStages, microbatches, error))
    return std::nullopt;
  Schedule s;
  s.ranks = ranks;
  s.stages = ranks * virtualStages;
  s.microbatches = microbatches;
  s.actions.resize(ranks);
  const int64_t p = ranks, m = microbatches;
  for (int64_t r = 0; r < p; ++r) {
    auto &list = s.actions[r];
    auto add = [&](int64_t stage, ActionKind k, int64_t mb) { list.push_back({stage, k, mb}); };
    switch (kind) {
    case ScheduleKind::GPipe:
      for (int64_t k = 0; k < m; ++k)
        add(r, ActionKind::Forward, k);
      for (int64_t k = 0; k < m; ++k)
        add(r, ActionKind::Backward, k);
      break;
    case ScheduleKind::OneFOneB: {
      int64_t warm = std::min(p - r - 1, m), f = 0, b = 0;
      for (; f < warm; ++f)
        add(r, ActionKind::Forward, f);
      for (; f < m; ++f, ++b) {
        add(r, ActionKind::Forward, f);
        add(r, ActionKind::Backward, b);
      }
      for (; b < m; ++b)
        add(r, ActionKind::Backward, b);
      break;
    }
    case ScheduleKind::Interleaved1F1B: {
      // Megatron's order: microbatches in groups of p, each group through
      // every chunk before the next; backward through the chunks in reverse.
      const int64_t v = virtualStages, n = m * v;
      auto microbatchOf = [&](int64_t i) { return (i / (p * v)) * p + i % p; };
      auto forwardStage = [&](int64_t i) { return ((i / p) % v) * p + r; };
      auto backwardStage = [&](int64_t i) { return (v - 1 - (i / p) % v) * p + r; };
      int64_t warm = m == p ? n : std::min((p - r - 1) * 2 + (v - 1) * p, n);
      int64_t f = 0, b = 0;
      for (; f < warm; ++f)
        add(forwardStage(f), ActionKind::Forward, microbatchOf(f));
      for (; f < n; ++f, ++b) {
        add(forwardStage(f), ActionKind::Forward, microbatchOf(f));
        add(backwardStage(b), ActionKind::Backward, microbatchOf(b));
      }
      for (; b < n; ++b)
        add(backwardStage(b), ActionKind::Backward, microbatchOf(b));
      break;
    }
    case ScheduleKind::ZeroBubbleH1: {
      // 1F1B's order of F and I, with rank r holding back r weight
      // gradients (W) in the steady state: the input gradients then travel
      // down the ranks at I's pace, and the held-back W run in the
      // cool-down while a rank waits for the next I. The deepest in flight,
      // p - r + r = p microbatches, is 1F1B's on rank 0.
      int64_t warm = std::min(p - r - 1, m), f = 0, b = 0;
      std::deque<int64_t> pendingW;
      auto weight = [&] {
        add(r, ActionKind::BackwardWeight, pendingW.front());
        pendingW.pop_front();
      };
      for (; f < warm; ++f)
        add(r, ActionKind::Forward, f);
      for (; f < m; ++f, ++b) {
        add(r, ActionKind::Forward, f);
        add(r, ActionKind::BackwardInput, b);
        pendingW.push_back(b);
        if (static_cast<int64_t>(pendingW.size()) > r)
          weight();
      }
      for (; b < m; ++b) {
        add(r, ActionKind::BackwardInput, b);
        pendingW.push_back(b);
        if (b + 1 < m)
          weight();
      }
      while (!pendingW.empty())
        weight();
      break;
    }
    case ScheduleKind::ZeroBubbleV: {
      // The zero-bubble paper's V: rank r holds stage r (the first chunk)
      // and stage 2p-1-r (the second), so a microbatch goes down the ranks
      // and back up, and the last stage's backward starts on rank 0 right
      // after its forward. The order is torch.distributed.pipelining's
      // ScheduleZBVZeroBubble: warm-up forwards of the first chunk (fewer
      // down the ranks), then of both chunks, then the second chunk's
      // F-I-W, a steady state of F-I-W on each chunk in turn, and a
      // cool-down of input gradients with the weight gradients last. Built
      // for at least 2p-1 microbatches; those past m are dropped.
      const int64_t first = r, second = 2 * p - 1 - r, n = std::max(2 * p - 1, m);
      int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
      auto run = [&](int64_t stage, ActionKind k, int64_t mb) {
        if (mb < m)
          add(stage, k, mb);
      };
      for (int64_t i = 0; i < 2 * (p - r) - 1; ++i)
        run(first, ActionKind::Forward, f0++);
      for (int64_t i = 0; i < r; ++i) {
        run(second, ActionKind::Forward, f1++);
        run(first, ActionKind::Forward, f0++);
      }
      for (int64_t i = 0; i < p - r; ++i) {
        run(second, ActionKind::Forward, f1++);
        run(second, ActionKind::BackwardInput, b1);
        run(second, ActionKind::BackwardWeight, b1++);
      }
      while (f1 < f0 || f0 < n) {
        if (f0 < n)
          run(first, ActionKind::Forward, f0++);
        run(first, ActionKind::BackwardInput, b0);
        run(first, ActionKind::BackwardWeight, b0++);
        run(second, ActionKind::Forward, f1++);
        run(second, ActionKind::BackwardInput, b1);
        run(second, ActionKind::BackwardWeight, b1++);
      }
      int64_t w0 = b0, w1 = b1;
      for (int64_t i = 0; i < r; ++i) {
        run(first, ActionKind::BackwardInput, b0++);
        run(second, ActionKind::BackwardInput, b1++);
      }
      for (int64_t i = 0; i < p - r; ++i) {
        run(first, ActionKind::BackwardInput, b0++);
        run(first, ActionKind::BackwardWeight, w0++);
      }
      while (w1 < b1)
        run(second, ActionKind::BackwardWeight, w1++);
      while (w0 < b0)
        run(first, ActionKind::BackwardWeight, w0++);
      break;
    }
    case ScheduleKind::None:
    case ScheduleKind::Csv:
      llvm_unreachable("canBuildSchedule refuses the kinds no generator builds");
    }
  }
  s.placeStages();
  return s;
}

std::optional<Schedule> pmlir::pipe::parseScheduleCsv(std::string_view text, int64_t stages,
                                                      int64_t microbatches, std::string &error) {
  Schedule s;
  s.stages = stages;
  s.microbatches = microbatches;
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++lineNo;
    if (trim(line).empty())
      continue;
    std::vector<Action> list;
    while (true) {
      size_t comma = line.find(',');
      std::string_view cell = trim(line.substr(0, comma));
      if (!cell.empty()) {
        std::optional<Action> a = Action::parse(cell);
        if (!a) {
          error = "line " + std::to_string(lineNo) + ": '" + std::string(cell) +
                  "' is no action (<stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><microbatch>)";
          return std::nullopt;
        }
        list.push_back(*a);
      }
      if (comma == std::string_view::npos)
        break;
      line = line.substr(comma + 1);
    }
    s.actions.push_back(std::move(list));
  }
  s.ranks = static_cast<int64_t>(s.actions.size());
  if (s.ranks == 0) {
    error = "the schedule has no rank's actions";
    return std::nullopt;
  }
  if (stages % s.ranks != 0) {
    error = "the schedule lists " + std::to_string(s.ranks) + " ranks, which do not divide the " +
            std::to_string(stages) + " stages";
    return std::nullopt;
  }
  s.placeStages();
  return s;
}

std::string pmlir::pipe::printScheduleCsv(const Schedule &schedule) {
  std::string out;
  for (const auto &list : schedule.actions) {
    for (size_t i = 0; i < list.size(); ++i)
      out += (i ? "," : "") + list[i].str();
    out += "\n";
  }
  return out;
}

bool pmlir::pipe::verifySchedule(const Schedule &schedule, std::string &error) {
  const int64_t S = schedule.stages, m = schedule.microbatches;
  if (schedule.ranks < 1 || S < 1 || S % schedule.ranks != 0 || m < 1 ||
      static_cast<int64_t>(schedule.actions.size()) != schedule.ranks) {
    error = "the schedule's shape is inconsistent: " + std::to_string(schedule.ranks) + " ranks, " +
            std::to_string(S) + " stages, " + std::to_string(m) + " microbatches";
    return false;
  }
  bool split = schedule.splitsBackward();
  std::set<std::tuple<int64_t, int, int64_t>> seen;
  bool transfers = false;
  for (auto [r, list] : [&] {
         std::vector<std::pair<int64_t, const std::vector<Action> *>> v;
         for (size_t i = 0; i < schedule.actions.size(); ++i)
           v.push_back({static_cast<int64_t>(i), &schedule.actions[i]});
         return v;
       }()) {
    for (const Action &a : *list) {
      if (a.stage >= S || a.microbatch >= m) {
        error = "rank " + std::to_string(r) + "'s action " + a.str() + " names " +
                (a.stage >= S
                     ? "stage " + std::to_string(a.stage) + " of " + std::to_string(S)
                     : "microbatch " + std::to_string(a.microbatch) + " of " + std::to_string(m));
        return false;
      }
      if (schedule.rankOf(a.stage) != r) {
        error = "rank " + std::to_string(r) + " runs " + a.str() + ", but stage " +
                std::to_string(a.stage) + " lives on rank " +
                std::to_string(schedule.rankOf(a.stage));
        return false;
      }
      if (split && a.kind == ActionKind::Backward) {
        error = "rank " + std::to_string(r) + " runs the whole backward " + a.str() +
                " in a schedule that splits the backward into I and W";
        return false;
      }
      transfers |= !isCompute(a.kind);
      if (!seen.insert({a.stage, int(a.kind), a.microbatch}).second) {
        error = "rank " + std::to_string(r) + " runs " + a.str() + " twice";
        return false;
      }
    }
  }
  std::vector<ActionKind> needed = {ActionKind::Forward};
  if (split) {
    needed.push_back(ActionKind::BackwardInput);
    needed.push_back(ActionKind::BackwardWeight);
  } else {
    needed.push_back(ActionKind::Backward);
  }
  // A forward-only (inference) schedule has no backward at all.
  if (!schedule.hasBackward())
    needed.resize(1);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t k = 0; k < m; ++k)
      for (ActionKind kind : needed)
        if (!seen.count({s, int(kind), k})) {
          error = "no rank runs " + Action{s, kind, k}.str() + " (stage " + std::to_string(s) +
                  "'s " + stringifyActionKind(kind).str() + " of microbatch " + std::to_string(k) +
                  ")";
          return false;
        }
  if (!transfers)
    return true;
  // Each needed transfer once on each side, and none that is not needed.
  Schedule implied = schedule;
  for (auto &list : implied.actions)
    list.erase(std::remove_if(list.begin(), list.end(),
                              [](const Action &a) { return !isCompute(a.kind); }),
               list.end());
  std::set<std::tuple<int64_t, int, int64_t>> wanted;
  for (const auto &list : implied.withTransfers().actions)
    for (const Action &a : list)
      if (!isCompute(a.kind))
        wanted.insert({a.stage, int(a.kind), a.microbatch});
  for (const auto &list : schedule.actions)
    for (const Action &a : list)
      if (!isCompute(a.kind) && !wanted.count({a.stage, int(a.kind), a.microbatch})) {
        error = "rank " + std::to_string(schedule.rankOf(a.stage)) + "'s " + a.str() +
                " moves nothing: that stage's neighbour is on the same rank or does not exist";
        return false;
      }
  for (auto [stage, kind, mb] : wanted)
    if (!seen.count({stage, kind, mb})) {
      error = "no rank runs " + Action{stage, ActionKind(kind), mb}.str() +
              ", which the schedule's other transfers need";
      return false;
    }
  return true;
}

Simulation pmlir::pipe::simulate(const Schedule &input, const ActionCosts &costs,
                                 bool withTimeline) {
  // A schedule with its transfers is run as it is, not copied: a planner
  // simulates one schedule of many microbatches for each of its layouts.
  std::optional<Schedule> withTransfers;
  if (!input.hasTransfers())
    withTransfers = input.withTransfers();
  const Schedule &schedule = withTransfers ? *withTransfers : input;
  const int64_t p = schedule.ranks, S = schedule.stages;
  Simulation sim;
  sim.busy.assign(p, 0);
  sim.peakInFlight.assign(S, 0);
  bool split = schedule.splitsBackward();
  auto scale = [&](int64_t stage) {
    return stage < static_cast<int64_t>(costs.stageScale.size()) ? costs.stageScale[stage] : 1.0;
  };
  auto cost = [&](const Action &a) {
    ActionCosts::Stage own{costs.forward, costs.backwardInput, costs.backwardWeight};
    if (a.stage < static_cast<int64_t>(costs.stages.size()))
      own = costs.stages[a.stage];
    switch (a.kind) {
    case ActionKind::Forward:
      return own.forward * scale(a.stage);
    case ActionKind::Backward:
      return (own.backwardInput + own.backwardWeight) * scale(a.stage);
    case ActionKind::BackwardInput:
      return own.backwardInput * scale(a.stage);
    case ActionKind::BackwardWeight:
      return own.backwardWeight * scale(a.stage);
    default:
      return 0.0;
    }
  };
  // The end time of every action run so far (-inf: not run), one slot per
  // stage, kind and microbatch of the schedule's counts: dense, as every
  // stage runs every microbatch. An action outside them (a schedule
  // verifySchedule would refuse) is never recorded, so what waits for it
  // deadlocks.
  const int64_t stageSlots = std::max<int64_t>(S, 0);
  const int64_t microbatchSlots = std::max<int64_t>(schedule.microbatches, 0);
  constexpr int64_t kinds = getMaxEnumValForActionKind() + 1;
  constexpr double notRun = -std::numeric_limits<double>::infinity();
  std::vector<double> done(stageSlots * kinds * microbatchSlots, notRun);
  auto slot = [&](int64_t s, ActionKind k, int64_t mb) -> double * {
    if (s < 0 || s >= stageSlots || mb < 0 || mb >= microbatchSlots)
      return nullptr;
    return &done[(s * kinds + static_cast<int64_t>(k)) * microbatchSlots + mb];
  };
  auto finished = [&](int64_t s, ActionKind k, int64_t mb) -> std::optional<double> {
    double *end = slot(s, k, mb);
    if (!end || *end == notRun)
      return std::nullopt;
    return *end;
  };
  auto backwardKind = split ? ActionKind::BackwardInput : ActionKind::Backward;

  // What `a` waits for: (the action, the time it is ready) or nothing when
  // it can start. Returns false with `blocker` set while a dependency has
  // not run.
  auto ready = [&](const Action &a, int64_t r, double &at, Action &blocker) {
    at = 0;
    auto need = [&](int64_t s, ActionKind k, int64_t mb, double delay) {
      std::optional<double> t = finished(s, k, mb);
      if (!t) {
        blocker = {s, k, mb};
        return false;
      }
      at = std::max(at, *t + delay);
      return true;
    };
    switch (a.kind) {
    case ActionKind::Forward:
      if (a.stage == 0)
        return true;
      return schedule.rankOf(a.stage - 1) == r
                 ? need(a.stage - 1, ActionKind::Forward, a.microbatch, 0)
                 : need(a.stage, ActionKind::RecvForward, a.microbatch, 0);
    case ActionKind::Backward:
    case ActionKind::BackwardInput:
      if (!need(a.stage, ActionKind::Forward, a.microbatch, 0))
        return false;
      if (a.stage + 1 == S)
        return true;
      return schedule.rankOf(a.stage + 1) == r
                 ? need(a.stage + 1, backwardKind, a.microbatch, 0)
                 : need(a.stage, ActionKind::RecvBackward, a.microbatch, 0);
    case ActionKind::BackwardWeight:
      return need(a.stage, ActionKind::BackwardInput, a.microbatch, 0);
    case ActionKind::SendForward:
      return need(a.stage, ActionKind::Forward, a.microbatch, 0);
    case ActionKind::SendBackward:
      return need(a.stage, backwardKind, a.microbatch, 0);
    case ActionKind::RecvForward:
      return need(a.stage - 1, ActionKind::SendForward, a.microbatch, costs.transfer);
    case ActionKind::RecvBackward:
      return need(a.stage + 1, ActionKind::SendBackward, a.microbatch, costs.transfer);
    }
    return false;
  };

  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < p; ++r) {
      const auto &list = schedule.actions[r];
      while (next[r] < list.size()) {
        const Action &a = list[next[r]];
        double at;
        Action blocker;
        if (!ready(a, r, at, blocker))
          break;
        double start = std::max(clock[r], at), end = start + cost(a);
        clock[r] = end;
        if (double *entry = slot(a.stage, a.kind, a.microbatch))
          *entry = end;
        if (isCompute(a.kind))
          sim.busy[r] += end - start;
        if (withTimeline)
          sim.timeline.push_back({a, r, start, end});
        ++next[r];
        progress = true;
      }
    }
  }
  for (int64_t r = 0; r < p; ++r) {
    const auto &list = schedule.actions[r];
    if (next[r] == list.size())
      continue;
    double at;
    Action blocker;
    ready(list[next[r]], r, at, blocker);
    if (!sim.deadlocked)
      sim.deadlock = "the schedule deadlocks:";
    sim.deadlocked = true;
    sim.deadlock += " rank " + std::to_string(r) + " waits at " + list[next[r]].str() + " for " +
                    blocker.str() + " (on rank " + std::to_string(schedule.rankOf(blocker.stage)) +
                    ");";
  }
  if (sim.deadlocked) {
    sim.deadlock.pop_back();
    return sim;
  }
  sim.rankEnd = clock;
  for (double c : clock)
    sim.makespan = std::max(sim.makespan, c);
  double busy = 0;
  for (double b : sim.busy)
    busy += b;
  sim.bubble = sim.makespan > 0 ? 1 - busy / (p * sim.makespan) : 0;
  // Microbatches in flight: from F to the backward that frees its
  // activations (W when split, else B), in each rank's order. A forward
  // alone frees its activations as it ends.
  ActionKind frees = split ? ActionKind::BackwardWeight : ActionKind::Backward;
  bool inference = !schedule.hasBackward();
  std::vector<int64_t> inFlight(S, 0);
  for (const auto &list : schedule.actions)
    for (const Action &a : list) {
      if (a.kind == ActionKind::Forward)
        sim.peakInFlight[a.stage] =
            std::max(sim.peakInFlight[a.stage], inference ? 1 : ++inFlight[a.stage]);
      else if (a.kind == frees)
        --inFlight[a.stage];
    }
  std::stable_sort(
      sim.timeline.begin(), sim.timeline.end(),
      [](const SimulatedAction &a, const SimulatedAction &b) { return a.start < b.start; });
  return sim;
}

std::optional<double> pmlir::pipe::formulaBubble(ScheduleKind kind, int64_t ranks,
                                                 int64_t virtualStages, int64_t microbatches,
                                                 const ActionCosts &costs) {
  double p = ranks, m = microbatches, v = virtualStages;
  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
    return (p - 1) / (m + p - 1);
  case ScheduleKind::Interleaved1F1B:
    return (p - 1) / (v * m + p - 1);
  case ScheduleKind::ZeroBubbleH1: {
    double F = costs.forward, I = costs.backwardInput, W = costs.backwardWeight;
    double idle = (p - 1) * std::max(F + I - W, 0.0);
    return idle / (m * (F + I + W) + idle);
  }
  case ScheduleKind::ZeroBubbleV:
  case ScheduleKind::None:
  case ScheduleKind::Csv:
    return std::nullopt;
  }
  return 0;
}

MemoryShares pmlir::pipe::memoryShares(const Schedule &schedule) {
  Simulation sim = simulate(schedule, ActionCosts{}, /*withTimeline=*/false);
  std::vector<double> state(schedule.ranks, 0), activations(schedule.ranks, 0);
  for (int64_t s = 0; s < schedule.stages; ++s) {
    int64_t r = schedule.rankOf(s);
    state[r] += 1.0 / schedule.stages;
    activations[r] += static_cast<double>(std::max<int64_t>(1, sim.peakInFlight[s])) /
                      static_cast<double>(schedule.stages);
  }
  return {*std::max_element(state.begin(), state.end()),
          *std::max_element(activations.begin(), activations.end())};
}
