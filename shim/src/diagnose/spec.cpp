// SPDX-License-Identifier: Apache-2.0
// The spec layer: what the create asked for (linux.devices, device bind
// mounts, CDI requests) and what specshim recorded doing (specshim.io/*
// annotations); and the devices the container should therefore have.
#include <algorithm>
#include <set>

#include "diagnose/diagnose.h"
#include "specshim/base/error.h"
#include "specshim/node/cdi.h"

namespace specshim::shim::diagnose {
namespace {

// runc makes these itself (runc_default_rules); a spec entry for them is no device of the workload's.
bool runc_default(const std::string& path) {
  static const std::set<std::string> defaults = {"/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
                                                 "/dev/urandom", "/dev/tty",  "/dev/ptmx", "/dev/net/tun"};
  return defaults.count(path) > 0;
}

std::optional<Device> from_entry(const Json& e) {
  if (!e.is_object() || !e.contains("path") || !e["path"].is_string()) return std::nullopt;
  Device d;
  d.path = e["path"].get<std::string>();
  std::string type = e.value("type", std::string("c"));
  d.type = type == "b" ? 'b' : 'c';
  if (e.contains("major") && e["major"].is_number_integer() && e.contains("minor") && e["minor"].is_number_integer()) {
    d.major = e["major"].get<std::int64_t>();
    d.minor = e["minor"].get<std::int64_t>();
    d.numbers_known = type == "c" || type == "b" || type == "u";
  }
  d.source = "linux.devices";
  return d;
}

}  // namespace

void add_device(std::vector<Device>& list, Device d) {
  auto it = std::find_if(list.begin(), list.end(), [&](const Device& e) { return e.path == d.path; });
  if (it == list.end()) {
    list.push_back(std::move(d));
    return;
  }
  if (it->host_path.empty()) it->host_path = d.host_path;
  if (!it->numbers_known && d.numbers_known) {
    it->type = d.type;
    it->major = d.major;
    it->minor = d.minor;
    it->numbers_known = true;
  }
  it->bind = it->bind || d.bind;
  if (it->source.find(d.source) == std::string::npos) it->source += ", " + d.source;
}

std::string in_spec(const Spec& spec, const std::string& path) {
  if (const Json* devices = spec.find({"linux", "devices"}); devices && devices->is_array())
    for (const auto& e : *devices)
      if (e.is_object() && e.value("path", std::string()) == path) return "linux.devices";
  if (const Json* mounts = spec.find({"mounts"}); mounts && mounts->is_array())
    for (const auto& m : *mounts)
      if (m.is_object() && m.value("destination", std::string()) == path) return "a bind mount";
  return "";
}

std::string open_access(std::string_view permissions) {
  if (permissions.empty()) return "rw";
  std::string out;
  if (permissions.find('r') != std::string_view::npos) out += 'r';
  if (permissions.find('w') != std::string_view::npos) out += 'w';
  return out;
}

std::optional<Device> host_device(const std::string& host_path, std::string container_path, std::string source) {
  device_plugin::HostNode n;
  try {
    n = device_plugin::stat_host_node(host_path);
  } catch (const Error&) {
    return std::nullopt;  // no node there (or no device node): the caller says what that means
  }
  return Device{std::move(container_path), n.type, n.major, n.minor, true, host_path, "rw", std::move(source)};
}

std::vector<Device> cdi_devices(const Setup& setup, const Spec& spec, const std::vector<std::string>& names,
                                std::vector<std::string>& missing) {
  if (!setup.cdi_dirs) throw Error("CDI is off in the config ([cdi] enabled = false)");
  std::set<std::string> wanted(names.begin(), names.end());
  cdi::Registry reg = cdi::load_specs(*setup.cdi_dirs, &wanted);
  std::vector<Device> out;
  for (const auto& name : names) {
    const cdi::DeviceRef* ref = reg.find(name);
    if (!ref) {
      missing.push_back(name);
      continue;
    }
    for (const auto* edits : {&ref->spec->edits, &ref->device->edits})
      for (const auto& n : edits->device_nodes) {
        Device d;
        d.path = n.path;
        d.source = "CDI " + q(name);
        d.access = open_access(n.permissions);
        try {
          cdi::DeviceNode c = cdi::complete_node(n, spec);
          d.host_path = c.host_path.empty() ? c.path : c.host_path;
          d.type = c.type == "b" ? 'b' : 'c';
          d.major = c.major;
          d.minor = c.minor;
          d.numbers_known = true;
        } catch (const Error&) {
          d.host_path = n.host_path.empty() ? n.path : n.host_path;  // the host node is gone: node says so
        }
        d.bind = userns::binds_device(spec, d.path, d.host_path);
        add_device(out, std::move(d));
      }
  }
  return out;
}

std::vector<Device> check_spec(const Setup& setup, const Container& c, Report& r) {
  std::vector<Device> out;
  const Spec& spec = c.spec;
  if (const Json* annotations = spec.find({"annotations"}); annotations && annotations->is_object())
    for (auto it = annotations->begin(); it != annotations->end(); ++it)
      if (it.key().rfind("specshim.io/", 0) == 0 && it.value().is_string())
        r.add(kSpec, it.key(), Severity::info, "recorded: " + it.value().get<std::string>());

  std::size_t entries = 0;
  if (const Json* devices = spec.find({"linux", "devices"}); devices && devices->is_array())
    for (const auto& e : *devices)
      if (auto d = from_entry(e); d && !runc_default(d->path)) {
        add_device(out, std::move(*d));
        ++entries;
      }
  if (const Json* mounts = spec.find({"mounts"}); mounts && mounts->is_array())
    for (const auto& m : *mounts) {
      if (!m.is_object() || !m.contains("source") || !m["source"].is_string() || !m.contains("destination")) continue;
      if (!m["destination"].is_string() || runc_default(m["source"].get<std::string>()))
        continue;  // /dev/null masks a file
      if (auto d = host_device(m["source"].get<std::string>(), m["destination"].get<std::string>(), "a bind mount")) {
        d->bind = true;
        add_device(out, std::move(*d));
        ++entries;
      }
    }
  r.add(kSpec, "devices", Severity::info,
        std::to_string(entries) + " device node(s) in linux.devices and device bind mounts (runc's own left out)");

  std::vector<std::string> requested;
  try {
    requested = cdi::requested_devices(spec);
  } catch (const Error& e) {
    r.add(kSpec, "CDI", Severity::fail, e.what(),
          "the create would have failed on this annotation; fix the pod's annotations");
  }
  if (requested.empty()) return out;
  if (!setup.cdi_dirs) {
    r.add(kSpec, "CDI", Severity::warn, "the spec asks for CDI devices " + join(requested, ", ") + " but [cdi] is off",
          "turn the cdi modifier on, or let the runtime that created it inject them");
    return out;
  }
  std::vector<std::string> missing;
  std::vector<Device> wanted = cdi_devices(setup, spec, requested, missing);
  for (const auto& name : missing)
    r.add(kSpec, name, Severity::warn,
          "requested, but no CDI spec file in " + join(*setup.cdi_dirs, ", ") + " defines it now",
          "the spec file was removed or renamed since the create; `specshim doctor` lists the spec files that fail to "
          "load");
  for (auto& d : wanted) {
    std::string how = in_spec(spec, d.path);
    if (how.empty())
      r.add(kSpec, d.path, Severity::fail,
            d.source + " asks for node " + d.path + " (" + numbers(d) + "), and the spec has no entry for it",
            "the create did not inject it: was the cdi modifier on for it ([cdi] enabled, cdi in [chain] order)?");
    else
      r.add(kSpec, d.path, Severity::ok, d.source + ": in the spec (" + how + ")");
    add_device(out, std::move(d));
  }
  return out;
}

}  // namespace specshim::shim::diagnose
