// SPDX-License-Identifier: Apache-2.0
#include "specshim/fs.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <utility>
#include <vector>

#include "specshim/error.h"

namespace specshim::fs {
namespace {

std::string q(const std::filesystem::path& p) { return "`" + p.string() + "`"; }

// read_capped reads an open regular file (st is its fstat) of at most max
// bytes. It reads up to max+1 bytes whatever st says, so a file that grows
// after fstat still fails instead of being cut short.
std::string read_capped(int fd, const struct stat& st, std::size_t max_bytes, const std::string& what) {
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

std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) throw_errno("open " + q(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + q(path));
  if (!S_ISREG(st.st_mode)) throw Error("read " + q(path) + ": not a regular file");
  return read_capped(fd.get(), st, max_bytes, q(path));
}

void write_file_atomic(const std::filesystem::path& dir, std::string_view name, std::string_view content,
                       mode_t mode) {
  std::random_device rd;
  std::string tmp_name = "." + std::string(name) + ".specshim-" + std::to_string(::getpid()) + "-" +
                         std::to_string(rd() & 0xffffff) + ".tmp";
  std::filesystem::path tmp = dir / tmp_name;
  std::filesystem::path target = dir / std::string(name);

  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd) throw_errno("open bundle directory " + q(dir));
  Fd fd(::openat(dfd.get(), tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) throw_errno("create " + q(tmp));
  auto fail = [&](const std::string& what) {
    int err = errno;
    ::unlinkat(dfd.get(), tmp_name.c_str(), 0);
    throw_errno(what, err);
  };
  if (::fchmod(fd.get(), mode) != 0) fail("chmod " + q(tmp));  // umask must not narrow the original mode
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write " + q(tmp));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  fault_point(name, "after-temp-write");
  if (::fsync(fd.get()) != 0) fail("fsync " + q(tmp));
  if (::close(fd.release()) != 0) fail("close " + q(tmp));
  fault_point(name, "before-rename");
  if (::renameat(dfd.get(), tmp_name.c_str(), dfd.get(), std::string(name).c_str()) != 0)
    fail("rename " + q(tmp) + " to " + q(target));
  fault_point(name, "after-rename");
  if (::fsync(dfd.get()) != 0) throw_errno("fsync " + q(dir));
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
  file.content = read_capped(fd.get(), st, max_bytes, what);
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
