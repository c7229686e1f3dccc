// SPDX-License-Identifier: Apache-2.0
// CDI requests another modifier handed over in memory (Context::
// device_requests): what `all` and `none` stand for in a spec dir, and
// whether a request stays within its grant. Two names are one device when
// the host device nodes their own edits open are the same: nvidia-ctk
// writes an index and a UUID entry per GPU with identical edits, and a
// plugin's CDI spec of another kind opens the same /dev/nvidiaN.
#include <algorithm>
#include <set>

#include "cdi_internal.h"
#include "specshim/error.h"
#include "specshim/log.h"

namespace specshim::cdi {
namespace {

using Identity = std::set<std::string>;  // host device nodes, or the name itself for a device without any

Identity identity(const std::string& name, const Registry& reg) {
  Identity id;
  if (const DeviceRef* ref = reg.find(name))
    for (const auto& node : ref->device->edits.device_nodes)
      id.insert(node.host_path.empty() ? node.path : node.host_path);
  if (id.empty()) id.insert("cdi device " + name);
  return id;
}

bool special(std::string_view name) {
  return name == "all" || name == "none";
}

// devices_of lists kind's devices (its `all` and `none` aside), in name order.
std::vector<std::string> devices_of(const std::string& kind, const Registry& reg) {
  std::vector<std::string> out;
  std::string prefix = kind + "=";
  for (auto it = reg.devices.lower_bound(prefix); it != reg.devices.end() && it->first.rfind(prefix, 0) == 0; ++it)
    if (!special(std::string_view(it->first).substr(prefix.size()))) out.push_back(it->first);
  return out;
}

// whole stands for every device of kind: its `all` device, or each device.
std::vector<std::string> whole(const std::string& kind, const Registry& reg) {
  if (reg.find(kind + "=all")) return {kind + "=all"};
  return devices_of(kind, reg);
}

std::string searched(const Registry& reg) {
  return "searched " + (reg.dirs.empty() ? std::string("no spec dirs") : join(reg.dirs, ", "));
}

// excess lists the requested devices that open a node the grant does not,
// a device named twice (index and UUID) as "A = B".
std::vector<std::string> excess(const DeviceRequest& r, const std::vector<std::string>& asked, const Registry& reg) {
  const DeviceRequest::Bound& b = *r.bound;
  Identity granted;
  std::vector<std::string> grant_names = b.names;
  if (b.all) {
    auto all = devices_of(r.kind, reg);
    grant_names.insert(grant_names.end(), all.begin(), all.end());
  }
  for (const auto& name : grant_names) granted.merge(identity(name, reg));
  std::vector<std::pair<Identity, std::vector<std::string>>> beyond;
  for (const auto& name : asked) {
    if (!reg.find(name)) continue;  // unresolvable: the caller names it
    Identity id = identity(name, reg);
    if (std::includes(granted.begin(), granted.end(), id.begin(), id.end())) continue;
    auto same = std::find_if(beyond.begin(), beyond.end(), [&](auto& p) { return p.first == id; });
    if (same == beyond.end())
      beyond.emplace_back(std::move(id), std::vector<std::string>{name});
    else
      same->second.push_back(name);
  }
  std::vector<std::string> out;
  for (const auto& [id, names] : beyond) out.push_back(join(names, " = "));
  return out;
}

void add(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

}  // namespace

std::string kind_wanted(const std::string& kind) {
  return kind + "=";
}

std::vector<std::string> wanted_by(const std::vector<DeviceRequest>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) {
    out.insert(out.end(), r.names.begin(), r.names.end());
    if (r.scope != DeviceRequest::Scope::names || (r.bound && r.bound->all)) out.push_back(kind_wanted(r.kind));
    if (r.bound) out.insert(out.end(), r.bound->names.begin(), r.bound->names.end());
  }
  return out;
}

Plan plan(const std::vector<DeviceRequest>& requests, const Registry& reg) {
  Plan p;
  for (const auto& r : requests) {
    std::vector<std::string> names;  // what the request stands for
    if (r.scope == DeviceRequest::Scope::names) names = r.names;
    if (r.scope == DeviceRequest::Scope::all) {
      names = devices_of(r.kind, reg);
      if (names.empty())
        throw Error(r.origin + ": no CDI spec defines a device of kind `" + r.kind + "`; " + searched(reg));
    }
    if (r.scope == DeviceRequest::Scope::none) {
      int best = -1;
      for (const auto& f : reg.files)
        if (f.spec && f.spec->kind == r.kind) best = std::max(best, f.priority);
      for (const auto& f : reg.files)
        if (f.spec && f.spec->kind == r.kind && f.priority == best) p.specs.push_back(f.spec);
      if (best < 0) throw Error(r.origin + ": no CDI spec file of kind `" + r.kind + "`; " + searched(reg));
    }

    bool within = !r.bound || r.scope == DeviceRequest::Scope::none ||
                  (r.scope == DeviceRequest::Scope::names && std::all_of(names.begin(), names.end(), [&](auto& n) {
                     return std::find(r.bound->names.begin(), r.bound->names.end(), n) != r.bound->names.end();
                   }));
    std::vector<std::string> beyond = within ? std::vector<std::string>{} : excess(r, names, reg);
    std::vector<std::string> inject = r.scope == DeviceRequest::Scope::all ? whole(r.kind, reg) : names;
    if (!beyond.empty()) {
      std::string msg = r.origin + " asks for " + join_some(beyond, ", ") + ", beyond what " + r.bound->what;
      if (!r.bound->clamp) throw Error(msg + " (on-excess = \"fail\")");
      log::warn("cdi: {}; injecting the grant instead (on-excess = \"clamp\")", msg);
      inject = r.bound->names;
      if (r.bound->all) {
        auto all = whole(r.kind, reg);
        inject.insert(inject.begin(), all.begin(), all.end());
      }
    }
    for (const auto& name : inject) {
      add(p.names, name);
      p.origins.emplace(name, r.origin);
    }
  }
  return p;
}

}  // namespace specshim::cdi
