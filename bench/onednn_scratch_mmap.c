/* onednn_scratch_mmap.c - an experiment, not a fix: preloaded into
 * pmlir-run, it gives oneDNN's own allocations of 64 KiB or more (the
 * scratch its GEMMs allocate in every call) pages of their own, mapped for
 * the allocation and unmapped when it is freed, while everything else
 * stays in the one heap pmlir-run keeps (keepFreedMemory: no mmap, no
 * trim). The difference in peak resident memory is what that scratch
 * costs inside the kept heap.
 *
 *   gcc -O2 -shared -fPIC bench/onednn_scratch_mmap.c -o /tmp/onednn_scratch_mmap.so -ldl
 *   pmlir-run MODEL --inputs IDS --repeat 3 --threads T
 *   LD_PRELOAD=/tmp/onednn_scratch_mmap.so pmlir-run MODEL --inputs IDS --repeat 3 --threads T
 *
 * oneDNN 2.6 allocates with posix_memalign; an allocation is oneDNN's when
 * the caller's address lies in libdnnl (dladdr). Each mapping starts with
 * a page that holds a tag and its length, so free() knows its own. Cited
 * in docs/performance.md (the AMD EPYC section's peak memory).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

enum { kPage = 4096, kLeast = 64 << 10 };
static const uint64_t kTag = 0x706d6c69726f6e65ull;

static int (*libcPosixMemalign)(void **, size_t, size_t);
static void (*libcFree)(void *);

static int fromOneDnn(void *caller) {
  Dl_info info;
  return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libdnnl");
}

int posix_memalign(void **out, size_t alignment, size_t bytes) {
  if (!libcPosixMemalign)
    libcPosixMemalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  if (bytes < kLeast || alignment > kPage || !fromOneDnn(__builtin_return_address(0)))
    return libcPosixMemalign(out, alignment, bytes);
  size_t length = bytes + kPage;
  char *mapping = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED)
    return ENOMEM;
  ((uint64_t *)mapping)[0] = kTag;
  ((uint64_t *)mapping)[1] = length;
  *out = mapping + kPage;
  return 0;
}

void free(void *pointer) {
  if (!libcFree)
    libcFree = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  // Only a page-aligned pointer can be one of ours; the page before a
  // heap pointer is the heap's, readable.
  if (pointer && ((uintptr_t)pointer & (kPage - 1)) == 0) {
    uint64_t *header = (uint64_t *)((char *)pointer - kPage);
    if (header[0] == kTag) {
      munmap(header, header[1]);
      return;
    }
  }
  libcFree(pointer);
}
