// SPDX-License-Identifier: Apache-2.0
// The allocation layer: what the kubelet granted a CRI container and whether
// it reached the spec: each node, mount, env and CDI name of the plugins'
// answers cached in the device manager's checkpoint (a file), and the CDI
// devices of its DRA claims, which only PodResources tells (one List-free
// Get through the kubelet helper, within [kubelet] budget-ms, when the
// kubelet's PodResources socket exists). Then the other way round: the
// accelerator nodes any container can open (spec, hot-plug record,
// privileged) beyond its grant (specshim/node/pod_allocation.h).
#include <algorithm>

#include "diagnose/diagnose.h"
#include "specshim/base/device_rules.h"
#include "specshim/base/error.h"
#include "specshim/kubelet/budget.h"
#include "specshim/kubelet/checkpoint.h"
#include "specshim/kubelet/client.h"
#include "specshim/kubelet/errors.h"
#include "specshim/node/cdi.h"
#include "specshim/node/pod_allocation.h"

namespace specshim::shim::diagnose {
namespace {

// check_cdi_names judges CDI names the kubelet handed over (a plugin's
// CDIDevices, a DRA claim's devices) by their nodes: CRI passes them in its
// CDIDevices field and containerd injects them without an annotation, so
// only the nodes in the spec tell whether they arrived. grant names who
// granted them (the node layer's source), what the grant in messages.
void check_cdi_names(const Setup& setup, const Container& c, const std::string& grant, const std::string& what,
                     const std::vector<std::string>& names, const std::string& missing_hint, Report& r,
                     std::vector<Device>& out) {
  if (!setup.cdi_dirs) {
    r.add(kAllocation, join(names, ","), Severity::info,
          what + ": CDI devices " + join(names, ", ") + " not resolved: [cdi] is off in the config");
    return;
  }
  std::vector<std::string> missing;
  std::vector<Device> devices = cdi_devices(setup, c.spec, names, missing);
  for (const auto& n : missing)
    r.add(kAllocation, n, Severity::fail,
          what + ": no CDI spec file in " + join(*setup.cdi_dirs, ", ") + " defines " + q(n), missing_hint);
  for (auto& d : devices) {
    std::string cdi = d.source;  // CDI `vendor.com/class=name`
    d.source = grant + ", " + cdi;
    std::string how = in_spec(c.spec, d.path);
    if (how.empty())
      r.add(kAllocation, d.path, Severity::fail, what + ": " + cdi + " node " + d.path + " is not in the spec",
            "the runtime did not inject it: containerd needs enable_cdi (CRI passes CDI names in CDIDevices); "
            "specshim's cdi modifier needs them handed over ([device-plugin], [device-plugin.dra])");
    else
      r.add(kAllocation, d.path, Severity::ok, what + ": " + cdi + " node " + d.path + " in the spec (" + how + ")");
    out.push_back(std::move(d));
  }
}

// check_required_env: the answer the kubelet cached sets every key the
// resource's require-env lists. One that does not came from another plugin
// than the one that sets them (seed 002: two plugins registered one
// resource, and the pod runs without the limits the right one sets). The
// checkpoint keeps the answer, not its socket: the keys it set name the
// plugin.
void check_required_env(const Setup& setup, const kubelet::CheckpointEntry& e, Report& r) {
  const device_plugin::Resource* resource = setup.device_plugin.find(e.resource);
  if (!resource || resource->require_env.empty()) return;
  const std::vector<std::pair<std::string, std::string>> envs(e.alloc->envs.begin(), e.alloc->envs.end());
  auto missing = device_plugin::missing_env(resource->require_env, envs);
  if (missing.empty()) {
    r.add(kAllocation, e.resource, Severity::ok,
          "the answer sets every require-env key (" + join(resource->require_env, ", ") + ")");
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [k, v] : e.alloc->envs) keys.push_back(k);
  r.add(kAllocation, e.resource, Severity::fail,
        "the answer the kubelet cached has no env " + join(missing, ", ") + " (require-env of " + q(e.resource) +
            "); the plugin that answered set " + (keys.empty() ? std::string("no env") : join_some(keys, ", ")),
        "another device plugin registered " + q(e.resource) +
            " and answered for this pod, which runs without what the right plugin sets: recreate the pod once "
            "only that plugin serves the resource (`specshim doctor` names the plugins serving each resource)");
}

void check_answer(const Setup& setup, const Container& c, const kubelet::CheckpointEntry& e, Report& r,
                  std::vector<Device>& out) {
  const kubelet::AllocateResponse& a = *e.alloc;
  std::string by = "kubelet " + q(e.resource);
  for (const auto& spec_device : a.devices) {
    std::string how = in_spec(c.spec, spec_device.container_path);
    auto d = host_device(spec_device.host_path, spec_device.container_path, by);
    if (!d) {
      r.add(kAllocation, spec_device.container_path, Severity::fail,
            by + " granted host node " + q(spec_device.host_path) + ", which is not a device node on this host now",
            "the device plugin answered with a node that is gone; check the plugin and the driver");
      continue;
    }
    d->access = open_access(spec_device.permissions);
    if (how.empty())
      r.add(kAllocation, d->path, Severity::fail,
            by + " granted " + q(spec_device.host_path) + "; the spec has no entry for " + d->path,
            "the runtime did not add the plugin's answer: containerd does so for CRI; outside it, the device-plugin "
            "modifier");
    else
      r.add(kAllocation, d->path, Severity::ok,
            by + " granted " + q(spec_device.host_path) + ": in the spec (" + how + ")");
    d->bind = userns::binds_device(c.spec, d->path, d->host_path);
    out.push_back(std::move(*d));
  }
  check_required_env(setup, e, r);
  for (const auto& [key, value] : a.envs) {
    auto got = c.spec.env(key);
    if (!got)
      r.add(kAllocation, key, Severity::fail, by + " set " + key + "=" + value + "; the process has no " + key,
            "the runtime did not add the plugin's env");
    else if (*got != value)
      r.add(
          kAllocation, key, Severity::fail,
          by + " set " + key + "=" + value + "; the process gets " + key + "=" + *got + " (a later entry overrides it)",
          "the pod spec overrides what the device plugin set; remove it from the pod, or set [device-plugin] enabled "
          "= true (its protect-env = \"fail\", the default, refuses such a create)");
    else
      r.add(kAllocation, key, Severity::ok, by + " set " + key + "=" + value + ": the process has it");
  }
  for (const auto& m : a.mounts) {
    if (in_spec(c.spec, m.container_path).empty())
      r.add(kAllocation, m.container_path, Severity::fail,
            by + " mounted " + q(m.host_path) + "; the spec has no mount there",
            "the runtime did not add the plugin's mounts");
    else
      r.add(kAllocation, m.container_path, Severity::ok, by + " mounted " + q(m.host_path) + ": in the spec");
  }
  if (!a.cdi_devices.empty())
    check_cdi_names(setup, c, by, by + " answered with CDI devices", a.cdi_devices,
                    "the device plugin names a CDI device no spec file defines: is its CDI spec written?", r, out);
}

// check_checkpoint compares the plugins' answers the kubelet cached for the
// container with the spec.
void check_checkpoint(const Setup& setup, const Container& c, Report& r, std::vector<Device>& out) {
  const auto& id = c.identity;
  auto file = kubelet::checkpoint_file(setup.kubelet_root);
  std::vector<kubelet::CheckpointEntry> entries;
  try {
    auto cp = kubelet::Checkpoint::read(file);
    if (!cp) {
      r.add(kAllocation, "kubelet", Severity::info,
            "no device manager checkpoint at " + q(file.string()) +
                ": no device plugin granted anything here, or the kubelet's root is another ([kubelet] root)");
      return;
    }
    entries = cp->entries(id.uid, id.container);
  } catch (const Error& e) {
    r.add(kAllocation, "kubelet", Severity::warn, std::string("cannot read the kubelet's grant: ") + e.what(),
          "[kubelet] root in the config must be the kubelet's --root-dir");
    return;
  }
  if (entries.empty()) {
    r.add(kAllocation, "kubelet", Severity::info,
          "the kubelet granted container " + q(id.container) + " of pod " + q(id.pod.str()) +
              " no device-plugin resource");
    return;
  }
  for (const auto& e : entries) {
    r.add(kAllocation, e.resource, Severity::info, "granted " + join(e.device_ids, ", "));
    if (!e.alloc) {
      r.add(kAllocation, e.resource, Severity::info, "the checkpoint holds no Allocate answer for it (kubelet < 1.20)");
      continue;
    }
    check_answer(setup, c, e, r, out);
  }
}

// check_claims asks PodResources for the container's DRA claims and checks
// that the nodes of each claim's CDI devices are in the spec.
void check_claims(const Setup& setup, const Container& c, Report& r, std::vector<Device>& out) {
  const auto& id = c.identity;
  auto socket = kubelet::pod_resources_socket(setup.kubelet_root);
  if (!std::filesystem::exists(socket)) {
    r.add(kAllocation, "DRA", Severity::info,
          "no PodResources socket at " + q(socket.string()) + ": DRA claims not checked");
    return;
  }
  kubelet::PodResources pod;
  try {
    auto client = kubelet::make_helper_client({setup.kubelet_root});
    pod = client->pod_resources(id.pod.ns, id.pod.name, kubelet::Budget(setup.kubelet_budget));
  } catch (const kubelet::NotFound& e) {
    r.add(kAllocation, "DRA", Severity::warn, std::string("PodResources knows no such pod: ") + e.what(),
          "the kubelet does not run this pod: is [kubelet] root the root of the kubelet that does?");
    return;
  } catch (const std::exception& e) {
    r.add(kAllocation, "DRA", Severity::warn, std::string("PodResources did not answer: ") + e.what(),
          "the kubelet's PodResources API must be reachable for DRA claims to be checked");
    return;
  }
  const auto& claims = pod.assignment(id.container).dynamic_resources;
  if (claims.empty())
    r.add(kAllocation, "DRA", Severity::info, "PodResources: container " + q(id.container) + " has no DRA claim");
  for (const auto& claim : claims) {
    std::string what = "DRA claim " + q(claim.claim_namespace + "/" + claim.claim_name);
    std::vector<std::string> names;
    for (const auto& res : claim.claim_resources)
      for (const auto& n : res.cdi_devices) names.push_back(n);
    r.add(kAllocation, claim.claim_name, Severity::info,
          what + ": " + (names.empty() ? "no CDI device" : "CDI devices " + join(names, ", ")));
    if (!names.empty())
      check_cdi_names(setup, c, what, what, names,
                      "the DRA driver writes the spec file when it prepares the claim: is its kubelet plugin running?",
                      r, out);
  }
}

// check_granted compares what the kubelet granted a CRI container (the
// checkpoint's answers, PodResources' DRA claims) with its spec.
std::vector<Device> check_granted(const Setup& setup, const Container& c, Report& r) {
  std::vector<Device> out;
  const auto& id = c.identity;
  if (auto from = c.spec.annotation(device_plugin::kDevicesFrom))
    r.add(kAllocation, "sibling", Severity::info,
          "takes the devices of container " + q(*from) + " (" + device_plugin::kDevicesFrom +
              "): diagnose that container for its grant");
  if (!c.identity_error.empty()) {
    r.add(kAllocation, "pod", Severity::warn, "the spec's pod annotations are refused: " + c.identity_error,
          "a create with the device-plugin modifier on fails on them too; fix the annotations");
    return out;
  }
  if (!id.cri) {
    r.add(kAllocation, "kubelet", Severity::info, "not created through CRI: no kubelet allocation to compare with");
    return out;
  }
  if (id.uid.empty()) {
    r.add(kAllocation, "kubelet", Severity::info,
          "the spec has no io.kubernetes.cri.sandbox-uid (containerd < 1.6.11): the checkpoint cannot be matched");
    return out;
  }
  check_checkpoint(setup, c, r, out);
  check_claims(setup, c, r, out);
  return out;
}

// Opening is an accelerator node the container can open, and how it got it.
struct Opening {
  std::string path;  // in the container (a privileged container's: the host path)
  pod_allocation::DeviceNumber number;
  std::vector<std::string> how;  // "the spec (linux.devices)", "the hot-plug record (--device …)", "privileged (…)"
  bool spec = false;
  bool record = false;
  bool privileged = false;
};

void add_opening(std::vector<Opening>& list, const std::string& path, const pod_allocation::DeviceNumber& n,
                 const std::string& how, bool spec, bool record, bool privileged) {
  auto it = std::find_if(list.begin(), list.end(), [&](const Opening& o) { return o.number == n && o.path == path; });
  if (it == list.end()) it = list.insert(list.end(), Opening{path, n, {}});
  if (std::find(it->how.begin(), it->how.end(), how) == it->how.end()) it->how.push_back(how);
  it->spec = it->spec || spec;
  it->record = it->record || record;
  it->privileged = it->privileged || privileged;
}

// allows_every_device: the spec's rules hold an allow of type `a`, as the
// runtime gives a privileged container.
bool allows_every_device(const Spec& spec) {
  try {
    auto rules = read_device_rules(spec);
    return std::any_of(rules.begin(), rules.end(), [](const DeviceRule& d) { return d.allow && d.type == 'a'; });
  } catch (const Error&) {
    return false;  // the cgroup layer judges malformed rules
  }
}

// openings are the accelerators among what the container can open: its
// spec's linux.devices and device bind mounts, attach's record, and for a
// container whose rules allow every device, each accelerator the host's
// /dev has.
std::vector<Opening> openings(const Container& c, pod_allocation::Node& node) {
  std::vector<Opening> out;
  auto accelerator = [&](const pod_allocation::DeviceNumber& n) { return node.accelerator(n) != nullptr; };
  if (const Json* list = c.spec.find({"linux", "devices"}); list && list->is_array())
    for (const auto& e : *list) {
      std::string type = e.is_object() ? e.value("type", "") : "";
      if (type != "c" && type != "b") continue;
      pod_allocation::DeviceNumber n{type[0], e.value("major", std::int64_t{-1}), e.value("minor", std::int64_t{-1})};
      if (accelerator(n)) add_opening(out, e.value("path", ""), n, "the spec (linux.devices)", true, false, false);
    }
  if (const Json* mounts = c.spec.find({"mounts"}); mounts && mounts->is_array())
    for (const auto& m : *mounts) {
      if (!m.is_object()) continue;
      std::string source = m.value("source", "");
      auto n = pod_allocation::number_of(source);
      if (n && accelerator(*n))
        add_opening(out, m.value("destination", ""), *n, "the spec (a bind mount of " + q(source) + ")", true, false,
                    false);
    }
  if (c.record)
    for (const auto& d : c.record->devices) {
      pod_allocation::DeviceNumber n{d.type, d.major, d.minor};
      if (accelerator(n))
        add_opening(out, d.path, n, "the hot-plug record (" + live::attach::attached_by(d) + ")", false, true, false);
    }
  if (allows_every_device(c.spec))
    for (const auto& [n, acc] : node.accelerators())
      if (acc.host_path.rfind("/dev/", 0) == 0 && pod_allocation::number_of(acc.host_path) == n)
        add_opening(out, acc.host_path, n,
                    "privileged (its device rules allow every device, and the host's /dev has it)", false, false, true);
  return out;
}

// beyond_hint says how to take a node back, by how it got there.
std::string beyond_hint(const Opening& o) {
  std::vector<std::string> ways;
  if (o.record)
    ways.push_back(
        "take the hot-plug back (`specshim detach`, or drop it from the desired-state file); [hotplug] bound = "
        "\"pod-allocation\" refuses such hot-plugs");
  if (o.spec) ways.push_back("the create put it in the spec: create the container again without it");
  if (o.privileged) ways.push_back("a privileged container opens every host device: run it unprivileged");
  return join(ways, "; ");
}

// pod_resources_lookup asks PodResources through the helper when its socket
// exists; without one, the grant is the checkpoint's alone (a note in the
// grant's description says so).
pod_allocation::PodResourcesLookup pod_resources_lookup(const Setup& setup) {
  auto socket = kubelet::pod_resources_socket(setup.accelerators.kubelet_root);
  if (std::filesystem::exists(socket)) return pod_allocation::helper_lookup(setup.accelerators);
  return [socket](const std::string&, const std::string&) -> kubelet::PodResources {
    throw kubelet::NotFound("no PodResources socket at " + q(socket.string()));
  };
}

// check_beyond_grant fails each accelerator node the container can open
// that the kubelet did not grant it (or, for a specshim.io/devices-from
// sibling, its source container), naming the node, its GPU, how it got
// there and the grant. Silent when the container can open no accelerator.
void check_beyond_grant(const Setup& setup, const Container& c, Report& r) {
  pod_allocation::Node node(setup.accelerators, pod_resources_lookup(setup));
  std::vector<Opening> open;
  try {
    if (node.accelerators().empty()) return;
    open = openings(c, node);
  } catch (const std::exception& e) {
    r.add(kAllocation, "accelerators", Severity::warn,
          "cannot tell which host devices are accelerators: " + describe(e),
          "the kubelet's checkpoint and the driver's GPU list ([hotplug] proc) must be readable");
    return;
  }
  if (open.empty()) return;
  const auto& id = c.identity;
  auto from = c.spec.annotation(device_plugin::kDevicesFrom);
  std::string granted_to = from ? *from : id.container;
  std::string whose = "the container, which belongs to no pod";
  pod_allocation::Allocation grant;
  if (c.identity_error.empty() && !id.pod.empty()) {
    whose = (from ? "its source, container " : "container ") + q(granted_to) + " of pod " + q(id.pod.str());
    try {
      grant = node.container_allocation(id.pod, id.uid, granted_to);
    } catch (const std::exception& e) {
      r.add(kAllocation, "grant", Severity::warn, "cannot tell what the kubelet granted " + whose + ": " + describe(e),
            "the kubelet's PodResources API must answer within [kubelet] budget-ms");
      return;
    }
  }
  for (const auto& o : open) {
    const pod_allocation::Accelerator* acc = node.accelerator(o.number);
    std::string how = join(o.how, " and ");
    if (grant.holds(o.number))
      r.add(kAllocation, o.path, Severity::ok, acc->describe() + ", from " + how + ": granted to " + whose);
    else
      r.add(kAllocation, o.path, Severity::fail,
            acc->describe() + " opens here, from " + how + ", beyond the grant of " + whose + ": " + grant.describe(),
            beyond_hint(o));
  }
}

}  // namespace

std::vector<Device> check_allocation(const Setup& setup, const Container& c, Report& r) {
  std::vector<Device> out = check_granted(setup, c, r);
  check_beyond_grant(setup, c, r);
  return out;
}

}  // namespace specshim::shim::diagnose
