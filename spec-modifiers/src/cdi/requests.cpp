// SPDX-License-Identifier: Apache-2.0
// CDI requests another modifier handed over in memory (Context::
// device_requests): what `all` and `none` stand for in a spec dir, and
// whether a request stays within its grant. Two names are one device when
// the host device nodes their own edits open are the same: nvidia-ctk
// writes an index and a UUID entry per GPU with identical edits, and a
// plugin's CDI spec of another kind opens the same /dev/nvidiaN. A visible
// request (a nested runtime) counts `all` and indices among the devices
// whose nodes are present here.
#include "cdi/requests.h"

#include <algorithm>
#include <set>

#include "specshim/base/error.h"
#include "specshim/base/host_device.h"
#include "specshim/base/log.h"
#include "specshim/base/vendors.h"

namespace specshim::cdi {
namespace {

using Identity = std::set<std::string>;  // host device nodes, or the name itself for a device without any

// node_identity is the host node a device node opens and the numbers the
// container's node gets: the spec's when it gives them, else the host
// node's, as complete_node fills them in. runc makes the node from the
// numbers (or binds the host path, in a user namespace), so two specs open
// the same device only when both agree: one host path written with two
// different numbers is two devices.
std::string node_identity(const DeviceNode& n) {
  std::string host = n.host_path.empty() ? n.path : n.host_path;
  char type = n.type == "b" ? 'b' : n.type == "p" ? 'p' : 'c';
  std::int64_t major = n.major, minor = n.minor;
  if (n.type.empty() || (n.major == 0 && n.type != "p")) {
    try {
      HostDevice h = lstat_device(host);
      if (n.type.empty()) type = h.type;
      major = h.major;
      minor = h.minor;
    } catch (const Error&) {
      return host;  // not there: create fails on it, naming it
    }
  }
  return host + " " + type + " " + std::to_string(major) + ":" + std::to_string(minor);
}

Identity identity(const std::string& name, const Registry& reg) {
  Identity id;
  if (const DeviceRef* ref = reg.find(name))
    for (const auto& node : ref->device->edits.device_nodes) id.insert(node_identity(node));
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

// visible_of lists kind's devices whose nodes are all present, in name order.
std::vector<std::string> visible_of(const std::string& kind, const Registry& reg) {
  auto out = devices_of(kind, reg);
  std::erase_if(out, [&](const std::string& name) { return !cdi::present(*reg.find(name)); });
  return out;
}

// index_of reads the index of a name `<kind>=N`, nullopt for any other name.
std::optional<std::size_t> index_of(const std::string& kind, std::string_view name) {
  if (name.size() <= kind.size() + 1 || name.compare(0, kind.size(), kind) != 0 || name[kind.size()] != '=')
    return std::nullopt;
  std::string_view digits = name.substr(kind.size() + 1);
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return static_cast<std::size_t>(std::stoul(std::string(digits)));
}

std::string searched(const Registry& reg) {
  return "searched " + (reg.dirs.empty() ? std::string("no spec dirs") : join(reg.dirs, ", "));
}

// granted_nodes is what a bounded request's grant opens.
Identity granted_nodes(const DeviceRequest& r, const Registry& reg) {
  const DeviceRequest::Granted& b = *r.granted;
  Identity granted;
  std::vector<std::string> grant_names = b.names;
  if (b.all) {
    auto all = devices_of(r.kind, reg);
    grant_names.insert(grant_names.end(), all.begin(), all.end());
  }
  for (const auto& name : grant_names) granted.merge(identity(name, reg));
  return granted;
}

// excess lists the requested devices that open a node the grant does not,
// a device named twice (index and UUID) as "A = B".
std::vector<std::string> excess(const DeviceRequest& r, const std::vector<std::string>& asked, const Registry& reg) {
  Identity granted = granted_nodes(r, reg);
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

// check_spec_level refuses a bounded request whose spec files bring, in
// their own (spec-level) edits, a device node that is no vendor's companion
// (specshim/base/vendors.h) and that the grant does not open: those edits come
// with any device of the file, so they count toward the request.
void check_spec_level(const DeviceRequest& r, const std::vector<std::string>& inject,
                      const std::vector<std::shared_ptr<const SpecFile>>& whole_files, const Registry& reg) {
  std::vector<const SpecFile*> files;
  for (const auto& f : whole_files) files.push_back(f.get());
  for (const auto& name : inject)
    if (const DeviceRef* ref = reg.find(name);
        ref && std::find(files.begin(), files.end(), ref->spec.get()) == files.end())
      files.push_back(ref->spec.get());
  std::optional<Identity> granted;
  std::vector<std::string> beyond;
  for (const SpecFile* f : files)
    for (const auto& node : f->edits.device_nodes) {
      if (companion_node(node.path)) continue;
      if (!granted) granted = granted_nodes(r, reg);
      if (granted->count(node_identity(node))) continue;
      beyond.push_back(node.path + " (" + f->path + ")");
    }
  if (!beyond.empty())
    throw Error(r.origin + " brings the device node(s) " + join_some(beyond, ", ") +
                " with its spec file's own edits, beyond what " + r.granted->what +
                ": only a vendor's companion nodes (such as /dev/nvidiactl) come along without a grant");
}

void add(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

// every stands for every device of the request's kind: whole(), or with
// visible, each device present here (the `all` device opens absent nodes).
std::vector<std::string> every(const DeviceRequest& r, const Registry& reg) {
  return r.visible ? visible_of(r.kind, reg) : whole(r.kind, reg);
}

// seen_here reads a visible request's names as the runtime's own view
// numbers devices: an index N is the N-th of kind's index-named devices
// present here, in index order, as CUDA numbers the GPUs a container sees.
// Other names are kept. On a host where every device is present, each
// index is itself.
std::vector<std::string> seen_here(const DeviceRequest& r, const Registry& reg) {
  std::vector<std::pair<std::size_t, std::string>> here;
  for (const auto& name : visible_of(r.kind, reg))
    if (auto i = index_of(r.kind, name)) here.emplace_back(*i, name);
  std::sort(here.begin(), here.end());
  std::vector<std::string> out;
  for (const auto& name : r.names) {
    auto i = index_of(r.kind, name);
    if (!i) {
      add(out, name);
      continue;
    }
    if (*i >= here.size()) {
      std::vector<std::string> seen;
      for (const auto& h : here) seen.push_back(h.second);
      throw Error(r.origin + ": index " + std::to_string(*i) + ": this runtime's /dev holds " +
                  std::to_string(here.size()) + " device(s) of kind `" + r.kind + "` by index" +
                  (seen.empty() ? "" : " (" + join_some(seen, ", ") + ")") + " (scope = \"visible\")");
    }
    if (here[*i].second != name)
      log::debug("cdi: {}: {} is {} here (scope = \"visible\")", r.origin, name, here[*i].second);
    add(out, here[*i].second);
  }
  return out;
}

}  // namespace

std::string kind_wanted(const std::string& kind) {
  return kind + "=";
}

std::vector<std::string> wanted_by(const std::vector<DeviceRequest>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) {
    out.insert(out.end(), r.names.begin(), r.names.end());
    // visible: an index may stand for another index-named device of the kind.
    if (r.scope != DeviceRequest::Scope::names || (r.granted && r.granted->all) || r.visible)
      out.push_back(kind_wanted(r.kind));
    if (r.granted) out.insert(out.end(), r.granted->names.begin(), r.granted->names.end());
  }
  return out;
}

Plan plan(const std::vector<DeviceRequest>& requests, const Registry& reg) {
  Plan p;
  for (const auto& r : requests) {
    std::vector<std::string> names;  // what the request stands for
    if (r.scope == DeviceRequest::Scope::names) names = r.visible ? seen_here(r, reg) : r.names;
    if (r.scope == DeviceRequest::Scope::all) {
      names = devices_of(r.kind, reg);
      if (names.empty())
        throw Error(r.origin + ": no CDI spec defines a device of kind `" + r.kind + "`; " + searched(reg));
      if (r.visible) names = visible_of(r.kind, reg);
      if (names.empty())
        throw Error(r.origin + ": none of the devices of kind `" + r.kind +
                    "` has its device nodes in this runtime's /dev (scope = \"visible\")");
    }
    if (r.scope == DeviceRequest::Scope::none) {
      int best = -1;
      for (const auto& f : reg.files)
        if (f.spec && f.spec->kind == r.kind) best = std::max(best, f.priority);
      for (const auto& f : reg.files)
        if (f.spec && f.spec->kind == r.kind && f.priority == best) p.specs.push_back(f.spec);
      if (best < 0) throw Error(r.origin + ": no CDI spec file of kind `" + r.kind + "`; " + searched(reg));
    }

    bool within = !r.granted || r.scope == DeviceRequest::Scope::none ||
                  (r.scope == DeviceRequest::Scope::names && std::all_of(names.begin(), names.end(), [&](auto& n) {
                     return std::find(r.granted->names.begin(), r.granted->names.end(), n) != r.granted->names.end();
                   }));
    std::vector<std::string> beyond = within ? std::vector<std::string>{} : excess(r, names, reg);
    std::vector<std::string> inject = r.scope == DeviceRequest::Scope::all ? every(r, reg) : names;
    if (!beyond.empty()) {
      std::string msg = r.origin + " asks for " + join_some(beyond, ", ") + ", beyond what " + r.granted->what;
      if (!r.granted->clamp) throw Error(msg + " (on-excess = \"fail\")");
      log::warn("cdi: {}; injecting the grant instead (on-excess = \"clamp\")", msg);
      inject = r.granted->names;
      if (r.granted->all) {
        auto all = every(r, reg);
        inject.insert(inject.begin(), all.begin(), all.end());
      }
    }
    if (r.granted) {
      std::vector<std::shared_ptr<const SpecFile>> whole_files;
      if (r.scope == DeviceRequest::Scope::none)
        for (const auto& f : reg.files)
          if (f.spec && f.spec->kind == r.kind && std::find(p.specs.begin(), p.specs.end(), f.spec) != p.specs.end())
            whole_files.push_back(f.spec);
      check_spec_level(r, inject, whole_files, reg);
    }
    for (const auto& name : inject) {
      add(p.names, name);
      p.origins.emplace(name, r.origin);
    }
  }
  return p;
}

}  // namespace specshim::cdi
