// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <iostream>

#include "argv.h"
#include "settings.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/modifiers/create.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {

int dry_run_main(const std::vector<std::string>& argv) {
  VerbCli cli("Show what specshim would change in a bundle's config.json; writes nothing.", "specshim dry-run");
  std::string bundle;
  std::string config_file = config::path_from_env().string();
  std::string format = "json";
  bool allow_allocate = false;
  cli.option("--bundle,-b", bundle, "bundle directory holding config.json").required();
  cli.option("--config", config_file, "specshim config file").show_default();
  cli.option("--format", format, "json: the modified spec; diff: an RFC 6902 JSON patch")
      .one_of({"json", "diff"})
      .show_default();
  cli.flag("--allow-allocate", allow_allocate, "let device-plugin calls Allocate (it may change plugin state)");
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    ConfigFile config = read_config_file(config_file);
    Context ctx;
    ctx.dry_run = true;
    ctx.allow_allocate = allow_allocate;
    create::BundleDir dir(absolute_bundle(bundle));
    create::Outcome out = create::modify(dir, config.chain, std::move(ctx));
    if (format == "diff") {
      std::cout << Json::diff(out.original(), out.spec.json()).dump(2) << "\n";
    } else {
      std::string text = out.spec.serialize();
      std::cout << text;
      if (text.empty() || text.back() != '\n') std::cout << "\n";
    }
    for (const auto& [name, f] : out.ctx.bundle_files) {
      std::cerr << "dry-run: would write " << (dir.dir() / name).string() << " (" << f.content.size() << " bytes";
      if (f.owner) std::cerr << ", owner " << f.owner->uid << ":" << f.owner->gid;
      std::cerr << ")\n";
    }
    std::string changed_by;
    for (const auto& n : out.result.changed_by) changed_by += (changed_by.empty() ? "" : ", ") + n;
    std::cerr << "dry-run: " << out.result.passes
              << " pass(es); changed by: " << (changed_by.empty() ? "nothing" : changed_by) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "specshim dry-run: " << describe(e) << "\n";
    return 1;
  }
}

}  // namespace specshim::shim
