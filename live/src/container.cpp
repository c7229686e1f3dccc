// SPDX-License-Identifier: Apache-2.0
// Nodes and mounts made in a running container's mount namespace by a forked
// child: the child opens what it needs on the host, setns()es CLONE_NEWNS
// only (so host root's capabilities apply: the user namespace is never
// entered), resolves the container path inside the new root and answers
// over a pipe.
#include "specshim/live/container.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "specshim/command.h"
#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/spec.h"

namespace specshim::live {
namespace {

using namespace std::chrono_literals;

constexpr auto kChildTimeout = 10s;
constexpr std::size_t kMaxAnswer = 1 << 20;

// ---- the child in the container's mount namespace ----

// proc_ns opens /proc/PID/ns/NAME.
fs::Fd proc_ns(pid_t pid, const char* name) {
  std::string path = "/proc/" + std::to_string(pid) + "/ns/" + name;
  fs::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + q(path));
  return fd;
}

// in_mount_ns forks a child that runs body; body opens what it needs on the
// host, then calls enter() to join pid's mount namespace. The string body
// returns (or the message of what it threw) comes back over a pipe.
std::string in_mount_ns(const Process& process,
                        const std::function<std::string(const std::function<void()>& enter)>& body) {
  pid_t pid = process.pid();
  fs::Fd ns = proc_ns(pid, "mnt");
  process.require_alive();  // after the open: the namespace is the live container process's
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw_errno("pipe");
  fs::Fd rd(pipefd[0]), wr(pipefd[1]);
  pid_t child = ::fork();
  if (child < 0) throw_errno("fork");
  if (child == 0) {
    rd.reset();
    std::string answer;
    try {
      auto enter = [&] {
        if (::setns(ns.get(), CLONE_NEWNS) != 0) throw_errno("enter the mount namespace of pid " + std::to_string(pid));
        if (::chdir("/") != 0) throw_errno("chdir to the container's /");
      };
      answer = "O" + body(enter);
    } catch (const std::exception& e) {
      answer = "E" + describe(e);
    }
    const char* p = answer.data();
    std::size_t left = answer.size();
    while (left > 0) {
      ssize_t n = ::write(wr.get(), p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  wr.reset();
  std::string answer;
  bool done = read_until({{rd.get(), &answer}}, kMaxAnswer, std::chrono::steady_clock::now() + kChildTimeout);
  if (!done) ::kill(child, SIGKILL);
  int status = wait_status(child);
  if (!done) throw Error("no answer from the child in the container within 10 s (killed)");
  if (answer.empty())
    throw Error("the child in the container ended without an answer (status " + std::to_string(status) + ")");
  if (answer[0] == 'E') throw Error(answer.substr(1));
  return answer.substr(1);
}

// Parent is the container path's directory, opened inside the container's
// root, and the dirs made on the way there.
struct Parent {
  fs::Fd fd;  // empty when missing (and not created)
  std::string name;
  std::vector<std::string> made;  // "dev/dri", outermost first
};

// as_owner runs a call that creates a file in dirfd. In a user-namespaced
// container's own filesystems (its /dev tmpfs) a new file's owner must be
// mapped there and host root is not (EOVERFLOW): the call is then retried
// with the directory owner's fsuid/fsgid, which the container maps.
// CAP_SYS_ADMIN stays; the fs capabilities come back with fsuid 0.
int as_owner(int dirfd, const std::function<int()>& create) {
  int rc = create();
  if (rc == 0 || errno != EOVERFLOW) return rc;
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return -1;
  ::setfsgid(st.st_gid);
  ::setfsuid(st.st_uid);
  rc = create();
  int err = errno;
  ::setfsuid(0);
  ::setfsgid(0);
  errno = err;
  return rc;
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 1;
  while (i <= path.size()) {
    auto slash = path.find('/', i);
    if (slash == std::string::npos) slash = path.size();
    out.push_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  return out;
}

void remove_dirs(const std::vector<std::string>& made) {
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    auto slash = it->rfind('/');
    std::string parent = slash == std::string::npos ? "." : it->substr(0, slash);
    std::string name = slash == std::string::npos ? *it : it->substr(slash + 1);
    try {
      fs::Fd p = fs::open_in_root("/", parent);
      ::unlinkat(p.get(), name.c_str(), AT_REMOVEDIR);  // only an empty one goes
    } catch (const std::exception&) {
    }
  }
}

// open_parent resolves the parent of path below "/" (the container's root
// after enter) with RESOLVE_IN_ROOT: no "..", symlink or magic link leads
// out of it. With create, missing directories are made 0755.
Parent open_parent(const std::string& path, bool create) {
  auto comps = components(path);
  Parent out;
  out.name = comps.back();
  comps.pop_back();
  fs::Fd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur) throw_errno("open the container's /");
  std::string prefix;
  for (const auto& c : comps) {
    std::string next = prefix.empty() ? c : prefix + "/" + c;
    fs::Fd fd;
    try {
      fd = fs::open_in_root("/", next);
    } catch (const fs::NotFound&) {
      if (!create) return Parent{};
      if (as_owner(cur.get(), [&] { return ::mkdirat(cur.get(), c.c_str(), 0755); }) != 0 && errno != EEXIST) {
        int err = errno;
        remove_dirs(out.made);
        throw_errno("make directory " + q("/" + next), err);
      }
      out.made.push_back(next);
      fd = fs::open_in_root("/", next);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + q("/" + next));
    if (!S_ISDIR(st.st_mode)) {
      remove_dirs(out.made);
      throw Error(q("/" + next) + " is not a directory");
    }
    cur = std::move(fd);
    prefix = next;
  }
  out.fd = std::move(cur);
  return out;
}

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

std::string check_container_path(const std::string& path) {
  if (path.empty() || path[0] != '/') return "must be an absolute path";
  if (path == "/") return "must name a file, not /";
  if (contains_control(path)) return "must not contain control characters";
  for (const auto& c : components(path)) {
    if (c.empty()) return "must not contain an empty component (//) or end in /";
    if (c == "." || c == "..") return "must not contain . or .. (it would leave the container's root)";
  }
  return "";
}

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
