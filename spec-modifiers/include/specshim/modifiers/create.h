// SPDX-License-Identifier: Apache-2.0
// The create core: read a container's spec, run the chain on it, store what
// the chain made. `create`, `run`, `restore` and `dry-run` call it on a
// bundle directory. A front-end without a bundle on disk (an NRI plugin: the
// runtime has not written one when it asks) gives it the spec in memory and
// a directory of its own for the files modifiers generate.
#pragma once

#include <cstddef>
#include <filesystem>

#include "specshim/base/config.h"
#include "specshim/base/spec.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/modifier.h"

namespace specshim {

namespace create {

// Outcome is what the chain made of one spec.
struct Outcome {
  Spec spec;
  Context ctx;
  ChainResult result;

  // original is the spec as read (the chain keeps a copy only when a
  // modifier changed something).
  const Json& original() const { return result.original ? *result.original : spec.json(); }
  bool spec_changed() const { return result.original && spec.json() != *result.original; }
  bool changed() const { return spec_changed() || !ctx.bundle_files.empty(); }
};

// Bundle is where a create reads its spec and stores its outcome.
class Bundle {
 public:
  virtual ~Bundle() = default;
  // dir is the absolute directory the files modifiers generate
  // (Context::bundle_files) are written to and bind-mounted from. The chain
  // sees it as Context::bundle, and a relative root.path resolves against it.
  virtual const std::filesystem::path& dir() const = 0;
  // read returns the spec to modify. Throws Error naming what it read.
  virtual Spec read() = 0;
  // store keeps what the chain made: the generated files, each atomically,
  // then the spec when the chain changed it. Only commit calls it.
  virtual void store(const Outcome& out) = 0;
};

// BundleDir is a bundle directory on disk, config.json and the generated
// files side by side: what runc's callers hand the shim.
class BundleDir final : public Bundle {
 public:
  explicit BundleDir(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const override { return dir_; }
  // read parses config.json (a regular file, at most kMaxSpecBytes).
  Spec read() override;
  // store removes the temp files killed creates left in the directory
  // (fs::remove_stale_temps), then writes the files, then config.json with
  // the mode it has.
  void store(const Outcome& out) override;

 private:
  std::filesystem::path dir_;
};

// SpecInMemory is a spec held in memory, with a directory of the
// front-end's own for the generated files. The front-end hands the stored
// spec on itself (as an NRI adjustment, say).
class SpecInMemory final : public Bundle {
 public:
  SpecInMemory(Spec spec, std::filesystem::path files_dir) : spec_(std::move(spec)), dir_(std::move(files_dir)) {}
  const std::filesystem::path& dir() const override { return dir_; }
  Spec read() override { return spec_; }
  // store writes the files into the directory (make_files_dir) and keeps
  // the spec.
  void store(const Outcome& out) override;
  const Spec& spec() const { return spec_; }

 private:
  Spec spec_;
  std::filesystem::path dir_;
};

// make_files_dir makes a front-end's directory for one container's files
// (SpecInMemory's; specshim-nri's state-dir/<id>) with any missing parents,
// and leaves it mode 0700, made now or found: only root, as whom the runtime
// bind-mounts from it, goes in. Throws Error.
void make_files_dir(const std::filesystem::path& dir);

// modify reads bundle's spec and runs chain on it with ctx, whose bundle and
// kind it fills in. Nothing is stored. Throws Error with context.
Outcome modify(Bundle& bundle, const Chain& chain, Context ctx);

// This modify builds the chain from root's config (build_chain), then
// finishes root: a key nobody read is an error before any spec is read.
Outcome modify(Bundle& bundle, config::Section& root, Context ctx);

// commit stores out in bundle when the chain changed anything. When nothing
// changed it does nothing at all, not even the scan for temp files. dry-run
// never calls it.
void commit(Bundle& bundle, const Outcome& out);

}  // namespace create
}  // namespace specshim
