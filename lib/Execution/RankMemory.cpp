//===- RankMemory.cpp - A rank's memory: predicted and measured ----------===//
//
// Part of pmlir.
//
// --predict compiles the job as it would run (each rank its own program,
// JIT-compiled) and stops before binding anything: the process then holds
// what it holds before any tensor, its baseline. The rank's peak is that
// baseline, plus its arguments at the shapes it binds them, plus the bytes
// its program's buffers hold at their heaviest point (pmlir-buffer-peak,
// from the bufferized program; the results it returns among them), less
// what of those buffers the heap's free chunks take: the compiler's freed memory
// stays resident (exec::keepFreedMemory) and glibc gives a request the
// smallest free chunk that holds it. A real run measures the peak (VmHWM)
// once its last step or forward is done, and prints it at its end, so the
// two can be compared.
//
// With --device gpu the program is lowered for the GPU and not loaded (no
// GPU is asked): a rank's device memory is its arguments, copied there
// once, plus its buffers' peak (the runtime's stream-ordered pool reuses
// what is freed), the cuBLASLt workspace, and from the profile the CUDA
// context and each NCCL communicator the rank makes (one per group it
// communicates in). A GPU run prints the pool's peak with the workspace.
//
//===----------------------------------------------------------------------===//

#include "Job.h"

#include "pmlir/Analysis/JsonReport.h"
#include "pmlir/Conversion/BufferPeak.h"
#include "pmlir/Conversion/RoundedArguments.h"
#include "pmlir/Conversion/StepWork.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Runtime/GpuRuntime.h"
#include "pmlir/Support/Bytes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <malloc.h>
#include <set>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::exec;

int64_t exec::residentBytes() {
  // statm: size, resident, ... in pages.
  FILE *statm = fopen("/proc/self/statm", "r");
  if (!statm)
    return 0;
  long long size = 0, resident = 0;
  int read = fscanf(statm, "%lld %lld", &size, &resident);
  fclose(statm);
  return read == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

int64_t exec::peakResidentBytes() {
  // VmHWM: this process image's own peak (getrusage's ru_maxrss keeps the
  // peak of the image before an exec too: pmlir-run may re-execute itself
  // to choose the GEMM kernels before OpenBLAS starts).
  FILE *status = fopen("/proc/self/status", "r");
  if (!status)
    return 0;
  char line[256];
  long long kib = 0;
  while (fgets(line, sizeof(line), status))
    if (sscanf(line, "VmHWM: %lld kB", &kib) == 1)
      break;
  fclose(status);
  return kib * 1024;
}

namespace {

/// The free chunks of the process's one heap (keepFreedMemory makes it
/// one), from glibc's malloc_info: each size class's chunks taken at their
/// mean size, and the free top of the heap.
std::vector<int64_t> freeHeapChunks() {
  std::vector<int64_t> chunks;
  char *text = nullptr;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  if (!out)
    return chunks;
  malloc_info(0, out);
  fclose(out);
  // The first <sizes> block is the main arena's.
  llvm::StringRef xml(text, size);
  xml = xml.substr(0, xml.find("</sizes>"));
  while (true) {
    size_t at = xml.find("<size ");
    if (at == llvm::StringRef::npos)
      break;
    xml = xml.drop_front(at + 6);
    long long from = 0, to = 0, total = 0, count = 0;
    std::string entry = xml.take_until([](char c) { return c == '>'; }).str();
    if (sscanf(entry.c_str(), "from=\"%lld\" to=\"%lld\" total=\"%lld\" count=\"%lld\"", &from, &to,
               &total, &count) == 4 &&
        count > 0)
      chunks.insert(chunks.end(), count, total / count);
  }
  free(text);
  chunks.push_back(static_cast<int64_t>(mallinfo2().keepcost));
  return chunks;
}

/// The bytes of `buffers` (largest first) that free chunks of `chunks`
/// hold, each buffer placed in the smallest chunk that holds it with its
/// header, the rest of the chunk free again (glibc's best fit).
int64_t bytesInFreeChunks(const std::vector<int64_t> &buffers, std::vector<int64_t> chunks) {
  constexpr int64_t kHeader = 16;
  std::multiset<int64_t> free(chunks.begin(), chunks.end());
  int64_t held = 0;
  for (int64_t bytes : buffers) {
    auto it = free.lower_bound(bytes + kHeader);
    if (it == free.end())
      continue;
    int64_t rest = *it - bytes - kHeader;
    free.erase(it);
    if (rest >= 32)
      free.insert(rest);
    held += bytes;
  }
  return held;
}

/// Bytes as the reports print them: to a tenth of a MiB, also from a GiB on
/// ("1.160 GiB"), so that a prediction and a measurement compare.
std::string bytesText(int64_t bytes) {
  return formatBytes(static_cast<double>(bytes), bytes >= (int64_t(1) << 30) ? 3 : 1);
}

/// One rank's predicted peak, in the order the ranks exchange it. On a
/// GPU, device memory: `process` is the CUDA context and the GEMM
/// workspace, no buffer sits in a free heap, and no send is copied.
struct RankPrediction {
  int64_t process = 0, parameters = 0, optimizerState = 0, inputs = 0, buffers = 0, results = 0;
  /// Of the buffers, the bytes the heap's free chunks hold.
  int64_t inFreeHeap = 0;
  /// The groups the rank communicates in (a GPU's NCCL communicators).
  int64_t groups = 0;
  std::array<int64_t, kNumBufferSources> bySource{};
  /// The copies of its sends the runtime holds at once, from the step's
  /// simulation, and on a GPU its communicators' buffers (set on rank 0,
  /// not exchanged).
  int64_t sendCopies = 0, communicators = 0;

  static constexpr size_t kFields = 8 + kNumBufferSources;
  /// The buffers' peak holds the results (live at its last point).
  int64_t peak() const {
    return process + parameters + optimizerState + inputs + buffers - inFreeHeap + sendCopies +
           communicators;
  }
  std::vector<int64_t> fields() const {
    std::vector<int64_t> f = {process, parameters, optimizerState, inputs,
                              buffers, results,    inFreeHeap,     groups};
    f.insert(f.end(), bySource.begin(), bySource.end());
    return f;
  }
  static RankPrediction of(const int64_t *f) {
    RankPrediction p{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], {}};
    for (size_t s = 0; s < kNumBufferSources; ++s)
      p.bySource[s] = f[8 + s];
    return p;
  }
};

/// The groups a rank communicates in: its program's communications'
/// distinct mesh axes, and `jobAxes` (every axis: pmlir-run's own exchanges,
/// the peaks at the end among them; empty without a mesh).
int64_t groupsOf(ModuleOp module, const std::vector<int64_t> &jobAxes) {
  std::set<std::vector<int64_t>> groups;
  if (!jobAxes.empty())
    groups.insert(jobAxes);
  auto attr = module->getAttrOfType<DictionaryAttr>(kStepWorkAttr);
  if (std::optional<StepWork> work = attr ? StepWork::fromAttribute(attr) : std::nullopt)
    for (const StepWork::Event &e : work->events)
      if (e.communication)
        groups.insert(e.communication->axes);
  return static_cast<int64_t>(groups.size());
}

/// What each source of buffers is called in the text report.
const char *describeSource(BufferSource source) {
  switch (source) {
  case BufferSource::ForwardLayers:
    return "returned by forward blocks";
  case BufferSource::BackwardLayers:
    return "returned by backward blocks";
  case BufferSource::Entry:
    return "the entry's own";
  case BufferSource::InCall:
    return "inside the call running there";
  }
  llvm_unreachable("unknown buffer source");
}

} // namespace

std::vector<int64_t> Job::fromEveryRank(const std::vector<int64_t> &mine) const {
  if (!mesh)
    return mine;
  // Each rank fills its own slot; the sum over ranks is every slot filled.
  size_t n = mine.size();
  std::vector<int64_t> slots(n * mesh->numRanks(), 0), all(slots.size(), 0);
  std::copy(mine.begin(), mine.end(), slots.begin() + rank * n);
  std::vector<int64_t> axes = allAxes();
  pmlir_rt_all_reduce(slots.data(), all.data(), static_cast<int64_t>(slots.size()), PMLIR_RT_I64,
                      PMLIR_RT_SUM, axes.data(), static_cast<int64_t>(axes.size()));
  return all;
}

void Job::measurePeakResident() {
  peakResident = fromEveryRank({peakResidentBytes()});
  if (o.device == CompileTarget::Gpu)
    peakDevice = fromEveryRank(
        {static_cast<int64_t>(pmlir_rt_gpu_peak_bytes() + PMLIR_RT_GPU_GEMM_WORKSPACE_BYTES)});
}

void Job::reportPeakResident() const {
  if (rank != 0)
    return;
  auto report = [](const std::string &what, const std::vector<int64_t> &peaks) {
    if (peaks.empty())
      return;
    std::string line = what + ":";
    if (peaks.size() == 1) {
      line += " " + bytesText(peaks[0]);
    } else if (peaks.size() <= 8) {
      for (auto [r, bytes] : llvm::enumerate(peaks))
        line += std::string(r ? "," : "") + " rank " + std::to_string(r) + " " + bytesText(bytes);
    } else {
      auto [least, most] = std::minmax_element(peaks.begin(), peaks.end());
      line += " largest " + bytesText(*most) + " (rank " + std::to_string(most - peaks.begin()) +
              "), smallest " + bytesText(*least) + " (rank " +
              std::to_string(least - peaks.begin()) + "), of " + std::to_string(peaks.size()) +
              " ranks";
    }
    llvm::outs() << line << "\n";
  };
  report("peak resident memory", peakResident);
  // What --predict --device gpu predicts less the context and NCCL's
  // buffers, which no allocation of the program's makes.
  report("peak device memory (tensors and the GEMM workspace)", peakDevice);
  llvm::outs().flush();
}

int Job::predict(ModuleOp module, func::FuncOp entry, bool pipelined) {
  std::string error;
  EntrySignature signature;
  if (!describeEntry(entry, signature, error, /*mayReturnNothing=*/pipelined))
    return failHere(error);
  RankPrediction mine;
  for (const TensorSpec &argument : signature.arguments) {
    int64_t bytes = elementCount(argument.shape) * elementWidth(argument.element);
    switch (argument.role) {
    case Role::Param:
      mine.parameters += bytes;
      break;
    case Role::OptimizerState:
      mine.optimizerState += bytes;
      break;
    case Role::Input:
    case Role::Label:
      mine.inputs += bytes;
      break;
    }
  }
  // Compiled as the run compiles it: the process then holds its baseline.
  // A GPU's program is lowered and not loaded: its memory is the device's.
  const bool onGpu = o.device == CompileTarget::Gpu;
  std::unique_ptr<JitProgram> program;
  if (onGpu ? failed(lower(module, signature.name, rank == 0, error))
            : !(program = compile(module, signature, rank == 0, error)))
    return failHere(error);
  // The bf16 forms of weights the caller makes once and keeps, and of each
  // the program does not update (a training step updates its forms), on a
  // CPU whose GEMMs read them packed a packed copy (a program that reads a
  // weight both ways, a --grads backward's, makes two), on one whose GEMMs
  // widen them their f32 copy. A forward
  // frees each f32 weight it reads only in bf16 once its form is made
  // (JitProgram::bind): on the host its parameters peak at the larger of
  // the f32 weights (while binding) and what stays bound after; a device
  // never receives those f32 weights.
  // Bytes of a kept form and its copy, per bf16 element. An f32 program's
  // process does not ask (nor load what the bf16 GEMMs would).
  const std::vector<int64_t> rounded = roundedArguments(module);
  int64_t keptBytes = 2;
  if (!onGpu && !rounded.empty())
    switch (rt::keptBf16Operands()) {
    case rt::KeptBf16Operands::None:
      break;
    case rt::KeptBf16Operands::Packed:
      keptBytes += 2;
      break;
    case rt::KeptBf16Operands::Widened:
      keptBytes += 4;
      break;
    }
  int64_t forms = 0, freedAtBind = 0;
  auto f32Bytes = [&](int64_t i) {
    return elementCount(signature.arguments[i].shape) * int64_t(sizeof(float));
  };
  for (int64_t i : rounded)
    if (i >= 0 && static_cast<size_t>(i) < signature.arguments.size())
      forms += (signature.arguments[i].updated ? 2 : keptBytes) * f32Bytes(i) / 4;
  if (!o.train)
    for (int64_t i : bf16OnlyArguments(module))
      if (i >= 0 && static_cast<size_t>(i) < signature.arguments.size())
        freedAtBind += f32Bytes(i);
  int64_t bound = mine.parameters - freedAtBind + forms;
  mine.parameters = onGpu ? bound : std::max(mine.parameters, bound);
  auto attr = module->getAttrOfType<DictionaryAttr>(kBufferPeakAttr);
  if (auto why = attr ? attr.getAs<StringAttr>("error") : nullptr)
    return failHere("--predict: the buffers of @" + signature.name +
                    " cannot be counted before the run: " + why.str());
  std::optional<BufferPeak> peak = attr ? BufferPeak::fromAttribute(attr) : std::nullopt;
  if (!peak)
    return failHere("--predict: the lowered program carries no " + kBufferPeakAttr.str());
  mine.buffers = peak->peakBytes;
  mine.bySource = peak->bytesBySource;
  mine.results = peak->resultBytes;
  if (onGpu) {
    mine.groups = groupsOf(module, allAxes());
  } else {
    // What the run's first GEMMs add to the process (oneDNN's library,
    // kernels and buffers: about 12 MiB) is part of its baseline.
    rt::prepareGemmKernels();
    mine.process = residentBytes();
    mine.inFreeHeap = bytesInFreeChunks(peak->liveBytes, freeHeapChunks());
  }

  std::vector<int64_t> all = fromEveryRank(mine.fields());
  // The time after the memory: measuring the profile allocates.
  std::optional<StepPrediction> step = predictStepTime(module, o.profile, error);
  if (step && !step->simulation.deadlock.empty()) {
    error = step->deadlockText();
    step.reset();
  }
  // Rank 0 says why before the ranks meet to finalize: a rank that exits
  // non-zero first makes mpirun kill the others, message unwritten.
  if (!step && rank == 0)
    fail("--predict: " + error);
  if (mesh)
    pmlir_rt_finalize();
  if (!step)
    return 1;
  if (rank != 0)
    return 0;
  size_t ranks = all.size() / RankPrediction::kFields;
  std::vector<RankPrediction> predictions;
  const planning::DeviceProfile &profile = step->profile;
  for (size_t r = 0; r < ranks; ++r) {
    RankPrediction &p =
        predictions.emplace_back(RankPrediction::of(all.data() + r * RankPrediction::kFields));
    if (r < step->simulation.ranks.size())
      p.sendCopies = step->simulation.ranks[r].heldSendBytes;
    if (onGpu) {
      p.process = profile.contextBytes + static_cast<int64_t>(PMLIR_RT_GPU_GEMM_WORKSPACE_BYTES);
      p.communicators = p.groups * profile.communicatorBytes;
    }
  }
  int64_t largest = 0;
  for (const RankPrediction &p : predictions)
    largest = std::max(largest, p.peak());
  // What a device holds, where the profile knows its devices.
  int64_t capacity =
      profile.topology ? static_cast<int64_t>(profile.topology->device.memoryBytes) : 0;

  if (o.json) {
    llvm::json::Array rankList;
    for (auto [r, p] : llvm::enumerate(predictions)) {
      llvm::json::Object sources;
      for (size_t s = 0; s < kNumBufferSources; ++s)
        sources[bufferSourceName(BufferSource(s))] = p.bySource[s];
      rankList.push_back(llvm::json::Object{
          {"rank", static_cast<int64_t>(r)},
          {"peak_bytes", p.peak()},
          {"process_bytes", p.process},
          {"parameter_bytes", p.parameters},
          {"optimizer_state_bytes", p.optimizerState},
          {"input_bytes", p.inputs},
          {"buffer_bytes", p.buffers},
          {"buffer_bytes_by_source", std::move(sources)},
          {"buffer_bytes_in_free_heap", p.inFreeHeap},
          {"send_copy_bytes", p.sendCopies},
          {"communicator_bytes", p.communicators},
          {"result_bytes", p.results},
      });
    }
    llvm::json::Array buffers;
    for (const BufferPeak::Buffer &b : peak->largest)
      buffers.push_back(llvm::json::Object{
          {"bytes", b.bytes}, {"type", jsonText(b.type)}, {"location", jsonText(b.location)}});
    const planning::StepSimulation &sim = step->simulation;
    for (auto [r, s] : llvm::enumerate(sim.ranks)) {
      llvm::json::Object &entry = *rankList[r].getAsObject();
      entry["step_seconds"] = s.seconds;
      entry["gemm_seconds"] = s.compute.gemm;
      entry["loop_seconds"] = s.compute.loops;
      entry["copy_seconds"] = s.compute.copies;
      entry["communication_seconds"] = s.communication;
      entry["waiting_seconds"] = s.waiting;
      llvm::json::Array timeline;
      for (const planning::Span &span : s.spans)
        timeline.push_back(
            llvm::json::Array{span.start, span.end, planning::activityName(span.activity)});
      entry["timeline"] = std::move(timeline);
    }
    llvm::json::Object report{
        {"target", onGpu ? "gpu" : "cpu"},
        {"peak_bytes", largest},
        {"step_seconds", sim.seconds},
        {"tokens_per_step", tokensPerStep},
        {"tokens_per_second", tokensPerSecond(sim.seconds)},
        {"model_flops_per_step", modelFlopsPerStep},
        {"mfu", utilization(sim.seconds, profile)},
        {"ranks", std::move(rankList)},
        {"rank0_heaviest_point", peak->at},
        {"rank0_largest_buffers", std::move(buffers)},
        {"profile", llvm::json::Object{{"name", jsonText(profile.name)},
                                       {"source", step->source},
                                       {"peak_flops_per_second", profile.peakFor(o.precision)},
                                       {"link_bytes_per_second", profile.link.bytesPerSecond},
                                       {"link_latency_seconds", profile.link.latencySeconds}}},
    };
    if (capacity > 0) {
      report["device_memory_bytes"] = capacity;
      report["fits"] = largest <= capacity;
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
    return 0;
  }

  llvm::outs() << "predicted peak " << (onGpu ? "device" : "resident")
               << " memory (nothing ran): " << bytesText(largest)
               << (ranks > 1 ? " on the heaviest rank" : "");
  if (capacity > 0)
    llvm::outs() << ", of the " << bytesText(capacity) << " a device of " << profile.name
                 << " holds: "
                 << (largest <= capacity
                         ? "fits"
                         : "does not fit, " + bytesText(largest - capacity) + " over");
  llvm::outs() << "\n";
  // Ranks that predict alike print once ("ranks 0, 2").
  std::vector<bool> printed(ranks, false);
  for (size_t r = 0; r < ranks; ++r) {
    if (printed[r])
      continue;
    std::vector<size_t> same;
    for (size_t q = r; q < ranks; ++q)
      if (!printed[q] && predictions[q].fields() == predictions[r].fields() &&
          predictions[q].sendCopies == predictions[r].sendCopies) {
        same.push_back(q);
        printed[q] = true;
      }
    const RankPrediction &p = predictions[r];
    std::string who;
    if (ranks > 1) {
      who = same.size() == 1 ? "rank " : "ranks ";
      for (size_t i = 0; i < same.size(); ++i)
        who += (i ? ", " : "") + std::to_string(same[i]);
      who += ": ";
    }
    llvm::outs() << "  " << who << bytesText(p.peak()) << " = "
                 << (onGpu ? "CUDA context and GEMM workspace " : "process ")
                 << bytesText(p.process);
    if (onGpu)
      llvm::outs() << " + NCCL communicators " << p.groups << " x "
                   << bytesText(profile.communicatorBytes);
    llvm::outs() << " + parameters " << bytesText(p.parameters) << " + optimizer state "
                 << bytesText(p.optimizerState) << " + inputs " << bytesText(p.inputs)
                 << " + buffers " << bytesText(p.buffers);
    if (!onGpu)
      llvm::outs() << " - buffers in the free heap " << bytesText(p.inFreeHeap)
                   << " + copies of sends held " << bytesText(p.sendCopies);
    llvm::outs() << "\n";
    llvm::outs() << "    buffers at the heaviest point:";
    for (size_t s = 0; s < kNumBufferSources; ++s)
      llvm::outs() << (s ? "," : "") << " " << describeSource(BufferSource(s)) << " "
                   << bytesText(p.bySource[s]);
    llvm::outs() << "; the results, live at the end, " << bytesText(p.results) << "\n";
  }
  llvm::outs() << "  heaviest point of " << (ranks > 1 ? "rank 0" : "the run") << ": " << peak->at
               << "\n";
  if (!peak->largest.empty()) {
    llvm::outs() << "  largest buffers there:";
    for (auto [i, b] : llvm::enumerate(peak->largest))
      llvm::outs() << (i ? "," : "") << " " << bytesText(b.bytes) << " " << b.type << " ("
                   << b.location << ")";
    llvm::outs() << "\n";
  }
  printStepPrediction(*step);
  llvm::outs().flush();
  return 0;
}
