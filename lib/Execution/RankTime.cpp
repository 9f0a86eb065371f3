//===- RankTime.cpp - A step's time, predicted before the run -------------===//
//
// Part of pmlir.
//
// --predict prices each rank's compiled program (pmlir-step-work's list of
// its GEMMs, loops, copies and communication, in program order) on a device
// profile, and runs the ranks' timelines against each other
// (pmlir/Planning/StepTime.h). The `cpu` profile is measured on this host
// by every rank of the job, on the run's threads, all at once where the
// host has a core for each of their threads, else one rank at a time (the
// simulation then shares the cores among the ranks computing at once):
// each GEMM kernel the program calls, timed at its shapes; the rates of
// the loops the CPU pipeline generates, fitted on two programs it
// compiles; a copy's rate; the collectives' latency and bandwidth over the
// job's ranks; the FLOP rate of a square GEMM (or of a faster GEMM the
// program calls), the peak that model FLOPs utilization is against. What
// was measured is cached per host, threads and ranks
// ($PMLIR_PROFILE_CACHE, else $XDG_CACHE_HOME/pmlir or ~/.cache/pmlir,
// cpu-profile.json), so a second prediction measures only new shapes.
//
//===----------------------------------------------------------------------===//

#include "Job.h"

#include "pmlir/Conversion/StepWork.h"
#include "pmlir/Execution/ObjectCache.h"
#include "pmlir/Runtime/Calibration.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Support/Bytes.h"

#include "mlir/Parser/Parser.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sys/file.h>
#include <unistd.h>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::exec;

namespace {

/// The cache file, or "" where there is no place for it.
std::string cachePath() {
  if (const char *file = getenv("PMLIR_PROFILE_CACHE"))
    return file;
  std::optional<std::string> user = userCacheDirectory();
  return user ? *user + "/cpu-profile.json" : "";
}

std::string gemmKey(const StepWork::Gemm &gemm) {
  auto shape = [](const std::vector<int64_t> &s) {
    std::string text;
    for (size_t i = 0; i < s.size(); ++i)
      text += (i ? "x" : "") + std::to_string(s[i]);
    return text;
  };
  return gemm.kernel + " " + shape(gemm.lhs) + " " + shape(gemm.rhs) + " " + shape(gemm.out);
}

/// What loop nests and copies do a second: bytes of their operands and
/// operations of their bodies, split over the threads and on one.
struct LoopRates {
  double parallelBytes = 0, parallelOperations = 0;
  double serialBytes = 0, serialOperations = 0;
  double copyBytes = 0;
};

/// The cache's section of this host, threads and ranks: what was measured
/// there. Empty where nothing was or the file is another host's.
struct CachedProfile {
  std::optional<LoopRates> loops;
  std::optional<double> peak;
  std::optional<sharding::Link> link;
  std::map<std::string, double> gemms;
};

llvm::json::Object readCache(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return {};
  llvm::Expected<llvm::json::Value> value = llvm::json::parse((*buffer)->getBuffer());
  if (!value) {
    llvm::consumeError(value.takeError());
    return {};
  }
  llvm::json::Object *root = value->getAsObject();
  if (!root || root->getString("host") != rt::calibrationHost())
    return {};
  return std::move(*root);
}

CachedProfile sectionOf(const llvm::json::Object &root, const std::string &section) {
  CachedProfile cached;
  const llvm::json::Object *sections = root.getObject("sections");
  const llvm::json::Object *s = sections ? sections->getObject(section) : nullptr;
  if (!s)
    return cached;
  if (const llvm::json::Object *loops = s->getObject("loops")) {
    auto n = [&](llvm::StringRef key) { return loops->getNumber(key).value_or(0); };
    LoopRates r{n("parallel_bytes"), n("parallel_operations"), n("serial_bytes"),
                n("serial_operations"), n("copy_bytes")};
    if (r.parallelBytes > 0 && r.parallelOperations > 0 && r.serialBytes > 0 &&
        r.serialOperations > 0 && r.copyBytes > 0)
      cached.loops = r;
  }
  if (std::optional<double> peak = s->getNumber("peak_flops"); peak && *peak > 0)
    cached.peak = peak;
  if (const llvm::json::Object *link = s->getObject("link")) {
    std::optional<double> bandwidth = link->getNumber("bytes_per_second");
    std::optional<double> latency = link->getNumber("latency_seconds");
    if (bandwidth && latency && *bandwidth > 0 && *latency >= 0)
      cached.link = sharding::Link{*bandwidth, *latency};
  }
  if (const llvm::json::Object *gemms = s->getObject("gemms"))
    for (const auto &[key, value] : *gemms)
      if (std::optional<double> seconds = value.getAsNumber(); seconds && *seconds > 0)
        cached.gemms[key.str()] = *seconds;
  return cached;
}

/// Adds what was measured to the cache's section, under a lock (the ranks
/// of a job write at once), the file replaced whole. false with `error`
/// where it cannot be written.
bool writeCache(const std::string &path, const std::string &section, const CachedProfile &mine,
                std::string &error) {
  llvm::SmallString<256> directory(path);
  llvm::sys::path::remove_filename(directory);
  if (!directory.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
      error = "cannot make " + std::string(directory) + ": " + ec.message();
      return false;
    }
  std::string lockPath = path + ".lock";
  int lock = open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    error = "cannot lock " + lockPath + ": " + strerror(errno);
    if (lock >= 0)
      close(lock);
    return false;
  }
  llvm::json::Object root = readCache(path);
  root["host"] = rt::calibrationHost();
  if (!root.getObject("sections"))
    root["sections"] = llvm::json::Object();
  llvm::json::Object &sections = *root.getObject("sections");
  if (!sections.getObject(section))
    sections[section] = llvm::json::Object();
  llvm::json::Object &s = *sections.getObject(section);
  if (mine.loops)
    s["loops"] = llvm::json::Object{{"parallel_bytes", mine.loops->parallelBytes},
                                    {"parallel_operations", mine.loops->parallelOperations},
                                    {"serial_bytes", mine.loops->serialBytes},
                                    {"serial_operations", mine.loops->serialOperations},
                                    {"copy_bytes", mine.loops->copyBytes}};
  if (mine.peak)
    s["peak_flops"] = *mine.peak;
  if (mine.link)
    s["link"] = llvm::json::Object{{"bytes_per_second", mine.link->bytesPerSecond},
                                   {"latency_seconds", mine.link->latencySeconds}};
  if (!s.getObject("gemms"))
    s["gemms"] = llvm::json::Object();
  llvm::json::Object &gemms = *s.getObject("gemms");
  for (const auto &[key, seconds] : mine.gemms)
    gemms[key] = seconds;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  bool ok = false;
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    ok = static_cast<bool>(out);
  }
  if (!ok || rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + strerror(errno);
    unlink(temporary.c_str());
  }
  flock(lock, LOCK_UN);
  close(lock);
  return ok && error.empty();
}

using Clock = std::chrono::steady_clock;

} // namespace

namespace {

/// Programs whose loops the CPU pipeline generates as it does a model's:
/// one that streams its operands (an add), one that computes on them (a
/// layer norm and a tanh GELU); each on tensors far larger than the caches.
constexpr const char *kStreamingLoops = R"mlir(
func.func @calibrate(%x: tensor<1024x4096xf32> {tfm.name = "x"},
                     %y: tensor<1024x4096xf32> {tfm.name = "y"}) -> tensor<1024x4096xf32> {
  %0 = tfm.add %x, %y : tensor<1024x4096xf32>, tensor<1024x4096xf32>
  return %0 : tensor<1024x4096xf32>
}
)mlir";
constexpr const char *kComputingLoops = R"mlir(
func.func @calibrate(%x: tensor<1024x4096xf32> {tfm.name = "x"},
                     %w: tensor<4096xf32> {tfm.name = "w"},
                     %b: tensor<4096xf32> {tfm.name = "b"}) -> tensor<1024x4096xf32> {
  %0 = tfm.layernorm %x, %w, %b eps = 1.000000e-05 : tensor<1024x4096xf32>, tensor<4096xf32>
  %1 = tfm.gelu %0 tanh : tensor<1024x4096xf32>
  return %1 : tensor<1024x4096xf32>
}
)mlir";

} // namespace

bool Job::measureInTurns(llvm::function_ref<bool()> measure) {
  int64_t ranks = mesh ? mesh->numRanks() : 1;
  bool oversubscribed =
      ranks > 1 &&
      pmlir_rt_ranks_on_host() * std::max(1, pmlir_rt_parallel_threads()) > pmlir_rt_host_cores();
  bool ok = true;
  if (!oversubscribed) {
    ok = measure();
  } else {
    for (int64_t turn = 0; turn < ranks; ++turn) {
      if (turn == rank)
        ok = measure();
      overRanks(0, PMLIR_RT_MAX); // the next rank's turn
    }
  }
  return !overRanks(ok ? 0 : 1, PMLIR_RT_MAX);
}

std::optional<Job::LoopSample> Job::timeGeneratedLoops(const char *text, std::string &error) {
  // Compiled and bound on every rank, then timed (measureInTurns).
  std::unique_ptr<JitProgram> program;
  std::optional<StepWork> work;
  std::vector<BoundArgument> arguments;
  auto prepare = [&]() {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    auto entry = module ? module->lookupSymbol<func::FuncOp>("calibrate") : nullptr;
    EntrySignature signature;
    if (!entry || !describeEntry(entry, signature, error)) {
      error = "the loop calibration program is not one pmlir-run runs: " + error;
      return false;
    }
    if (!(program = compile(*module, signature, /*emit=*/false, error)))
      return false;
    auto attr = (*module)->getAttrOfType<DictionaryAttr>(kStepWorkAttr);
    if (!(work = attr ? StepWork::fromAttribute(attr) : std::nullopt)) {
      error = "the loop calibration program carries no " + kStepWorkAttr.str();
      return false;
    }
    for (const TensorSpec &spec : signature.arguments) {
      BoundArgument a;
      a.name = spec.name;
      a.shape = spec.shape;
      size_t elements = static_cast<size_t>(elementCount(spec.shape));
      if (!a.owned.allocate(elements * sizeof(float))) {
        error = "no memory for the loop calibration";
        return false;
      }
      std::fill_n(reinterpret_cast<float *>(a.owned.data()), elements, 0.5f);
      a.data = a.owned.data();
      arguments.push_back(std::move(a));
    }
    program->bind(arguments);
    return true;
  };
  bool ready = prepare();
  if (overRanks(ready ? 0 : 1, PMLIR_RT_MAX)) {
    if (ready)
      error = "another rank could not compile the loop calibration";
    return std::nullopt;
  }
  std::vector<double> seconds;
  if (!measureInTurns([&] {
        for (int run = 0; run < 6; ++run) {
          Clock::time_point t0 = Clock::now();
          if (!program->run(error))
            return false;
          double s = std::chrono::duration<double>(Clock::now() - t0).count();
          program->releaseResults();
          if (run > 0) // the first touches the pages
            seconds.push_back(s);
        }
        return true;
      })) {
    if (error.empty())
      error = "another rank could not time the loop calibration";
    return std::nullopt;
  }
  StepWork::Compute total = work->total();
  return LoopSample{static_cast<double>(total.parallelLoopBytes + total.serialLoopBytes),
                    static_cast<double>(total.parallelLoopOperations + total.serialLoopOperations),
                    rt::quietSeconds(std::move(seconds))};
}

std::optional<planning::DeviceProfile> Job::cpuProfile(const StepWork &work, std::string &source,
                                                       std::string &error) {
  pmlir_rt_set_num_threads(o.threads);
  int64_t ranks = mesh ? mesh->numRanks() : 1;
  std::string section =
      "threads=" + std::to_string(pmlir_rt_parallel_threads()) + " ranks=" + std::to_string(ranks);
  std::string path = cachePath();
  CachedProfile cached = path.empty() ? CachedProfile() : sectionOf(readCache(path), section);
  CachedProfile measured;

  // The collectives' link: every rank measures it when any lacks it.
  bool needLink = ranks > 1 && !cached.link;
  if (ranks > 1 && overRanks(needLink ? 1 : 0, PMLIR_RT_MAX)) {
    std::vector<int64_t> axes = allAxes();
    auto allReduce = [&](int64_t elements) {
      std::vector<float> in(elements, 1.0f), out(elements);
      std::vector<double> seconds;
      for (int i = 0; i < 7; ++i) {
        Clock::time_point t0 = Clock::now();
        pmlir_rt_all_reduce(in.data(), out.data(), elements, PMLIR_RT_F32, PMLIR_RT_SUM,
                            axes.data(), static_cast<int64_t>(axes.size()));
        seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      seconds.erase(seconds.begin()); // the first sets up the group
      return rt::quietSeconds(std::move(seconds));
    };
    int64_t steps = sharding::CostModel::steps(sharding::CollectiveKind::AllReduce, ranks);
    double factor = sharding::CostModel::wireFactor(sharding::CollectiveKind::AllReduce, ranks);
    int64_t large = int64_t(1) << 22; // 16 MiB of f32
    double small = allReduce(1), big = allReduce(large);
    double latency = small / static_cast<double>(steps);
    double transfer = std::max(big - small, 1e-9);
    measured.link = sharding::Link{factor * static_cast<double>(large) * 4 / transfer, latency};
    cached.link = measured.link;
  }
  // The loops and the peak: every rank measures when any lacks them.
  if (overRanks(cached.loops ? 0 : 1, PMLIR_RT_MAX) && ![&] {
        // Time = bytes / bandwidth + operations / rate, solved on the two
        // programs; where they do not separate the two (a host whose streaming
        // is as slow as its arithmetic), the stream gives the bandwidth and
        // the rest goes to the operations.
        std::optional<LoopSample> stream = timeGeneratedLoops(kStreamingLoops, error);
        std::optional<LoopSample> mix =
            stream ? timeGeneratedLoops(kComputingLoops, error) : std::nullopt;
        if (!mix)
          return false;
        double det = stream->bytes * mix->operations - stream->operations * mix->bytes;
        double perByte =
            det != 0 ? (stream->seconds * mix->operations - stream->operations * mix->seconds) / det
                     : 0;
        double perOperation =
            det != 0 ? (stream->bytes * mix->seconds - stream->seconds * mix->bytes) / det : 0;
        if (!(perByte > 0 && perOperation > 0)) {
          perByte = stream->seconds / stream->bytes;
          perOperation =
              std::max(mix->seconds - mix->bytes * perByte, 1e-3 * mix->seconds) / mix->operations;
        }
        double threads = std::max(1, pmlir_rt_parallel_threads());
        LoopRates rates;
        rates.parallelBytes = 1 / perByte;
        rates.parallelOperations = 1 / perOperation;
        rates.serialBytes = rates.parallelBytes / threads;
        rates.serialOperations = rates.parallelOperations / threads;
        rates.copyBytes = rt::copyBytesPerSecond();
        cached.loops = measured.loops = rates;
        return true;
      }())
    return std::nullopt;
  if (overRanks(cached.peak ? 0 : 1, PMLIR_RT_MAX))
    measureInTurns([&] {
      cached.peak = measured.peak = rt::gemmPeakFlopsPerSecond();
      return true;
    });
  planning::DeviceProfile profile;
  profile.name = "cpu";
  // The GEMMs not cached, timed together; a kernel the runtime lacks, or
  // one whose operands would not fit the timing's memory, is priced at the
  // peak rate.
  std::vector<rt::GemmCall> missing;
  for (const StepWork::Gemm &gemm : work.gemms)
    if (!cached.gemms.count(gemmKey(gemm)))
      missing.push_back({gemm.kernel, gemm.lhs, gemm.rhs, gemm.out});
  std::vector<std::optional<double>> timed;
  measureInTurns([&] {
    timed = rt::timeGemmKernels(missing);
    return true;
  });
  for (auto [call, seconds] : llvm::zip(missing, timed))
    if (seconds) {
      std::string key = gemmKey({call.kernel, call.lhs, call.rhs, call.out});
      cached.gemms[key] = measured.gemms[key] = *seconds;
    }
  for (const StepWork::Gemm &gemm : work.gemms)
    if (auto it = cached.gemms.find(gemmKey(gemm)); it != cached.gemms.end())
      profile.gemmSeconds[gemm] = it->second;
  // The peak: the square GEMM's rate, or a faster one the program calls.
  profile.gemmFlopsPerSecond = profile.peakFlopsPerSecond = *cached.peak;
  for (const auto &[gemm, seconds] : profile.gemmSeconds)
    profile.peakFlopsPerSecond = std::max(profile.peakFlopsPerSecond, gemm.flops() / seconds);
  profile.parallelBytesPerSecond = cached.loops->parallelBytes;
  profile.parallelOperationsPerSecond = cached.loops->parallelOperations;
  profile.serialBytesPerSecond = cached.loops->serialBytes;
  profile.serialOperationsPerSecond = cached.loops->serialOperations;
  profile.copyBytesPerSecond = cached.loops->copyBytes;
  if (cached.link)
    profile.link = *cached.link;

  bool anything = measured.loops || measured.peak || measured.link || !measured.gemms.empty();
  source = "measured on this host, " + section;
  if (path.empty()) {
    source += " (not cached: no HOME or XDG_CACHE_HOME)";
  } else if (anything) {
    std::string why;
    if (!writeCache(path, section, measured, why)) {
      if (rank == 0)
        warn("--predict: the measured profile is not cached: " + why);
      source += " (not cached)";
    } else {
      source += ", cached in " + path;
    }
  } else {
    source += ", from " + path;
  }
  return profile;
}

std::optional<Job::StepPrediction>
Job::predictStepTime(ModuleOp module, const std::string &profileName, std::string &error) {
  auto attr = module->getAttrOfType<DictionaryAttr>(kStepWorkAttr);
  std::optional<StepWork> work = attr ? StepWork::fromAttribute(attr) : std::nullopt;
  std::string mine;
  if (auto why = attr ? attr.getAs<StringAttr>("error") : nullptr)
    mine = "the work of the compiled program cannot be counted before the run: " + why.str();
  else if (!work)
    mine = "the lowered program carries no " + kStepWorkAttr.str();
  // Every rank goes on only where every rank can.
  auto agree = [&]() {
    if (!overRanks(mine.empty() ? 0 : 1, PMLIR_RT_MAX))
      return true;
    error = mine.empty() ? "another rank could not predict its step" : mine;
    return false;
  };
  if (!agree())
    return std::nullopt;
  StepPrediction prediction;
  if (profileName == "cpu") {
    std::optional<planning::DeviceProfile> profile = cpuProfile(*work, prediction.source, mine);
    if (profile)
      prediction.profile = std::move(*profile);
  } else {
    if (std::optional<planning::DeviceProfile> profile =
            planning::DeviceProfile::load(profileName, mine))
      prediction.profile = std::move(*profile);
    prediction.source = llvm::is_contained(planning::DeviceProfile::builtInNames(), profileName)
                            ? "built in: " + profileName
                            : "the rates of " + profileName;
  }
  if (!agree())
    return std::nullopt;
  std::vector<int64_t> encoded = planning::Timeline::of(*work, prediction.profile).encode();
  int64_t longest = 0;
  for (int64_t length : fromEveryRank({static_cast<int64_t>(encoded.size())}))
    longest = std::max(longest, length);
  std::vector<int64_t> slot(static_cast<size_t>(longest) + 1, 0);
  slot[0] = static_cast<int64_t>(encoded.size());
  std::copy(encoded.begin(), encoded.end(), slot.begin() + 1);
  std::vector<int64_t> all = fromEveryRank(slot);
  if (rank != 0)
    return prediction;
  std::vector<planning::Timeline> timelines;
  for (size_t r = 0; r * slot.size() < all.size(); ++r) {
    const int64_t *at = all.data() + r * slot.size();
    std::optional<planning::Timeline> t = planning::Timeline::decode(at + 1, at[0]);
    if (!t) {
      error = "rank " + std::to_string(r) + "'s timeline does not decode";
      return std::nullopt;
    }
    timelines.push_back(std::move(*t));
  }
  // The cpu profile's rates are a rank's alone on its threads; the ranks of
  // this host share its cores. A file's rates are a device of each rank's.
  planning::HostSharing host{pmlir_rt_host_cores(), pmlir_rt_ranks_on_host(),
                             std::max(1, pmlir_rt_parallel_threads())};
  prediction.simulation =
      planning::simulateStep(timelines, mesh ? &*mesh : nullptr, prediction.profile,
                             profileName == "cpu" ? &host : nullptr);
  return prediction;
}

std::string Job::StepPrediction::deadlockText() const {
  return "the ranks' programs wait for each other forever: " + simulation.deadlock +
         (profile.target == CompileTarget::Gpu
              ? " (on a GPU a send waits for its receive: NCCL's send and receive meet on "
                "both ranks' streams)"
              : "");
}

LogicalResult Job::checkMessagesMeet(ModuleOp module) {
  if (o.device != CompileTarget::Gpu || !mesh)
    return success();
  // The order of the messages decides, not the rates: any GPU profile.
  std::string error;
  std::optional<StepPrediction> step = predictStepTime(module, "h100", error);
  if (!step) {
    // Where the work cannot be counted, the order cannot be checked.
    if (rank == 0 && o.verbose)
      warn("the order of the ranks' messages is not checked: " + error);
    return success();
  }
  int64_t stuck = rank == 0 && !step->simulation.deadlock.empty() ? 1 : 0;
  if (overRanks(stuck, PMLIR_RT_MAX) == 0)
    return success();
  // The ranks meet after rank 0 has said why: one leaving first with exit
  // status 1 would have mpirun kill rank 0 before it writes.
  failAlike("--device gpu: the ranks' sends and receives can wait for each other forever: " +
            step->simulation.deadlock +
            ". NCCL's send waits for its receive (it ends sooner only while the message fits "
            "NCCL's buffers, which NCCL does not promise), so the job is refused before it runs "
            "(a CSV schedule's SEND and RECV actions run where it puts them: without them, "
            "pmlir places each send where its receive is met; the CPU runs either)");
  return failure();
}

double Job::tokensPerSecond(double stepSeconds) const {
  return stepSeconds > 0 ? static_cast<double>(tokensPerStep) / stepSeconds : 0;
}

double Job::utilization(double stepSeconds, const planning::DeviceProfile &profile) const {
  double ranks = mesh ? static_cast<double>(mesh->numRanks()) : 1;
  double peak = stepSeconds * ranks * profile.peakFor(o.precision);
  return peak > 0 ? modelFlopsPerStep / peak : 0;
}

void Job::printStepPrediction(const StepPrediction &step) const {
  const planning::StepSimulation &sim = step.simulation;
  // In s, ms or us, as the time's size needs.
  auto time = formatSeconds;
  const char *what = o.train ? "step" : !o.grads.empty() ? "gradient" : "forward";
  llvm::outs() << "predicted " << what << " time (nothing ran): " << time(sim.seconds);
  if (tokensPerStep > 0)
    llvm::outs() << llvm::formatv(", {0:f1} tokens/s", tokensPerSecond(sim.seconds));
  if (modelFlopsPerStep > 0)
    llvm::outs() << llvm::formatv(", model FLOPs utilization {0:f1}% of {1:f1} GFLOP/s a rank",
                                  100 * utilization(sim.seconds, step.profile),
                                  step.profile.peakFor(o.precision) / 1e9);
  llvm::outs() << "\n";
  // Every rank up to 8, else the one that ends last.
  size_t ranks = sim.ranks.size();
  for (size_t r = 0; r < ranks; ++r) {
    const planning::RankStep &s = sim.ranks[r];
    if (ranks > 8 && s.seconds < sim.seconds)
      continue;
    llvm::outs() << "  " << (ranks > 1 ? "rank " + std::to_string(r) + ": " : "") << time(s.seconds)
                 << " = GEMMs " << time(s.compute.gemm) << " + loops " << time(s.compute.loops)
                 << " + copies " << time(s.compute.copies) << " + communication "
                 << time(s.communication) << " + waiting " << time(s.waiting) << "\n";
    if (ranks > 8)
      break;
  }
  llvm::outs() << "  profile " << step.profile.name << ": " << step.source << "\n";
  llvm::outs().flush();
}
