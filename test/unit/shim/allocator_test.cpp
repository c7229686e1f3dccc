// SPDX-License-Identifier: Apache-2.0
// shim/src/allocator.cpp, the specshim binary's malloc. This test binary
// links it as its own malloc, so Catch2 and the C++ library run on it too;
// the cases check what malloc's callers rely on: alignment, contents kept
// through realloc, calloc's zeroes, reuse of freed blocks, large blocks,
// aligned requests and their errors.
#include <malloc.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

bool aligned(const void* p, std::size_t to) {
  return reinterpret_cast<std::uintptr_t>(p) % to == 0;
}

// fill and holds: a block's bytes as a function of its seed.
void fill(void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(seed + i * 31);
}
bool holds(const void* p, std::size_t n, unsigned seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<unsigned char>(seed + i * 31)) return false;
  return true;
}

}  // namespace

TEST_CASE("allocator: blocks of every size are 16-byte aligned, usable to their size and kept apart") {
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t n : {0, 1, 15, 16, 17, 100, 511, 512, 513, 1000, 4096, 65537, 131072, 131073, 1 << 20}) {
    void* p = std::malloc(n);
    REQUIRE(p);
    CHECK(aligned(p, 16));
    CHECK(malloc_usable_size(p) >= n);
    fill(p, n, static_cast<unsigned>(n));
    blocks.emplace_back(p, n);
  }
  for (auto [p, n] : blocks) {
    INFO("size " << n);
    CHECK(holds(p, n, static_cast<unsigned>(n)));
    std::free(p);
  }
  std::free(nullptr);
}

TEST_CASE("allocator: a freed block is the next block of its size class") {
  void* a = std::malloc(30);
  std::free(a);
  void* b = std::malloc(40);  // the same class: blocks of 40 bytes
  CHECK(b == a);
  void* c = std::malloc(30);
  CHECK(c != b);
  std::free(b);
  std::free(c);
}

TEST_CASE("allocator: realloc keeps the contents, in place while the block has room") {
  void* p = std::malloc(20);
  fill(p, 20, 7);
  void* same = std::realloc(p, 24);  // its 24-byte block holds it
  CHECK(same == p);
  void* grown = std::realloc(same, 300000);  // past the classes: a mapping of its own
  REQUIRE(grown);
  CHECK(holds(grown, 20, 7));
  fill(grown, 300000, 9);
  void* shrunk = std::realloc(grown, 10);
  CHECK(shrunk == grown);
  CHECK(holds(shrunk, 10, 9));
  CHECK(std::realloc(shrunk, 0) == nullptr);  // freed, as glibc's realloc does
  void* fresh = std::realloc(nullptr, 64);
  CHECK(fresh);
  std::free(fresh);
}

TEST_CASE("allocator: calloc zeroes reused blocks and refuses a size that overflows") {
  void* p = std::malloc(256);
  std::memset(p, 0xab, 256);
  std::free(p);
  auto* z = static_cast<unsigned char*>(std::calloc(16, 16));
  REQUIRE(z);
  CHECK(z == p);
  for (int i = 0; i < 256; ++i) CHECK(z[i] == 0);
  std::free(z);
  volatile std::size_t half = SIZE_MAX / 2;  // volatile: no compile-time size warning
  errno = 0;
  CHECK(std::calloc(half, 4) == nullptr);
  CHECK(errno == ENOMEM);
}

TEST_CASE("allocator: aligned requests are aligned, usable, freed and refused as their callers expect") {
  for (std::size_t align : {8, 16, 32, 64, 4096, 1 << 16}) {
    for (std::size_t n : {1, 100, 5000, 200000}) {
      INFO("align " << align << " size " << n);
      void* p = aligned_alloc(align, n);
      REQUIRE(p);
      CHECK(aligned(p, align));
      CHECK(malloc_usable_size(p) >= n);
      fill(p, n, 3);
      void* q = std::realloc(p, n * 2);  // an aligned block grows like any other
      REQUIRE(q);
      CHECK(holds(q, n, 3));
      std::free(q);

      void* r = nullptr;
      REQUIRE(posix_memalign(&r, align < sizeof(void*) ? sizeof(void*) : align, n) == 0);
      CHECK(aligned(r, align));
      std::free(r);
    }
  }
  void* page = valloc(10);
  CHECK(aligned(page, static_cast<std::size_t>(getpagesize())));
  std::free(page);
  void* whole = pvalloc(10);
  CHECK(malloc_usable_size(whole) >= static_cast<std::size_t>(getpagesize()));
  std::free(whole);

  void* r = nullptr;
  CHECK(posix_memalign(&r, 24, 10) == EINVAL);  // not a power of two
  CHECK(posix_memalign(&r, 4, 10) == EINVAL);   // below sizeof(void*)
  errno = 0;
  CHECK(memalign(48, 10) == nullptr);
  CHECK(errno == EINVAL);
  volatile std::size_t huge = SIZE_MAX - 8;
  errno = 0;
  CHECK(std::malloc(huge) == nullptr);
  CHECK(errno == ENOMEM);
}

TEST_CASE("allocator: a long random run of mallocs, reallocs and frees keeps every block's contents") {
  std::mt19937 rng(41);
  std::map<void*, std::pair<std::size_t, unsigned>> live;  // block -> size, seed
  auto size = [&] {
    switch (rng() % 8) {
      case 0:
        return std::size_t{rng() % 300000};
      case 1:
        return std::size_t{rng() % 5000};
      default:
        return std::size_t{rng() % 600};
    }
  };
  for (int step = 0; step < 20000; ++step) {
    unsigned what = rng() % 10;
    if (what < 5 || live.empty()) {
      std::size_t n = size();
      void* p = std::malloc(n);
      REQUIRE(p);
      REQUIRE(live.count(p) == 0);  // never a block that is still in use
      unsigned seed = rng();
      fill(p, n, seed);
      live[p] = {n, seed};
      continue;
    }
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng() % live.size()));
    auto [p, info] = *it;
    REQUIRE(holds(p, info.first, info.second));
    live.erase(it);
    if (what < 8) {
      std::free(p);
    } else {
      std::size_t n = size() + 1;
      void* q = std::realloc(p, n);
      REQUIRE(q);
      REQUIRE(holds(q, std::min(n, info.first), info.second));
      unsigned seed = rng();
      fill(q, n, seed);
      live[q] = {n, seed};
    }
  }
  for (auto& [p, info] : live) {
    CHECK(holds(p, info.first, info.second));
    std::free(p);
  }
  std::string s(100000, 'x');  // the C++ library allocates through it too
  CHECK(s.size() == 100000);
}
