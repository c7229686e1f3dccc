// SPDX-License-Identifier: Apache-2.0
// Factories of the built-in modifiers (one per src/<name>.cpp).
#pragma once

#include <memory>

#include "specshim/config.h"
#include "specshim/kubelet_session.h"
#include "specshim/modifier.h"

namespace specshim {
// std::unique_ptr<Modifier> make_<name>(config::Section& section);
// The modifiers that ask the kubelet share the chain's sessions.
std::unique_ptr<Modifier> make_passwd(config::Section& section);
std::unique_ptr<Modifier> make_cdi(config::Section& section);
std::unique_ptr<Modifier> make_devices_cgroup(config::Section& section);
std::unique_ptr<Modifier> make_device_plugin(config::Section& section, KubeletSessions& sessions);
std::unique_ptr<Modifier> make_cpuset(config::Section& section, KubeletSessions& sessions);
std::unique_ptr<Modifier> make_env_devices(config::Section& section, KubeletSessions& sessions);
std::unique_ptr<Modifier> make_requirements(config::Section& section);
std::unique_ptr<Modifier> make_patches(config::Section& section);
}  // namespace specshim
