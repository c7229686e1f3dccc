// SPDX-License-Identifier: Apache-2.0
// specshim's config file as every front-end reads it: once, and validated
// whole the way create validates it. The shim (each verb) and specshim-nri
// read the same file; a table either of them uses is known to both.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "specshim/chain.h"
#include "specshim/config.h"
#include "specshim/hotplug.h"
#include "specshim/log.h"
#include "specshim/registry.h"

namespace specshim {

// Settings are the shim's own tables: [runtime] and [log].
struct Settings {
  std::optional<std::string> runtime_path;  // [runtime] path
  std::optional<std::string> log_file;      // [log] file: debug log, off when absent
  log::Level log_level = log::Level::info;  // [log] level
};

// read_settings reads [runtime] and [log] from root (marking them known).
Settings read_settings(config::Section& root);

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

// ConfigFile is the file read for one verb or front-end: [runtime] and
// [log], [nri], [chain] and every modifier's table (the chain create would
// run), and what the hot-plug verbs read besides ([cdi] spec-dirs,
// [hotplug]). A table or key none of these knows is an error everywhere, as
// it is in create.
struct ConfigFile {
  config::Document doc;  // every table and key in it is known; a verb may read more of it
  Settings settings;
  NriSettings nri;
  Chain chain;
  std::optional<std::vector<std::string>> cdi_dirs;  // [cdi] spec-dirs; nullopt: enabled = false
  hotplug::Config hotplug;
};

// read_config_file loads file (a missing file: every default) and reads it
// whole. Throws Error naming the file, the key and its line.
ConfigFile read_config_file(const std::filesystem::path& file);
// This read_config_file reads a document already parsed.
ConfigFile read_config_file(config::Document doc);

}  // namespace specshim
