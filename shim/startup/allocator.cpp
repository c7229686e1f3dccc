// SPDX-License-Identifier: Apache-2.0
// The specshim binary's malloc. A create allocates some 2,700 blocks (the
// spec's JSON tree, the CDI model read from the parse cache, the edits built
// as JSON) and then execs the runtime within a millisecond. glibc's malloc
// spent about 160 instructions a block on that: it sorts freed chunks into
// bins and consolidates them for a reuse a process this short never gets
// to, and it was a quarter of the instructions of an NVIDIA-sized create
// (docs/BENCHMARKS.md, "Fast where the GPUs are").
//
// This one is a size-class allocator with nothing to sort:
//   - every block has an 8-byte header before it (its class), placed so that
//     the block itself is 16-byte aligned, as malloc's are: blocks are 16n + 8
//     bytes, each with its header 16n bytes long, as dense as glibc's chunks
//     (a create's heap is ~2,700 blocks of 24 to 64 bytes: the JSON tree);
//   - requests up to 504 bytes round up to such a size, up to 128 KiB to a
//     power of two less the header; a freed block goes on its class's free
//     list and is the next block of that class handed out;
//   - new blocks are cut from 1 MiB chunks mapped with mmap, whose pages the
//     kernel provides as they are first touched (the RSS is what is used);
//   - a request over 128 KiB gets a mapping of its own, unmapped on free;
//   - aligned requests (memalign and friends) take a block big enough to
//     hold an aligned one and mark where it starts.
// A spin lock makes it safe for the threads a verb might start.
//
// glibc supports replacing its malloc in a static link when all of these
// are defined (the manual, "Replacing malloc"); it is linked only into the
// static specshim binary and into the unit test that checks it
// (test/unit/shim/allocator_test.cpp), never into sanitized builds, whose runtimes
// bring their own.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

constexpr std::size_t kHeader = 8;
constexpr std::size_t kSmallClasses = 32;  // classes 0..31: 8, 24, 40, ..., 504 bytes
constexpr std::size_t kSmallMax = 16 * (kSmallClasses - 1) + 8;
constexpr std::size_t kMediumClasses = 8;  // classes 32..39: 1 KiB, ..., 128 KiB blocks, headers included
constexpr std::size_t kMediumMax = (std::size_t{128} << 10) - kHeader;
constexpr std::size_t kClasses = kSmallClasses + kMediumClasses;
constexpr std::size_t kChunk = std::size_t{1} << 20;
constexpr std::uint32_t kLarge = 0xffffffff;    // a mapping of its own
constexpr std::uint32_t kAligned = 0xfffffffe;  // an aligned block inside another block
// A large block starts this far into its mapping (its header 8 bytes before).
constexpr std::size_t kLargeStart = 16;

struct Header {
  std::uint32_t cls;    // a class, kLarge or kAligned
  std::uint32_t extra;  // kLarge: the mapping's size in pages; kAligned: how far past its block it is
};
static_assert(sizeof(Header) == kHeader);

struct FreeBlock {
  FreeBlock* next;
};

std::atomic_flag lock = ATOMIC_FLAG_INIT;
FreeBlock* free_lists[kClasses];
char* chunk_next;
char* chunk_end;

class Locked {
 public:
  Locked() {
    while (lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Locked() { lock.clear(std::memory_order_release); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
};

Header* header_of(void* p) {
  return reinterpret_cast<Header*>(static_cast<char*>(p) - kHeader);
}

std::size_t class_of(std::size_t n) {
  if (n <= kSmallMax) return (n + 7) / 16;
  std::size_t cls = kSmallClasses, block = std::size_t{1} << 10;
  while (block - kHeader < n) {
    block <<= 1;
    ++cls;
  }
  return cls;
}

std::size_t capacity_of(std::size_t cls) {
  if (cls < kSmallClasses) return 16 * cls + 8;
  return ((std::size_t{1} << 10) << (cls - kSmallClasses)) - kHeader;
}

std::size_t page_size() {
  return static_cast<std::size_t>(::getpagesize());
}

void* map(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void* allocate_large(std::size_t n) {
  std::size_t page = page_size();
  if (n > SIZE_MAX / 2) {
    errno = ENOMEM;
    return nullptr;
  }
  std::size_t pages = (n + kLargeStart + page - 1) / page;
  if (pages > UINT32_MAX) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* mapping = static_cast<char*>(map(pages * page));
  if (!mapping) {
    errno = ENOMEM;
    return nullptr;
  }
  char* p = mapping + kLargeStart;
  *header_of(p) = {kLarge, static_cast<std::uint32_t>(pages)};
  return p;
}

void* allocate(std::size_t n) {
  if (n > kMediumMax) return allocate_large(n);
  std::size_t cls = class_of(n);
  Locked locked;
  if (FreeBlock* b = free_lists[cls]) {
    free_lists[cls] = b->next;
    return b;
  }
  std::size_t cap = capacity_of(cls);
  if (static_cast<std::size_t>(chunk_end - chunk_next) < kHeader + cap) {
    // The rest of the old chunk is given up: never touched, it costs no memory.
    auto* chunk = static_cast<char*>(map(kChunk));
    if (!chunk) {
      errno = ENOMEM;
      return nullptr;
    }
    chunk_next = chunk + 8;  // each header 8 bytes before a 16-byte boundary
    chunk_end = chunk + kChunk;
  }
  char* p = chunk_next + kHeader;
  chunk_next += kHeader + cap;
  *header_of(p) = {static_cast<std::uint32_t>(cls), 0};
  return p;
}

// block_of is the block an aligned block lies in, or p itself.
void* block_of(void* p) {
  Header* h = header_of(p);
  return h->cls == kAligned ? static_cast<char*>(p) - h->extra : p;
}

std::size_t usable(void* p) {
  Header* h = header_of(p);
  if (h->cls == kAligned) return usable(block_of(p)) - h->extra;
  if (h->cls == kLarge) return std::size_t{h->extra} * page_size() - kLargeStart;
  return capacity_of(h->cls);
}

void release(void* p) {
  if (!p) return;
  p = block_of(p);
  Header* h = header_of(p);
  if (h->cls == kLarge) {
    ::munmap(static_cast<char*>(p) - kLargeStart, std::size_t{h->extra} * page_size());
    return;
  }
  Locked locked;
  auto* b = static_cast<FreeBlock*>(p);
  b->next = free_lists[h->cls];
  free_lists[h->cls] = b;
}

void* allocate_aligned(std::size_t align, std::size_t n) {
  if (align == 0 || (align & (align - 1)) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  if (align <= 16) return allocate(n);  // every block is 16-byte aligned
  if (n > SIZE_MAX / 2 || align > (std::size_t{1} << 30)) {
    errno = ENOMEM;
    return nullptr;
  }
  char* raw = static_cast<char*>(allocate(n + align));
  if (!raw) return nullptr;
  auto at = reinterpret_cast<std::uintptr_t>(raw);
  auto* p = reinterpret_cast<char*>((at + align - 1) & ~(std::uintptr_t{align} - 1));
  if (p == raw) return p;
  // p - raw is a multiple of 16, so at least 16: room for p's own header.
  *header_of(p) = {kAligned, static_cast<std::uint32_t>(p - raw)};
  return p;
}

}  // namespace

extern "C" {

void* malloc(std::size_t n) {
  return allocate(n);
}

void free(void* p) {
  release(p);
}

void* calloc(std::size_t count, std::size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = allocate(count * size);
  if (p) std::memset(p, 0, count * size);
  return p;
}

std::size_t malloc_usable_size(void* p) {
  return p ? usable(p) : 0;
}

void* realloc(void* p, std::size_t n) {
  if (!p) return allocate(n);
  if (n == 0) {
    release(p);
    return nullptr;
  }
  std::size_t have = usable(p);
  if (n <= have) return p;
  void* q = allocate(n);
  if (!q) return nullptr;  // p stays valid, as realloc promises
  std::memcpy(q, p, have);
  release(p);
  return q;
}

void* memalign(std::size_t align, std::size_t n) {
  return allocate_aligned(align, n);
}

void* aligned_alloc(std::size_t align, std::size_t n) {
  return allocate_aligned(align, n);
}

int posix_memalign(void** out, std::size_t align, std::size_t n) {
  if (align < sizeof(void*)) return EINVAL;
  int saved = errno;
  void* p = allocate_aligned(align, n);
  int err = errno;
  errno = saved;
  if (!p) return err;
  *out = p;
  return 0;
}

void* valloc(std::size_t n) {
  return allocate_aligned(page_size(), n);
}

void* pvalloc(std::size_t n) {
  std::size_t page = page_size();
  if (n > SIZE_MAX - page) {
    errno = ENOMEM;
    return nullptr;
  }
  return allocate_aligned(page, (n + page - 1) / page * page);
}

}  // extern "C"
