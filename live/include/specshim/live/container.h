// SPDX-License-Identifier: Apache-2.0
// A running container as the low-level runtime sees it, and making or
// removing device nodes and bind mounts inside it: in its mount namespace
// only, never its user namespace.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "specshim/live/cgroup_devices.h"

namespace specshim::live {

// CommandResult is how a command ended and what it printed.
struct CommandResult {
  int exit_code = -1;  // exit status; -1 when killed or not started
  bool timed_out = false;
  std::string out;  // stdout (at most 1 MiB)
  std::string err;  // stderr (at most 64 KiB)
};
// run_command runs argv[0] (a path, or a name looked up in PATH) with argv, stdin from /dev/null, and
// kills it when it has not finished within timeout. Throws Error when it
// cannot be started.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// ContainerState is what `<runtime> --root ROOT state ID` says.
struct ContainerState {
  std::string id;
  std::string status;  // "created", "running", "stopped", "paused"
  pid_t pid = 0;
  std::filesystem::path bundle;
};
// runtime_state runs the runtime's `state` (without --root when root is
// empty) and parses its JSON. Throws Error naming the container and quoting
// the runtime's own message.
ContainerState runtime_state(const std::filesystem::path& runtime, const std::string& root, const std::string& id);

// runtime_list runs the runtime's `list --format json` (without --root when
// root is empty): every container it knows, in its order. Throws Error
// quoting the runtime's own message.
std::vector<ContainerState> runtime_list(const std::filesystem::path& runtime, const std::string& root);

// require_live throws Error naming the container unless it is created or
// running (a stopped container has no namespaces to enter).
void require_live(const ContainerState& state);

// Process is a container's init process held by a pidfd, so that the pid,
// once the kernel hands it to another process, cannot be mistaken for the
// container's: every entry into its namespaces opens /proc/PID/ns/* first
// and then checks that the pidfd's process is still alive (then those are
// its namespaces). Copies share the pidfd.
class Process {
 public:
  Process() = default;
  pid_t pid() const { return pid_; }
  // alive reports whether the process has not exited (the pidfd polls readable when it has).
  bool alive() const;
  // require_alive throws Error naming the pid when it has exited.
  void require_alive() const;

 private:
  friend Process pin(const std::filesystem::path&, const std::string&, const ContainerState&);
  pid_t pid_ = 0;
  std::shared_ptr<const int> fd_;  // the pidfd, closed with the last copy
};

// pin opens a pidfd for state.pid, then asks the runtime's state again: the
// pidfd holds the container's process when the runtime still names that pid
// and the container is created or running (runc checks the pid's start time
// against its own record, so a reused pid reads as stopped). Throws Error
// naming the container otherwise.
Process pin(const std::filesystem::path& runtime, const std::string& root, const ContainerState& state);

// has_own_user_namespace reports whether pid is in another user namespace
// than this process (/proc/PID/ns/user against /proc/self/ns/user).
bool has_own_user_namespace(pid_t pid);

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
