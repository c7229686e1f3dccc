// SPDX-License-Identifier: Apache-2.0
// Looking at a running container without changing it (specshim diagnose):
// its process's ids, capabilities and limits from /proc/PID, and the files
// of its root as its processes see them, through /proc/PID/root resolved
// with RESOLVE_IN_ROOT. Nothing here enters a namespace or opens a device
// node: a file is reached with O_PATH and only fstat'ed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specshim::live {

// ProcessView is a process as the host sees it: ids are host ids (the
// kernel shows /proc/PID/status mapped into the reader's user namespace).
struct ProcessView {
  std::uint32_t uid = 0;              // effective (fsuid: what file access uses)
  std::uint32_t gid = 0;              // effective (fsgid)
  std::vector<std::uint32_t> groups;  // supplementary
  std::uint64_t cap_effective = 0;    // CapEff bits
  // memlock_soft is RLIMIT_MEMLOCK's soft limit in bytes; nullopt: unlimited.
  std::optional<std::uint64_t> memlock_soft;
  bool has_cap(int cap) const { return cap >= 0 && cap < 64 && (cap_effective >> cap) & 1; }
};

// parse_status reads the Uid/Gid (the fourth, fs, column), Groups and CapEff
// lines of /proc/PID/status; parse_limits the "Max locked memory" line of
// /proc/PID/limits into v. Both throw Error naming what (the file) when a
// line they need is missing or malformed.
ProcessView parse_status(std::string_view text, const std::string& what);
void parse_limits(std::string_view text, const std::string& what, ProcessView& v);

// read_process reads both files of pid below proc_root ("/proc").
ProcessView read_process(pid_t pid, const std::filesystem::path& proc_root = "/proc");

// FileView is what is at a path inside a root (lstat of the last component,
// and stat of what it resolves to, inside the root).
struct FileView {
  enum class Kind { missing, dangling_symlink, char_device, block_device, regular, directory, other };
  Kind kind = Kind::missing;
  bool symlink = false;    // the last component is a symlink (resolved inside the root)
  std::string error;       // why it could not be looked at (a loop, a non-directory on the way)
  std::int64_t major = 0;  // char/block: the node's numbers
  std::int64_t minor = 0;
  std::uint32_t mode = 0;  // permission bits
  std::uint32_t uid = 0;   // owner, host ids
  std::uint32_t gid = 0;
  std::uint64_t dev = 0;  // the filesystem it lives on (st_dev)
  bool is_device() const { return kind == Kind::char_device || kind == Kind::block_device; }
  char type() const { return kind == Kind::block_device ? 'b' : 'c'; }
};
std::string_view kind_name(FileView::Kind k);  // "missing", "a dangling symlink", "a character device", ...

// look_at describes path (absolute, as the container's processes see it)
// below root (/proc/PID/root, or a rootfs directory in tests), never
// leaving root and never opening the file itself.
FileView look_at(const std::filesystem::path& root, const std::string& path);

// read_in_root reads a regular file below root of at most max_bytes;
// nullopt when it does not exist. Throws Error for anything that is not a
// regular file, for a larger file and for resolution errors.
std::optional<std::string> read_in_root(const std::filesystem::path& root, const std::string& path,
                                        std::size_t max_bytes);

// list_in_root lists the names in directory path below root; empty when it
// does not exist or is not a directory.
std::vector<std::string> list_in_root(const std::filesystem::path& root, const std::string& path);

// may_open reports whether a process with v's ids may open a file of this
// owner and mode for access ("r", "w" or "rw"): owner bits when its uid
// owns it, group bits when its gid or a supplementary group does, else the
// other bits; CAP_DAC_OVERRIDE allows any access, CAP_DAC_READ_SEARCH "r"
// alone, each when owner_mapped (a capability counts in a user namespace
// only for a file whose owner and group are mapped into it).
bool may_open(const ProcessView& v, std::uint32_t uid, std::uint32_t gid, std::uint32_t mode, std::string_view access,
              bool owner_mapped = true);

}  // namespace specshim::live
