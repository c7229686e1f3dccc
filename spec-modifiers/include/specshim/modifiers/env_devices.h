// SPDX-License-Identifier: Apache-2.0
// The env-devices modifier: device lists handed over in an environment
// variable (NVIDIA_VISIBLE_DEVICES, AMD_VISIBLE_DEVICES, ...) become CDI
// requests, checked against what the kubelet granted the container. One
// [[env-devices]] entry per variable; vendors are config, not code. The cdi
// modifier resolves and injects the requests (Context::device_requests), so
// nodes, mounts, hooks, rules and requirements all take one path. See
// docs/env-devices.md.
//
// The pieces, each testable alone:
//   parse_device_list  a variable's value, with NCT's rules (research §1.3)
//   read_entries       the [[env-devices]] entries
//   grant_of           what one stored Allocate answer granted, as CDI names
//   EnvDevices         the modifier (src/env_devices/): request, trust, grant, hand-over
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/kubelet_session.h"

namespace specshim::env_devices {

// DeviceList is a parsed value.
struct DeviceList {
  enum class What {
    nothing,  // unset, empty, or `void` anywhere: no devices, no edits
    all,      // `all` came first of all/none
    none,     // `none` came first: the kind's spec-level edits only
    names,    // device names, in order, each once
  };
  What what = What::nothing;
  std::vector<std::string> names;
  bool operator==(const DeviceList&) const = default;
};

// kMaxNames bounds a list; a longer one is refused (no node has that many devices).
inline constexpr std::size_t kMaxNames = 1024;

// Grammar is how a vendor's runtime reads its variable.
enum class Grammar {
  nvidia,  // NVIDIA's runtime: names, indices, UUIDs, `all`, `none`, `void`
  ascend,  // Ascend's runtime: ids, ranges `0-3`, `Ascend910-N`/`npu-N`, `void`;
           // an entry with no item is passed over (below)
};

// value_of is the variable's value in env as grammar reads it: its last
// entry; with the Ascend grammar the last entry that lists something, so an
// empty pod-spec entry (`ASCEND_VISIBLE_DEVICES=`) does not cancel the
// device plugin's list (HAMi#2954). nullopt: no entry counts.
std::optional<std::string> value_of(Grammar grammar, const Spec& spec, std::string_view env);

// parse_device_list reads a value as NVIDIA's runtime does: split on ',',
// trim spaces, drop empty items; `void` anywhere means nothing; the first
// item that is exactly `all` or `none` decides; otherwise the names, with
// repeats dropped (NCT turns `GPU-a,GPU-a` into no GPU). Names are not
// checked here. Throws Error for more than kMaxNames names.
DeviceList parse_device_list(std::string_view value);

// parse_ascend_list reads a value as Ascend's runtime does: split on ',',
// trim spaces; `void` means nothing; each item is an id (`3`), a range of
// ids (`0-3`, both ends included) or a name (`Ascend910-3`, `Ascend310P-3`,
// `npu-3`) naming that id; names of two chip types in one list are refused.
// The ids come out ascending, each once, as decimal names ("0", "3"): the
// device names of Ascend's CDI specs. Throws Error naming the item that is
// none of these, and for more than kMaxNames ids.
DeviceList parse_ascend_list(std::string_view value);

// parse_list reads value with grammar's rules.
DeviceList parse_list(Grammar grammar, std::string_view value);

enum class OnExcess { fail, clamp };
enum class Trust { honour, check };     // privileged containers
enum class Outside { honour, ignore };  // containers created outside Kubernetes
enum class After { void_value, keep };  // what the variable says once injected
// Ignored is what becomes of a request specshim does not honour (no grant,
// outside Kubernetes with `ignore`, a sandbox): made inert for every runtime
// after specshim (After says how), or the create fails naming why.
enum class Ignored { inert, fail };
// Scope is which devices `all` and index names count among: the node's
// (host), or only those whose nodes this runtime's /dev holds (visible: a
// specshim that is the runtime of a dockerd or containerd inside a container).
enum class Scope { host, visible };

// Entry is one [[env-devices]] table.
struct Entry {
  std::string env;                     // NVIDIA_VISIBLE_DEVICES
  std::string kind;                    // nvidia.com/gpu: bare names become <kind>=<name>
  std::string volume_mounts;           // /var/run/nvidia-container-devices, or empty
  std::vector<std::string> resources;  // extended resources whose grant counts; "x/*" globs; default {kind}
  OnExcess on_excess = OnExcess::fail;
  Trust privileged = Trust::honour;
  std::vector<std::string> trusted_namespaces;
  Outside outside_kubernetes = Outside::honour;
  Grammar grammar = Grammar::nvidia;
  After after = After::void_value;
  Ignored ignored = Ignored::inert;
  Scope scope = Scope::host;
  std::filesystem::path kubelet_root = kubelet::kDefaultKubeletRoot;  // kubelet-root, else [kubelet] root
  std::chrono::milliseconds budget{2000};  // [kubelet] budget-ms (the checkpoint is a file: no key of its own)

  bool counts(std::string_view resource) const;  // resource matches one of resources
};

// Vendor is what specshim knows of one vendor's variable: how its runtime
// reads the value, and what the variable should say once the devices are
// in (kVendors, the one table of them). An entry for a variable the table
// does not list reads like NVIDIA's.
struct Vendor {
  std::string_view env;
  Grammar grammar;
  After after;
  std::vector<std::string> resources;  // default `resources`; empty: the entry's kind
  // legacy_hooks: the names (a hook path's last component) of the vendor's
  // own OCI hook, which reads the variable and injects the devices itself.
  // dockerd's `--gpus` adds NVIDIA's as a prestart hook. Once env-devices owns
  // the variable, the hook is removed from the spec (its devices come
  // through cdi); specshim installed under such a name is a stand-in that
  // fails a create whose request reached it (legacy_hook.h).
  std::vector<std::string_view> legacy_hooks;
};
extern const std::vector<Vendor> kVendors;
const Vendor& vendor_of(std::string_view env);

// legacy_hook_vendor is the vendor whose legacy_hooks lists name, or nullptr.
const Vendor* legacy_hook_vendor(std::string_view name);

// read_entries reads every [[env-devices]] entry strictly, with kubelet's
// ([kubelet]) root and budget for the entries that set no kubelet-root.
// Throws config errors.
std::vector<Entry> read_entries(config::Section& root, const KubeletKeys& kubelet = {});

// Granted is what one answer granted, as qualified CDI names.
using Granted = GrantedNames;

// grant_of reads a grant: the entry's variable in the answer's env (the
// volume-mounts dir as its value means: read the mounts), the mounts under
// volume-mounts, and the CDI names (CdiDevices, cdi.k8s.io/* annotations).
// Names that are not valid CDI names are left out.
Granted grant_of(const Entry& entry, const Grant& grant);

// qualify turns a list item into a qualified CDI name of kind; "" when it is
// not a valid one (why says why).
std::string qualify(std::string_view kind, std::string_view item, std::string* why = nullptr);

}  // namespace specshim::env_devices
