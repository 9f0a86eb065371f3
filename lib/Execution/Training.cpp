//===- Training.cpp - pmlir-run --train: steps, checkpoints, the check ----===//
//
// Part of pmlir.
//
// The training step (pmlir-optimizer's) updates its parameters and
// optimizer state in place, so a run is the step called again and again on
// the same buffers, with the next batch written into the inputs' buffers
// between calls. Loss and gradient norm are scalars every rank holds; a
// checkpoint is the parameters under their Hugging Face names, each
// assembled from its blocks, and beside it the optimizer state.
//
//===----------------------------------------------------------------------===//

#include "Job.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Execution/Checkpoint.h"
#include "pmlir/Execution/CheckpointDirectory.h"
#include "pmlir/Execution/Launch.h"
#include "pmlir/Execution/StepCheck.h"
#include "pmlir/Execution/TokenData.h"
#include "pmlir/ModelGen/HuggingFace.h"
#include "pmlir/Sharding/Transforms/Passes.h"
#include "pmlir/Support/Layout.h"
#include "pmlir/Training/Optimizer.h"
#include "pmlir/Training/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::exec;

namespace {

/// The last step an f32 step counter holds exactly: 2^24.
constexpr int64_t kLastStep = int64_t(1) << 24;

/// The steps a training run has taken, from its `step` argument (f32: 0, or
/// a resumed checkpoint's): a whole number from 0 to 2^24, the last count an
/// f32 holds exactly, or nullopt with `error` naming it. A checkpoint's step
/// is trusted no further: it picks the data window a step reads.
std::optional<int64_t> stepsTaken(float step, std::string &error) {
  if (!(step >= 0.0f && step <= static_cast<float>(kLastStep)) || std::floor(step) != step) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", step);
    error = "its optimizer step " + std::string(text) +
            " is not a whole number of steps from 0 to " + std::to_string(kLastStep);
    return std::nullopt;
  }
  return static_cast<int64_t>(step);
}

/// Where a training step's batches go: its token ids and labels arguments,
/// this rank's blocks of them, and the global batch they are cut from.
struct Batch {
  int64_t ids = -1, labels = -1;
  /// This rank's blocks of them (the signature's layout), null unsharded.
  const BlockLayout *idsLayout = nullptr, *labelsLayout = nullptr;
  std::vector<int64_t> global; ///< the global shape of the ids (and labels)
  bool wide = true;            ///< int64 ids (else int32)
  std::vector<uint8_t> idsData, labelsData;

  int64_t tokens() const { return global.empty() ? 0 : elementCount(global); }
  int64_t seq() const { return global.empty() ? 1 : global.back(); }

  /// Finds the arguments and this rank's blocks of them (laid out with
  /// the signature). A pipeline stage reads the ids (the first), the labels
  /// (the last) or neither: `pipelineStage` accepts what is there.
  bool locate(const EntrySignature &signature, std::string &error, bool pipelineStage = false) {
    for (auto [i, spec] : llvm::enumerate(signature.arguments)) {
      if (spec.role == Role::Input && spec.element != ElementKind::F32 && ids < 0)
        ids = i;
      if (spec.role == Role::Label && labels < 0)
        labels = i;
    }
    if (pipelineStage && (ids < 0 || labels < 0)) {
      if (ids < 0 && labels < 0)
        return true;
      int64_t present = ids >= 0 ? ids : labels;
      const TensorSpec &spec = signature.arguments[present];
      (ids >= 0 ? idsLayout : labelsLayout) = spec.block ? &*spec.block : nullptr;
      global = spec.block ? spec.block->shape : spec.shape;
      wide = spec.element == ElementKind::I64;
      idsData.resize(tokens() * (wide ? 8 : 4));
      labelsData.resize(idsData.size());
      return true;
    }
    if (ids < 0 || labels < 0) {
      error = "@" + signature.name + " has no token ids and labels to train on";
      return false;
    }
    for (auto [index, layout] : {std::pair{ids, &idsLayout}, {labels, &labelsLayout}})
      if (const std::optional<BlockLayout> &block = signature.arguments[index].block)
        *layout = &*block;
    const TensorSpec &idsSpec = signature.arguments[ids];
    global = idsLayout ? idsLayout->shape : idsSpec.shape;
    wide = idsSpec.element == ElementKind::I64;
    if (signature.arguments[labels].element != idsSpec.element ||
        (labelsLayout ? labelsLayout->shape : signature.arguments[labels].shape) != global) {
      error = "@" + signature.name + "'s labels are no tensor of the token ids' type";
      return false;
    }
    idsData.resize(tokens() * (wide ? 8 : 4));
    labelsData.resize(idsData.size());
    return true;
  }

  /// The arguments the batch is written into (token ids and labels where
  /// this rank reads them).
  std::vector<size_t> arguments() const {
    std::vector<size_t> out;
    for (int64_t index : {ids, labels})
      if (index >= 0)
        out.push_back(static_cast<size_t>(index));
    return out;
  }

  /// Writes the global batch into this rank's argument buffers.
  void scatter(std::vector<BoundArgument> &args) const {
    size_t width = wide ? 8 : 4;
    for (auto [index, layout, data] :
         {std::tuple<int64_t, const BlockLayout *, const std::vector<uint8_t> *>{ids, idsLayout,
                                                                                 &idsData},
          {labels, labelsLayout, &labelsData}}) {
      if (index < 0)
        continue;
      if (layout)
        layout->copyOut(data->data(), width, args[index].data);
      else
        std::memcpy(args[index].data, data->data(), data->size());
    }
  }
};

/// The index of the result named `name`, or -1.
int64_t resultNamed(const EntrySignature &signature, llvm::StringRef name) {
  for (auto [i, result] : llvm::enumerate(signature.results))
    if (result.name == name)
      return i;
  return -1;
}

int64_t argumentNamed(const EntrySignature &signature, llvm::StringRef name) {
  for (auto [i, arg] : llvm::enumerate(signature.arguments))
    if (arg.name == name)
      return i;
  return -1;
}

/// A tensor of a checkpoint: its name, whether it is a parameter (else
/// optimizer state), its shape and its values.
struct StateTensor {
  std::string name;
  bool param = true;
  std::vector<int64_t> shape;
  const float *values = nullptr;
  std::vector<float> owned;
};

/// The tag of the checkpoint's messages between pipeline ranks, above any
/// transfer's: messages of one tag between two ranks arrive in order.
constexpr int64_t kCheckpointTag = 32767;

/// Sends `tensors` to member 0 of the group over `ppAxis`: a manifest (the
/// count, then each tensor's role, rank, dims, name length and name, as
/// int32) after its length, then each tensor's values.
void sendState(const std::vector<StateTensor> &tensors, int64_t ppAxis) {
  std::vector<int32_t> manifest = {static_cast<int32_t>(tensors.size())};
  for (const StateTensor &t : tensors) {
    manifest.push_back(t.param);
    manifest.push_back(static_cast<int32_t>(t.shape.size()));
    for (int64_t d : t.shape)
      manifest.push_back(static_cast<int32_t>(d));
    manifest.push_back(static_cast<int32_t>(t.name.size()));
    for (char c : t.name)
      manifest.push_back(static_cast<unsigned char>(c));
  }
  int64_t length = static_cast<int64_t>(manifest.size());
  pmlir_rt_send(&length, 1, PMLIR_RT_I64, 0, &ppAxis, 1, kCheckpointTag);
  pmlir_rt_send(manifest.data(), length, PMLIR_RT_I32, 0, &ppAxis, 1, kCheckpointTag);
  for (const StateTensor &t : tensors)
    pmlir_rt_send(t.values, elementCount(t.shape), PMLIR_RT_F32, 0, &ppAxis, 1, kCheckpointTag);
}

/// Receives what sendState sent from member `peer` of the group over
/// `ppAxis`.
std::vector<StateTensor> receiveState(int64_t peer, int64_t ppAxis) {
  int64_t length = 0;
  pmlir_rt_recv(&length, 1, PMLIR_RT_I64, peer, &ppAxis, 1, kCheckpointTag);
  std::vector<int32_t> manifest(length);
  pmlir_rt_recv(manifest.data(), length, PMLIR_RT_I32, peer, &ppAxis, 1, kCheckpointTag);
  std::vector<StateTensor> tensors(manifest.empty() ? 0 : manifest[0]);
  size_t at = 1;
  for (StateTensor &t : tensors) {
    t.param = manifest[at++];
    int32_t rank = manifest[at++];
    for (int32_t d = 0; d < rank; ++d)
      t.shape.push_back(manifest[at++]);
    int32_t chars = manifest[at++];
    for (int32_t c = 0; c < chars; ++c)
      t.name.push_back(static_cast<char>(manifest[at++]));
  }
  for (StateTensor &t : tensors) {
    t.owned.resize(elementCount(t.shape));
    pmlir_rt_recv(t.owned.data(), static_cast<int64_t>(t.owned.size()), PMLIR_RT_F32, peer, &ppAxis,
                  1, kCheckpointTag);
    t.values = t.owned.data();
  }
  return tensors;
}

/// Prints --check's verdict on `losses` and the steps' `worst` comparison
/// (the steps after `done`); the failure, or "".
std::string reportCheck(llvm::ArrayRef<float> losses, llvm::ArrayRef<float> expected,
                        const StepComparison &worst, int64_t done, double tolerance) {
  int64_t steps = static_cast<int64_t>(losses.size());
  double worstLoss = 0;
  for (size_t i = 0; i < losses.size(); ++i) {
    double relative =
        std::abs(double(losses[i]) - expected[i]) / std::max(std::abs(double(expected[i])), 1e-30);
    worstLoss = std::max(worstLoss, std::isnan(relative) ? INFINITY : relative);
    llvm::outs() << llvm::format("check: step %lld loss %.6f, unsharded %.6f\n",
                                 static_cast<long long>(done + i + 1), losses[i], expected[i]);
  }
  auto verdict = [](bool ok) { return ok ? "ok" : "FAILED"; };
  bool lossOk = worstLoss <= tolerance;
  llvm::outs() << llvm::format("check: losses of %lld steps: worst relative error %.3g "
                               "(tolerance %.3g): %s\n",
                               static_cast<long long>(steps), worstLoss, tolerance,
                               verdict(lossOk));
  // Gradients to 10x the losses' tolerance: some sum terms that cancel to
  // a few digits (a key projection's along the keys' mean, which softmax
  // ignores), where the loss sums no such terms.
  double gradientTolerance = 10 * tolerance;
  bool gradientOk = worst.gradient.value <= gradientTolerance;
  llvm::outs() << llvm::format("check: gradients of %lld steps: worst relative error %.3g",
                               static_cast<long long>(steps), worst.gradientError)
               << " (" << worst.gradient.name << ")"
               << llvm::format(", %.3g of it the moments' rounding (tolerance %.3g): %s\n",
                               std::min(worst.gradientRounding, worst.gradientError),
                               gradientTolerance, verdict(gradientOk));
  bool adamwOk = worst.secondMoment.value <= 1 && worst.update.value <= 1;
  llvm::outs() << llvm::format("check: AdamW of %lld steps: second moments at %.3g of f32 "
                               "rounding's bound",
                               static_cast<long long>(steps), worst.secondMoment.value)
               << " (" << worst.secondMoment.name << ")"
               << llvm::format(", parameters at %.3g", worst.update.value) << " ("
               << worst.update.name << "): " << verdict(adamwOk) << "\n";
  if (!lossOk)
    return "the sharded losses differ from the unsharded run's by " +
           llvm::formatv("{0:e3}", worstLoss).str() + " (relative)";
  if (!gradientOk)
    return "the gradient of '" + worst.gradient.name + "' differs from the unsharded run's by " +
           llvm::formatv("{0:e3}", worst.gradientError).str() + " (relative)";
  if (worst.referenceFailed)
    return "the unsharded step's own AdamW update exceeds f32 rounding's bound (its lowering, "
           "not the sharding, is at fault)";
  if (!adamwOk) {
    bool moment = worst.secondMoment.value > 1;
    const Worst &w = moment ? worst.secondMoment : worst.update;
    return std::string(moment ? "the second moment" : "the update") + " of '" + w.name +
           "' departs from AdamW on its gradient by " + llvm::formatv("{0:f1}", w.value).str() +
           " times what f32 rounding allows";
  }
  return "";
}

} // namespace

namespace pmlir::exec {

/// --check's unsharded step: its program, bound arguments and batch, and
/// the AdamW constants of each parameter it updates.
struct Job::UnshardedStep {
  std::unique_ptr<JitProgram> program;
  std::vector<BoundArgument> args;
  EntrySignature signature;
  Batch batch;
  std::map<std::string, AdamWConstants> adamw;
  std::vector<size_t> updated;
  /// Each argument's index by its name.
  std::map<std::string, size_t> argumentAt;
  int64_t lossAt = -1;

  /// Takes step `t` (counted from 1) from the sharded run's state `before`
  /// on the batch the sharded step read from `data` (the bound inputs
  /// without it). Returns its loss, with `comparison` holding the sharded
  /// run's state `after` its step against this one's, or nullopt with
  /// `error`.
  std::optional<float> step(TokenData *data, int64_t t, const std::vector<StateTensor> &before,
                            const std::vector<StateTensor> &after, StepComparison &comparison,
                            std::string &error) {
    // By name: a pipeline stage's state comes in its own order.
    std::map<std::string, const StateTensor *> beforeByName, afterByName;
    for (const StateTensor &s : before)
      beforeByName.emplace(s.name, &s);
    for (const StateTensor &s : after)
      afterByName.emplace(s.name, &s);
    auto find = [](const std::map<std::string, const StateTensor *> &state,
                   const std::string &name) -> const StateTensor * {
      auto it = state.find(name);
      return it == state.end() ? nullptr : it->second;
    };
    for (size_t i : updated) {
      const TensorSpec &spec = signature.arguments[i];
      const StateTensor *whole = find(beforeByName, spec.name);
      if (!whole || whole->shape != spec.shape) {
        error = "the sharded run holds no whole '" + spec.name + "' of the unsharded step's shape";
        return std::nullopt;
      }
      std::memcpy(args[i].data, whole->values, elementCount(spec.shape) * sizeof(float));
    }
    program->toDevice(args, updated);
    if (data) {
      int64_t rows = batch.tokens() / batch.seq();
      data->fill((t - 1) * rows, rows, batch.wide, batch.idsData.data(), batch.labelsData.data());
      batch.scatter(args);
      program->toDevice(args, batch.arguments());
    }
    if (!program->run(error))
      return std::nullopt;
    float loss = program->result(lossAt)[0];
    program->releaseResults();
    program->toHost(args, updated);
    std::vector<ParameterStep> parameters;
    for (auto &[name, constants] : adamw) {
      const StateTensor *tensors[2][3];
      std::string names[3] = {
          name, training::optimizerStateName(name, training::kOptimizerStateKinds[0]),
          training::optimizerStateName(name, training::kOptimizerStateKinds[1])};
      for (int n = 0; n < 3; ++n) {
        tensors[0][n] = find(beforeByName, names[n]);
        tensors[1][n] = find(afterByName, names[n]);
        if (!argumentAt.count(names[n]) || !tensors[0][n] || !tensors[1][n]) {
          error = "the sharded run holds no '" + names[n] + "'";
          return std::nullopt;
        }
      }
      ParameterStep p;
      p.name = name;
      p.adamw = constants;
      p.size = elementCount(tensors[0][0]->shape);
      p.before = {tensors[0][0]->values, tensors[0][1]->values, tensors[0][2]->values};
      p.checked = {tensors[1][0]->values, tensors[1][1]->values, tensors[1][2]->values};
      auto argument = [&](const std::string &n) {
        return static_cast<const float *>(args[argumentAt.at(n)].data);
      };
      p.reference = {argument(names[0]), argument(names[1]), argument(names[2])};
      parameters.push_back(std::move(p));
    }
    comparison = compareStep(parameters, t);
    return loss;
  }
};

bool Job::prepareUnsharded(OwningOpRef<ModuleOp> &reference, UnshardedStep &out,
                           std::string &error) {
  PassManager drop(&context);
  drop.addPass(createDropShardings());
  if (failed(configure(drop)) || failed(drop.run(*reference))) {
    error = "dropping the shardings failed";
    return false;
  }
  auto entry = reference->lookupSymbol<func::FuncOp>(training::kTrainStepName);
  if (!entry || !describeEntry(entry, out.signature, error) ||
      !bindArguments(out.signature.arguments, out.signature.name, bindOptions(), out.args, error) ||
      !out.batch.locate(out.signature, error))
    return false;
  // The constants the step updates each parameter with, asked of its
  // tfm.adamw before the program is lowered.
  WalkResult walk = entry.walk([&](tfm::AdamWOp op) {
    auto param = dyn_cast<BlockArgument>(op.getParam());
    if (!param || param.getOwner()->getParentOp() != entry) {
      error = "a tfm.adamw of the unsharded step updates no argument of it";
      return WalkResult::interrupt();
    }
    out.adamw[out.signature.arguments[param.getArgNumber()].name] = {
        op.getLr().convertToDouble(), op.getBeta1().convertToDouble(),
        op.getBeta2().convertToDouble(), op.getEps().convertToDouble(),
        op.getWeightDecay().convertToDouble()};
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || !(out.program = compile(*reference, out.signature,
                                                       /*emit=*/false, error)))
    return false;
  out.program->bind(out.args);
  for (auto [i, spec] : llvm::enumerate(out.signature.arguments)) {
    out.argumentAt.emplace(spec.name, i);
    if (spec.updated)
      out.updated.push_back(i);
  }
  out.lossAt = resultNamed(out.signature, "loss");
  return true;
}

bool Job::writesBlock(const TensorSpec &spec) const {
  if (!mesh)
    return true;
  std::vector<int64_t> coordinates = mesh->coordinates(rank);
  for (int64_t a : nonPipelineAxes())
    for (int64_t lower = 0; lower < coordinates[a]; ++lower) {
      // A tensor held whole is the same block everywhere.
      if (!spec.block)
        return false;
      std::vector<int64_t> other = coordinates;
      other[a] = lower;
      std::string error;
      std::optional<BlockLayout> block = blockOf(spec, *mesh, other, error);
      if (block && block->offset == spec.block->offset)
        return false;
    }
  return true;
}

bool Job::saveCheckpointDirectory(JitProgram &program, const EntrySignature &signature,
                                  std::vector<BoundArgument> &args,
                                  const std::vector<size_t> &updated) {
  std::string error;
  // Rank 0 makes the directory the ranks write into.
  bool begun = rank != 0 || beginCheckpointDirectory(o.save, error);
  if (overRanks(!begun, PMLIR_RT_MAX) != 0) {
    if (rank == 0)
      fail("--save: " + error);
    return false;
  }
  program.toHost(args, updated);
  std::vector<ShardToWrite> shards;
  for (size_t i : updated) {
    const TensorSpec &spec = signature.arguments[i];
    if (writesBlock(spec))
      shards.push_back({spec.name, spec.role == Role::Param, spec.block, spec.shape,
                        static_cast<const float *>(args[i].data)});
  }
  maybeHang(rank, "save-write");
  bool written = writeCheckpointShards(o.save, rank, shards, error);
  if (!written)
    fail((mesh ? "rank " + std::to_string(rank) + ": " : std::string()) + "--save: " + error);
  // How many failed, and how many files the others wrote (rank 0 finds
  // them all or saves nothing).
  int64_t failures = overRanks(!written, PMLIR_RT_SUM);
  int64_t files = overRanks(written && !shards.empty(), PMLIR_RT_SUM);
  if (failures != 0) {
    if (rank == 0) {
      abandonCheckpointDirectory(o.save);
      if (mesh)
        fail("--save: " + llvm::Twine(failures) + (failures == 1 ? " rank" : " ranks") +
             " could not write " + (failures == 1 ? "its" : "their") + " part; nothing was saved");
    }
    return false;
  }
  if (rank == 0 && !commitCheckpointDirectory(o.save, mesh ? mesh->spec() : "", files, error,
                                              [&] { maybeHang(rank, "save-commit"); })) {
    abandonCheckpointDirectory(o.save);
    fail("--save: " + error + "; nothing was saved");
    return false;
  }
  return true;
}

int Job::train(JitProgram &program, const EntrySignature &signature,
               std::vector<BoundArgument> &args, const std::map<unsigned, IdRange> &idRanges,
               OwningOpRef<ModuleOp> &reference) {
  std::string error;
  int64_t lossAt = resultNamed(signature, "loss");
  int64_t normAt = resultNamed(signature, "grad_norm");
  int64_t stepArg = argumentNamed(signature, training::kStepName);
  Batch batch;
  bool pipelined = o.pipelineSchedule != pipe::ScheduleKind::None;
  // The steps already taken: a checkpoint's, or none.
  std::optional<int64_t> taken;
  // --check: rank 0 takes each step again, unsharded, from the state the
  // sharded run took it from, and compares the two (StepCheck.h).
  std::unique_ptr<UnshardedStep> unsharded;
  // The ids the steps will read, checked before the first (each rank reads
  // the whole batch): an id outside the vocabulary is found now, not after
  // the steps before it.
  auto badTokens = [&](int64_t done) -> std::optional<std::string> {
    if (batch.tokens() == 0 || !tokens)
      return std::nullopt;
    int64_t vocab = idRanges.count(batch.ids) ? idRanges.at(batch.ids).vocab : INT64_MAX;
    int64_t rows = batch.tokens() / batch.seq(), at = 0, ordinal = 0;
    // Rows past the windows the file holds come round again within a step.
    if (rows > tokens->windows() && rank == 0)
      warn("--data '" + o.data + "' holds " + std::to_string(tokens->windows()) + " windows of " +
           std::to_string(batch.seq() + 1) + " tokens, fewer than a step's " +
           std::to_string(rows) + " rows: each step repeats some of them");
    std::optional<int64_t> bad =
        tokens->firstOutside(done * rows, o.steps * rows, vocab, at, ordinal);
    if (!bad)
      return std::nullopt;
    return "--data '" + o.data + "': token id " + std::to_string(*bad) + " at index " +
           std::to_string(at) + " (read by step " + std::to_string(done + ordinal / rows + 1) +
           ") is outside the vocabulary [0, " + std::to_string(vocab) + ")";
  };
  // Every rank comes to the first step, or none.
  std::string mine;
  if (lossAt < 0 || normAt < 0 || stepArg < 0)
    mine = "@" + signature.name + " is no training step (pmlir-optimizer's)";
  else if (!batch.locate(signature, error, pipelined))
    mine = error;
  else if (!(taken = stepsTaken(*static_cast<const float *>(args[stepArg].data), error)))
    mine = "--resume " + o.resume + ": " + error;
  else if (*taken + o.steps > kLastStep)
    mine = "--steps " + std::to_string(o.steps) + " after step " + std::to_string(*taken) +
           " would count past step " + std::to_string(kLastStep) +
           ", the last an f32 step counter holds exactly";
  else if (std::optional<std::string> bad = badTokens(*taken))
    mine = *bad;
  else if (o.check && rank == 0 &&
           !prepareUnsharded(reference, *(unsharded = std::make_unique<UnshardedStep>()), error))
    mine = "the unsharded run of --check: " + error;
  if (int status = stopIfAnyFailed(mine))
    return status;
  TokenData *data = batch.tokens() > 0 ? tokens.get() : nullptr;
  int64_t done = *taken;

  std::vector<size_t> updated;
  for (auto [i, spec] : llvm::enumerate(signature.arguments))
    if (spec.updated)
      updated.push_back(i);
  // The parameters and optimizer state, whole on rank 0 (every rank takes
  // part): with pipeline stages, each pipeline rank's first rank holds its
  // stages' whole and sends them to rank 0 (a tied embedding and the step,
  // held by several, are kept once).
  auto gatherState = [&](std::vector<StateTensor> &whole) -> bool {
    whole.clear();
    program.toHost(args, updated);
    for (size_t i : updated) {
      const TensorSpec &spec = signature.arguments[i];
      AssembledResult assembled;
      if (!assemble(static_cast<const float *>(args[i].data), spec, assembled, error)) {
        error = "argument '" + spec.name + "' " + error;
        return false;
      }
      if (!checksHere())
        continue;
      StateTensor t{spec.name, spec.role == Role::Param, assembled.shape, nullptr, {}};
      if (assembled.owned.empty())
        t.owned.assign(assembled.values, assembled.values + elementCount(t.shape));
      else
        t.owned = std::move(assembled.owned);
      t.values = t.owned.data();
      whole.push_back(std::move(t));
    }
    if (pipelined && checksHere()) {
      int64_t ppAxis = mesh->axisIndex("pp");
      if (mesh->coordinates(rank)[ppAxis] != 0) {
        sendState(whole, ppAxis);
      } else {
        for (int64_t peer = 1; peer < mesh->axisSizes()[ppAxis]; ++peer)
          for (StateTensor &t : receiveState(peer, ppAxis))
            if (llvm::none_of(whole, [&](const StateTensor &c) { return c.name == t.name; }))
              whole.push_back(std::move(t));
      }
    }
    return true;
  };

  std::vector<StateTensor> before, after;
  if (o.check && !gatherState(before))
    return failHere(error);
  std::vector<float> losses, expectedLosses;
  StepComparison worst;

  bool terminal = rank == 0 && outputIsTerminal();
  maybeHang(rank, "step");
  stepsBegin();
  int64_t stoppedAfter = -1;
  for (int64_t i = 0; i < o.steps; ++i) {
    int64_t step = done + i + 1;
    if (data) {
      // Its ids were checked before the first step (badTokens).
      int64_t rows = batch.tokens() / batch.seq();
      data->fill((step - 1) * rows, rows, batch.wide, batch.idsData.data(),
                 batch.labelsData.data());
      batch.scatter(args);
      program.toDevice(args, batch.arguments());
    }
    auto start = std::chrono::steady_clock::now();
    std::string region = "step " + std::to_string(step);
    pmlir_rt_trace_region_begin(region.c_str());
    pmlir_rt_clear_step_metrics();
    if (!program.run(error))
      return failHere(error);
    pmlir_rt_trace_region_end();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Before --check's unsharded step, which would add its own.
    std::string metrics = stepMetricsReport();
    float loss = program.result(lossAt)[0], norm = program.result(normAt)[0];
    losses.push_back(loss);
    // Every rank holds the same loss and norm: all stop together.
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      std::string first;
      for (auto [r, result] : llvm::enumerate(signature.results))
        if (llvm::StringRef(result.name).ends_with(".grad_norm") && result.shape.empty() &&
            !std::isfinite(program.result(r)[0])) {
          first = result.name.substr(0, result.name.size() - 10);
          break;
        }
      if (rank == 0) {
        if (terminal)
          llvm::outs() << "\r\033[K";
        fail("step " + llvm::Twine(step) + ": the loss is " + llvm::formatv("{0}", loss).str() +
             " and the gradient norm " + llvm::formatv("{0}", norm).str() +
             (first.empty()
                  ? std::string()
                  : "; the first parameter with a non-finite gradient is '" + first + "'") +
             " (non-finite weights or inputs, or a learning rate too large); nothing was saved");
      }
      if (mesh)
        pmlir_rt_finalize();
      return 1;
    }
    program.releaseResults();
    if (o.check) {
      if (!gatherState(after))
        return failHere(error);
      if (unsharded) {
        maybeHang(rank, "check");
        StepComparison comparison;
        std::optional<float> expected =
            unsharded->step(data, step, before, after, comparison, error);
        if (!expected)
          return failHere("the unsharded run of --check: " + error);
        expectedLosses.push_back(*expected);
        worst.merge(comparison);
      }
      before = std::move(after);
    }
    if (rank == 0) {
      if (terminal)
        llvm::outs() << "\r\033[K";
      llvm::outs() << llvm::format("step %lld: loss %.6f, grad norm %.4g, %.0f tokens/s\n",
                                   static_cast<long long>(step), loss, norm,
                                   batch.tokens() / seconds)
                   << metrics;
      if (terminal) {
        int width = 30, filled = static_cast<int>(width * (i + 1) / o.steps);
        llvm::outs() << "[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] "
                     << (i + 1) << "/" << o.steps;
      }
      llvm::outs().flush();
    }
    // A stop request (a signal, see catchStopRequests) is honoured after
    // a step, by every rank after the same one: the state saved is that
    // step's.
    if (i + 1 < o.steps) {
      int64_t stopping = stopRequest() != 0;
      if (mesh)
        stopping = overRanks(stopping, PMLIR_RT_MAX);
      if (stopping) {
        stoppedAfter = step;
        break;
      }
    }
  }
  if (terminal)
    llvm::outs() << "\r\033[K";
  // Every rank is here after the same steps: the peak of its training.
  measurePeakResident();
  // The trace is rank 0's to write; every rank learns whether it could
  // before the collectives that follow.
  bool traced = writeTrace(error);
  if (mesh && !o.trace.empty())
    traced = overRanks(!traced, PMLIR_RT_MAX) == 0;
  if (!traced && rank == 0)
    return failAtEnd("--trace: " + error);
  if (!traced) {
    pmlir_rt_finalize();
    return 1;
  }
  // An update can overflow where the step's loss and gradients did not (a
  // learning rate too large): the state a save or an export would write is
  // checked first, by each rank in its own blocks.
  if (!o.save.empty() || !o.exportHf.empty()) {
    program.toHost(args, updated);
    std::string mine;
    for (size_t i : updated) {
      if (signature.arguments[i].element != ElementKind::F32)
        continue;
      const float *values = static_cast<const float *>(args[i].data);
      int64_t bad = firstNonFinite(values, elementCount(args[i].shape));
      if (bad < 0)
        continue;
      int64_t last = stoppedAfter >= 0 ? stoppedAfter : done + o.steps;
      mine = "after step " + std::to_string(last) + ", '" + args[i].name + "' holds " +
             nonFiniteName(values[bad]) + " at flat index " + std::to_string(bad) +
             (mesh ? " of this rank's block" : "") +
             ": the update overflowed (a learning rate too large); nothing was saved";
      break;
    }
    if (int status = stopIfAnyFailed(mine))
      return status;
  }
  // What rank 0 writes: the state after the last step, whole (--check
  // gathered it already). A checkpoint directory every rank writes itself.
  bool savesDirectory = !o.save.empty() && isCheckpointDirectory(o.save);
  bool savesFile = !o.save.empty() && !savesDirectory;
  std::vector<StateTensor> gathered;
  bool gathers = savesFile || !o.exportHf.empty();
  if (gathers) {
    if (o.check)
      gathered = std::move(before);
    else if (!gatherState(gathered))
      return failAtEnd(error);
  }
  if (o.check) {
    // The verdict is rank 0's; the ranks that save a directory learn it.
    std::string failure =
        unsharded ? reportCheck(losses, expectedLosses, worst, done, o.tolerance) : "";
    bool failed = !failure.empty();
    if (savesDirectory)
      failed = overRanks(failed, PMLIR_RT_MAX) != 0;
    if (failed && rank == 0)
      return failAtEnd("--check: " + failure +
                       (gathers || savesDirectory ? "; nothing was saved" : ""));
    if (failed) {
      pmlir_rt_finalize();
      return 1;
    }
  }
  // The resumed directory is read no more: unmapped before a save that
  // may replace it (open files of a removed directory stay behind on
  // NFS, as .nfs files the next save would find).
  checkpoint.reset();
  if (savesDirectory && !saveCheckpointDirectory(program, signature, args, updated)) {
    if (mesh)
      pmlir_rt_finalize();
    return 1;
  }
  if (savesFile && rank == 0) {
    maybeHang(rank, "output");
    std::vector<TensorToWrite> parameters, optimizer;
    for (const StateTensor &t : gathered)
      (t.param ? parameters : optimizer).push_back({t.name, DType::F32, t.shape, t.values});
    if (!writeCheckpoint(o.save, parameters, optimizer, error,
                         [&] { maybeHang(rank, "save-commit"); }))
      return failAtEnd("--save: " + error);
  }
  if (!o.exportHf.empty() && rank == 0) {
    // The parameters under the names transformers' model class loads.
    std::vector<std::string> names;
    std::vector<TensorToWrite> parameters;
    for (const StateTensor &t : gathered)
      if (t.param) {
        names.push_back(huggingFaceName(huggingFaceConfig, t.name, error));
        if (names.back().empty())
          return failAtEnd("--export-hf: " + o.model + ": " + error);
      }
    size_t k = 0;
    for (const StateTensor &t : gathered)
      if (t.param)
        for (TensorToWrite &part : unstacked({names[k++], DType::F32, t.shape, t.values}))
          parameters.push_back(std::move(part));
    if (!exportHuggingFace(o.exportHf, huggingFaceConfig, parameters, error))
      return failAtEnd("--export-hf: " + error);
  }
  reportPeakResident();
  if (stoppedAfter >= 0 && rank == 0)
    warn("stopped as asked after step " + std::to_string(stoppedAfter) + " of " +
         std::to_string(done + o.steps) +
         (o.save.empty() ? "; nothing was saved (no --save)"
                         : "; --save " + o.save + " holds step " + std::to_string(stoppedAfter)));
  // Alone, a process asked to end ends by the signal that asked (also when
  // its last step was under way), as it would have without the stop; a
  // rank ends cleanly, and its launcher by the signal.
  if (int signal = stopRequest(); signal && !mesh) {
    std::signal(signal, SIG_DFL);
    raise(signal);
  }
  if (mesh)
    pmlir_rt_finalize();
  return 0;
}

} // namespace pmlir::exec
