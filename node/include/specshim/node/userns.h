// SPDX-License-Identifier: Apache-2.0
// What a spec's user namespace means for the files and device nodes
// specshim adds: the id mappings (linux.uidMappings / gidMappings) read from
// the spec, and how a device node reaches a user-namespaced container.
// docs/passwd.md ("User namespaces") and docs/cdi.md say why.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/spec.h"

namespace specshim::userns {

// IdRange is one line of a uid_map: container ids [container, container +
// size) are host ids [host, host + size).
struct IdRange {
  std::uint32_t container = 0;
  std::uint32_t host = 0;
  std::uint32_t size = 0;
  bool operator==(const IdRange&) const = default;
};

// IdMap is a spec's uidMappings or gidMappings.
struct IdMap {
  std::vector<IdRange> ranges;

  bool empty() const { return ranges.empty(); }
  // to_host is the host id that container id maps to, as the kernel maps it.
  std::optional<std::uint32_t> to_host(std::uint32_t container) const;
  // to_container is the id that host id has inside: nullopt when no range
  // holds it (the kernel then shows the overflow id, 65534, and a process
  // inside is never its owner).
  std::optional<std::uint32_t> to_container(std::uint32_t host) const;
  // describe is "0-65535 → 100000-165535" per range, for messages.
  std::string describe() const;
};

// UserNamespace is what the spec says about the container's user namespace.
struct UserNamespace {
  std::string path;  // the namespace entry's path: an existing namespace the container joins
  IdMap uids;
  IdMap gids;
  // known: both mappings are known (given in the spec, or read from the
  // joined namespace's process).
  bool known() const { return !uids.empty() && !gids.empty(); }
};

// read returns the spec's user namespace, or nullopt when it has none. A
// spec has one when linux.namespaces holds "user" or either mapping is
// non-empty, as runc decides. The mappings are the spec's; a spec that joins
// a namespace at /proc/PID/ns/user without giving them gets that process's
// uid_map and gid_map (read from proc_root, "/proc" but in tests), and any
// other path leaves them empty. Throws Error naming the field when a mapping
// is not an array of {containerID, hostID, size} with ids that fit 32 bits
// and ranges that do not wrap.
std::optional<UserNamespace> read(const Spec& spec, const std::filesystem::path& proc_root = "/proc");

// parse_id_map reads the text of /proc/PID/uid_map (lines "inside outside
// count"); what names the file in errors.
IdMap parse_id_map(std::string_view text, const std::string& what);

// has_user_namespace is read(spec).has_value() without reading the mappings.
bool has_user_namespace(const Spec& spec);

// In a user namespace runc cannot mknod a device node (CAP_MKNOD counts
// only in the initial namespace). runc 1.1 to 1.4 bind-mount the host file
// at the entry's own `path` instead, whatever its type and numbers say. A
// node whose host file lives at another path (CDI hostPath, a device
// plugin's host_path) is therefore written as a bind mount of the host node
// at the container path, plus its cgroup rule, and no linux.devices entry:
// the kernel then shows the host node's own type and numbers. The options
// are "bind" alone, as runc mounts its own device nodes: a flag to set
// would make runc remount, which the host /dev's locked flags can refuse.
inline constexpr std::string_view kDeviceBindOption = "bind";
Json device_bind_mount(const std::string& container_path, const std::string& host_path);

// binds_device reports whether a node at container_path from the host file
// at host_path ("" means the same path) must be written as
// device_bind_mount in this spec.
bool binds_device(const Spec& spec, std::string_view container_path, std::string_view host_path);

// erase_device_entry removes the linux.devices entries at path; it returns
// whether there were any. A node written as a bind mount must have none:
// runc would bind the host file at that path over the mount.
bool erase_device_entry(Spec& spec, std::string_view path);

}  // namespace specshim::userns
