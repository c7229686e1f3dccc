// SPDX-License-Identifier: Apache-2.0
// The requirements modifier: what a container needs besides its device
// nodes (capabilities, rlimits, seccomp allowances, groups, env), declared
// per device kind in [[requirements]] rules. See docs/requirements.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/modifier.h"

namespace specshim::requirements {

// The annotations a rule matches on besides linux.devices. cdi.k8s.io/* is
// CDI's own request annotation; the specshim.io ones are written by
// specshim's cdi and device-plugin modifiers (docs/requirements.md).
inline constexpr std::string_view kCdiAnnotationPrefix = "cdi.k8s.io/";
inline constexpr std::string_view kCdiDevicesAnnotation = "specshim.io/cdi-devices";
inline constexpr std::string_view kResourcesAnnotation = "specshim.io/resources";

// kUnlimited is RLIM_INFINITY as OCI specs and runc spell it.
inline constexpr std::uint64_t kUnlimited = ~std::uint64_t{0};

// Match holds when any device path glob matches a linux.devices[].path, or
// any CDI kind (vendor/class) or resource name is requested.
struct Match {
  std::vector<std::string> devices;
  std::vector<std::string> cdi_kinds;
  std::vector<std::string> resources;
};

struct Limit {
  std::string type;  // RLIMIT_MEMLOCK
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
};

// Rule is one validated [[requirements]] table.
struct Rule {
  std::string name;
  Match match;
  std::vector<std::string> capabilities;     // canonical CAP_ names
  std::vector<std::string> capability_sets;  // bounding, effective, permitted, inheritable, ambient
  std::vector<Limit> rlimits;
  std::vector<std::string> seccomp_allow;
  std::vector<std::uint32_t> additional_gids;
  std::vector<std::string> env;  // KEY=VALUE
};

// read_rules reads and validates every [[requirements]] table of s (the
// view build_chain hands the factory). Capability names are checked with
// libcap against the running kernel and syscall names with libseccomp; every
// error names the rule.
std::vector<Rule> read_rules(config::Section& s);

// InheritedLimit returns {soft, hard} of an rlimit type as the runtime's
// child would inherit it when the spec does not set that type.
using InheritedLimit = std::function<std::pair<std::uint64_t, std::uint64_t>(std::string_view type)>;

// rlimit_resource maps an OCI rlimit type (RLIMIT_MEMLOCK) to its
// <sys/resource.h> number, or -1 when the type is not one runc knows.
int rlimit_resource(std::string_view type);

// own_limit is InheritedLimit for the real shim: runc is exec'd by this
// process, so the container inherits this process's limits.
std::pair<std::uint64_t, std::uint64_t> own_limit(std::string_view type);

}  // namespace specshim::requirements
