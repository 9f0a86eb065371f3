//===- StepTimeTest.cpp - Pricing and running ranks' timelines ------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Planning/StepTime.h"

#include <gtest/gtest.h>

using namespace pmlir;
using namespace pmlir::planning;
using sharding::CollectiveKind;

namespace {

DeviceProfile profile() {
  DeviceProfile p;
  p.gemmFlopsPerSecond = 1e9;
  p.parallelBytesPerSecond = 1e9;
  p.parallelOperationsPerSecond = 4e9;
  p.serialBytesPerSecond = 5e8;
  p.serialOperationsPerSecond = 1e9;
  p.copyBytesPerSecond = 2e9;
  p.link = {1e9, 1e-3};
  return p;
}

/// The profile whose every communication runs on `link`.
DeviceProfile on(const sharding::Link &link) {
  DeviceProfile p = profile();
  p.link = link;
  return p;
}

Timeline::Event compute(double seconds) { return {{seconds, 0, 0}, std::nullopt}; }

Timeline::Event communicate(CollectiveKind kind, int64_t bytes, std::vector<int64_t> axes,
                            int64_t peer = -1, int64_t tag = -1) {
  return {{}, StepWork::Communication{kind, bytes, std::move(axes), peer, tag}};
}

Mesh mesh(const std::string &spec) {
  std::string error;
  std::optional<Mesh> m = Mesh::parse(spec, "", error);
  EXPECT_TRUE(m) << error;
  return *m;
}

} // namespace

TEST(StepTime, PricesGemmsLoopsAndCopies) {
  StepWork work;
  // A measured GEMM, and one priced at the profile's rate: 2 x 8 x 4 x 16
  // FLOPs.
  work.gemms = {{"pmlir_matmul_f32_r22_t00", {8, 16}, {16, 4}, {8, 4}},
                {"pmlir_matmul_f32_r22_t10", {16, 8}, {16, 4}, {8, 4}}};
  DeviceProfile p = profile();
  p.gemmSeconds[work.gemms[0]] = 0.25;
  StepWork::Compute c;
  c.gemmCalls = {{0, 2}, {1, 3}};
  c.parallelLoopBytes = 2'000'000'000;      // 2 s of bytes
  c.parallelLoopOperations = 4'000'000'000; // 1 s of operations
  c.serialLoopBytes = 100'000'000;          // 0.2 s
  c.serialLoopOperations = 300'000'000;     // 0.3 s
  c.copyBytes = 1'000'000'000;              // 0.5 s
  ComputeSeconds s = priceCompute(work, c, p);
  EXPECT_DOUBLE_EQ(work.gemms[1].flops(), 2.0 * 8 * 4 * 16);
  EXPECT_DOUBLE_EQ(s.gemm, 2 * 0.25 + 3 * (2.0 * 8 * 4 * 16) / 1e9);
  EXPECT_DOUBLE_EQ(s.loops, 2.0 + 1.0 + 0.2 + 0.3);
  EXPECT_DOUBLE_EQ(s.copies, 0.5);
}

TEST(StepTime, TimelineRoundTrips) {
  Timeline t;
  t.events = {compute(0.125), communicate(CollectiveKind::Send, 4096, {0, 3}, 1, 7), compute(1.5)};
  std::vector<int64_t> encoded = t.encode();
  std::optional<Timeline> back = Timeline::decode(encoded.data(), encoded.size());
  ASSERT_TRUE(back);
  ASSERT_EQ(back->events.size(), 3u);
  EXPECT_DOUBLE_EQ(back->events[0].compute.gemm, 0.125);
  ASSERT_TRUE(back->events[1].communication);
  EXPECT_EQ(back->events[1].communication->kind, CollectiveKind::Send);
  EXPECT_EQ(back->events[1].communication->bytes, 4096);
  EXPECT_EQ(back->events[1].communication->axes, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(back->events[1].communication->peer, 1);
  EXPECT_EQ(back->events[1].communication->tag, 7);
  EXPECT_DOUBLE_EQ(back->events[2].compute.gemm, 1.5);
  // Cut short: no timeline.
  EXPECT_FALSE(Timeline::decode(encoded.data(), encoded.size() - 1));
}

TEST(StepTime, ACollectiveWaitsForTheLastOfItsGroup) {
  // dp=2: rank 1 computes 2 s more, so rank 0 waits 2 s at the
  // all-reduce; both end after it, its ring time over the link.
  Mesh dp = mesh("dp=2");
  sharding::Link link{1e9, 1e-3};
  int64_t bytes = 1'000'000;
  std::vector<Timeline> ranks(2);
  ranks[0].events = {compute(1), communicate(CollectiveKind::AllReduce, bytes, {0})};
  ranks[1].events = {compute(3), communicate(CollectiveKind::AllReduce, bytes, {0})};
  StepSimulation sim = simulateStep(ranks, &dp, on(link));
  EXPECT_TRUE(sim.deadlock.empty());
  double ring = 2 * 1e-3 + 1.0 * bytes / 1e9; // 2(n-1) steps, 2(n-1)/n of the bytes
  EXPECT_DOUBLE_EQ(sim.seconds, 3 + ring);
  EXPECT_DOUBLE_EQ(sim.ranks[0].waiting, 2);
  EXPECT_DOUBLE_EQ(sim.ranks[1].waiting, 0);
  EXPECT_DOUBLE_EQ(sim.ranks[0].communication, ring);
  EXPECT_DOUBLE_EQ(sim.ranks[0].compute.gemm, 1);
  // Rank 0's step as it runs: 1 s computing, 2 s waiting, the ring.
  ASSERT_EQ(sim.ranks[0].spans.size(), 3u);
  EXPECT_EQ(sim.ranks[0].spans[0].activity, Activity::Compute);
  EXPECT_DOUBLE_EQ(sim.ranks[0].spans[0].end, 1);
  EXPECT_EQ(sim.ranks[0].spans[1].activity, Activity::Waiting);
  EXPECT_DOUBLE_EQ(sim.ranks[0].spans[1].end, 3);
  EXPECT_EQ(sim.ranks[0].spans[2].activity, Activity::Communication);
  EXPECT_DOUBLE_EQ(sim.ranks[0].spans[2].end, 3 + ring);
  ASSERT_EQ(sim.ranks[1].spans.size(), 2u);
}

TEST(StepTime, AReceiveWaitsForItsSend) {
  // pp=2: rank 0 computes 1 s and sends; the transfer arrives a latency
  // and its bytes later; rank 1 waits for it, then computes 2 s. A tag
  // sent twice is received in order.
  Mesh pp = mesh("pp=2");
  sharding::Link link{1e6, 0.5};
  std::vector<Timeline> ranks(2);
  ranks[0].events = {compute(1), communicate(CollectiveKind::Send, 1000, {0}, 1, 4),
                     communicate(CollectiveKind::Send, 1000, {0}, 1, 4), compute(1)};
  ranks[1].events = {communicate(CollectiveKind::Recv, 1000, {0}, 0, 4), compute(2),
                     communicate(CollectiveKind::Recv, 1000, {0}, 0, 4)};
  StepSimulation sim = simulateStep(ranks, &pp, on(link));
  ASSERT_TRUE(sim.deadlock.empty()) << sim.deadlock;
  double copy = 1000 / 1e6, transfer = 0.5 + 1000 / 1e6;
  EXPECT_DOUBLE_EQ(sim.ranks[0].seconds, 1 + 2 * copy + 1);
  EXPECT_DOUBLE_EQ(sim.ranks[1].waiting, 1 + transfer);
  EXPECT_DOUBLE_EQ(sim.ranks[1].seconds, 1 + transfer + 2);
  EXPECT_DOUBLE_EQ(sim.seconds, sim.ranks[1].seconds);
  // Rank 0 holds both copies until rank 1 takes the second.
  EXPECT_EQ(sim.ranks[0].heldSendBytes, 2000);
  EXPECT_EQ(sim.ranks[1].heldSendBytes, 0);
}

TEST(StepTime, SendCopiesHeldUntilTaken) {
  // pp=2: rank 1 sends three results and rank 0 takes them only after 5 s
  // of its own work: all three are held at once. Taken as they come, one
  // at a time.
  Mesh pp = mesh("pp=2");
  sharding::Link link{1e9, 0};
  std::vector<Timeline> late(2);
  for (int i = 0; i < 3; ++i)
    late[1].events.push_back(communicate(CollectiveKind::Send, 100, {0}, 0, i));
  late[0].events = {compute(5)};
  for (int i = 0; i < 3; ++i)
    late[0].events.push_back(communicate(CollectiveKind::Recv, 100, {0}, 1, i));
  EXPECT_EQ(simulateStep(late, &pp, on(link)).ranks[1].heldSendBytes, 300);
  std::vector<Timeline> prompt(2);
  for (int i = 0; i < 3; ++i) {
    prompt[1].events.push_back(communicate(CollectiveKind::Send, 100, {0}, 0, i));
    prompt[1].events.push_back(compute(1));
    prompt[0].events.push_back(communicate(CollectiveKind::Recv, 100, {0}, 1, i));
  }
  EXPECT_EQ(simulateStep(prompt, &pp, on(link)).ranks[1].heldSendBytes, 100);
}

TEST(StepTime, RanksShareTheirHostsCores) {
  // dp=4 on one host of 2 cores, one thread a rank: 4 ranks computing 1 s
  // each at once take 2 s; the all-reduce is not stretched.
  Mesh dp = mesh("dp=4");
  sharding::Link link{1e9, 0};
  std::vector<Timeline> ranks(4);
  for (Timeline &t : ranks)
    t.events = {compute(1), communicate(CollectiveKind::AllReduce, 4, {0})};
  HostSharing host{2, 4, 1};
  StepSimulation sim = simulateStep(ranks, &dp, on(link), &host);
  double ring = 2.0 * 3 / 4 * 4 / 1e9;
  EXPECT_NEAR(sim.seconds, 2 + ring, 1e-2);
  EXPECT_NEAR(sim.ranks[0].compute.gemm, 2, 1e-2);
  // Two hosts of 2 cores, 2 ranks each: every rank has a core.
  HostSharing twoHosts{2, 2, 1};
  EXPECT_DOUBLE_EQ(simulateStep(ranks, &dp, on(link), &twoHosts).seconds, 1 + ring);
  // A pipeline's ranks take turns: rank 1 waits while rank 0 computes, so
  // 2 ranks on 1 core are slowed by what they compute at once, not twice.
  Mesh pp = mesh("pp=2");
  std::vector<Timeline> turns(2);
  turns[0].events = {compute(1), communicate(CollectiveKind::Send, 8, {0}, 1, 1)};
  turns[1].events = {communicate(CollectiveKind::Recv, 8, {0}, 0, 1), compute(1)};
  HostSharing oneCore{1, 2, 1};
  StepSimulation piped = simulateStep(turns, &pp, on(link), &oneCore);
  EXPECT_DOUBLE_EQ(piped.seconds, simulateStep(turns, &pp, on(link)).seconds);
}

TEST(StepTime, NamesRanksThatWaitForever) {
  Mesh pp = mesh("pp=2");
  std::vector<Timeline> ranks(2);
  ranks[0].events = {communicate(CollectiveKind::Recv, 8, {0}, 1, 1)};
  ranks[1].events = {communicate(CollectiveKind::Recv, 8, {0}, 0, 2)};
  StepSimulation sim = simulateStep(ranks, &pp, on({1e9, 0}));
  EXPECT_NE(sim.deadlock.find("rank 0 waits at its communication 0 (recv)"), std::string::npos)
      << sim.deadlock;
}

TEST(StepTime, ProfileFromJson) {
  std::string error;
  std::optional<DeviceProfile> p = DeviceProfile::fromJson(
      R"({"name": "test", "gemm_gflops": 100, "loop_gbps": 10, "loop_gops": 4,
          "link_gbps": 50, "link_latency_us": 2})",
      error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->name, "test");
  EXPECT_DOUBLE_EQ(p->gemmFlopsPerSecond, 100e9);
  EXPECT_DOUBLE_EQ(p->serialBytesPerSecond, 10e9);     // the parallel rate
  EXPECT_DOUBLE_EQ(p->serialOperationsPerSecond, 4e9); // likewise
  EXPECT_DOUBLE_EQ(p->copyBytesPerSecond, 10e9);
  EXPECT_DOUBLE_EQ(p->peakFlopsPerSecond, 100e9);
  EXPECT_DOUBLE_EQ(p->link.latencySeconds, 2e-6);
  EXPECT_FALSE(DeviceProfile::fromJson(R"({"gemm_gflops": 100})", error));
  EXPECT_EQ(error, "the device profile needs 'loop_gbps'");
  EXPECT_FALSE(DeviceProfile::fromJson(
      R"({"gemm_gflops": -1, "loop_gbps": 10, "loop_gops": 4, "link_gbps": 1,
          "link_latency_us": 1})",
      error));
  EXPECT_EQ(error, "the device profile's 'gemm_gflops' must be a positive number");
  EXPECT_FALSE(DeviceProfile::fromJson("[1]", error));
  EXPECT_EQ(error, "the device profile is not a JSON object");
}

TEST(StepTime, GpuKernelsPayTheirLaunchAndTheirFamilysRate) {
  StepWork work;
  work.gemms = {{"pmlir_gpu_matmul_bf16_r22_t01", {8, 16}, {8, 16}, {8, 8}},
                {"pmlir_gpu_matmul_f32_r22_t00", {8, 16}, {16, 4}, {8, 4}}};
  DeviceProfile p = profile();
  p.gemmFlopsPerSecondByFamily["pmlir_gpu_matmul_bf16"] = 4e9;
  p.launchSeconds = 1e-3;
  StepWork::Compute c;
  c.gemmCalls = {{0, 2}, {1, 1}};
  c.parallelLoopBytes = 1'000'000'000; // 1 s
  c.loops = 10;
  ComputeSeconds s = priceCompute(work, c, p);
  double bf16 = 2.0 * 8 * 8 * 16, f32 = 2.0 * 8 * 4 * 16;
  EXPECT_DOUBLE_EQ(s.gemm, 2 * (bf16 / 4e9 + 1e-3) + (f32 / 1e9 + 1e-3));
  EXPECT_DOUBLE_EQ(s.loops, 1 + 10 * 1e-3);
  // On a GPU a kernel takes the longer of its bytes and its elements (its
  // operations), and a GEMM at least its operands' bytes at the copy
  // ceiling: the f32 GEMM's 8 x 16 + 16 x 4 + 8 x 4 floats at 2 x 2e9 B/s.
  p.target = CompileTarget::Gpu;
  c.parallelLoopOperations = 8'000'000'000; // 2 s at 4e9
  s = priceCompute(work, c, p);
  EXPECT_DOUBLE_EQ(s.loops, 2 + 10 * 1e-3);
  double moved = (8 * 16 + 16 * 4 + 8 * 4) * 4.0;
  double f32Call = std::max(f32 / 1e9, moved / 4e9) + 1e-3;
  EXPECT_DOUBLE_EQ(s.gemm, 2 * (bf16 / 4e9 + 1e-3) + f32Call);
  // Rows of 16 bytes (8 bf16, 4 floats) are aligned; of 6 bytes (3 bf16),
  // not: those GEMMs take the unaligned rate.
  p.unalignedGemmFlopsPerSecond = 2e9;
  EXPECT_DOUBLE_EQ(priceCompute(work, c, p).gemm, s.gemm);
  work.gemms[0] = {"pmlir_gpu_matmul_bf16_r22_t01", {8, 16}, {3, 16}, {8, 3}};
  double unaligned = 2.0 * 8 * 3 * 16;
  EXPECT_DOUBLE_EQ(priceCompute(work, c, p).gemm, 2 * (unaligned / 2e9 + 1e-3) + f32Call);
}

TEST(StepTime, GpuSendsMeetTheirReceives) {
  // pp=2 on a GPU (NCCL): rank 0 sends after 1 s, rank 1 receives after
  // 3 s: the send waits for the receive and no copy is held.
  Mesh pp = mesh("pp=2");
  DeviceProfile gpu = on({1e6, 0.5});
  gpu.target = CompileTarget::Gpu;
  std::vector<Timeline> ranks(2);
  ranks[0].events = {compute(1), communicate(CollectiveKind::Send, 1000, {0}, 1, 4), compute(1)};
  ranks[1].events = {compute(3), communicate(CollectiveKind::Recv, 1000, {0}, 0, 4)};
  StepSimulation sim = simulateStep(ranks, &pp, gpu);
  ASSERT_TRUE(sim.deadlock.empty()) << sim.deadlock;
  double transfer = 0.5 + 1000 / 1e6;
  EXPECT_DOUBLE_EQ(sim.ranks[0].waiting, 2);
  EXPECT_DOUBLE_EQ(sim.ranks[0].seconds, 3 + transfer + 1);
  EXPECT_DOUBLE_EQ(sim.ranks[1].seconds, 3 + transfer);
  EXPECT_EQ(sim.ranks[0].heldSendBytes, 0);
  // Both send first: on a CPU the copies let both go on; on a GPU each
  // waits for the other's receive forever.
  std::vector<Timeline> crossed(2);
  for (int64_t r = 0; r < 2; ++r)
    crossed[r].events = {communicate(CollectiveKind::Send, 8, {0}, 1 - r, 1),
                         communicate(CollectiveKind::Recv, 8, {0}, 1 - r, 1)};
  EXPECT_TRUE(simulateStep(crossed, &pp, on({1e6, 0})).deadlock.empty());
  EXPECT_NE(simulateStep(crossed, &pp, gpu).deadlock.find("(send) for ranks that never come"),
            std::string::npos);
  // As one message group each (pmlir-group-messages), the four are posted
  // together: each rank is done after one transfer.
  for (int64_t r = 0; r < 2; ++r)
    crossed[r].events[0].communication->groupedWithNext = true;
  StepSimulation grouped = simulateStep(crossed, &pp, gpu);
  ASSERT_TRUE(grouped.deadlock.empty()) << grouped.deadlock;
  EXPECT_DOUBLE_EQ(grouped.ranks[0].seconds, 0.5 + 8 / 1e6);
  EXPECT_DOUBLE_EQ(grouped.ranks[1].seconds, 0.5 + 8 / 1e6);
  // A group on one side only: rank 1 receives, then sends, alone; rank 0's
  // group waits for rank 1's send, posted after its receive has met.
  crossed[1].events[0].communication->groupedWithNext = false;
  std::swap(crossed[1].events[0], crossed[1].events[1]);
  grouped = simulateStep(crossed, &pp, gpu);
  ASSERT_TRUE(grouped.deadlock.empty()) << grouped.deadlock;
  EXPECT_DOUBLE_EQ(grouped.ranks[1].seconds, 2 * (0.5 + 8 / 1e6));
  EXPECT_DOUBLE_EQ(grouped.ranks[0].seconds, 2 * (0.5 + 8 / 1e6));
  // On the CPU a group's receive written first still comes after its send
  // (the runtime issues a group's sends first): no deadlock.
  std::vector<Timeline> receivesFirst(2);
  for (int64_t r = 0; r < 2; ++r) {
    receivesFirst[r].events = {communicate(CollectiveKind::Recv, 8, {0}, 1 - r, 1),
                               communicate(CollectiveKind::Send, 8, {0}, 1 - r, 1)};
    receivesFirst[r].events[0].communication->groupedWithNext = true;
  }
  EXPECT_TRUE(simulateStep(receivesFirst, &pp, on({1e6, 0})).deadlock.empty());
  EXPECT_TRUE(simulateStep(receivesFirst, &pp, gpu).deadlock.empty());
}

TEST(StepTime, GroupsAcrossNodesTakeTheLinkBetweenThem) {
  // dp=16 on nodes of 8: an all-reduce over dp crosses nodes, one over the
  // 8 ranks of the first part of dp stays in a node.
  std::optional<DeviceProfile> h100 = DeviceProfile::builtIn("h100");
  ASSERT_TRUE(h100 && h100->topology);
  Mesh dp = mesh("dp=16");
  const sharding::Topology &t = *h100->topology;
  int64_t whole = SubAxis{0, 1, 16}.code(16);
  int64_t inside = SubAxis{0, 2, 8}.code(16);
  EXPECT_DOUBLE_EQ(h100->linkOf(&dp, {whole}, 3).bytesPerSecond, t.interNode.bytesPerSecond);
  EXPECT_DOUBLE_EQ(h100->linkOf(&dp, {inside}, 3).bytesPerSecond, t.intraNode.bytesPerSecond);
  // No mesh: the profile's link.
  EXPECT_DOUBLE_EQ(h100->linkOf(nullptr, {whole}, 0).bytesPerSecond, h100->link.bytesPerSecond);
}

TEST(StepTime, BuiltInGpuProfiles) {
  for (const std::string &name : DeviceProfile::builtInNames()) {
    std::optional<DeviceProfile> p = DeviceProfile::builtIn(name);
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(p->target, CompileTarget::Gpu);
    ASSERT_TRUE(p->topology);
    EXPECT_EQ(p->topology->devicesPerNode, 8);
    EXPECT_DOUBLE_EQ(p->peakFor(Precision::BF16), 989.4e12);
    EXPECT_DOUBLE_EQ(p->peakFor(Precision::F32), 66.9e12);
    EXPECT_GT(p->contextBytes, 0);
    EXPECT_DOUBLE_EQ(p->link.bytesPerSecond, p->topology->intraNode.bytesPerSecond);
  }
  std::optional<DeviceProfile> h100 = DeviceProfile::builtIn("h100");
  std::optional<DeviceProfile> h200 = DeviceProfile::builtIn("h200");
  EXPECT_GT(h200->parallelBytesPerSecond, h100->parallelBytesPerSecond);
  EXPECT_GT(h200->topology->device.memoryBytes, h100->topology->device.memoryBytes);
  EXPECT_FALSE(DeviceProfile::builtIn("cpu"));
  std::string error;
  EXPECT_FALSE(DeviceProfile::fromJson(R"({"gemm_gflops": 1, "loop_gbps": 1, "loop_gops": 1,
      "link_gbps": 1, "link_latency_us": 1, "target": "tpu"})",
                                       error));
  EXPECT_NE(error.find("'target' is cpu or gpu"), std::string::npos) << error;
  // A name that is no string is refused, as a topology's is, not replaced.
  EXPECT_FALSE(DeviceProfile::fromJson(R"({"gemm_gflops": 1, "loop_gbps": 1, "loop_gops": 1,
      "link_gbps": 1, "link_latency_us": 1, "name": 5})",
                                       error));
  EXPECT_NE(error.find("the device profile's 'name' must be a string, not 5"), std::string::npos)
      << error;
  EXPECT_FALSE(DeviceProfile::fromJson(R"({"gemm_gflops": 1, "loop_gbps": 1, "loop_gops": 1,
      "link_gbps": 1, "link_latency_us": 1, "peak_gflops": {"fp8": 2}})",
                                       error));
  EXPECT_NE(error.find("not 'fp8'"), std::string::npos) << error;
}
