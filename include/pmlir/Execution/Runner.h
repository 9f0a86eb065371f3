//===- Runner.h - Compile and run a tfm model on one or many ranks -*- C++ -*-===//
//
// Part of pmlir.
//
// What pmlir-run does, as a library: options in, an exit status out. A
// global program with a mesh is sharded (pmlir-sharding-pipeline), lowered
// (pmlir-cpu-pipeline), JIT-compiled and run on arguments bound from
// safetensors files; on a mesh, started outside mpirun it launches itself
// on every rank, and under mpirun it is one rank. Sharded results are
// assembled on rank 0; --check compiles and runs the unsharded program
// (pmlir-drop-shardings) there and compares.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_RUNNER_H
#define PMLIR_EXECUTION_RUNNER_H

#include "pmlir/Compiler/CompilePipeline.h"
#include "pmlir/Execution/TokenData.h"
#include "pmlir/Runtime/Runtime.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::exec {

/// What pmlir-run runs and how. RunFlags (RunFlags.h) binds each of
/// pmlir-run's flags to one of these fields.
struct RunOptions {
  using Recipe = ShardingPipelineOptions::Recipe;
  using ContextAttention = ShardingPipelineOptions::ContextAttention;
  using ContextLayout = ShardingPipelineOptions::ContextLayout;

  std::string model;
  std::string entry = "forward";
  std::string weights, inputs, output;
  /// With weights: seed the weights the file lacks instead of failing.
  bool initMissing = false;
  /// With weights: run although the file holds tensors the model does not
  /// use (other than those that provably change nothing).
  bool allowUnusedWeights = false;
  uint64_t seed = 0;

  /// The mesh ("tp=2,dp=2"; empty: one process) and its rank order.
  std::string mesh, rankOrder;
  /// The hosts the mesh's ranks run on: an Open MPI host file passed to
  /// mpirun (empty: all on this host).
  std::string hostfile;
  /// Seconds a collective may wait before the job ends (<= 0: no limit).
  double timeout = 60;
  /// Compare each collective's fingerprint across its group before it
  /// runs (pmlir_rt_check_collectives).
  bool checkCollectives = false;
  /// Where the collectives run on a mesh: MPI (host memory), or NCCL (one
  /// GPU per rank; host buffers are staged through it). None: NCCL with a
  /// GPU device, else MPI.
  std::optional<pmlir_rt_backend> backend;
  /// Where the program runs: the CPU (pmlir-cpu-pipeline) or a GPU
  /// (pmlir-gpu-pipeline, one GPU per rank).
  CompileTarget device = CompileTarget::Cpu;
  /// With a GPU device: the chip the kernels are compiled for (empty: the
  /// rank's GPU's).
  std::string gpuChip;
  Precision precision = Precision::F32;
  /// With bf16: the program rounds the weights in each call, instead of
  /// taking the bf16 forms pmlir-run rounds once when it binds them.
  bool bf16WeightsPerCall = false;
  /// Shard a global program with this recipe (auto: pmlir-auto-sharding
  /// on `topology` within `memoryBudget`).
  Recipe recipe = Recipe::None;
  /// ("": the "cpu" preset, the device's memory).
  std::string topology, memoryBudget;
  bool sequenceParallel = false;
  /// Attention over a sequence split on the cp axis (none given:
  /// all-gather).
  std::optional<ContextAttention> cpAttention;
  /// The order of a sequence split on the cp axis (none given: balanced,
  /// head-tail, where cp > 1).
  std::optional<ContextLayout> cpLayout;
  std::string commReport, memoryReport;
  /// Write a Chrome trace of every rank's work (pipeline fragments, host
  /// steps) and communication here.
  std::string trace;
  /// Also run the unsharded program on rank 0 and compare.
  bool check = false;
  double tolerance = 1e-5;

  /// Differentiate the entry's loss (pmlir-autodiff) and write the loss and
  /// each parameter's gradient here instead of running the entry.
  std::string grads;
  /// What the backward pass recomputes.
  training::Recompute recompute = training::Recompute::Selective;

  /// Train: build a training step of the entry's loss (pmlir-autodiff,
  /// pmlir-optimizer) and run it `steps` times, on the batch of --inputs
  /// every step or on consecutive windows of the token file `data`.
  bool train = false;
  int64_t steps = 1;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  /// ZeRO stage of the training step on the mesh's dp axis (0: none).
  int64_t zero = 0;
  /// Clip the gradients to this global norm (0: no clipping).
  double clipGradNorm = 0;
  int64_t gradAccum = 1;
  /// Pipeline parallelism on the mesh's pp axis, of the training step or
  /// (without train) the forward: the schedule (None: no pipeline), its
  /// microbatches (each of the model's batch size) and stages per pipeline
  /// rank.
  pipe::ScheduleKind pipelineSchedule = pipe::ScheduleKind::None;
  /// With pipelineSchedule Csv: torch.distributed.pipelining's CSV.
  std::string pipelineCsv;
  int64_t microbatches = 1, virtualStages = 1;
  /// The first layer of stages 1, 2, ... (empty: balanced by FLOPs).
  std::vector<int64_t> pipelineSplit;
  std::string data;
  TokenDtype dataDtype = TokenDtype::UInt16;
  /// Write the parameters (and, beside them, the optimizer state) here at
  /// the end; start from such a checkpoint.
  std::string save, resume;

  /// Print the process groups of each axis of `mesh` and stop.
  bool printGroups = false;
  /// Print shape, mean, std and the first values of the result.
  bool print = false;
  /// After a warm-up, run this many times and print the median time.
  unsigned repeat = 0;
  /// Threads of the GEMMs (0: all cores).
  int threads = 0;
  /// LLVM's optimization level for the compiled program (0-3). -O3's
  /// unrolling makes basic blocks that x86's schedulers take quadratic
  /// time over: a 2-layer training step compiles in 18 s at -O3 and 4 s
  /// at -O2, and runs as fast (docs/performance.md).
  unsigned jitOptLevel = 2;
  /// Write the module handed to the JIT (the LLVM dialect) here.
  std::string emitCompiled;
  /// Compile (writing emitCompiled and the reports) and stop before any
  /// binding, JIT or run; a GPU program needs gpuChip instead of a GPU.
  bool compileOnly = false;
  /// Compile as the run would and print each rank's predicted peak
  /// resident memory and the step's predicted time instead of running;
  /// `json`: as one JSON object.
  bool predict = false;
  bool json = false;
  /// --predict's device profile: "cpu" (calibrated on this host, cached)
  /// or a JSON file of fixed rates (planning::DeviceProfile::fromJson).
  std::string profile = "cpu";

  /// How to start this same run on every rank (the command line that
  /// launched it, its first word the executable).
  std::vector<std::string> relaunch;
  /// Applied to every pass manager that rank 0 runs (IR printing, timing).
  std::function<mlir::LogicalResult(mlir::PassManager &)> configurePassManager;

  /// Fault injection for the fault tests: this rank stops (until killed)
  /// at `hangAt` ("start-up", "step" (before the first training step),
  /// "check", "output", or "save-commit": a checkpoint's files written,
  /// neither in place).
  /// --train: a Hugging Face model directory to write the trained
  /// parameters to (config.json and model.safetensors).
  std::string exportHf;

  /// Each rank prints the bytes of parameters it read from the files.
  bool printBytesRead = false;
  /// Print what the run chose that the user did not: the GEMM kernels.
  bool verbose = false;

  int64_t hangRank = -1;
  std::string hangAt;
  /// Fault injection for --check's tests: every rank's `wrongGroupAt`th
  /// all-reduce (from 1) reduces over the rank alone (0: none).
  int64_t wrongGroupAt = 0;
};

/// The dialects and interfaces a run needs.
void registerRunDialects(mlir::DialectRegistry &registry);

/// Runs `options` and returns the process exit status (0 on success). Errors
/// are printed to stderr as "pmlir-run: error: ...".
int runModel(const RunOptions &options);

/// The compiled program mallocs and frees its activations on every call;
/// this keeps freed memory in the process's heap for the next call instead
/// of giving it back, or each call pays a page fault per 4 KiB it touches:
/// one heap for every thread (a thread's own arena is made of 64 MiB heaps
/// unmapped as they empty), no buffer mmapped (glibc unmaps each one above
/// 32 MiB as it is freed: GPT-2's logits and their gradient), and no
/// trimming, so the process keeps its peak. Call it first thing in main,
/// before any thread allocates.
void keepFreedMemory();

/// Prints the process groups of each axis of `mesh` and returns 0, or 1
/// after an error.
int printGroups(const std::string &mesh, const std::string &rankOrder);

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_RUNNER_H
