// SPDX-License-Identifier: Apache-2.0
// Finding the container (by id, or by its pod's CRI annotations) and
// reading it once: runtime state, spec, attach record, process, cgroups and
// mount table.
#include <algorithm>
#include <optional>

#include "diagnose/diagnose.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/node/pod_identity.h"

namespace specshim::shim::diagnose {
namespace {

namespace sfs = std::filesystem;

constexpr std::size_t kMaxSpecBytes = 64 << 20;

// member is the CRI identity of a spec of pod ns/name, as its engine wrote
// it; nullopt for any other spec, and for one whose identity keys disagree.
std::optional<pod_identity::Cri> member(const Spec& spec, std::string_view ns, std::string_view name) {
  pod_identity::Cri cri;
  try {
    cri = pod_identity::read_cri(spec);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!cri.engine || cri.pod.ns != ns || cri.pod.name != name) return std::nullopt;
  return cri;
}

Spec read_spec(const sfs::path& bundle, const std::string& id) {
  sfs::path file = bundle / "config.json";
  try {
    return Spec::parse(fs::read_regular_file(file, kMaxSpecBytes));
  } catch (const Error& e) {
    throw CannotInspect("container " + q(id) + ": read " + q(file.string()) + ": " + e.what());
  }
}

}  // namespace

std::pair<std::string, std::string> split_pod(const std::string& pod) {
  auto slash = pod.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == pod.size() ||
      pod.find('/', slash + 1) != std::string::npos)
    throw CannotInspect("--pod " + q(pod) + ": give NAMESPACE/NAME");
  return {pod.substr(0, slash), pod.substr(slash + 1)};
}

bool pod_matches(const Spec& spec, std::string_view ns, std::string_view name, std::string_view container) {
  auto cri = member(spec, ns, name);
  return cri && cri->kind != ContainerKind::sandbox && (container.empty() || cri->container == container);
}

std::string find_container(const Setup& setup, const Options& o) {
  if (o.pod.empty()) return o.id;
  auto [ns, name] = split_pod(o.pod);
  std::vector<live::ContainerState> all;
  try {
    all = live::runtime_list(setup.runtime, setup.runtime_root);
  } catch (const Error& e) {
    throw CannotInspect(e.what());
  }
  std::vector<std::pair<std::string, std::string>> found;  // id, container name
  std::vector<std::string> others;                         // the pod's sandbox and its other containers
  for (const auto& s : all) {
    Spec spec;
    try {
      spec = Spec::parse(fs::read_regular_file(s.bundle / "config.json", kMaxSpecBytes));
    } catch (const Error&) {
      continue;  // a container being deleted: its bundle may be gone
    }
    auto cri = member(spec, ns, name);
    if (!cri) continue;
    if (cri->kind == ContainerKind::sandbox)
      others.push_back("its sandbox " + s.id + " (never inspected)");
    else if (pod_matches(spec, ns, name, o.container))
      found.emplace_back(s.id, cri->container);
    else
      others.push_back(q(cri->container));
  }
  std::string which = "pod " + q(o.pod) + (o.container.empty() ? "" : " container " + q(o.container));
  std::string where = setup.runtime_root.empty() ? "the runtime's default root" : q(setup.runtime_root);
  if (found.empty())
    throw CannotInspect(which + ": the runtime under " + where +
                        " runs no such container (matched by the pod's namespace and name" +
                        (o.container.empty() ? "" : " and the container's name") + ", as its CRI engine wrote them)" +
                        (others.empty() ? "" : "; the pod has " + join(others, ", ")));
  if (found.size() > 1) {
    std::string list;
    for (const auto& [id, cname] : found) list += (list.empty() ? "" : ", ") + q(cname) + " " + id;
    throw CannotInspect(which + " has " + std::to_string(found.size()) + " containers (" + list +
                        "): name one with --container");
  }
  return found.front().first;
}

Container open_container(const Setup& setup, const std::string& id, const sfs::path& sysfs) {
  Container c;
  c.id = id;
  c.sysfs = sysfs;
  std::string what = "container " + q(id);
  try {
    c.state = live::runtime_state(setup.runtime, setup.runtime_root, id);
    live::require_live(c.state);
  } catch (const Error& e) {
    throw CannotInspect(std::string(e.what()) + ": diagnose looks at a container's process");
  }
  c.spec = read_spec(c.state.bundle, id);
  sfs::path proc = "/proc/" + std::to_string(c.state.pid);
  try {
    c.record = live::attach::read_record(c.state.bundle, id);
    c.userns = userns::read(c.spec);
    try {
      c.identity = pod_identity::identify(c.spec);
    } catch (const Error& e) {
      c.identity_error = e.what();  // the allocation layer says so; the other layers need no pod
    }
    c.root = proc / "root";
    c.process = live::read_process(c.state.pid);
    c.cgroups = live::cgroup_places(c.state.pid);
    c.mounts = live::parse_mountinfo(fs::read_regular_file(proc / "mountinfo", 16 << 20));
  } catch (const Error& e) {
    throw CannotInspect(what + ": " + e.what());
  }
  return c;
}

Severity Report::status() const {
  Severity worst = Severity::ok;
  for (const auto& f : findings_) worst = std::max(worst, f.status);
  return worst;
}

bool Container::owner_mapped(std::uint32_t uid, std::uint32_t gid) const {
  if (!userns || !userns->known()) return true;
  return userns->uids.to_container(uid) && userns->gids.to_container(gid);
}

std::string Container::owner(std::uint32_t uid, std::uint32_t gid) const {
  std::string host = std::to_string(uid) + ":" + std::to_string(gid);
  if (!userns || !userns->known()) return host;
  auto id = [](std::optional<std::uint32_t> v) { return v ? std::to_string(*v) : std::string("65534"); };
  return id(userns->uids.to_container(uid)) + ":" + id(userns->gids.to_container(gid)) + " (host " + host + ")";
}

std::string Container::process_ids() const {
  auto text = [](std::uint32_t uid, std::uint32_t gid, const std::vector<std::uint32_t>& groups) {
    std::string s = "uid " + std::to_string(uid) + " gid " + std::to_string(gid);
    if (!groups.empty()) {
      s += " groups";
      for (auto g : groups) s += " " + std::to_string(g);
    }
    return s;
  };
  const auto& p = process;
  if (!userns || !userns->known()) return text(p.uid, p.gid, p.groups);
  auto inside = [](const userns::IdMap& m, std::uint32_t id) { return m.to_container(id).value_or(65534); };
  std::vector<std::uint32_t> groups;
  for (auto g : p.groups) groups.push_back(inside(userns->gids, g));
  return text(inside(userns->uids, p.uid), inside(userns->gids, p.gid), groups) + " (host " + std::to_string(p.uid) +
         ":" + std::to_string(p.gid) + ")";
}

const live::MountEntry* Container::mount_at(const std::string& path) const {
  const live::MountEntry* found = nullptr;
  for (const auto& m : mounts)
    if (m.point == path) found = &m;
  return found;
}

std::string numbers(const Device& d) {
  if (!d.numbers_known) return "?";
  return std::string(1, d.type) + " " + std::to_string(d.major) + ":" + std::to_string(d.minor);
}

}  // namespace specshim::shim::diagnose
