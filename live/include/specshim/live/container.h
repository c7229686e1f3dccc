// SPDX-License-Identifier: Apache-2.0
// A running container as the low-level runtime sees it, and making or
// removing device nodes inside it: in its mount namespace only, never its
// user namespace.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "specshim/live/cgroup_devices.h"

namespace specshim::live {

// ContainerState is what `<runtime> --root ROOT state ID` says.
struct ContainerState {
  std::string id;
  std::string status;  // "created", "running", "stopped", "paused"
  pid_t pid = 0;
  std::filesystem::path bundle;
};
// runtime_state runs the runtime's `state` and parses its JSON. Throws Error
// naming the container and the runtime's own message.
ContainerState runtime_state(const std::filesystem::path& runtime, const std::string& root, const std::string& id);

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

// make_node makes the node inside the mount namespace of pid (a forked child
// that setns()es CLONE_NEWNS only): parent directories 0755, openat2
// RESOLVE_IN_ROOT below "/", mknod, or a bind mount of host_path onto an
// empty file when the container has its own user namespace. An existing
// path that is the same device is left alone (returns a no-op Undo); any
// other existing path is an error. The Undo removes what was made.
Undo make_node(pid_t pid, const NodeRequest& node);

// bind_mount mounts host_path (a file or directory on the host, opened with
// open_tree(OPEN_TREE_CLONE) before entering) at container_path inside the
// mount namespace of pid (move_mount), read-only when asked. The target is
// made like make_node's (an empty file or a 0755 directory) when missing.
// The Undo unmounts it and removes what was made.
Undo bind_mount(pid_t pid, const std::string& host_path, const std::string& container_path, bool read_only);

// remove_node removes the node at container_path if it is that device.
void remove_node(pid_t pid, const NodeRequest& node);

}  // namespace specshim::live
