// SPDX-License-Identifier: Apache-2.0
// specshim check-config: does a config file load, as create would read it?
#include <filesystem>
#include <iostream>

#include "specshim/base/error.h"
#include "specshim/modifiers/config_file.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {

int check_config_main(const std::vector<std::string>& argv) {
  VerbCli cli("Check that a specshim config file loads, as every create reads it; exits 1 when it does not.",
              "specshim check-config");
  std::string file;
  cli.option("file", file, "the config file (default: $SPECSHIM_CONFIG or " + std::string(config::kDefaultPath) + ")");
  if (int rc = cli.parse(argv); rc >= 0) return rc == 0 ? 0 : 2;
  std::filesystem::path path = file.empty() ? config::path_from_env() : std::filesystem::path(file);
  try {
    // A file named on the command line is the one a rollout installs: its
    // absence is a mistake, not "every default".
    std::error_code ec;
    if (!file.empty() && !std::filesystem::exists(path, ec))
      throw Error("config `" + path.string() + "`: no such file");
    ConfigFile config = read_config_file(path);
    std::string on;
    for (const auto& m : config.chain.modifiers()) on += (on.empty() ? "" : ", ") + std::string(m->name());
    std::cout << path.string() << (config.doc.exists() ? ": loads" : ": absent, so every default applies")
              << "; modifiers on: " << (on.empty() ? "none" : on)
              << "; on-config-error = " << (config.settings.on_config_error == OnConfigError::pass ? "pass" : "fail")
              << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "specshim check-config: " << describe(e) << "\n";
    return 1;
  }
}

}  // namespace specshim::shim
