//===- PipeOps.cpp - The pipe pipeline dialect ----------------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Pipe/IR/Pipe.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::pipe;

#include "pmlir/Dialect/Pipe/IR/PipeDialect.cpp.inc"

void PipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pmlir/Dialect/Pipe/IR/PipeOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "pmlir/Dialect/Pipe/IR/PipeOps.cpp.inc"

std::optional<int64_t> pmlir::pipe::stageOf(Value v) {
  Operation *def = v.getDefiningOp();
  for (int depth = 0; def && depth < 64; ++depth) {
    if (auto fragment = def->getParentOfType<FragmentOp>())
      return fragment.getStage();
    if (auto fragment = dyn_cast<FragmentOp>(def))
      return fragment.getStage();
    if (auto transfer = dyn_cast<TransferOp>(def))
      return transfer.getTo();
    if (auto sum = dyn_cast<StageSumOp>(def))
      return sum.getStages().empty() ? std::nullopt : std::optional(sum.getStages().front());
    Operation *next = nullptr;
    for (Value operand : def->getOperands())
      if ((next = operand.getDefiningOp()))
        break;
    def = next;
  }
  return std::nullopt;
}

/// Fails on `op` unless `kind` names a fragment's kind.
static LogicalResult verifyWorkKind(Operation *op, StringRef kind) {
  if (kind != kForward && kind != kBackward && kind != kBackwardInput && kind != kBackwardWeight)
    return op->emitOpError() << "has kind \"" << kind
                             << "\"; a fragment is F (forward), B (backward), I (input gradient) "
                                "or W (weight gradient)";
  return success();
}

LogicalResult WorkBeginOp::verify() { return verifyWorkKind(*this, getKind()); }
LogicalResult WorkEndOp::verify() { return verifyWorkKind(*this, getKind()); }

LogicalResult FragmentOp::verify() {
  if (failed(verifyWorkKind(*this, getKind())))
    return failure();
  Operation *yield = getBody().front().getTerminator();
  if (yield->getOperandTypes() != getResultTypes())
    return emitOpError() << "yields " << yield->getOperandTypes() << " but returns "
                         << getResultTypes();
  return success();
}

LogicalResult TransferOp::verify() {
  if (getFrom() == getTo())
    return emitOpError() << "moves a value from stage " << getFrom() << " to itself";
  return success();
}

LogicalResult StageSumOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "sums no value";
  if (getInputs().size() != getStages().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but " << getStages().size()
                         << " stages";
  for (Value input : getInputs())
    if (input.getType() != getResult().getType())
      return emitOpError() << "adds an input of type " << input.getType() << " into a result of "
                           << getResult().getType();
  for (int64_t s : getStages())
    if (s < 0)
      return emitOpError() << "names stage " << s;
  return success();
}

Schedule ScheduleOp::getSchedule() {
  Schedule schedule;
  schedule.ranks = getRanks();
  schedule.stages = getStages();
  schedule.microbatches = getMicrobatches();
  for (Attribute list : getActions()) {
    schedule.actions.emplace_back();
    for (Attribute a : cast<ArrayAttr>(list))
      if (std::optional<Action> action = Action::parse(cast<StringAttr>(a).getValue().str()))
        schedule.actions.back().push_back(*action);
  }
  schedule.placeStages();
  return schedule;
}

LogicalResult ScheduleOp::verify() {
  if (getActions().size() != getRanks())
    return emitOpError() << "lists the actions of " << getActions().size() << " ranks, not "
                         << getRanks();
  if (getStages() % getRanks() != 0)
    return emitOpError() << "puts " << getStages() << " stages on " << getRanks()
                         << " ranks, which do not divide them";
  for (auto [r, list] : llvm::enumerate(getActions()))
    for (Attribute a : cast<ArrayAttr>(list))
      if (!Action::parse(cast<StringAttr>(a).getValue().str()))
        return emitOpError() << "rank " << r << "'s action " << a
                             << " is no <stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><microbatch>";
  Schedule schedule = getSchedule();
  std::string error;
  if (!verifySchedule(schedule, error))
    return emitOpError() << error;
  Simulation sim = simulate(schedule, ActionCosts());
  if (sim.deadlocked)
    return emitOpError() << sim.deadlock;
  return success();
}
