//===- Runner.cpp - Compile and run a tfm model on one or many ranks ------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Runner.h"

#include "Job.h"

#include "pmlir/Analysis/ModelSummary.h"
#include "pmlir/Compiler/CompilePipeline.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Execution/Binding.h"
#include "pmlir/Execution/Checkpoint.h"
#include "pmlir/Execution/CheckpointDirectory.h"
#include "pmlir/Execution/Launch.h"
#include "pmlir/Execution/Program.h"
#include "pmlir/InitAllPMLIR.h"
#include "pmlir/ModelGen/HuggingFace.h"
#include "pmlir/Pipelining/Schedule.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Runtime/GpuRuntime.h"
#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Runtime/RuntimeMesh.h"
#include "pmlir/Sharding/Grid.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/OutputFile.h"
#include "pmlir/Support/SafeTensors.h"
#include "pmlir/Support/ToolMain.h"
#include "pmlir/Target/CPU/Passes.h"
#include "pmlir/Target/GPU/Passes.h"
#include "pmlir/Training/Optimizer.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <malloc.h>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::exec;

namespace {

/// A function reachable from `entry` through calls that calls itself,
/// directly or through others, or null. Such a program never ends a run:
/// each call allocates its buffers again until the host's memory is gone.
func::FuncOp recursiveFunction(func::FuncOp entry) {
  SymbolTableCollection symbols;
  llvm::DenseSet<Operation *> onPath, done;
  std::function<func::FuncOp(func::FuncOp)> visit = [&](func::FuncOp function) {
    onPath.insert(function);
    func::FuncOp found;
    function.walk([&](CallOpInterface call) {
      auto callee = dyn_cast_or_null<func::FuncOp>(call.resolveCallableInTable(&symbols));
      if (!callee || done.contains(callee))
        return WalkResult::advance();
      found = onPath.contains(callee) ? callee : visit(callee);
      return found ? WalkResult::interrupt() : WalkResult::advance();
    });
    onPath.erase(function);
    done.insert(function);
    return found;
  };
  return visit(entry);
}

/// The elements of `func`'s token ids (its first integer input): the
/// tokens one call consumes.
int64_t tokensOf(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (tfm::argumentRole(func, i) == tfm::ArgumentRole::Input && type && type.hasStaticShape() &&
        isa<IntegerType>(type.getElementType()))
      return type.getNumElements();
  }
  return 0;
}

std::string attrText(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// The compile pipeline's options for `o`: the program, its pipelining,
/// sharding and target as pmlir-run's flags say. The mesh is left to the
/// caller (a program is sharded only where it has annotations or a recipe).
void fillCompileOptions(const RunOptions &o, CompilePipelineOptions &c) {
  c.entry = o.entry;
  c.program = o.train            ? ProgramKind::Train
              : !o.grads.empty() ? ProgramKind::Gradients
                                 : ProgramKind::Forward;
  // Each option only where it changes the program (the pipeline refuses
  // the others).
  if (o.train || !o.grads.empty())
    c.recompute = o.recompute;
  if (o.train) {
    c.lr = o.lr;
    c.beta1 = o.beta1;
    c.beta2 = o.beta2;
    c.eps = o.eps;
    c.weightDecay = o.weightDecay;
    c.maxGradNorm = o.clipGradNorm;
    c.gradAccum = o.gradAccum;
  }
  if (o.pipelineSchedule != pipe::ScheduleKind::None) {
    c.pipelineSchedule = o.pipelineSchedule;
    c.pipelineCsv = o.pipelineCsv;
    c.microbatches = o.microbatches;
    c.virtualStages = o.virtualStages;
    c.pipelineSplit = llvm::ArrayRef<int64_t>(o.pipelineSplit);
    c.trace = !o.trace.empty();
  }
  c.recipe = o.recipe;
  if (o.recipe == RunOptions::Recipe::Auto) {
    c.topology = o.topology.empty() ? std::string("cpu") : o.topology;
    c.memoryBudget = o.memoryBudget;
  }
  c.zero = o.zero;
  c.sequenceParallel = o.sequenceParallel;
  c.contextAttention = o.cpAttention.value_or(RunOptions::ContextAttention::AllGather);
  c.target = o.device;
  c.precision = o.precision;
  c.roundArgumentsOnce = !o.bf16WeightsPerCall;
}

/// The files the job reads are checked before any work (on a mesh: before
/// the launch, rather than by every rank).
bool checkInputs(const RunOptions &o, std::string &error) {
  for (auto [flag, path] : {std::pair<const char *, const std::string &>{"--weights", o.weights},
                            {"--inputs", o.inputs},
                            {"--data", o.data},
                            {"--resume", o.resume},
                            {"--pipeline-csv", o.pipelineCsv}})
    if (!path.empty() && ::access(path.c_str(), R_OK) != 0) {
      error = std::string(flag) + " " + path + ": cannot open: " + std::strerror(errno);
      return false;
    }
  return true;
}

/// Outputs are checked before any work: a missing directory, or an output
/// that would replace an input or another output, is refused up front.
bool checkOutputs(const RunOptions &o, std::string &error) {
  // --export-hf's directory is made where missing: its files are checked
  // where it exists, the place it is made in where not.
  std::string exportTo;
  if (!o.exportHf.empty()) {
    struct stat st;
    if (::stat(o.exportHf.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      error = "--export-hf '" + o.exportHf + "' is a file, not a directory";
      return false;
    }
    OutputTarget target;
    if (::stat(o.exportHf.c_str(), &st) == 0)
      exportTo = o.exportHf;
    else if (!resolveOutput(o.exportHf, target, error)) {
      error = "--export-hf: " + error;
      return false;
    }
  }
  // --save of a checkpoint directory: made or replaced whole (only ever
  // one of pmlir-run's); the one it resumes may be saved over, as the
  // swap keeps it whole until the new one is.
  std::string saveFile;
  if (!o.save.empty() && isCheckpointDirectory(o.save)) {
    if (!checkCheckpointTarget(o.save, error)) {
      error = "--save: " + error;
      return false;
    }
    if (!o.exportHf.empty() &&
        (llvm::StringRef(o.save).rtrim('/') == llvm::StringRef(o.exportHf).rtrim('/') ||
         sameFile(o.save, o.exportHf))) {
      error = "--save and --export-hf name the same directory '" + o.save + "'";
      return false;
    }
  } else {
    saveFile = o.save;
  }
  // A directory --export-hf makes would be where --save writes its files
  // (found only after training, when one of them fails to be written).
  if (!o.exportHf.empty() && !saveFile.empty())
    for (const std::string &file : {saveFile, optimizerStatePath(saveFile)})
      if (llvm::StringRef(file).rtrim('/') == llvm::StringRef(o.exportHf).rtrim('/') ||
          sameFile(file, o.exportHf)) {
        error = "--save and --export-hf name the same path '" + file +
                "': --save writes a file there, --export-hf a directory";
        return false;
      }
  std::vector<std::pair<const char *, std::string>> outputs,
      inputFiles = {
          {"the model", o.model},
          {"--weights", o.weights},
          {"--inputs", o.inputs},
          {"--resume", o.resume},
          {"--resume (its optimizer state)", o.resume.empty() || isCheckpointDirectory(o.resume)
                                                 ? std::string()
                                                 : optimizerStatePath(o.resume)},
          {"--data", o.data},
          {"--pipeline-csv", o.pipelineCsv},
          {"--topology", o.topology},
          {"--hostfile", o.hostfile}};
  // Every file of the --weights set: its index and each shard the index
  // names. A set that does not open is reported where it is read.
  if (!o.weights.empty()) {
    std::string ignored;
    if (std::unique_ptr<SafeTensorsSet> set = SafeTensorsSet::open(o.weights, ignored)) {
      if (!set->index().empty())
        inputFiles.push_back({"--weights (its index)", set->index()});
      for (const std::unique_ptr<SafeTensorsFile> &file : set->files())
        inputFiles.push_back({"--weights (a file of it)", file->path()});
    }
  }
  // A checkpoint directory --resume reads is pmlir-run's whole: a file
  // written in it would be one its manifest does not list.
  std::string resumeDirectory =
      !o.resume.empty() && isCheckpointDirectory(o.resume) ? o.resume : std::string();
  auto inResumeDirectory = [&](llvm::StringRef path) {
    llvm::StringRef parent = llvm::sys::path::parent_path(path.rtrim('/'));
    return !resumeDirectory.empty() &&
           sameFile(parent.empty() ? "." : parent.str(), resumeDirectory);
  };
  // The directories --save (a checkpoint directory) and --export-hf make.
  for (auto [flag, directory] :
       {std::pair<const char *, std::string>{"--save", saveFile.empty() ? o.save : ""},
        {"--export-hf", o.exportHf}})
    if (!directory.empty() && inResumeDirectory(directory)) {
      error = std::string(flag) + " '" + directory + "' is in --resume's checkpoint directory '" +
              o.resume + "': pmlir-run does not write in its inputs";
      return false;
    }
  for (auto [flag, path] :
       {std::pair<const char *, std::string>{"--output", o.output},
        {"--grads", o.grads},
        {"--save", saveFile},
        {"--save (its optimizer state)",
         saveFile.empty() ? std::string() : optimizerStatePath(saveFile)},
        {"--export-hf", exportTo.empty() ? exportTo : exportTo + "/config.json"},
        {"--export-hf (its model.safetensors)",
         exportTo.empty() ? exportTo : exportTo + "/model.safetensors"},
        {"--comm-report", o.commReport},
        {"--trace", o.trace},
        {"--memory-report", o.memoryReport},
        {"--emit-compiled", o.emitCompiled}}) {
    if (path.empty() || path == "-")
      continue;
    OutputTarget target;
    if (!resolveOutput(path, target, error)) {
      error = std::string(flag) + ": " + error;
      return false;
    }
    if (inResumeDirectory(target.path)) {
      error = std::string(flag) + " '" + path + "' is in --resume's checkpoint directory '" +
              o.resume + "': pmlir-run does not write in its inputs";
      return false;
    }
    for (auto [other, otherPath] : inputFiles)
      if (!otherPath.empty() && sameFile(path, otherPath)) {
        error = std::string(flag) + " '" + path + "' is " + other + " '" + otherPath +
                "': pmlir-run does not overwrite its inputs";
        return false;
      }
    for (auto [other, otherPath] : outputs)
      if (path == otherPath || sameFile(path, otherPath)) {
        error = std::string(flag) + " and " + other + " name the same file '" + path + "'";
        return false;
      }
    outputs.push_back({flag, path});
  }
  return true;
}

std::map<unsigned, IdRange> idRangesOf(func::FuncOp entry) {
  std::map<unsigned, IdRange> ranges;
  auto argumentOf = [&](Value v) -> std::optional<unsigned> {
    // A microbatch of a stacked argument is read from it.
    if (auto microbatch = v.getDefiningOp<tfm::MicrobatchOp>())
      v = microbatch.getInput();
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner()->getParentOp() == entry)
      return arg.getArgNumber();
    return std::nullopt;
  };
  entry.walk([&](Operation *op) {
    if (auto embedding = dyn_cast<tfm::EmbeddingOp>(op))
      if (auto i = argumentOf(embedding.getIds()))
        ranges[*i] = {embedding.getTable().getType().getShape()[0], std::nullopt};
    if (auto loss = dyn_cast<tfm::CrossEntropyOp>(op))
      if (auto i = argumentOf(loss.getLabels()))
        ranges[*i] = {loss.getLogits().getType().getShape().back(), loss.getIgnoreIndex()};
  });
  return ranges;
}

/// Out-of-range token ids and labels are refused before the run, and
/// labels that count no token (unless `generated`: written before each
/// step, from --data).
bool checkIds(const std::map<unsigned, IdRange> &ranges, const EntrySignature &signature,
              const std::vector<BoundArgument> &args, bool generated, std::string &error) {
  for (auto [argNumber, range] : ranges) {
    const BoundArgument &ids = args[argNumber];
    const TensorSpec &spec = signature.arguments[argNumber];
    bool wide = spec.element == ElementKind::I64;
    int64_t n = elementCount(ids.shape);
    // Each microbatch of labels stacked [K, B, S] takes its own mean.
    int64_t slices = ids.shape.size() > 2 ? ids.shape[0] : 1;
    std::vector<int64_t> ignored(slices, 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t v = loadId(ids.data, k, wide);
      if (v == range.ignored)
        ++ignored[k / (n / slices)];
      if ((v >= 0 && v < range.vocab) || v == range.ignored)
        continue;
      error = (range.ignored ? "label " : "token id ") + std::to_string(v) + " at flat index " +
              std::to_string(k) + " of '" + ids.name + "' is outside the vocabulary [0, " +
              std::to_string(range.vocab) + ")" +
              (range.ignored ? " and not the ignore index " + std::to_string(*range.ignored) : "");
      return false;
    }
    // The mean over counted tokens of a batch that counts none is 0/0. A
    // rank's block of sharded labels may count none where the batch counts
    // some: the global batch is not seen here.
    if (generated || !range.ignored || spec.block || n == 0)
      continue;
    for (int64_t m = 0; m < slices; ++m)
      if (ignored[m] == n / slices) {
        error = "every label of " +
                (slices > 1 ? "microbatch " + std::to_string(m) + " of " : std::string()) + "'" +
                ids.name + "' is the ignore index " + std::to_string(*range.ignored) +
                ": the loss, a mean over the labels counted, would be 0/0";
        return false;
      }
  }
  return true;
}

/// Each shard.grid must be the run's mesh, or the parts of it that its
/// tfm.grid_axes names (Grid::declaredBy decides; its diagnostics give way
/// to one message in terms of --mesh).
bool checkGrids(MLIRContext &context, ModuleOp module, const std::optional<Mesh> &mesh,
                const std::string &spec, std::string &error) {
  tfm::MeshAttr meshAttr = mesh ? tfm::MeshAttr::get(&context, *mesh) : tfm::MeshAttr();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  WalkResult bad = module.walk([&](shard::GridOp grid) {
    if (meshAttr && succeeded(sharding::Grid::declaredBy(grid, meshAttr)))
      return WalkResult::advance();
    std::string got;
    for (int64_t d : grid.getShape())
      got += (got.empty() ? "" : "x") + std::to_string(d);
    auto names = grid->getAttrOfType<ArrayAttr>(sharding::kGridAxesAttr);
    std::string listed;
    for (Attribute name : names ? names.getValue() : ArrayRef<Attribute>())
      listed += (listed.empty() ? "" : ", ") +
                (isa<StringAttr>(name) ? cast<StringAttr>(name).str() : std::string("?"));
    std::string at = "grid @" + grid.getSymName().str();
    error = !meshAttr ? at + " has shape " + got + "; run it with a --mesh of those axis sizes"
            : !names  ? at + " has shape " + got + ", but --mesh " + spec + " has other axis sizes"
                      : at + " runs on the parts " + listed + " of a mesh, but --mesh " + spec +
                           " is not cut into them";
    return WalkResult::interrupt();
  });
  return !bad.wasInterrupted();
}

} // namespace

namespace pmlir::exec {

LogicalResult Job::runPasses(PassManager &pm, mlir::Operation *target, std::string &error) const {
  std::string kept;
  std::optional<ScopedDiagnosticHandler> keep;
  if (rank != 0)
    keep.emplace(&context, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error) {
        llvm::raw_string_ostream out(kept);
        out << (kept.empty() ? "" : "; ") << d.getLocation() << ": " << d;
      }
      return success();
    });
  if (succeeded(configure(pm)) && succeeded(pm.run(target)))
    return success();
  error += (error.empty() || kept.empty() ? "" : "; ") + kept;
  return failure();
}

LogicalResult Job::lower(ModuleOp module, const std::string &entry, bool emit,
                         std::string &error) const {
  PassManager pm(&context);
  CompilePipelineOptions lowering;
  fillCompileOptions(o, lowering);
  lowering.program = ProgramKind::Forward;
  lowering.entry = entry;
  lowering.pipelineSchedule = pipe::ScheduleKind::None;
  lowering.from = CompilePhase::Rank;
  lowering.to = CompilePhase::Lowered;
  // A GPU job on a mesh counts its work too: checkMessagesMeet simulates
  // its messages before it runs.
  lowering.predict = o.predict || (o.device == CompileTarget::Gpu && mesh);
  // A prediction runs nothing: the kernels stay NVVM (no CUDA toolkit).
  if (o.predict && o.device == CompileTarget::Gpu)
    lowering.gpuFormat = GpuKernelFormat::Nvvm;
  if (lowering.predict)
    lowering.rank = rank;
  // A prediction asks no GPU: the built-in profiles' (H100, H200) are sm_90.
  if (o.device == CompileTarget::Gpu)
    lowering.chip = !o.gpuChip.empty() ? o.gpuChip
                    : o.predict        ? std::string("sm_90")
                                       : std::string(pmlir_rt_gpu_chip());
  if (failed(buildCompilePipeline(pm, lowering, error)))
    return failure();
  if (std::string kept; failed(runPasses(pm, module, kept))) {
    error = "lowering @" + entry + " failed" + (kept.empty() ? "" : ": " + kept);
    return failure();
  }
  if (emit && !o.emitCompiled.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    os << "\n";
    if (!writeOutputFile(o.emitCompiled, text, error))
      return failure();
  }
  return success();
}

std::unique_ptr<JitProgram> Job::compile(ModuleOp module, const EntrySignature &signature,
                                         bool emit, std::string &error) const {
  auto start = std::chrono::steady_clock::now();
  if (failed(lower(module, signature.name, emit, error)))
    return nullptr;
  double lowering = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CompileOptions compile;
  compile.optLevel = o.jitOptLevel;
  compile.device = o.device == CompileTarget::Gpu;
  compile.keepObject = !o.predict;
  std::unique_ptr<JitProgram> program = JitProgram::create(module, signature, compile, error);
  if (!program)
    return nullptr;
  program->seconds.lowering = lowering;
  if (!program->objectCacheWarning().empty())
    warn(program->objectCacheWarning());
  return program;
}

bool Job::writeReports(ModuleOp module, std::string &error) {
  // Both reports or neither: the passes write into a scratch directory, and
  // the files are finished beside their paths before either is committed
  // (a disk that filled between two passes kept the first report).
  llvm::SmallString<128> scratch;
  if (std::error_code failure = llvm::sys::fs::createUniqueDirectory("pmlir-reports", scratch)) {
    error = "writing the reports failed: no scratch directory: " + failure.message();
    return false;
  }
  llvm::scope_exit removeScratch([&] { llvm::sys::fs::remove_directories(scratch); });
  CompilePipelineOptions written;
  std::vector<std::pair<std::string, std::string>> outputs; // (scratch file, path)
  for (auto [path, report, name] : {std::tuple<const std::string &, std::string &, const char *>{
                                        o.commReport, written.commReport, "comm"},
                                    {o.memoryReport, written.memoryReport, "memory"}})
    if (!path.empty()) {
      report = (scratch + "/" + name + ".json").str();
      outputs.emplace_back(report, path);
    }
  PassManager reports(module.getContext());
  addReportPasses(reports, written);
  if (failed(configure(reports)) || failed(reports.run(module))) {
    error = "writing the reports failed";
    return false;
  }
  std::vector<std::unique_ptr<OutputFile>> files;
  for (const auto &[from, to] : outputs) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text = llvm::MemoryBuffer::getFile(from);
    if (!text) {
      error = "writing the reports failed: " + from + ": " + text.getError().message();
      return false;
    }
    std::unique_ptr<OutputFile> file = OutputFile::open(to, error);
    if (!file)
      return false;
    file->write((*text)->getBuffer());
    if (!file->finish(error))
      return false;
    files.push_back(std::move(file));
  }
  for (std::unique_ptr<OutputFile> &file : files)
    if (!file->commit(error))
      return false;
  return true;
}

int Job::run() {
  // On a mesh: started plainly, launch the ranks; under mpirun, be one.
  if (!o.mesh.empty()) {
    if (!mesh)
      return fail(meshError);
    if (!underMpirun()) {
      // The ranks' output goes through mpirun: they learn from here
      // whether it ends on a terminal (a progress bar) or not.
      setenv(kTerminalEnv, isatty(STDOUT_FILENO) ? "1" : "0", /*overwrite=*/1);
      return launchRanks(mesh->numRanks(), o.relaunch, o.hostfile,
                         /*stopsAtStep=*/o.train && !o.compileOnly && !o.predict);
    }
    if (o.train)
      catchStopRequests(/*rankOfJob=*/true);
    maybeHang(launcherRank(), "start-up");
    char text[512];
    // A GPU program's collectives read and write device memory: NCCL's (a
    // job that only compiles runs none, and needs no GPU).
    pmlir_rt_backend backend = o.backend.value_or(
        o.device == CompileTarget::Gpu && !o.compileOnly && !o.predict ? PMLIR_RT_BACKEND_NCCL
                                                                       : PMLIR_RT_BACKEND_MPI);
    if (pmlir_rt_init(rt::RuntimeMesh(*mesh).get(), o.timeout, backend, text, sizeof(text)))
      return fail(text);
    rank = pmlir_rt_rank();
    if (o.wrongGroupAt > 0)
      pmlir_rt_test_wrong_group(o.wrongGroupAt);
    if (o.checkCollectives)
      pmlir_rt_check_collectives(1);
  }
  if (o.train && o.mesh.empty())
    catchStopRequests(/*rankOfJob=*/false);
  if (o.device == CompileTarget::Gpu && !o.compileOnly && !o.predict) {
    char text[512] = "";
    if (int status = stopIfAnyFailed(
            pmlir_rt_gpu_init(-1, text, sizeof(text)) ? "--device gpu: " + std::string(text) : ""))
      return status;
  }
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  context.getOrLoadDialect<tfm::TfmDialect>();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  {
    // Every rank reads the same file: rank 0 says what is wrong with it.
    std::optional<ScopedDiagnosticHandler> quiet;
    if (rank != 0)
      quiet.emplace(&context, [](Diagnostic &) { return success(); });
    module = parseSourceFile<ModuleOp>(o.model, sourceMgr, &context);
  }
  if (!module)
    return failAlike("");
  auto entry = module->lookupSymbol<func::FuncOp>(o.entry);
  if (!entry)
    return failAlike("no function @" + o.entry + " in " + o.model);
  if (entry.isExternal())
    return failAlike("@" + o.entry + " in " + o.model + " is a declaration: it has no body to run");
  if (func::FuncOp recursive = recursiveFunction(entry))
    return failAlike("@" + recursive.getSymName() + " in " + o.model +
                     " calls itself (directly or through the functions it calls): a run of @" +
                     o.entry + " would never end");
  for (unsigned i = 0; i < entry.getNumArguments(); ++i)
    if (tfm::argumentRole(entry, i) == tfm::ArgumentRole::Param)
      if (auto name = entry.getArgAttrOfType<StringAttr>(i, tfm::kNameAttr))
        modelParams.push_back(name.getValue().str());
  if (auto config = (*module)->getAttrOfType<DictionaryAttr>(tfm::kHuggingFaceConfigAttr))
    huggingFaceConfig = huggingFaceConfigText(config);
  if (!o.exportHf.empty() && huggingFaceConfig.empty())
    return failAlike("--export-hf writes the model's Hugging Face config, and " + o.model +
                     " has none (tfm.huggingface_config, which pmlir-gen writes for every model "
                     "one of transformers' classes holds)");
  // Before any step: a parameter transformers has no name for.
  if (!o.exportHf.empty())
    for (const std::string &name : modelParams) {
      std::string error;
      if (huggingFaceName(huggingFaceConfig, name, error).empty())
        return failAlike("--export-hf: " + o.model + ": " + error);
    }
  // Hugging Face's MoE models route every token (dropless): one that drops
  // tokens past an expert's capacity would load as another model.
  if (!o.exportHf.empty())
    if (module->walk([](tfm::MoeCapacityOp) { return WalkResult::interrupt(); }).wasInterrupted())
      return failAlike("--export-hf: " + o.model +
                       " drops tokens past its experts' capacity (tfm.moe_capacity), which "
                       "Hugging Face's MoE models, dropless, do not: the export would load as "
                       "another model");

  // What the job compiles, phase by phase (pmlir-compile-pipeline): the
  // program (--grads: the gradient of the entry's loss, --train: a training
  // step; pipelined: cut into stages repeated per microbatch and
  // scheduled), sharded on the mesh, this rank's pipeline stages, lowered.
  CompilePipelineOptions phases;
  fillCompileOptions(o, phases);
  bool pipelined = o.pipelineSchedule != pipe::ScheduleKind::None;
  if (pipelined) // a pp axis, checked before the launch
    phases.pipelineRank = mesh->coordinates(rank)[mesh->axisIndex("pp")];

  // A global program with a mesh (from the model, --recipe, or a pipeline,
  // whose transfers run on the pp axis) is sharded: recipe, propagation,
  // partition.
  bool partitioned = !module->getOps<shard::GridOp>().empty();
  bool recipe = o.recipe != RunOptions::Recipe::None;
  bool sharding = !partitioned && (recipe || pipelined || (*module)->getAttr(tfm::kMeshAttr));
  if (recipe && partitioned)
    return failAlike("--recipe shards a global program, but " + o.model +
                     " is already partitioned (it has a shard.grid)");
  if (pipelined && partitioned)
    return failAlike("--pipeline-schedule cuts a global program into stages, but " + o.model +
                     " is already partitioned (it has a shard.grid)");
  if (sharding && !mesh)
    return failAlike(!recipe ? o.model + " has a tfm.mesh: run it with --mesh"
                             : "--recipe needs --mesh");
  for (auto [given, flag] : {std::pair<bool, const char *>{o.check, "--check"},
                             {o.sequenceParallel, "--sequence-parallel"},
                             {!o.commReport.empty(), "--comm-report"},
                             {!o.memoryReport.empty(), "--memory-report"}})
    if (given && !sharding)
      return failAlike(std::string(flag) +
                       " needs a global program to shard: --recipe, or a model with tfm.mesh");
  if (sharding) {
    auto have = module->getOperation()->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr);
    if (have && have != tfm::MeshAttr::get(&context, *mesh))
      return failAlike("the model's tfm.mesh " + attrText(have) + " is not --mesh " + o.mesh);
    phases.mesh = o.mesh;
    phases.rankOrder = o.rankOrder;
    // Causal context parallelism is balanced unless asked otherwise.
    if (o.recipe == RunOptions::Recipe::Megatron && mesh->axisIndex("cp") >= 0 &&
        mesh->axisSizes()[mesh->axisIndex("cp")] > 1 &&
        o.cpLayout != RunOptions::ContextLayout::Contiguous)
      phases.contextLayout = CompilePipelineOptions::ContextLayout::Balanced;
  }
  // Runs the phases after `from` up to `to` on `target`.
  auto runPhases = [&](CompilePipelineOptions &options, CompilePhase from, CompilePhase to,
                       ModuleOp target, std::string &error) -> LogicalResult {
    options.from = from;
    options.to = to;
    PassManager pm(&context);
    if (failed(buildCompilePipeline(pm, options, error)))
      return failure();
    return runPasses(pm, target, error);
  };

  // --check's reference of a pipelined run: the same step or forward over
  // the same microbatches, without stages.
  OwningOpRef<ModuleOp> unpipelined;
  if (pipelined && o.check && checksHere()) {
    unpipelined = module->clone();
    CompilePipelineOptions reference;
    RunOptions unpipelinedRun = o;
    unpipelinedRun.pipelineSchedule = pipe::ScheduleKind::None;
    fillCompileOptions(unpipelinedRun, reference);
    if (o.train)
      reference.gradAccum = o.microbatches;
    else
      reference.microbatches = o.microbatches;
    std::string error;
    if (failed(
            runPhases(reference, CompilePhase::Global, CompilePhase::Program, *unpipelined, error)))
      return failHere(std::string("building the unpipelined ") +
                      (o.train ? "training step" : "forward") + " of --check failed" +
                      (error.empty() ? "" : ": " + error));
  }
  // --predict's model FLOPs: the forward's per token, as given.
  double forwardFlopsPerToken = 0;
  if (o.predict)
    if (int64_t tokens = tokensOf(entry))
      forwardFlopsPerToken = summarizeModel(entry).flops / static_cast<double>(tokens);
  // The program.
  if (!o.grads.empty() || o.train || pipelined) {
    std::string error;
    if (failed(runPhases(phases, CompilePhase::Global, CompilePhase::Program, *module, error)))
      error = std::string(o.train           ? "building a training step of @"
                          : o.grads.empty() ? "pipelining @"
                                            : "differentiating @") +
              o.entry + " of " + o.model + " failed" + (error.empty() ? "" : ": " + error);
    if (int status = stopIfAnyFailed(error))
      return status;
    entry = module->lookupSymbol<func::FuncOp>(compiledEntryName(phases));
  }
  tokensPerStep = tokensOf(entry);
  // Every rank finds the same in the same program.
  if (std::string error = findStepMetrics(*module); !error.empty())
    return failAlike(error);
  modelFlopsPerStep = forwardFlopsPerToken * static_cast<double>(tokensPerStep) *
                      (o.train || !o.grads.empty() ? 3 : 1);
  std::map<unsigned, IdRange> idRanges = idRangesOf(entry);
  // The sequence length of the token ids, from the global program: a middle
  // pipeline stage reads neither ids nor labels, but --check's reference
  // does.
  int64_t tokenSequence = 0;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    tfm::ArgumentRole role = tfm::argumentRole(entry, i);
    auto type = dyn_cast<RankedTensorType>(entry.getArgument(i).getType());
    if ((role == tfm::ArgumentRole::Input || role == tfm::ArgumentRole::Label) && type &&
        type.getRank() > 0 && isa<IntegerType>(type.getElementType()))
      tokenSequence = type.getShape().back();
  }
  // By name too: a pipeline rank's program keeps some of the arguments.
  std::map<std::string, IdRange> idRangesByName;
  for (auto &[i, range] : idRanges)
    if (auto name = entry.getArgAttrOfType<StringAttr>(i, tfm::kNameAttr))
      idRangesByName.emplace(name.getValue().str(), range);
  OwningOpRef<ModuleOp> reference;
  if (sharding) {
    if (o.check && checksHere())
      reference = unpipelined ? std::move(unpipelined) : module->clone();
    // The mesh, the sharded program, and this rank's pipeline stages.
    std::string error;
    if (failed(runPhases(phases, CompilePhase::Program, CompilePhase::Rank, *module, error)))
      error = "sharding " + o.model + " on --mesh " + o.mesh + " failed" +
              (error.empty() ? "" : ": " + error);
    if (int status = stopIfAnyFailed(error))
      return status;
    // The reports, written by rank 0 alone.
    if (rank == 0 && (!o.commReport.empty() || !o.memoryReport.empty()))
      writeReports(*module, error);
    if (int status = stopIfAnyFailed(error))
      return status;
  }

  if (o.predict)
    return predict(*module, entry, pipelined);
  if (o.compileOnly) {
    std::string error;
    LogicalResult lowered = lower(*module, entry.getSymName().str(), rank == 0, error);
    if (int status = stopIfAnyFailed(succeeded(lowered) ? "" : error))
      return status;
    if (failed(checkMessagesMeet(*module)))
      return 1;
    if (mesh)
      pmlir_rt_finalize();
    return 0;
  }

  if (pipelined) {
    idRanges.clear();
    for (unsigned i = 0; i < entry.getNumArguments(); ++i)
      if (auto name = entry.getArgAttrOfType<StringAttr>(i, tfm::kNameAttr))
        if (auto it = idRangesByName.find(name.getValue().str()); it != idRangesByName.end())
          idRanges.emplace(i, it->second);
  }
  EntrySignature signature;
  // Where this rank's blocks lie, once for the entry function.
  std::vector<int64_t> coordinates = mesh ? mesh->coordinates(rank) : std::vector<int64_t>{};
  const Mesh *onMesh = mesh ? &*mesh : nullptr;
  uint64_t bytesRead = 0;
  std::vector<BoundArgument> args;
  double bindSeconds = 0;
  // The entry's arguments, bound from the job's files: each rank reads its
  // own blocks, so ranks fail alike (a tensor the file lacks) or apart (a
  // corrupt piece of a checkpoint directory), and agree after.
  auto bindHere = [&]() -> std::string {
    std::string error;
    if (!describeEntry(entry, signature, error, /*mayReturnNothing=*/pipelined))
      return error;
    if (!layOut(signature.results, "result", signature.name, onMesh, coordinates, error))
      return error;
    if (!checkGrids(context, *module, mesh, o.mesh, error))
      return error;

    bool resumesDirectory = !o.resume.empty() && isCheckpointDirectory(o.resume);
    if (resumesDirectory) {
      // Every rank checks its share of the pieces' checksums; rank 0 that
      // the checkpoint is of this model.
      if (!(checkpoint = CheckpointDirectory::open(o.resume, error)) ||
          !checkpoint->verify(rank, mesh ? mesh->numRanks() : 1, error))
        return "--resume " + o.resume + ": " + error;
      if (rank == 0)
        for (auto &[name, saved] : checkpoint->tensors())
          if (saved.parameter && !llvm::is_contained(modelParams, name))
            return "--resume " + o.resume + ": it holds parameter '" + name + "' " +
                   formatDims(saved.shape) +
                   ", which the model does not have: it was saved for another model";
    }
    std::string weightsPath = o.resume.empty() ? o.weights : resumesDirectory ? "" : o.resume;
    if (!weightsPath.empty() && !(weights = SafeTensorsSet::open(weightsPath, error)))
      return error;
    if (!o.resume.empty() && !resumesDirectory &&
        (!(state = SafeTensorsFile::open(optimizerStatePath(o.resume), error)) ||
         !checkCheckpoint(*weights->files().front(), *state, /*readTensors=*/rank == 0, error)))
      return "--resume " + o.resume + ": " + error;
    // A checkpoint file of another model: rank 0 finds each of its tensors
    // a parameter of this model or the state AdamW keeps for one (binding
    // finds those it lacks).
    if (!o.resume.empty() && !resumesDirectory && rank == 0) {
      std::set<std::string> parameters(modelParams.begin(), modelParams.end());
      std::set<std::string> optimizer = {training::kStepName.str()};
      for (const std::string &param : modelParams)
        for (llvm::StringRef kind : training::kOptimizerStateKinds)
          optimizer.insert(training::optimizerStateName(param, kind));
      for (auto [file, names] :
           {std::pair{weights->files().front().get(), &parameters}, {state.get(), &optimizer}})
        for (const TensorView &t : file->tensors())
          if (!names->count(t.name))
            return "--resume " + o.resume + ": " + file->path() + " holds tensor '" + t.name +
                   "' " + formatDims(t.shape) +
                   ", which the model's training step does not have: it was saved for another "
                   "model";
    }
    if (!o.inputs.empty() && !(inputs = SafeTensorsFile::open(o.inputs, error)))
      return error;

    BindOptions bind = bindOptions();
    // One rank speaks for all about the files.
    if (rank == 0)
      bind.warn = [](const std::string &message) { warn(message); };
    // Each rank reads and checks its own blocks of sharded weights.
    bind.warnBlock = [this](const std::string &message) {
      warn((mesh ? "rank " + std::to_string(rank) + ": " : std::string()) + message);
    };
    bind.bytesRead = &bytesRead;
    auto bindStart = std::chrono::steady_clock::now();
    if (!layOut(signature.arguments, "argument", signature.name, onMesh, coordinates, error) ||
        !bindArguments(signature.arguments, signature.name, bind, args, error) ||
        !checkIds(idRanges, signature, args, /*generated=*/!o.data.empty(), error))
      return error;
    bindSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - bindStart).count();
    // Every tensor of --weights is the model's, or provably changes nothing
    // left out (rank 0 reads what it compares; the others trust it). After
    // binding, which names the weights the file lacks first.
    if (!o.weights.empty() && rank == 0) {
      std::string list;
      size_t count = 0;
      for (const UnusedTensor &t : unusedTensors(*weights, modelParams)) {
        if (!t.harmless.empty())
          continue;
        const TensorView *view = weights->find(t.name);
        if (++count <= 10)
          list += "\n  '" + t.name + "' " + formatDims(view->shape);
      }
      if (count > 10)
        list += "\n  ... and " + std::to_string(count - 10) + " more";
      if (count > 0 && !o.allowUnusedWeights)
        return "--weights " + o.weights + " holds " + std::to_string(count) +
               (count == 1 ? " tensor" : " tensors") +
               " the model does not use, so it would compute another model than the "
               "checkpoint's:" +
               list +
               "\n(pmlir-gen hf builds the model a Hugging Face directory's config.json "
               "describes; --allow-unused-weights runs without them)";
      if (count > 0)
        warn("--allow-unused-weights: the model does not use these tensors of " + o.weights + ":" +
             list);
    }
    // The token file, checked before the compile: one window of the
    // sequence the token ids hold (tokenSequence).
    if (o.train && !o.data.empty() &&
        !(tokens = TokenData::open(o.data, o.dataDtype, tokenSequence, error)))
      return error;
    return "";
  };
  if (int status = stopIfAnyFailed(bindHere()))
    return status;
  if (o.printBytesRead && (weights || checkpoint)) {
    // Against the bytes of the model's parameters in the files, whole.
    uint64_t whole = 0;
    for (const std::string &param : modelParams)
      if (const TensorView *view = weights ? findWeight(*weights, param) : nullptr)
        whole += view->bytes;
      else if (const CheckpointDirectory::Tensor *saved =
                   checkpoint ? checkpoint->find(param) : nullptr)
        whole += elementCount(saved->shape) * sizeof(float);
    // One write per rank: the ranks share mpirun's output.
    std::string line = (mesh ? "rank " + std::to_string(rank) + ": " : std::string()) + "read " +
                       std::to_string(bytesRead) + " bytes of parameters from " +
                       (o.resume.empty() ? "--weights" : "--resume") + ", of " +
                       std::to_string(whole) + ", bound in " +
                       llvm::formatv("{0:f3}", bindSeconds).str() + " s\n";
    llvm::outs() << line;
    llvm::outs().flush();
  }

  std::string error;
  std::unique_ptr<JitProgram> program = compile(*module, signature, rank == 0, error);
  if (int status = stopIfAnyFailed(program ? "" : error))
    return status;
  if (failed(checkMessagesMeet(*module)))
    return 1;
  pmlir_rt_set_num_threads(o.threads);
  if (o.verbose && rank == 0 && mesh) {
    char hosts[4096];
    pmlir_rt_describe_hosts(hosts, sizeof(hosts));
    llvm::outs() << "hosts: " << hosts << "\n";
  }
  if (o.verbose && rank == 0) {
    llvm::outs() << llvm::formatv("compile: @{0}, lowering {1:F2} s, LLVM {2:F2} s{3}\n",
                                  signature.name, program->seconds.lowering, program->seconds.llvm,
                                  program->objectFromCache() ? " (its object from the cache)" : "");
  }
  if (o.verbose && rank == 0 && o.device == CompileTarget::Cpu) {
    llvm::outs() << "gemm: " << rt::gemmPath() << "\n";
    llvm::outs() << "loops: " << pmlir_rt_parallel_threads()
                 << " threads (a loop is split where its work passes " << rt::abi::kParallelMinWork
                 << " operations)\n";
    llvm::outs().flush();
  }
  // A forward writes no argument and reads none after the runs: the f32
  // weights it reads only in bf16 need not be held.
  program->bind(args, /*releaseBf16Only=*/!o.train);
  // Every rank has compiled before the first run, whose time is then its
  // own, not a wait for the slowest compile (a pipeline's last stage).
  if (mesh)
    pmlir_rt_ready();
  if (mesh && !o.trace.empty())
    pmlir_rt_trace_start();
  if (o.train) {
    int status = train(*program, signature, args, idRanges, reference);
    reportLoops();
    return status;
  }
  pmlir_rt_trace_region_begin("forward");
  pmlir_rt_clear_step_metrics();
  if (!program->run(error))
    return failHere(error);
  pmlir_rt_trace_region_end();
  llvm::outs() << stepMetricsReport();

  if (o.repeat > 0) {
    // Tokens per run of the whole job: the global token ids' count, not
    // this rank's share of a batch split over dp.
    // (A pipeline rank past the first returns nothing.)
    int64_t jobTokens = 1;
    if (!signature.results.empty()) {
      const TensorSpec &result = signature.results.front();
      std::vector<int64_t> resultGlobal = result.block ? result.block->shape : result.shape;
      if (resultGlobal.size() >= 2)
        jobTokens =
            elementCount(std::vector<int64_t>(resultGlobal.begin(), resultGlobal.end() - 1));
    }
    for (auto [argNumber, range] : idRanges)
      if (!range.ignored) {
        const TensorSpec &ids = signature.arguments[argNumber];
        jobTokens = elementCount(ids.global ? *ids.global : ids.shape);
        break;
      }
    std::vector<double> ms;
    for (unsigned r = 0; r < o.repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      pmlir_rt_trace_region_begin("forward");
      if (!program->run(error))
        return failHere(error);
      pmlir_rt_trace_region_end();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    if (rank == 0)
      llvm::outs() << llvm::format("forward: median %.3f ms, %.1f tokens/s (%lld tokens a run)\n",
                                   median, jobTokens / (median / 1000.0),
                                   static_cast<long long>(jobTokens));
  }
  // Every rank is here after the same collectives: the peak of its runs.
  measurePeakResident();
  reportLoops();
  if (!writeTrace(error))
    return failAtEnd("--trace: " + error);
  return assembleAndReport(*program, signature, reference);
}

void Job::reportLoops() const {
  if (!o.verbose || rank != 0 || o.device != CompileTarget::Cpu)
    return;
  int64_t calls = 0, split = 0;
  pmlir_rt_parallel_counts(&calls, &split);
  llvm::outs() << "loops: " << calls << " calls, " << split << " split over threads\n";
  llvm::outs().flush();
}

/// Result `i` of the last run of `program` as a whole tensor on rank 0:
/// a sharded result is gathered and each block put in its place; without a
/// sharding, results are replicated on a mesh (the program's own
/// collectives make them so) and rank 0's is the job's.
bool Job::assembleResult(JitProgram &program, const TensorSpec &result, size_t i,
                         AssembledResult &out, std::string &error) const {
  return assemble(program.result(i), result, out, error);
}

bool Job::assemble(const float *data, const TensorSpec &result, AssembledResult &out,
                   std::string &error) const {
  out.values = data;
  out.shape = result.shape;
  out.owned.clear();
  int64_t n = elementCount(result.shape);
  if (!result.sharding)
    return true;
  // The group over every axis but the pipeline's (all of them without
  // pipeline stages), gathered on its first rank.
  std::vector<int64_t> groupAxes = nonPipelineAxes();
  int64_t ranks = 1;
  for (int64_t a : groupAxes)
    ranks *= mesh->axisSizes()[a];
  std::vector<float> blocks(checksHere() ? n * ranks : 0);
  pmlir_rt_gather(out.values, blocks.data(), n, PMLIR_RT_F32, 0, groupAxes.data(),
                  static_cast<int64_t>(groupAxes.size()));
  if (!checksHere())
    return true;
  for (int64_t member = 0; member < ranks; ++member) {
    // Member j of the group, its last axis fastest.
    std::vector<int64_t> coords = mesh->coordinates(rank);
    for (int64_t i = static_cast<int64_t>(groupAxes.size()) - 1, j = member; i >= 0; --i) {
      coords[groupAxes[i]] = j % mesh->axisSizes()[groupAxes[i]];
      j /= mesh->axisSizes()[groupAxes[i]];
    }
    std::optional<BlockLayout> layout = blockOf(result, *mesh, coords, error);
    if (!layout)
      return false;
    if (out.owned.empty())
      out.owned.resize(elementCount(layout->shape));
    layout->pasteIn(blocks.data() + member * n, sizeof(float), out.owned.data());
    out.shape = layout->shape;
  }
  out.values = out.owned.data();
  return true;
}

int Job::assembleAndReport(JitProgram &program, const EntrySignature &signature,
                           OwningOpRef<ModuleOp> &reference) {
  std::string error;
  std::vector<AssembledResult> results(signature.results.size());
  for (auto [i, result] : llvm::enumerate(signature.results))
    if (!assembleResult(program, result, i, results[i], error))
      return failAtEnd("result '" + result.name + "' of @" + signature.name + " " + error);
  // A non-finite result is named as such: with --check it is no sharding
  // mismatch, and without it a silent NaN costs users days.
  std::vector<std::optional<int64_t>> nonFinite(results.size());
  if (rank == 0) {
    for (auto [i, result] : llvm::enumerate(signature.results)) {
      const AssembledResult &r = results[i];
      int64_t n = elementCount(r.shape);
      if (int64_t k = firstNonFinite(r.values, n); k >= 0) {
        nonFinite[i] = k;
        int64_t count = 0;
        for (int64_t j = k; j < n; ++j)
          count += !std::isfinite(r.values[j]);
        warn("result '" + result.name + "' has " + llvm::Twine(count) + " non-finite of " +
             llvm::Twine(n) + " values, the first at flat index " + llvm::Twine(k) + " (" +
             nonFiniteName(r.values[k]) + "): non-finite weights or inputs, or an overflow");
      }
    }
  }
  // The unsharded program on rank 0, from the same weights and inputs.
  if (o.check && rank == 0) {
    maybeHang(rank, "check");
    PassManager drop(&context);
    drop.addPass(createDropShardings());
    EntrySignature globalSignature;
    std::vector<BoundArgument> globalArgs;
    std::unique_ptr<JitProgram> unsharded;
    BindOptions bind = bindOptions();
    if (failed(configure(drop)) || failed(drop.run(*reference)))
      return failAtEnd("the unsharded run of --check: dropping the shardings failed");
    auto globalEntry = reference->lookupSymbol<func::FuncOp>(signature.name);
    if (!describeEntry(globalEntry, globalSignature, error) ||
        !bindArguments(globalSignature.arguments, globalSignature.name, bind, globalArgs, error) ||
        !(unsharded = compile(*reference, globalSignature, /*emit=*/false, error)))
      return failAtEnd("the unsharded run of --check: " + error);
    unsharded->bind(globalArgs);
    if (!unsharded->run(error))
      return failAtEnd("the unsharded run of --check: " + error);
    for (auto [i, result] : llvm::enumerate(signature.results)) {
      const AssembledResult &r = results[i];
      int64_t n = elementCount(r.shape);
      const float *expected = unsharded->result(i);
      if (int64_t k = firstNonFinite(expected, n); k >= 0)
        return failAtEnd("--check: the unsharded result '" + result.name +
                         "' is not finite either (the first at flat index " + llvm::Twine(k) +
                         "), so the comparison says nothing about sharding");
      if (nonFinite[i])
        return failAtEnd(
            "--check: the sharded result '" + result.name + "' is not finite at flat index " +
            llvm::Twine(*nonFinite[i]) + " where the unsharded run's is " +
            llvm::formatv("{0}", expected[*nonFinite[i]]).str() + ": a sharding fault");
      double diff = 0, norm = 0;
      for (int64_t k = 0; k < n; ++k) {
        diff += (double(r.values[k]) - expected[k]) * (double(r.values[k]) - expected[k]);
        norm += double(expected[k]) * expected[k];
      }
      double relative = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
      bool ok = relative <= o.tolerance;
      llvm::outs() << "check: " << result.name
                   << llvm::format(" relative error %.3g (tolerance %.3g): %s\n", relative,
                                   o.tolerance, ok ? "ok" : "FAILED");
      if (!ok)
        return failAtEnd(
            "--check: the sharded result '" + result.name + "' differs from the unsharded run by " +
            llvm::formatv("{0:e3}", relative).str() + " (relative), more than --tolerance " +
            llvm::formatv("{0:e3}", o.tolerance).str());
    }
  }
  if (o.print && rank == 0) {
    for (auto [i, result] : llvm::enumerate(signature.results)) {
      const AssembledResult &r = results[i];
      int64_t n = elementCount(r.shape);
      double sum = 0, squares = 0;
      for (int64_t k = 0; k < n; ++k)
        sum += r.values[k];
      double mean = sum / n;
      for (int64_t k = 0; k < n; ++k)
        squares += (r.values[k] - mean) * (r.values[k] - mean);
      llvm::outs() << result.name << ": shape " << formatDims(r.shape)
                   << llvm::format(", mean %.6g, std %.6g, first", mean, std::sqrt(squares / n));
      for (int64_t k = 0; k < std::min<int64_t>(n, 5); ++k)
        llvm::outs() << llvm::format(" %.6g", r.values[k]);
      llvm::outs() << "\n";
    }
  }
  const std::string &outputPath = o.grads.empty() ? o.output : o.grads;
  if (!outputPath.empty() && rank == 0) {
    maybeHang(rank, "output");
    std::vector<TensorToWrite> tensors;
    for (auto [i, result] : llvm::enumerate(signature.results))
      tensors.push_back({result.name, DType::F32, results[i].shape, results[i].values});
    if (!writeSafeTensors(outputPath, tensors, {}, error))
      return failAtEnd(error);
  }
  program.releaseResults();
  reportPeakResident();
  if (mesh)
    pmlir_rt_finalize();
  return 0;
}

} // namespace pmlir::exec

void exec::registerRunDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void exec::keepFreedMemory() {
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

int exec::printGroups(const std::string &meshSpec, const std::string &rankOrder) {
  if (meshSpec.empty())
    return fail("--print-groups needs --mesh");
  std::string error;
  std::optional<Mesh> mesh = Mesh::parse(meshSpec, rankOrder, error);
  if (!mesh)
    return fail(error);
  llvm::outs() << mesh->describeGroups();
  return 0;
}

int exec::runModel(const RunOptions &o) {
  if (!o.rankOrder.empty() && o.mesh.empty())
    return fail("--rank-order needs --mesh");
  if (o.checkCollectives && o.mesh.empty())
    return fail("--check-collectives checks the collectives of a mesh's ranks: it needs --mesh");
  bool recipe = o.recipe != RunOptions::Recipe::None;
  if (recipe && o.mesh.empty())
    return fail("--recipe needs --mesh");
  if (o.recipe != RunOptions::Recipe::Auto && (!o.topology.empty() || !o.memoryBudget.empty()))
    return fail(std::string(o.topology.empty() ? "--memory-budget" : "--topology") +
                " is for auto-sharding: it needs --recipe auto");
  // --mesh, parsed once for the checks here and the job (which reports a
  // mesh that does not parse, after the checks of the files).
  std::optional<Mesh> mesh;
  std::string meshError;
  if (!o.mesh.empty())
    mesh = Mesh::parse(o.mesh, o.rankOrder, meshError);
  // Whether a recipe shards the model over a mesh with a cp axis.
  auto shardsOverCp = [&]() {
    return recipe && mesh && llvm::is_contained(mesh->axisNames(), "cp");
  };
  if (o.cpAttention) {
    if (o.cpAttention == RunOptions::ContextAttention::Ring &&
        o.recompute == training::Recompute::None)
      return fail("--cp-attention ring computes attention a key block at a time and keeps no "
                  "probabilities: --recompute none does not go with it");
    if (!shardsOverCp())
      return fail("--cp-attention splits attention over the mesh's context-parallel axis 'cp': "
                  "it needs --mesh with a cp axis and --recipe");
  }
  if (o.cpLayout && !shardsOverCp())
    return fail("--cp-layout orders the sequence over the mesh's context-parallel axis 'cp': "
                "it needs --mesh with a cp axis and --recipe");
  if (o.backend && o.mesh.empty())
    return fail(std::string("--backend ") + (*o.backend == PMLIR_RT_BACKEND_NCCL ? "nccl" : "mpi") +
                " needs --mesh: one process runs no collectives");
  if (o.precision == Precision::TF32 && o.device != CompileTarget::Gpu)
    return fail("--precision tf32 needs --device gpu: a CPU has no TF32 arithmetic");
  if (o.bf16WeightsPerCall && o.precision != Precision::BF16)
    return fail("--bf16-weights-per-call needs --precision bf16: only bf16 rounds the weights");
  if (o.device == CompileTarget::Gpu && o.backend == PMLIR_RT_BACKEND_MPI)
    return fail("--device gpu runs the collectives on device memory: --backend nccl, not mpi");
  if (!o.trace.empty() && o.mesh.empty())
    return fail("--trace writes the ranks' spans: it needs --mesh");
  if (!o.hostfile.empty() && o.mesh.empty())
    return fail("--hostfile places a mesh's ranks on hosts: it needs --mesh");
  if (!o.hostfile.empty() && mesh && !underMpirun()) {
    // Refused here rather than by mpirun after the compile.
    std::string error;
    std::optional<HostList> hosts = readHostfile(o.hostfile, error);
    if (!hosts)
      return fail(error);
    if (hosts->slots && mesh->numRanks() > *hosts->slots)
      return fail("the mesh has " + std::to_string(mesh->numRanks()) + " ranks and --hostfile '" +
                  o.hostfile + "' holds " + std::to_string(*hosts->slots) + " (the slots of its " +
                  std::to_string(hosts->hosts.size()) +
                  (hosts->hosts.size() == 1 ? " host" : " hosts") + "): give hosts or slots for " +
                  std::to_string(mesh->numRanks() - *hosts->slots) + " more");
  }
  if (o.compileOnly && o.device == CompileTarget::Gpu && o.gpuChip.empty())
    return fail("--compile-only with --device gpu asks no GPU which chip it is: give "
                "--gpu-chip (e.g. sm_90)");
  // What only a run produces. --predict prices a --grads program too, so
  // --grads names its program there, not a file it writes.
  if (o.compileOnly || o.predict)
    for (auto [given, flag] : {std::pair<bool, const char *>{!o.output.empty(), "--output"},
                               {!o.grads.empty() && o.compileOnly, "--grads"},
                               {!o.save.empty(), "--save"},
                               {!o.exportHf.empty(), "--export-hf"},
                               {!o.trace.empty(), "--trace"},
                               {o.check, "--check"},
                               {o.repeat > 0, "--repeat"},
                               {o.print, "--print"}})
      if (given)
        return fail(std::string(flag) + " needs a run: " +
                    (o.compileOnly ? "--compile-only" : "--predict") + " runs nothing");
  if (o.json && !o.predict)
    return fail("--json prints the report of --predict: it needs --predict");
  if (o.predict && o.compileOnly)
    return fail("--predict compiles and stops already: it takes no --compile-only");
  if (o.predict && o.backend == PMLIR_RT_BACKEND_NCCL)
    return fail("--predict runs none of the job's collectives (its ranks exchange their "
                "predictions over MPI, no GPU asked): --backend nccl is for a run");
  if (o.predict) {
    // The profile prices the target the job compiles for: checked here,
    // before any rank starts.
    CompileTarget priced = CompileTarget::Cpu;
    if (o.profile != "cpu") {
      std::string error;
      std::optional<planning::DeviceProfile> profile =
          planning::DeviceProfile::load(o.profile, error);
      if (!profile)
        return fail("--predict: " + error);
      priced = profile->target;
    }
    if (priced != o.device)
      return fail(o.device == CompileTarget::Gpu
                      ? "--predict --device gpu prices the step on a GPU's profile: --profile "
                        "h100, h200 or a file of a GPU's rates (\"target\": \"gpu\")"
                      : "--profile " + o.profile +
                            " prices a GPU's step: --predict it with --device gpu");
  }
  if (o.model.empty())
    return fail("no model: pmlir-run MODEL.mlir [options]");
  bool pipelined = o.pipelineSchedule != pipe::ScheduleKind::None;
  if ((o.pipelineSchedule == pipe::ScheduleKind::Csv) != !o.pipelineCsv.empty())
    return fail(o.pipelineCsv.empty() ? "--pipeline-schedule csv reads its actions from "
                                        "--pipeline-csv FILE"
                                      : "--pipeline-csv gives the actions of "
                                        "--pipeline-schedule csv");
  if (!pipelined && !o.pipelineSplit.empty())
    return fail("--pipeline-split cuts the stages of --pipeline-schedule");
  if (!pipelined && (o.microbatches != 1 || o.virtualStages != 1))
    return fail(std::string(o.microbatches != 1 ? "--microbatches" : "--virtual-stages") +
                " is for --pipeline-schedule (without one, --grad-accum splits a training "
                "step)");
  // Before the launch: every rank would refuse these alike.
  if (pipelined && (o.mesh.empty() || (mesh && mesh->axisIndex("pp") < 0)))
    return fail("--pipeline-schedule needs a pp axis in --mesh (e.g. --mesh pp=2,dp=2)");
  // Without a schedule every pipeline rank would run the whole program.
  if (!pipelined && mesh && mesh->axisIndex("pp") >= 0 &&
      mesh->axisSizes()[mesh->axisIndex("pp")] > 1)
    return fail("--mesh axis 'pp' splits the model into pipeline stages: it needs "
                "--pipeline-schedule (e.g. --pipeline-schedule 1f1b --microbatches 4)");
  if (pipelined && o.gradAccum != 1)
    return fail("--pipeline-schedule splits the step into --microbatches; --grad-accum is not "
                "used with it");
  if (pipelined && (o.microbatches < 1 || o.virtualStages < 1))
    return fail("--microbatches and --virtual-stages must be at least 1");
  if (pipelined && mesh && pipe::isGenerated(o.pipelineSchedule)) {
    std::string error;
    if (!pipe::canBuildSchedule(o.pipelineSchedule, mesh->axisSizes()[mesh->axisIndex("pp")],
                                o.virtualStages, o.microbatches, error))
      return fail("--pipeline-schedule: " + error);
  }
  if (pipelined && !o.grads.empty())
    return fail("--pipeline-schedule pipelines training steps (--train) and forwards; --grads is "
                "not pipelined");
  if (!o.grads.empty() && !o.output.empty())
    return fail("--grads writes the loss and the gradients; it takes no --output");
  if (!o.train) {
    for (auto [given, flag] : {std::pair<bool, const char *>{!o.save.empty(), "--save"},
                               {!o.exportHf.empty(), "--export-hf"},
                               {!o.resume.empty(), "--resume"},
                               {!o.data.empty(), "--data"}})
      if (given)
        return fail(std::string(flag) + " needs --train");
  } else {
    if (!o.grads.empty() || !o.output.empty())
      return fail(std::string(o.grads.empty() ? "--output" : "--grads") +
                  " does not go with --train: --save writes the trained parameters");
    if (o.steps < 1)
      return fail("--steps must be at least 1, got " + std::to_string(o.steps));
    if (o.gradAccum < 1)
      return fail("--grad-accum must be at least 1, got " + std::to_string(o.gradAccum));
    if (!o.resume.empty() && !o.weights.empty())
      return fail("--resume reads the parameters of its checkpoint; it takes no --weights");
    if (!o.data.empty() && !o.inputs.empty())
      return fail("--data and --inputs both give the batches: use one");
    if (o.repeat > 0)
      return fail("--repeat times a forward; --train prints each step's tokens/s");
  }
  if (o.zero != 0) {
    if (!o.train)
      return fail("--zero shards a training step's model state: it needs --train");
    if (o.zero < 1 || o.zero > 3)
      return fail("--zero takes a ZeRO stage, 1, 2 or 3, got " + std::to_string(o.zero));
    if (o.mesh.empty() || !recipe)
      return fail("--zero shards over the mesh's data-parallel axis: it needs --mesh with a dp "
                  "axis and --recipe");
    if (mesh && !llvm::is_contained(mesh->axisNames(), "dp"))
      return fail("--zero shards the model state over the data-parallel axis 'dp', which --mesh " +
                  o.mesh + " does not have");
  }
  std::string error;
  if (!checkInputs(o, error) || !checkOutputs(o, error))
    return fail(error);
  DialectRegistry registry;
  registerRunDialects(registry);
  // Text nested deeper than the stack holds is refused, and bytecode is read
  // once in a child process, where a crash or hang of the upstream reader on
  // a corrupt file cannot take this process along. Not in a rank under
  // mpirun: MPI forbids fork there, and pmlir-run's own launch checked.
  if (!checkModelInput(o.model, registry, !underMpirun(), error))
    return fail(error);
  bool printOp = printOpOnDiagnosticOnlyWhereAsked();
  MLIRContext context(registry);
  if (!printOp)
    context.printOpOnDiagnostic(false);
  Job job(o, context, std::move(mesh), std::move(meshError));
  return job.run();
}
