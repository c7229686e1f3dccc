// SPDX-License-Identifier: Apache-2.0
// Doctor's CDI check: the configured spec dirs, loaded by the cdi modifier's
// own loader (cdi::load_specs, JSON and YAML, the whole schema): each dir,
// each file that does not load and why, device names two files define, and
// the devices a create can use.
#include "specshim/node/cdi.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "doctor/doctor.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/node/cdi_cache.h"
#include "specshim/node/nvidia_cdi.h"

namespace specshim::shim::doctor {
namespace {

using Result = cdi::SpecFileResult;

// check_dirs reports each dir: unreadable (a problem: its devices are
// missing from every create), absent (fine: CDI is optional), or how many
// spec files it has.
void check_dirs(const cdi::Registry& reg, Check& c) {
  for (std::size_t i = 0; i < reg.dirs.size(); ++i) {
    const std::string& dir = reg.dirs[i];
    auto error = std::find_if(reg.dir_errors.begin(), reg.dir_errors.end(),
                              [&](const std::string& e) { return e.find("`" + dir + "`") != std::string::npos; });
    std::error_code ec;
    if (error != reg.dir_errors.end()) {
      c.add(Severity::fail, *error);
    } else if (!std::filesystem::exists(dir, ec)) {
      c.add(Severity::info, dir + ": absent");
    } else {
      auto files = std::count_if(reg.files.begin(), reg.files.end(),
                                 [&](const Result& f) { return f.priority == static_cast<int>(i); });
      c.add(Severity::ok, dir + ": " + count(static_cast<std::size_t>(files), "spec file"));
    }
  }
}

void check_files(const cdi::Registry& reg, Check& c) {
  for (const auto& f : reg.files) {
    if (f.status == Result::Status::failed) {
      c.add(Severity::fail, f.path + ": " + f.error);
    } else if (f.spec) {
      c.add(Severity::ok, f.path + ": loaded (`" + f.spec->kind + "`, cdiVersion " + f.spec->version + ", " +
                              count(f.spec->devices.size(), "device") + ")");
    }
  }
}

// check_cache says where parsed spec files are kept, and warns when that
// directory is there but a create (run as root by containerd) would not use
// it: not a directory owned by root and closed to group and others.
void check_cache(const Host& host, const std::string& dir, Check& c) {
  if (dir.empty()) {
    c.add(Severity::info, "parse cache off (cache-dir = \"\"): every create parses the spec files it needs");
    return;
  }
  if (cdi::build_id().empty()) {
    c.add(Severity::info, "parse cache off: this binary has no ELF build ID to key entries by");
    return;
  }
  std::string at = host.path(dir).string();
  struct stat st {};
  if (::lstat(at.c_str(), &st) != 0) {
    c.add(Severity::info, "parse cache " + dir + ": absent (the first create with a CDI request makes it, 0700)");
    return;
  }
  if (!cdi::usable_cache_dir(st, 0)) {
    c.add(Severity::warn, "parse cache " + dir +
                              ": not used (not a directory owned by root and closed to group and others): every "
                              "create parses its spec files");
    return;
  }
  std::error_code ec;
  std::size_t entries = 0;
  for (auto it = std::filesystem::directory_iterator(at, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    entries += it->path().extension() == ".cdi";
  if (ec) {
    c.add(Severity::info, "parse cache " + dir + ": entries not readable as uid " + std::to_string(::geteuid()));
    return;
  }
  c.add(Severity::ok, "parse cache " + dir + ": " + std::to_string(entries) + (entries == 1 ? " entry" : " entries"));
}

// check_present says how many of an env-devices kind's devices have their
// nodes in this /dev: with scope = "host" an absent one makes `all` fail
// (a nested runtime wants "visible"); with "visible" they are what `all`
// gives.
void check_present(const env_devices::Entry& e, const cdi::Registry& reg, Check& c) {
  std::string prefix = e.kind + "=";
  std::size_t total = 0;
  std::vector<std::string> absent;
  for (auto it = reg.devices.lower_bound(prefix); it != reg.devices.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    std::string_view name = std::string_view(it->first).substr(prefix.size());
    if (name == "all" || name == "none") continue;
    ++total;
    if (!cdi::present(it->second)) absent.push_back(it->first);
  }
  std::string head = "env-devices `" + e.env + "`: ";
  std::string count = std::to_string(total - absent.size()) + " of " + std::to_string(total) + " `" + e.kind +
                      "` devices have their nodes here";
  if (e.scope == env_devices::Scope::visible)
    c.add(total == absent.size() ? Severity::warn : Severity::ok,
          head + count + " (scope = \"visible\": `all` and indices count among them)");
  else if (absent.empty())
    c.add(Severity::ok, head + "`" + e.kind + "` devices are defined, and their nodes are here");
  else
    c.add(Severity::warn, head + count + "; absent: " + join_some(absent, ", ") +
                              ": `all` fails on this node. A specshim that is the runtime of a containerd or dockerd "
                              "inside a container wants scope = \"visible\"");
}

// path_unit is the .path unit that starts a refresh .service.
std::string path_unit(std::string_view service) {
  return std::string(service.substr(0, service.rfind('.'))) + ".path";
}

// refresh_unit names the unit that regenerates NVIDIA's spec (enabled or
// only installed), "" when there is none.
std::pair<std::string, bool> refresh_unit(const Host& host) {
  std::error_code ec;
  for (std::string_view unit : nvidia::kRefreshUnits) {
    bool installed = false;
    for (const char* dir : {"/etc/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/"})
      installed = installed || std::filesystem::exists(host.path(dir + std::string(unit)), ec);
    if (!installed) continue;
    // Enabled: a link in some target's .wants, to the service or to its .path unit.
    bool enabled = false;
    for (const auto& e : std::filesystem::directory_iterator(host.path("/etc/systemd/system"), ec))
      for (const std::string& name : {std::string(unit), path_unit(unit)})  // a link, dangling under --host-root
        enabled = enabled ||
                  std::filesystem::symlink_status(e.path() / name, ec).type() != std::filesystem::file_type::not_found;
    return {std::string(unit), enabled};
  }
  return {"", false};
}

// check_nvidia_spec: with NVIDIA's driver loaded, the spec files of
// nvidia.com/gpu must describe it, and something must regenerate them.
void check_nvidia_spec(const Host& host, const Loaded& loaded, const cdi::Registry& reg, Check& c) {
  std::filesystem::path proc = host.path(loaded.hotplug.proc);
  auto version = nvidia::driver_version(proc);
  if (!version) return;
  std::vector<nvidia::Gpu> gpus;
  try {
    gpus = nvidia::read_gpus(proc);
  } catch (const Error& e) {
    c.add(Severity::warn, std::string("NVIDIA's GPUs: ") + e.what());
  }
  auto [unit, enabled] = refresh_unit(host);
  std::string refresh = unit.empty() || !enabled
                            ? "run `" + std::string(nvidia::kRefresh) + "`"
                            : "run `systemctl restart " + unit + "` (`" + std::string(nvidia::kRefresh) + "`)";
  bool any = false;
  for (const auto& f : reg.files) {
    if (!f.spec || f.spec->kind != nvidia::kGpuKind) continue;
    any = true;
    auto fresh = nvidia::freshness(*f.spec, *version, gpus);
    if (fresh.stale.empty())
      c.add(Severity::ok, f.path + ": describes NVIDIA driver " + *version + " and its " + count(gpus.size(), "GPU"));
    else
      c.add(Severity::fail, f.path + ": stale: " + join(fresh.stale, "; ") +
                                ": creates get the wrong libraries or miss GPUs; " + refresh);
  }
  if (!any)
    c.add(Severity::warn, "NVIDIA driver " + *version + " is loaded, but no spec file defines `" +
                              std::string(nvidia::kGpuKind) + "` devices: creates that ask for a GPU by name fail; " +
                              refresh);
  if (unit.empty())
    c.add(Severity::warn,
          "nothing regenerates NVIDIA's CDI spec at boot (/var/run/cdi is a tmpfs) or on a driver change: enable "
          "NVIDIA's nvidia-cdi-refresh.path (toolkit 1.18 and later) or specshim-nvidia-cdi.path (this package)");
  else if (!enabled)
    c.add(Severity::warn,
          unit + " is installed but not enabled: `systemctl enable --now " + path_unit(unit) + " " + unit + "`");
  else
    c.add(Severity::info, unit + " regenerates NVIDIA's CDI spec at boot");
}

}  // namespace

Check check_cdi(const Host& host, const Loaded& loaded) {
  Check c("cdi");
  if (!loaded.cdi_dirs) {
    c.add(Severity::info, "disabled ([cdi] enabled = false)");
    return c;
  }
  if (loaded.valid && !loaded.on("cdi")) {
    c.add(Severity::info, "disabled (not in [chain] order)");
    return c;
  }
  if (!loaded.valid) c.add(Severity::info, "config invalid: checking the built-in spec dirs");

  std::vector<std::string> dirs;
  for (const auto& d : *loaded.cdi_dirs) dirs.push_back(host.path(d).string());
  cdi::Registry reg = cdi::load_specs(dirs);
  check_dirs(reg, c);
  check_files(reg, c);
  check_cache(host, loaded.cdi_cache_dir, c);
  // Two files of the same dir (the highest that defines the name) make the
  // name unusable: a create asking for it is refused.
  for (const auto& [name, files] : reg.conflicts)
    c.add(Severity::fail, "device `" + name + "` is defined by more than one spec file (" + join(files, ", ") +
                              "): creates asking for it fail");

  // env-devices hands its requests to cdi: a kind without a spec fails them.
  for (const auto& e : loaded.env_devices) {
    std::string prefix = e.kind + "=";
    auto it = reg.devices.lower_bound(prefix);
    if (it == reg.devices.end() || it->first.rfind(prefix, 0) != 0)
      c.add(Severity::warn, "env-devices `" + e.env + "`: no spec file defines a `" + e.kind +
                                "` device: creates that ask for one fail (nvidia-ctk cdi generate or "
                                "nvidia-cdi-refresh write NVIDIA's)");
    else
      check_present(e, reg, c);
  }

  check_nvidia_spec(host, loaded, reg, c);

  if (reg.files.empty()) {
    c.add(Severity::info, "no CDI spec files");
    return c;
  }
  auto ok = std::count_if(reg.files.begin(), reg.files.end(), [](const Result& f) { return f.spec != nullptr; });
  std::vector<std::string> names;
  for (const auto& [name, ref] : reg.devices) names.push_back(name);
  c.add(Severity::info,
        std::to_string(ok) + " of " + count(reg.files.size(), "spec file") + " loaded, " +
            count(names.size(), "device") + " usable",
        names);
  return c;
}

}  // namespace specshim::shim::doctor
