// SPDX-License-Identifier: Apache-2.0
// ContainerMatch: which containers a site rule applies to, the `match` table
// that [[patches]] and [passwd] share, and the admin's opt-out annotation
// ([policy] opt-out-annotation) that takes a container out of every such
// rule. See docs/patches.md.
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

// MatchConditions hold when every given condition holds; empty ones hold for
// every container, sandboxes included.
struct MatchConditions {
  // key -> fnmatch glob over the value; an identity key no engine wrote for
  // the spec (pod_identity::foreign_key) reads as absent
  std::map<std::string, std::string> annotations;
  std::optional<ContainerKind> kind;                          // container: anything but a sandbox
  std::vector<std::string> namespaces;                        // fnmatch globs over the pod's namespace (pod_identity)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> uids;  // inclusive ranges over process.user.uid
  std::vector<std::string> images;                            // fnmatch globs over pod_identity::image_references

  bool empty() const { return annotations.empty() && !kind && namespaces.empty() && uids.empty() && images.empty(); }
  bool holds(const Spec& spec) const;
  // describe is the conditions in one line ("namespaces ml-*; uids 0"); ""
  // when empty.
  std::string describe() const;
};

// ContainerMatch is a `match` table: its conditions, less the containers its
// `not` table holds for, less the containers that opted out.
struct ContainerMatch {
  MatchConditions conditions;
  std::optional<MatchConditions> exclude;  // `not`: never empty
  // opt_out names the annotation whose value "true" takes a container out
  // of the rule ([policy] opt-out-annotation); empty: off. It is tenant
  // input, so it only ever makes a rule apply to fewer containers.
  std::string opt_out;

  bool holds(const Spec& spec) const;
  bool opted_out(const Spec& spec) const;
  // describe is one line for doctor: "every container", or the conditions,
  // then what `not` and the opt-out take away.
  std::string describe() const;
};

// read_container_match reads the optional `match` table of t (its `not`
// table too). `who` starts every error message ("patch `p`"); empty for a
// table that is its own subject ([passwd]). opt_out is the admin's opt-out
// annotation (read_opt_out), set on the match as it is.
ContainerMatch read_container_match(config::Section& t, std::string_view who, std::string_view opt_out);

// read_opt_out reads `opt-out-annotation` of t ([policy]): an annotation
// key, or "" when absent. Marks only that key read.
std::string read_opt_out(config::Section& t);

// valid_glob reports whether fnmatch(3) reads g as the admin meant it: no
// unterminated bracket expression, no trailing backslash, no control bytes.
bool valid_glob(std::string_view g);

}  // namespace specshim
