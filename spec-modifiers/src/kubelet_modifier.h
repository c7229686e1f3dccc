// SPDX-License-Identifier: Apache-2.0
// What the sources of the modifiers that ask the kubelet (device-plugin,
// cpuset) share: the start of their config table.
#pragma once

#include "specshim/config.h"
#include "specshim/kubelet_session.h"

namespace specshim {

// read_enabled_kubelet_keys reads what [device-plugin] and [cpuset] start with
// into a Config: enabled (default false), then kubelet-root and budget-ms over
// kubelet's ([kubelet]). The caller reads the table's own keys after it.
template <class Config>
Config read_enabled_kubelet_keys(config::Section& s, const KubeletKeys& kubelet) {
  Config c;
  c.enabled = s.boolean("enabled").value_or(false);
  c.kubelet_root = kubelet.root;
  c.budget = kubelet.budget;
  read_kubelet_keys(s, c.kubelet_root, c.budget);
  return c;
}

}  // namespace specshim
