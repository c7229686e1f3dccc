// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "argv.h"
#include "dry_run_all.h"
#include "runtime.h"
#include "settings.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/modifiers/create.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {
namespace {

int dry_run_bundle(const ConfigFile& config, const std::string& bundle, const std::string& format,
                   bool allow_allocate) {
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
  std::cerr << "dry-run: " << out.result.passes << " pass(es); changed by: "
            << (out.result.changed_by.empty() ? "nothing" : join(out.result.changed_by, ", ")) << "\n";
  return 0;
}

// dry_run_all: exit 0 when every create would pass, 1 when one would fail.
int dry_run_all(const ConfigFile& config, const std::string& root, const std::string& format, bool allow_allocate) {
  std::size_t stopped = 0;
  auto rows = preview_all(config.chain, find_runtime(config.settings.runtime_path), root, allow_allocate, stopped);
  std::cout << (format == "json" ? render_previews_json(rows) : render_previews_text(rows, stopped));
  return std::any_of(rows.begin(), rows.end(), [](const Preview& r) { return !r.error.empty(); }) ? 1 : 0;
}

}  // namespace

int dry_run_main(const std::vector<std::string>& argv) {
  VerbCli cli(
      "Show what specshim would change in a bundle's config.json, or (--all) at the next create of every "
      "live container of a runtime root; writes nothing.",
      "specshim dry-run");
  std::string bundle;
  std::string root;
  std::string config_file = config::path_from_env().string();
  std::string format;
  bool all = false;
  bool allow_allocate = false;
  cli.option("--bundle,-b", bundle, "bundle directory holding config.json");
  cli.flag("--all", all, "every live container of the runtime's --root: the rollout preview (exit 1: a create fails)");
  cli.option("--root", root, "with --all: the runtime's state root (runc --root), e.g. /run/containerd/runc/k8s.io");
  cli.option("--config", config_file, "specshim config file").show_default();
  cli.option("--format", format,
             "json: the modified spec (--all: one object per container); diff: an RFC 6902 JSON patch; "
             "table: --all's default")
      .one_of({"json", "diff", "table"});
  cli.flag("--allow-allocate", allow_allocate, "let device-plugin calls Allocate (it may change plugin state)");
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  if (all == !bundle.empty() || (!all && !root.empty()) || (all && format == "diff") || (!all && format == "table")) {
    std::cerr << "specshim dry-run: give --bundle DIR [--format json|diff], or --all [--root DIR] "
                 "[--format table|json]\n";
    return 2;
  }
  try {
    ConfigFile config = read_config_file(config_file);
    if (all) return dry_run_all(config, root, format, allow_allocate);
    return dry_run_bundle(config, bundle, format, allow_allocate);
  } catch (const std::exception& e) {
    std::cerr << "specshim dry-run: " << describe(e) << "\n";
    return all ? 2 : 1;
  }
}

}  // namespace specshim::shim
