// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/create.h"

#include <sys/stat.h>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/registry.h"
#include "specshim/node/pod_identity.h"

namespace specshim::create {

namespace {

// write_files writes the modifiers' files into dir, each atomically.
void write_files(const std::filesystem::path& dir, const Context& ctx) {
  for (const auto& [name, f] : ctx.bundle_files) {
    if (name.empty() || name.find('/') != std::string::npos || name == "config.json" || name[0] == '.')
      throw Error("internal: modifier asked to write bundle file `" + name + "`");
    fs::write_file_atomic(dir, name, f.content, f.mode, fs::TempFile::unnamed, f.owner);
  }
}

void clear_stale_temps(const std::filesystem::path& dir) {
  // A leftover does not change what runs, so a scan that fails is logged and
  // the create goes on; a bundle that cannot be written fails in the writes.
  try {
    for (const auto& name : fs::remove_stale_temps(dir))
      log::info("removed stale temp file `{}`", (dir / name).string());
  } catch (const Error& e) {
    log::warn("{}", describe(e));
  }
}

}  // namespace

Spec BundleDir::read() {
  std::filesystem::path file = dir_ / "config.json";
  std::string text = fs::read_regular_file(file, kMaxSpecBytes);
  try {
    return Spec::parse(text);
  } catch (const Error& e) {
    throw Error("parse `" + file.string() + "`: " + e.what());
  }
}

void BundleDir::store(const Outcome& out) {
  // Only a create that writes scans for leftovers: a temp file is left only
  // by a create that was replacing config.json, and the same create run
  // again writes too. One that changes nothing stays off the directory.
  clear_stale_temps(dir_);
  write_files(dir_, out.ctx);
  if (!out.spec_changed()) return;
  std::filesystem::path file = dir_ / "config.json";
  struct stat st {};
  mode_t mode = ::stat(file.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  fs::write_file_atomic(dir_, "config.json", out.spec.serialize(), mode);
}

void SpecInMemory::store(const Outcome& out) {
  if (!out.ctx.bundle_files.empty()) {
    make_files_dir(dir_);
    write_files(dir_, out.ctx);
  }
  spec_ = out.spec;
}

void make_files_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("create `" + dir.string() + "`: " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) throw_errno("chmod `" + dir.string() + "`");
}

Outcome modify(Bundle& bundle, const Chain& chain, Context ctx) {
  Spec spec = bundle.read();
  ctx.bundle = bundle.dir();
  ctx.kind = pod_identity::kind_of(spec);
  ChainResult result = chain.run(spec, ctx);
  log::debug("bundle {}: {} pass(es), changed by [{}]", ctx.bundle.string(), result.passes,
             fmt::join(result.changed_by, ", "));
  return Outcome{std::move(spec), std::move(ctx), std::move(result)};
}

Outcome modify(Bundle& bundle, config::Section& root, Context ctx) {
  Chain chain = build_chain(root);
  root.finish();
  return modify(bundle, chain, std::move(ctx));
}

void commit(Bundle& bundle, const Outcome& out) {
  if (out.changed()) bundle.store(out);
}

}  // namespace specshim::create
