// SPDX-License-Identifier: Apache-2.0
// dry-run --all: the rollout preview. For every live container of a runtime
// root, what the config at hand would change at its next create: the chain
// on an in-memory copy of its config.json, as dry-run runs it on a bundle.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "specshim/base/spec.h"
#include "specshim/modifiers/chain.h"

namespace specshim::shim {

// Preview is one container's row.
struct Preview {
  std::string id;
  std::string status;  // the runtime's: created, running, paused
  std::string kind;    // "sandbox", "container", or "" outside CRI
  std::string pod;     // NAMESPACE/NAME, "" when unknown
  std::string container;
  std::vector<std::string> changed_by;  // the modifiers that would change the spec, in order
  Json patch = Json::array();           // RFC 6902, from the spec as it is to the spec a create would make
  std::vector<std::string> files;       // the bundle files a create would write
  std::string error;                    // why its create would fail ("" when it would not)

  bool changes() const { return !changed_by.empty() || !files.empty(); }
};

// preview_all lists the runtime's containers under root ("": its default),
// skips the stopped ones (counted in stopped), and previews each other one.
// One container's failure is its row's error; a runtime that cannot list
// throws Error.
std::vector<Preview> preview_all(const Chain& chain, const std::string& runtime, const std::string& root,
                                 bool allow_allocate, std::size_t& stopped);

// render_previews_text is one aligned line per container and a summary;
// render_previews_json the documented array.
std::string render_previews_text(const std::vector<Preview>& rows, std::size_t stopped);
std::string render_previews_json(const std::vector<Preview>& rows);

}  // namespace specshim::shim
