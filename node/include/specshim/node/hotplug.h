// SPDX-License-Identifier: Apache-2.0
// Declarative hot-plug: the desired-state file that says which devices a
// container should have (read by `specshim reconcile` and, at create, by the
// hotplug modifier), the --device argument both it and `specshim attach`
// take, and the grant file the modifier leaves in the bundle. See
// docs/reconcile.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/base/device_rules.h"
#include "specshim/node/docker.h"
#include "specshim/node/pod_identity.h"

namespace specshim::hotplug {

// DeviceArg is `HOST[:CONTAINER[:PERMS]]`: CONTAINER defaults to HOST, PERMS
// (a non-empty subset of rwm) to rwm, written in rwm order.
struct DeviceArg {
  std::string host;
  std::string container;
  std::string permissions = "rwm";
  bool operator==(const DeviceArg&) const = default;
};
// parse_device_arg throws Error naming the argument and what is wrong.
DeviceArg parse_device_arg(std::string_view arg);

// canonical_permissions returns p as a subset of "rwm" in that order, or
// nullopt when p is empty or has another letter or a letter twice.
std::optional<std::string> canonical_permissions(std::string_view p);

// ---- [hotplug] ----

// Bound is what hot-plug may give a container: anything (none), or an
// accelerator only when the kubelet allocated it to a container of the
// container's pod (pod_allocation, specshim/node/pod_allocation.h). reconcile,
// the modifier and attach all apply it.
enum class Bound { none, pod_allocation };

// Config is the [hotplug] table: the modifier is off unless enabled; reconcile
// reads desired, proc and bound whether or not it is, attach reads bound.
struct Config {
  bool enabled = false;
  std::string desired;         // the desired-state file (kDefaultDesired)
  std::string proc = "/proc";  // where <proc>/driver/nvidia/gpus is
  Bound bound = Bound::none;
  std::string docker_root = docker::kDefaultDataRoot;  // dockerd's data-root, for `docker` entries
};
// kubelet_configured tells a config that says the node has a kubelet:
// [kubelet] root set, or a modifier that asks it on ([device-plugin] or
// [cpuset] enabled, an [[env-devices]] entry).
bool kubelet_configured(config::Section& root);
// read_config reads [hotplug]; config errors name the key. bound defaults
// to pod_allocation where the config says the node has a kubelet
// (kubelet_configured), else to none: on a Kubernetes node hot-plug stays
// inside the pod's allocation unless `bound = "none"` is written.
Config read_config(config::Section& s, bool kubelet = false);

// ---- the desired-state file ----

inline constexpr const char* kDefaultDesired = "/etc/specshim/hotplug.yaml";
inline constexpr std::size_t kMaxDesiredBytes = 4 << 20;
inline constexpr std::size_t kMaxEntries = 4096;

// PodSelector matches containerd's io.kubernetes.cri.sandbox-namespace,
// sandbox-name and container-name of a container created through CRI.
struct PodSelector {
  std::string ns;
  std::string name;
  std::string container;
  bool operator==(const PodSelector&) const = default;
};

// Entry is one item of `containers:`: who (a pod's container, or a
// container id) and what it should have (its wants()).
//
// Want is one thing an entry asks for: a device node, an NVIDIA GPU by UUID
// or a CDI device. Its key() is how reconcile records it ("device
// HOST:CONTAINER:PERMS", "gpu UUID", "cdi NAME"), and parse() reads a key
// back (nullopt for any other text).
struct Want {
  enum class Kind { device, gpu, cdi };
  Kind kind = Kind::device;
  std::string arg;  // HOST:CONTAINER:PERMS, the UUID, the qualified CDI name
  std::string key() const;
  static std::optional<Want> parse(std::string_view key);
  bool operator==(const Want&) const = default;
};

struct Entry {
  int line = 0;
  std::optional<PodSelector> pod;
  std::string id;      // a container id, when pod and docker are unset
  std::string docker;  // a name dockerd gave (`docker: {name: …}`), when pod and id are unset
  std::vector<DeviceArg> devices;
  std::vector<std::string> cdi;   // qualified CDI names
  std::vector<std::string> gpus;  // NVIDIA GPU UUIDs, as written
  bool shared = false;            // its devices may also be wanted by other shared entries
  // who is "pod `dev/box-7` container `main`", "docker container `gpu-a`"
  // or "container `ID`".
  std::string who() const;
  // wants are its devices, GPUs and CDI devices, in that order, each in
  // file order; keys() are their keys.
  std::vector<Want> wants() const;
  std::vector<std::string> keys() const;
  // selects: docker_name is dockerd's name for the container ("" when
  // dockerd has none: docker_name_of).
  bool selects(const std::string& container_id, const pod_identity::Identity& identity,
               const std::string& docker_name = "") const;
};

struct Desired {
  std::string file;
  std::vector<Entry> entries;
  // where is "FILE:LINE".
  std::string where(const Entry& e) const { return file + ":" + std::to_string(e.line); }
  // names_docker tells whether an entry selects by dockerd's name.
  bool names_docker() const;
};

// parse_desired reads a desired-state file (YAML or JSON). Throws Error
// "FILE:LINE: what" for a malformed file, an entry selecting the same
// container as an earlier one, or a device two entries want when they are
// not both `shared: true`.
Desired parse_desired(std::string_view text, const std::string& file);

// read_desired takes a shared flock on FILE.lock when that file exists
// (waiting at most 10 s for a writer), then reads and parses file (at most
// kMaxDesiredBytes, a regular file). nullopt when file does not exist.
std::optional<Desired> read_desired(const std::filesystem::path& file);

// GpuNode maps a GPU UUID to its host node (/dev/nvidia3); it throws when
// the UUID is unknown.
using GpuNode = std::function<std::string(const std::string& uuid)>;

// NodeKey names the host device a path opens ("c 195:3"), so that two paths
// to one node count as one device; "" when it does not know.
using NodeKey = std::function<std::string(const std::string& host_path)>;

// check_sharing throws Error naming both entries when two entries want the
// same host device and not both say `shared: true`. A device is its host
// path, or its numbers when node_key knows them; a GPU is its node when
// gpu_node is given, its UUID otherwise; a CDI device is its name.
void check_sharing(const Desired& d, const GpuNode& gpu_node = nullptr, const NodeKey& node_key = nullptr);

// select returns the entry selecting the container, or nullptr. Two entries
// selecting it (an id entry and a pod or docker entry) is an error naming
// both lines.
const Entry* select(const Desired& d, const std::string& container_id, const pod_identity::Identity& identity,
                    const std::string& docker_name = "");

// docker_name_of is dockerd's name for the container when an entry of d
// selects by it (read from config.docker_root: docker::container_name), ""
// otherwise or when dockerd has no record of it. Throws Error when the
// record cannot be read.
std::string docker_name_of(const Desired& d, const Config& config, const std::string& container_id);

// ---- what create gave: <bundle>/specshim-hotplug.json ----

inline constexpr const char* kGrantFile = "specshim-hotplug.json";

// GrantedDevice is a node the hotplug modifier put in linux.devices for key.
struct GrantedDevice {
  std::string key;
  std::string path;
  std::string host_path;
  char type = 'c';
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::string permissions = "rwm";
  std::uint32_t file_mode = 0666;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  bool operator==(const GrantedDevice&) const = default;
};

// CreateGrant is what the hotplug modifier gave a container at create: the nodes,
// the allow rules it appended to linux.resources.devices for them (which
// `reconcile` takes back when the file stops listing a node), and the CDI
// names it handed to the cdi modifier (those stay until the container is
// created again).
struct CreateGrant {
  std::string container;
  std::string desired;  // FILE:LINE of the entry
  std::vector<GrantedDevice> devices;
  std::vector<DeviceRule> rules;
  std::vector<std::string> cdi;
  bool operator==(const CreateGrant&) const = default;
};

// device_of describes the host node a DeviceArg names (symlinks followed
// only while they stay under /dev, as create does): its type, numbers, mode,
// owner and resolved path, for key. Throws Error naming the host path.
GrantedDevice device_of(const DeviceArg& a, const std::string& key);

// node_json is a node's fields as the grant and the attach record write them
// (path, hostPath, type, major, minor, permissions, fileMode, uid, gid).
Json node_json(const GrantedDevice& d);

// rule_json is a rule as linux.resources.devices writes it; rule_from_json
// reads one back (where names it in errors).
Json rule_json(const DeviceRule& r);
DeviceRule rule_from_json(const Json& j, const std::string& where);

std::string grant_json(const CreateGrant& g);
// parse_grant throws Error naming file and the field.
CreateGrant parse_grant(std::string_view text, const std::string& file);
// read_grant reads <bundle>/specshim-hotplug.json; nullopt when there is none.
std::optional<CreateGrant> read_grant(const std::filesystem::path& bundle);

}  // namespace specshim::hotplug
