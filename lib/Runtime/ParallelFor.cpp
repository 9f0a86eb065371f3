//===- ParallelFor.cpp - The runtime's worker threads ---------------------===//
//
// Part of pmlir.
//
// pmlir_rt_parallel_for: the loops that pmlir-outline-parallel-loops made
// into chunked bodies run here, on one pool of worker threads per process.
// The caller runs the first chunk itself, so n threads are the caller and
// n - 1 workers. A chunk is a contiguous range of the dimension the loop
// was split along, the same range for the same count and thread count on
// every run; a chunk never shares an element's sum with another.
//
// Workers spin briefly after their chunk (loops come in quick succession
// between GEMMs), then sleep on a condition variable, so an idle pool
// costs nothing and a host with more ranks than cores is not starved.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/RuntimeAbi.h"

#include "Groups.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <thread>
#include <vector>

namespace {

using Body = void (*)(void *context, int64_t begin, int64_t end);

using pmlir::rt::abi::kParallelMinWork;
/// Pause instructions a worker spins for the next loop before sleeping.
constexpr int kSpinsBeforeSleep = 1 << 12;

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Set on a thread while it runs a chunk: a parallel loop inside runs
/// inline.
thread_local bool insideChunk = false;

class WorkerPool {
public:
  static WorkerPool &get() {
    // Never destroyed: workers may outlive static destruction at exit.
    static WorkerPool *pool = new WorkerPool();
    return *pool;
  }

  int threads() const { return threadCount; }
  int64_t callCount() const { return calls.load(std::memory_order_relaxed); }
  int64_t splitCallCount() const { return splitCalls.load(std::memory_order_relaxed); }

  /// n threads in all (the caller's counted); the workers beyond are
  /// started now, those no longer needed stop.
  void resize(int n) {
    n = std::max(1, n);
    std::lock_guard<std::mutex> running(runMutex);
    if (n == threadCount)
      return;
    stopWorkers();
    threadCount = n;
    // Each worker starts from the generation now: a loop dispatched before
    // the thread first looks must still be its.
    uint64_t now = generation.load(std::memory_order_acquire);
    for (int i = 1; i < n; ++i)
      workers.emplace_back([this, i, now] { workerLoop(i, now); });
  }

  void run(Body body, void *context, int64_t count, int64_t unitCost) {
    if (count <= 0)
      return;
    if (!insideChunk)
      calls.fetch_add(1, std::memory_order_relaxed);
    int64_t work = unitCost > 0 && count > INT64_MAX / unitCost ? INT64_MAX : count * unitCost;
    int64_t chunks =
        std::min<int64_t>({threadCount, count, std::max<int64_t>(1, work / kParallelMinWork)});
    if (insideChunk || chunks <= 1) {
      body(context, 0, count);
      return;
    }
    // One loop at a time: a second caller (another thread of the process)
    // waits for the pool.
    std::lock_guard<std::mutex> running(runMutex);
    splitCalls.fetch_add(1, std::memory_order_relaxed);
    job = {body, context, count, chunks};
    // Every worker answers, those without a chunk too: none may still be
    // reading this job when the next one is written.
    remaining.store(threadCount - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(sleepMutex);
      generation.fetch_add(1, std::memory_order_release);
    }
    wake.notify_all();
    runChunk(0);
    for (int spins = 0; remaining.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < kSpinsBeforeSleep)
        relax();
      else
        sched_yield();
    }
  }

private:
  struct Job {
    Body body = nullptr;
    void *context = nullptr;
    int64_t count = 0;
    int64_t chunks = 0;
  };

  void runChunk(int64_t chunk) {
    int64_t begin = job.count * chunk / job.chunks;
    int64_t end = job.count * (chunk + 1) / job.chunks;
    insideChunk = true;
    job.body(job.context, begin, end);
    insideChunk = false;
  }

  void workerLoop(int index, uint64_t seen) {
    for (;;) {
      uint64_t now = seen;
      for (int spins = 0; spins < kSpinsBeforeSleep; ++spins) {
        now = generation.load(std::memory_order_acquire);
        if (now != seen)
          break;
        relax();
      }
      if (now == seen) {
        std::unique_lock<std::mutex> lock(sleepMutex);
        wake.wait(lock, [&] { return generation.load(std::memory_order_acquire) != seen; });
        now = generation.load(std::memory_order_acquire);
      }
      seen = now;
      if (stopping.load(std::memory_order_acquire))
        return;
      if (index < job.chunks)
        runChunk(index);
      remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(sleepMutex);
      stopping.store(true, std::memory_order_release);
      generation.fetch_add(1, std::memory_order_release);
    }
    wake.notify_all();
    for (std::thread &worker : workers)
      worker.join();
    workers.clear();
    stopping.store(false, std::memory_order_release);
  }

  int threadCount = 1;
  std::vector<std::thread> workers;
  Job job;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> remaining{0};
  std::atomic<bool> stopping{false};
  /// Calls from outside a chunk, and those of them split over threads.
  std::atomic<int64_t> calls{0}, splitCalls{0};
  std::mutex sleepMutex, runMutex;
  std::condition_variable wake;
};

} // namespace

extern "C" void pmlir_rt_parallel_for(void *body, void *context, int64_t count, int64_t unit_cost) {
  WorkerPool::get().run(reinterpret_cast<Body>(body), context, count, unit_cost);
}

extern "C" void pmlir_rt_set_parallel_threads(int n) { WorkerPool::get().resize(n); }

extern "C" int pmlir_rt_parallel_threads(void) { return WorkerPool::get().threads(); }

extern "C" void pmlir_rt_parallel_counts(int64_t *calls, int64_t *split) {
  *calls = WorkerPool::get().callCount();
  *split = WorkerPool::get().splitCallCount();
}

extern "C" int pmlir_rt_host_cores(void) {
  cpu_set_t allowed;
  int cores = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
  return cores > 0 ? cores : int(std::max(1u, std::thread::hardware_concurrency()));
}

extern "C" int pmlir_rt_ranks_on_host(void) {
  return int(std::max<int64_t>(1, pmlir::rt::environmentNumber({"OMPI_COMM_WORLD_LOCAL_SIZE"}, 1)));
}

extern "C" int pmlir_rt_default_threads(void) {
  // The cores shared among the ranks of this host, as torchrun gives each
  // rank its share.
  return std::max(1, pmlir_rt_host_cores() / pmlir_rt_ranks_on_host());
}
