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
#include <type_traits>
#include <utility>
#include <vector>

#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/log.h"

namespace specshim::cdi {
namespace {

// Bump when the encoding changes in a way a build ID would not tell (it
// always does today: the format is code of this binary).
constexpr std::string_view kMagic = "specshim cdi parse cache 1\n";
constexpr std::string_view kEnd = "end\n";
constexpr std::size_t kMaxEntryBytes = 3 * kMaxSpecFileBytes;
constexpr std::string_view kSuffix = ".cdi";

// ---- the encoding ----
//
// magic, build, text, then 1 and the spec's fields in declaration order (or
// 0 and the error of a failed parse), then kEnd.
// Integers are 8 bytes in host order (an entry never leaves the host that
// wrote it), strings and lists a count and their items, optionals a 0/1 byte
// and the value. One field list per struct serves both directions.

class Writer {
 public:
  void raw(std::string_view s) { out_ += s; }
  void operator()(std::int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void operator()(const std::string& s) { text(s); }
  void text(std::string_view s) {
    (*this)(static_cast<std::int64_t>(s.size()));
    out_ += s;
  }
  void operator()(bool v) { out_ += v ? '\1' : '\0'; }
  template <typename Int>
  requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool> && !std::is_same_v<Int, std::int64_t>) void operator()(
      Int v) {
    (*this)(static_cast<std::int64_t>(v));
  }
  template <typename T>
  void operator()(const std::optional<T>& v) {
    (*this)(v.has_value());
    if (v) (*this)(*v);
  }
  template <typename T>
  void operator()(const std::vector<T>& v) {
    (*this)(static_cast<std::int64_t>(v.size()));
    for (const auto& item : v) (*this)(item);
  }
  void operator()(const std::map<std::string, std::string>& m) {
    (*this)(static_cast<std::int64_t>(m.size()));
    for (const auto& [k, v] : m) (*this)(k), (*this)(v);
  }
  template <typename T>
  requires requires(Writer& w, const T& t) { fields(w, t); }
  void operator()(const T& v) { fields(*this, v); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reader throws Bad for anything that is not what Writer wrote.
struct Bad {};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::string_view raw(std::size_t n) {
    if (n > in_.size() - at_) throw Bad{};
    std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  void operator()(std::int64_t& v) { std::memcpy(&v, raw(sizeof v).data(), sizeof v); }
  std::string_view text() { return raw(count()); }
  void operator()(std::string& s) { s = text(); }
  void operator()(bool& v) {
    char c = raw(1)[0];
    if (c != '\0' && c != '\1') throw Bad{};
    v = c == '\1';
  }
  template <typename Int>
  requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool> && !std::is_same_v<Int, std::int64_t>) void operator()(
      Int& v) {
    std::int64_t wide = 0;
    (*this)(wide);
    if (!std::in_range<Int>(wide)) throw Bad{};
    v = static_cast<Int>(wide);
  }
  template <typename T>
  void operator()(std::optional<T>& v) {
    bool has = false;
    (*this)(has);
    v.reset();
    if (has) (*this)(v.emplace());
  }
  template <typename T>
  void operator()(std::vector<T>& v) {
    // Items are decoded one by one, so memory grows only with the bytes
    // they take: a damaged count cannot ask for more than the entry holds.
    v.clear();
    for (std::size_t n = count(); n > 0; --n) (*this)(v.emplace_back());
  }
  void operator()(std::map<std::string, std::string>& m) {
    m.clear();
    for (std::size_t n = count(); n > 0; --n) {
      std::string k, v;
      (*this)(k), (*this)(v);
      if (!m.emplace(std::move(k), std::move(v)).second) throw Bad{};
    }
  }
  template <typename T>
  requires requires(Reader& r, T& t) { fields(r, t); }
  void operator()(T& v) { fields(*this, v); }
  bool done() const { return at_ == in_.size(); }

 private:
  // count is a length or a number of items; every item takes at least one
  // byte, so a count past what is left is a bad entry, not an allocation.
  std::size_t count() {
    std::int64_t n = 0;
    (*this)(n);
    if (n < 0 || static_cast<std::uint64_t>(n) > in_.size() - at_) throw Bad{};
    return static_cast<std::size_t>(n);
  }

  std::string_view in_;
  std::size_t at_ = 0;
};

// The field lists, for `T` and `const T` alike. SpecFile's path and priority
// belong to where the file was found, not to its bytes, and are not kept.
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, DeviceNode>
void fields(Io& io, T& d) {
  io(d.path), io(d.host_path), io(d.type), io(d.major), io(d.minor), io(d.file_mode), io(d.permissions), io(d.uid),
      io(d.gid), io(d.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, Mount>
void fields(Io& io, T& m) {
  io(m.host_path), io(m.container_path), io(m.options), io(m.type), io(m.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, Hook>
void fields(Io& io, T& h) {
  io(h.hook_name), io(h.path), io(h.args), io(h.env), io(h.timeout), io(h.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, IntelRdt>
void fields(Io& io, T& r) {
  io(r.clos_id), io(r.l3_cache_schema), io(r.mem_bw_schema), io(r.schemata), io(r.enable_monitoring), io(r.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, NetDevice>
void fields(Io& io, T& n) {
  io(n.host_interface_name), io(n.name), io(n.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, ContainerEdits>
void fields(Io& io, T& e) {
  io(e.env), io(e.device_nodes), io(e.net_devices), io(e.hooks), io(e.mounts), io(e.intel_rdt), io(e.additional_gids);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, Device>
void fields(Io& io, T& d) {
  io(d.name), io(d.annotations), io(d.edits), io(d.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, SpecFile>
void fields(Io& io, T& s) {
  io(s.version), io(s.kind), io(s.annotations), io(s.edits), io(s.devices), io(s.version_line), io(s.kind_line);
}

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

std::string entry_header(std::string_view text, std::string_view build) {
  Writer w;
  w.raw(kMagic);
  w.text(build);
  w.text(text);
  return w.take();
}

std::string encode_entry(std::string_view text, std::string_view build, const SpecFile& spec) {
  Writer w;
  w.raw(entry_header(text, build));
  w(true);
  w(spec);
  w.raw(kEnd);
  return w.take();
}

std::string encode_entry(std::string_view text, std::string_view build, const ParseFailure& failure) {
  Writer w;
  w.raw(entry_header(text, build));
  w(false);
  w(failure.error);
  w.raw(kEnd);
  return w.take();
}

std::optional<Parsed> decode_entry(std::string_view entry, std::string_view text, std::string_view build) {
  try {
    Reader r(entry);
    if (r.raw(kMagic.size()) != kMagic || r.text() != build || r.text() != text) return std::nullopt;
    bool parsed = false;
    r(parsed);
    Parsed out;
    if (parsed)
      r(out.emplace<SpecFile>());
    else
      r(out.emplace<ParseFailure>().error);
    if (r.raw(kEnd.size()) != kEnd || !r.done()) return std::nullopt;
    return out;
  } catch (...) {  // Bad, or what a damaged entry makes the allocator say
    return std::nullopt;
  }
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
