// SPDX-License-Identifier: Apache-2.0
// Factories of the built-in modifiers (one per src/<name>.cpp).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "specshim/config.h"
#include "specshim/container_match.h"
#include "specshim/kubelet_session.h"
#include "specshim/modifier.h"

namespace specshim {

// Shared is what build_chain hands the factories of modifiers that work
// together, before any of them runs.
struct Shared {
  KubeletKeys kubelet_keys;  // [kubelet]: what device-plugin, cpuset and env-devices start from
  KubeletSessions kubelet;   // device-plugin, cpuset, env-devices: one session per kubelet
  // The variables env-devices ends with `<ENV>=void` once it handed their
  // devices to cdi: device-plugin's protect-env takes that entry for
  // specshim's own, not for a tenant's override. Filled as env-devices is
  // built, read at creates.
  std::shared_ptr<std::set<std::string>> voided_env = std::make_shared<std::set<std::string>>();
  // Whether the cdi modifier is in the chain (set once every modifier is
  // built): hotplug hands it the desired-state file's CDI names only then.
  std::shared_ptr<bool> cdi_on = std::make_shared<bool>(false);
  // The config's root while build_chain runs the factories, for a factory
  // that reads other tables than its own (hotplug's bound: the resources
  // device-plugin and env-devices know). Not kept past the factory.
  config::Section* root = nullptr;
};

// PasswdScope is [passwd]'s `match` and `required`: which containers get
// entries, and whether one whose entry cannot be ensured fails its create.
// make_passwd reads it with read_passwd_scope; doctor prints it.
struct PasswdScope {
  ContainerMatch match;
  bool required = false;
};
PasswdScope read_passwd_scope(config::Section& section);

// std::unique_ptr<Modifier> make_<name>(config::Section& section);
// The modifiers that work together get what the chain shares.
std::unique_ptr<Modifier> make_passwd(config::Section& section);
std::unique_ptr<Modifier> make_cdi(config::Section& section);
std::unique_ptr<Modifier> make_devices_cgroup(config::Section& section);
std::unique_ptr<Modifier> make_device_plugin(config::Section& section, Shared& shared);
std::unique_ptr<Modifier> make_cpuset(config::Section& section, Shared& shared);
std::unique_ptr<Modifier> make_env_devices(config::Section& section, Shared& shared);
std::unique_ptr<Modifier> make_requirements(config::Section& section);
std::unique_ptr<Modifier> make_patches(config::Section& section);
std::unique_ptr<Modifier> make_hotplug(config::Section& section, Shared& shared);
}  // namespace specshim
