//===- pmlir-run.cpp - Compile and run a tfm model on the CPU -------------===//
//
// Part of pmlir.
//
//   pmlir-run MODEL.mlir [--weights W.safetensors] [--inputs I.safetensors]
//             [--output O.safetensors] [--seed N] [--print] [--repeat N]
//             [--threads N] [--entry forward]
//   pmlir-run MODEL.mlir --mesh dp=2,tp=2 --recipe megatron [--sequence-parallel]
//             [--check [--tolerance T]] [--comm-report C.json] [--memory-report M.json]
//             [--backend mpi|nccl] [--timeout S] [--trace T.json]
//   pmlir-run MODEL.mlir --device gpu [--gpu-chip sm_90] [--precision f32|tf32|bf16] ...
//   pmlir-run --mesh tp=2,dp=2,pp=4 [--rank-order tp,dp,pp] --print-groups
//
// Arguments of the entry function bind to tensors by their `tfm.name`: first
// from --inputs, then from --weights (where Hugging Face's `transformer.`
// prefix of GPT-2 LM-head checkpoints is accepted). Without --weights every
// weight gets a deterministic seeded init; with it, a weight the file lacks
// is an error unless --init-missing asks for the seeded init. A missing
// input is an error. The program is
// lowered with pmlir-cpu-pipeline and JIT-compiled by MLIR's ExecutionEngine.
// f32 tensors in the files are used in place from the memory mapping.
//
// A thin front end: flags become pmlir::exec::RunOptions, and the
// execution library (lib/Execution) does the run. The pass managers it runs
// take the usual --mlir-print-ir-*, --mlir-timing and --mlir-* options.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Runner.h"
#include "pmlir/InitAllPMLIR.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace pmlir;

static llvm::cl::opt<std::string> modelFile(llvm::cl::Positional,
                                            llvm::cl::desc("MODEL.mlir"));
static llvm::cl::opt<std::string>
    meshSpec("mesh", llvm::cl::desc("device mesh: named axes with sizes, e.g. tp=2,dp=2,pp=4"));
static llvm::cl::opt<std::string> rankOrder(
    "rank-order",
    llvm::cl::desc("mesh axes from fastest- to slowest-varying rank "
                   "(default: tp, cp, ep, dp, pp as present)"));
static llvm::cl::opt<double> collectiveTimeout(
    "timeout",
    llvm::cl::desc("on a mesh: end the job when one collective waits longer than this "
                   "many seconds (0: no limit)"),
    llvm::cl::init(60));
static llvm::cl::opt<std::string> backend(
    "backend",
    llvm::cl::desc("on a mesh: where the collectives run, mpi (host memory) or nccl (one GPU "
                   "per rank; host buffers are staged through it); default: nccl with "
                   "--device gpu, else mpi"));
static llvm::cl::opt<std::string>
    device("device",
           llvm::cl::desc("where the program runs: cpu, or gpu (pmlir-gpu-pipeline: cuBLASLt GEMMs "
                          "and generated kernels, one GPU per rank, NCCL collectives)"),
           llvm::cl::init("cpu"));
static llvm::cl::opt<std::string>
    gpuChip("gpu-chip",
            llvm::cl::desc("with --device gpu: the GPU the kernels are compiled for (default: "
                           "the rank's, e.g. sm_90)"));
static llvm::cl::opt<std::string>
    precision("precision",
              llvm::cl::desc("f32; tf32 (with --device gpu: f32 GEMMs on tensor cores); or bf16 "
                             "(tensors between kernels and GEMM operands stored in bf16, "
                             "arithmetic, GEMM sums and statistics in f32)"),
              llvm::cl::init("f32"));
static llvm::cl::opt<bool> printGroups(
    "print-groups",
    llvm::cl::desc("print the process groups of each mesh axis, one line per group, and exit"));
static llvm::cl::opt<std::string> weightsFile("weights",
                                              llvm::cl::desc("weights (safetensors)"));
static llvm::cl::opt<std::string> inputsFile("inputs",
                                             llvm::cl::desc("inputs (safetensors)"));
static llvm::cl::opt<std::string>
    outputFile("output", llvm::cl::desc("write the results here (safetensors)"));
static llvm::cl::opt<std::string> entryName("entry",
                                            llvm::cl::desc("entry function"),
                                            llvm::cl::init("forward"));
static llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("seed of the init of missing weights"),
         llvm::cl::init(0));
static llvm::cl::opt<bool> initMissing(
    "init-missing",
    llvm::cl::desc("with --weights: give weights the file lacks the seeded init (a warning "
                   "lists them) instead of refusing the run"));
// Fault injection for the fault tests: rank R stops (sleeps until killed)
// at a phase, so that the others' timeouts can be seen to name it.
static llvm::cl::opt<int> testHangRank("test-hang-rank", llvm::cl::Hidden, llvm::cl::init(-1));
static llvm::cl::opt<std::string> testHangAt("test-hang-at", llvm::cl::Hidden,
                                             llvm::cl::desc("start-up, step, check or output"));
static llvm::cl::opt<bool> printResults(
    "print", llvm::cl::desc("print shape, mean, std and first values of each result"));
static llvm::cl::opt<unsigned>
    repeat("repeat",
           llvm::cl::desc("after a warm-up, run N times and print the median time"),
           llvm::cl::init(0));

static llvm::cl::opt<std::string>
    recipe("recipe",
           llvm::cl::desc("shard the global model with a recipe on --mesh (megatron: Megatron-LM's "
                          "tensor parallelism on axis tp, batch on dp; auto: pmlir-auto-sharding's "
                          "integer program on --topology), then propagate and partition"));
static llvm::cl::opt<std::string>
    topology("topology",
             llvm::cl::desc("--recipe auto: the hardware, a preset (cpu, h100) or a JSON file "
                            "(default: cpu)"));
static llvm::cl::opt<std::string> memoryBudget(
    "memory-budget",
    llvm::cl::desc("--recipe auto: bytes a device may hold, as 12GiB (default: the topology's)"));
static llvm::cl::opt<bool> check(
    "check", llvm::cl::desc("also run the unsharded program and print the relative error of "
                            "the sharded output; exit 1 past --tolerance"));
static llvm::cl::opt<double>
    tolerance("tolerance", llvm::cl::desc("largest relative error --check accepts"),
              llvm::cl::init(1e-5));
static llvm::cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    llvm::cl::desc("with a sharded program: Megatron's sequence parallelism (tensor-parallel "
                   "all-reduces become reduce-scatter + all-gather, norms on sequence shards)"));
static llvm::cl::opt<std::string> cpAttention(
    "cp-attention",
    llvm::cl::desc("with a cp axis in --mesh: attention over the split sequence, allgather "
                   "(keys and values gathered, the default), ring (key/value blocks passed "
                   "around cp, online softmax) or ulysses (heads split over cp, all-to-all in "
                   "and out)"));
static llvm::cl::opt<std::string> cpLayout(
    "cp-layout",
    llvm::cl::desc("with a cp axis in --mesh: the order of the split sequence, balanced (each "
                   "rank a chunk from the front and one from the back, equal causal attention "
                   "work; the default) or contiguous (each rank one block)"));
static llvm::cl::opt<std::string> memoryReportFile(
    "memory-report",
    llvm::cl::desc("write the activation bytes each layer keeps for the backward pass, per "
                   "rank, to this JSON file"));
static llvm::cl::opt<std::string>
    emitCompiled("emit-compiled",
                 llvm::cl::desc("write the module handed to the JIT (the LLVM dialect, as "
                                "pmlir-opt --pmlir-compile-pipeline prints it) to this file"));
static llvm::cl::opt<bool> compileOnly(
    "compile-only",
    llvm::cl::desc("compile (writing --emit-compiled and the reports) and stop: nothing is "
                   "bound or run, and --device gpu needs no GPU (give --gpu-chip)"),
    llvm::cl::init(false));
static llvm::cl::opt<std::string> gradsFile(
    "grads",
    llvm::cl::desc("differentiate the loss of the entry (pmlir-autodiff) and write the loss and "
                   "each parameter's gradient, under the parameter's name, to this file "
                   "(safetensors)"));
static llvm::cl::opt<std::string>
    recompute("recompute",
              llvm::cl::desc("what the backward pass recomputes instead of keeping: none, "
                             "selective (the attention core) or full (each layer)"),
              llvm::cl::init("selective"));
static llvm::cl::OptionCategory trainingCategory("Training (--train)");
static llvm::cl::opt<bool>
    train("train",
          llvm::cl::desc("train: build a training step of the entry's loss (pmlir-autodiff, "
                         "pmlir-optimizer) and run it --steps times; one line per step"),
          llvm::cl::cat(trainingCategory));
static llvm::cl::opt<int64_t> steps("steps", llvm::cl::desc("training steps"), llvm::cl::init(1),
                                    llvm::cl::cat(trainingCategory));
static llvm::cl::opt<double> lr("lr", llvm::cl::desc("AdamW's learning rate"), llvm::cl::init(1e-3),
                                llvm::cl::cat(trainingCategory));
static llvm::cl::opt<double> weightDecay("weight-decay",
                                         llvm::cl::desc("AdamW's decoupled weight decay"),
                                         llvm::cl::init(0.01), llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string> betas("betas", llvm::cl::desc("AdamW's betas, 'beta1,beta2'"),
                                        llvm::cl::init("0.9,0.999"),
                                        llvm::cl::cat(trainingCategory));
static llvm::cl::opt<double> adamEps("eps", llvm::cl::desc("AdamW's epsilon"), llvm::cl::init(1e-8),
                                     llvm::cl::cat(trainingCategory));
static llvm::cl::opt<double>
    clipGradNorm("clip-grad-norm",
                 llvm::cl::desc("clip the gradients to this global L2 norm (0: no clipping)"),
                 llvm::cl::init(0), llvm::cl::cat(trainingCategory));
static llvm::cl::opt<int64_t> gradAccum(
    "grad-accum",
    llvm::cl::desc("microbatches per step, each of the model's batch size; the gradients are "
                   "their mean"),
    llvm::cl::init(1), llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string> pipelineSchedule(
    "pipeline-schedule",
    llvm::cl::desc("pipeline the training step (--train) or the forward over the mesh's pp axis "
                   "with this schedule: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, or csv "
                   "(--pipeline-csv); a forward runs the schedule's forwards alone"),
    llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string> pipelineCsv(
    "pipeline-csv",
    llvm::cl::desc("with --pipeline-schedule csv: each pipeline rank's actions, one line per "
                   "rank (torch.distributed.pipelining's CSV, e.g. 0F0,0F1,0B0,0B1)"),
    llvm::cl::cat(trainingCategory));
static llvm::cl::opt<int64_t> microbatches(
    "microbatches",
    llvm::cl::desc("with --pipeline-schedule: microbatches per step or forward, each of the "
                   "model's batch size (a step's loss and gradients are their mean, a forward's "
                   "logits those of the whole batch)"),
    llvm::cl::init(1), llvm::cl::cat(trainingCategory));
static llvm::cl::opt<int64_t> virtualStages(
    "virtual-stages",
    llvm::cl::desc("with --pipeline-schedule interleaved-1f1b: stages per pipeline rank (zb-v: "
                   "2)"),
    llvm::cl::init(1), llvm::cl::cat(trainingCategory));
static llvm::cl::list<int64_t> pipelineSplit(
    "pipeline-split",
    llvm::cl::desc("with --pipeline-schedule: the first layer of stages 1, 2, ... (as pmlir-plan "
                   "prints it; default: balanced by FLOPs)"),
    llvm::cl::CommaSeparated, llvm::cl::cat(trainingCategory));
static llvm::cl::opt<int64_t> zeroStage(
    "zero",
    llvm::cl::desc("ZeRO stage on the mesh's dp axis: 1 shards the optimizer state, 2 the "
                   "gradients too, 3 the parameters too"),
    llvm::cl::init(0), llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string> dataFile(
    "data",
    llvm::cl::desc("train on consecutive windows of seq + 1 tokens of this flat file of token "
                   "ids (nanoGPT's .bin) instead of --inputs"),
    llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string> dataDtype("data-dtype",
                                            llvm::cl::desc("--data's ids: uint16 or int32"),
                                            llvm::cl::init("uint16"),
                                            llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string>
    saveFile("save",
             llvm::cl::desc("write the trained parameters here (safetensors, Hugging Face names) "
                            "and the optimizer state beside it (X.optimizer.safetensors)"),
             llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string>
    resumeFile("resume", llvm::cl::desc("continue from a checkpoint --save wrote (on any mesh)"),
               llvm::cl::cat(trainingCategory));
static llvm::cl::opt<std::string> traceFile(
    "trace", llvm::cl::desc("with --mesh: write a Chrome trace (Perfetto) of every rank's pipeline "
                            "work, steps and communication to this JSON file"));
static llvm::cl::opt<std::string> commReportFile(
    "comm-report",
    llvm::cl::desc("write the collectives of the partitioned program to this JSON file"));

static llvm::cl::opt<unsigned> jitOptLevel(
    "jit-opt-level",
    llvm::cl::desc("LLVM's optimization level (0-3) for the compiled program; 3 unrolls into "
                   "blocks that compile several times slower and run no faster"),
    llvm::cl::init(2));

constexpr int kMaxThreads = 1024;

/// Takes `--threads N` / `--threads=N` out of the arguments: libLLVM already
/// registers a `threads` option, so pmlir-run reads its own before LLVM's
/// parser sees the rest. Returns -1 on a malformed value or one past
/// kMaxThreads.
static int takeThreadsFlag(std::vector<char *> &args) {
  int threads = 0;
  std::vector<char *> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef arg(args[i]);
    llvm::StringRef value;
    if ((arg == "--threads" || arg == "-threads") && i + 1 < args.size())
      value = args[++i];
    else if (arg.consume_front("--threads=") || arg.consume_front("-threads="))
      value = arg;
    else {
      rest.push_back(args[i]);
      continue;
    }
    if (value.getAsInteger(10, threads) || threads <= 0 || threads > kMaxThreads)
      return -1;
  }
  args = rest;
  return threads;
}

static int runMain(int argc, char **argv) {
  std::vector<char *> argList(argv, argv + argc);
  int threads = takeThreadsFlag(argList);
  if (threads < 0) {
    llvm::WithColor::error(llvm::errs(), "pmlir-run")
        << "--threads expects a number of threads from 1 to " << kMaxThreads << "\n";
    return 1;
  }
  // Pass names for --mlir-print-ir-after=<pass> and friends.
  registerAllPasses();
  registerPassManagerCLOptions();
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  registerDefaultTimingManagerCLOptions();
  llvm::cl::ParseCommandLineOptions(
      static_cast<int>(argList.size()), argList.data(),
      "pmlir CPU runner\n\n  --threads N   threads of the GEMMs (default: "
      "all cores)\n");
  if (printGroups)
    return exec::printGroups(meshSpec, rankOrder);

  exec::RunOptions options;
  options.model = modelFile;
  options.entry = entryName;
  options.weights = weightsFile;
  options.inputs = inputsFile;
  options.output = outputFile;
  options.initMissing = initMissing;
  options.seed = seed;
  options.mesh = meshSpec;
  options.rankOrder = rankOrder;
  options.timeout = collectiveTimeout;
  options.backend = backend;
  if (device != "cpu" && device != "gpu") {
    llvm::WithColor::error(llvm::errs(), "pmlir-run")
        << "--device expects cpu or gpu, got '" << device << "'\n";
    return 1;
  }
  if (precision != "f32" && precision != "tf32" && precision != "bf16") {
    llvm::WithColor::error(llvm::errs(), "pmlir-run")
        << "--precision expects f32, tf32 or bf16, got '" << precision << "'\n";
    return 1;
  }
  if (precision == "tf32" && device != "gpu") {
    llvm::WithColor::error(llvm::errs(), "pmlir-run")
        << "--precision tf32 needs --device gpu: a CPU has no TF32 arithmetic\n";
    return 1;
  }
  options.device = device;
  options.gpuChip = gpuChip;
  options.precision = precision;
  options.recipe = recipe;
  options.topology = topology;
  options.memoryBudget = memoryBudget;
  options.sequenceParallel = sequenceParallel;
  options.cpAttention = cpAttention;
  options.cpLayout = cpLayout;
  options.grads = gradsFile;
  options.train = train;
  options.steps = steps;
  options.lr = lr;
  options.weightDecay = weightDecay;
  options.eps = adamEps;
  options.clipGradNorm = clipGradNorm;
  options.gradAccum = gradAccum;
  options.pipelineSchedule = pipelineSchedule;
  options.pipelineCsv = pipelineCsv;
  options.pipelineSplit.assign(pipelineSplit.begin(), pipelineSplit.end());
  options.microbatches = microbatches;
  options.virtualStages = virtualStages;
  options.zero = zeroStage;
  options.data = dataFile;
  options.dataDtype = dataDtype;
  options.save = saveFile;
  options.resume = resumeFile;
  {
    llvm::StringRef first, second;
    std::tie(first, second) = llvm::StringRef(betas).split(',');
    if (first.trim().getAsDouble(options.beta1) || second.trim().getAsDouble(options.beta2)) {
      llvm::WithColor::error(llvm::errs(), "pmlir-run")
          << "--betas expects two numbers 'beta1,beta2', got '" << betas << "'\n";
      return 1;
    }
  }
  options.recompute = recompute;
  options.commReport = commReportFile;
  options.trace = traceFile;
  options.memoryReport = memoryReportFile;
  options.check = check;
  options.tolerance = tolerance;
  options.print = printResults;
  options.repeat = repeat;
  if (jitOptLevel > 3) {
    llvm::WithColor::error(llvm::errs(), "pmlir-run")
        << "--jit-opt-level expects 0, 1, 2 or 3, got " << jitOptLevel << "\n";
    return 1;
  }
  options.jitOptLevel = jitOptLevel;
  options.threads = threads;
  options.emitCompiled = emitCompiled;
  options.compileOnly = compileOnly;
  options.hangRank = testHangRank;
  options.hangAt = testHangAt;
  options.relaunch.push_back(llvm::sys::fs::getMainExecutable(argv[0], (void *)&runMain));
  options.relaunch.insert(options.relaunch.end(), argv + 1, argv + argc);
  options.configurePassManager = [](PassManager &pm) {
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    applyDefaultTimingPassManagerCLOptions(pm);
    return success();
  };
  return exec::runModel(options);
}

int main(int argc, char **argv) {
  exec::keepFreedMemory();
  llvm::InitLLVM init(argc, argv);
  return runToolMain("pmlir-run", [&] { return runMain(argc, argv); });
}
