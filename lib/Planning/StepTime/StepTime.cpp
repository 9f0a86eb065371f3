//===- StepTime.cpp - A step's time from every rank's work ----------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Planning/StepTime.h"

#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Support/JsonFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

using namespace pmlir;
using namespace pmlir::planning;
using sharding::CollectiveKind;
using sharding::CostModel;

namespace {

/// The built-in GPU profiles as the JSON a file gives, from measurements:
/// on an H100 (../shared/gpu-notes.md) GEMMs of 8192^3 at 51 TFLOP/s in
/// f32, 394 in TF32, 763 in bf16, and a device-to-device copy at 2.92 TB/s
/// read and written; on an H200 (docs/performance.md, 2026-11-26) the copy
/// at 3.89 TB/s, pmlir's generated f32 kernels at 2.20 TB/s (bias + GELU;
/// 58% of the copy, 61% for a layer norm): 550 G elements a second, their
/// loads and stores being one element a thread, and 4.9 to 6.6 us of host
/// time a launch. A kernel's bytes go at the copy's pace, its elements at
/// that rate. In a bf16 training step's trace there, the two GEMMs over
/// GPT-2's vocabulary (rows of 50257, not 16-byte aligned) ran at 115
/// TFLOP/s: the rate of a tensor-core GEMM whose rows are not aligned. The H100's kernels are taken
/// at the same 58% of its copy; the H200's GEMMs at the H100's (the same compute). Not measured:
/// the CUDA context (512 MiB) and an NCCL communicator's buffers (256 MiB). The peaks are the dense
/// specifications; the links and memory are the h100 and h200 topologies'.
constexpr const char *kH100 = R"({
  "name": "h100", "target": "gpu", "topology": "h100",
  "gemm_gflops": 51000, "gemm_unaligned_gflops": 115000,
  "gemm_gflops_by_kernel": {"pmlir_gpu_matmul_tf32": 394000, "pmlir_gpu_matmul_bf16": 763000,
                            "pmlir_gpu_matmul_bf16f32": 763000},
  "loop_gbps": 2920, "loop_gops": 423, "copy_gbps": 1460, "launch_us": 5,
  "peak_gflops": {"f32": 66900, "tf32": 494700, "bf16": 989400},
  "context_mib": 512, "communicator_mib": 256
})";
constexpr const char *kH200 = R"({
  "name": "h200", "target": "gpu", "topology": "h200",
  "gemm_gflops": 51000, "gemm_unaligned_gflops": 115000,
  "gemm_gflops_by_kernel": {"pmlir_gpu_matmul_tf32": 394000, "pmlir_gpu_matmul_bf16": 763000,
                            "pmlir_gpu_matmul_bf16f32": 763000},
  "loop_gbps": 3888, "loop_gops": 550, "copy_gbps": 1944, "launch_us": 5,
  "peak_gflops": {"f32": 66900, "tf32": 494700, "bf16": 989400},
  "context_mib": 512, "communicator_mib": 256
})";

} // namespace

std::vector<std::string> DeviceProfile::builtInNames() { return {"h100", "h200"}; }

std::optional<DeviceProfile> DeviceProfile::builtIn(const std::string &name) {
  const char *text = name == "h100" ? kH100 : name == "h200" ? kH200 : nullptr;
  if (!text)
    return std::nullopt;
  std::string error;
  std::optional<DeviceProfile> profile = fromJson(text, error);
  assert(profile && "a built-in profile that does not parse");
  return profile;
}

std::optional<DeviceProfile> DeviceProfile::load(const std::string &spec, std::string &error) {
  if (std::optional<DeviceProfile> profile = builtIn(spec))
    return profile;
  return fromFile(spec, error);
}

double DeviceProfile::peakFor(Precision precision) const {
  auto it = peakFlopsPerSecondByPrecision.find(precision);
  return it != peakFlopsPerSecondByPrecision.end() ? it->second : peakFlopsPerSecond;
}

sharding::Link DeviceProfile::linkOf(const Mesh *mesh, const std::vector<int64_t> &axisCodes,
                                     int64_t rank) const {
  if (!topology || !mesh)
    return link;
  std::vector<SubAxis> axes;
  for (int64_t code : axisCodes)
    if (std::optional<SubAxis> part = mesh->axisOfCode(code))
      axes.push_back(*part);
  return topology->linkOfGroup(*mesh, axes, mesh->group(rank, axes));
}

std::optional<DeviceProfile> DeviceProfile::fromFile(const std::string &path, std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "--profile " + path + ": " + buffer.getError().message() +
            " (a profile is cpu, h100, h200 or a JSON file)";
    return std::nullopt;
  }
  std::optional<DeviceProfile> profile = fromJson((*buffer)->getBuffer().str(), error);
  if (!profile)
    error = "--profile " + path + ": " + error;
  return profile;
}

std::optional<DeviceProfile> DeviceProfile::fromJson(const std::string &text, std::string &error) {
  std::string duplicate;
  nlohmann::json root =
      nlohmann::json::parse(text, duplicateKeyFinder(duplicate), /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    error = "the device profile is not a JSON object";
    return std::nullopt;
  }
  if (!duplicate.empty()) {
    error = "the device profile has the key '" + duplicate + "' twice in one object";
    return std::nullopt;
  }
  // Every number lies in bounds far past any device (0.001 to 1e9: GFLOP/s
  // from 1 MFLOP/s to 1 EFLOP/s, GB/s and microseconds alike; MiB up to
  // about 1 EiB): past them, the seconds and bytes priced from them leave
  // int64 or turn to inf.
  auto positive = [&](const nlohmann::json &value, const std::string &key,
                      double most = 1e9) -> std::optional<double> {
    constexpr double kLeast = 1e-3;
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
      error = "the device profile's '" + key + "' must be a positive number";
      return std::nullopt;
    }
    if (std::optional<std::string> outside = outsideRange(value, kLeast, most)) {
      error = "the device profile's '" + key + "' " + *outside;
      return std::nullopt;
    }
    return value.get<double>();
  };
  // A misspelt key ("gemm_gflop") would leave its number out unseen.
  static constexpr const char *kKeys[] = {"name",
                                          "target",
                                          "topology",
                                          "gemm_gflops",
                                          "loop_gbps",
                                          "loop_gops",
                                          "serial_loop_gbps",
                                          "serial_loop_gops",
                                          "copy_gbps",
                                          "link_gbps",
                                          "link_latency_us",
                                          "launch_us",
                                          "gemm_gflops_by_kernel",
                                          "gemm_unaligned_gflops",
                                          "peak_gflops",
                                          "context_mib",
                                          "communicator_mib"};
  if (std::optional<std::string> unknown = unknownKey(root, kKeys)) {
    error = "the device profile " + *unknown;
    return std::nullopt;
  }
  auto number = [&](const char *key, std::optional<double> fallback) -> std::optional<double> {
    auto it = root.find(key);
    if (it == root.end()) {
      if (!fallback)
        error = std::string("the device profile needs '") + key + "'";
      return fallback;
    }
    return positive(*it, key);
  };
  DeviceProfile p;
  auto name = root.find("name");
  if (name != root.end() && !name->is_string()) {
    error = "the device profile's 'name' must be a string, not " + name->dump();
    return std::nullopt;
  }
  p.name = name != root.end() ? name->get<std::string>() : "custom";
  if (auto target = root.find("target"); target != root.end()) {
    if (*target == "cpu") {
      p.target = CompileTarget::Cpu;
    } else if (*target == "gpu") {
      p.target = CompileTarget::Gpu;
    } else {
      error = "the device profile's 'target' is cpu or gpu, not " + target->dump();
      return std::nullopt;
    }
  }
  if (auto topology = root.find("topology"); topology != root.end()) {
    if (!topology->is_string()) {
      error = "the device profile's 'topology' names a topology preset or a JSON file";
      return std::nullopt;
    }
    p.topology = sharding::Topology::load(topology->get<std::string>(), error);
    if (!p.topology) {
      error = "the device profile's topology: " + error;
      return std::nullopt;
    }
  }
  // With a topology, the link is its link inside a node unless given.
  std::optional<double> topologyGbps, topologyLatency;
  if (p.topology) {
    topologyGbps = p.topology->intraNode.bytesPerSecond / 1e9;
    topologyLatency = p.topology->intraNode.latencySeconds * 1e6;
  }
  std::optional<double> gemm = number("gemm_gflops", std::nullopt);
  std::optional<double> bytes = gemm ? number("loop_gbps", std::nullopt) : std::nullopt;
  std::optional<double> ops = bytes ? number("loop_gops", std::nullopt) : std::nullopt;
  std::optional<double> serialBytes = ops ? number("serial_loop_gbps", bytes) : std::nullopt;
  std::optional<double> serialOps = serialBytes ? number("serial_loop_gops", ops) : std::nullopt;
  std::optional<double> copy = serialOps ? number("copy_gbps", bytes) : std::nullopt;
  std::optional<double> linkBandwidth = copy ? number("link_gbps", topologyGbps) : std::nullopt;
  std::optional<double> latency =
      linkBandwidth ? number("link_latency_us", topologyLatency) : std::nullopt;
  std::optional<double> launch = latency ? number("launch_us", 0.0) : std::nullopt;
  if (!launch)
    return std::nullopt;
  p.gemmFlopsPerSecond = *gemm * 1e9;
  p.parallelBytesPerSecond = *bytes * 1e9;
  p.parallelOperationsPerSecond = *ops * 1e9;
  p.serialBytesPerSecond = *serialBytes * 1e9;
  p.serialOperationsPerSecond = *serialOps * 1e9;
  p.copyBytesPerSecond = *copy * 1e9;
  p.link = {*linkBandwidth * 1e9, *latency * 1e-6};
  p.launchSeconds = *launch * 1e-6;
  p.peakFlopsPerSecond = p.gemmFlopsPerSecond;
  if (auto byKernel = root.find("gemm_gflops_by_kernel"); byKernel != root.end()) {
    if (!byKernel->is_object()) {
      error = "the device profile's 'gemm_gflops_by_kernel' maps GEMM kernel families to rates";
      return std::nullopt;
    }
    for (auto &[family, rate] : byKernel->items()) {
      std::vector<std::string> known = rt::abi::gemmKernelTypeNames();
      if (!llvm::is_contained(known, family)) {
        error = "the device profile's 'gemm_gflops_by_kernel' names '" + family +
                "', which is no GEMM kernel family (" + llvm::join(known, ", ") + ")";
        return std::nullopt;
      }
      std::optional<double> r = positive(rate, "gemm_gflops_by_kernel." + family);
      if (!r)
        return std::nullopt;
      p.gemmFlopsPerSecondByFamily[family] = *r * 1e9;
    }
  }
  if (auto unaligned = root.find("gemm_unaligned_gflops"); unaligned != root.end()) {
    std::optional<double> r = positive(*unaligned, "gemm_unaligned_gflops");
    if (!r)
      return std::nullopt;
    p.unalignedGemmFlopsPerSecond = *r * 1e9;
  }
  if (auto peak = root.find("peak_gflops"); peak != root.end()) {
    if (peak->is_object()) {
      for (auto &[precision, rate] : peak->items()) {
        std::optional<Precision> which = parsePrecision(precision);
        if (!which) {
          error = "the device profile's 'peak_gflops' is a number or an object of f32, tf32 and "
                  "bf16, not '" +
                  precision + "'";
          return std::nullopt;
        }
        std::optional<double> r = positive(rate, "peak_gflops." + precision);
        if (!r)
          return std::nullopt;
        p.peakFlopsPerSecondByPrecision[*which] = *r * 1e9;
      }
      if (auto f32 = p.peakFlopsPerSecondByPrecision.find(Precision::F32);
          f32 != p.peakFlopsPerSecondByPrecision.end())
        p.peakFlopsPerSecond = f32->second;
    } else {
      std::optional<double> r = positive(*peak, "peak_gflops");
      if (!r)
        return std::nullopt;
      p.peakFlopsPerSecond = *r * 1e9;
    }
    // The peak is what utilization is a share of: the GEMMs' own rate is
    // at most it.
    if (p.peakFlopsPerSecond < p.gemmFlopsPerSecond) {
      std::ostringstream text;
      text << "the device profile's f32 'peak_gflops' " << p.peakFlopsPerSecond / 1e9
           << " is below its 'gemm_gflops' " << p.gemmFlopsPerSecond / 1e9
           << ": a GEMM runs at most at the peak";
      error = text.str();
      return std::nullopt;
    }
  }
  for (auto [key, field] : {std::pair{"context_mib", &p.contextBytes},
                            std::pair{"communicator_mib", &p.communicatorBytes}}) {
    auto it = root.find(key);
    if (it == root.end())
      continue;
    std::optional<double> mib = positive(*it, key, /*most=*/1e12); // about 1 EiB
    if (!mib)
      return std::nullopt;
    *field = static_cast<int64_t>(*mib * (1 << 20));
  }
  return p;
}

ComputeSeconds planning::priceCompute(const StepWork &work, const StepWork::Compute &compute,
                                      const DeviceProfile &profile) {
  ComputeSeconds s;
  for (auto [gemm, calls] : compute.gemmCalls) {
    const StepWork::Gemm &g = work.gemms[gemm];
    auto measured = profile.gemmSeconds.find(g);
    double one;
    if (measured != profile.gemmSeconds.end()) {
      one = measured->second;
    } else {
      auto family =
          profile.gemmFlopsPerSecondByFamily.find(std::string(rt::abi::gemmKernelTypes(g.kernel)));
      double rate = family != profile.gemmFlopsPerSecondByFamily.end() ? family->second
                                                                       : profile.gemmFlopsPerSecond;
      std::optional<std::pair<int64_t, int64_t>> bytes = rt::abi::gemmElementBytes(g.kernel);
      if (profile.target == CompileTarget::Gpu && bytes) {
        // Tensor-core kernels read rows that start on 16 bytes; a GEMM
        // whose rows do not (a vocabulary of 50257) takes slower ones.
        auto aligned = [](const std::vector<int64_t> &shape, int64_t element) {
          return shape.empty() || shape.back() * element % kGemmRowAlignment == 0;
        };
        if (profile.unalignedGemmFlopsPerSecond > 0 &&
            !(aligned(g.lhs, bytes->first) && aligned(g.rhs, bytes->first) &&
              aligned(g.out, bytes->second)))
          rate = std::min(rate, profile.unalignedGemmFlopsPerSecond);
      }
      one = g.flops() / rate;
      // A GPU's GEMM reads its operands from and writes its result to the
      // device's memory: at least their bytes at the copy's pace (read and
      // written), which a GEMM of a small contraction (attention's, over a
      // head's 64) takes longer than its FLOPs.
      if (profile.target == CompileTarget::Gpu && bytes) {
        auto elements = [](const std::vector<int64_t> &shape) {
          double n = 1;
          for (int64_t d : shape)
            n *= static_cast<double>(d);
          return n;
        };
        double moved = (elements(g.lhs) + elements(g.rhs)) * static_cast<double>(bytes->first) +
                       elements(g.out) * static_cast<double>(bytes->second);
        one = std::max(one, moved / (2 * profile.copyBytesPerSecond));
      }
    }
    s.gemm += (one + profile.launchSeconds) * static_cast<double>(calls);
  }
  // A loop nest streams its operands and runs its body; the generated CPU
  // loops overlap the two little (the rates are fitted so on them). A GPU
  // kernel takes the longer of its bytes at the memory's pace and its
  // elements at the kernels' element rate (their loads and stores are one
  // element a thread: a bf16 kernel is no faster than an f32 one).
  double parallelBytes =
      static_cast<double>(compute.parallelLoopBytes) / profile.parallelBytesPerSecond;
  double parallelOperations =
      static_cast<double>(compute.parallelLoopOperations) / profile.parallelOperationsPerSecond;
  s.loops = (profile.target == CompileTarget::Gpu ? std::max(parallelBytes, parallelOperations)
                                                  : parallelBytes + parallelOperations) +
            static_cast<double>(compute.serialLoopBytes) / profile.serialBytesPerSecond +
            static_cast<double>(compute.serialLoopOperations) / profile.serialOperationsPerSecond +
            static_cast<double>(compute.loops) * profile.launchSeconds;
  s.copies = static_cast<double>(compute.copyBytes) / profile.copyBytesPerSecond;
  return s;
}

Timeline Timeline::of(const StepWork &work, const DeviceProfile &profile) {
  Timeline t;
  for (const StepWork::Event &event : work.events)
    t.events.push_back(
        {event.communication ? ComputeSeconds{} : priceCompute(work, event.compute, profile),
         event.communication});
  return t;
}

namespace {

int64_t bitsOf(double d) {
  int64_t i;
  std::memcpy(&i, &d, sizeof(i));
  return i;
}

double doubleOf(int64_t i) {
  double d;
  std::memcpy(&d, &i, sizeof(d));
  return d;
}

} // namespace

// A compute segment: [0, gemm, loops, copies] (the seconds' bits); a
// communication: [1, kind, bytes, peer, tag, grouped with the next, axes
// count, axes...].
std::vector<int64_t> Timeline::encode() const {
  std::vector<int64_t> out;
  for (const Event &e : events) {
    if (const std::optional<StepWork::Communication> &c = e.communication) {
      out.insert(out.end(), {1, static_cast<int64_t>(c->kind), c->bytes, c->peer, c->tag,
                             c->groupedWithNext ? 1 : 0, static_cast<int64_t>(c->axes.size())});
      out.insert(out.end(), c->axes.begin(), c->axes.end());
    } else {
      out.insert(out.end(),
                 {0, bitsOf(e.compute.gemm), bitsOf(e.compute.loops), bitsOf(e.compute.copies)});
    }
  }
  return out;
}

std::optional<Timeline> Timeline::decode(const int64_t *data, size_t size) {
  Timeline t;
  size_t i = 0;
  while (i < size) {
    if (data[i] == 0) {
      if (i + 4 > size)
        return std::nullopt;
      t.events.push_back(
          {{doubleOf(data[i + 1]), doubleOf(data[i + 2]), doubleOf(data[i + 3])}, std::nullopt});
      i += 4;
      continue;
    }
    if (data[i] != 1 || i + 7 > size || data[i + 6] < 0 ||
        i + 7 + static_cast<size_t>(data[i + 6]) > size || data[i + 1] < 0 ||
        data[i + 1] > static_cast<int64_t>(CollectiveKind::Recv))
      return std::nullopt;
    StepWork::Communication c;
    c.kind = static_cast<CollectiveKind>(data[i + 1]);
    c.bytes = data[i + 2];
    c.peer = data[i + 3];
    c.tag = data[i + 4];
    c.groupedWithNext = data[i + 5] != 0;
    c.axes.assign(data + i + 7, data + i + 7 + data[i + 6]);
    t.events.push_back({{}, c});
    i += 7 + static_cast<size_t>(data[i + 6]);
  }
  return t;
}

namespace {
StepSimulation simulateOnce(const std::vector<Timeline> &ranks, const Mesh *mesh,
                            const DeviceProfile &profile);

/// `timeline` with each message group's sends ahead of its receives, as the
/// runtime issues them (MPI's sends never wait; on NCCL the order inside a
/// group does not matter).
Timeline sendsFirst(Timeline timeline) {
  std::vector<Timeline::Event> &events = timeline.events;
  auto message = [&](size_t i) {
    const std::optional<StepWork::Communication> &c = events[i].communication;
    return c && (c->kind == CollectiveKind::Send || c->kind == CollectiveKind::Recv);
  };
  for (size_t begin = 0; begin < events.size();) {
    size_t end = begin;
    while (end < events.size() && message(end) && events[end].communication->groupedWithNext)
      ++end;
    if (end < events.size() && message(end))
      ++end; // the group's last
    if (end - begin > 1) {
      std::stable_partition(
          events.begin() + begin, events.begin() + end,
          [](const Timeline::Event &e) { return e.communication->kind == CollectiveKind::Send; });
      for (size_t i = begin; i < end; ++i)
        events[i].communication->groupedWithNext = i + 1 < end;
    }
    begin = std::max(end, begin + 1);
  }
  return timeline;
}
} // namespace

StepSimulation planning::simulateStep(const std::vector<Timeline> &programs, const Mesh *mesh,
                                      const DeviceProfile &profile, const HostSharing *sharing) {
  // Once, for every round below.
  std::vector<Timeline> ranks;
  for (const Timeline &program : programs)
    ranks.push_back(sendsFirst(program));
  StepSimulation sim = simulateOnce(ranks, mesh, profile);
  if (!sharing || sharing->cores < 1 || sharing->ranksPerHost < 1 || !sim.deadlock.empty())
    return sim;
  const int64_t n = static_cast<int64_t>(ranks.size());
  const int64_t perHost = sharing->ranksPerHost;
  const double threads = static_cast<double>(std::max<int64_t>(1, sharing->threadsPerRank));
  std::vector<double> stretch((n + perHost - 1) / perHost, 1.0);
  // A fixed point: more stretch, longer busy ranks and a longer step. A
  // few rounds settle it to well under a percent.
  for (int round = 0; round < 16; ++round) {
    std::vector<double> demand(stretch.size(), 0);
    for (int64_t r = 0; r < n; ++r) {
      const RankStep &step = sim.ranks[r];
      demand[r / perHost] += (step.compute.total() + step.communication) * threads;
    }
    bool settled = true;
    for (size_t h = 0; h < stretch.size(); ++h) {
      double wanted =
          sim.seconds > 0
              ? std::max(1.0, demand[h] / (static_cast<double>(sharing->cores) * sim.seconds))
              : 1.0;
      if (std::abs(wanted - stretch[h]) > 1e-3 * stretch[h])
        settled = false;
      stretch[h] = wanted;
    }
    if (settled)
      break;
    std::vector<Timeline> stretched = ranks;
    for (int64_t r = 0; r < n; ++r)
      for (Timeline::Event &e : stretched[r].events) {
        double k = stretch[r / perHost];
        e.compute.gemm *= k;
        e.compute.loops *= k;
        e.compute.copies *= k;
      }
    sim = simulateOnce(stretched, mesh, profile);
  }
  return sim;
}

const char *planning::activityName(Activity activity) {
  switch (activity) {
  case Activity::Compute:
    return "compute";
  case Activity::Communication:
    return "communication";
  case Activity::Waiting:
    return "waiting";
  }
  llvm_unreachable("an activity without a name");
}

namespace {
StepSimulation simulateOnce(const std::vector<Timeline> &ranks, const Mesh *mesh,
                            const DeviceProfile &profile) {
  size_t n = ranks.size();
  StepSimulation sim;
  sim.ranks.resize(n);
  auto span = [&](size_t rank, double start, double end, Activity activity) {
    if (end <= start)
      return;
    std::vector<Span> &spans = sim.ranks[rank].spans;
    if (!spans.empty() && spans.back().activity == activity && spans.back().end == start)
      spans.back().end = end;
    else
      spans.push_back({start, end, activity});
  };
  std::vector<size_t> next(n, 0);
  std::vector<double> clock(n, 0);

  // The group of `rank` over a communication's axes (rank order).
  auto groupOf = [&](int64_t rank, const StepWork::Communication &c) {
    std::vector<SubAxis> axes;
    for (int64_t code : c.axes)
      if (mesh)
        if (std::optional<SubAxis> part = mesh->axisOfCode(code))
          axes.push_back(*part);
    if (!mesh)
      return std::vector<int64_t>{rank};
    return mesh->group(rank, axes);
  };
  auto seconds = [&](CollectiveKind kind, int64_t bytes, int64_t groupSize,
                     const sharding::Link &link) {
    if (groupSize <= 1 && kind != CollectiveKind::Send)
      return 0.0;
    return static_cast<double>(CostModel::steps(kind, groupSize)) * link.latencySeconds +
           CostModel::wireFactor(kind, groupSize) * static_cast<double>(bytes) /
               link.bytesPerSecond;
  };
  // NCCL's send and receive meet on both streams (matched in call order
  // between two ranks); a message group's are posted together.
  const bool sendsMeet = profile.target == CompileTarget::Gpu;

  // Collectives met so far: per group (its members) and the count of
  // collectives each member ran on it, the members there and when each
  // came.
  std::map<std::vector<int64_t>, std::vector<int64_t>> collectivesRun;
  std::map<std::pair<std::vector<int64_t>, int64_t>, std::map<int64_t, double>> arrived;
  // Transfers sent: (from, to, tag) -> each in the order sent (a tag may
  // be sent again before it is received): when it arrives, and the copy
  // its sender holds until then, from when.
  struct Transfer {
    double arrives, sent;
    int64_t bytes;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Transfer>> inFlight;
  // Per sender, each copy's bytes from when it is made to when it is taken.
  std::vector<std::vector<std::tuple<double, double, int64_t>>> held(n);
  // GPU messages: the n-th message from one rank to another, when its
  // sender ([0]) and its receiver ([1]) posted it; per side, the messages
  // posted so far between each (sender, receiver); per rank, its message
  // group posted and not yet met: the meetings, each transfer's time, and
  // the event after the group.
  using MeetingKey = std::tuple<int64_t, int64_t, int64_t>;
  struct Meeting {
    std::optional<double> at[2];
  };
  std::map<MeetingKey, Meeting> meetings;
  std::map<std::pair<int64_t, int64_t>, int64_t> messagesPosted[2];
  struct Posted {
    std::vector<MeetingKey> meetings;
    std::vector<double> seconds;
    size_t end = 0;
  };
  std::vector<std::optional<Posted>> posted(n);

  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      RankStep &step = sim.ranks[r];
      const std::vector<Timeline::Event> &events = ranks[r].events;
      while (next[r] < events.size()) {
        const Timeline::Event &e = events[next[r]];
        if (!e.communication) {
          span(r, clock[r], clock[r] + e.compute.total(), Activity::Compute);
          clock[r] += e.compute.total();
          step.compute += e.compute;
          ++next[r];
          progress = true;
          continue;
        }
        const StepWork::Communication &c = *e.communication;
        std::vector<int64_t> group = groupOf(static_cast<int64_t>(r), c);
        int64_t size = static_cast<int64_t>(group.size());
        const sharding::Link link = profile.linkOf(mesh, c.axes, static_cast<int64_t>(r));
        if (sendsMeet && (c.kind == CollectiveKind::Send || c.kind == CollectiveKind::Recv)) {
          // The rank's message group (a lone message: a group of one) is
          // posted once; it goes on when each message has met its other
          // side, the latest meeting's transfer done.
          if (!posted[r]) {
            Posted group;
            size_t i = next[r];
            for (; i < events.size(); ++i) {
              const std::optional<StepWork::Communication> &m = events[i].communication;
              if (!m || (m->kind != CollectiveKind::Send && m->kind != CollectiveKind::Recv))
                break;
              std::vector<int64_t> members = groupOf(static_cast<int64_t>(r), *m);
              auto self = static_cast<int64_t>(r);
              int64_t peer = m->peer >= 0 && m->peer < static_cast<int64_t>(members.size())
                                 ? members[m->peer]
                                 : self;
              if (peer != self) {
                bool sends = m->kind == CollectiveKind::Send;
                std::pair<int64_t, int64_t> pair =
                    sends ? std::make_pair(self, peer) : std::make_pair(peer, self);
                MeetingKey key{pair.first, pair.second, messagesPosted[sends ? 0 : 1][pair]++};
                meetings[key].at[sends ? 0 : 1] = clock[r];
                group.meetings.push_back(key);
                group.seconds.push_back(seconds(CollectiveKind::Send, m->bytes, 2,
                                                profile.linkOf(mesh, m->axes, self)));
              }
              if (!m->groupedWithNext) {
                ++i;
                break;
              }
            }
            group.end = std::max(i, next[r] + 1);
            posted[r] = std::move(group);
          }
          double start = clock[r], done = clock[r];
          bool met = true;
          for (auto [key, own] : llvm::zip(posted[r]->meetings, posted[r]->seconds)) {
            const Meeting &m = meetings[key];
            if (!m.at[0] || !m.at[1]) {
              met = false;
              break;
            }
            double both = std::max(*m.at[0], *m.at[1]);
            start = std::max(start, both);
            done = std::max(done, both + own);
          }
          if (!met)
            break; // a counterpart has not been posted yet
          span(r, clock[r], start, Activity::Waiting);
          span(r, start, done, Activity::Communication);
          step.waiting += start - clock[r];
          step.communication += done - start;
          clock[r] = done;
          next[r] = posted[r]->end;
          posted[r].reset();
          progress = true;
          continue;
        }
        if (c.kind == CollectiveKind::Send) {
          int64_t to = c.peer >= 0 && c.peer < size ? group[c.peer] : static_cast<int64_t>(r);
          double own = seconds(CollectiveKind::Send, c.bytes, 2, link);
          inFlight[{static_cast<int64_t>(r), to, c.tag}].push_back(
              {clock[r] + own, clock[r], c.bytes});
          // The runtime copies the buffer and goes on.
          span(r, clock[r], clock[r] + static_cast<double>(c.bytes) / link.bytesPerSecond,
               Activity::Communication);
          clock[r] += static_cast<double>(c.bytes) / link.bytesPerSecond;
          step.communication += static_cast<double>(c.bytes) / link.bytesPerSecond;
          ++next[r];
          progress = true;
          continue;
        }
        if (c.kind == CollectiveKind::Recv && !sendsMeet) {
          int64_t from = c.peer >= 0 && c.peer < size ? group[c.peer] : static_cast<int64_t>(r);
          auto it = inFlight.find({from, static_cast<int64_t>(r), c.tag});
          if (it == inFlight.end() || it->second.empty())
            break; // not sent yet
          Transfer sent = it->second.front();
          double ready = std::max(clock[r], sent.arrives);
          it->second.pop_front();
          held[from].emplace_back(sent.sent, ready, sent.bytes);
          span(r, clock[r], ready, Activity::Waiting);
          step.waiting += ready - clock[r];
          clock[r] = ready;
          ++next[r];
          progress = true;
          continue;
        }
        // A collective: the n-th this rank runs on its group waits for the
        // n-th of every member.
        std::vector<int64_t> &counts = collectivesRun[group];
        counts.resize(n, 0);
        auto key = std::make_pair(group, counts[r]);
        std::map<int64_t, double> &here = arrived[key];
        here.emplace(static_cast<int64_t>(r), clock[r]);
        if (static_cast<int64_t>(here.size()) < size)
          break; // the others have not come yet
        double start = 0;
        for (auto [member, at] : here)
          start = std::max(start, at);
        double own = seconds(c.kind, c.bytes, size, link);
        for (auto [member, at] : here) {
          RankStep &m = sim.ranks[member];
          span(static_cast<size_t>(member), at, start, Activity::Waiting);
          span(static_cast<size_t>(member), start, start + own, Activity::Communication);
          m.waiting += start - at;
          m.communication += own;
          clock[member] = start + own;
          ++next[member];
          ++counts[member];
        }
        arrived.erase(key);
        progress = true;
        // This rank goes on; the others go on at their turn.
      }
    }
  }
  // Copies never taken are held to the end.
  for (const auto &[key, transfers] : inFlight)
    for (const Transfer &t : transfers)
      held[std::get<0>(key)].emplace_back(t.sent, std::numeric_limits<double>::infinity(), t.bytes);
  for (size_t r = 0; r < n; ++r) {
    // The most held at once; a copy taken at the instant another is made
    // is gone first.
    std::vector<std::pair<double, int64_t>> changes;
    for (auto [from, to, bytes] : held[r]) {
      changes.push_back({from, bytes});
      changes.push_back({to, -bytes});
    }
    std::sort(changes.begin(), changes.end(), [](const auto &a, const auto &b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int64_t now = 0;
    for (auto [at, delta] : changes)
      sim.ranks[r].heldSendBytes = std::max(sim.ranks[r].heldSendBytes, now += delta);
  }
  for (size_t r = 0; r < n; ++r) {
    sim.ranks[r].seconds = clock[r];
    sim.seconds = std::max(sim.seconds, clock[r]);
    if (next[r] < ranks[r].events.size() && sim.deadlock.empty())
      sim.deadlock =
          "rank " + std::to_string(r) + " waits at its communication " + std::to_string(next[r]) +
          " (" +
          sharding::stringifyCollectiveKind(ranks[r].events[next[r]].communication->kind).str() +
          ") for ranks that never come";
  }
  return sim;
}
} // namespace
