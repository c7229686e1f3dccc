// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/runtime_kind.h"

#include <array>

namespace specshim::runtime {
namespace {

// The tables keep one line per group of flags: clang-format would put one
// flag per line.
// clang-format off

// ---- runc 1.1–1.5 (main.go, create.go, run.go, restore.go) ----

constexpr Flag kRuncGlobal[] = {
    {"debug"}, {"log", true}, {"log-format", true}, {"root", true}, {"criu", true}, {"rootless", true},
    {"systemd-cgroup"}, {"help"}, {"h"}, {"version"}, {"v"},
};

// pidfd-socket: runc 1.2's create and run (runc#4045); go-runc 1.2.0, which
// containerd main vendors, sends it when its shim sets CreateOpts.PidfdSocket.
constexpr Flag kRuncCreate[] = {
    {"bundle", true}, {"b", true}, {"console-socket", true}, {"pid-file", true},
    {"no-pivot"}, {"no-new-keyring"}, {"preserve-fds", true}, {"pidfd-socket", true},
};

constexpr Flag kRuncRunOnly[] = {{"detach"}, {"d"}, {"keep"}, {"no-subreaper"}};

// The same set from 1.1 to 1.5, plus parent-path, which go-runc's
// CheckpointOpts sends when a parent checkpoint is set (containerd's restore
// line: restore --image-path I --work-path W [--parent-path P] --detach
// --pid-file F [--console-socket S] [--no-pivot] -no-subreaper --bundle B
// ID). runc's restore does not define it and fails on it; knowing that it
// takes a value keeps the id where it is, and runc then says so itself.
constexpr Flag kRuncRestore[] = {
    {"console-socket", true}, {"image-path", true}, {"work-path", true}, {"tcp-established"},
    {"ext-unix-sk"}, {"shell-job"}, {"file-locks"}, {"manage-cgroups-mode", true},
    {"bundle", true}, {"b", true}, {"detach"}, {"d"}, {"pid-file", true}, {"no-subreaper"}, {"no-pivot"},
    {"empty-ns", true}, {"auto-dedup"}, {"lazy-pages"}, {"lsm-profile", true}, {"lsm-mount-context", true},
    {"parent-path", true},
};

// ---- crun 1.x (argp tables of src/crun.c, create.c, run.c, restore.c;
// `crun <verb> --help` of 1.28) ----

constexpr Flag kCrunGlobal[] = {
    {"cgroup-manager", true}, {"debug"}, {"log", true}, {"log-format", true}, {"log-level", true},
    {"root", true}, {"rootless", true}, {"systemd-cgroup"}, {"help"}, {"usage"}, {"version"}, {"v"}, {"V"},
};

constexpr std::string_view kOtherSpecFile =
    "crun's --config names a spec file other than config.json, the one specshim completes";

constexpr Flag kCrunCreate[] = {
    {"bundle", true}, {"b", true}, {"console-socket", true}, {"config", true, kOtherSpecFile},
    {"f", true, kOtherSpecFile}, {"no-new-keyring"}, {"no-pivot"}, {"no-subreaper"}, {"pid-file", true},
    {"preserve-fds", true},
};

constexpr Flag kCrunRunOnly[] = {{"detach"}, {"d"}, {"keep"}};

constexpr Flag kCrunRestore[] = {
    {"bundle", true}, {"b", true}, {"console-socket", true}, {"detach"}, {"d"}, {"ext-unix-sk"},
    {"file-locks"}, {"image-path", true}, {"lsm-mount-context", true}, {"lsm-profile", true},
    {"manage-cgroups-mode", true}, {"network-lock"}, {"pid-file", true}, {"shell-job"}, {"tcp-close"},
    {"tcp-established"}, {"work-path", true},
};

// clang-format on

constexpr std::string_view kCrunOtherLogs[] = {"journald:", "syslog:"};

constexpr std::array kKinds = {
    Kind{"runc", "runc", "/run/runc", "", {}, kRuncGlobal, kRuncCreate, kRuncRunOnly, kRuncRestore},
    Kind{"crun", "crun", "/run/crun", "file:", kCrunOtherLogs, kCrunGlobal, kCrunCreate, kCrunRunOnly, kCrunRestore},
};

const Flag* find(std::span<const Flag> flags, std::string_view name) {
  for (const auto& f : flags)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace

std::span<const Kind> kinds() {
  return kKinds;
}

const Kind& kind_of(std::string_view path) {
  std::string_view file = path.substr(path.rfind('/') + 1);
  if (file == "crun" || file.rfind("crun-", 0) == 0) return kKinds[1];
  return kKinds[0];
}

const Flag* global_flag(std::string_view name) {
  for (const auto& k : kKinds)
    if (const Flag* f = find(k.global, name)) return f;
  return nullptr;
}

const Flag* command_flag(std::string_view verb, std::string_view name) {
  for (const auto& k : kKinds) {
    const Flag* f = verb == "restore" ? find(k.restore, name) : find(k.create, name);
    if (!f && verb == "run") f = find(k.run_only, name);
    if (f) return f;
  }
  return nullptr;
}

std::string_view log_file(std::string_view value) {
  for (const auto& k : kKinds) {
    for (std::string_view other : k.other_prefixes)
      if (value.rfind(other, 0) == 0) return {};
    if (!k.file_prefix.empty() && value.rfind(k.file_prefix, 0) == 0) return value.substr(k.file_prefix.size());
  }
  return value;
}

}  // namespace specshim::runtime
