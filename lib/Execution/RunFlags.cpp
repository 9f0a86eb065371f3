//===- RunFlags.cpp - pmlir-run's flags, each bound to its field ----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/RunFlags.h"
#include "pmlir/Execution/Launch.h"
#include "pmlir/Target/GPU/Passes.h"
#include "pmlir/Training/Optimizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <string>
#include <tuple>

using namespace pmlir;
using namespace pmlir::exec;
namespace cl = llvm::cl;

namespace {

/// The tool errors name (the one RunFlags was made for).
std::string toolName = "pmlir-run";

/// Parses a choice among named alternatives; a name it does not know is
/// refused with the names it knows.
template <typename T> class ChoiceParser : public cl::parser<T> {
public:
  using cl::parser<T>::parser;

  bool parse(cl::Option &flag, llvm::StringRef, llvm::StringRef arg, T &value) {
    llvm::SmallVector<llvm::StringRef> known;
    for (const auto &alternative : this->Values) {
      if (alternative.Name == arg) {
        value = alternative.V.getValue();
        return false;
      }
      known.push_back(alternative.Name);
    }
    llvm::WithColor::error(llvm::errs(), toolName)
        << "unknown --" << flag.ArgStr << " '" << arg << "' (known: " << llvm::join(known, ", ")
        << ")\n";
    return true;
  }
};

/// The sections of --help (LLVM lists them by name).
struct Categories {
  cl::OptionCategory run{"Run: the model, its arguments and results"};
  cl::OptionCategory mesh{"Mesh and parallelism"};
  cl::OptionCategory training{"Training"};
  cl::OptionCategory pipeline{"Pipeline parallelism"};
  cl::OptionCategory device{"Device and precision"};
  cl::OptionCategory reports{"Output and reports"};
  cl::OptionCategory debugging{"Debugging"};
};

Categories &categories() {
  static Categories all;
  return all;
}

constexpr int kMaxThreads = 1024;

} // namespace

RunFlags::~RunFlags() = default;

RunFlags::RunFlags(RunOptions &o, llvm::StringRef tool) : options(o), betas("0.9,0.999") {
  toolName = tool.str();
  Categories &c = categories();
  // libLLVM registers a `threads` option (its own thread pools'), which
  // pmlir-run's --threads replaces.
  if (cl::Option *theirs = cl::getRegisteredOptions().lookup("threads"))
    theirs->removeArgument();

  // A flag bound to the field it sets.
  auto bind = [&](const char *name, auto &field, auto &&...modifiers) -> cl::Option * {
    using T = std::remove_reference_t<decltype(field)>;
    flags.push_back(std::make_unique<cl::opt<T, true>>(llvm::StringRef(name), cl::location(field),
                                                       modifiers...));
    return flags.back().get();
  };
  // A choice bound to the field it sets, its alternatives named once.
  auto choose = [&](const char *name, auto &field, auto values, auto &&...modifiers) {
    using T = std::remove_reference_t<decltype(field)>;
    flags.push_back(std::make_unique<cl::opt<T, true, ChoiceParser<T>>>(
        llvm::StringRef(name), cl::location(field), values, modifiers...));
  };
  // A choice whose absence means something of its own (the field stays
  // empty).
  auto chooseOptional = [&](const char *name, auto &field, auto values, auto &&...modifiers) {
    using T = typename std::remove_reference_t<decltype(field)>::value_type;
    flags.push_back(std::make_unique<cl::opt<T, false, ChoiceParser<T>>>(
        llvm::StringRef(name), values, cl::callback([&field](const T &value) { field = value; }),
        modifiers...));
  };

  //===--- Run ---===//
  flags.push_back(std::make_unique<cl::opt<std::string, true>>(
      cl::Positional, cl::location(o.model), cl::desc("MODEL.mlir"), cl::cat(c.run)));
  bind("weights", o.weights,
       cl::desc("weights: a safetensors file, a Hugging Face index "
                "(model.safetensors.index.json) or a directory holding either"),
       cl::value_desc("path"), cl::cat(c.run));
  bind("init-missing", o.initMissing,
       cl::desc("with --weights: give weights the file lacks the seeded init (a warning lists "
                "them) instead of refusing the run"),
       cl::cat(c.run));
  bind("allow-unused-weights", o.allowUnusedWeights,
       cl::desc("with --weights: run although the file holds tensors the model does not use "
                "(a warning lists them) instead of refusing the run"),
       cl::cat(c.run));
  bind("seed", o.seed, cl::desc("seed of the init of weights without --weights"), cl::cat(c.run));
  bind("inputs", o.inputs, cl::desc("inputs (safetensors)"), cl::value_desc("file"),
       cl::cat(c.run));
  bind("entry", o.entry, cl::desc("entry function (default: forward)"), cl::cat(c.run));
  bind("output", o.output, cl::desc("write the results here (safetensors)"), cl::value_desc("file"),
       cl::cat(c.run));
  bind("print", o.print, cl::desc("print shape, mean, std and first values of each result"),
       cl::cat(c.run));
  bind("repeat", o.repeat, cl::desc("after a warm-up, run N times and print the median time"),
       cl::value_desc("N"), cl::cat(c.run));
  threadsFlag =
      bind("threads", o.threads,
           cl::desc("threads of the CPU's GEMMs and of the loops around them, 1 to 1024 (default: "
                    "this rank's share of the cores, all of them for one rank a host)"),
           cl::value_desc("N"), cl::cat(c.run));

  //===--- Mesh and parallelism ---===//
  bind("mesh", o.mesh, cl::desc("device mesh: named axes with sizes, e.g. tp=2,dp=2,pp=4"),
       cl::cat(c.mesh));
  bind("rank-order", o.rankOrder,
       cl::desc("mesh axes from fastest- to slowest-varying rank (default: tp, cp, ep, dp, pp "
                "as present)"),
       cl::cat(c.mesh));
  bind("print-groups", o.printGroups,
       cl::desc("print the process groups of each mesh axis, one line per group, and exit"),
       cl::cat(c.mesh));
  choose("recipe", o.recipe, ShardingPipelineOptions::recipeValues(),
         cl::desc("shard the global model with a recipe on --mesh, then propagate and partition"),
         cl::cat(c.mesh));
  bind("topology", o.topology,
       cl::desc("--recipe auto: the hardware, a preset (cpu, h100, h200) or a JSON file (default: "
                "cpu)"),
       cl::cat(c.mesh));
  bind("memory-budget", o.memoryBudget,
       cl::desc("--recipe auto: bytes a device may hold, as 12GiB (default: the topology's)"),
       cl::cat(c.mesh));
  bind("sequence-parallel", o.sequenceParallel,
       cl::desc("with a sharded program: Megatron's sequence parallelism (tensor-parallel "
                "all-reduces become reduce-scatter + all-gather, norms on sequence shards)"),
       cl::cat(c.mesh));
  chooseOptional("cp-attention", o.cpAttention, pmlir::contextAttentionValues(),
                 cl::desc("with a cp axis in --mesh: attention over the split sequence "
                          "(allgather when not given)"),
                 cl::cat(c.mesh));
  chooseOptional("cp-layout", o.cpLayout, ShardingPipelineOptions::contextLayoutValues(),
                 cl::desc("with a cp axis in --mesh: the order of the split sequence (balanced "
                          "when not given)"),
                 cl::cat(c.mesh));
  bind("zero", o.zero,
       cl::desc("ZeRO stage on the mesh's dp axis: 1 shards the optimizer state, 2 the "
                "gradients too, 3 the parameters too"),
       cl::cat(c.mesh));
  bind("check", o.check,
       cl::desc("also run the unsharded program and print the relative error of the sharded "
                "output; exit 1 past --tolerance"),
       cl::cat(c.mesh));
  bind("tolerance", o.tolerance, cl::desc("largest relative error --check accepts (1e-5)"),
       cl::cat(c.mesh));
  bind("hostfile", o.hostfile,
       cl::desc("on a mesh: run the ranks on these hosts, an Open MPI host file ('NAME "
                "slots=N' a line) passed to mpirun, which enters the other hosts by ssh (or "
                "OMPI_MCA_plm_rsh_agent); every host needs pmlir-run and the files at the same "
                "paths"),
       cl::value_desc("FILE"), cl::cat(c.mesh));
  bind("timeout", o.timeout,
       cl::desc("on a mesh: end the job when one collective waits longer than this many "
                "seconds (0: no limit; 60)"),
       cl::cat(c.mesh));
  bind("check-collectives", o.checkCollectives,
       cl::desc("on a mesh: before each collective, compare what every rank of its group is "
                "about to issue (kind, element type, count, reduction or root, its place among "
                "the group's calls; a send with its recv) and end the job naming the two ranks "
                "that differ, where they would hang or swap data"),
       cl::cat(c.mesh));
  chooseOptional("backend", o.backend,
                 cl::values(clEnumValN(PMLIR_RT_BACKEND_MPI, "mpi", "host memory"),
                            clEnumValN(PMLIR_RT_BACKEND_NCCL, "nccl",
                                       "one GPU per rank; host buffers are staged through it")),
                 cl::desc("on a mesh: where the collectives run (default: nccl with --device "
                          "gpu, else mpi)"),
                 cl::cat(c.mesh));

  //===--- Training ---===//
  bind("train", o.train,
       cl::desc("train: build a training step of the entry's loss (pmlir-autodiff, "
                "pmlir-optimizer) and run it --steps times; one line per step"),
       cl::cat(c.training));
  bind("steps", o.steps, cl::desc("training steps (1)"), cl::cat(c.training));
  bind("lr", o.lr, cl::desc("AdamW's learning rate (1e-3)"), cl::cat(c.training));
  bind("weight-decay", o.weightDecay, cl::desc("AdamW's decoupled weight decay (0.01)"),
       cl::cat(c.training));
  flags.push_back(std::make_unique<cl::opt<std::string, true>>(
      "betas", cl::location(betas), cl::desc("AdamW's betas, 'beta1,beta2' (0.9,0.999)"),
      cl::cat(c.training)));
  bind("eps", o.eps, cl::desc("AdamW's epsilon (1e-8)"), cl::cat(c.training));
  bind("clip-grad-norm", o.clipGradNorm,
       cl::desc("clip the gradients to this global L2 norm (0: no clipping)"), cl::cat(c.training));
  bind("grad-accum", o.gradAccum,
       cl::desc("microbatches per step, each of the model's batch size; the gradients are "
                "their mean"),
       cl::cat(c.training));
  choose("recompute", o.recompute, training::recomputeValues(),
         cl::desc("what the backward pass recomputes instead of keeping (selective when not "
                  "given)"),
         cl::cat(c.training));
  bind("grads", o.grads,
       cl::desc("differentiate the loss of the entry (pmlir-autodiff) and write the loss and "
                "each parameter's gradient, under the parameter's name, to this file "
                "(safetensors)"),
       cl::value_desc("file"), cl::cat(c.training));
  bind("data", o.data,
       cl::desc("train on consecutive windows of seq + 1 tokens of this flat file of token ids "
                "(nanoGPT's .bin) instead of --inputs"),
       cl::value_desc("file"), cl::cat(c.training));
  choose("data-dtype", o.dataDtype,
         cl::values(clEnumValN(TokenDtype::UInt16, "uint16", "nanoGPT's (the default)"),
                    clEnumValN(TokenDtype::Int32, "int32", "")),
         cl::desc("--data's ids"), cl::cat(c.training));
  bind("save", o.save,
       cl::desc("X.safetensors: write the trained parameters there (Hugging Face names) and the "
                "optimizer state beside it (X.optimizer.safetensors), gathered on rank 0; any "
                "other path: a checkpoint directory each rank writes its own blocks to"),
       cl::value_desc("file|dir"), cl::cat(c.training));
  bind("resume", o.resume,
       cl::desc("continue from a checkpoint --save wrote, a file or a directory (on any mesh)"),
       cl::value_desc("file|dir"), cl::cat(c.training));
  bind("export-hf", o.exportHf,
       cl::desc("write the trained model as a Hugging Face directory here (config.json and "
                "model.safetensors, which from_pretrained loads); the model must be pmlir-gen's"),
       cl::value_desc("dir"), cl::cat(c.training));

  //===--- Pipeline parallelism ---===//
  choose("pipeline-schedule", o.pipelineSchedule, pipe::scheduleKindValues(),
         cl::desc("pipeline the training step (--train) or the forward over the mesh's pp axis "
                  "with this schedule (csv: --pipeline-csv's); a forward runs the schedule's "
                  "forwards alone"),
         cl::cat(c.pipeline));
  bind("pipeline-csv", o.pipelineCsv,
       cl::desc("with --pipeline-schedule csv: each pipeline rank's actions, one line per rank "
                "(torch.distributed.pipelining's CSV, e.g. 0F0,0F1,0B0,0B1)"),
       cl::value_desc("file"), cl::cat(c.pipeline));
  bind("microbatches", o.microbatches,
       cl::desc("with --pipeline-schedule: microbatches per step or forward, each of the "
                "model's batch size (a step's loss and gradients are their mean, a forward's "
                "logits those of the whole batch)"),
       cl::cat(c.pipeline));
  bind("virtual-stages", o.virtualStages,
       cl::desc("with --pipeline-schedule interleaved-1f1b: stages per pipeline rank (zb-v: 2)"),
       cl::cat(c.pipeline));
  flags.push_back(std::make_unique<cl::list<int64_t, std::vector<int64_t>>>(
      "pipeline-split", cl::location(o.pipelineSplit),
      cl::desc("with --pipeline-schedule: the first layer of stages 1, 2, ... (as pmlir-plan "
               "prints it; default: balanced by FLOPs)"),
      cl::CommaSeparated, cl::cat(c.pipeline)));

  //===--- Device and precision ---===//
  choose("device", o.device,
         cl::values(clEnumValN(CompileTarget::Cpu, "cpu", "the CPU (the default)"),
                    clEnumValN(CompileTarget::Gpu, "gpu",
                               "pmlir-gpu-pipeline: cuBLASLt GEMMs and generated kernels, one "
                               "GPU per rank, NCCL collectives")),
         cl::desc("where the program runs"), cl::cat(c.device));
  bind("gpu-chip", o.gpuChip,
       cl::desc("with --device gpu: the GPU the kernels are compiled for (default: the rank's, "
                "e.g. sm_90)"),
       cl::cat(c.device));
  choose("precision", o.precision, precisionValues(), cl::desc("the arithmetic"),
         cl::cat(c.device));
  bind("bf16-weights-per-call", o.bf16WeightsPerCall,
       cl::desc("with --precision bf16: round the weights to bf16 in every function that reads "
                "them, in every run (no bf16 copy of them kept), instead of once when they are "
                "bound (once a step in training)"),
       cl::cat(c.device));

  //===--- Output and reports ---===//
  bind("comm-report", o.commReport,
       cl::desc("write the collectives of the partitioned program to this JSON file"),
       cl::value_desc("file"), cl::cat(c.reports));
  bind("memory-report", o.memoryReport,
       cl::desc("write the activation bytes each layer keeps for the backward pass, per rank, "
                "to this JSON file"),
       cl::value_desc("file"), cl::cat(c.reports));
  bind("trace", o.trace,
       cl::desc("with --mesh: write a Chrome trace (Perfetto) of every rank's pipeline work, "
                "steps and communication, and its GEMM calls (with --device gpu, its kernels, "
                "GEMMs and copies) to this JSON file"),
       cl::value_desc("file"), cl::cat(c.reports));
  bind("emit-compiled", o.emitCompiled,
       cl::desc("write the module handed to the JIT (the LLVM dialect, as pmlir-opt "
                "--pmlir-compile-pipeline prints it) to this file"),
       cl::value_desc("file"), cl::cat(c.reports));
  bind("compile-only", o.compileOnly,
       cl::desc("compile (writing --emit-compiled and the reports) and stop: nothing is bound "
                "or run, and --device gpu needs no GPU (give --gpu-chip)"),
       cl::cat(c.reports));
  bind("predict", o.predict,
       cl::desc("compile as the run would (every rank its own program) and print each rank's "
                "predicted peak resident memory and the step's predicted time, broken down, "
                "instead of running"),
       cl::cat(c.reports));
  profileFlag =
      bind("profile", o.profile,
           cl::desc("with --predict: the device profile that prices the step: cpu (measured on "
                    "this host, cached), h100 or h200 (with --device gpu; no GPU needed), or a "
                    "JSON file of fixed rates (cpu)"),
           cl::value_desc("cpu|h100|h200|file"), cl::cat(c.reports));
  bind("json", o.json, cl::desc("with --predict: print one JSON object instead"),
       cl::cat(c.reports));

  //===--- Debugging ---===//
  bind("jit-opt-level", o.jitOptLevel,
       cl::desc("LLVM's optimization level (0-3) for the compiled program; 3 compiles "
                "slower and runs no faster (2)"),
       cl::cat(c.debugging));
  bind("verbose", o.verbose,
       cl::desc("print what the run chose that the flags did not say: the seconds the "
                "compile took (the lowering passes, LLVM); on a mesh, the hosts "
                "and their ranks; the CPU's GEMM library, its kernels and who chose them (by the "
                "CPU's features), its threads, and the path of bf16 operands; the loops' threads "
                "and, at the end, how many loop calls were split over them"),
       cl::cat(c.debugging));
  bind("print-bytes-read", o.printBytesRead,
       cl::desc("each rank prints the bytes of parameters it read from --weights or --resume "
                "(its blocks of sharded ones) and the seconds its arguments took to bind"),
       cl::cat(c.debugging));
  // Fault injection for the fault tests: rank R stops (sleeps until
  // killed) at a phase, so that the others' timeouts can be seen to name
  // it.
  bind("test-hang-rank", o.hangRank, cl::Hidden, cl::cat(c.debugging));
  bind("test-hang-at", o.hangAt, cl::Hidden,
       cl::desc("start-up, step, check, output or save-commit"), cl::cat(c.debugging));
  // A wrong reduction group, which --check must catch.
  bind("test-wrong-reduction-group", o.wrongGroupAt, cl::Hidden,
       cl::desc("the Nth all-reduce of every rank reduces over the rank alone"),
       cl::cat(c.debugging));
}

void RunFlags::hideOtherOptions() {
  Categories &c = categories();
  for (auto &entry : cl::getRegisteredOptions())
    if (entry.first.starts_with("mlir-"))
      entry.second->addCategory(c.debugging);
  cl::HideUnrelatedOptions(
      {&c.run, &c.mesh, &c.training, &c.pipeline, &c.device, &c.reports, &c.debugging});
}

bool RunFlags::finish(std::string &error) {
  llvm::StringRef first, second;
  std::tie(first, second) = llvm::StringRef(betas).split(',');
  if (first.trim().getAsDouble(options.beta1) || second.trim().getAsDouble(options.beta2)) {
    error = "--betas expects two numbers 'beta1,beta2', got '" + betas + "'";
    return false;
  }
  if (threadsFlag->getNumOccurrences() && (options.threads <= 0 || options.threads > kMaxThreads)) {
    error = "--threads expects a number of threads from 1 to " + std::to_string(kMaxThreads);
    return false;
  }
  if (profileFlag->getNumOccurrences() && !options.predict) {
    error = "--profile prices the step --predict predicts: it needs --predict";
    return false;
  }
  if (!options.gpuChip.empty())
    if (std::optional<std::string> unknown = unknownGpuChip(options.gpuChip)) {
      error = "--gpu-chip " + *unknown;
      return false;
    }
  if (options.jitOptLevel > 3) {
    error = "--jit-opt-level expects 0, 1, 2 or 3, got " + std::to_string(options.jitOptLevel);
    return false;
  }
  // AdamW's values, refused here by pmlir-run's names before the
  // optimizer pass would refuse them by its own.
  training::OptimizerOptions optimizer;
  optimizer.adamw = {options.lr, options.beta1, options.beta2, options.eps, options.weightDecay};
  optimizer.maxGradNorm = options.clipGradNorm;
  if (std::optional<std::string> unusable =
          training::unusableOptimizerValue(optimizer, [](llvm::StringRef value) {
            if (value == "max-grad-norm")
              return std::string("--clip-grad-norm");
            if (value.starts_with("beta"))
              return "--betas' " + value.str();
            return "--" + value.str();
          })) {
    error = *unusable;
    return false;
  }
  // cl::opt<double> takes "nan", "inf" and negatives: none is a limit.
  for (auto [value, flag, what] :
       {std::tuple<double, const char *, const char *>{options.timeout, "--timeout",
                                                       "seconds, 0 or more (0: no limit)"},
        {options.tolerance, "--tolerance", "a relative error, 0 or more"}})
    if (!std::isfinite(value) || value < 0) {
      error = std::string(flag) + " expects " + what + ", got " + std::to_string(value);
      return false;
    }
  // A flag given where it changes nothing is refused, not ignored.
  bool mesh = !options.mesh.empty(), weights = !options.weights.empty();
  for (auto [name, applies, why] :
       {std::tuple<const char *, bool, const char *>{
            "tolerance", options.check, "is the largest error --check accepts: it needs --check"},
        {"timeout", mesh, "limits how long a mesh's collective waits: it needs --mesh"},
        {"data-dtype", !options.data.empty(),
         "says how --data stores its token ids: it needs --data"},
        {"init-missing", weights, "seeds the weights --weights lacks: it needs --weights"},
        {"allow-unused-weights", weights,
         "accepts tensors of --weights the model does not use: it needs --weights"},
        {"seed", (!weights && options.resume.empty()) || options.initMissing,
         "seeds the weights no file gives: it needs neither --weights nor --resume, or "
         "--init-missing"},
        {"print-bytes-read", weights || !options.resume.empty(),
         "counts what --weights or --resume reads: it needs one of them"},
        {"gpu-chip", options.device == CompileTarget::Gpu,
         "names the GPU the program compiles for: it needs --device gpu"},
        {"print", !options.train, "prints a forward's results; a training step prints its loss"},
        {"steps", options.train, "counts training steps: it needs --train"},
        {"grad-accum", options.train, "splits a training step: it needs --train"},
        {"lr", options.train, "is AdamW's, which a training step runs: it needs --train"},
        {"betas", options.train, "are AdamW's, which a training step runs: it needs --train"},
        {"eps", options.train, "is AdamW's, which a training step runs: it needs --train"},
        {"weight-decay", options.train, "is AdamW's, which a training step runs: it needs --train"},
        {"clip-grad-norm", options.train, "clips a training step's gradients: it needs --train"},
        {"recompute", options.train || !options.grads.empty(),
         "says what a backward pass recomputes: it needs --train or --grads"}})
    if (given(name) && !applies) {
      error = std::string("--") + name + " " + why;
      return false;
    }
  // What a run alone reads changes nothing where nothing runs: said (once,
  // by the launcher, not by each rank), not refused, so that a run's
  // command with --predict appended is priced as it is (what a run would
  // write is refused: Runner). A mesh's collectives still run (--timeout,
  // --check-collectives).
  if ((options.compileOnly || options.predict) && !exec::underMpirun()) {
    llvm::SmallVector<std::string> unread;
    for (const char *name : {"steps", "seed", "print-bytes-read"})
      if (given(name))
        unread.push_back(std::string("--") + name);
    if (!unread.empty())
      llvm::WithColor::warning(llvm::errs(), toolName)
          << (options.compileOnly ? "--compile-only" : "--predict")
          << " runs nothing: " << llvm::join(unread, ", ")
          << (unread.size() == 1 ? " changes" : " change") << " nothing here\n";
  }
  return true;
}

bool RunFlags::given(llvm::StringRef name) const {
  for (const std::unique_ptr<llvm::cl::Option> &flag : flags)
    if (flag->ArgStr == name)
      return flag->getNumOccurrences() > 0;
  return false;
}
