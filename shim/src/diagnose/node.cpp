// SPDX-License-Identifier: Apache-2.0
// The node layer: the device's path inside the container is a node of the
// right type and numbers, on a mount that allows device nodes, that the
// process's ids may open. Looked at through /proc/PID/root with O_PATH:
// never opened.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "diagnose/diagnose.h"

namespace specshim::shim::diagnose {
namespace {

std::string mode_text(char type, std::uint32_t mode) {
  std::string s(1, type == 'b' ? 'b' : 'c');
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) s += (mode >> (8 - i)) & 1 ? rwx[i] : '-';
  return s;
}

// source_of says where the device comes from: "from linux.devices", or a
// companion's "needed by /dev/nvidia0, NVIDIA GPU".
std::string source_of(const Device& d) {
  return d.source.rfind("needed by ", 0) == 0 ? d.source : "from " + d.source;
}

// remedy is what brings a missing or wrong node back.
std::string remedy(const Device& d) {
  if (!d.remedy.empty()) return d.remedy;
  if (d.bind) return "the bind mount of " + d.host_path + " is not there; recreate the container";
  return "the runtime makes the node at create: recreate the container, or `specshim attach` it to the running one";
}

// covering is the mount the path is on: the longest mount point that is the
// path or one of its parents (the last one listed wins, as it is on top).
const live::MountEntry* covering(const Container& c, const std::string& path) {
  const live::MountEntry* best = nullptr;
  for (const auto& m : c.mounts) {
    bool parent =
        m.point == "/" || path == m.point ||
        (path.size() > m.point.size() && path.compare(0, m.point.size(), m.point) == 0 && path[m.point.size()] == '/');
    if (parent && (!best || m.point.size() >= best->point.size())) best = &m;
  }
  return best;
}

bool has(const std::string& options, std::string_view option) {
  std::size_t at = 0;
  while (at <= options.size()) {
    std::size_t end = options.find(',', at);
    if (end == std::string::npos) end = options.size();
    if (std::string_view(options).substr(at, end - at) == option) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

void check_node(const Container& c, const Device& d, Report& r, std::string_view layer) {
  live::FileView v = live::look_at(c.root, d.path);
  std::string from = " (" + source_of(d) + ")";
  if (!v.error.empty()) {
    r.add(layer, d.path, Severity::fail, "cannot look at it inside the container: " + v.error,
          "a symlink loop or a file where a directory should be, on the way to the node");
    return;
  }
  if (v.kind == live::FileView::Kind::missing || v.kind == live::FileView::Kind::dangling_symlink) {
    r.add(layer, d.path, Severity::fail,
          std::string(v.kind == live::FileView::Kind::missing ? "does not exist" : "is a dangling symlink") +
              " in the container" + from,
          remedy(d));
    return;
  }
  if (!v.is_device()) {
    r.add(layer, d.path, Severity::fail, "is " + std::string(live::kind_name(v.kind)) + ", not a device node" + from,
          "a bind mount of a host path that is no device, or the image ships a file there");
    return;
  }
  std::string got = std::string(1, v.type()) + " " + std::to_string(v.major) + ":" + std::to_string(v.minor);
  if (d.numbers_known && (v.type() != d.type || v.major != d.major || v.minor != d.minor)) {
    r.add(layer, d.path, Severity::fail, "is " + got + ", but " + d.source + " says " + numbers(d),
          d.bind ? "a bind mount shows the host file's own numbers: the host node at " + d.host_path + " changed"
                 : "another node was made at this path; remove it in the container, then " + remedy(d));
    return;
  }
  if (!d.host_path.empty()) {
    auto host = host_device(d.host_path, d.path, "");
    if (host && (host->type != v.type() || host->major != v.major || host->minor != v.minor)) {
      r.add(layer, d.path, Severity::fail, "is " + got + ", but the host node " + d.host_path + " is " + numbers(*host),
            "the host's node changed since the container was created (driver reloaded?); recreate the container");
      return;
    }
  }
  if (const auto* m = covering(c, d.path); m && has(m->options, "nodev")) {
    r.add(layer, d.path, Severity::fail, got + " is on a nodev mount (" + m->point + "): the kernel refuses to open it",
          "mount " + m->point + " without nodev, or bind-mount the host node at " + d.path);
    return;
  }
  std::string looks = got + " " + mode_text(v.type(), v.mode) + " " + c.owner(v.uid, v.gid);
  bool mapped = c.owner_mapped(v.uid, v.gid);
  if (!live::may_open(c.process, v.uid, v.gid, v.mode, d.access, mapped)) {
    std::string why = looks + from + ": " + c.process_ids() + " may not open it for " + d.access;
    if (!mapped) why += " (its owner is not mapped into the container's user namespace: only the other bits count)";
    r.add(layer, d.path, Severity::fail, why,
          d.bind || !mapped
              ? "a bound node keeps its host owner and mode: give the host node the bits the process needs "
                "(GPU nodes are 0666) or a group mapped into the container"
              : "give the node a mode or group the process has (CDI deviceNodes fileMode/gid, the device plugin's "
                "node), or add the node's group to the process's additionalGids");
    return;
  }
  r.add(layer, d.path, Severity::ok, looks + ", opens for " + d.access + from);
}

}  // namespace specshim::shim::diagnose
