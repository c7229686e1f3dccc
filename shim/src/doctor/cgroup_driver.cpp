// SPDX-License-Identifier: Apache-2.0
// The containerd check's cgroup drivers: how each handler that runs this
// binary makes container cgroups (options.SystemdCgroup, merged as
// containerd merges its files) and whether the kubelet's cgroupDriver
// (its config file under [kubelet] root) says the same. They must agree:
// the kubelet names a pod's cgroup parent for its driver (a systemd slice,
// or a cgroupfs path), and runc reads it with the handler's.
#include <algorithm>
#include <array>
#include <optional>

#include "doctor/containerd_files.h"
#include "specshim/base/error.h"
#include "specshim/node/kubelet_config.h"

namespace specshim::shim::doctor::containerd_files {
namespace {

// Driver is a cgroup driver as the kubelet names it, and the SystemdCgroup
// value that makes runc use it.
struct Driver {
  const char* name;
  bool systemd;
};
constexpr std::array<Driver, 2> kDrivers = {{{"systemd", true}, {"cgroupfs", false}}};

const char* driver_of(bool systemd) {
  for (const auto& d : kDrivers)
    if (d.systemd == systemd) return d.name;
  return "";
}

// PerFile is one file's SystemdCgroup for one handler, in the shape
// containerd_config::merged reads.
struct PerFile {
  bool loaded = false;
  bool has_cri = false;
  Setting<bool> systemd_cgroup;
};

// handlers_of_this_binary names, in the order they are found, the handlers
// a loaded file gives this binary as BinaryName.
std::vector<std::string> handlers_of_this_binary(const Scan& scan) {
  std::vector<std::string> out;
  for (const auto& f : scan.found) {
    const Runtime& r = f.runtime;
    if (!f.loaded || fs::path(r.binary).is_relative() || !scan.this_binary(r)) continue;
    if (std::find(out.begin(), out.end(), r.name) == out.end()) out.push_back(r.name);
  }
  return out;
}

}  // namespace

HandlerCgroups Scan::handler_cgroups(Line line) const {
  HandlerCgroups out;
  for (const auto& name : handlers_of_this_binary(*this)) {
    std::vector<PerFile> per;
    for (const auto& f : files) {
      PerFile p{f.loaded, f.has_cri, {}};
      for (const auto& r : found)
        if (r.file == f.path && r.runtime.name == name) p.systemd_cgroup = r.runtime.systemd_cgroup;
      per.push_back(p);
    }
    auto [value, at] = node::containerd_config::merged(per, line, &PerFile::systemd_cgroup);
    bool systemd = value.value_or(false);
    out.push_back({name, systemd,
                   value ? std::string("SystemdCgroup = ") + (systemd ? "true" : "false") + ", " + at
                         : std::string("SystemdCgroup unset: containerd's default, false")});
  }
  return out;
}

void judge_cgroup_driver(const Host& host, const fs::path& kubelet_root, const HandlerCgroups& handlers, Check& c) {
  if (handlers.empty()) return;  // no handler runs this binary: the check already warns
  fs::path file = host.path(node::kubelet_config::config_file(kubelet_root).string());
  std::string unknown = ": the kubelet's cgroup driver is not compared with the handlers' SystemdCgroup";
  std::optional<node::kubelet_config::CgroupDriver> kubelet;
  try {
    kubelet = node::kubelet_config::read_cgroup_driver(file);
  } catch (const std::exception& e) {
    c.add(Severity::info, describe(e) + unknown);
    return;
  }
  if (!kubelet) {
    c.add(Severity::info, file.string() + ": absent (no kubelet here, or another [kubelet] root)" + unknown);
    return;
  }
  std::string said = "the kubelet's cgroupDriver is " + kubelet->value + " (" +
                     (kubelet->line ? file.string() + " line " + std::to_string(kubelet->line)
                                    : file.string() + " leaves it out: the kubelet's default") +
                     ")";
  auto known =
      std::find_if(kDrivers.begin(), kDrivers.end(), [&](const Driver& d) { return kubelet->value == d.name; });
  if (known == kDrivers.end()) {
    c.add(Severity::fail, said + ": not a cgroup driver the kubelet knows (systemd, cgroupfs): it does not start");
    return;
  }
  for (const auto& h : handlers) {
    std::string theirs = "handler `" + h.handler + "` uses " + driver_of(h.systemd) + " (" + h.at + ")";
    if (h.systemd == known->systemd) {
      c.add(Severity::ok, said + ", " + theirs);
      continue;
    }
    c.add(Severity::fail, said + " but " + theirs +
                              ": kubelet and containerd disagree, so its pods fail to start or land in the wrong "
                              "cgroup hierarchy; set SystemdCgroup = " +
                              (known->systemd ? "true" : "false") +
                              " in the handler's options, or the kubelet's cgroupDriver to " + driver_of(h.systemd));
  }
}

}  // namespace specshim::shim::doctor::containerd_files
