// SPDX-License-Identifier: Apache-2.0
#include "host_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "specshim/error.h"

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
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw_errno("stat host device node `" + path + "`");
  if (!S_ISLNK(st.st_mode)) return lstat_device(path);
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) throw_errno("resolve host device node `" + path + "`");
  std::string target = buf;
  std::string root = dev_dir.empty() || dev_dir.back() != '/' ? dev_dir + "/" : dev_dir;
  if (!outside_ok && target.rfind(root, 0) != 0 && root != "/")
    throw Error("host device node `" + path + "` is a symlink to `" + target + "`, outside " +
                root.substr(0, root.size() - 1) +
                " (set [devices-cgroup] follow-symlinks-outside-dev = true to allow it)");
  return lstat_device(target);
}

}  // namespace specshim
