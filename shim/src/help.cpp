// SPDX-License-Identifier: Apache-2.0
// specshim's own verbs and its usage text: one table serves both dispatch and
// `specshim --help`, so a new verb cannot be missing from either.
#include <cstdio>
#include <string>

#include "specshim/modifiers/registry.h"
#include "verbs.h"

namespace specshim::shim {

const std::vector<OwnVerb>& own_verbs() {
  static const std::vector<OwnVerb> verbs = {
      {"dry-run", "show what a create would change in a bundle's config.json (writes nothing)", dry_run_main},
      {"check-config", "check that a config file loads as every create reads it (before a rollout)", check_config_main},
      {"doctor", "check whether this node is ready: config, runtime, CDI, kubelet, kernel, containerd", doctor_main},
      {"attach", "give a running container a device or CDI device: cgroup rule, node, record", attach_main},
      {"detach", "take back a device that attach gave a running container", detach_main},
      {"attached", "show what attach gave a container", attached_main},
      {"reconcile", "give live containers what the desired-state file wants (--watch: keep doing it)", reconcile_main},
      {"diagnose", "explain why a container cannot use its device, layer by layer (read-only)", diagnose_main},
      {"containerd", "register specshim with the node's containerd: configure, unconfigure, check (plan only)",
       containerd_forward_main},
      {"nri-hook", "fill the passwd/group copies specshim-nri mounted (its createRuntime hook)", nri_hook_main},
  };
  return verbs;
}

const OwnVerb* find_own_verb(std::string_view name) {
  for (const auto& v : own_verbs())
    if (v.name == name) return &v;
  return nullptr;
}

std::string usage() {
  std::string modifiers;
  for (const auto& e : registry()) modifiers += (modifiers.empty() ? "" : ", ") + std::string(e.name);
  std::string text =
      "specshim " SPECSHIM_VERSION
      ": an OCI runtime shim for Kubernetes GPU/NPU nodes.\n"
      "\n"
      "containerd runs it in place of runc. On create, run and restore it applies its modifier chain\n"
      "(" +
      modifiers +
      ") to the bundle's config.json,\n"
      "then execs the runtime with the same arguments; every other command goes to the runtime untouched.\n"
      "\n"
      "specshim's own commands (each takes --help):\n";
  for (const auto& v : own_verbs()) {
    std::string name(v.name);
    text += "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') + std::string(v.summary) + "\n";
  }
  text +=
      "\n"
      "Config: /etc/specshim/config.toml (SPECSHIM_CONFIG overrides it; own commands take --config FILE).\n"
      "Docs:   man specshim, /usr/share/doc/specshim.\n"
      "\n"
      "The runtime's own help follows.\n"
      "\n";
  return text;
}

bool print_usage(const RuncArgs& parsed, const std::vector<std::string>& argv) {
  bool global_help = parsed.help || (parsed.subcommand == "help" && parsed.subcommand_index + 1 == argv.size());
  if (!global_help) return false;
  std::fputs(usage().c_str(), stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace specshim::shim
