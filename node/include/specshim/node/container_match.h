// SPDX-License-Identifier: Apache-2.0
// ContainerMatch: which containers a site rule applies to, the `match` table
// that [[patches]] and [passwd] share. See docs/patches.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/node/pod_identity.h"

namespace specshim {

// ContainerMatch holds when every given condition holds; an empty one holds
// for every container, sandboxes included.
struct ContainerMatch {
  // key -> fnmatch glob over the value; an identity key no engine wrote for
  // the spec (pod_identity::foreign_key) reads as absent
  std::map<std::string, std::string> annotations;
  std::optional<ContainerKind> kind;                          // container: anything but a sandbox
  std::vector<std::string> namespaces;                        // fnmatch globs over the pod's namespace (pod_identity)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> uids;  // inclusive ranges over process.user.uid

  bool empty() const { return annotations.empty() && !kind && namespaces.empty() && uids.empty(); }
  bool holds(const Spec& spec) const;
  // describe is one line for doctor: "every container", or the conditions.
  std::string describe() const;
};

// read_container_match reads the optional `match` table of t. `who` starts
// every error message ("patch `p`"); empty for a table that is its own
// subject ([passwd]).
ContainerMatch read_container_match(config::Section& t, std::string_view who);

// valid_glob reports whether fnmatch(3) reads g as the admin meant it: no
// unterminated bracket expression, no trailing backslash, no control bytes.
bool valid_glob(std::string_view g);

}  // namespace specshim
