// SPDX-License-Identifier: Apache-2.0
#include "pipeline.h"

#include <sys/stat.h>

#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/log.h"
#include "specshim/registry.h"

namespace specshim::shim {

std::filesystem::path absolute_bundle(const std::optional<std::string>& bundle) {
  std::error_code ec;
  std::filesystem::path p = bundle ? std::filesystem::path(*bundle) : std::filesystem::current_path(ec);
  if (ec) throw Error("find bundle: cannot read the current directory: " + ec.message());
  if (p.empty()) throw Error("find bundle: empty --bundle");
  return std::filesystem::absolute(p, ec).lexically_normal();
}

Outcome load_and_modify(const std::filesystem::path& bundle, Context ctx, config::Section& root) {
  Chain chain = build_chain(root);
  root.finish();

  std::filesystem::path file = bundle / "config.json";
  std::string text = fs::read_regular_file(file, kMaxSpecBytes);
  struct stat st {};
  mode_t mode = ::stat(file.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;

  Spec spec = [&] {
    try {
      return Spec::parse(text);
    } catch (const Error& e) {
      throw Error("parse `" + file.string() + "`: " + e.what());
    }
  }();
  ctx.bundle = bundle;
  ctx.kind = kind_of(spec);
  ChainResult result = chain.run(spec, ctx);
  log::debug("bundle {}: {} pass(es), changed by [{}]", bundle.string(), result.passes,
             fmt::join(result.changed_by, ", "));
  return Outcome{std::move(spec), std::move(ctx), std::move(result), mode};
}

namespace {

void clear_stale_temps(const std::filesystem::path& bundle) {
  // A leftover does not change what runs, so a scan that fails is logged and
  // the create goes on; a bundle that cannot be written fails in the writes.
  try {
    for (const auto& name : fs::remove_stale_temps(bundle))
      log::info("removed stale temp file `{}`", (bundle / name).string());
  } catch (const Error& e) {
    log::warn("{}", describe(e));
  }
}

}  // namespace

void commit(const Outcome& out) {
  // Only a create that writes scans for leftovers: a temp file is left only
  // by a create that was replacing config.json, and the same create run
  // again writes too. One that changes nothing stays off the directory.
  if (!out.changed()) return;
  clear_stale_temps(out.ctx.bundle);
  for (const auto& [name, f] : out.ctx.bundle_files) {
    if (name.empty() || name.find('/') != std::string::npos || name == "config.json" || name[0] == '.')
      throw Error("internal: modifier asked to write bundle file `" + name + "`");
    fs::write_file_atomic(out.ctx.bundle, name, f.content, f.mode, fs::TempFile::unnamed, f.owner);
  }
  if (out.spec_changed()) fs::write_file_atomic(out.ctx.bundle, "config.json", out.spec.serialize(), out.mode);
}

}  // namespace specshim::shim
