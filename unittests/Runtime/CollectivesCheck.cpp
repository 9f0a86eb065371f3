//===- CollectivesCheck.cpp - Every runtime collective against expected values ===//
//
// Part of pmlir.
//
//   mpirun -np N pmlir-rt-collectives-check --mesh SPEC [--rank-order ORDER]
//       [--timeout S] [--fail-rank R --fail-how error|kill|hang]
//       [--backend mpi|nccl]
//
// Runs each pmlir_rt_* collective over every single axis, every pair of axes
// (in both orders) and all axes of the mesh, with rank-dependent integer-valued
// data, and compares every element with what the group must produce, computed
// from the mesh alone. Rank 0 prints the number of checks; a mismatch ends
// the job through pmlir_rt_fail. --fail-* injects a fault on one rank.
// --backend nccl (in builds with NCCL) runs the same checks on GPU buffers
// through pmlir_rt_nccl_*: data goes to the device before each call and
// back after it.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#ifdef PMLIR_HAS_NCCL
#include "pmlir/Runtime/NcclRuntime.h"

#include <cuda_runtime.h>
#endif

#include "pmlir/Support/Mesh.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using pmlir::Mesh;

namespace {

int64_t checks = 0;

void expectEqual(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      std::string message = what + ": element " + std::to_string(i) + " is " +
                            std::to_string(got[i]) + ", expected " +
                            std::to_string(want[i]);
      pmlir_rt_fail(message.c_str());
    }
  ++checks;
}

/// The collectives under test: the host ones of Runtime.h or their NCCL
/// twins, which take device buffers.
struct Backend {
  decltype(&pmlir_rt_all_reduce) allReduce = pmlir_rt_all_reduce;
  decltype(&pmlir_rt_all_gather) allGather = pmlir_rt_all_gather;
  decltype(&pmlir_rt_gather) gather = pmlir_rt_gather;
  decltype(&pmlir_rt_reduce_scatter) reduceScatter = pmlir_rt_reduce_scatter;
  decltype(&pmlir_rt_all_to_all) allToAll = pmlir_rt_all_to_all;
  decltype(&pmlir_rt_broadcast) broadcast = pmlir_rt_broadcast;
  void (*send)(const void *, int64_t, pmlir_rt_dtype, int64_t, const int64_t *,
               int64_t) = [](const void *buf, int64_t count, pmlir_rt_dtype dtype,
                             int64_t peer, const int64_t *axes, int64_t numAxes) {
    pmlir_rt_send(buf, count, dtype, peer, axes, numAxes, /*tag=*/7);
  };
  void (*recv)(void *, int64_t, pmlir_rt_dtype, int64_t, const int64_t *, int64_t) =
      [](void *buf, int64_t count, pmlir_rt_dtype dtype, int64_t peer, const int64_t *axes,
         int64_t numAxes) { pmlir_rt_recv(buf, count, dtype, peer, axes, numAxes, 7); };
  bool onDevice = false;

  /// Runs call(in, out) on `in` and `out`, or on device copies of them (one
  /// buffer when they are the same vector), copying `out` back after.
  template <typename Call>
  void run(std::vector<float> &in, std::vector<float> &out, Call call) const {
    if (!onDevice)
      return call(in.data(), out.data());
#ifdef PMLIR_HAS_NCCL
    size_t inBytes = in.size() * sizeof(float), outBytes = out.size() * sizeof(float);
    void *din = nullptr, *dout = nullptr;
    cudaMalloc(&din, inBytes);
    cudaMemcpy(din, in.data(), inBytes, cudaMemcpyHostToDevice);
    dout = din;
    if (&in != &out) {
      cudaMalloc(&dout, outBytes);
      cudaMemcpy(dout, out.data(), outBytes, cudaMemcpyHostToDevice);
    }
    call(din, dout);
    cudaMemcpy(out.data(), dout, outBytes, cudaMemcpyDeviceToHost);
    cudaFree(din);
    if (dout != din)
      cudaFree(dout);
#endif
  }
};

Backend backend;

// Integer-valued so that every reduction order gives the same float.
float value(int64_t rank, int64_t i) { return float(rank * 100 + i % 97); }

void checkGroup(const Mesh &mesh, int64_t rank, const std::vector<int> &axesInt) {
  std::vector<int64_t> axes(axesInt.begin(), axesInt.end());
  std::string name;
  for (int a : axesInt)
    name += (name.empty() ? "" : ",") + mesh.axisNames()[a];
  std::vector<int64_t> group = mesh.group(rank, axesInt);
  int64_t n = group.size(), me = mesh.indexInGroup(rank, axesInt);
  const int64_t *ax = axes.data();
  int64_t na = axes.size();

  if (pmlir_rt_group_size(ax, na) != n || pmlir_rt_index_in_group(ax, na) != me)
    pmlir_rt_fail(("group over " + name + ": size or index differs from the mesh").c_str());
  ++checks;

  const int64_t count = 37;
  std::vector<float> send(count), recv(count), want(count);
  for (int64_t i = 0; i < count; ++i)
    send[i] = value(rank, i);

  // all_reduce: sum, max, min, product.
  struct Case { pmlir_rt_reduction op; const char *label; };
  for (Case c : {Case{PMLIR_RT_SUM, "sum"}, Case{PMLIR_RT_MAX, "max"},
                 Case{PMLIR_RT_MIN, "min"}, Case{PMLIR_RT_PRODUCT, "product"}}) {
    std::vector<float> in = send;
    if (c.op == PMLIR_RT_PRODUCT)
      for (int64_t i = 0; i < count; ++i)
        in[i] = float(1 + (rank + i) % 2);
    for (int64_t i = 0; i < count; ++i) {
      float acc = c.op == PMLIR_RT_PRODUCT ? 1 : c.op == PMLIR_RT_SUM ? 0 : value(group[0], i);
      for (int64_t m : group) {
        float v = c.op == PMLIR_RT_PRODUCT ? float(1 + (m + i) % 2) : value(m, i);
        acc = c.op == PMLIR_RT_SUM ? acc + v : c.op == PMLIR_RT_MAX ? std::max(acc, v)
              : c.op == PMLIR_RT_MIN ? std::min(acc, v) : acc * v;
      }
      want[i] = acc;
    }
    backend.run(in, recv, [&](void *s, void *r) {
      backend.allReduce(s, r, count, PMLIR_RT_F32, c.op, ax, na);
    });
    expectEqual(recv, want, std::string("all_reduce ") + c.label + " over " + name);
  }

  // all_gather: the members' blocks in group order.
  std::vector<float> gathered(count * n), wantGathered(count * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < count; ++i)
      wantGathered[j * count + i] = value(group[j], i);
  backend.run(send, gathered, [&](void *s, void *r) {
    backend.allGather(s, r, count, PMLIR_RT_F32, ax, na);
  });
  expectEqual(gathered, wantGathered, "all_gather over " + name);

  // gather to the last member: the same blocks there, nothing elsewhere.
  std::vector<float> atRoot(count * n, -1.0f);
  backend.run(send, atRoot, [&](void *s, void *r) {
    backend.gather(s, r, count, PMLIR_RT_F32, n - 1, ax, na);
  });
  expectEqual(atRoot, me == n - 1 ? wantGathered : std::vector<float>(count * n, -1.0f),
              "gather over " + name);

  // reduce_scatter: block `me` of the sum.
  std::vector<float> full(count * n);
  for (int64_t i = 0; i < count * n; ++i)
    full[i] = value(rank, i);
  for (int64_t i = 0; i < count; ++i) {
    want[i] = 0;
    for (int64_t m : group)
      want[i] += value(m, me * count + i);
  }
  backend.run(full, recv, [&](void *s, void *r) {
    backend.reduceScatter(s, r, count, PMLIR_RT_F32, PMLIR_RT_SUM, ax, na);
  });
  expectEqual(recv, want, "reduce_scatter over " + name);

  // all_to_all: block j of member m holds (m, j); we receive (group[j], me).
  std::vector<float> blocks(count * n), swapped(count * n), wantSwapped(count * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < count; ++i) {
      blocks[j * count + i] = float(rank * 1000 + j * 10 + i % 7);
      wantSwapped[j * count + i] = float(group[j] * 1000 + me * 10 + i % 7);
    }
  backend.run(blocks, swapped, [&](void *s, void *r) {
    backend.allToAll(s, r, count, PMLIR_RT_F32, ax, na);
  });
  expectEqual(swapped, wantSwapped, "all_to_all over " + name);

  // broadcast from the last member.
  std::vector<float> buf = send;
  for (int64_t i = 0; i < count; ++i)
    want[i] = value(group[n - 1], i);
  backend.run(buf, buf, [&](void *, void *b) {
    backend.broadcast(b, count, PMLIR_RT_F32, n - 1, ax, na);
  });
  expectEqual(buf, want, "broadcast over " + name);

  // send/recv around the group's ring (small messages: eager, no deadlock).
  if (n > 1) {
    int64_t next = (me + 1) % n, prev = (me + n - 1) % n;
    for (int64_t i = 0; i < count; ++i)
      want[i] = value(group[prev], i);
    auto sendNext = [&] {
      backend.run(send, send, [&](void *, void *b) {
        backend.send(b, count, PMLIR_RT_F32, next, ax, na);
      });
    };
    auto recvPrev = [&] {
      backend.run(recv, recv, [&](void *, void *b) {
        backend.recv(b, count, PMLIR_RT_F32, prev, ax, na);
      });
    };
    if (me % 2 == 0)
      sendNext(), recvPrev();
    else
      recvPrev(), sendNext();
    expectEqual(recv, want, "send/recv over " + name);
  }
}

std::string flag(int argc, char **argv, const char *name, const char *fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return argv[i + 1];
  return fallback;
}

} // namespace

int main(int argc, char **argv) {
  std::string meshSpec = flag(argc, argv, "--mesh", "");
  std::string order = flag(argc, argv, "--rank-order", "");
  double timeout = std::atof(flag(argc, argv, "--timeout", "60").c_str());
  char error[512];
  if (pmlir_rt_init(meshSpec.c_str(), order.c_str(), timeout, error, sizeof(error))) {
    std::fprintf(stderr, "pmlir-rt-collectives-check: %s\n", error);
    return 1;
  }
  std::string backendName = flag(argc, argv, "--backend", "mpi");
  if (backendName == "nccl") {
#ifdef PMLIR_HAS_NCCL
    if (pmlir_rt_nccl_init(error, sizeof(error)))
      pmlir_rt_fail(error);
    backend.allReduce = pmlir_rt_nccl_all_reduce;
    backend.allGather = pmlir_rt_nccl_all_gather;
    backend.gather = pmlir_rt_nccl_gather;
    backend.reduceScatter = pmlir_rt_nccl_reduce_scatter;
    backend.allToAll = pmlir_rt_nccl_all_to_all;
    backend.broadcast = pmlir_rt_nccl_broadcast;
    backend.send = pmlir_rt_nccl_send;
    backend.recv = pmlir_rt_nccl_recv;
    backend.onDevice = true;
#else
    pmlir_rt_fail("--backend nccl: this build has no NCCL (CUDA and NCCL not found)");
#endif
  } else if (backendName != "mpi") {
    pmlir_rt_fail(("--backend '" + backendName + "': expected mpi or nccl").c_str());
  }
  std::string message;
  Mesh mesh = *Mesh::parse(meshSpec, order, message);
  int64_t rank = pmlir_rt_rank();

  int64_t failRank = std::atoll(flag(argc, argv, "--fail-rank", "-1").c_str());
  std::string how = flag(argc, argv, "--fail-how", "error");
  if (rank == failRank) {
    if (how == "error")
      pmlir_rt_fail("injected failure");
    if (how == "kill")
      std::raise(SIGKILL);
    if (how == "hang")
      for (;;)
        std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  int axes = static_cast<int>(mesh.axisNames().size());
  for (int a = 0; a < axes; ++a)
    checkGroup(mesh, rank, {a});
  for (int a = 0; a < axes; ++a)
    for (int b = 0; b < axes; ++b)
      if (a != b)
        checkGroup(mesh, rank, {a, b});
  if (axes > 2) {
    std::vector<int> all;
    for (int a = 0; a < axes; ++a)
      all.push_back(a);
    checkGroup(mesh, rank, all);
  }
  if (rank == 0)
    std::printf("collectives ok: %lld checks per rank on mesh %s, %lld ranks%s\n",
                static_cast<long long>(checks), meshSpec.c_str(),
                static_cast<long long>(mesh.numRanks()),
                backend.onDevice ? ", nccl" : "");
#ifdef PMLIR_HAS_NCCL
  pmlir_rt_nccl_finalize();
#endif
  pmlir_rt_finalize();
  return 0;
}
