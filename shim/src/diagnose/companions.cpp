// SPDX-License-Identifier: Apache-2.0
// The companions layer: for each device matching a row of the vendor table
// (specshim/base/vendors.h), the other nodes it needs (present and allowed), the
// libraries the container's dynamic loader must find, the IOMMU group of a
// VFIO node (every device bound to vfio-pci) and the locked-memory limit.
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "diagnose/diagnose.h"
#include "specshim/base/error.h"

namespace specshim::shim::diagnose {
namespace {

namespace sfs = std::filesystem;

bool matches(std::string_view pattern, const std::string& path) {
  return ::fnmatch(std::string(pattern).c_str(), path.c_str(), FNM_PATHNAME) == 0;
}

// companion_device is the device to expect at path: the host's node at the
// same path, else whatever node the container has there.
Device companion_device(const Container& c, const std::string& path, const std::string& source) {
  if (auto d = host_device(path, path, source)) {
    d->bind = userns::binds_device(c.spec, path, "");
    return *d;
  }
  Device d;
  d.path = path;
  d.source = source;
  live::FileView v = live::look_at(c.root, path);
  if (v.is_device()) {
    d.type = v.type();
    d.major = v.major;
    d.minor = v.minor;
    d.numbers_known = true;
  }
  return d;
}

// check_companion checks one companion node in the node and cgroup ways,
// under the companions layer; an optional one's failures are warnings.
void check_companion(const Container& c, const Device& d, bool optional, Report& r) {
  Report one;
  check_node(c, d, one, kCompanions);
  check_cgroup(c, d, one, kCompanions);
  for (auto f : one.findings()) {
    if (optional && f.status == Severity::fail) {
      f.status = Severity::warn;
      f.message += " (only some programs need it)";
    }
    r.add(f.layer, f.subject, f.status, f.message, f.hint);
  }
}

void check_nodes(const Container& c, const Vendor& v, const std::vector<Device>& devices, const std::string& device,
                 Report& r) {
  std::string source = "needed by " + device + ", " + std::string(v.name);
  std::string remedy =
      " with " + device + ": the device plugin or CDI spec of the " + std::string(v.name) + " should add it";
  auto add = [&](const std::string& path, bool optional) {
    if (std::any_of(devices.begin(), devices.end(), [&](const Device& d) { return d.path == path; })) {
      r.add(kCompanions, path, Severity::info, "one of the container's own devices: see its node and cgroup lines");
      return;
    }
    Device d = companion_device(c, path, source);
    d.remedy = "give the container " + path + remedy;
    check_companion(c, d, optional, r);
  };
  for (const auto* list : {&v.nodes, &v.optional})
    for (auto pattern : *list) {
      bool optional = list == &v.optional;
      std::string p(pattern);
      if (p.find_first_of("*?[") == std::string::npos) {
        add(p, optional);
        continue;
      }
      std::string dir = sfs::path(p).parent_path().string();
      std::vector<std::string> found;
      for (const auto& name : live::list_in_root(c.root, dir))
        if (matches(pattern, dir + "/" + name)) found.push_back(dir + "/" + name);
      std::sort(found.begin(), found.end());
      if (found.empty())
        r.add(kCompanions, p, optional ? Severity::warn : Severity::fail,
              "no node matching " + p + " in the container; " + device + " needs one",
              "give the container a node matching " + p + remedy);
      for (const auto& path : found) add(path, optional);
    }
}

// library_dirs are where the container's dynamic loader looks: the
// process's LD_LIBRARY_PATH, the dirs of /etc/ld.so.conf (and the files it
// includes), then the default dirs.
std::vector<std::string> library_dirs(const Container& c) {
  std::vector<std::string> dirs;
  auto add = [&](std::string d) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (!d.empty() && d[0] == '/' && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (const Json* env = c.spec.find({"process", "env"}); env && env->is_array())
    for (const auto& e : *env)
      if (e.is_string() && e.get<std::string>().rfind("LD_LIBRARY_PATH=", 0) == 0) {
        std::istringstream parts(e.get<std::string>().substr(16));
        for (std::string d; std::getline(parts, d, ':');) add(d);
      }
  std::vector<std::string> confs = {"/etc/ld.so.conf"};
  for (std::size_t i = 0; i < confs.size() && i < 64; ++i) {
    std::optional<std::string> text;
    try {
      text = live::read_in_root(c.root, confs[i], 1 << 20);
    } catch (const Error&) {
    }
    if (!text) continue;
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      line = line.substr(0, line.find('#'));
      std::istringstream f(line);
      std::string word;
      if (!(f >> word)) continue;
      if (word != "include") {
        add(word);
        continue;
      }
      for (std::string pattern; f >> pattern;) {
        std::string dir = sfs::path(pattern).parent_path().string();
        std::vector<std::string> names = live::list_in_root(c.root, dir);
        std::sort(names.begin(), names.end());
        for (const auto& n : names)
          if (matches(pattern, dir + "/" + n)) confs.push_back(dir + "/" + n);
      }
    }
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"})
    add(d);
  return dirs;
}

void check_libraries(const Container& c, const Vendor& v, Report& r) {
  if (v.libraries.empty()) return;
  std::vector<std::string> dirs = library_dirs(c);
  for (auto soname : v.libraries) {
    std::string found;
    for (const auto& d : dirs) {
      live::FileView f = live::look_at(c.root, d + "/" + std::string(soname));
      if (f.kind == live::FileView::Kind::regular) {
        found = d + "/" + std::string(soname);
        break;
      }
    }
    if (found.empty())
      r.add(
          kCompanions, std::string(soname), Severity::fail,
          "not found in the container's LD_LIBRARY_PATH, ld.so.conf dirs or default dirs (" +
              std::to_string(dirs.size()) + " searched)",
          "the host driver's libraries must be mounted in: NVIDIA's CDI spec (`nvidia-ctk cdi generate`) mounts them");
    else
      r.add(kCompanions, std::string(soname), Severity::ok, "found at " + found);
  }
}

void check_iommu_group(const Container& c, const Device& d, Report& r) {
  std::string group = sfs::path(d.path).filename().string();
  sfs::path dir = c.sysfs / "kernel" / "iommu_groups" / group / "devices";
  std::error_code ec;
  std::vector<std::string> members;
  for (const auto& e : sfs::directory_iterator(dir, ec)) members.push_back(e.path().filename().string());
  if (ec || members.empty()) {
    r.add(kCompanions, d.path, Severity::fail, "IOMMU group " + group + " has no devices in " + dir.string(),
          "the IOMMU must be on (intel_iommu=on / amd_iommu=on) and the group number must be the host's");
    return;
  }
  std::sort(members.begin(), members.end());
  for (const auto& m : members) {
    std::string driver = sfs::read_symlink(dir / m / "driver", ec).filename().string();
    if (ec || driver.empty()) {
      r.add(kCompanions, m, Severity::ok, "IOMMU group " + group + ": bound to no driver (does no DMA)");
    } else if (driver.find("vfio") != std::string::npos) {
      r.add(kCompanions, m, Severity::ok, "IOMMU group " + group + ": bound to " + driver);
    } else if (driver == "pci-stub" || driver == "pcieport") {
      r.add(kCompanions, m, Severity::ok,
            "IOMMU group " + group + ": bound to " + driver + " (allowed in a VFIO group)");
    } else {
      r.add(kCompanions, m, Severity::fail,
            "IOMMU group " + group + " holds " + m + ", bound to " + driver + ": the group is not viable, " + d.path +
                " does not open",
            "every device of a group must be bound to vfio-pci: echo vfio-pci > /sys/bus/pci/devices/" + m +
                "/driver_override, then unbind and reprobe it");
    }
  }
}

void check_locked_memory(const Container& c, const std::string& device, Report& r) {
  constexpr int kCapIpcLock = 14;
  std::string subject = "RLIMIT_MEMLOCK";
  if (c.process.has_cap(kCapIpcLock)) {
    r.add(kCompanions, subject, Severity::ok,
          "the process has CAP_IPC_LOCK: DMA mappings of " + device + " may pin any amount");
  } else if (!c.process.memlock_soft) {
    r.add(kCompanions, subject, Severity::ok, "unlimited: DMA mappings of " + device + " may pin any amount");
  } else {
    r.add(kCompanions, subject, Severity::warn,
          std::to_string(*c.process.memlock_soft / 1024) + " KiB and no CAP_IPC_LOCK: DMA mappings of " + device +
              " beyond that fail (VFIO pins what it maps)",
          "raise the container's memlock rlimit (process.rlimits RLIMIT_MEMLOCK) or give it CAP_IPC_LOCK");
  }
}

}  // namespace

void check_companions(const Container& c, const std::vector<Device>& devices, Report& r) {
  for (const auto& v : vendors()) {
    std::vector<const Device*> of;
    for (const auto& d : devices)
      if (matches(v.node, d.path)) of.push_back(&d);
    if (of.empty()) continue;
    check_nodes(c, v, devices, of.front()->path, r);
    check_libraries(c, v, r);
    if (v.iommu_group)
      for (const auto* d : of) check_iommu_group(c, *d, r);
    if (v.locked_memory) check_locked_memory(c, of.front()->path, r);
  }
}

}  // namespace specshim::shim::diagnose
