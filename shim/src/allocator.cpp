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
//   - every block has a 16-byte header before it (its class, its capacity),
//     so blocks stay 16-byte aligned, as malloc's are;
//   - requests up to 512 bytes round up to a multiple of 16, up to 128 KiB
//     to a power of two; a freed block goes on its class's free list and is
//     the next block of that class handed out;
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
// (test/unit/allocator_test.cpp), never into sanitized builds, whose runtimes
// bring their own.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

constexpr std::size_t kHeader = 16;
constexpr std::size_t kSmallStep = 16, kSmallMax = 512;  // classes 0..31: 16, 32, ..., 512
constexpr std::size_t kSmallClasses = kSmallMax / kSmallStep;
constexpr std::size_t kMediumMax = std::size_t{128} << 10;  // classes 32..39: 1 KiB, ..., 128 KiB
constexpr std::size_t kClasses = kSmallClasses + 8;
constexpr std::size_t kChunk = std::size_t{1} << 20;
constexpr std::uint32_t kLarge = 0xffffffff;    // a mapping of its own
constexpr std::uint32_t kAligned = 0xfffffffe;  // an aligned block inside another block

struct Header {
  std::uint32_t cls;     // a class, kLarge or kAligned
  std::uint32_t offset;  // kAligned: how far past the block it is in
  std::size_t capacity;  // usable bytes from the block's start
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
  if (n <= kSmallMax) return n == 0 ? 0 : (n - 1) / kSmallStep;
  std::size_t cls = kSmallClasses, cap = std::size_t{1} << 10;
  while (cap < n) {
    cap <<= 1;
    ++cls;
  }
  return cls;
}

std::size_t capacity_of(std::size_t cls) {
  if (cls < kSmallClasses) return (cls + 1) * kSmallStep;
  return (std::size_t{1} << 10) << (cls - kSmallClasses);
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
  std::size_t bytes = (n + kHeader + page - 1) / page * page;
  auto* h = static_cast<Header*>(map(bytes));
  if (!h) {
    errno = ENOMEM;
    return nullptr;
  }
  *h = {kLarge, 0, bytes - kHeader};
  return reinterpret_cast<char*>(h) + kHeader;
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
    chunk_next = chunk;
    chunk_end = chunk + kChunk;
  }
  auto* h = reinterpret_cast<Header*>(chunk_next);
  chunk_next += kHeader + cap;
  *h = {static_cast<std::uint32_t>(cls), 0, cap};
  return reinterpret_cast<char*>(h) + kHeader;
}

void release(void* p) {
  if (!p) return;
  Header* h = header_of(p);
  if (h->cls == kAligned) {
    p = static_cast<char*>(p) - h->offset;
    h = header_of(p);
  }
  if (h->cls == kLarge) {
    ::munmap(h, h->capacity + kHeader);
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
  if (align <= kHeader) return allocate(n);
  if (n > SIZE_MAX / 2 || align > (std::size_t{1} << 30)) {
    errno = ENOMEM;
    return nullptr;
  }
  char* raw = static_cast<char*>(allocate(n + align));
  if (!raw) return nullptr;
  auto at = reinterpret_cast<std::uintptr_t>(raw);
  auto* p = reinterpret_cast<char*>((at + align - 1) & ~(std::uintptr_t{align} - 1));
  if (p == raw) return p;
  // p - raw is a multiple of 16 and at least 16: room for p's own header.
  auto offset = static_cast<std::size_t>(p - raw);
  *header_of(p) = {kAligned, static_cast<std::uint32_t>(offset), header_of(raw)->capacity - offset};
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
  return p ? header_of(p)->capacity : 0;
}

void* realloc(void* p, std::size_t n) {
  if (!p) return allocate(n);
  if (n == 0) {
    release(p);
    return nullptr;
  }
  std::size_t have = header_of(p)->capacity;
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
