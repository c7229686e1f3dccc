// SPDX-License-Identifier: Apache-2.0
// Making or removing device nodes and bind mounts inside a running container:
// in its mount namespace only, never its user namespace.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "specshim/live/cgroup_devices.h"
#include "specshim/live/process.h"

namespace specshim::live {

// NodeRequest is one node to make at container_path (absolute, inside the
// container's root as its processes see it).
struct NodeRequest {
  std::string container_path;
  std::string host_path;  // bind-mount source in a user-namespaced container
  char type = 'c';        // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint32_t mode = 0666;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};

// check_container_path returns "" for an absolute path of plain components
// (no "..", ".", empty component or control character; not "/") and
// otherwise why it is refused.
std::string check_container_path(const std::string& path);

// Placed is what make_node and bind_mount did.
enum class Method {
  existing,  // the path already was that device (or that mount): nothing made
  mknod,     // a node made with mknod
  bind,      // the host node (or file, or directory) bind-mounted there
};
const char* method_name(Method m);  // "existing", "mknod", "bind"
struct Placed {
  Method method = Method::existing;
  bool made_target = false;            // bind: the mount point was made (an empty file or a directory)
  std::vector<std::string> made_dirs;  // parent directories made on the way ("/dev/dri"), outermost first
  Undo undo;                           // removes what was made (a no-op for existing)
};

// make_node makes the node inside the mount namespace of pid (a forked child
// that setns()es CLONE_NEWNS only): parent directories 0755, openat2
// RESOLVE_IN_ROOT below "/", mknod with mode/uid/gid; or, when the
// container has its own user namespace, a bind mount of host_path onto an
// empty file (a mknod'ed node does not open on the nodev /dev of a user
// namespace). An existing path that is the same device is left alone
// (Method::existing); any other existing path is an error. Throws Error
// naming the container path and the cause.
Placed make_node(const Process& process, const NodeRequest& node);

// MountRequest is one bind mount of a host file or directory.
struct MountRequest {
  std::string host_path;
  std::string container_path;
  bool read_only = false;  // ro
  bool nosuid = false;
  bool nodev = false;
  bool noexec = false;
  bool recursive = false;  // rbind
};

// bind_mount mounts host_path (opened with open_tree(OPEN_TREE_CLONE) before
// entering) at container_path inside the mount namespace of pid
// (move_mount), with the ro/nosuid/nodev/noexec attributes asked for. The target is made (an empty file or a
// 0755 directory, like the source) when missing; an existing target of the
// other kind is an error, and a mount of the same source already there is
// left alone (Method::existing). The Undo unmounts it and removes what was
// made.
Placed bind_mount(const Process& process, const MountRequest& mount);

// remove_node removes the node at container_path when it is that device
// (unmounting it first when it is a bind mount, then removing the empty file
// under it). A missing path is not an error; another file there is.
void remove_node(const Process& process, const NodeRequest& node);

// remove_empty_dirs removes, deepest first, those of dirs (container paths
// of directories attach made) that are empty now, inside the mount
// namespace of pid, and returns the ones that are gone afterwards. A
// directory something else was put in stays.
std::vector<std::string> remove_empty_dirs(const Process& process, const std::vector<std::string>& dirs);

// remove_mount unmounts container_path when a mount is there, and removes
// the empty file or directory under it when remove_target.
void remove_mount(const Process& process, const std::string& container_path, bool remove_target);

}  // namespace specshim::live
