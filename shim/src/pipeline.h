// SPDX-License-Identifier: Apache-2.0
// The create pipeline shared by `create`/`run` and `dry-run`: load the
// bundle's config.json, run the chain, and (create only) commit the result.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "specshim/chain.h"
#include "specshim/config.h"
#include "specshim/modifier.h"
#include "specshim/spec.h"

namespace specshim::shim {

inline constexpr std::size_t kMaxSpecBytes = 16 << 20;

struct Outcome {
  Spec spec;
  Context ctx;
  ChainResult result;
  mode_t mode = 0644;

  // original is config.json as read (the chain keeps a copy only when a
  // modifier changed something).
  const Json& original() const { return result.original ? *result.original : spec.json(); }
  bool spec_changed() const { return result.original && spec.json() != *result.original; }
  bool changed() const { return spec_changed() || !ctx.bundle_files.empty(); }
};

// load_and_modify reads <bundle>/config.json and runs the chain built from
// root's config on it. Nothing is written. Throws Error with context.
Outcome load_and_modify(const std::filesystem::path& bundle, Context ctx, config::Section& root);

// commit removes the temp files killed creates left in the bundle
// (fs::remove_stale_temps), then writes the modifiers' bundle files, then
// config.json, each atomically. When nothing changed it does nothing at all,
// not even the scan. dry-run never calls it.
void commit(const Outcome& out);

// absolute_bundle resolves a --bundle value (or the cwd when absent).
std::filesystem::path absolute_bundle(const std::optional<std::string>& bundle);

}  // namespace specshim::shim
