// SPDX-License-Identifier: Apache-2.0
#include "specshim/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include "specshim/error.h"

namespace specshim::fs {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string q(const std::filesystem::path& p) { return "`" + p.string() + "`"; }

}  // namespace

std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw_errno("open " + q(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + q(path));
  if (!S_ISREG(st.st_mode)) throw Error("read " + q(path) + ": not a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_bytes)
    throw Error("read " + q(path) + ": file is " + std::to_string(st.st_size) + " bytes, the limit is " +
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
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + q(path));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes)
    throw Error("read " + q(path) + ": file is larger than the limit of " + std::to_string(max_bytes) + " bytes");
  out.resize(got);
  return out;
}

void write_file_atomic(const std::filesystem::path& dir, std::string_view name, std::string_view content,
                       mode_t mode) {
  std::random_device rd;
  std::string tmp_name = "." + std::string(name) + ".specshim-" + std::to_string(::getpid()) + "-" +
                         std::to_string(rd() & 0xffffff) + ".tmp";
  std::filesystem::path tmp = dir / tmp_name;
  std::filesystem::path target = dir / std::string(name);

  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0) throw_errno("open bundle directory " + q(dir));
  Fd fd(::openat(dfd.get(), tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (fd.get() < 0) throw_errno("create " + q(tmp));
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
  fault_point("after-temp-write");
  if (::fsync(fd.get()) != 0) fail("fsync " + q(tmp));
  if (::close(fd.release()) != 0) fail("close " + q(tmp));
  fault_point("before-rename");
  if (::renameat(dfd.get(), tmp_name.c_str(), dfd.get(), std::string(name).c_str()) != 0)
    fail("rename " + q(tmp) + " to " + q(target));
  fault_point("after-rename");
  if (::fsync(dfd.get()) != 0) throw_errno("fsync " + q(dir));
}

void fault_point(const char* point) {
  static const char* armed = std::getenv("SPECSHIM_FAULT");
  if (armed && std::strcmp(armed, point) == 0) ::kill(::getpid(), SIGKILL);
}

}  // namespace specshim::fs
