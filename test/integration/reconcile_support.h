// SPDX-License-Identifier: Apache-2.0
// What both reconcile test files share: the Host (c 1:11 nodes, config, desired file), pod dev/box-7, stdout lines.
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "container.h"
#include "host_device.h"
#include "running.h"

namespace specshim::test {

// Host is the host side: two c 1:11 nodes at different host paths (one
// device to the kernel: two entries that each want one must say `shared:
// true`), specshim's config, the desired-state file and one runc --root for
// every container of a test.
struct Host : HostDevice {
  std::filesystem::path config = tmp / "specshim.toml";
  std::filesystem::path desired = tmp / "etc" / "hotplug.yaml";
  std::filesystem::path other = tmp / "host-dev" / "accel1";
  std::filesystem::path root = tmp / "runc-root";
  Host() {
    std::filesystem::create_directories(desired.parent_path());
    std::filesystem::create_directories(root);
    REQUIRE(::mknod(other.c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
    std::filesystem::permissions(node, std::filesystem::perms(0666));
    std::filesystem::permissions(other, std::filesystem::perms(0666));
    write_file(config, config_text(false));
  }
  std::string config_text(bool enabled) const {
    return "[runtime]\npath = \"/usr/sbin/runc\"\n\n[hotplug]\n" + std::string(enabled ? "enabled = true\n" : "") +
           "desired = \"" + desired.string() + "\"\n";
  }
  // want writes the desired-state file.
  void want(const std::string& yaml) const { write_file(desired, yaml); }
  // reconcile runs `specshim reconcile --root ROOT --config CONFIG ARGS...`.
  ProcessResult reconcile(const std::vector<std::string>& args = {}) const {
    std::vector<std::string> argv = {SPECSHIM_BINARY, "reconcile", "--root",
                                     root.string(),   "--config",  config.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
  }
  std::vector<std::string> watch_argv(const std::string& interval) const {
    return {SPECSHIM_BINARY, "reconcile", "--root",     root.string(), "--config",
            config.string(), "--watch",   "--interval", interval};
  }
};

// in_pod gives a container CRI's annotations of a container (type
// "container", name) or the sandbox (type "sandbox", no container name) of
// pod dev/box-7, as containerd writes them.
inline std::function<void(BusyboxBundle&)> in_pod(const std::string& type, const std::string& name = "main") {
  return [type, name](BusyboxBundle& b) {
    b.spec()["annotations"] = {{"io.kubernetes.cri.container-type", type},
                               {"io.kubernetes.cri.sandbox-namespace", "dev"},
                               {"io.kubernetes.cri.sandbox-name", "box-7"},
                               {"io.kubernetes.cri.sandbox-id", "sandbox-0123"}};
    if (type == "container") b.spec()["annotations"]["io.kubernetes.cri.container-name"] = name;
  };
}

inline const char* const kPod = "{namespace: dev, name: box-7, container: main}";

// Reconcile's stdout lines. who is "container `ID`", plus " (pod ...)" for a pod entry.
inline std::string by_id(const std::string& id) {
  return "container `" + id + "`";
}
inline std::string by_pod(const std::string& id) {
  return by_id(id) + " (pod `dev/box-7` container `main`)";
}
inline std::string attached(const std::string& who, const std::string& path, const std::string& perms,
                            const std::string& key) {
  return who + ": attached " + path + " (c 1:11 " + perms + ", mknod) for " + key + "\n";
}
inline std::string detached(const std::string& who, const std::string& path) {
  return who + ": detached " + path + " (c 1:11)\n";
}

inline bool gone(const Running& c, const std::string& path) {
  return c.sh("test -e " + path + " && echo present || echo gone") == "gone\n";
}

}  // namespace specshim::test
