//===- OneDnnScratch.cpp - oneDNN's GEMM scratch outside the kept heap ----===//
//
// Part of pmlir.
//
// oneDNN's dnnl_sgemm allocates its packing scratch (posix_memalign, about
// 100 KiB to a few MiB) in every call and frees it on return. pmlir-run
// keeps one heap that never shrinks (exec::keepFreedMemory), whose free
// chunks the program's buffers reuse: a scratch taken there lands wherever
// a free chunk fits at that moment, and where the heap's top is the only
// fit, the next large buffer goes above it instead of reusing the top.
// What is free at each moment differs a little from run to run (MPI's
// start-up allocates more or less), so the process's peak did too: a
// pipelined training step peaked 10 MiB higher in a third of its runs,
// always where the scratch had gone to the top. So pmlir-run gives
// oneDNN's allocations of 64 KiB or more pages of their own, mapped at the
// first such allocation of each size and kept for the next (mapped afresh
// in every call, they slowed a GPT-2 small forward by 5-8%), and the heap
// holds the program's buffers and small allocations only.
//
// It does so by defining posix_memalign and free: the executable's
// definitions come before libc's for every library, oneDNN's included
// (loaded later with dlopen). An allocation is oneDNN's when the caller's
// address lies in libdnnl. Not in a build with AddressSanitizer, whose
// runtime defines both itself.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/GemmKernels.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PMLIR_ONEDNN_SCRATCH_IN_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PMLIR_ONEDNN_SCRATCH_IN_HEAP 1
#endif

#ifndef PMLIR_ONEDNN_SCRATCH_IN_HEAP
// glibc's own allocator, under the names it exports for interposers (no
// dlsym, which may allocate, inside free).
extern "C" void *__libc_memalign(size_t alignment, size_t bytes);
extern "C" void __libc_free(void *pointer);

namespace {

constexpr size_t kPage = 4096;
/// The least of oneDNN's allocations mapped: its GEMMs' scratch, not its
/// small bookkeeping.
constexpr size_t kLeast = size_t(64) << 10;
/// A block larger than this is unmapped when freed rather than kept.
constexpr size_t kMostKept = size_t(64) << 20;
/// In the first 8 bytes of a block's first page, which precedes what the
/// caller gets: a pointer handed out here is page-aligned and its page
/// before holds this tag and the block's length.
constexpr uint64_t kTag = 0x706d6c6972736372ull;

struct Block {
  char *mapping;
  size_t length;
  bool inUse;
};

/// The blocks mapped, in use or kept for the next allocation.
struct Blocks {
  std::mutex mutex;
  std::vector<Block> all;
};
/// Never destroyed: oneDNN frees at its own exit, after the statics'.
Blocks &blocks() {
  static auto *b = new Blocks;
  return *b;
}
std::atomic<int64_t> mappedBlocks{0};

bool fromOneDnn(void *caller) {
  Dl_info info;
  return dladdr(caller, &info) && info.dli_fname && std::strstr(info.dli_fname, "libdnnl");
}

/// A block of at least `bytes` after its header page: a kept one that
/// fits (the smallest), else a new mapping. Null where none can be mapped.
void *takeBlock(size_t bytes) {
  size_t length = (bytes + 2 * kPage - 1) / kPage * kPage;
  Blocks &b = blocks();
  std::lock_guard lock(b.mutex);
  Block *best = nullptr;
  for (Block &block : b.all)
    if (!block.inUse && block.length >= length && (!best || block.length < best->length))
      best = &block;
  if (!best) {
    void *mapping =
        mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED)
      return nullptr;
    auto *header = static_cast<uint64_t *>(mapping);
    header[0] = kTag;
    header[1] = length;
    b.all.push_back({static_cast<char *>(mapping), length, false});
    best = &b.all.back();
    mappedBlocks.fetch_add(1, std::memory_order_relaxed);
  }
  best->inUse = true;
  return best->mapping + kPage;
}

/// Gives back the block at `pointer` if it is one of them.
bool giveBack(void *pointer) {
  // Only a page-aligned pointer can be one; the page before a heap
  // pointer (past the chunk header) is the heap's, readable.
  if (!pointer || (reinterpret_cast<uintptr_t>(pointer) & (kPage - 1)) != 0)
    return false;
  char *mapping = static_cast<char *>(pointer) - kPage;
  if (*reinterpret_cast<const uint64_t *>(mapping) != kTag)
    return false;
  Blocks &b = blocks();
  std::lock_guard lock(b.mutex);
  // The tag alone could be a heap page's data: the registry decides.
  auto block = std::find_if(b.all.begin(), b.all.end(),
                            [&](const Block &x) { return x.mapping == mapping && x.inUse; });
  if (block == b.all.end())
    return false;
  if (block->length > kMostKept) {
    munmap(block->mapping, block->length);
    b.all.erase(block);
    mappedBlocks.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  block->inUse = false;
  return true;
}

} // namespace

extern "C" int posix_memalign(void **out, size_t alignment, size_t bytes) {
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  if (bytes < kLeast || alignment > kPage || !fromOneDnn(__builtin_return_address(0))) {
    void *p = __libc_memalign(alignment, bytes);
    if (!p)
      return ENOMEM;
    *out = p;
    return 0;
  }
  void *block = takeBlock(bytes);
  if (!block)
    return ENOMEM;
  *out = block;
  return 0;
}

extern "C" void free(void *pointer) {
  if (!giveBack(pointer))
    __libc_free(pointer);
}

int64_t pmlir::rt::oneDnnScratchBlocks() { return mappedBlocks.load(std::memory_order_relaxed); }
#else
int64_t pmlir::rt::oneDnnScratchBlocks() { return -1; }
#endif
