// SPDX-License-Identifier: Apache-2.0
// The cpuset modifier. The kubelet's CPU manager (static policy) gives a
// Guaranteed container exclusive CPUs, and its memory manager pins its memory
// to NUMA nodes, through CRI: a container created outside CRI (a sibling that
// takes a pod container's devices) runs on the shared pool, possibly far from
// its GPU's node. This modifier gives such a sibling the CPUs and memory
// nodes of the container(s) it takes its devices from, as PodResources
// reports them:
//   specshim.io/devices-from: <container>   that container's
//   specshim.io/devices-from-pod: "true"    the union over the pod's containers
// Never for a CRI container (the kubelet owns its cpuset and updates it), and
// never wider than a cpuset the spec already has (the result is intersected
// with it, so applying it again changes nothing).
#include "cpuset/modifier.h"

#include <algorithm>
#include <exception>
#include <iterator>

#include "kubelet_modifier.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/cpuset.h"
#include "specshim/modifiers/factories.h"
#include "specshim/node/kubelet_session.h"

namespace specshim::cpuset {
namespace {

using device_plugin::kDevicesFrom;
using device_plugin::kDevicesFromPod;
using device_plugin::kPod;
using pod_identity::Identity;

std::string names(const std::vector<std::string>& containers) {
  std::string out;
  for (const auto& c : containers) out += (out.empty() ? "`" : ", `") + c + "`";
  return out;
}

// ListField is linux.resources.cpu.<key> and what its ids are.
struct ListField {
  const char* key;
  const char* path;
  const char* noun;
  std::uint32_t limit;
};
constexpr ListField kCpus{"cpus", "linux.resources.cpu.cpus", "CPU", kMaxCpus};
constexpr ListField kMems{"mems", "linux.resources.cpu.mems", "NUMA node", kMaxNumaNodes};

// existing reads a list the spec already has; nullopt when it is absent or
// empty (runc writes nothing for an empty list: no restriction).
std::optional<IdSet> existing(const Spec& spec, const ListField& f) {
  const Json* v = spec.find({"linux", "resources", "cpu", f.key});
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) throw Error(std::string(f.path) + ": must be a string");
  const auto& text = v->get_ref<const std::string&>();
  if (text.empty()) return std::nullopt;
  return parse_list(f.path, text, f.limit);
}

// from_kubelet checks ids the kubelet reported for a container.
IdSet from_kubelet(const std::vector<std::int64_t>& ids, const ListField& f, const std::string& container) {
  IdSet out;
  for (auto id : ids) {
    if (id < 0 || id >= f.limit)
      throw kubelet::Protocol("the kubelet reports " + std::string(f.noun) + " " + std::to_string(id) +
                              " for container `" + container + "`, outside 0-" + std::to_string(f.limit - 1));
    out.push_back(static_cast<std::uint32_t>(id));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Wanted is what the source containers hold.
struct Wanted {
  IdSet cpus;
  IdSet mems;
  std::vector<std::string> sources;  // the container asked for, or (pod-sync) those holding any
  std::string of;                    // "container `main`", "containers `a`, `b`"
};

// Pin is one apply: the modifier's table and session, the container being
// pinned and how messages name it, and where what it changes is told.
struct Pin {
  const Config& config;
  KubeletSession& session;
  std::vector<std::string>& changes;
  Identity id = {};
  std::string target = {};  // "container `ctr-1` of pod `ns/p`"

  std::string socket() const { return kubelet::pod_resources_socket(config.kubelet_root).string(); }

  // pod asks PodResources once per create (KubeletSession).
  const kubelet::PodResources& pod() const { return session.pod_resources(id.pod.ns, id.pod.name); }

  // settle applies on-error to a failure to learn the source's CPUs: fail
  // throws, skip leaves a warning in the debug log.
  void settle(const std::string& what, const std::string& cause) const {
    std::string msg = what + " for " + target + " (socket " + socket() + "): " + cause;
    if (config.on_error == OnError::fail) throw Error(msg);
    log::warn("cpuset: skipped (on-error = skip): {}", msg);
  }

  // wanted reads the request annotations and returns what the sources hold;
  // nullopt when nothing is asked for or the failure was skipped.
  std::optional<Wanted> wanted(const std::optional<std::string>& from, bool pod_sync) const {
    Wanted w;
    std::string what = pod_sync
                           ? "read the CPUs of pod `" + id.pod.str() + "` (annotation " + kDevicesFromPod + ")"
                           : "read the CPUs of container `" + from.value_or("") + "` (annotation " + kDevicesFrom + ")";
    if (from && !container_name(*from)) {
      settle("read the CPUs of the container named by annotation " + std::string(kDevicesFrom), "not a container name");
      return std::nullopt;
    }
    try {
      if (id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
      const auto& pod_resources = pod();
      if (from && !pod_resources.containers.count(*from))
        throw kubelet::NotFound("pod `" + id.pod.str() + "` has no container `" + *from + "`");
      std::vector<std::string> asked;
      if (pod_sync)
        for (const auto& [name, devices] : pod_resources.containers) asked.push_back(name);
      else
        asked.push_back(*from);
      for (const auto& name : asked) {
        const auto& a = pod_resources.assignment(name);
        IdSet cpus = from_kubelet(a.cpu_ids, kCpus, name);
        IdSet mems;
        for (const auto& m : a.memory) mems = unite(mems, from_kubelet(m.numa_nodes, kMems, name));
        log::debug("cpuset: {}: container `{}` of pod `{}` holds CPUs \"{}\", memory on NUMA nodes \"{}\"", target,
                   name, id.pod.str(), format_list(cpus), format_list(mems));
        // Pod-sync names only the containers that hold something.
        if (!pod_sync || !cpus.empty() || !mems.empty()) w.sources.push_back(name);
        w.cpus = unite(w.cpus, cpus);
        w.mems = unite(w.mems, mems);
      }
    } catch (const kubelet::Error& e) {
      settle(what, e.what());
      return std::nullopt;
    }
    w.of = w.sources.empty()       ? "any container of pod `" + id.pod.str() + "`"
           : w.sources.size() == 1 ? "container " + names(w.sources)
                                   : "containers " + names(w.sources);
    return w;
  }

  // narrow sets field to want intersected with what the spec has; the text
  // is left as it is when the set does not change.
  void narrow(Spec& spec, const ListField& f, const std::optional<IdSet>& have, const IdSet& want,
              const Wanted& w) const {
    IdSet result = have ? intersect(*have, want) : want;
    if (result.empty())
      throw Error("pin " + target + " to the " + f.noun + "s of " + w.of + ": " + f.path + " \"" + format_list(*have) +
                  "\" and the kubelet's \"" + format_list(want) + "\" have no " + f.noun + " in common");
    if (have && *have == result) {
      log::debug("cpuset: {}: {} \"{}\" already within {} \"{}\"", target, f.path, format_list(*have), w.of,
                 format_list(want));
      return;
    }
    std::string text = format_list(result);
    spec.object_at({"linux", "resources", "cpu"})[f.key] = text;
    changes.push_back("set " + std::string(f.path) + " to \"" + text + "\" (from " + w.of + ")");
    log::debug("cpuset: {}: {} = \"{}\" ({} \"{}\"{})", target, f.path, text, w.of, format_list(want),
               have ? ", within the spec's \"" + format_list(*have) + "\"" : std::string());
  }
};

}  // namespace

Cpuset::Cpuset(Config config, device_plugin::ClientFactory make_client)
    : Cpuset(config, std::make_shared<KubeletSession>(std::move(make_client), config.budget)) {}

Cpuset::Cpuset(Config config, std::shared_ptr<KubeletSession> session)
    : config_(std::move(config)), session_(std::move(session)) {}

bool Cpuset::client_made() const {
  return session_->client_made();
}

std::string Cpuset::last_change() const {
  return join(changes_, "; ");
}

void Cpuset::apply(Spec& spec, Context& ctx) {
  changes_.clear();
  if (ctx.kind == ContainerKind::sandbox) return;  // the pause container runs no workload
  auto from = spec.annotation(kDevicesFrom);
  auto pod_value = spec.annotation(kDevicesFromPod);
  bool pod_sync = pod_value && *pod_value != "false";
  if (!from && !pod_sync) return;

  Pin s{.config = config_, .session = *session_, .changes = changes_, .id = pod_identity::identify(spec)};
  s.target = target_name(s.id, ctx.container_id);
  if (s.id.cri) {
    log::debug("cpuset: {}: created through CRI, the kubelet's CPU manager owns its cpuset; left alone", s.target);
    return;
  }
  if (pod_sync && *pod_value != "true") {
    s.settle(std::string("read the CPUs of pod `") + s.id.pod.str() + "` (annotation " + kDevicesFromPod + ")",
             "want \"true\" or \"false\"");
    return;
  }
  // The spec's own lists are checked before the kubelet is asked.
  auto cpus = existing(spec, kCpus);
  auto mems = existing(spec, kMems);
  auto w = s.wanted(from, pod_sync);
  if (!w) return;
  if (w->cpus.empty()) {
    log::debug("cpuset: {}: the kubelet reports no exclusive CPUs for {}; cpuset left alone", s.target, w->of);
    return;
  }
  s.narrow(spec, kCpus, cpus, w->cpus, *w);
  if (w->mems.empty())
    log::debug("cpuset: {}: the kubelet reports no memory NUMA nodes for {}; {} left alone", s.target, w->of,
               kMems.path);
  else
    s.narrow(spec, kMems, mems, w->mems, *w);
}

}  // namespace specshim::cpuset

namespace specshim {

std::unique_ptr<Modifier> make_cpuset(config::Section& s, const ChainPlan& plan, KubeletSessions& sessions) {
  auto config = cpuset::read_config(s, plan.kubelet_keys);
  if (!config) return nullptr;
  return std::make_unique<cpuset::Cpuset>(std::move(*config),
                                          sessions.helper_session(config->kubelet_root, config->budget));
}

}  // namespace specshim
