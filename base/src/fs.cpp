// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "specshim/base/error.h"

namespace specshim::fs {

std::string clean_path(std::string_view path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

namespace {

std::string q(const std::filesystem::path& p) {
  return "`" + p.string() + "`";
}

std::string file_type(const struct stat& st) {
  switch (st.st_mode & S_IFMT) {
    case S_IFREG:
      return "regular file";
    case S_IFDIR:
      return "directory";
    case S_IFIFO:
      return "fifo";
    case S_IFCHR:
      return "character device";
    case S_IFBLK:
      return "block device";
    case S_IFSOCK:
      return "socket";
    case S_IFLNK:
      return "symlink";
    default:
      return "unknown type";
  }
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

// It reads up to max+1 bytes whatever st says, so a file that grows after
// fstat still fails instead of being cut short.
std::string read_open_file(int fd, const struct stat& st, std::size_t max_bytes, const std::string& what) {
  if (static_cast<std::size_t>(st.st_size) > max_bytes)
    throw Error("read " + what + ": file is " + std::to_string(st.st_size) + " bytes, the limit is " +
                std::to_string(max_bytes));
  // One byte more than fstat said, so a file that grew since is noticed.
  std::string out;
  out.resize(std::min(static_cast<std::size_t>(st.st_size), max_bytes) + 1);
  std::size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (out.size() > max_bytes) break;
      out.resize(std::min(max_bytes + 1, out.size() * 2));
    }
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + what);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes)
    throw Error("read " + what + ": file is larger than the limit of " + std::to_string(max_bytes) + " bytes");
  out.resize(got);
  return out;
}

std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) throw_errno("open " + q(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + q(path));
  if (!S_ISREG(st.st_mode)) throw Error("read " + q(path) + ": not a regular file");
  return read_open_file(fd.get(), st, max_bytes, q(path));
}

namespace {

// A named temp file is "." + name + kTempMark + pid + "-" + random + kTempSuffix,
// the name remove_stale_temps looks for. Older specshims used the same name.
constexpr std::string_view kTempMark = ".specshim-";
constexpr std::string_view kTempSuffix = ".tmp";

std::string temp_name(std::string_view name) {
  // getrandom(2), not std::random_device: that one probes the CPU for
  // RDRAND first, and CPUID traps to the hypervisor on a VM.
  // Any value will do: O_EXCL or linkat's EEXIST catch a clash.
  std::uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r))
    r = static_cast<std::uint32_t>(::time(nullptr));
  return "." + std::string(name) + std::string(kTempMark) + std::to_string(::getpid()) + "-" +
         std::to_string(r & 0xffffff) + std::string(kTempSuffix);
}

// fill gives a new temp file fd its mode (the umask must not narrow the
// original one) and content, and fsyncs it; what names it in errors.
void fill(int fd, std::string_view name, std::string_view content, mode_t mode, const std::optional<FileOwner>& owner,
          const std::string& what) {
  // chown before chmod: a chown clears the set-id bits that a mode may hold.
  if (owner && ::fchown(fd, owner->uid, owner->gid) != 0)
    throw_errno("chown " + what + " to " + std::to_string(owner->uid) + ":" + std::to_string(owner->gid));
  if (::fchmod(fd, mode) != 0) throw_errno("chmod " + what);
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write " + what);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  fault_point(name, "after-temp-write");
  if (::fsync(fd) != 0) throw_errno("fsync " + what);
}

// link_unnamed gives the O_TMPFILE file fd the name `to` in dfd and returns
// 0 or an errno. It links through /proc/self/fd, which needs no capability;
// without /proc it tries the AT_EMPTY_PATH form, which older kernels allow
// only with CAP_DAC_READ_SEARCH (ENOENT without it; 6.18 allows the file's
// opener).
int link_unnamed(int fd, int dfd, const std::string& to) {
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), dfd, to.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
  if (errno != ENOENT) return errno;
  return ::linkat(fd, "", dfd, to.c_str(), AT_EMPTY_PATH) == 0 ? 0 : errno;
}

// write_unnamed is write_file_atomic through an O_TMPFILE file: the content
// is written and fsync'd with no name in dir, so a kill up to then leaves
// nothing. A new file is then linked under its own name (linkat never
// replaces, so that is atomic and leaves nothing either). An existing one
// cannot be: Linux has no call that puts an unnamed inode over a name, and
// linkat fails with EEXIST. So the whole file is linked to a temp name and
// renamed over the target at once; only a kill between those two calls
// (no data written, no fsync between them) leaves a temp file, whole, which
// the next create's remove_stale_temps deletes. RENAME_EXCHANGE does not
// help: the old file would then sit under the temp name until an unlink.
// Returns false when the filesystem has no O_TMPFILE or the file cannot be
// linked (no /proc, and flink refused); nothing was created then.
bool write_unnamed(int dfd, const std::filesystem::path& dir, std::string_view name, std::string_view content,
                   mode_t mode, const std::optional<FileOwner>& owner) {
  std::string target(name);
  Fd fd(::openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode));
  if (!fd) {
    // Old kernels see O_DIRECTORY | O_WRONLY (EISDIR); filesystems without it say EOPNOTSUPP (or EINVAL, ENOENT).
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL || errno == ENOENT) return false;
    throw_errno("create unnamed file in " + q(dir));
  }
  std::string what = "unnamed file for " + q(dir / target);
  fill(fd.get(), name, content, mode, owner, what);
  int err = link_unnamed(fd.get(), dfd, target);
  if (err == EEXIST) {
    std::string tmp_name = temp_name(name);
    err = link_unnamed(fd.get(), dfd, tmp_name);
    if (err == 0) {
      fault_point(name, "before-rename");
      if (::renameat(dfd, tmp_name.c_str(), dfd, target.c_str()) != 0) {
        err = errno;
        ::unlinkat(dfd, tmp_name.c_str(), 0);
        throw_errno("rename " + q(dir / tmp_name) + " to " + q(dir / target), err);
      }
      return true;
    }
    target = tmp_name;
  }
  if (err == 0) return true;
  if (err == ENOENT) return false;
  throw_errno("link " + what + " as " + q(dir / target), err);
}

// write_named is write_file_atomic through a named temp file, for
// filesystems without O_TMPFILE: a kill at any point between its creation
// and the rename leaves it behind (maybe partial) for remove_stale_temps.
void write_named(int dfd, const std::filesystem::path& dir, std::string_view name, std::string_view content,
                 mode_t mode, const std::optional<FileOwner>& owner) {
  std::string tmp_name = temp_name(name);
  std::filesystem::path tmp = dir / tmp_name;
  Fd fd(::openat(dfd, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) throw_errno("create " + q(tmp));
  try {
    fill(fd.get(), name, content, mode, owner, q(tmp));
    if (::close(fd.release()) != 0) throw_errno("close " + q(tmp));
    fault_point(name, "before-rename");
    if (::renameat(dfd, tmp_name.c_str(), dfd, std::string(name).c_str()) != 0)
      throw_errno("rename " + q(tmp) + " to " + q(dir / std::string(name)));
  } catch (const Error&) {
    ::unlinkat(dfd, tmp_name.c_str(), 0);
    throw;
  }
}

// is_number: a non-empty run of at most max decimal digits, no leading zero.
bool is_number(std::string_view s, std::size_t max) {
  return !s.empty() && s.size() <= max && s[0] != '0' &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void write_file_atomic(const std::filesystem::path& dir, std::string_view name, std::string_view content, mode_t mode,
                       TempFile temp, const std::optional<FileOwner>& owner) {
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd) throw_errno("open bundle directory " + q(dir));
  if (temp == TempFile::named || !write_unnamed(dfd.get(), dir, name, content, mode, owner))
    write_named(dfd.get(), dir, name, content, mode, owner);
  fault_point(name, "after-rename");
  if (::fsync(dfd.get()) != 0) throw_errno("fsync " + q(dir));
}

std::optional<pid_t> temp_file_owner(std::string_view entry) {
  // "." name ".specshim-" pid "-" random ".tmp"; name is a bundle file name
  // (never starts with "."), pid a positive pid, random at most 0xffffff.
  if (entry.size() < 2 || entry[0] != '.' || entry[1] == '.' || !entry.ends_with(kTempSuffix)) return std::nullopt;
  entry.remove_suffix(kTempSuffix.size());
  std::size_t mark = entry.rfind(kTempMark);
  if (mark == std::string_view::npos || mark < 2) return std::nullopt;
  std::string_view numbers = entry.substr(mark + kTempMark.size());
  std::size_t dash = numbers.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view pid = numbers.substr(0, dash), random = numbers.substr(dash + 1);
  if (!is_number(pid, 10) || !(random == "0" || is_number(random, 8))) return std::nullopt;
  long long value = std::stoll(std::string(pid));
  if (value > std::numeric_limits<pid_t>::max()) return std::nullopt;
  return static_cast<pid_t>(value);
}

bool list_directory(int dirfd, std::vector<DirEntry>& entries) {
  alignas(dirent64) char buf[8192];
  for (;;) {
    ssize_t n = ::getdents64(dirfd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + at);
      at += e->d_reclen;
      std::string_view name(e->d_name);
      if (name != "." && name != "..") entries.push_back({std::string(name), e->d_type});
    }
  }
}

std::vector<std::string> remove_stale_temps(const std::filesystem::path& dir) {
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd) throw_errno("open bundle directory " + q(dir));
  std::vector<DirEntry> entries;
  if (!list_directory(dfd.get(), entries)) throw_errno("list bundle directory " + q(dir));
  std::vector<std::string> stale;
  for (const auto& e : entries) {
    std::optional<pid_t> owner = temp_file_owner(e.name);
    // The writer is gone, or is this process, which has no write in flight
    // while it scans. A live writer (or a reused pid) keeps its file.
    if (owner && (*owner == ::getpid() || (::kill(*owner, 0) != 0 && errno == ESRCH))) stale.push_back(e.name);
  }
  std::vector<std::string> removed;
  for (const std::string& name : stale) {
    struct stat st {};
    if (::fstatat(dfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::unlinkat(dfd.get(), name.c_str(), 0) != 0) {
      if (errno == ENOENT) continue;
      throw_errno("remove stale temp file " + q(dir / name));
    }
    removed.push_back(name);
  }
  return removed;
}

namespace {

// kMaxSymlinks matches the kernel's limit (MAXSYMLINKS) for one lookup.
constexpr int kMaxSymlinks = 40;

std::string in_root(const std::filesystem::path& root, const std::filesystem::path& relative) {
  return q(relative) + " in root " + q(root);
}

[[noreturn]] void throw_lookup(int err, const std::string& what) {
  if (err == ENOENT) throw NotFound("open " + what + ": " + std::strerror(err));
  throw_errno("open " + what, err);
}

// open_root opens the root directory itself. It is a trusted host path, so a
// failure here is a plain Error, never NotFound: a missing rootfs is not a
// missing file inside it.
Fd open_root(const std::filesystem::path& root) {
  Fd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open root " + q(root));
  return fd;
}

// openat2_in_root resolves with the kernel. Returns -errno.
int openat2_in_root(int root_fd, const std::filesystem::path& relative) {
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long fd = -1;
  // EAGAIN: the kernel saw a concurrent rename that could have let ".." out
  // of root and asks for a retry.
  for (int attempt = 0; attempt < 16; ++attempt) {
    fd = ::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
    if (fd >= 0 || (errno != EINTR && errno != EAGAIN)) break;
  }
  return fd < 0 ? -errno : static_cast<int>(fd);
}

std::deque<std::string> components(const std::string& path) {
  std::deque<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// walk_in_root is the userspace resolver for kernels without openat2. It
// opens one component at a time with O_PATH | O_NOFOLLOW relative to the
// directory descriptor reached so far, and resolves symlinks itself: an
// absolute target restarts at root, ".." pops a directory it opened before
// (and stays at root when there is none), so the walk never asks the kernel
// to follow a link or to go up and cannot leave root. Returns -errno.
int walk_in_root(int root_fd, const std::filesystem::path& relative) {
  std::vector<Fd> dirs;  // directories below root, innermost last
  auto current = [&] { return dirs.empty() ? root_fd : dirs.back().get(); };
  std::deque<std::string> todo = components(relative.string());
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      if (!dirs.empty()) dirs.pop_back();
      continue;
    }
    Fd fd(::openat(current(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return -errno;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxSymlinks) return -ELOOP;
      std::string target(PATH_MAX, '\0');
      ssize_t n = ::readlinkat(fd.get(), "", target.data(), target.size());
      if (n < 0) return -errno;
      if (n == 0) return -ENOENT;
      if (n == static_cast<ssize_t>(target.size())) return -ENAMETOOLONG;
      target.resize(static_cast<std::size_t>(n));
      if (target.front() == '/') dirs.clear();
      std::deque<std::string> parts = components(target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      dirs.push_back(std::move(fd));
      continue;
    }
    if (!todo.empty()) return -ENOTDIR;  // as the kernel: "file/" and "file/." are not a file
    return fd.release();
  }
  int fd = ::openat(current(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

}  // namespace

Fd open_in_root(const std::filesystem::path& root, const std::filesystem::path& relative, Resolve how) {
  Fd root_fd = open_root(root);
  int fd = how == Resolve::automatic ? openat2_in_root(root_fd.get(), relative) : -ENOSYS;
  if (fd == -ENOSYS) fd = walk_in_root(root_fd.get(), relative);
  if (fd < 0) throw_lookup(-fd, in_root(root, relative));
  return Fd(fd);
}

std::optional<RootFile> read_file_in_root(const std::filesystem::path& root, const std::filesystem::path& relative,
                                          std::size_t max_bytes, Resolve how) {
  std::string what = in_root(root, relative);
  Fd path_fd;
  try {
    path_fd = open_in_root(root, relative, how);
  } catch (const NotFound&) {
    return std::nullopt;
  }
  RootFile file;
  if (::fstat(path_fd.get(), &file.st) != 0) throw_errno("stat " + what);
  if (!S_ISREG(file.st.st_mode)) throw Error("read " + what + ": not a regular file (" + file_type(file.st) + ")");
  // Reopen the very inode that was checked; opening our own fd's magic link
  // is safe here, unlike following one that the image provides.
  std::string self = "/proc/self/fd/" + std::to_string(path_fd.get());
  Fd fd(::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) throw_errno("reopen " + what + " through " + q(self));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + what);
  if (st.st_dev != file.st.st_dev || st.st_ino != file.st.st_ino || !S_ISREG(st.st_mode))
    throw Error("reopen " + what + ": the file changed while it was opened");
  file.content = read_open_file(fd.get(), st, max_bytes, what);
  return file;
}

void fault_point(std::string_view file, std::string_view point) {
  static const char* armed = std::getenv("SPECSHIM_FAULT");
  if (!armed) return;
  std::string_view want(armed);
  if (want.size() == file.size() + 1 + point.size() && want.substr(0, file.size()) == file &&
      want[file.size()] == ':' && want.substr(file.size() + 1) == point)
    ::kill(::getpid(), SIGKILL);
}

}  // namespace specshim::fs
