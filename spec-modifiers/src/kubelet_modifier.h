// SPDX-License-Identifier: Apache-2.0
// What the sources of the modifiers that ask the kubelet share: the start of
// the [device-plugin] and [cpuset] tables, and how device-plugin, cpuset and
// env-devices name the container in their messages, and which names can be
// a container's.
#pragma once

#include <string>

#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/kubelet_session.h"

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

// target_name names the container a spec belongs to in messages: "container
// `ctr-1` of pod `ns/p`". Outside CRI it goes by its container ID, or
// "(unnamed)", and the pod is left out when none is known.
inline std::string target_name(const pod_identity::Identity& id, const std::string& container_id) {
  std::string name = !id.container.empty() ? id.container : container_id.empty() ? "(unnamed)" : container_id;
  return "container `" + name + "`" + (id.pod.empty() ? "" : " of pod `" + id.pod.str() + "`");
}

// container_name tells whether a tenant's annotation can name a container
// of the pod (specshim.io/devices-from).
inline bool container_name(const std::string& s) {
  return !s.empty() && s.size() <= 253 && !contains_control(s) && s.find('/') == std::string::npos;
}

}  // namespace specshim
