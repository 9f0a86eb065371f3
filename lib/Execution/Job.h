//===- Job.h - One run of pmlir-run on this process -------------*- C++ -*-===//
//
// Part of pmlir.
//
// Private to lib/Execution: the job that Runner.cpp (compile, run, report)
// and Training.cpp (--train's loop, checkpoints) share.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_EXECUTION_JOB_H
#define PMLIR_LIB_EXECUTION_JOB_H

#include "pmlir/Execution/Binding.h"
#include "pmlir/Execution/CheckpointDirectory.h"
#include "pmlir/Execution/Program.h"
#include "pmlir/Execution/Runner.h"
#include "pmlir/Execution/TokenData.h"
#include "pmlir/Planning/StepTime.h"
#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/SafeTensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/WithColor.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace pmlir::exec {

/// Prints an error or a warning in one write: the ranks of a job share
/// standard error, and pieces written apart interleave with another rank's.
inline void diagnose(bool error, const llvm::Twine &message) {
  std::string line;
  llvm::raw_string_ostream out(line);
  out.enable_colors(llvm::errs().has_colors());
  (error ? llvm::WithColor::error(out, "pmlir-run") : llvm::WithColor::warning(out, "pmlir-run"))
      << message << "\n";
  llvm::errs() << line;
}

inline int fail(const llvm::Twine &message) {
  diagnose(/*error=*/true, message);
  return 1;
}

inline void warn(const llvm::Twine &message) { diagnose(/*error=*/false, message); }

/// Whether the output of a job launched through mpirun ends on a terminal:
/// set by the launching pmlir-run, read by its ranks.
inline constexpr const char *kTerminalEnv = "PMLIR_RUN_OUTPUT_IS_TERMINAL";

/// Whether this process' standard output ends on a terminal.
inline bool outputIsTerminal() {
  if (const char *set = getenv(kTerminalEnv))
    return set[0] == '1';
  return isatty(STDOUT_FILENO);
}

/// Token ids index embedding tables and labels the logits' columns: per
/// argument, the vocabulary and the one value outside it a label may take.
struct IdRange {
  int64_t vocab;
  std::optional<int64_t> ignored;
};

using mlir::LogicalResult;
using mlir::MLIRContext;
using mlir::ModuleOp;
using mlir::OwningOpRef;
using mlir::PassManager;

/// The bytes this process has resident now, and at most so far.
int64_t residentBytes();
int64_t peakResidentBytes();

/// One run on this process: one rank of a mesh, or the whole job.
class Job {
public:
  /// `mesh` is --mesh parsed (nullopt without one, or with `meshError`
  /// where it does not parse): the one parse of it in the process.
  Job(const RunOptions &options, MLIRContext &context, std::optional<Mesh> mesh,
      std::string meshError)
      : o(options), context(context), mesh(std::move(mesh)), meshError(std::move(meshError)) {}
  int run();

private:
  /// Rank 0's --comm-report and --memory-report of the sharded `module`:
  /// both written, or neither (false with `error` set).
  bool writeReports(ModuleOp module, std::string &error);

  const RunOptions &o;
  MLIRContext &context;
  std::optional<Mesh> mesh;
  std::string meshError;
  int64_t rank = 0;
  /// --weights (or --resume's parameters), --inputs, --resume's optimizer
  /// state.
  std::unique_ptr<SafeTensorsSet> weights;
  std::unique_ptr<SafeTensorsFile> inputs, state;
  /// --resume of a checkpoint directory: parameters and optimizer state.
  std::unique_ptr<CheckpointDirectory> checkpoint;
  /// The tfm.name of each parameter of the model as given (before any
  /// pipeline stage keeps some of them).
  std::vector<std::string> modelParams;
  /// The model's tfm.huggingface_config ("" when it has none).
  std::string huggingFaceConfig;
  /// --data: the token file a training run reads its batches from.
  std::unique_ptr<TokenData> tokens;
  /// Every rank's peak resident bytes once its runs are done (on rank 0).
  std::vector<int64_t> peakResident;
  /// With a GPU: every rank's peak of device memory its tensors took, and
  /// the GEMM workspace (on rank 0).
  std::vector<int64_t> peakDevice;

  /// --predict: compiles `module` (at the rank phase, its entry `entry`)
  /// as the run would, and prints every rank's predicted peak and the
  /// step's predicted time instead of running it (RankMemory.cpp).
  int predict(ModuleOp module, mlir::func::FuncOp entry, bool pipelined);
  /// --predict's step: the tokens one call of the entry consumes (its
  /// token ids' elements) and the model FLOPs of one call (the forward's
  /// matmul and attention FLOPs per token, times 3 for a gradient), set by
  /// run().
  int64_t tokensPerStep = 0;
  /// The metrics the program reports after each step (tfm.step_metric).
  struct StepMetric {
    int64_t kind, index, size;
  };
  std::vector<StepMetric> stepMetrics;
  double modelFlopsPerStep = 0;
  /// --predict's step time: every rank's compiled program (its
  /// tfm.step_work) priced on the device profile, and the ranks' timelines
  /// run against each other (RankTime.cpp). A collective of every rank;
  /// the simulation is rank 0's, a deadlock in it the caller's to report.
  /// nullopt with `error` where a rank's work or the profile cannot be had
  /// (every rank fails alike).
  struct StepPrediction {
    planning::StepSimulation simulation;
    planning::DeviceProfile profile;
    /// Where the profile comes from: "measured on this host (cached in
    /// F)" or the file given.
    std::string source;
    /// What the simulation's deadlock says, with why on a GPU.
    std::string deadlockText() const;
  };
  /// The step priced on the profile `profileName` names (--profile's
  /// values).
  std::optional<StepPrediction> predictStepTime(ModuleOp module, const std::string &profileName,
                                                std::string &error);
  /// A GPU job on a mesh: whether its ranks' sends and receives, in their
  /// lowered programs' order, meet as NCCL issues them (a send waits for its
  /// receive); where they would wait for each other forever, rank 0 says
  /// where and every rank finalizes and fails (a collective of every rank).
  /// Programs whose work cannot be counted pass unchecked.
  LogicalResult checkMessagesMeet(ModuleOp module);
  /// --profile cpu: this host's rates for `work`, measured on the threads
  /// set for the run, cached (RankTime.cpp).
  std::optional<planning::DeviceProfile> cpuProfile(const StepWork &work, std::string &source,
                                                    std::string &error);
  /// A program of loops (tfm text with an entry @calibrate) compiled as the
  /// run compiles and timed: its loops' bytes and operations
  /// (pmlir-step-work) and the seconds of a call on a quiet host
  /// (rt::quietSeconds).
  /// Runs `measure` on every rank (a collective of every rank): all at
  /// once, or, where the host's ranks want more threads than it has cores,
  /// one rank at a time, each alone on the host as the profile's rates
  /// mean (the step's simulation then shares the cores among the ranks
  /// computing at once: planning::HostSharing). False where it failed on
  /// any rank.
  bool measureInTurns(llvm::function_ref<bool()> measure);
  struct LoopSample {
    double bytes, operations, seconds;
  };
  std::optional<LoopSample> timeGeneratedLoops(const char *text, std::string &error);
  /// The step's tokens per second, and its model FLOPs over the job's
  /// peak (0 where either is unknown).
  double tokensPerSecond(double stepSeconds) const;
  double utilization(double stepSeconds, const planning::DeviceProfile &profile) const;
  /// The text report of the step's time, on rank 0.
  void printStepPrediction(const StepPrediction &step) const;
  /// Every rank's peak so far, taken by every rank at the same point of
  /// the job; printed by rank 0 at its end.
  void measurePeakResident();
  void reportPeakResident() const;
  /// `mine` from every rank, rank by rank (a collective of every rank).
  std::vector<int64_t> fromEveryRank(const std::vector<int64_t> &mine) const;

  /// Stops here forever if the fault tests asked this rank to hang at
  /// `phase`.
  void maybeHang(int64_t who, llvm::StringRef phase) const {
    if (o.hangRank != who || o.hangAt != phase)
      return;
    llvm::errs() << "pmlir-run: rank " << who << ": hanging at " << phase << " (--test-hang-at)\n";
    for (;;)
      pause();
  }
  /// A failure anywhere names its rank and ends the job.
  int failHere(const llvm::Twine &message) const {
    if (mesh)
      pmlir_rt_fail(message.str().c_str());
    return fail(message);
  }
  /// A failure every rank meets alike, from what all of them read alike
  /// (the model, its program) or a verdict rank 0 reached for all: rank 0
  /// says why, and all end cleanly,
  /// exit 1 (an MPI_Abort racing the others' MPI_Finalize can leave
  /// mpirun hanging). An empty message: a diagnostic has said why.
  int failAlike(const llvm::Twine &message) const {
    if (std::string text = message.str(); rank == 0 && !text.empty())
      fail(text);
    if (mesh)
      pmlir_rt_finalize();
    return 1;
  }
  /// Where ranks may fail apart (each reads its own blocks and compiles its
  /// own program) or alike: every rank comes here with its failure, ""
  /// where it went well. 0 where none failed; else the lowest rank that
  /// failed has said why, once, every rank has ended cleanly, and this is
  /// the job's exit status.
  int stopIfAnyFailed(const std::string &mine) const {
    if (!mesh)
      return mine.empty() ? 0 : fail(mine);
    int64_t first = pmlir_rt_first_failed_rank(mine.empty() ? 0 : 1);
    if (first < 0)
      return 0;
    if (first == rank)
      fail("rank " + llvm::Twine(rank) + ": " + mine);
    pmlir_rt_finalize();
    return 1;
  }
  /// A failure of rank 0 alone once every collective is done (--check, the
  /// output file): the others are finalizing, and an MPI_Abort racing
  /// their MPI_Finalize can leave mpirun hanging, so end cleanly, exit 1.
  int failAtEnd(const llvm::Twine &message) const {
    if (!mesh)
      return fail(message);
    fail("rank " + llvm::Twine(rank) + ": " + message);
    pmlir_rt_finalize();
    return 1;
  }
  /// --trace: every rank's spans to rank 0, which writes the file. Every
  /// rank calls it once its runs are done; false with `error` on rank 0 when
  /// the file cannot be written.
  bool writeTrace(std::string &error) const {
    if (!mesh || o.trace.empty())
      return true;
    char text[512] = "";
    if (pmlir_rt_trace_write(o.trace.c_str(), text, sizeof(text)) == 0)
      return true;
    error = text;
    return false;
  }
  /// Every axis of the mesh: the group of every rank of the job.
  std::vector<int64_t> allAxes() const {
    std::vector<int64_t> axes;
    if (mesh)
      for (size_t a = 0; a < mesh->axisSizes().size(); ++a)
        axes.push_back(static_cast<int64_t>(a));
    return axes;
  }
  /// The mesh axes other than the pipeline's, and whether this rank is the
  /// first of its group over them: with pipeline stages, each stage's
  /// parameters are checked on their pipeline rank's first rank.
  std::vector<int64_t> nonPipelineAxes() const {
    std::vector<int64_t> axes;
    if (mesh)
      for (size_t a = 0; a < mesh->axisSizes().size(); ++a)
        if (o.pipelineSchedule == pipe::ScheduleKind::None || mesh->axisNames()[a] != "pp")
          axes.push_back(static_cast<int64_t>(a));
    return axes;
  }
  bool checksHere() const {
    if (!mesh)
      return true;
    std::vector<int64_t> coordinates = mesh->coordinates(rank);
    for (int64_t a : nonPipelineAxes())
      if (coordinates[a] != 0)
        return false;
    return true;
  }
  /// `value` reduced by `op` over every rank of the job (itself without a
  /// mesh): how the ranks agree on a verdict.
  int64_t overRanks(int64_t value, pmlir_rt_reduction op) const {
    if (!mesh)
      return value;
    std::vector<int64_t> axes = allAxes();
    int64_t result = value;
    pmlir_rt_all_reduce(&value, &result, 1, PMLIR_RT_I64, op, axes.data(),
                        static_cast<int64_t>(axes.size()));
    return result;
  }
  /// How arguments bind from this job's files (warnings off).
  BindOptions bindOptions() const {
    BindOptions bind;
    bind.weights = weights.get();
    bind.inputs = inputs.get();
    bind.state = state.get();
    bind.checkpoint = checkpoint.get();
    bind.generatedInputs = !o.data.empty();
    bind.initMissing = o.initMissing;
    bind.seed = o.seed;
    bind.threads = o.threads > 0 ? o.threads : pmlir_rt_default_threads();
    return bind;
  }
  /// A pass manager on this job's context, configured as the tool asked
  /// on rank 0 (IR printing, timing); other ranks compile the same.
  LogicalResult configure(PassManager &pm) const {
    if (rank == 0 && o.configurePassManager)
      return o.configurePassManager(pm);
    return mlir::success();
  }
  /// Runs `pm` (configured) on `target`. Rank 0 prints its diagnostics;
  /// the others keep their errors and, where the run fails, add them to
  /// `error`, for a failure of theirs alone (a pipeline rank's stages) to
  /// be told.
  LogicalResult runPasses(PassManager &pm, mlir::Operation *target, std::string &error) const;
  /// Lowers `module` for the job's target with its function `entry` as the
  /// entry (the compile pipeline's last phase); `emit` writes the lowered
  /// module to --emit-compiled.
  LogicalResult lower(ModuleOp module, const std::string &entry, bool emit,
                      std::string &error) const;
  /// Lowers `module` for the entry and JIT-compiles it.
  std::unique_ptr<JitProgram> compile(ModuleOp module, const EntrySignature &signature, bool emit,
                                      std::string &error) const;
  /// A result of the program as a whole tensor on rank 0.
  struct AssembledResult {
    const float *values = nullptr;
    std::vector<int64_t> shape;
    std::vector<float> owned; ///< the assembled blocks of a sharded result
  };
  bool assembleResult(JitProgram &program, const TensorSpec &result, size_t i, AssembledResult &out,
                      std::string &error) const;
  int assembleAndReport(JitProgram &program, const EntrySignature &signature,
                        OwningOpRef<ModuleOp> &reference);
  /// --verbose: how many of the program's loops ran split over threads.
  void reportLoops() const;
  /// Finds the step metrics of the global program `module`; the error
  /// where two of one kind and index disagree on their size, else "".
  std::string findStepMetrics(ModuleOp module);
  /// What the program added to its step metrics since they were cleared,
  /// as lines for rank 0 to print ("" elsewhere, or without metrics); every
  /// rank takes part.
  std::string stepMetricsReport() const;
  /// The blocks of `data`, this rank's block of the tensor `spec`,
  /// assembled on rank 0 (every rank takes part).
  bool assemble(const float *data, const TensorSpec &spec, AssembledResult &out,
                std::string &error) const;

  /// --train: runs `program` (a training step) o.steps times on `args`,
  /// inputs from o.inputs or o.data; saves and checks as asked.
  int train(JitProgram &program, const EntrySignature &signature, std::vector<BoundArgument> &args,
            const std::map<unsigned, IdRange> &idRanges, OwningOpRef<ModuleOp> &reference);
  /// Whether this rank writes its block of `spec` to a checkpoint
  /// directory: no rank of lower coordinate on any axis (the pipeline's
  /// aside) holds the same block.
  bool writesBlock(const TensorSpec &spec) const;
  /// --save of a checkpoint directory: every rank writes its blocks of the
  /// updated arguments `updated`; rank 0 commits. Every rank takes part;
  /// false once the failure is reported (nothing saved).
  bool saveCheckpointDirectory(JitProgram &program, const EntrySignature &signature,
                               std::vector<BoundArgument> &args,
                               const std::vector<size_t> &updated);
  /// --check of --train: the unsharded training step, compiled on rank 0,
  /// which takes each step from the sharded run's state.
  struct UnshardedStep;
  bool prepareUnsharded(OwningOpRef<ModuleOp> &reference, UnshardedStep &out, std::string &error);
};

} // namespace pmlir::exec

#endif // PMLIR_LIB_EXECUTION_JOB_H
