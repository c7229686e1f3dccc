// SPDX-License-Identifier: Apache-2.0
// specshim-nri on this node: its [nri] table, the state dir it keeps a
// directory per container in, and its registration as a file, which the
// plugin writes when the runtime configures it and removes when the
// connection ends; doctor reads it to say whether the plugin mode is active.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "specshim/base/config.h"

namespace specshim {

// NriSettings is [nri]: how specshim-nri registers (docs/nri.md).
struct NriSettings {
  std::string socket = "/var/run/nri/nri.sock";  // the runtime's NRI socket
  std::string index = "10";                      // two digits: the order among plugins, low first
  // state-dir holds a directory per container for the files the chain
  // generates (a passwd copy bind-mounted into it); removed with the container.
  std::string state_dir = "/run/specshim/nri";
  // pod-annotations: the pod annotations (shell globs, `*` never matching
  // `/`) the chain sees beside the container's own, as a handler's
  // pod_annotations passes them into config.json in the shim's mode. Each is
  // tenant input. The default is the shipped handler snippet's list.
  std::vector<std::string> pod_annotations = {"specshim.io/passwd-name", "specshim.io/passwd-home",
                                              "specshim.io/devices-from", "specshim.io/devices-from-pod"};
  // passwd-hook: mount specshim's passwd and group copies into every
  // container and have the runtime fill them through a createRuntime hook
  // (hook-binary nri-hook), which sees the bundle and rootfs NRI does not.
  // Off by default: every container's /etc/passwd and /etc/group become
  // read-only copies (docs/nri.md, "passwd without a rootfs").
  bool passwd_hook = false;
  // shim-handlers: the RuntimeClass handlers whose BinaryName is specshim.
  // The plugin leaves their pods to the shim, which runs the same chain with
  // the bundle and rootfs in hand: no container gets the chain twice.
  std::vector<std::string> shim_handlers = {"specshim"};
  std::string hook_binary = "/usr/bin/specshim";  // the host's path the runtime runs the hook from
  // answer-margin-ms: each CreateContainer is answered this long before the
  // runtime's plugin request timeout (containerd's 2 s unless configured):
  // every wait on the create's path (the kubelet budget and the helper's
  // grace, the desired-state file's lock) ends by then with an error reply,
  // rather than the runtime dropping the plugin (NRI fails open).
  std::chrono::milliseconds answer_margin{300};

  // container_dir is <state-dir>/<id>: the plugin's files of one container,
  // which the nri-hook verb fills. Throws Error when id is not one safe path
  // element (is_container_id).
  std::filesystem::path container_dir(const std::string& id) const;
  // is_container_id: 1 to 128 of [A-Za-z0-9_.-], not starting with '.' (a
  // dot name in state-dir is the plugin's own, never a container's).
  static bool is_container_id(const std::string& id);
};

// read_nri_settings reads [nri] from root (marking it known).
NriSettings read_nri_settings(config::Section& root);

}  // namespace specshim

namespace specshim::nri_status {

// Registration is what a running specshim-nri says of itself: who it is and
// which runtime took it.
struct Registration {
  pid_t pid = 0;
  std::string plugin;      // "10-specshim"
  std::string runtime;     // "containerd 2.1.9"
  int nri_minor = 0;       // NRI API v0.<minor>
  std::int64_t since = 0;  // seconds since the epoch
};

// file is <state-dir>/.registered (a dot name: never a container's).
std::filesystem::path file(const NriSettings& nri);
// write replaces the file atomically; remove deletes it (missing is fine).
void write(const NriSettings& nri, const Registration& s);
void remove(const NriSettings& nri);
// read returns nullopt when the file does not exist. Throws Error naming
// the file when it is not what write writes.
std::optional<Registration> read(const NriSettings& nri);

}  // namespace specshim::nri_status
