// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/create.h"

#include <cstdio>

#include "argv.h"
#include "config_error.h"
#include "runc_log.h"
#include "runtime.h"
#include "settings.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/config_file.h"
#include "verbs.h"

#ifndef SPECSHIM_VERSION
#define SPECSHIM_VERSION "0.0.0"
#endif

namespace specshim::shim {

int passthrough_main(const RuncArgs& parsed, const std::vector<std::string>& argv) {
  try {
    // An unreadable config must not block delete/kill; create reports it.
    std::string runtime = find_runtime(runtime_path_only(config::path_from_env()));
    if (parsed.version) {
      std::fputs("specshim version " SPECSHIM_VERSION "\n", stdout);
      std::fflush(stdout);
    }
    print_usage(parsed, argv);
    exec_runtime(runtime, argv);
  } catch (const std::exception& e) {
    report_error(parsed.log, parsed.log_format, "specshim: " + describe(e));
    return 1;
  }
}

int create_main(const RuncArgs& parsed, const std::vector<std::string>& argv) {
  try {
    if (!parsed.unknown_flags.empty())
      throw Error("refusing to guess the bundle: flag `" + parsed.unknown_flags.front() + "` of `" + parsed.subcommand +
                  "` is unknown to specshim (the grammars of runc 1.1–1.5 and crun)");
    if (!parsed.refused.empty()) throw Error(parsed.refused);
    // The file is read once; when it parses but does not load, what it says
    // of [runtime] path and [policy] still counts (config_error.h).
    std::optional<config::Document> doc;
    std::optional<ConfigFile> loaded;
    try {
      doc = config::Document::load(config::path_from_env());
      loaded = read_config_file(*doc);
    } catch (const std::exception& e) {
      auto warning =
          passes_unloaded_config(absolute_bundle(parsed.bundle), doc ? on_config_error_only(*doc) : OnConfigError::fail,
                                 parsed.container_id, describe(e));
      if (!warning) throw;
      std::string runtime = find_runtime(doc ? runtime_path_only(*doc) : std::nullopt);
      report_warning(parsed.log, parsed.log_format, *warning);
      exec_runtime(runtime, argv);
    }
    ConfigFile& config = *loaded;
    start_debug_log(config.settings);
    std::string runtime = find_runtime(config.settings.runtime_path);

    Context ctx;
    ctx.container_id = parsed.container_id;
    create::BundleDir bundle(absolute_bundle(parsed.bundle));
    create::Outcome out = create::modify(bundle, config.chain, std::move(ctx));
    create::commit(bundle, out);
    log::info("{} {}: {} pass(es), {}", parsed.subcommand, parsed.container_id, out.result.passes,
              out.changed() ? "config.json rewritten" : "nothing to change");
    stop_debug_log();
    exec_runtime(runtime, argv);
  } catch (const std::exception& e) {
    std::string msg = cap_message("specshim: " + describe(e));
    log::write(log::Level::error, msg);
    stop_debug_log();
    report_error(parsed.log, parsed.log_format, msg);
    return 1;
  }
}

}  // namespace specshim::shim
