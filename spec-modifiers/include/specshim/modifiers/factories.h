// SPDX-License-Identifier: Apache-2.0
// The chain's plan and the factories of the built-in modifiers (each in
// src/<name>/modifier.cpp).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/container_match.h"
#include "specshim/node/kubelet_session.h"
#include "specshim/node/pod_allocation.h"

namespace specshim {

// ChainPlan is what build_chain decides before any factory runs, and hands
// every factory by const reference: no factory writes what another reads,
// and no modifier object holds state another one changes.
struct ChainPlan {
  std::vector<std::string> order;   // [chain] order: the modifiers a chain may hold, in order
  int max_passes = 8;               // [chain] max-passes
  KubeletKeys kubelet_keys;         // [kubelet]: what device-plugin, cpuset and env-devices start from
  bool kubelet_configured = false;  // the config says the node has a kubelet (hotplug::kubelet_configured)
  bool cdi = false;                 // the cdi modifier is in the chain: listed in order, [cdi] not disabled
  // env_devices are the [[env-devices]] entries, read once (env-devices'
  // factory takes them from here); empty when env-devices is not listed.
  std::vector<env_devices::Entry> env_devices;
  // voided_env are the variables env-devices ends with `<ENV>=void` once it
  // handed their devices to cdi (its entries with after = "void"):
  // device-plugin's protect-env takes that entry for specshim's own, not for
  // a tenant's override.
  std::set<std::string> voided_env;
  // allocation is where a pod's allocation is read from (the resources
  // device-plugin and env-devices know, the CDI dirs): hotplug's bound. Read
  // only when [hotplug] is enabled and listed; hotplug sets its own proc.
  std::optional<pod_allocation::Sources> allocation;
  // opt_out is [policy] opt-out-annotation: the annotation whose value
  // "true" takes a container out of every `match`-scoped rule ([[patches]],
  // [passwd]); empty: off. Only those rules get it: a grant check never
  // reads it (tenant input may make specshim do less of the site's rules,
  // never give more).
  std::string opt_out;
  bool lists(std::string_view name) const;
};

// plan_chain reads [chain] and what the plan needs of [kubelet],
// [[env-devices]], [cdi], [hotplug] and [policy]. Throws config errors.
ChainPlan plan_chain(config::Section& root);

// read_opt_out_annotation reads [policy] opt-out-annotation of the root
// table (read_opt_out); "" when absent.
std::string read_opt_out_annotation(config::Section& root);

// PasswdScope is [passwd]'s `match` and `required`: which containers get
// entries, and whether one whose entry cannot be ensured fails its create.
// A container that opted out (ChainPlan::opt_out) is outside the match, so
// `required` never fails its create. make_passwd reads it with
// read_passwd_scope; doctor prints it.
struct PasswdScope {
  ContainerMatch match;
  bool required = false;
};
PasswdScope read_passwd_scope(config::Section& section, std::string_view opt_out);

// std::unique_ptr<Modifier> make_<name>(config::Section& section);
// The modifiers that ask the kubelet get the plan and the chain's sessions
// (one per kubelet: a collaborator, not a wire between modifiers); hotplug
// and device-plugin get the plan, and so do the `match`-scoped modifiers,
// passwd and patches (its opt-out annotation).
std::unique_ptr<Modifier> make_passwd(config::Section& section, const ChainPlan& plan);
std::unique_ptr<Modifier> make_cdi(config::Section& section);
std::unique_ptr<Modifier> make_devices_cgroup(config::Section& section);
std::unique_ptr<Modifier> make_device_plugin(config::Section& section, const ChainPlan& plan,
                                             KubeletSessions& sessions);
std::unique_ptr<Modifier> make_cpuset(config::Section& section, const ChainPlan& plan, KubeletSessions& sessions);
std::unique_ptr<Modifier> make_env_devices(config::Section& section, const ChainPlan& plan, KubeletSessions& sessions);
std::unique_ptr<Modifier> make_requirements(config::Section& section);
std::unique_ptr<Modifier> make_patches(config::Section& section, const ChainPlan& plan);
std::unique_ptr<Modifier> make_hotplug(config::Section& section, const ChainPlan& plan, KubeletSessions& sessions);
}  // namespace specshim
