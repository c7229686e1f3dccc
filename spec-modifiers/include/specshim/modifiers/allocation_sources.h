// SPDX-License-Identifier: Apache-2.0
// Where a pod's allocation is read from (node/pod_allocation.h), as the
// config's modifier tables say: the device-plugin resources, the
// [[env-devices]] entries and how each reads an answer, the CDI spec dirs.
#pragma once

#include <string>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/node/kubelet_session.h"
#include "specshim/node/pod_allocation.h"

namespace specshim {

// allocation_sources reads them from a config's root: [kubelet],
// [device-plugin] (its kubelet-root and budget-ms win, as for every verb that
// asks the kubelet), [[env-devices]], [cdi]; proc is the driver's list's root
// ([hotplug] proc, or a verb's --proc). Throws config errors; it does not
// judge unknown keys (the chain and the verbs' readers do).
pod_allocation::Sources allocation_sources(config::Section& root, const std::string& proc);
// This allocation_sources takes [kubelet]'s keys and the [[env-devices]]
// entries already read (the chain's plan has both).
pod_allocation::Sources allocation_sources(config::Section& root, const KubeletKeys& keys,
                                           const std::vector<env_devices::Entry>& entries, const std::string& proc);

// env_list is how the allocation reads answers through one [[env-devices]]
// entry (env_devices::grant_of).
pod_allocation::EnvList env_list(env_devices::Entry entry);

}  // namespace specshim
