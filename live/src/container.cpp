// SPDX-License-Identifier: Apache-2.0
// Nodes and mounts made in a running container's mount namespace by a forked
// child: the child opens what it needs on the host, setns()es CLONE_NEWNS
// only (so host root's capabilities apply: the user namespace is never
// entered), resolves the container path inside the new root and answers
// over a pipe.
#include "specshim/live/container.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "container_path.h"
#include "mount_namespace.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/spec.h"

namespace specshim::live {
namespace {

const char* kind(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISLNK(m)) return "a symlink";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISREG(m)) return "a regular file";
  if (S_ISFIFO(m)) return "a FIFO";
  return "a socket";
}

std::string numbers(const NodeRequest& n) {
  return std::string(1, n.type) + " " + std::to_string(n.major) + ":" + std::to_string(n.minor);
}

bool same_device(const struct stat& st, const NodeRequest& n) {
  bool type_ok = n.type == 'b' ? S_ISBLK(st.st_mode) : S_ISCHR(st.st_mode);
  return type_ok && st.st_rdev == makedev(static_cast<unsigned>(n.major), static_cast<unsigned>(n.minor));
}

// make_file makes an empty file to mount over (never following a symlink there).
int make_file(int dirfd, const char* name) {
  return as_owner(dirfd, [&] {
    int fd = ::openat(dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) return -1;
    ::close(fd);
    return 0;
  });
}

bool is_mount_root(int dirfd, const std::string& name) {
  struct statx stx {};
  if (::statx(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0) return false;
  return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

// unmount detaches the mount at parent/name; the name is never followed.
void unmount(const Parent& p, const std::string& path) {
  if (::fchdir(p.fd.get()) != 0) throw_errno("chdir to the parent of " + q(path));
  if (::umount2(p.name.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) throw_errno("unmount " + q(path));
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    auto nl = s.find('\n', i);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(i, nl - i));
    i = nl + 1;
  }
  return out;
}

// clone_tree is a detached copy of the mount at host_path (open_tree), with
// the attributes of m when given.
fs::Fd clone_tree(const std::string& host_path, const MountRequest* m) {
  bool recursive = m && m->recursive;
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
  fs::Fd tree(::open_tree(AT_FDCWD, host_path.c_str(), flags));
  if (!tree) throw_errno("open_tree " + q(host_path) + " on the host");
  mount_attr attr{};
  if (m) {
    if (m->read_only) attr.attr_set |= MOUNT_ATTR_RDONLY;
    if (m->nosuid) attr.attr_set |= MOUNT_ATTR_NOSUID;
    if (m->nodev) attr.attr_set |= MOUNT_ATTR_NODEV;
    if (m->noexec) attr.attr_set |= MOUNT_ATTR_NOEXEC;
  }
  if (attr.attr_set != 0 &&
      ::mount_setattr(tree.get(), "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) != 0)
    throw_errno("set the attributes of the bind mount of " + q(host_path));
  return tree;
}

// remove_made removes, inside the container, what make_node or bind_mount
// made at path: the mount (when mounted), the node or mount point (when
// keep(st) says it is ours) and the directories made for it.
void remove_made(const Process& process, const std::string& path, bool mounted,
                 const std::function<bool(const struct stat&)>& ours, const std::vector<std::string>& dirs) {
  in_mount_ns(process, [&](const std::function<void()>& enter) {
    enter();
    Parent p = open_parent(path, false);
    if (p.fd) {
      if (mounted && is_mount_root(p.fd.get(), p.name)) unmount(p, path);
      struct stat st {};
      if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && ours(st))
        if (::unlinkat(p.fd.get(), p.name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0)
          throw_errno("remove " + q(path));
    }
    remove_dirs(dirs);
    return std::string();
  });
}

bool empty_placeholder(const struct stat& st) {
  return (S_ISREG(st.st_mode) && st.st_size == 0) || S_ISDIR(st.st_mode);
}

}  // namespace

const char* method_name(Method m) {
  switch (m) {
    case Method::existing:
      return "existing";
    case Method::mknod:
      return "mknod";
    case Method::bind:
      return "bind";
  }
  return "?";
}

Placed make_node(const Process& process, const NodeRequest& node) {
  if (auto why = check_container_path(node.container_path); !why.empty())
    throw Error("container path " + q(node.container_path) + ": " + why);
  bool bind = has_own_user_namespace(process.pid());
  std::string answer;
  try {
    answer = in_mount_ns(process, [&](const std::function<void()>& enter) {
      fs::Fd tree;
      if (bind) tree = clone_tree(node.host_path, nullptr);
      enter();
      ::umask(0);
      Parent p = open_parent(node.container_path, true);
      struct stat st {};
      if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (same_device(st, node)) return std::string("existing\n");
        throw Error("exists in the container and is " + std::string(kind(st.st_mode)) +
                    (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                         ? " " + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev))
                         : std::string()) +
                    ", not " + numbers(node));
      }
      if (errno != ENOENT) throw_errno("stat");
      const char* name = p.name.c_str();
      try {
        if (!bind) {
          mode_t type = node.type == 'b' ? S_IFBLK : S_IFCHR;
          dev_t dev = makedev(static_cast<unsigned>(node.major), static_cast<unsigned>(node.minor));
          if (::mknodat(p.fd.get(), name, type | (node.mode & 0777), dev) != 0) throw_errno("mknod");
          if (::fchownat(p.fd.get(), name, node.uid, node.gid, AT_SYMLINK_NOFOLLOW) != 0) {
            int err = errno;
            ::unlinkat(p.fd.get(), name, 0);
            throw_errno("chown to " + std::to_string(node.uid) + ":" + std::to_string(node.gid), err);
          }
        } else {
          if (make_file(p.fd.get(), name) != 0) throw_errno("make the mount point");
          if (::move_mount(tree.get(), "", p.fd.get(), name, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
            int err = errno;
            ::unlinkat(p.fd.get(), name, 0);
            throw_errno("bind-mount host node " + q(node.host_path), err);
          }
        }
      } catch (...) {
        remove_dirs(p.made);
        throw;
      }
      return std::string(bind ? "bind\n" : "mknod\n") + join_lines(p.made);
    });
  } catch (const Error& e) {
    throw Error("make " + numbers(node) + " at " + q(node.container_path) + " in the container: " + e.what());
  }
  auto lines = split_lines(answer);
  Placed placed;
  if (lines.empty() || lines[0] == "existing") {
    placed.undo = [] {};
    return placed;
  }
  placed.method = lines[0] == "bind" ? Method::bind : Method::mknod;
  std::vector<std::string> dirs(lines.begin() + 1, lines.end());
  for (const auto& d : dirs) placed.made_dirs.push_back("/" + d);
  placed.undo = [process, node, dirs, bind] {
    remove_made(
        process, node.container_path, bind,
        [&](const struct stat& st) { return bind ? empty_placeholder(st) : same_device(st, node); }, dirs);
  };
  return placed;
}

Placed bind_mount(const Process& process, const MountRequest& m) {
  if (auto why = check_container_path(m.container_path); !why.empty())
    throw Error("container path " + q(m.container_path) + ": " + why);
  std::string answer;
  try {
    answer = in_mount_ns(process, [&](const std::function<void()>& enter) {
      fs::Fd tree = clone_tree(m.host_path, &m);
      struct stat src {};
      if (::fstat(tree.get(), &src) != 0) throw_errno("stat " + q(m.host_path));
      enter();
      ::umask(0);
      Parent p = open_parent(m.container_path, true);
      const char* name = p.name.c_str();
      bool dir = S_ISDIR(src.st_mode);
      bool made = false;
      struct stat st {};
      try {
        if (::fstatat(p.fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
          if (st.st_dev == src.st_dev && st.st_ino == src.st_ino) return std::string("existing\n");
          if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) != dir)
            throw Error("exists in the container and is " + std::string(kind(st.st_mode)) + "; the host path is " +
                        kind(src.st_mode));
        } else if (errno != ENOENT) {
          throw_errno("stat");
        } else {
          int dirfd = p.fd.get();
          int rc = dir ? as_owner(dirfd, [&] { return ::mkdirat(dirfd, name, 0755); }) : make_file(dirfd, name);
          if (rc != 0) throw_errno("make the mount point");
          made = true;
        }
        if (::move_mount(tree.get(), "", p.fd.get(), name, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
          int err = errno;
          if (made) ::unlinkat(p.fd.get(), name, dir ? AT_REMOVEDIR : 0);
          throw_errno("bind-mount " + q(m.host_path), err);
        }
      } catch (...) {
        remove_dirs(p.made);
        throw;
      }
      return std::string("bind\n") + (made ? "made\n" : "kept\n") + join_lines(p.made);
    });
  } catch (const Error& e) {
    throw Error("bind-mount " + q(m.host_path) + " at " + q(m.container_path) + " in the container: " + e.what());
  }
  auto lines = split_lines(answer);
  Placed placed;
  if (lines.size() < 2 || lines[0] == "existing") {
    placed.undo = [] {};
    return placed;
  }
  placed.method = Method::bind;
  placed.made_target = lines[1] == "made";
  std::vector<std::string> dirs(lines.begin() + 2, lines.end());
  for (const auto& d : dirs) placed.made_dirs.push_back("/" + d);
  bool made = placed.made_target;
  std::string path = m.container_path;
  placed.undo = [process, path, dirs, made] {
    remove_made(
        process, path, true, [&](const struct stat& st) { return made && empty_placeholder(st); }, dirs);
  };
  return placed;
}

void remove_node(const Process& process, const NodeRequest& node) {
  if (auto why = check_container_path(node.container_path); !why.empty())
    throw Error("container path " + q(node.container_path) + ": " + why);
  try {
    in_mount_ns(process, [&](const std::function<void()>& enter) {
      enter();
      Parent p = open_parent(node.container_path, false);
      if (!p.fd) return std::string();
      struct stat st {};
      if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return std::string();
        throw_errno("stat");
      }
      if (!same_device(st, node))
        throw Error("it is " + std::string(kind(st.st_mode)) + ", not " + numbers(node) + ": left alone");
      if (is_mount_root(p.fd.get(), p.name)) {
        unmount(p, node.container_path);
        if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !empty_placeholder(st))
          return std::string();  // someone else's file under the mount: keep it
      }
      if (::unlinkat(p.fd.get(), p.name.c_str(), 0) != 0 && errno != ENOENT) throw_errno("remove");
      return std::string();
    });
  } catch (const Error& e) {
    throw Error("remove " + numbers(node) + " at " + q(node.container_path) + " in the container: " + e.what());
  }
}

std::vector<std::string> remove_empty_dirs(const Process& process, const std::vector<std::string>& dirs) {
  if (dirs.empty()) return {};
  std::vector<std::string> relative;
  for (const auto& d : dirs) {
    if (auto why = check_container_path(d); !why.empty()) throw Error("directory " + q(d) + ": " + why);
    relative.push_back(d.substr(1));
  }
  // Deepest first, whatever order they were made in.
  std::vector<std::string> order = relative;
  std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  std::string answer;
  try {
    answer = in_mount_ns(process, [&](const std::function<void()>& enter) {
      enter();
      std::vector<std::string> gone;
      for (const auto& d : order) {
        remove_dirs({d});  // only an empty one goes
        try {
          fs::open_in_root("/", d);
        } catch (const fs::NotFound&) {
          gone.push_back("/" + d);
        }
      }
      return join_lines(gone);
    });
  } catch (const Error& e) {
    throw Error("remove the directories attach made in the container: " + std::string(e.what()));
  }
  return split_lines(answer);
}

void remove_mount(const Process& process, const std::string& container_path, bool remove_target) {
  if (auto why = check_container_path(container_path); !why.empty())
    throw Error("container path " + q(container_path) + ": " + why);
  try {
    remove_made(process, container_path, true,
                [&](const struct stat& st) { return remove_target && empty_placeholder(st); }, {});
  } catch (const Error& e) {
    throw Error("remove the bind mount at " + q(container_path) + " in the container: " + e.what());
  }
}

}  // namespace specshim::live
