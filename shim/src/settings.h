// SPDX-License-Identifier: Apache-2.0
// The shim's use of its own tables ([runtime] and [log], read with the
// config file: specshim/modifiers/config_file.h): the passthrough path's runtime path,
// and the debug log.
#pragma once

#include <optional>
#include <string>

#include "specshim/base/config.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/config_file.h"

namespace specshim::shim {

// runtime_path_only is the passthrough path's reader: it never fails, so a
// broken config cannot stop `delete` or `kill` from reaching the runtime.
std::optional<std::string> runtime_path_only(const config::Document& doc);
// This runtime_path_only loads file first; a file that does not parse names
// no runtime either.
std::optional<std::string> runtime_path_only(const std::filesystem::path& file);

// start_debug_log opens [log] file when configured; stop_debug_log flushes
// and closes it (before exec, so the runtime inherits nothing).
void start_debug_log(const Settings& s);
void stop_debug_log();

}  // namespace specshim::shim
