// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/allocation_sources.h"

#include <memory>

#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/cdi.h"
#include "specshim/node/kubelet_session.h"

namespace specshim {

pod_allocation::Sources allocation_sources(config::Section& root, const std::string& proc) {
  auto kubelet = root.section("kubelet");
  KubeletKeys keys = read_kubelet_table(kubelet);
  std::vector<env_devices::Entry> entries;
  if (root.kind("env-devices") == config::Kind::array) {
    auto view = root.only("env-devices");
    entries = env_devices::read_entries(view, keys);
  }
  return allocation_sources(root, keys, entries, proc);
}

pod_allocation::Sources allocation_sources(config::Section& root, const KubeletKeys& keys,
                                           const std::vector<env_devices::Entry>& entries, const std::string& proc) {
  pod_allocation::Sources s;
  auto dp = root.section("device-plugin");
  auto table = device_plugin::read_table(dp, keys);
  for (const auto& r : table.resources) s.resources.push_back(r.name);
  s.kubelet_root = table.kubelet_root;
  s.budget = table.budget;
  for (const auto& entry : entries) s.env_lists.push_back(env_list(entry));
  auto cdi = root.section("cdi");
  s.cdi_dirs = cdi::read_spec_dirs(cdi);
  s.proc = proc;
  return s;
}

pod_allocation::EnvList env_list(env_devices::Entry entry) {
  auto e = std::make_shared<const env_devices::Entry>(std::move(entry));
  return {e->kind, [e](std::string_view r) { return e->counts(r); },
          [e](const Grant& g) { return env_devices::grant_of(*e, g); }};
}

}  // namespace specshim
