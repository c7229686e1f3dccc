// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/host_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "specshim/base/error.h"

namespace specshim {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symlink";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISREG(m)) return "a regular file";
  if (S_ISSOCK(m)) return "a socket";
  return "not a device";
}

}  // namespace

HostDevice lstat_device(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw_errno("stat host device node `" + path + "`");
  HostDevice d;
  if (S_ISCHR(st.st_mode))
    d.type = 'c';
  else if (S_ISBLK(st.st_mode))
    d.type = 'b';
  else if (S_ISFIFO(st.st_mode))
    d.type = 'p';
  else
    throw Error("host device node `" + path + "` is not a device node (" + kind_of(st.st_mode) + ")");
  if (d.type != 'p') {
    d.major = major(st.st_rdev);
    d.minor = minor(st.st_rdev);
  }
  d.mode = st.st_mode & 07777;
  return d;
}

HostDevice resolve_device(const std::string& path, const std::string& dev_dir, bool outside_ok) {
  std::filesystem::path root = std::filesystem::path(dev_dir).lexically_normal();
  auto inside = [&](const std::filesystem::path& p) {
    auto rel = p.lexically_relative(root);
    return !rel.empty() && *rel.begin() != "..";
  };
  std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  for (int hop = 0; hop < 40; ++hop) {
    // The directories are resolved by the kernel; the last component is looked at with lstat.
    char buf[PATH_MAX];
    if (!::realpath(p.parent_path().c_str(), buf)) throw_errno("resolve host device node `" + path + "`");
    std::filesystem::path real = std::filesystem::path(buf) / p.filename();
    bool followed = hop > 0 || real != p;
    if (followed && !outside_ok && !inside(real))
      throw Error("host device node `" + path + "` resolves through a symlink to `" + real.string() + "`, outside " +
                  root.string() + " (set [devices-cgroup] follow-symlinks-outside-dev = true to allow it)");
    struct stat st {};
    if (::lstat(real.c_str(), &st) != 0) throw_errno("stat host device node `" + path + "`");
    if (!S_ISLNK(st.st_mode)) return lstat_device(real.string());
    ssize_t n = ::readlink(real.c_str(), buf, sizeof buf - 1);
    if (n < 0) throw_errno("read symlink `" + real.string() + "`");
    std::filesystem::path target(std::string(buf, static_cast<std::size_t>(n)));
    p = (target.is_absolute() ? target : real.parent_path() / target).lexically_normal();
  }
  throw Error("host device node `" + path + "`: too many levels of symlinks");
}

}  // namespace specshim
