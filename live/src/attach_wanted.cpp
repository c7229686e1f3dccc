// SPDX-License-Identifier: Apache-2.0
// What attach is asked for, before it is planned against the record: --device
// nodes, CDI devices (their edits a running container can take, and those it
// cannot), GPU nodes, and the check against the pod's allocation.
#include <algorithm>
#include <set>

#include "specshim/base/error.h"
#include "specshim/base/host_device.h"
#include "specshim/live/attach.h"
#include "specshim/live/container.h"
#include "specshim/node/cdi.h"
#include "specshim/node/nvidia_gpus.h"

namespace specshim::live::attach {
namespace {

std::string check_path(const std::string& what, const std::string& path) {
  if (auto why = live::check_container_path(path); !why.empty())
    throw Error(what + ": container path " + q(path) + " " + why);
  return path;
}

// from_cdi_node completes a CDI device node from the host as create does
// (cdi::complete_node), for a node made in a running container: a char or
// block device whose type is the host node's.
RecordedDevice from_cdi_node(const cdi::DeviceNode& n, const std::string& name, const Spec& spec) {
  std::string what = "CDI device " + q(name) + ": device node " + q(n.path);
  check_path(what, n.path);
  cdi::DeviceNode c;
  try {
    c = cdi::complete_node(n, spec);
  } catch (const Error& e) {
    throw Error("CDI device " + q(name) + ": " + e.what());
  }
  std::string host = c.host_path.empty() ? c.path : c.host_path;
  HostDevice h = lstat_device(host);
  if (h.type != 'c' && h.type != 'b') throw Error(what + ": host node " + q(host) + " is a FIFO");
  if (c.type != std::string(1, h.type))
    throw Error(what + ": host node " + q(host) + " has type " + std::string(1, h.type) + ", the spec says " + c.type);
  RecordedDevice d;
  d.path = c.path;
  d.host_path = host;
  d.type = h.type;
  d.major = c.major;
  d.minor = c.minor;
  auto perms = canonical_permissions(c.permissions.empty() ? "rwm" : c.permissions);
  if (!perms) throw Error(what + ": permissions " + q(c.permissions) + " must be a subset of rwm");
  d.permissions = *perms;
  d.file_mode = *c.file_mode & 0777;
  d.uid = c.uid.value_or(0);
  d.gid = c.gid.value_or(0);
  d.cdi = {name};
  return d;
}

void add_cdi_edits(const cdi::ContainerEdits& e, const std::string& name, const Spec& spec, Wanted& w) {
  for (const auto& n : e.device_nodes) w.devices.push_back(from_cdi_node(n, name, spec));
  for (const auto& m : e.mounts) {
    bool bind = m.type.empty() || m.type == "bind" ||
                std::find(m.options.begin(), m.options.end(), "bind") != m.options.end() ||
                std::find(m.options.begin(), m.options.end(), "rbind") != m.options.end();
    if (!bind) {
      w.not_applied.push_back({name, "mount", m.type + " at " + m.container_path});
      continue;
    }
    check_path("CDI device " + q(name) + ": mount", m.container_path);
    if (m.host_path.empty() || m.host_path[0] != '/')
      throw Error("CDI device " + q(name) + ": mount host path " + q(m.host_path) + " is not absolute");
    w.mounts.push_back({m.container_path, m.host_path, m.options, "made", true, {name}, {}});
  }
  for (const auto& env : e.env) w.not_applied.push_back({name, "env", env});
  for (const auto& h : e.hooks) {
    std::string v = h.hook_name + " " + h.path;
    for (std::size_t i = 1; i < h.args.size(); ++i) v += " " + h.args[i];
    w.not_applied.push_back({name, "hook", v});
  }
  for (auto gid : e.additional_gids) w.not_applied.push_back({name, "additionalGids", std::to_string(gid)});
  for (const auto& n : e.net_devices)
    w.not_applied.push_back({name, "netDevice", n.host_interface_name + " as " + n.name});
  if (e.intel_rdt) w.not_applied.push_back({name, "intelRdt", e.intel_rdt->clos_id});
}

}  // namespace

RecordedDevice device_wanted(const DeviceArg& a) {
  check_path("device " + q(a.host), a.container);
  hotplug::GrantedDevice g = hotplug::device_of(a, "");
  RecordedDevice d{g.path, g.host_path, g.type, g.major, g.minor, g.permissions, g.file_mode, g.uid,
                   g.gid,  "mknod",     true,   {},      {}};
  return d;
}

// cdi_wanted loads the requested CDI devices from the configured spec dirs.
// An unknown name fails naming every spec file that did not load, as create does.
void cdi_wanted(const Setup& setup, const Target& t, const std::vector<std::string>& names, Wanted& w) {
  const auto& dirs = setup.cdi_dirs;
  if (!dirs) throw Error("CDI is off in " + q(setup.config_file) + " ([cdi] enabled = false)");
  std::set<std::string> wanted;
  for (const auto& n : names) {
    std::string why;
    if (!cdi::parse_qualified_name(n, &why)) throw Error("--cdi " + q(n) + ": " + why);
    wanted.insert(n);
  }
  cdi::Registry reg = cdi::load_specs(*dirs, &wanted);
  std::vector<std::string> missing_names;
  for (const auto& n : wanted)
    if (!reg.find(n)) missing_names.push_back(n);
  if (!missing_names.empty()) throw cdi::unresolvable_error(missing_names, reg);
  for (const auto& n : names) {
    const cdi::DeviceRef* ref = reg.find(n);
    add_cdi_edits(ref->spec->edits, n, t.spec, w);
    add_cdi_edits(ref->device->edits, n, t.spec, w);
  }
}

std::vector<std::string> gpu_nodes(const std::vector<std::string>& uuids, const std::string& proc) {
  if (uuids.empty()) return {};
  std::vector<nvidia::Gpu> gpus = nvidia::read_gpus(proc);
  std::vector<std::string> nodes;
  for (const auto& u : uuids) nodes.push_back(nvidia::find_gpu(gpus, u, proc).node());
  return nodes;
}

std::string not_applied_reason(const std::string& edit) {
  if (edit == "env") return "a running process's environment cannot change";
  if (edit == "hook") return "hooks run only at create and start";
  if (edit == "mount") return "only bind mounts can be attached";
  return "a running container's process cannot take it";
}

void check_bound(pod_allocation::Node* bound, const Target& t, const Wanted& w) {
  if (!bound) return;
  std::vector<pod_allocation::Asked> wants;
  for (const auto& d : w.devices) {
    std::string what = !d.reconcile.empty() ? d.reconcile.front()
                       : !d.cdi.empty()     ? "CDI device " + q(d.cdi.front())
                                            : "device " + q(d.host_path);
    wants.push_back({what, d.host_path, {d.type, d.major, d.minor}});
  }
  pod_allocation::check_bound(*bound, pod_allocation::target_of(t.spec), wants);
}

}  // namespace specshim::live::attach
