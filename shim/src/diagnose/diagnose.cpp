// SPDX-License-Identifier: Apache-2.0
// specshim diagnose: the command line, the order of the layers and the
// report's two forms. Exit 0: nothing failed; 1: a check failed; 2: the
// container cannot be inspected (or the command line is wrong).
#include "diagnose/diagnose.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime.h"
#include "settings.h"
#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/allocation_sources.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/node/cdi.h"
#include "specshim/node/hotplug.h"
#include "specshim/node/kubelet_session.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {
namespace diagnose {
namespace {

Setup read_setup(const Options& o) {
  ConfigFile config = read_config_file(o.config_file);
  auto root = config.doc.root();
  Setup s;
  s.runtime = find_runtime(config.settings.runtime_path);
  s.runtime_root = o.root;
  s.cdi_dirs = config.cdi_dirs;
  auto kubelet = root.section("kubelet");
  KubeletKeys keys = read_kubelet_table(kubelet);
  auto device_plugin = root.section("device-plugin");
  auto dp = device_plugin::read_table(device_plugin, keys);
  s.kubelet_root = dp.kubelet_root;
  s.kubelet_budget = dp.budget;
  s.accelerators = allocation_sources(root, config.hotplug.proc);
  s.device_plugin = std::move(dp);
  return s;
}

// container_node: the device node the container has at `path` (one it made
// itself with mknod, or one bound in), by its own numbers.
std::optional<Device> container_node(const Container& c, const std::string& path) {
  live::FileView v = live::look_at(c.root, path);
  if (!v.error.empty() || !v.is_device()) return std::nullopt;
  return Device{path, v.type(), v.major, v.minor, true, "", "rw", "--device (the container's own node)", false};
}

// selected narrows the devices to --device and --cdi when given.
std::vector<Device> selected(const Setup& setup, const Container& c, const Options& o, std::vector<Device> all) {
  if (o.devices.empty() && o.cdi.empty()) return all;
  std::vector<Device> out;
  for (const auto& path : o.devices) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Device& d) { return d.path == path; });
    if (it != all.end())
      out.push_back(*it);
    else if (auto d = host_device(path, path, "--device (the host's node at the same path)"))
      out.push_back(*d);
    else if (auto own = container_node(c, path))
      out.push_back(*own);
    else
      out.push_back(Device{path, 'c', 0, 0, false, "", "rw", "--device", false});
  }
  if (!o.cdi.empty()) {
    for (const auto& n : o.cdi) {
      std::string why;
      if (!cdi::parse_qualified_name(n, &why)) throw CannotInspect("--cdi " + q(n) + ": " + why);
    }
    std::vector<std::string> missing;
    for (auto& d : cdi_devices(setup, c.spec, o.cdi, missing)) add_device(out, std::move(d));
    if (!missing.empty())
      throw CannotInspect("--cdi " + join(missing, ", ") + ": no CDI spec file in " + join(*setup.cdi_dirs, ", ") +
                          " defines it");
  }
  return out;
}

}  // namespace

Report run_layers(const Setup& setup, const Container& c, const Options& o) {
  Report r;
  std::vector<Device> devices = check_allocation(setup, c, r);
  for (auto& d : check_spec(setup, c, r)) add_device(devices, std::move(d));
  devices = selected(setup, c, o, std::move(devices));
  if (devices.empty()) r.add(kNode, "devices", Severity::info, "the container has no device beyond runc's own");
  for (const auto& d : devices) check_node(c, d, r);
  for (const auto& d : devices) check_cgroup(c, d, r);
  check_companions(c, devices, r);
  check_identity(c, r);
  check_hotplug(c, r);
  return r;
}

std::string status_label(Severity s) {
  return s == Severity::warn ? "WARN" : s == Severity::fail ? "FAIL" : std::string(severity_name(s));
}

namespace {

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

}  // namespace

std::string render_text(const Container& c, const Report& r) {
  std::string out = "container " + c.id;
  if (!c.identity.pod.empty())
    out += " (pod " + c.identity.pod.str() +
           (c.identity.container.empty() ? "" : ", container " + c.identity.container) + ")";
  out += "\n\n";
  std::size_t subject = 8;
  for (const auto& f : r.findings()) subject = std::max(subject, std::min<std::size_t>(f.subject.size(), 28));
  std::size_t indent = 12 + 6 + subject + 2;
  std::size_t fails = 0, warnings = 0;
  for (const auto& f : r.findings()) {
    out += pad(f.layer, 12) + pad(status_label(f.status), 6) + pad(f.subject, subject + 2) + f.message + "\n";
    if ((f.status == Severity::fail || f.status == Severity::warn) && !f.hint.empty())
      out += std::string(indent, ' ') + "hint: " + f.hint + "\n";
    fails += f.status == Severity::fail;
    warnings += f.status == Severity::warn;
  }
  out += "\n" + std::to_string(fails) + " failed, " + std::to_string(warnings) + " warning" +
         (warnings == 1 ? "" : "s") + "\n";
  return out;
}

nlohmann::ordered_json to_json(const Container& c, const Report& r) {
  nlohmann::ordered_json j;
  j["container"] = c.id;
  if (c.identity.pod.empty())
    j["pod"] = nullptr;
  else
    j["pod"] = {{"namespace", c.identity.pod.ns}, {"name", c.identity.pod.name}, {"container", c.identity.container}};
  j["status"] = severity_name(r.status());
  j["checks"] = nlohmann::ordered_json::array();
  for (const auto& f : r.findings())
    j["checks"].push_back({{"layer", f.layer},
                           {"subject", f.subject},
                           {"status", severity_name(f.status)},
                           {"message", f.message},
                           {"hint", f.hint}});
  return j;
}

}  // namespace diagnose

int diagnose_main(const std::vector<std::string>& argv) {
  using namespace diagnose;
  VerbCli cli(
      "Explain why a container cannot use its device: allocation, spec, node, cgroup, companions, identity, hot-plug. "
      "Read-only; exits 1 when a check fails, 2 when the container cannot be inspected.",
      "specshim diagnose");
  Options o;
  o.config_file = config::path_from_env().string();
  cli.option("--root", o.root, "the runtime's state root (runc --root), e.g. /run/containerd/runc/k8s.io");
  cli.option("--config", o.config_file, "specshim config file").show_default();
  cli.option("--format", o.format, "text or json").one_of({"text", "json"}).show_default();
  cli.option("--sysfs", o.sysfs, "where sysfs is (IOMMU groups)").show_default();
  cli.option("--pod", o.pod, "NAMESPACE/NAME: find the container by its pod (containerd's CRI annotations)");
  cli.option("--container", o.container, "with --pod: the container's name in the pod");
  cli.option("--device", o.devices, "PATH: check only this device path in the container").one_value_each();
  cli.option("--cdi", o.cdi, "VENDOR/CLASS=NAME: check only the nodes of this CDI device").one_value_each();
  cli.option("CONTAINER-ID", o.id, "the container, as the runtime knows it");
  cli.flag("--all", o.all, "every live container of --root but sandboxes: a summary line each, then its failures");
  if (int rc = cli.parse(argv); rc >= 0) return rc == 0 ? 0 : 2;
  try {
    if (!o.container.empty() && o.pod.empty()) throw CannotInspect("--container needs --pod");
    if (o.all && (!o.id.empty() || !o.pod.empty() || !o.devices.empty() || !o.cdi.empty()))
      throw CannotInspect("--all checks every container and every device: no CONTAINER-ID, --pod, --device or --cdi");
    if (!o.all && o.id.empty() == o.pod.empty())
      throw CannotInspect("give either CONTAINER-ID, --pod NAMESPACE/NAME or --all");
    if (!o.pod.empty()) split_pod(o.pod);  // a usage error before anything else is read
    if (::geteuid() != 0)
      throw CannotInspect("must run as root on the host (euid " + std::to_string(::geteuid()) +
                          "): it reads the container's process, cgroups and files");
    Setup setup = read_setup(o);
    if (o.all) return diagnose_all(setup, o);
    Container c = open_container(setup, find_container(setup, o), o.sysfs);
    Report r = run_layers(setup, c, o);
    std::cout << (o.format == "json" ? to_json(c, r).dump(2) + "\n" : render_text(c, r));
    return r.failed() ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "specshim diagnose: " << describe(e) << "\n";
    return 2;
  }
}

}  // namespace specshim::shim
