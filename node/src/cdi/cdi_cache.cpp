// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/cdi_cache.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/log.h"

namespace specshim::cdi {
namespace {

constexpr std::size_t kMaxEntryBytes = 3 * kMaxSpecFileBytes;
constexpr std::string_view kSuffix = ".cdi";

// hash64 mixes 8 bytes at a time: it only has to spread names; an entry is
// trusted for its full copy of the text, never for its hash.
std::uint64_t hash64(std::string_view s, std::uint64_t h) {
  constexpr std::uint64_t k = 0x9E3779B97F4A7C15ull;
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail ^ s.size()) * k;
  return h ^ (h >> 32);
}

void append_hex(std::string& out, unsigned char byte) {
  static constexpr char hex[] = "0123456789abcdef";
  out += hex[byte >> 4];
  out += hex[byte & 0xF];
}

int note_callback(dl_phdr_info* info, std::size_t, void* data) {
  auto& out = *static_cast<std::string*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p, sizeof n);
      const char* name = p + sizeof n;
      const char* desc = name + ((n.n_namesz + 3) & ~3u);
      p = desc + ((n.n_descsz + 3) & ~3u);
      if (p > end) break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        for (std::size_t k = 0; k < n.n_descsz; ++k) append_hex(out, static_cast<unsigned char>(desc[k]));
        return 1;
      }
    }
  }
  return 1;  // only the first object: the program itself
}

bool is_entry_name(std::string_view name) {
  return name.size() == 16 + kSuffix.size() && name.substr(16) == kSuffix &&
         name.substr(0, 16).find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// evict removes the oldest entries (by mtime) when dir holds more than
// kMaxCacheEntries, down to half of that. Best effort: errors are ignored.
void evict(int dirfd) {
  fs::Fd fd(::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<fs::DirEntry> names;
  if (!fd || !fs::list_directory(fd.get(), names)) return;
  std::vector<std::pair<std::int64_t, std::string>> entries;
  for (auto& e : names) {
    struct stat st {};
    if (!is_entry_name(e.name) || ::fstatat(dirfd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    entries.emplace_back(static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                         std::move(e.name));
  }
  if (entries.size() <= kMaxCacheEntries) return;
  std::sort(entries.begin(), entries.end());
  for (std::size_t i = 0; i < entries.size() - kMaxCacheEntries / 2; ++i)
    ::unlinkat(dirfd, entries[i].second.c_str(), 0);
}

std::string errno_text(std::string_view what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

bool usable_cache_dir(const struct stat& st, uid_t owner) {
  return S_ISDIR(st.st_mode) && st.st_uid == owner && (st.st_mode & 077) == 0;
}

const std::string& build_id() {
  static const std::string id = [] {
    std::string out;
    ::dl_iterate_phdr(note_callback, &out);
    return out;
  }();
  return id;
}

std::string entry_name(std::string_view text, std::string_view build) {
  std::uint64_t h = hash64(text, hash64(build, 0x243F6A8885A308D3ull));
  std::string name;
  for (int shift = 56; shift >= 0; shift -= 8) append_hex(name, static_cast<unsigned char>(h >> shift));
  return name + std::string(kSuffix);
}

ParseCache::ParseCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  // "/run/x/" would name no file, and O_NOFOLLOW would not see a symlink there.
  while (dir_.has_parent_path() && !dir_.has_filename() && dir_ != dir_.root_path()) dir_ = dir_.parent_path();
}

// open_dir opens the cache dir once, creating it and its parent (0700) when
// missing. It is used only when it is a directory (not a symlink) owned by
// this user with no access for group or others.
bool ParseCache::open_dir() const {
  if (tried_) return static_cast<bool>(fd_);
  tried_ = true;
  if (build_id().empty()) {
    why_off_ = "this binary has no ELF build ID";
    return false;
  }
  int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && !read_only_) {
    if (dir_.has_parent_path() && dir_.parent_path() != dir_.root_path()) ::mkdir(dir_.parent_path().c_str(), 0700);
    if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
      why_off_ = errno_text("create `" + dir_.string() + "`");
      return false;
    }
    fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) {
    why_off_ = errno_text("open `" + dir_.string() + "`");
    return false;
  }
  fs::Fd owned(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !usable_cache_dir(st, ::geteuid())) {
    why_off_ = "`" + dir_.string() + "` is not a directory of uid " + std::to_string(::geteuid()) +
               " closed to group and others";
    return false;
  }
  fd_ = std::move(owned);
  return true;
}

SpecFile ParseCache::parse(std::string_view text, const std::string& path) const {
  auto parsed = [&](std::string why) {
    last_ = "parsed (cache: " + why + ")";
    return parse_spec(text, path);
  };
  if (!open_dir()) return parsed(why_off_);
  const std::string& build = build_id();
  std::string name = entry_name(text, build);

  fs::Fd entry(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  std::string why = "no entry";
  if (entry) {
    struct stat st {};
    std::string bytes;
    if (::fstat(entry.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
      try {
        bytes = fs::read_open_file(entry.get(), st, kMaxEntryBytes, name);
      } catch (const Error&) {  // too large or unreadable: a miss like any other
      }
    }
    if (auto cached = decode_entry(bytes, text, build)) {
      last_ = "hit";
      if (auto* failure = std::get_if<ParseFailure>(&*cached)) throw Error(failure->error);
      auto& spec = std::get<SpecFile>(*cached);
      spec.path = path;
      return std::move(spec);
    }
    why = "entry " + name + " is not for these bytes and this build";
  }

  // A failure is stored as the message describe() gives the Error (a hit
  // throws it back flat: describe() says the same), then rethrown as it was.
  // Anything else parse_spec may throw (std::bad_alloc) is not a property of
  // the bytes and is never stored.
  std::optional<SpecFile> spec;
  std::optional<ParseFailure> failure;
  std::exception_ptr failed;
  try {
    spec = parsed(why);
  } catch (const Error& e) {
    failed = std::current_exception();
    failure = ParseFailure{describe(e)};
  }
  if (may_store(why)) store(name, spec ? encode_entry(text, build, *spec) : encode_entry(text, build, *failure));
  if (failed) std::rethrow_exception(failed);
  return std::move(*spec);
}

// may_store says whether this ParseCache may store one more entry; when not,
// last_ says why.
bool ParseCache::may_store(const std::string& why) const {
  if (read_only_) {
    last_ = "parsed (cache: " + why + "; read-only: not stored)";
    return false;
  }
  if (stores_ == kMaxStoresPerCreate) {
    last_ = "parsed (cache: " + std::to_string(stores_) + " entries stored by this create already)";
    return false;
  }
  return true;
}

// store writes encoded as the entry name.
void ParseCache::store(const std::string& name, const std::string& encoded) const {
  if (encoded.size() > kMaxEntryBytes) {  // the reader would refuse it
    last_ = "parsed (cache: an entry of " + std::to_string(encoded.size()) + " bytes is over the limit: not stored)";
    return;
  }
  ++stores_;
  try {
    // Through the descriptor that was checked, not the path again.
    std::string at = "/proc/self/fd/" + std::to_string(fd_.get());
    fs::write_file_atomic(at, name, encoded, 0600);
    last_ = "stored";
    evict(fd_.get());
    fs::remove_stale_temps(at);
  } catch (const std::exception& e) {
    last_ = "parsed (cache: not stored: " + describe(e) + ")";
  }
}

}  // namespace specshim::cdi
