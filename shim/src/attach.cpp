// SPDX-License-Identifier: Apache-2.0
// specshim attach / detach / attached: give a running container a device and
// take it back, by hand. The steps (and their undo) are the hot-plug
// engine's (specshim/live/attach.h), which reconcile drives too. See
// docs/attach.md.
#include "attach.h"

#include <algorithm>
#include <iostream>

#include "specshim/base/error.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {
namespace {

using namespace attach;
using namespace live::attach;

// ---- the command line ----

struct Common {
  std::string root;
  std::string config_file = config::path_from_env().string();
  std::string id;
};

// Opened is the config as read once and the container opened with it.
struct Opened {
  ConfigFile config;
  Setup setup;
  Target target;
};

Opened open_common(const Common& c, bool require_live) {
  ConfigFile config = read_config_file(c.config_file);
  Setup setup = setup_of(config, c.root);
  Target t = open_target(setup, c.id, require_live);
  return Opened{std::move(config), std::move(setup), std::move(t)};
}

void print_warnings(const char* verb, const Change& ch) {
  for (const auto& w : ch.warnings) std::cerr << "specshim " << verb << ": " << w << "\n";
}

void add_common(VerbCli& cli, Common& c) {
  cli.option("--root", c.root, "the runtime's state root (runc --root), e.g. /run/containerd/runc/k8s.io");
  cli.option("--config", c.config_file, "specshim config file").show_default();
  cli.option("CONTAINER-ID", c.id, "the container, as the runtime knows it").required();
}

int fail(const char* verb, const std::exception& e) {
  std::cerr << "specshim " << verb << ": " << describe(e) << "\n";
  return 1;
}

// --gpu UUID names an NVIDIA GPU by its UUID: the driver's list under
// --proc maps it to /dev/nvidia<minor> (docs/attach.md, "GPUs by UUID").
void add_gpu_options(VerbCli& cli, std::vector<std::string>& gpus, std::string& proc) {
  cli.option("--gpu", gpus, "UUID of an NVIDIA GPU (nvidia-smi -L): its /dev/nvidiaN, as --device").one_value_each();
  cli.option("--proc", proc, "where the NVIDIA driver's GPU list is (<proc>/driver/nvidia/gpus)").show_default();
}

}  // namespace

int attach_main(const std::vector<std::string>& argv) {
  VerbCli cli("Give a running container a device: its cgroup rule, the node in its mount namespace, and a record.",
              "specshim attach");
  Common c;
  std::vector<std::string> devices, cdis;
  add_common(cli, c);
  cli.option("--device", devices, "HOST[:CONTAINER[:PERMS]]: a host char/block node; PERMS from rwm (default rwm)")
      .one_value_each();
  cli.option("--cdi", cdis, "VENDOR/CLASS=NAME: a CDI device from the configured spec dirs").one_value_each();
  std::vector<std::string> gpus;
  std::string proc = "/proc";
  add_gpu_options(cli, gpus, proc);
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    if (devices.empty() && cdis.empty() && gpus.empty()) throw Error("give at least one --device, --cdi or --gpu");
    std::vector<DeviceArg> args;
    for (const auto& d : devices) args.push_back(parse_device_arg(d));
    for (const auto& node : gpu_nodes(gpus, proc)) args.push_back(DeviceArg{node, node, "rwm"});
    auto [config, setup, t] = open_common(c, true);
    std::string what = "container " + q(c.id);
    try {
      Wanted w;
      for (const auto& a : args) w.devices.push_back(device_wanted(a));
      if (!cdis.empty()) cdi_wanted(setup, t, cdis, w);
      auto bound = bound_of(config, proc);
      check_bound(bound.get(), t, w);
      BundleLock lock(t.state.bundle);
      Record before = current_record(t.state.bundle, t.id, setup.nri_state_dir);
      Plan p = plan(before, w);
      for (const auto& n : w.not_applied)
        std::cerr << "specshim attach: " << what << ": CDI device " << q(n.cdi) << ": " << n.edit << " " << q(n.value)
                  << " not applied (" << not_applied_reason(n.edit) << ")\n";
      Change ch = transition(t, before, p.record);
      print_warnings("attach", ch);
      if (ch.made.empty() && ch.mounted.empty() && ch.record == before) {
        std::cerr << "specshim attach: " << what << ": already attached\n";
        return 0;
      }
      for (const auto& d : ch.made)
        std::cout << "attached " << d.path << " (" << numbers(d) << " " << d.permissions << ", " << d.node << ")\n";
      for (const auto& m : ch.mounted) std::cout << "attached " << m.path << " (bind mount)\n";
      return 0;
    } catch (const std::exception&) {
      std::throw_with_nested(Error(what));
    }
  } catch (const std::exception& e) {
    return fail("attach", e);
  }
}

int detach_main(const std::vector<std::string>& argv) {
  VerbCli cli("Take back what `specshim attach` gave a running container: the cgroup rule, the node, the record.",
              "specshim detach");
  Common c;
  std::vector<std::string> devices, cdis;
  add_common(cli, c);
  cli.option("--device", devices, "CONTAINER-PATH of a device attached with --device").one_value_each();
  cli.option("--cdi", cdis, "VENDOR/CLASS=NAME of a device attached with --cdi").one_value_each();
  std::vector<std::string> gpus;
  std::string proc = "/proc";
  add_gpu_options(cli, gpus, proc);
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    for (const auto& node : gpu_nodes(gpus, proc)) devices.push_back(node);
    if (devices.empty() && cdis.empty()) throw Error("give at least one --device, --cdi or --gpu");
    auto [config, setup, t] = open_common(c, true);
    std::string what = "container " + q(c.id);
    try {
      BundleLock lock(t.state.bundle);
      Record before = current_record(t.state.bundle, t.id, setup.nri_state_dir);
      if (before.devices.empty() && before.mounts.empty() && before.not_applied.empty())
        throw Error("nothing is attached (no " + q((t.state.bundle / kRecordFile).string()) + ")");
      Released r = release(before, Release{devices, cdis, {}});
      Change ch = transition(t, before, r.record);
      print_warnings("detach", ch);
      for (const auto& d : ch.removed) std::cout << "detached " << d.path << " (" << numbers(d) << ")\n";
      for (const auto& m : ch.unmounted) std::cout << "detached " << m.path << " (bind mount)\n";
      return 0;
    } catch (const std::exception&) {
      std::throw_with_nested(Error(what));
    }
  } catch (const std::exception& e) {
    return fail("detach", e);
  }
}

int attached_main(const std::vector<std::string>& argv) {
  VerbCli cli("Show what `specshim attach` gave a container (its record).", "specshim attached");
  Common c;
  std::string format = "text";
  add_common(cli, c);
  cli.option("--format", format, "text: a table; json: the record (schema: docs/attach.md)")
      .one_of({"text", "json"})
      .show_default();
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    auto [config, setup, t] = open_common(c, false);
    try {
      Record r = current_record(t.state.bundle, t.id, setup.nri_state_dir);
      if (format == "json") {
        std::cout << record_json(r);
        return 0;
      }
      if (r.devices.empty() && r.mounts.empty() && r.not_applied.empty()) {
        std::cout << "container " << c.id << ": nothing attached\n";
        return 0;
      }
      std::vector<std::vector<std::string>> rows = {{"PATH", "DEVICE", "PERMS", "NODE", "HOST", "BY"}};
      for (const auto& d : r.devices)
        rows.push_back({d.path, numbers(d), d.permissions, d.node, d.host_path, attached_by(d)});
      for (const auto& m : r.mounts) {
        std::vector<std::string> by;
        for (const auto& n : m.cdi) by.push_back("--cdi " + n);
        if (!m.reconcile.empty()) by.push_back("reconcile (" + join(m.reconcile, ", ") + ")");
        rows.push_back(
            {m.path, "bind", join(m.options, ","), m.mounted ? "bind" : "existing", m.host_path, join(by, ", ")});
      }
      std::vector<std::size_t> width(rows[0].size(), 0);
      for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
      for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i)
          line += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
        std::cout << line << "\n";
      }
      for (const auto& n : r.not_applied)
        std::cout << "not applied: " << n.cdi << ": " << n.edit << " " << n.value << " (" << not_applied_reason(n.edit)
                  << ")\n";
      return 0;
    } catch (const std::exception&) {
      std::throw_with_nested(Error("container " + q(c.id)));
    }
  } catch (const std::exception& e) {
    return fail("attached", e);
  }
}

}  // namespace specshim::shim
