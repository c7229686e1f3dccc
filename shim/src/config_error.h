// SPDX-License-Identifier: Apache-2.0
// A create whose config file does not load: which containers start anyway.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "specshim/modifiers/config_file.h"

namespace specshim::shim {

// passes_unloaded_config decides a create, run or restore whose config file
// did not load (error says why). It returns the warning to log before the
// runtime runs the bundle's spec untouched: for a sandbox, which no working
// config's chain would give a workload either, so the pod's events show the
// error of its first container instead of a sandbox failure; and for any
// container when the file's [policy] on-config-error (policy) is "pass". It
// returns nullopt when the create fails: the default, and whenever the spec
// cannot be read or its engine's identity keys disagree.
std::optional<std::string> passes_unloaded_config(const std::filesystem::path& bundle, OnConfigError policy,
                                                  std::string_view container_id, std::string_view error);

}  // namespace specshim::shim
