//===- PipeOps.cpp - The pipe pipeline dialect ----------------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Pipe/IR/Pipe.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::pipe;

#include "pmlir/Dialect/Pipe/IR/PipeDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "pmlir/Dialect/Pipe/IR/PipeAttrs.cpp.inc"

void PipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pmlir/Dialect/Pipe/IR/PipeOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pmlir/Dialect/Pipe/IR/PipeAttrs.cpp.inc"
      >();
}

// The ops spell a kind as its name in quotes ("F", "1f1b"), as when the
// kinds were strings: the ops' text did not change when they became enums.

static unsigned maxValueOf(ActionKind) { return getMaxEnumValForActionKind(); }
static unsigned maxValueOf(ScheduleKind) { return getMaxEnumValForScheduleKind(); }

template <typename KindAttr>
static ParseResult parseQuotedKind(OpAsmParser &parser, KindAttr &kind) {
  using Kind = decltype(std::declval<KindAttr>().getValue());
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  if (std::optional<Kind> value = symbolizeEnum<Kind>(name)) {
    kind = KindAttr::get(parser.getContext(), *value);
    return success();
  }
  SmallVector<StringRef> known;
  for (unsigned value = 0; value <= maxValueOf(Kind()); ++value)
    known.push_back(stringifyEnum(static_cast<Kind>(value)));
  return parser.emitError(loc) << "unknown kind \"" << name
                               << "\" (known: " << llvm::join(known, ", ") << ")";
}

template <typename KindAttr>
static void printQuotedKind(OpAsmPrinter &printer, Operation *, KindAttr kind) {
  printer.printString(stringifyEnum(kind.getValue()));
}

// A schedule's actions as torch.distributed.pipelining writes them, a list
// of quoted actions a rank: [["0F0", "0B0"], ["1F0", "1B0"]].

static ParseResult parseActionLists(OpAsmParser &parser, ArrayAttr &lists) {
  MLIRContext *ctx = parser.getContext();
  SmallVector<Attribute> ranks;
  auto parseRank = [&]() -> ParseResult {
    SmallVector<Attribute> actions;
    auto parseAction = [&]() -> ParseResult {
      SMLoc loc = parser.getCurrentLocation();
      std::string text;
      if (parser.parseString(&text))
        return failure();
      std::optional<Action> action = Action::parse(text);
      if (!action)
        return parser.emitError(loc)
               << "rank " << ranks.size() << "'s action \"" << text
               << "\" is no <stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><microbatch>";
      actions.push_back(ActionAttr::get(ctx, action->stage, action->kind, action->microbatch));
      return success();
    };
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseAction))
      return failure();
    ranks.push_back(ArrayAttr::get(ctx, actions));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseRank))
    return failure();
  lists = ArrayAttr::get(ctx, ranks);
  return success();
}

static void printActionLists(OpAsmPrinter &printer, Operation *, ArrayAttr lists) {
  printer << '[';
  llvm::interleaveComma(lists, printer, [&](Attribute list) {
    printer << '[';
    llvm::interleaveComma(cast<ArrayAttr>(list), printer, [&](Attribute action) {
      printer.printString(cast<ActionAttr>(action).getAction().str());
    });
    printer << ']';
  });
  printer << ']';
}

#define GET_OP_CLASSES
#include "pmlir/Dialect/Pipe/IR/PipeOps.cpp.inc"

LogicalResult ActionAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t stage,
                                 ActionKind, int64_t microbatch) {
  if (stage < 0 || microbatch < 0)
    return emitError() << "a pipeline action's stage and microbatch count from 0, got stage "
                       << stage << " and microbatch " << microbatch;
  return success();
}

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

/// Fails on `op` unless `kind` is a fragment's kind.
static LogicalResult verifyWorkKind(Operation *op, ActionKind kind) {
  if (!isCompute(kind))
    return op->emitOpError() << "has kind \"" << stringifyActionKind(kind)
                             << "\"; a fragment is F (forward), B (backward), I (input gradient) "
                                "or W (weight gradient)";
  return success();
}

/// Fails on `op` where it names a stage that its function, cut into
/// stages (pipe.stages), does not have.
static LogicalResult verifyStagesInRange(Operation *op, ArrayRef<int64_t> stages) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  auto count = func ? func->getAttrOfType<IntegerAttr>(kStagesAttr) : IntegerAttr();
  if (!count)
    return success();
  for (int64_t s : stages)
    if (s >= count.getInt())
      return op->emitOpError() << "names stage " << s << " of a program of " << count.getInt()
                               << " stages (" << kStagesAttr << ")";
  return success();
}

LogicalResult WorkBeginOp::verify() { return verifyWorkKind(*this, getKind()); }
LogicalResult WorkEndOp::verify() { return verifyWorkKind(*this, getKind()); }

LogicalResult FragmentOp::verify() {
  if (failed(verifyWorkKind(*this, getKind())))
    return failure();
  // A stage's work runs where a function's program runs it, once: not
  // outside a function, nor as part of another fragment's work.
  if (!(*this)->getParentOfType<FunctionOpInterface>() || (*this)->getParentOfType<FragmentOp>())
    return emitOpError() << "stands outside a function's body or inside another fragment: a "
                            "fragment is one stage's work in a function's program";
  Operation *yield = getBody().front().getTerminator();
  if (yield->getOperandTypes() != getResultTypes())
    return emitOpError() << "yields " << yield->getOperandTypes() << " but returns "
                         << getResultTypes();
  return verifyStagesInRange(*this, {static_cast<int64_t>(getStage())});
}

LogicalResult TransferOp::verify() {
  if (getFrom() == getTo())
    return emitOpError() << "moves a value from stage " << getFrom() << " to itself";
  return verifyStagesInRange(*this,
                             {static_cast<int64_t>(getFrom()), static_cast<int64_t>(getTo())});
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
  return verifyStagesInRange(*this, getStages());
}

Schedule ScheduleOp::getSchedule() {
  Schedule schedule;
  schedule.ranks = getRanks();
  schedule.stages = getStages();
  schedule.microbatches = getMicrobatches();
  for (Attribute list : getActions()) {
    schedule.actions.emplace_back();
    for (Attribute a : cast<ArrayAttr>(list))
      schedule.actions.back().push_back(cast<ActionAttr>(a).getAction());
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
  int64_t listed = 0;
  for (Attribute list : getActions())
    listed += cast<ArrayAttr>(list).size();
  // Each stage runs each microbatch's forward: the actions listed bound the
  // stages and microbatches, before anything is sized by them.
  if (getStages() > listed || getMicrobatches() > listed ||
      getStages() * getMicrobatches() > listed)
    return emitOpError() << "lists " << listed << " actions, fewer than the forwards of its "
                         << getStages() << " stages times " << getMicrobatches() << " microbatches";
  Schedule schedule = getSchedule();
  std::string error;
  if (!verifySchedule(schedule, error))
    return emitOpError() << error;
  Simulation sim = simulate(schedule, ActionCosts(), /*withTimeline=*/false);
  if (sim.deadlocked)
    return emitOpError() << sim.deadlock;
  return success();
}
