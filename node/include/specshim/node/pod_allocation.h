// SPDX-License-Identifier: Apache-2.0
// Which host devices are accelerators, and which of them the kubelet
// allocated to a pod: the one answer that hot-plug's bound ([hotplug] bound
// = "pod-allocation": reconcile, the hotplug modifier, attach) and
// diagnose's allocation layer share. Devices are compared by their numbers
// (type, major, minor), never by path: a symlink and its target, or two
// CDI names of one GPU, are one device.
//
// An accelerator is a device of a resource specshim knows: a node that a
// kubelet checkpoint entry of a [[device-plugin.resources]] name or an
// [[env-devices]] resource hands out (the Allocate answer's device specs, its
// CDI names, its env list read as env-devices reads it), a node of a device
// of an [[env-devices]] kind in the CDI spec dirs, or an NVIDIA GPU the
// driver lists. Any other node (a FUSE node, /dev/kmsg) is not one.
// See docs/reconcile.md, "Bound to the pod's allocation".
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/base/spec.h"
#include "specshim/kubelet/client.h"
#include "specshim/kubelet/types.h"
#include "specshim/node/grant.h"
#include "specshim/node/pod_identity.h"

namespace specshim::pod_allocation {

// DeviceNumber is a device as the kernel knows it.
struct DeviceNumber {
  char type = 'c';  // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  auto operator<=>(const DeviceNumber&) const = default;
  std::string str() const;  // "c 195:3"
};

// number_of stats path, following symlinks: nullopt when nothing is there
// or it is not a character or block device.
std::optional<DeviceNumber> number_of(const std::string& path);

// EnvList is an [[env-devices]] entry as the allocation reads an answer
// through it: the answer's env list (and mounts) name devices of one CDI kind.
struct EnvList {
  std::string kind;                                       // vendor/class
  std::function<bool(std::string_view resource)> counts;  // a resource whose answers it reads
  std::function<GrantedNames(const Grant&)> read;         // what an answer gave it
};

// Sources is where the node's config says to look. spec-modifiers'
// allocation_sources (specshim/modifiers/allocation_sources.h) reads them from a config.
struct Sources {
  std::vector<std::string> resources;                // [[device-plugin.resources]] names
  std::vector<EnvList> env_lists;                    // [[env-devices]]
  std::optional<std::vector<std::string>> cdi_dirs;  // [cdi] spec-dirs; nullopt: CDI off
  std::filesystem::path proc = "/proc";              // <proc>/driver/nvidia/gpus
  std::filesystem::path kubelet_root = kubelet::kDefaultKubeletRoot;
  std::chrono::milliseconds budget{2000};  // each PodResources call's deadline
  // knows: resource is a [[device-plugin.resources]] name or counts for an [[env-devices]] entry.
  bool knows(std::string_view resource) const;
};

// Accelerator is one host device of a resource specshim knows.
struct Accelerator {
  DeviceNumber number;
  std::string host_path;  // a host path it was seen at
  std::string gpu;        // its NVIDIA GPU UUID, when the driver lists it
  std::vector<std::string>
      of;  // what makes it one: "`nvidia.com/gpu`", "CDI kind `nvidia.com/gpu`", "the NVIDIA driver"
  // describe: "/dev/nvidia3 (c 195:3, GPU GPU-8f3c…, of `nvidia.com/gpu`)".
  std::string describe() const;
};

// Holding is one thing the kubelet allocated to a container of a pod: a
// device-plugin resource's devices, or a DRA claim, with the device
// numbers of its nodes.
struct Holding {
  std::string container;
  std::string what;  // "`nvidia.com/gpu` GPU-aaa", "DRA claim `ns/c` (example.com/accel=1)"
  std::set<DeviceNumber> devices;
};

// Allocation is what the kubelet allocated to a pod (or one container).
struct Allocation {
  std::string pod;  // "dev/box-7"
  std::vector<Holding> holdings;
  std::vector<std::string> notes;  // "PodResources knows no such pod"
  bool holds(const DeviceNumber& n) const;
  // of_container narrows it to one container's holdings.
  Allocation of_container(const std::string& container) const;
  // describe: "`nvidia.com/gpu` GPU-aaa of container `main` (c 195:0)", each
  // holding (join_some), or "nothing".
  std::string describe() const;
};

// PodResourcesLookup asks the kubelet's PodResources for a pod; it throws
// kubelet::Error (NotFound for a pod the kubelet does not run).
using PodResourcesLookup = std::function<kubelet::PodResources(const std::string& ns, const std::string& name)>;
// helper_lookup asks through the specshim-kubelet helper (made on the first
// call), each call within sources.budget.
PodResourcesLookup helper_lookup(const Sources& sources);

// Asked is one host device something would give a container.
struct Asked {
  std::string what;  // who asks, as the caller names it: "gpu GPU-1", "device /dev/x"
  std::string host_path;
  DeviceNumber number;
};

// Node is what the node's kubelet, CDI spec dirs and driver say, each read
// at most once (a reconcile pass, a create, an attach, a diagnose).
class Node {
 public:
  Node(Sources sources, PodResourcesLookup lookup);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const Sources& sources() const;
  // accelerators is every accelerator of the node, by number. Throws Error
  // when the checkpoint or the driver's list cannot be read: an unknown set
  // must not pass an accelerator off as an ordinary device.
  const std::map<DeviceNumber, Accelerator>& accelerators();
  const Accelerator* accelerator(const DeviceNumber& n);
  // allocation is what the kubelet allocated to every container of pod:
  // the checkpoint's entries of its uid (when known) and PodResources
  // (device IDs through the checkpoint and the driver's GPU list, DRA
  // claims through the CDI spec dirs). A missing checkpoint adds nothing,
  // a pod PodResources does not know adds nothing (a note says so).
  // Throws Error naming the socket when PodResources does not answer in
  // time; the same error again for the same pod.
  const Allocation& allocation(const pod_identity::PodRef& pod, const std::string& uid);
  // container_allocation is allocation() narrowed to one container.
  Allocation container_allocation(const pod_identity::PodRef& pod, const std::string& uid,
                                  const std::string& container);
  // cdi_wants are the host nodes a CDI device brings (its own and its spec
  // file's), as wants named what; empty when no spec file defines it.
  std::vector<Asked> cdi_wants(const std::string& name, const std::string& what);

 private:
  struct Reads;  // what it read, each source at most once
  std::unique_ptr<Reads> state_;
};

// Target is the container a want is for: its identity, or why it has none.
struct Target {
  pod_identity::Identity identity;
  std::string identity_error;  // why identify() refused its annotations ("" when it did not)
};
Target target_of(const Spec& spec);

// Refused is a want the bound refuses; the message names the device (and
// its GPU UUID), the pod and what the pod holds.
class Refused : public Error {
 public:
  using Error::Error;
};

// check_bound throws Refused when any want is an accelerator the kubelet
// did not allocate to a container of the target's pod (or the target has
// no pod), naming every refused want; wants of no known resource pass.
void check_bound(Node& node, const Target& target, const std::vector<Asked>& wants);

}  // namespace specshim::pod_allocation
