// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier: learn a container's devices from the kubelet
// (its checkpoint, PodResources) and device plugins (Allocate), and merge the
// plugins' answers into the spec, pass after pass, so one plugin's answer can
// name devices of another (a spot GPU answering with the real GPU's ID). See
// docs/device-plugin.md for providers, merge rules and the trust model.
//
// The pieces are split so they can be tested alone:
//   read_config      [device-plugin] and [[device-plugin.resources]]
//   identify         which pod and container a spec belongs to, from
//                    containerd's, CRI-O's or specshim.io annotations
//   parse_device_ids the JSON list of a direct request's annotation
//   prepare_answer   validate a plugin's answer and look its device nodes up
//   merge_answer     put a prepared answer into the spec, never twice
//   DevicePlugin     the modifier (src/device_plugin/): providers, resolver, env guard, DRA
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/base/spec.h"
#include "specshim/kubelet/client.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/kubelet_session.h"
#include "specshim/node/pod_identity.h"

namespace specshim::device_plugin {

// Annotations the modifier reads (requests) and writes (hand-overs).
inline constexpr const char* kDevicesFrom = "specshim.io/devices-from";         // container-sync
inline constexpr const char* kPod = pod_identity::kPod;                         // <ns>/<name>, outside CRI
inline constexpr const char* kDevicesFromPod = "specshim.io/devices-from-pod";  // pod-sync
inline constexpr const char* kCdiDevices = "specshim.io/cdi-devices";           // read by cdi
inline constexpr const char* kResources = "specshim.io/resources";              // read by requirements

enum class Provider { kubelet, container_sync, pod_sync, direct };
enum class OnError { fail, skip };
// ProtectEnv is what happens to a process.env entry that comes after one the
// container's own plugin answer set (the kubelet's checkpoint) and gives the
// key another value: the pod spec overriding CUDA_DEVICE_MEMORY_LIMIT_0 or
// NVIDIA_VISIBLE_DEVICES. fail: the create fails naming the key; drop: such
// entries are removed.
enum class ProtectEnv { off, fail, drop };

std::string_view to_string(Provider p);

// Resource is one [[device-plugin.resources]] entry.
struct Resource {
  std::string name;    // extended resource name, "nvidia.com/gpu"
  std::string socket;  // relative to <kubelet-root>/device-plugins/, or absolute; empty: discover
  bool allocate = false;
  OnError on_error = OnError::fail;
  std::vector<Provider> providers;
  // require_env are env keys, fnmatch(3) globs ("CUDA_DEVICE_MEMORY_LIMIT_*"),
  // each of which some key of every answer merged for this resource must
  // match: a plugin that answered instead of the one that sets them (two
  // plugins registering one resource) fails the create, whatever on-error.
  std::vector<std::string> require_env;
  bool has(Provider p) const;
};

// missing_env returns the globs of require_env that no key of envs matches.
std::vector<std::string> missing_env(const std::vector<std::string>& require_env,
                                     const std::vector<std::pair<std::string, std::string>>& envs);

// Dra is [device-plugin.dra]: container-sync and pod-sync siblings also get
// the CDI names of their source containers' DRA claims (PodResources
// dynamic_resources), handed to cdi. No resource has to be configured for it.
struct Dra {
  bool enabled = false;
  std::vector<std::string> drivers;  // empty: every driver
  bool follows(std::string_view driver) const;
};

// Config is the [device-plugin] table.
struct Config {
  bool enabled = false;
  std::filesystem::path kubelet_root = kubelet::kDefaultKubeletRoot;
  std::chrono::milliseconds budget{2000};
  bool direct_requires_pod_devices = true;
  ProtectEnv protect_env = ProtectEnv::fail;
  std::vector<Resource> resources;  // in file order, which is also merge order
  Dra dra;
  const Resource* find(std::string_view name) const;
  bool any(Provider p) const;
};

// read_table reads the table strictly (every key, every resources entry),
// enabled or not: `specshim doctor` probes the configured kubelet either way.
// kubelet-root and budget-ms default to kubelet's ([kubelet]).
// read_config is read_table, nullopt when enabled is false (the default).
// Both throw config errors.
Config read_table(config::Section& s, const KubeletKeys& kubelet = {});
std::optional<Config> read_config(config::Section& s, const KubeletKeys& kubelet = {});

// parse_device_ids reads a direct request, a JSON list of device IDs such as
// ["GPU-1","GPU-2"]. Throws Error naming the annotation.
std::vector<std::string> parse_device_ids(std::string_view key, std::string_view value);

// HostNode is a device node on the host, as stat(2) sees it.
struct HostNode {
  char type = 'c';  // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint32_t mode = 0;  // permission bits
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};
// NodeLookup describes the node at a host path (following symlinks, as
// containerd does for device-plugin devices). Throws Error.
using NodeLookup = std::function<HostNode(const std::string& host_path)>;
HostNode stat_host_node(const std::string& host_path);

// PreparedAnswer is a plugin's answer checked and turned into spec pieces.
struct PreparedAnswer {
  struct Device {
    std::string path;       // in the container
    std::string host_path;  // the host node's
    Json entry;             // linux.devices[] entry
    Json rule;              // linux.resources.devices[] allow rule with the answer's permissions
  };
  std::vector<std::pair<std::string, std::string>> envs;  // key order
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<Json> mounts;  // OCI bind mounts
  std::vector<Device> devices;
  std::vector<std::string> cdi_devices;
};

// prepare_answer validates every field of an answer and looks up its device
// nodes; it throws Error on the first bad one, before the spec is touched.
PreparedAnswer prepare_answer(const kubelet::AllocateResponse& answer, const NodeLookup& lookup);

// merge_answer adds what the answer has and the spec lacks, and records
// resource in specshim.io/resources. What is already there stays: an env or
// annotation key keeps its value, a mount destination or device path its
// entry (a differing value is appended to conflicts, for the debug log).
// Returns whether the spec changed; merging the same answer again does not.
bool merge_answer(Spec& spec, const PreparedAnswer& answer, std::string_view resource,
                  std::vector<std::string>& conflicts);

// protect_env applies policy (not off) to the env entries that override
// what answers set: an entry `K=V'` after the last `K=V` of an answer's K,
// unless it is `K=void` and K is in voided. fail throws Error naming the
// entry, its index, the answer's value and whose it is (what); drop removes
// them. Returns whether the spec changed.
bool protect_env(Spec& spec, const std::vector<Grant>& answers, ProtectEnv policy, const std::set<std::string>& voided,
                 const std::string& target);

// merge_list_annotation adds items to a comma-separated annotation, keeping
// what is there and its spelling. Returns whether the spec changed.
bool merge_list_annotation(Spec& spec, std::string_view key, const std::vector<std::string>& items);

// ClientFactory makes the kubelet client the first time a provider needs it.
using ClientFactory = KubeletClientFactory;

}  // namespace specshim::device_plugin
