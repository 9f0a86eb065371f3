//===- collective_bandwidth.cpp - Collective bandwidth, runtime vs raw MPI ===//
//
// Part of pmlir.
//
//   mpirun -np N pmlir-collective-bandwidth [--min-bytes 8] [--max-bytes 64M]
//       [--iterations 20] [--collectives all_reduce,all_gather,...]
//       [--backend mpi|nccl]
//
// In the style of nccl-tests: for each collective and each size (doubling
// from min to max bytes, f32 elements) it times the pmlir_rt_* call and the
// raw MPI call it wraps, alternating run by run (median of each), on the
// group of all ranks (a 1-D mesh "dp=N"), and prints size, time, algbw
// (size / time) and busbw (algbw times the traffic factor: 2(n-1)/n for
// all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for
// broadcast), and the runtime's overhead over raw MPI. Size is the largest
// buffer of the call (the gathered output, the scattered input), as
// nccl-tests counts it. With --backend nccl (builds with NCCL, one GPU per
// rank) the runtime starts its NCCL backend, the buffers are on the GPU, and
// each pmlir_rt_* call followed by pmlir_rt_wait is timed against the raw
// NCCL call on a communicator of all ranks, on the same stream, followed by
// a stream synchronization.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"

#include <mpi.h>
#ifdef PMLIR_HAS_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// The raw call: MPI's, or NCCL's followed by a wait for the stream (the
// runtime's calls are followed by pmlir_rt_wait, so both time complete
// collectives).
#ifdef PMLIR_HAS_NCCL
#define RAW(MPI_CALL, NCCL_CALL)                                               \
  do {                                                                         \
    if (nccl) {                                                                \
      NCCL_CALL;                                                               \
      cudaStreamSynchronize(stream);                                           \
    } else {                                                                   \
      MPI_CALL;                                                                \
    }                                                                          \
  } while (0)
#else
#define RAW(MPI_CALL, NCCL_CALL) MPI_CALL
#endif

namespace {

constexpr const char *kUsage =
    "usage: mpirun -np N pmlir-collective-bandwidth [--min-bytes 8] [--max-bytes 64M]\n"
    "    [--iterations 20] [--collectives all_reduce,all_gather,reduce_scatter,all_to_all,"
    "broadcast]\n    [--backend mpi|nccl]\n"
    "Sizes are bytes with an optional K, M or G (powers of 1024), doubling from the least to "
    "the most.\n";
constexpr const char *kCollectives[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                        "broadcast"};
constexpr int64_t kMaxBytes = int64_t(1) << 32;
constexpr int kMaxIterations = 1000000;

/// What the command line asks for.
struct Options {
  int64_t minBytes = 8, maxBytes = int64_t(64) << 20;
  int iterations = 20;
  std::vector<std::string> collectives{std::begin(kCollectives), std::end(kCollectives)};
  bool nccl = false;
  bool help = false;
};

/// A byte count: digits with an optional K, M or G; nullopt for anything
/// else, zero or more than kMaxBytes.
std::optional<int64_t> parseBytes(const std::string &text) {
  char *end = nullptr;
  errno = 0;
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || errno || n <= 0)
    return std::nullopt;
  int shift = 0;
  if (*end == 'K')
    shift = 10, ++end;
  else if (*end == 'M')
    shift = 20, ++end;
  else if (*end == 'G')
    shift = 30, ++end;
  if (*end || n > (kMaxBytes >> shift))
    return std::nullopt;
  return int64_t(n) << shift;
}

/// Reads argv into `options`; returns false with `error` set on a flag it
/// does not know, a flag without its value or a value out of range.
bool parse(int argc, char **argv, Options &options, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "--help" || name == "-h") {
      options.help = true;
      continue;
    }
    bool known = name == "--min-bytes" || name == "--max-bytes" || name == "--iterations" ||
                 name == "--collectives" || name == "--backend";
    if (!known) {
      error = "unknown argument '" + name + "'";
      return false;
    }
    if (i + 1 == argc) {
      error = name + " needs a value";
      return false;
    }
    std::string value = argv[++i];
    if (name == "--min-bytes" || name == "--max-bytes") {
      std::optional<int64_t> bytes = parseBytes(value);
      if (!bytes) {
        error = name + " expects bytes from 1 to 4G (digits with an optional K, M or G), got '" +
                value + "'";
        return false;
      }
      (name == "--min-bytes" ? options.minBytes : options.maxBytes) = *bytes;
    } else if (name == "--iterations") {
      char *end = nullptr;
      errno = 0;
      long n = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end || errno || n < 1 || n > kMaxIterations) {
        error = "--iterations expects a number from 1 to " + std::to_string(kMaxIterations) +
                ", got '" + value + "'";
        return false;
      }
      options.iterations = static_cast<int>(n);
    } else if (name == "--collectives") {
      options.collectives.clear();
      std::string rest = value + ",";
      for (size_t at = 0, comma; (comma = rest.find(',', at)) != std::string::npos;
           at = comma + 1) {
        std::string one = rest.substr(at, comma - at);
        if (std::find(std::begin(kCollectives), std::end(kCollectives), one) ==
            std::end(kCollectives)) {
          error = "--collectives: unknown collective '" + one +
                  "' (known: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast)";
          return false;
        }
        options.collectives.push_back(one);
      }
    } else if (value == "mpi" || value == "nccl") {
      options.nccl = value == "nccl";
    } else {
      error = "--backend '" + value + "': expected mpi or nccl";
      return false;
    }
  }
  if (options.minBytes > options.maxBytes) {
    error = "--min-bytes " + std::to_string(options.minBytes) + " is more than --max-bytes " +
            std::to_string(options.maxBytes);
    return false;
  }
  return true;
}

/// Times one call on all ranks: they start together and the slowest counts.
template <typename F>
double timeOnce(F &call) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  call();
  double local = MPI_Wtime() - start, slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Medians of `iterations` runs of `ours` and `raw`, alternating so that
/// load from elsewhere on the machine hits both alike; two warm-ups each.
template <typename A, typename B>
std::pair<double, double> timePair(int iterations, A ours, B raw) {
  for (int i = 0; i < 2; ++i)
    ours(), raw();
  std::vector<double> a, b;
  for (int i = 0; i < iterations; ++i) {
    a.push_back(timeOnce(ours));
    b.push_back(timeOnce(raw));
  }
  return {median(a), median(b)};
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int ranks = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // One axis, dp, over every rank.
  const char *axisNames[] = {"dp"};
  int64_t axisSizes[] = {ranks};
  pmlir_rt_mesh mesh = {1, axisNames, axisSizes, nullptr};
  Options options;
  std::string problem;
  if (!parse(argc, argv, options, problem) || options.help) {
    if (rank == 0) {
      if (!options.help || !problem.empty())
        std::fprintf(stderr, "pmlir-collective-bandwidth: %s\n", problem.c_str());
      std::fputs(kUsage, problem.empty() ? stdout : stderr);
    }
    MPI_Finalize();
    return problem.empty() ? 0 : 2;
  }
  bool nccl = options.nccl;
  char error[256];
  if (pmlir_rt_init(&mesh, 0, nccl ? PMLIR_RT_BACKEND_NCCL : PMLIR_RT_BACKEND_MPI, error,
                    sizeof(error))) {
    std::fprintf(stderr, "pmlir-collective-bandwidth: %s\n", error);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int64_t minBytes = options.minBytes, maxBytes = options.maxBytes;
  int iterations = options.iterations;
  const int64_t axis = 0;
  const double n = ranks;

  std::vector<std::pair<std::string, double>> summary; // overhead >= 1 MiB
  if (rank == 0)
    std::printf("| collective | ranks | size (B) | runtime us | MPI us | algbw GB/s | "
                "busbw GB/s | runtime overhead |\n|---|---|---|---|---|---|---|---|\n");
#ifdef PMLIR_HAS_NCCL
  ncclComm_t rawComm = nullptr;
  cudaStream_t stream = nullptr;
  if (nccl) {
    stream = static_cast<cudaStream_t>(pmlir_rt_stream());
    ncclUniqueId id;
    if (rank == 0)
      ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclCommInitRank(&rawComm, ranks, id, rank);
  }
#endif
  for (const char *name : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                           "broadcast"}) {
    if (std::find(options.collectives.begin(), options.collectives.end(), name) ==
        options.collectives.end())
      continue;
    double oursLarge = 0, rawLarge = 0; // sums over sizes >= 1 MiB
    for (int64_t bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
      int64_t count = std::max<int64_t>(1, bytes / 4);
      // Per-rank blocks for the collectives that split the buffer.
      int64_t block = std::max<int64_t>(1, count / ranks);
      bool split = std::strcmp(name, "all_reduce") && std::strcmp(name, "broadcast");
      int64_t total = split ? block * ranks : count;
      std::vector<float> hostIn(total, 1.0f), hostOut(total, 0.0f);
      float *in = hostIn.data(), *out = hostOut.data();
#ifdef PMLIR_HAS_NCCL
      if (nccl) {
        cudaMalloc(&in, total * sizeof(float));
        cudaMalloc(&out, total * sizeof(float));
        cudaMemcpy(in, hostIn.data(), total * sizeof(float), cudaMemcpyHostToDevice);
      }
#endif
      int c = static_cast<int>(count), b = static_cast<int>(block);
      double ours = 0, raw = 0, factor = 1;
      // The runtime's call and the raw library call it wraps.
      std::function<void()> runtimeCall, rawCall;
      if (!std::strcmp(name, "all_reduce")) {
        factor = 2 * (n - 1) / n;
        runtimeCall = [&] {
          pmlir_rt_all_reduce(in, out, count, PMLIR_RT_F32, PMLIR_RT_SUM, &axis, 1);
          pmlir_rt_wait();
        };
        rawCall = [&] {
          RAW(MPI_Allreduce(in, out, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              ncclAllReduce(in, out, count, ncclFloat32, ncclSum, rawComm, stream));
        };
      } else if (!std::strcmp(name, "all_gather")) {
        factor = (n - 1) / n;
        runtimeCall = [&] {
          pmlir_rt_all_gather(in, out, block, PMLIR_RT_F32, &axis, 1);
          pmlir_rt_wait();
        };
        rawCall = [&] {
          RAW(MPI_Allgather(in, b, MPI_FLOAT, out, b, MPI_FLOAT, MPI_COMM_WORLD),
              ncclAllGather(in, out, block, ncclFloat32, rawComm, stream));
        };
      } else if (!std::strcmp(name, "reduce_scatter")) {
        factor = (n - 1) / n;
        runtimeCall = [&] {
          pmlir_rt_reduce_scatter(in, out, block, PMLIR_RT_F32, PMLIR_RT_SUM, &axis, 1);
          pmlir_rt_wait();
        };
        rawCall = [&] {
          RAW(MPI_Reduce_scatter_block(in, out, b, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              ncclReduceScatter(in, out, block, ncclFloat32, ncclSum, rawComm, stream));
        };
      } else if (!std::strcmp(name, "all_to_all")) {
        factor = (n - 1) / n;
        runtimeCall = [&] {
          pmlir_rt_all_to_all(in, out, block, PMLIR_RT_F32, &axis, 1);
          pmlir_rt_wait();
        };
        rawCall = [&] {
          RAW(MPI_Alltoall(in, b, MPI_FLOAT, out, b, MPI_FLOAT, MPI_COMM_WORLD), ({
                ncclGroupStart();
                for (int j = 0; j < ranks; ++j) {
                  ncclSend(in + j * block, block, ncclFloat32, j, rawComm, stream);
                  ncclRecv(out + j * block, block, ncclFloat32, j, rawComm, stream);
                }
                ncclGroupEnd();
              }));
        };
      } else {
        runtimeCall = [&] {
          pmlir_rt_broadcast(in, count, PMLIR_RT_F32, 0, &axis, 1);
          pmlir_rt_wait();
        };
        rawCall = [&] {
          RAW(MPI_Bcast(in, c, MPI_FLOAT, 0, MPI_COMM_WORLD),
              ncclBroadcast(in, in, count, ncclFloat32, 0, rawComm, stream));
        };
      }
      std::tie(ours, raw) = timePair(iterations, runtimeCall, rawCall);
#ifdef PMLIR_HAS_NCCL
      if (nccl)
        cudaFree(in), cudaFree(out);
#endif
      double size = 4.0 * total;
      if (size >= (1 << 20))
        oursLarge += ours, rawLarge += raw;
      if (rank == 0)
        std::printf("| %s | %d | %.0f | %.1f | %.1f | %.3f | %.3f | %+.1f%% |\n", name, ranks,
                    size, ours * 1e6, raw * 1e6, size / ours / 1e9,
                    size / ours / 1e9 * factor, (ours / raw - 1) * 100);
    }
    if (rawLarge > 0)
      summary.emplace_back(name, (oursLarge / rawLarge - 1) * 100);
  }
  if (rank == 0) {
    std::printf("\nruntime overhead over raw %s, summed over sizes >= 1 MiB:\n",
                nccl ? "NCCL" : "MPI");
    for (const auto &[name, percent] : summary)
      std::printf("  %s: %+.1f%%\n", name.c_str(), percent);
  }
#ifdef PMLIR_HAS_NCCL
  if (nccl)
    ncclCommDestroy(rawComm);
#endif
  pmlir_rt_finalize();
  MPI_Finalize();
  return 0;
}
