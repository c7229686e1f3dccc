// SPDX-License-Identifier: Apache-2.0
#include "specshim/live/inspect.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/text.h"

namespace specshim::live {
namespace {

namespace sfs = std::filesystem;

// value_of returns the text after "key:" of the line starting with it.
std::optional<std::string_view> value_of(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':')
      return trim(line.substr(key.size() + 1), " \t", " \t\n");
    at = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < s.size()) {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
    std::size_t end = at;
    while (end < s.size() && s[end] != ' ' && s[end] != '\t') ++end;
    if (end > at) out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

template <typename T>
std::optional<T> number(std::string_view s, int base = 10) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string relative(const std::string& path) {
  std::string_view p = path;
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  return p.empty() ? "." : std::string(p);
}

FileView::Kind kind_of(mode_t m) {
  if (S_ISCHR(m)) return FileView::Kind::char_device;
  if (S_ISBLK(m)) return FileView::Kind::block_device;
  if (S_ISREG(m)) return FileView::Kind::regular;
  if (S_ISDIR(m)) return FileView::Kind::directory;
  return FileView::Kind::other;
}

// lstat_last lstat()s the last component of path inside root (its parent
// resolved inside root): false when the parent or the name does not exist.
bool lstat_last(const sfs::path& root, const std::string& path, struct stat& st) {
  sfs::path p(path);
  std::string name = p.filename().string();
  if (name.empty()) return false;
  try {
    fs::Fd dir = fs::open_in_root(root, relative(p.parent_path().string()));
    return ::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

ProcessView parse_status(std::string_view text, const std::string& what) {
  ProcessView v;
  auto id_column = [&](std::string_view key) {
    auto line = value_of(text, key);
    auto f = line ? fields(*line) : std::vector<std::string_view>{};
    std::optional<std::uint32_t> id = f.size() == 4 ? number<std::uint32_t>(f[3]) : std::nullopt;
    if (!id) throw Error(what + ": no well-formed " + std::string(key) + ": line");
    return *id;
  };
  v.uid = id_column("Uid");
  v.gid = id_column("Gid");
  if (auto groups = value_of(text, "Groups"))
    for (auto g : fields(*groups)) {
      auto id = number<std::uint32_t>(g);
      if (!id) throw Error(what + ": malformed Groups: line");
      v.groups.push_back(*id);
    }
  auto cap = value_of(text, "CapEff");
  auto bits = cap ? number<std::uint64_t>(*cap, 16) : std::nullopt;
  if (!bits) throw Error(what + ": no well-formed CapEff: line");
  v.cap_effective = *bits;
  return v;
}

void parse_limits(std::string_view text, const std::string& what, ProcessView& v) {
  constexpr std::string_view key = "Max locked memory";
  std::size_t at = text.find(key);
  if (at == std::string_view::npos) throw Error(what + ": no " + q(key) + " line");
  std::size_t end = text.find('\n', at);
  auto f = fields(text.substr(at + key.size(), end == std::string_view::npos ? end : end - at - key.size()));
  if (f.empty()) throw Error(what + ": malformed " + q(key) + " line");
  if (f[0] == "unlimited") {
    v.memlock_soft.reset();
    return;
  }
  auto n = number<std::uint64_t>(f[0]);
  if (!n) throw Error(what + ": malformed " + q(key) + " line");
  v.memlock_soft = *n;
}

ProcessView read_process(pid_t pid, const sfs::path& proc_root) {
  sfs::path dir = proc_root / std::to_string(pid);
  std::string status = (dir / "status").string();
  ProcessView v = parse_status(fs::read_regular_file(status, 1 << 16), status);
  std::string limits = (dir / "limits").string();
  parse_limits(fs::read_regular_file(limits, 1 << 16), limits, v);
  return v;
}

std::string_view kind_name(FileView::Kind k) {
  switch (k) {
    case FileView::Kind::missing:
      return "missing";
    case FileView::Kind::dangling_symlink:
      return "a dangling symlink";
    case FileView::Kind::char_device:
      return "a character device";
    case FileView::Kind::block_device:
      return "a block device";
    case FileView::Kind::regular:
      return "a regular file";
    case FileView::Kind::directory:
      return "a directory";
    case FileView::Kind::other:
      return "a FIFO or socket";
  }
  return "?";
}

FileView look_at(const sfs::path& root, const std::string& path) {
  FileView v;
  struct stat last {};
  v.symlink = lstat_last(root, path, last) && S_ISLNK(last.st_mode);
  struct stat st {};
  try {
    fs::Fd fd = fs::open_in_root(root, relative(path));
    if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + q(path));
  } catch (const fs::NotFound&) {
    v.kind = v.symlink ? FileView::Kind::dangling_symlink : FileView::Kind::missing;
    return v;
  } catch (const Error& e) {
    v.kind = FileView::Kind::missing;
    v.error = e.what();
    return v;
  }
  v.kind = kind_of(st.st_mode);
  if (v.is_device()) {
    v.major = major(st.st_rdev);
    v.minor = minor(st.st_rdev);
  }
  v.mode = st.st_mode & 07777;
  v.uid = st.st_uid;
  v.gid = st.st_gid;
  v.dev = st.st_dev;
  return v;
}

std::optional<std::string> read_in_root(const sfs::path& root, const std::string& path, std::size_t max_bytes) {
  auto f = fs::read_file_in_root(root, relative(path), max_bytes);
  if (!f) return std::nullopt;
  return std::move(f->content);
}

std::vector<std::string> list_in_root(const sfs::path& root, const std::string& path) {
  std::vector<std::string> names;
  try {
    fs::Fd dir = fs::open_in_root(root, relative(path));
    fs::Fd readable(::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!readable) return names;
    std::vector<fs::DirEntry> entries;
    if (!fs::list_directory(readable.get(), entries)) return names;
    for (auto& e : entries) names.push_back(std::move(e.name));
  } catch (const Error&) {
  }
  return names;
}

bool may_open(const ProcessView& v, std::uint32_t uid, std::uint32_t gid, std::uint32_t mode, std::string_view access,
              bool owner_mapped) {
  constexpr int kCapDacOverride = 1;
  constexpr int kCapDacReadSearch = 2;
  if (owner_mapped && v.has_cap(kCapDacOverride)) return true;
  if (owner_mapped && access == "r" && v.has_cap(kCapDacReadSearch)) return true;
  unsigned bits;
  if (v.uid == uid) {
    bits = (mode >> 6) & 7;
  } else {
    bool member = v.gid == gid;
    for (auto g : v.groups) member = member || g == gid;
    bits = member ? (mode >> 3) & 7 : mode & 7;
  }
  for (char a : access) {
    if (a == 'r' && !(bits & 4)) return false;
    if (a == 'w' && !(bits & 2)) return false;
  }
  return true;
}

}  // namespace specshim::live
