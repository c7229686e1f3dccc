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

// OnConfigError is [policy] on-config-error: what a create does when the
// config file does not load (docs/deploying.md, "A config that does not
// load"). Sandboxes start either way.
enum class OnConfigError {
  fail,  // the create fails, naming the file, line and key (the default)
  pass,  // the runtime runs the spec untouched, and the runtime's log says so
};

// Settings are the shim's own tables: [runtime], [log] and [policy].
struct Settings {
  std::optional<std::string> runtime_path;              // [runtime] path
  std::optional<std::string> log_file;                  // [log] file: debug log, off when absent
  log::Level log_level = log::Level::info;              // [log] level
  OnConfigError on_config_error = OnConfigError::fail;  // [policy] on-config-error
};

// read_settings reads [runtime], [log] and [policy] from root (marking them
// known); [policy] opt-out-annotation is validated here and kept by the
// chain's plan (plan_chain).
Settings read_settings(config::Section& root);

// on_config_error_only reads [policy] on-config-error from a file that
// parses but did not load whole: a key of another type says nothing to
// trust, and reads as fail; so does any value but "pass". (A file that does
// not parse at all is fail too: its callers have no document.)
OnConfigError on_config_error_only(const config::Document& doc);

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
