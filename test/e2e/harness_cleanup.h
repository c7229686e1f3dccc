// SPDX-License-Identifier: Apache-2.0
// What the e2e harness leaves behind of a containerd, cleared: its shims and
// container processes, runc state, mounts and cgroups; and the harness dirs
// of test processes killed before their teardown.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace specshim::e2e {

// read_or_empty is a file's content, or "" when it cannot be read.
std::string read_or_empty(const std::filesystem::path& p);
// cmdline of a process (a /proc/<pid> dir) as its argv.
std::vector<std::string> cmdline(const std::filesystem::path& proc);
// is_shim_of: argv is a containerd-shim-runc-v2 serving the containerd at socket.
bool is_shim_of(const std::vector<std::string>& argv, const std::string& socket);
// cgroup_root_of: the first cgroup path element of every pod of the harness at dir.
std::string cgroup_root_of(const std::filesystem::path& dir);
// clean_up_after leaves nothing behind of a harness dir's containerd once
// that containerd is gone.
void clean_up_after(const std::filesystem::path& dir) noexcept;
// sweep_stale cleans up and removes the harness dirs under base (but self)
// whose test process is gone without its teardown.
void sweep_stale(const std::filesystem::path& base, const std::filesystem::path& self) noexcept;

}  // namespace specshim::e2e
