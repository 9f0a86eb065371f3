//===- StepTime.h - A step's time from every rank's work --------*- C++ -*-===//
//
// Part of pmlir.
//
// A rank's program is compute segments between communications
// (pmlir/Conversion/StepWork.h). A device profile prices the compute: each
// GEMM kernel call at its measured time for its shape (or the profile's GEMM
// rate where it has none), each loop nest at its bytes over the memory
// bandwidth plus its operations over the operation rate (on the threads
// where the program splits it, else on one), each copy over the copy
// bandwidth, and on a GPU each kernel's launch. The step then runs every
// rank's timeline against the others', as the runtime runs them: a
// collective starts once every rank of its group has reached it and costs
// what the CostModel says on the group's link; on a CPU a send copies its
// buffer and goes on, the transfer arriving a latency and its bytes over
// the link later, and a receive waits for it; on a GPU (NCCL) a send and
// its receive meet. A rank's step is its compute, its communication, and
// its waiting (a pipeline's bubble, a slower rank of a group).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PLANNING_STEPTIME_H
#define PMLIR_PLANNING_STEPTIME_H

#include "pmlir/Conversion/StepWork.h"
#include "pmlir/Sharding/CostModel.h"
#include "pmlir/Sharding/Topology.h"
#include "pmlir/Support/CompileTarget.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/Precision.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::planning {

/// The bytes a GPU's tensor-core GEMM kernels need each row of an operand
/// to start on.
inline constexpr int64_t kGemmRowAlignment = 16;

/// What a rank computes and communicates with.
struct DeviceProfile {
  std::string name;
  /// Where the program runs: a CPU rank's process, or a GPU (whose memory
  /// is device memory, and whose sends wait for their receivers: NCCL's
  /// send and receive meet on both ranks' streams).
  CompileTarget target = CompileTarget::Cpu;
  /// Seconds of one call of each GEMM kernel and shape measured.
  std::map<StepWork::Gemm, double> gemmSeconds;
  /// A GEMM not measured: its FLOPs at its family's rate, else at this one.
  double gemmFlopsPerSecond = 1e11;
  /// Rates of GEMM kernels by family and operand types (a kernel's name
  /// less its ranks and transposes, "pmlir_gpu_matmul_bf16"): a GPU's
  /// tensor cores per precision.
  std::map<std::string, double> gemmFlopsPerSecondByFamily;
  /// On a GPU, the rate of a GEMM whose operands' rows do not start on
  /// kGemmRowAlignment bytes, where it is below its family's (0: none).
  double unalignedGemmFlopsPerSecond = 0;
  /// Loop nests split over the threads, and on one thread.
  double parallelBytesPerSecond = 1e10, parallelOperationsPerSecond = 4e9;
  double serialBytesPerSecond = 1e10, serialOperationsPerSecond = 2e9;
  /// memref.copy: the bytes it reads.
  double copyBytesPerSecond = 1e10;
  /// What each kernel (a GEMM call, a loop nest) costs beyond its work: a
  /// GPU's launch and the gap between kernels on its stream (0 on a CPU).
  double launchSeconds = 0;
  /// The link every collective and transfer runs over, where there is no
  /// topology.
  sharding::Link link = sharding::CostModel::kDefaultLink;
  /// Nodes of devices, filled by ranks in rank order: a communication
  /// among the ranks of one node runs on the topology's link inside a node,
  /// any other on its link between nodes; its device's memory is what a
  /// rank may hold.
  std::optional<sharding::Topology> topology;
  /// The FLOP rate model FLOPs utilization is against, and per precision
  /// where the device's differ (a GPU's tensor cores).
  double peakFlopsPerSecond = 1e11;
  std::map<Precision, double> peakFlopsPerSecondByPrecision;
  /// A GPU's device memory that no tensor of the program takes: the CUDA
  /// context with its libraries', and each NCCL communicator's buffers.
  int64_t contextBytes = 0, communicatorBytes = 0;

  /// The peak of `precision`'s arithmetic.
  double peakFor(Precision precision) const;
  /// The link of a communication of rank `rank` over the mesh axes
  /// `axisCodes` (pmlir::SubAxis::code) of `mesh` (null: no mesh), and the
  /// group's ranks.
  sharding::Link linkOf(const Mesh *mesh, const std::vector<int64_t> &axisCodes,
                        int64_t rank) const;

  /// A profile of fixed rates from its JSON text: {"name", "gemm_gflops",
  /// "loop_gbps", "loop_gops", "serial_loop_gbps", "serial_loop_gops",
  /// "copy_gbps", "link_gbps", "link_latency_us", "peak_gflops"} (the
  /// serial ones default to the parallel ones, peak to the GEMM rate); a
  /// GPU's also {"target": "gpu", "topology": a preset or a file (the
  /// links then default to its link inside a node), "gemm_gflops_by_kernel":
  /// {family: rate}, "gemm_unaligned_gflops", "launch_us", "peak_gflops":
  /// {"f32", "tf32", "bf16"},
  /// "context_mib", "communicator_mib"}; nullopt with `error` naming what is
  /// missing or not positive.
  static std::optional<DeviceProfile> fromJson(const std::string &text, std::string &error);
  /// The profile of a file as --profile names it; `error` says "--profile
  /// PATH: ..." where it cannot be read or is not a profile.
  static std::optional<DeviceProfile> fromFile(const std::string &path, std::string &error);
  /// The built-in GPU profiles: "h100" and "h200", from what was measured
  /// on an H100 (../shared/gpu-notes.md) and the parts' specifications.
  static std::vector<std::string> builtInNames();
  static std::optional<DeviceProfile> builtIn(const std::string &name);
  /// `spec` as a built-in name or a file.
  static std::optional<DeviceProfile> load(const std::string &spec, std::string &error);
};

/// The seconds of one segment's compute, by kind.
struct ComputeSeconds {
  double gemm = 0, loops = 0, copies = 0;
  double total() const { return gemm + loops + copies; }
  ComputeSeconds &operator+=(const ComputeSeconds &other) {
    gemm += other.gemm;
    loops += other.loops;
    copies += other.copies;
    return *this;
  }
};

ComputeSeconds priceCompute(const StepWork &work, const StepWork::Compute &compute,
                            const DeviceProfile &profile);

/// A rank's work priced: its compute segments' seconds between its
/// communications.
struct Timeline {
  struct Event {
    ComputeSeconds compute;
    std::optional<StepWork::Communication> communication;
  };
  std::vector<Event> events;

  static Timeline of(const StepWork &work, const DeviceProfile &profile);
  /// As integers (the doubles' bits) to send between ranks, and back.
  std::vector<int64_t> encode() const;
  static std::optional<Timeline> decode(const int64_t *data, size_t size);
};

/// What a rank does over a span of its step.
enum class Activity { Compute, Communication, Waiting };

/// "compute", "communication", "waiting".
const char *activityName(Activity activity);

struct Span {
  double start = 0, end = 0;
  Activity activity = Activity::Compute;
};

/// One rank's step.
struct RankStep {
  double seconds = 0;
  ComputeSeconds compute;
  /// Collectives and transfers at the link's pace.
  double communication = 0;
  /// Waiting for other ranks: at a collective for the last of its group,
  /// at a receive for its sender.
  double waiting = 0;
  /// The most bytes of this rank's sends held at once: the runtime copies
  /// what a rank sends and holds the copy until the receiver takes it.
  int64_t heldSendBytes = 0;
  /// The step as it runs, in order: adjacent spans of one activity merged.
  std::vector<Span> spans;
};

struct StepSimulation {
  /// The step: when its last rank ends.
  double seconds = 0;
  std::vector<RankStep> ranks;
  /// Where the ranks stopped when they wait for each other forever.
  std::string deadlock;
};

/// Ranks that share a host's cores: a profile measured on the host gives a
/// rank's rates alone on its threads (its quietest samples), but where the
/// host's ranks want more threads than it has cores, those computing at
/// once share them.
struct HostSharing {
  int64_t cores = 1;
  /// The job's ranks on each host, in rank order (mpirun's by-slot
  /// placement), and the threads each computes on.
  int64_t ranksPerHost = 1;
  int64_t threadsPerRank = 1;
};

/// Runs every rank's timeline (rank r at index r of the job on `mesh`;
/// null: one rank without one) against the others', each communication on
/// the profile's link of its group. On a GPU a send and its receive meet:
/// both wait for the later, and no copy is held. With `sharing`, each host's compute is
/// slowed by how many threads want its cores: the step is simulated again
/// with every compute segment of a host's ranks stretched by the host's
/// demand (the ranks' busy time, computing or communicating, times their
/// threads, over the cores and the step) until the stretch settles.
StepSimulation simulateStep(const std::vector<Timeline> &ranks, const Mesh *mesh,
                            const DeviceProfile &profile, const HostSharing *sharing = nullptr);

} // namespace pmlir::planning

#endif // PMLIR_PLANNING_STEPTIME_H
