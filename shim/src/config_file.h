// SPDX-License-Identifier: Apache-2.0
// specshim's config file as every verb reads it: once, and validated whole
// the way create validates it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "settings.h"
#include "specshim/chain.h"
#include "specshim/config.h"
#include "specshim/hotplug.h"
#include "specshim/registry.h"

namespace specshim::shim {

// ConfigFile is the file read for one verb: [runtime] and [log], [chain]
// and every modifier's table (the chain create would run), and what the
// hot-plug verbs read besides ([cdi] spec-dirs, [hotplug]). A table or key
// none of these knows is an error in every verb, as it is in create.
struct ConfigFile {
  config::Document doc;  // every table and key in it is known; a verb may read more of it
  Settings settings;
  Chain chain;
  std::optional<std::vector<std::string>> cdi_dirs;  // [cdi] spec-dirs; nullopt: enabled = false
  hotplug::Config hotplug;
};

// read_config_file loads file (a missing file: every default) and reads it
// whole. Throws Error naming the file, the key and its line.
ConfigFile read_config_file(const std::filesystem::path& file);
// This read_config_file reads a document already parsed.
ConfigFile read_config_file(config::Document doc);

}  // namespace specshim::shim
