//===- ParallelForTest.cpp - The runtime's worker threads -----------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/RuntimeAbi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

using pmlir::rt::abi::kParallelMinWork;

/// The chunks a loop ran as and the threads that ran them.
struct Chunks {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
};

struct Recorder {
  std::mutex mutex;
  Chunks chunks;
  std::vector<std::atomic<int>> *visits = nullptr;
};

void recordChunk(void *context, int64_t begin, int64_t end) {
  auto *recorder = static_cast<Recorder *>(context);
  for (int64_t i = begin; i < end; ++i)
    ++(*recorder->visits)[i];
  std::lock_guard<std::mutex> lock(recorder->mutex);
  recorder->chunks.ranges.push_back({begin, end});
  recorder->chunks.threads.insert(std::this_thread::get_id());
}

/// Runs a parallel_for of `count` iterations of `unitCost` on `threads`.
Chunks run(int threads, int64_t count, int64_t unitCost, std::vector<std::atomic<int>> &visits) {
  pmlir_rt_set_parallel_threads(threads);
  Recorder recorder;
  recorder.visits = &visits;
  pmlir_rt_parallel_for(reinterpret_cast<void *>(&recordChunk), &recorder, count, unitCost);
  return recorder.chunks;
}

TEST(ParallelFor, EveryIterationOnceInOneChunkAThread) {
  for (int threads : {2, 3, 5})
    for (int64_t count : {int64_t(7), int64_t(1000), int64_t(4097)}) {
      std::vector<std::atomic<int>> visits(count);
      Chunks chunks = run(threads, count, kParallelMinWork, visits);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(visits[i], 1) << "iteration " << i << " of " << count;
      EXPECT_EQ(chunks.ranges.size(), size_t(std::min<int64_t>(threads, count)));
      EXPECT_EQ(chunks.threads.size(), chunks.ranges.size());
    }
}

TEST(ParallelFor, SameChunksEveryCall) {
  std::vector<std::atomic<int>> visits(1000);
  auto sorted = [](Chunks c) {
    std::sort(c.ranges.begin(), c.ranges.end());
    return c.ranges;
  };
  auto first = sorted(run(3, 1000, kParallelMinWork, visits));
  for (int repeat = 0; repeat < 20; ++repeat)
    EXPECT_EQ(sorted(run(3, 1000, kParallelMinWork, visits)), first);
  EXPECT_EQ(first, (std::vector<std::pair<int64_t, int64_t>>{{0, 333}, {333, 666}, {666, 1000}}));
}

TEST(ParallelFor, SmallWorkRunsInlineOnTheCaller) {
  std::vector<std::atomic<int>> visits(100);
  // 100 iterations of work 1: far below what pays for a wake-up.
  Chunks chunks = run(4, 100, 1, visits);
  ASSERT_EQ(chunks.ranges.size(), 1u);
  EXPECT_EQ(chunks.ranges[0], (std::pair<int64_t, int64_t>{0, 100}));
  EXPECT_EQ(*chunks.threads.begin(), std::this_thread::get_id());
  // Work for two threads' worth only: two chunks on four threads.
  std::vector<std::atomic<int>> more(100);
  EXPECT_EQ(run(4, 100, 2 * kParallelMinWork / 100 + 1, more).ranges.size(), 2u);
}

TEST(ParallelFor, OneThreadAndNoIterations) {
  std::vector<std::atomic<int>> visits(50);
  EXPECT_EQ(run(1, 50, kParallelMinWork, visits).ranges.size(), 1u);
  EXPECT_EQ(run(3, 0, kParallelMinWork, visits).ranges.size(), 0u);
}

struct Nested {
  std::atomic<int> innerChunks{0};
  std::atomic<int64_t> iterations{0};
};

void innerChunk(void *context, int64_t begin, int64_t end) {
  auto *nested = static_cast<Nested *>(context);
  ++nested->innerChunks;
  nested->iterations += end - begin;
}

void outerChunk(void *context, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    pmlir_rt_parallel_for(reinterpret_cast<void *>(&innerChunk), context, 10, kParallelMinWork);
}

TEST(ParallelFor, InsideAChunkRunsInline) {
  pmlir_rt_set_parallel_threads(3);
  Nested nested;
  pmlir_rt_parallel_for(reinterpret_cast<void *>(&outerChunk), &nested, 6, kParallelMinWork);
  // Six inner loops, each one chunk of ten on the thread that met it.
  EXPECT_EQ(nested.innerChunks, 6);
  EXPECT_EQ(nested.iterations, 60);
}

TEST(ParallelFor, CountsCallsAndSplits) {
  int64_t calls0, split0, calls1, split1;
  pmlir_rt_parallel_counts(&calls0, &split0);
  std::vector<std::atomic<int>> visits(100);
  run(2, 100, kParallelMinWork, visits);
  run(2, 100, 1, visits);
  pmlir_rt_parallel_counts(&calls1, &split1);
  EXPECT_EQ(calls1 - calls0, 2);
  EXPECT_EQ(split1 - split0, 1);
}

TEST(ParallelFor, ResizesAndDefaults) {
  pmlir_rt_set_parallel_threads(4);
  EXPECT_EQ(pmlir_rt_parallel_threads(), 4);
  pmlir_rt_set_parallel_threads(0);
  EXPECT_EQ(pmlir_rt_parallel_threads(), 1);
  EXPECT_GE(pmlir_rt_default_threads(), 1);
  EXPECT_LE(pmlir_rt_default_threads(), pmlir_rt_host_cores());
  EXPECT_EQ(pmlir_rt_ranks_on_host(), 1); // not under mpirun
}

} // namespace
