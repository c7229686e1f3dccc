// SPDX-License-Identifier: Apache-2.0
// The shim's own config tables: [runtime] and [log].
#pragma once

#include <optional>
#include <string>

#include "specshim/config.h"
#include "specshim/log.h"

namespace specshim::shim {

struct Settings {
  std::optional<std::string> runtime_path;  // [runtime] path
  std::optional<std::string> log_file;      // [log] file: debug log, off when absent
  log::Level log_level = log::Level::info;  // [log] level
};

// read_settings reads [runtime] and [log] from root (marking them known).
Settings read_settings(config::Section& root);

// runtime_path_only is the passthrough path's reader: it never fails, so a
// broken config cannot stop `delete` or `kill` from reaching the runtime.
std::optional<std::string> runtime_path_only(const config::Document& doc);

// start_debug_log opens [log] file when configured; stop_debug_log flushes
// and closes it (before exec, so the runtime inherits nothing).
void start_debug_log(const Settings& s);
void stop_debug_log();

}  // namespace specshim::shim
