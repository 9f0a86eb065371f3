//===- CollectivesCheck.cpp - Every runtime collective against expected values ===//
//
// Part of pmlir.
//
//   mpirun -np N pmlir-rt-collectives-check --mesh SPEC [--rank-order ORDER]
//       [--timeout S] [--fail-rank R --fail-how error|kill|hang]
//       [--backend mpi|nccl] [--buffers device|host]
//       [--misuse-message-group empty|collective|nested|unfinished]
//
// Runs each pmlir_rt_* collective over every single axis, every pair of axes
// (in both orders) and all axes of the mesh, on f32, bf16 and f16 elements
// with rank-dependent integer values (small enough that bf16 holds every
// sum exactly), and compares every element bit for bit with what the group
// must produce, computed from the mesh alone. Rank 0 prints the number of
// checks; a mismatch ends the job through pmlir_rt_fail. --fail-* injects a
// fault on one rank.
//
// --backend nccl (builds with NCCL) runs the same entry points on GPU
// buffers: inputs go to the device and outputs come back by copies ordered
// on the runtime's stream (pmlir_rt_stream), after pmlir_rt_wait. With
// --buffers host it passes host buffers instead, which the backend stages.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/RuntimeMesh.h"
#ifdef PMLIR_HAS_NCCL
#include <cuda_runtime.h>
#endif

#include "pmlir/Support/Mesh.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using pmlir::Mesh;
using pmlir::SubAxis;

namespace {

int64_t checks = 0;

using Bytes = std::vector<unsigned char>;

/// An element type under test: its code, and its encoding of the integer
/// values the checks use (exact in every type), written independently of
/// the runtime's conversions.
struct Type {
  pmlir_rt_dtype dtype;
  const char *name;
  size_t bytes;
  /// Encodes `v`, which must be exact in the type.
  void (*store)(float v, unsigned char *out);
  /// Decodes, for messages.
  float (*load)(const unsigned char *in);
  /// Whether values stay below 256 (bf16 has 8 significant bits).
  bool small;
};

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

float floatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void storeHalf(uint16_t h, unsigned char *out) { std::memcpy(out, &h, 2); }

uint16_t loadHalf(const unsigned char *in) {
  uint16_t h;
  std::memcpy(&h, in, 2);
  return h;
}

[[noreturn]] void notExact(float v, const char *type) {
  pmlir_rt_fail(("check: " + std::to_string(v) + " is no " + type).c_str());
  std::abort(); // pmlir_rt_fail does not return
}

void storeF32(float v, unsigned char *out) { std::memcpy(out, &v, 4); }

float loadF32(const unsigned char *in) {
  float v;
  std::memcpy(&v, in, 4);
  return v;
}

/// bf16 is the upper half of an f32.
void storeBf16(float v, unsigned char *out) {
  uint32_t bits = bitsOf(v);
  if (bits & 0xffffu)
    notExact(v, "bf16");
  storeHalf(static_cast<uint16_t>(bits >> 16), out);
}

float loadBf16(const unsigned char *in) { return floatOf(uint32_t(loadHalf(in)) << 16); }

/// Zero, or a normal f16: rebias the exponent, keep 10 mantissa bits.
void storeF16(float v, unsigned char *out) {
  uint32_t bits = bitsOf(v), exponent = (bits >> 23) & 0xffu;
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if ((bits & 0x7fffffffu) == 0)
    return storeHalf(sign, out);
  if ((bits & 0x1fffu) || exponent < 113 || exponent > 142)
    notExact(v, "f16");
  storeHalf(static_cast<uint16_t>(sign | ((exponent - 112) << 10) | ((bits >> 13) & 0x3ffu)), out);
}

float loadF16(const unsigned char *in) {
  uint16_t h = loadHalf(in);
  int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v = exponent == 0    ? std::ldexp(float(mantissa), -24)
            : exponent == 31 ? (mantissa ? NAN : INFINITY)
                             : std::ldexp(float(1024 + mantissa), exponent - 25);
  return h & 0x8000 ? -v : v;
}

const Type kF32 = {PMLIR_RT_F32, "f32", 4, storeF32, loadF32, false};
const Type kBF16 = {PMLIR_RT_BF16, "bf16", 2, storeBf16, loadBf16, true};
const Type kF16 = {PMLIR_RT_F16, "f16", 2, storeF16, loadF16, true};

Bytes encode(const Type &type, const std::vector<float> &values) {
  Bytes bytes(values.size() * type.bytes);
  for (size_t i = 0; i < values.size(); ++i)
    type.store(values[i], &bytes[i * type.bytes]);
  return bytes;
}

void expectEqual(const Type &type, const Bytes &got, const std::vector<float> &want,
                 const std::string &what) {
  Bytes wanted = encode(type, want);
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i * type.bytes], &wanted[i * type.bytes], type.bytes) != 0) {
      std::string message = what + " (" + type.name + "): element " + std::to_string(i) + " is " +
                            std::to_string(type.load(&got[i * type.bytes])) + ", expected " +
                            std::to_string(want[i]);
      pmlir_rt_fail(message.c_str());
    }
  ++checks;
}

#ifdef PMLIR_HAS_NCCL
void checkCuda(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess)
    pmlir_rt_fail((std::string("check: ") + what + ": " + cudaGetErrorString(rc)).c_str());
}
#endif

/// Where the buffers of the calls live: host memory, or device copies.
bool onDevice = false;

/// Runs call(in, out) on `in` and `out`, or on device copies of them (one
/// buffer when they are the same vector), copying `out` back after. The
/// copies are ordered on the runtime's stream, before and after the
/// collective, which may return before it completes.
template <typename Call> void run(Bytes &in, Bytes &out, Call call) {
  if (!onDevice)
    return call(in.data(), out.data());
#ifdef PMLIR_HAS_NCCL
  auto stream = static_cast<cudaStream_t>(pmlir_rt_stream());
  void *din = nullptr, *dout = nullptr;
  checkCuda(cudaMalloc(&din, in.size()), "cudaMalloc");
  checkCuda(cudaMemcpyAsync(din, in.data(), in.size(), cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync");
  dout = din;
  if (&in != &out) {
    checkCuda(cudaMalloc(&dout, out.size()), "cudaMalloc");
    checkCuda(cudaMemcpyAsync(dout, out.data(), out.size(), cudaMemcpyHostToDevice, stream),
              "cudaMemcpyAsync");
  }
  call(din, dout);
  pmlir_rt_wait();
  checkCuda(cudaMemcpyAsync(out.data(), dout, out.size(), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync");
  checkCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaFree(din);
  if (dout != din)
    cudaFree(dout);
#endif
}

/// The integer values of the checks: f32 as wide as the data allows,
/// 16-bit types small enough that a sum over `n` members stays below 256.
float value(const Type &type, int64_t n, int64_t rank, int64_t i) {
  if (!type.small)
    return float(rank * 100 + i % 97);
  return float((rank * 5 + i) % std::max<int64_t>(2, 256 / n));
}

/// Block j of member `rank` in all_to_all: distinct per (rank, j) up to 64
/// pairs for the 16-bit types.
float blockValue(const Type &type, int64_t rank, int64_t j, int64_t i) {
  if (!type.small)
    return float(rank * 1000 + j * 10 + i % 7);
  return float(((rank * 8 + j) % 64) * 4 + i % 4);
}

/// The runtime's codes of `parts` (SubAxis::code).
std::vector<int64_t> codesOf(const Mesh &mesh, const std::vector<SubAxis> &parts) {
  std::vector<int64_t> codes;
  for (const SubAxis &part : parts)
    codes.push_back(part.code(mesh.axisSizes()[part.index]));
  return codes;
}

void checkType(const Type &type, const Mesh &mesh, int64_t rank, const std::vector<SubAxis> &parts,
               const std::string &name) {
  std::vector<int64_t> axes = codesOf(mesh, parts);
  std::vector<int64_t> group = mesh.group(rank, parts);
  int64_t n = group.size(), me = mesh.indexInGroup(rank, parts);
  const int64_t *ax = axes.data();
  int64_t na = axes.size();
  pmlir_rt_dtype dtype = type.dtype;
  auto v = [&](int64_t member, int64_t i) { return value(type, n, member, i); };

  const int64_t count = 37;
  std::vector<float> send(count), want(count);
  for (int64_t i = 0; i < count; ++i)
    send[i] = v(rank, i);
  Bytes sendBytes = encode(type, send), recv(count * type.bytes);

  // all_reduce: sum, max, min, product.
  struct Case {
    pmlir_rt_reduction op;
    const char *label;
  };
  for (Case c : {Case{PMLIR_RT_SUM, "sum"}, Case{PMLIR_RT_MAX, "max"}, Case{PMLIR_RT_MIN, "min"},
                 Case{PMLIR_RT_PRODUCT, "product"}}) {
    std::vector<float> in = send;
    if (c.op == PMLIR_RT_PRODUCT)
      for (int64_t i = 0; i < count; ++i)
        in[i] = float(1 + (rank + i) % 2);
    for (int64_t i = 0; i < count; ++i) {
      float acc = c.op == PMLIR_RT_PRODUCT ? 1 : c.op == PMLIR_RT_SUM ? 0 : v(group[0], i);
      for (int64_t m : group) {
        float x = c.op == PMLIR_RT_PRODUCT ? float(1 + (m + i) % 2) : v(m, i);
        acc = c.op == PMLIR_RT_SUM   ? acc + x
              : c.op == PMLIR_RT_MAX ? std::max(acc, x)
              : c.op == PMLIR_RT_MIN ? std::min(acc, x)
                                     : acc * x;
      }
      want[i] = acc;
    }
    Bytes inBytes = encode(type, in);
    run(inBytes, recv,
        [&](void *s, void *r) { pmlir_rt_all_reduce(s, r, count, dtype, c.op, ax, na); });
    expectEqual(type, recv, want, std::string("all_reduce ") + c.label + " over " + name);
  }

  // all_gather: the members' blocks in group order.
  Bytes gathered(count * n * type.bytes);
  std::vector<float> wantGathered(count * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < count; ++i)
      wantGathered[j * count + i] = v(group[j], i);
  run(sendBytes, gathered,
      [&](void *s, void *r) { pmlir_rt_all_gather(s, r, count, dtype, ax, na); });
  expectEqual(type, gathered, wantGathered, "all_gather over " + name);

  // gather to the last member: the same blocks there, nothing elsewhere.
  std::vector<float> untouched(count * n, -1.0f);
  Bytes atRoot = encode(type, untouched);
  run(sendBytes, atRoot,
      [&](void *s, void *r) { pmlir_rt_gather(s, r, count, dtype, n - 1, ax, na); });
  expectEqual(type, atRoot, me == n - 1 ? wantGathered : untouched, "gather over " + name);

  // reduce_scatter: block `me` of the sum.
  std::vector<float> full(count * n);
  for (int64_t i = 0; i < count * n; ++i)
    full[i] = v(rank, i);
  for (int64_t i = 0; i < count; ++i) {
    want[i] = 0;
    for (int64_t m : group)
      want[i] += v(m, me * count + i);
  }
  Bytes fullBytes = encode(type, full);
  run(fullBytes, recv,
      [&](void *s, void *r) { pmlir_rt_reduce_scatter(s, r, count, dtype, PMLIR_RT_SUM, ax, na); });
  expectEqual(type, recv, want, "reduce_scatter over " + name);

  // all_to_all: block j of member m holds (m, j); we receive (group[j], me).
  std::vector<float> blocks(count * n), wantSwapped(count * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < count; ++i) {
      blocks[j * count + i] = blockValue(type, rank, j, i);
      wantSwapped[j * count + i] = blockValue(type, group[j], me, i);
    }
  Bytes blockBytes = encode(type, blocks), swapped(count * n * type.bytes);
  run(blockBytes, swapped,
      [&](void *s, void *r) { pmlir_rt_all_to_all(s, r, count, dtype, ax, na); });
  expectEqual(type, swapped, wantSwapped, "all_to_all over " + name);

  // broadcast from the last member.
  Bytes buf = sendBytes;
  for (int64_t i = 0; i < count; ++i)
    want[i] = v(group[n - 1], i);
  run(buf, buf, [&](void *, void *b) { pmlir_rt_broadcast(b, count, dtype, n - 1, ax, na); });
  expectEqual(type, buf, want, "broadcast over " + name);

  // send/recv around the group's ring (small messages: eager on MPI; on
  // NCCL the even members send first, so every send meets its receive).
  if (n > 1) {
    int64_t next = (me + 1) % n, prev = (me + n - 1) % n;
    for (int64_t i = 0; i < count; ++i)
      want[i] = v(group[prev], i);
    auto sendNext = [&] {
      run(sendBytes, sendBytes,
          [&](void *, void *b) { pmlir_rt_send(b, count, dtype, next, ax, na, /*tag=*/7); });
    };
    auto recvPrev = [&] {
      run(recv, recv,
          [&](void *, void *b) { pmlir_rt_recv(b, count, dtype, prev, ax, na, /*tag=*/7); });
    };
    if (me % 2 == 0)
      sendNext(), recvPrev();
    else
      recvPrev(), sendNext();
    expectEqual(type, recv, want, "send/recv over " + name);

    // The same ring as one message group on every member: each sends
    // first, which on NCCL only the group lets finish.
    Bytes received(recv.size());
    run(sendBytes, received, [&](void *s, void *r) {
      pmlir_rt_message_group(2);
      pmlir_rt_send(s, count, dtype, next, ax, na, /*tag=*/8);
      pmlir_rt_recv(r, count, dtype, prev, ax, na, /*tag=*/8);
    });
    expectEqual(type, received, want, "a message group's send/recv over " + name);
  }
}

void checkGroup(const Mesh &mesh, int64_t rank, const std::vector<SubAxis> &parts) {
  std::vector<int64_t> axes = codesOf(mesh, parts);
  std::string name;
  for (const SubAxis &part : parts)
    name += (name.empty() ? "" : ",") + mesh.nameOf(part);
  int64_t n = mesh.group(rank, parts).size(), me = mesh.indexInGroup(rank, parts);
  const int64_t *ax = axes.data();
  int64_t na = axes.size();
  if (pmlir_rt_group_size(ax, na) != n || pmlir_rt_index_in_group(ax, na) != me)
    pmlir_rt_fail(("group over " + name + ": size or index differs from the mesh").c_str());
  ++checks;
  for (const Type *type : {&kF32, &kBF16, &kF16})
    checkType(*type, mesh, rank, parts, name);
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
  std::string backendName = flag(argc, argv, "--backend", "mpi");
  std::string buffers = flag(argc, argv, "--buffers", backendName == "nccl" ? "device" : "host");
  pmlir_rt_backend backend = PMLIR_RT_BACKEND_MPI;
  if (backendName == "nccl")
    backend = PMLIR_RT_BACKEND_NCCL;
  else if (backendName != "mpi") {
    std::fprintf(stderr, "pmlir-rt-collectives-check: --backend '%s': expected mpi or nccl\n",
                 backendName.c_str());
    return 1;
  }
  if (buffers != "host" && !(buffers == "device" && backend == PMLIR_RT_BACKEND_NCCL)) {
    std::fprintf(stderr,
                 "pmlir-rt-collectives-check: --buffers '%s': expected host, or device with "
                 "--backend nccl\n",
                 buffers.c_str());
    return 1;
  }
  std::string message;
  std::optional<Mesh> parsed = Mesh::parse(meshSpec, order, message);
  if (!parsed) {
    std::fprintf(stderr, "pmlir-rt-collectives-check: --mesh '%s': %s\n", meshSpec.c_str(),
                 message.c_str());
    return 1;
  }
  Mesh mesh = *parsed;
  char error[512];
  if (pmlir_rt_init(pmlir::rt::RuntimeMesh(mesh).get(), timeout, backend, error, sizeof(error))) {
    std::fprintf(stderr, "pmlir-rt-collectives-check: %s\n", error);
    return 1;
  }
  onDevice = buffers == "device";
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

  // --misuse-message-group HOW: every rank misuses pmlir_rt_message_group,
  // which must end the job saying how: a group of no messages (empty), a
  // collective inside a group (collective), a group inside another
  // (nested), or a program that ends before its group's last message
  // (unfinished).
  std::string misuse = flag(argc, argv, "--misuse-message-group", "");
  if (!misuse.empty()) {
    int64_t axis = 0;
    float send[4] = {1, 2, 3, 4}, recv[4] = {};
    int64_t peer = (pmlir_rt_index_in_group(&axis, 1) + 1) % 2;
    if (misuse == "empty") {
      pmlir_rt_message_group(0);
    } else if (misuse == "collective") {
      pmlir_rt_message_group(2);
      pmlir_rt_send(send, 4, PMLIR_RT_F32, peer, &axis, 1, 7);
      pmlir_rt_all_reduce(send, recv, 4, PMLIR_RT_F32, PMLIR_RT_SUM, &axis, 1);
    } else if (misuse == "nested") {
      pmlir_rt_message_group(2);
      pmlir_rt_message_group(2);
    } else if (misuse == "unfinished") {
      pmlir_rt_message_group(3);
      pmlir_rt_send(send, 4, PMLIR_RT_F32, peer, &axis, 1, 7);
      pmlir_rt_recv(recv, 4, PMLIR_RT_F32, peer, &axis, 1, 7);
    }
    pmlir_rt_finalize();
    std::printf("the misuse went unnoticed\n");
    return 0;
  }

  // --check-collectives: every check below runs with each call's
  // fingerprint compared across its group first; --disagree-rank R makes
  // rank R issue a call that differs from the others' (--disagree-how:
  // count, reduction, kind, or message, a recv longer than its send),
  // which must end the job naming both.
  if (flag(argc, argv, "--check-collectives", "off") == "on")
    pmlir_rt_check_collectives(1);
  int64_t disagreeRank = std::atoll(flag(argc, argv, "--disagree-rank", "-1").c_str());
  if (disagreeRank >= 0) {
    std::string how = flag(argc, argv, "--disagree-how", "count");
    int64_t axis = 0;
    float send[8] = {1, 2, 3, 4, 5, 6, 7, 8}, recv[16] = {};
    bool odd = rank == disagreeRank;
    if (how == "message") {
      int64_t member = pmlir_rt_index_in_group(&axis, 1);
      if (member == 0)
        pmlir_rt_send(send, 4, PMLIR_RT_F32, 1, &axis, 1, 7);
      else if (member == 1)
        pmlir_rt_recv(recv, odd ? 5 : 4, PMLIR_RT_F32, 0, &axis, 1, 7);
    } else if (how == "kind" && odd) {
      pmlir_rt_all_gather(send, recv, 4, PMLIR_RT_F32, &axis, 1);
    } else {
      pmlir_rt_all_reduce(send, recv, how == "count" && odd ? 5 : 4, PMLIR_RT_F32,
                          how == "reduction" && odd ? PMLIR_RT_MAX : PMLIR_RT_SUM, &axis, 1);
    }
    pmlir_rt_finalize();
    std::printf("the disagreement went unnoticed\n");
    return 0;
  }

  int axes = static_cast<int>(mesh.axisNames().size());
  for (int a = 0; a < axes; ++a)
    checkGroup(mesh, rank, {mesh.wholeAxis(a)});
  for (int a = 0; a < axes; ++a)
    for (int b = 0; b < axes; ++b)
      if (a != b)
        checkGroup(mesh, rank, {mesh.wholeAxis(a), mesh.wholeAxis(b)});
  if (axes > 2) {
    std::vector<SubAxis> all;
    for (int a = 0; a < axes; ++a)
      all.push_back(mesh.wholeAxis(a));
    checkGroup(mesh, rank, all);
  }
  // Sub-axes: an axis of composite size cut at its smallest prime factor p
  // into its major part (1)p and minor part (p)rest, each alone and both
  // minor first (a group order no whole axis has).
  for (int a = 0; a < axes; ++a) {
    int64_t size = mesh.axisSizes()[a], p = 2;
    while (p < size && size % p != 0)
      ++p;
    if (p == size || size == 1)
      continue;
    SubAxis major{a, 1, p}, minor{a, p, size / p};
    checkGroup(mesh, rank, {major});
    checkGroup(mesh, rank, {minor});
    checkGroup(mesh, rank, {minor, major});
  }
  if (rank == 0)
    std::printf("collectives ok: %lld checks per rank on mesh %s, %lld ranks, %s%s\n",
                static_cast<long long>(checks), meshSpec.c_str(),
                static_cast<long long>(mesh.numRanks()), backendName.c_str(),
                backend == PMLIR_RT_BACKEND_NCCL && !onDevice ? " (host buffers)" : "");
  pmlir_rt_finalize();
  return 0;
}
