// SPDX-License-Identifier: Apache-2.0
// Which host devices are accelerators, and which of them the kubelet
// allocated to a pod (specshim/node/pod_allocation.h). Every source is read at
// most once per Node: the checkpoint (a file), the CDI spec dirs, the
// NVIDIA driver's GPU list, and PodResources once per pod.
#include "specshim/node/pod_allocation.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>

#include "specshim/base/error.h"
#include "specshim/kubelet/budget.h"
#include "specshim/kubelet/checkpoint.h"
#include "specshim/kubelet/client.h"
#include "specshim/kubelet/errors.h"
#include "specshim/node/cdi.h"
#include "specshim/node/kubelet_session.h"
#include "specshim/node/nvidia_gpus.h"

namespace specshim::pod_allocation {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Node: a host path and its number.
struct HostNode {
  std::string path;
  DeviceNumber number;
};

// cdi_node_number is the number of a CDI device node: the host node's when
// there is one (hostPath, else path), else the numbers the spec writes.
std::optional<HostNode> cdi_node(const cdi::DeviceNode& n) {
  std::string host = n.host_path.empty() ? n.path : n.host_path;
  if (auto num = number_of(host)) return HostNode{host, *num};
  if ((n.type == "c" || n.type == "b") && n.major > 0) return HostNode{host, DeviceNumber{n.type[0], n.major, n.minor}};
  return std::nullopt;
}

// gpu_of strips a shared device ID's replica suffix ("GPU-1::0", as
// time-slicing plugins name replicas) to the GPU's UUID.
std::string gpu_id(std::string_view id) {
  auto sep = id.find("::");
  return lower(id.substr(0, sep));
}

}  // namespace

std::string DeviceNumber::str() const {
  return std::string(1, type) + " " + std::to_string(major) + ":" + std::to_string(minor);
}

std::optional<DeviceNumber> number_of(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (S_ISCHR(st.st_mode)) return DeviceNumber{'c', major(st.st_rdev), minor(st.st_rdev)};
  if (S_ISBLK(st.st_mode)) return DeviceNumber{'b', major(st.st_rdev), minor(st.st_rdev)};
  return std::nullopt;
}

bool Sources::knows(std::string_view resource) const {
  if (std::find(resources.begin(), resources.end(), resource) != resources.end()) return true;
  return std::any_of(env_lists.begin(), env_lists.end(), [&](const EnvList& e) { return e.counts(resource); });
}

std::string Accelerator::describe() const {
  std::string out = host_path + " (" + number.str();
  if (!gpu.empty()) out += ", GPU " + gpu;
  if (!of.empty()) out += ", of " + join(of, ", ");
  return out + ")";
}

bool Allocation::holds(const DeviceNumber& n) const {
  return std::any_of(holdings.begin(), holdings.end(), [&](const Holding& h) { return h.devices.count(n) > 0; });
}

Allocation Allocation::of_container(const std::string& container) const {
  Allocation out{pod, {}, notes};
  for (const auto& h : holdings)
    if (h.container == container) out.holdings.push_back(h);
  return out;
}

std::string Allocation::describe() const {
  std::vector<std::string> items;
  for (const auto& h : holdings) {
    std::vector<std::string> numbers;
    for (const auto& n : h.devices) numbers.push_back(n.str());
    items.push_back(h.what + " of container " + q(h.container) + " (" +
                    (numbers.empty() ? "no device node" : join_some(numbers, ", ")) + ")");
  }
  if (items.empty()) return "nothing" + (notes.empty() ? "" : " (" + join(notes, "; ") + ")");
  return join_some(items, ", ");
}

PodResourcesLookup helper_lookup(const Sources& sources) {
  auto client = std::make_shared<std::unique_ptr<kubelet::KubeletClient>>();
  kubelet::ClientOptions options{sources.kubelet_root};
  auto budget = sources.budget;
  return [client, options, budget](const std::string& ns, const std::string& name) {
    if (!*client) *client = kubelet::make_helper_client(options);
    return (*client)->pod_resources(ns, name, kubelet::Budget(budget));
  };
}

struct Node::Reads {
  Reads(Sources s, PodResourcesLookup l) : sources(std::move(s)), lookup(std::move(l)) {}
  Sources sources;
  PodResourcesLookup lookup;

  bool checkpoint_read = false;
  std::optional<kubelet::Checkpoint> checkpoint_;
  std::optional<std::vector<nvidia::Gpu>> gpus_;
  std::optional<cdi::Registry> registry_;
  std::optional<std::map<DeviceNumber, Accelerator>> accelerators_;
  std::map<std::string, Allocation> allocations;
  std::map<std::string, std::string> failures;

  const kubelet::Checkpoint* checkpoint() {
    if (!checkpoint_read) {
      auto file = kubelet::checkpoint_file(sources.kubelet_root);
      try {
        checkpoint_ = kubelet::Checkpoint::read(file);
      } catch (const std::exception& e) {
        throw Error("read the kubelet's checkpoint " + q(file.string()) + ": " + describe(e));
      }
      checkpoint_read = true;
    }
    return checkpoint_ ? &*checkpoint_ : nullptr;
  }

  const std::vector<nvidia::Gpu>& gpus() {
    if (!gpus_) gpus_ = nvidia::read_gpus(sources.proc);
    return *gpus_;
  }

  const cdi::Registry* registry() {
    if (!sources.cdi_dirs) return nullptr;
    if (!registry_) registry_ = cdi::load_specs(*sources.cdi_dirs);
    return &*registry_;
  }

  // gpu_node is the GPU whose UUID is id (a replica's suffix dropped), or nullptr.
  const nvidia::Gpu* gpu(std::string_view id) {
    std::string want = gpu_id(id);
    for (const auto& g : gpus())
      if (lower(g.uuid) == want) return &g;
    return nullptr;
  }

  // gpu_number is the number of a GPU's node: the host node's, else the
  // driver's (major 195) when the node is not there.
  static HostNode gpu_node(const nvidia::Gpu& g) {
    if (auto n = number_of(g.node())) return {g.node(), *n};
    return {g.node(), DeviceNumber{'c', 195, g.minor}};
  }

  // cdi_nodes are the nodes a CDI device makes; with spec_level, its spec
  // file's too (/dev/nvidiactl). Empty when no spec file defines it.
  std::vector<HostNode> cdi_nodes(const std::string& name, bool spec_level) {
    std::vector<HostNode> out;
    const cdi::Registry* reg = registry();
    const cdi::DeviceRef* ref = reg ? reg->find(name) : nullptr;
    if (!ref) return out;
    auto add = [&](const cdi::ContainerEdits& e) {
      for (const auto& n : e.device_nodes)
        if (auto h = cdi_node(n)) out.push_back(*h);
    };
    add(ref->device->edits);
    if (spec_level) add(ref->spec->edits);
    return out;
  }

  // kind_names are the qualified names of every device of kind.
  std::vector<std::string> kind_names(const std::string& kind) {
    std::vector<std::string> out;
    if (const cdi::Registry* reg = registry())
      for (const auto& [name, ref] : reg->devices)
        if (name.rfind(kind + "=", 0) == 0) out.push_back(name);
    return out;
  }

  // entry_names are the CDI names an entry's Allocate answer hands out: its
  // CDI devices and cdi.k8s.io annotations, and its env list read as each
  // [[env-devices]] entry counting its resource reads it.
  std::vector<std::string> entry_names(const kubelet::CheckpointEntry& e) {
    std::vector<std::string> out;
    if (!e.alloc) return out;
    Grant g = granted(*e.alloc, e.resource, "the checkpoint");
    out = g.cdi_devices;
    for (const auto& entry : sources.env_lists) {
      if (!entry.counts(e.resource)) continue;
      GrantedNames given = entry.read(g);
      out.insert(out.end(), given.names.begin(), given.names.end());
      if (given.all) {
        auto all = kind_names(entry.kind);
        out.insert(out.end(), all.begin(), all.end());
      }
    }
    return out;
  }

  // entry_nodes are the host nodes an entry hands out: its answer's device
  // specs, its CDI names' nodes, and the GPUs its device IDs name.
  std::vector<HostNode> entry_nodes(const kubelet::CheckpointEntry& e, bool spec_level) {
    std::vector<HostNode> out;
    for (const auto& id : e.device_ids)
      if (const nvidia::Gpu* g = gpu(id)) out.push_back(gpu_node(*g));
    if (!e.alloc) return out;
    for (const auto& d : e.alloc->devices)
      if (auto n = number_of(d.host_path)) out.push_back({d.host_path, *n});
    for (const auto& name : entry_names(e))
      for (auto& n : cdi_nodes(name, spec_level)) out.push_back(std::move(n));
    return out;
  }

  void add_accelerator(std::map<DeviceNumber, Accelerator>& into, const HostNode& n, const std::string& of,
                       const std::string& gpu_uuid = "") {
    auto [it, fresh] = into.emplace(n.number, Accelerator{n.number, n.path, gpu_uuid, {}});
    if (it->second.gpu.empty()) it->second.gpu = gpu_uuid;
    if (std::find(it->second.of.begin(), it->second.of.end(), of) == it->second.of.end()) it->second.of.push_back(of);
  }

  const std::map<DeviceNumber, Accelerator>& accelerators() {
    if (accelerators_) return *accelerators_;
    std::map<DeviceNumber, Accelerator> out;
    for (const auto& g : gpus()) add_accelerator(out, gpu_node(g), "the NVIDIA driver", g.uuid);
    if (const kubelet::Checkpoint* cp = checkpoint()) {
      std::vector<kubelet::CheckpointEntry> entries;
      try {
        entries = cp->entries_of_resources([this](std::string_view r) { return sources.knows(r); });
      } catch (const std::exception& e) {
        throw Error(describe(e));
      }
      for (const auto& e : entries)
        for (const auto& n : entry_nodes(e, false)) add_accelerator(out, n, q(e.resource));
    }
    for (const auto& entry : sources.env_lists)
      for (const auto& name : kind_names(entry.kind))
        for (const auto& n : cdi_nodes(name, false)) add_accelerator(out, n, "CDI kind " + q(entry.kind));
    // The GPU a node is, wherever it was seen.
    for (const auto& g : gpus())
      if (auto it = out.find(gpu_node(g).number); it != out.end() && it->second.gpu.empty()) it->second.gpu = g.uuid;
    accelerators_ = std::move(out);
    return *accelerators_;
  }

  static std::set<DeviceNumber> numbers(const std::vector<HostNode>& nodes) {
    std::set<DeviceNumber> out;
    for (const auto& n : nodes) out.insert(n.number);
    return out;
  }

  static bool has(const Allocation& a, const std::string& container, const std::string& what) {
    return std::any_of(a.holdings.begin(), a.holdings.end(),
                       [&](const Holding& h) { return h.container == container && h.what == what; });
  }

  Allocation allocate(const pod_identity::PodRef& pod, const std::string& uid) {
    Allocation a;
    a.pod = pod.str();
    const kubelet::Checkpoint* cp = checkpoint();
    auto resource_what = [](const std::string& resource, const std::vector<std::string>& ids) {
      return q(resource) + " " + join_some(ids, ", ");
    };
    try {
      if (cp && !uid.empty())
        for (const auto& e : cp->entries_of_pod(uid))
          a.holdings.push_back({e.container, resource_what(e.resource, e.device_ids), numbers(entry_nodes(e, true))});
    } catch (const kubelet::Error& e) {
      throw Error(describe(e));
    }
    kubelet::PodResources pr;
    try {
      pr = lookup(pod.ns, pod.name);
    } catch (const kubelet::NotFound& e) {
      a.notes.push_back(std::string("PodResources knows no such pod: ") + e.what());
      return a;
    } catch (const std::exception& e) {
      throw Error("cannot tell what pod " + q(pod.str()) + " holds: " + describe(e));
    }
    for (const auto& [container, resources] : pr.containers)
      for (const auto& [resource, ids] : resources) {
        std::string what = resource_what(resource, ids);
        if (ids.empty() || has(a, container, what)) continue;
        std::vector<HostNode> nodes;
        for (const auto& id : ids)
          if (const nvidia::Gpu* g = gpu(id)) nodes.push_back(gpu_node(*g));
        if (cp) {
          try {
            for (const auto& e : cp->entries_for_devices(resource, ids))
              if (e.container == container)
                for (auto& n : entry_nodes(e, true)) nodes.push_back(std::move(n));
          } catch (const kubelet::Error& e) {
            throw Error(describe(e));
          }
        }
        a.holdings.push_back({container, what, numbers(nodes)});
      }
    for (const auto& [container, assignment] : pr.assignments)
      for (const auto& claim : assignment.dynamic_resources) {
        std::vector<std::string> names;
        for (const auto& res : claim.claim_resources)
          names.insert(names.end(), res.cdi_devices.begin(), res.cdi_devices.end());
        std::vector<HostNode> nodes;
        for (const auto& n : names)
          for (auto& h : cdi_nodes(n, true)) nodes.push_back(std::move(h));
        a.holdings.push_back({container,
                              "DRA claim " + q(claim.claim_namespace + "/" + claim.claim_name) + " (" +
                                  (names.empty() ? "no CDI device" : join_some(names, ", ")) + ")",
                              numbers(nodes)});
      }
    return a;
  }
};

Node::Node(Sources sources, PodResourcesLookup lookup)
    : state_(std::make_unique<Reads>(std::move(sources), std::move(lookup))) {}
Node::~Node() = default;

const Sources& Node::sources() const {
  return state_->sources;
}

const std::map<DeviceNumber, Accelerator>& Node::accelerators() {
  return state_->accelerators();
}

const Accelerator* Node::accelerator(const DeviceNumber& n) {
  const auto& all = accelerators();
  auto it = all.find(n);
  return it == all.end() ? nullptr : &it->second;
}

const Allocation& Node::allocation(const pod_identity::PodRef& pod, const std::string& uid) {
  std::string key = pod.str() + "\n" + uid;
  if (auto it = state_->allocations.find(key); it != state_->allocations.end()) return it->second;
  if (auto it = state_->failures.find(key); it != state_->failures.end()) throw Error(it->second);
  try {
    return state_->allocations.emplace(key, state_->allocate(pod, uid)).first->second;
  } catch (const Error& e) {
    state_->failures.emplace(key, e.what());
    throw;
  }
}

Allocation Node::container_allocation(const pod_identity::PodRef& pod, const std::string& uid,
                                      const std::string& container) {
  return allocation(pod, uid).of_container(container);
}

std::vector<Asked> Node::cdi_wants(const std::string& name, const std::string& what) {
  std::vector<Asked> out;
  for (const auto& n : state_->cdi_nodes(name, true)) out.push_back({what, n.path, n.number});
  return out;
}

Target target_of(const Spec& spec) {
  Target t;
  try {
    t.identity = pod_identity::identify(spec);
  } catch (const Error& e) {
    t.identity_error = e.what();
  }
  return t;
}

void check_bound(Node& node, const Target& target, const std::vector<Asked>& wants) {
  std::vector<std::string> refused;
  const auto& id = target.identity;
  for (const auto& w : wants) {
    const Accelerator* acc = node.accelerator(w.number);
    if (!acc) continue;  // a device of no known resource is not bound
    std::string head = w.what + ": " + acc->describe();
    if (!target.identity_error.empty() || id.pod.empty()) {
      refused.push_back(head + " is an accelerator, and the container belongs to no pod (" +
                        (target.identity_error.empty()
                             ? std::string("created outside CRI, no specshim.io/pod annotation")
                             : "its pod annotations are refused: " + target.identity_error) +
                        ")");
      continue;
    }
    try {
      const Allocation& a = node.allocation(id.pod, id.uid);
      if (a.holds(w.number)) continue;
      refused.push_back(head + " is not allocated to pod " + q(id.pod.str()) + ", which holds " + a.describe());
    } catch (const Error& e) {
      refused.push_back(head + ": " + e.what());
    }
  }
  if (!refused.empty())
    throw Refused(join(refused, "; ") +
                  "; [hotplug] bound = \"pod-allocation\" gives an accelerator only to a container of a pod the "
                  "kubelet allocated it to");
}

}  // namespace specshim::pod_allocation
