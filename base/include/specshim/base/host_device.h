// SPDX-License-Identifier: Apache-2.0
// Looking up device nodes on the host, for modifiers that fill in a device's
// type and numbers from the node it names (cdi, devices-cgroup).
#pragma once

#include <cstdint>
#include <string>

namespace specshim {

struct HostDevice {
  char type = 0;  // 'b', 'c' or 'p'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint32_t mode = 0;  // permission bits (st_mode & 07777)
};

// lstat_device describes the node at path without following a symlink there.
// Throws Error: "stat host device node `P`: No such file or directory",
// "host device node `P` is not a device node (a symlink)".
HostDevice lstat_device(const std::string& path);

// resolve_device is lstat_device for a path that may be or go through
// symlinks: they are followed, but when any was, every place the resolution
// goes through must lie under dev_dir unless outside_ok. Throws Error naming
// the path and where it led.
HostDevice resolve_device(const std::string& path, const std::string& dev_dir, bool outside_ok);

}  // namespace specshim
