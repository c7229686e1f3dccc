// SPDX-License-Identifier: Apache-2.0
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "pipeline.h"
#include "settings.h"
#include "specshim/error.h"
#include "verbs.h"

namespace specshim::shim {

int dry_run_main(const std::vector<std::string>& argv) {
  CLI::App app{"Show what specshim would change in a bundle's config.json; writes nothing.", "specshim dry-run"};
  std::string bundle;
  std::string config_file = config::path_from_env().string();
  std::string format = "json";
  bool allow_allocate = false;
  app.add_option("--bundle,-b", bundle, "bundle directory holding config.json")->required();
  app.add_option("--config", config_file, "specshim config file")->capture_default_str();
  app.add_option("--format", format, "json: the modified spec; diff: an RFC 6902 JSON patch")
      ->check(CLI::IsMember({"json", "diff"}))
      ->capture_default_str();
  app.add_flag("--allow-allocate", allow_allocate, "let device-plugin calls Allocate (it may change plugin state)");
  try {
    std::vector<std::string> rest(argv.rbegin(), argv.rend() - 2);  // CLI11 wants them reversed
    app.parse(rest);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    auto doc = config::Document::load(config_file);
    auto root = doc.root();
    read_settings(root);
    Context ctx;
    ctx.dry_run = true;
    ctx.allow_allocate = allow_allocate;
    Outcome out = load_and_modify(absolute_bundle(bundle), std::move(ctx), root);
    if (format == "diff") {
      std::cout << Json::diff(out.original(), out.spec.json()).dump(2) << "\n";
    } else {
      std::string text = out.spec.serialize();
      std::cout << text;
      if (text.empty() || text.back() != '\n') std::cout << "\n";
    }
    for (const auto& [name, f] : out.ctx.bundle_files)
      std::cerr << "dry-run: would write " << (out.ctx.bundle / name).string() << " (" << f.content.size()
                << " bytes)\n";
    std::cerr << "dry-run: " << out.result.passes << " pass(es); changed by: "
              << (out.result.changed_by.empty() ? std::string("nothing") : [&] {
                   std::string s;
                   for (auto& n : out.result.changed_by) s += (s.empty() ? "" : ", ") + n;
                   return s;
                 }())
              << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "specshim dry-run: " << describe(e) << "\n";
    return 1;
  }
}

}  // namespace specshim::shim
