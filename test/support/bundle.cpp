// SPDX-License-Identifier: Apache-2.0
#include "bundle.h"

#include "specshim/modifiers/config_file.h"

namespace specshim::test {

create::Outcome run_pipeline(const std::filesystem::path& bundle, const std::string& config_text, bool dry_run) {
  ConfigFile config = read_config_file(config::Document::parse(config_text, (bundle / "config.toml").string()));
  Context ctx;
  ctx.container_id = "golden";
  ctx.dry_run = dry_run;
  ctx.allow_allocate = !dry_run;
  create::BundleDir dir(bundle);
  return create::modify(dir, config.chain, std::move(ctx));
}

}  // namespace specshim::test
