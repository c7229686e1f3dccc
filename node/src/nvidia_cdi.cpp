// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/nvidia_cdi.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::nvidia {
namespace {

bool is_version(std::string_view s) {
  // digits and dots, at least one dot: 550.54.15, 535.104
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front())) || s.find('.') == std::string_view::npos)
    return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == '.' || std::isdigit(static_cast<unsigned char>(c)); });
}

// library_version is the driver version a library's file name carries:
// libcuda.so.550.54.15 -> 550.54.15; only the driver's own libraries
// (libcuda, libnvidia-*), whose names end in the driver's version.
std::optional<std::string> library_version(std::string_view path) {
  std::string_view base = path.substr(path.rfind('/') + 1);
  if (base.rfind("libcuda.so.", 0) != 0 && base.rfind("libnvidia-", 0) != 0) return std::nullopt;
  auto so = base.find(".so.");
  if (so == std::string_view::npos) return std::nullopt;
  std::string_view v = base.substr(so + 4);
  if (!is_version(v)) return std::nullopt;
  return std::string(v);
}

void collect_versions(const cdi::ContainerEdits& edits, std::set<std::string>& out) {
  for (const auto& m : edits.mounts)
    if (auto v = library_version(m.host_path)) out.insert(*v);
}

bool gives_node(const cdi::Device& d, const std::string& node) {
  return std::any_of(d.edits.device_nodes.begin(), d.edits.device_nodes.end(),
                     [&](const cdi::DeviceNode& n) { return n.path == node || n.host_path == node; });
}

bool same_uuid(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<std::string> driver_version(const std::filesystem::path& proc) {
  std::string text;
  try {
    text = fs::read_regular_file(proc / "driver/nvidia/version", 64 * 1024);
  } catch (const Error&) {
    return std::nullopt;
  }
  // The first line: "NVRM version: NVIDIA UNIX <arch> Kernel Module  <version>  <date>"; the
  // open kernel modules say "Open Kernel Module for <arch>  <version>  ...".
  std::string_view line(text);
  line = line.substr(0, line.find('\n'));
  auto at = line.find("Kernel Module");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at);
  std::size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    std::size_t end = rest.find(' ', i);
    std::string_view word = rest.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    if (is_version(word)) return std::string(word);
    if (end == std::string_view::npos) break;
    i = end;
  }
  return std::nullopt;
}

SpecFreshness freshness(const cdi::SpecFile& spec, const std::string& version, const std::vector<Gpu>& gpus) {
  SpecFreshness f;
  std::set<std::string> versions;
  collect_versions(spec.edits, versions);
  for (const auto& d : spec.devices) collect_versions(d.edits, versions);
  f.versions.assign(versions.begin(), versions.end());
  if (!versions.empty() && !versions.count(version))
    f.stale.push_back("its library mounts are driver " + join(f.versions, ", ") + "'s; the driver is " + version);
  for (const auto& gpu : gpus) {
    bool listed = std::any_of(spec.devices.begin(), spec.devices.end(), [&](const cdi::Device& d) {
      return same_uuid(d.name, gpu.uuid) || gives_node(d, gpu.node());
    });
    if (!listed) f.stale.push_back("it has no device for " + gpu.uuid + " (" + gpu.node() + ")");
  }
  for (const auto& d : spec.devices) {
    if (d.name.rfind("GPU-", 0) != 0) continue;  // index names, `all`, MIG-<uuid>: not in the driver's list
    bool present = std::any_of(gpus.begin(), gpus.end(), [&](const Gpu& g) { return same_uuid(d.name, g.uuid); });
    if (!present) f.stale.push_back("its device `" + d.name + "` is a GPU the driver does not list");
  }
  return f;
}

}  // namespace specshim::nvidia
