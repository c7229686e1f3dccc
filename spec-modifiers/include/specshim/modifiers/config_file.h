// SPDX-License-Identifier: Apache-2.0
// specshim's config file as every front-end reads it: once, and validated
// whole the way create validates it. The shim (each verb) and specshim-nri
// read the same file; a table either of them uses is known to both.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/registry.h"
#include "specshim/node/hotplug.h"
#include "specshim/node/nri_status.h"

namespace specshim {

// Settings are the shim's own tables: [runtime] and [log].
struct Settings {
  std::optional<std::string> runtime_path;  // [runtime] path
  std::optional<std::string> log_file;      // [log] file: debug log, off when absent
  log::Level log_level = log::Level::info;  // [log] level
};

// read_settings reads [runtime] and [log] from root (marking them known).
Settings read_settings(config::Section& root);

// ConfigFile is the file read for one verb or front-end: [runtime] and
// [log], [nri], [chain] and every modifier's table (the chain create would
// run), and what the hot-plug verbs read besides ([cdi] spec-dirs,
// [hotplug]). A table or key none of these knows is an error everywhere, as
// it is in create.
struct ConfigFile {
  config::Document doc;  // every table and key in it is known; a verb may read more of it
  Settings settings;
  NriSettings nri;
  Chain chain;
  std::optional<std::vector<std::string>> cdi_dirs;  // [cdi] spec-dirs; nullopt: enabled = false
  hotplug::Config hotplug;
};

// read_config_file loads file (a missing file: every default) and reads it
// whole. Throws Error naming the file, the key and its line.
ConfigFile read_config_file(const std::filesystem::path& file);
// This read_config_file reads a document already parsed.
ConfigFile read_config_file(config::Document doc);

}  // namespace specshim
