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
#include "specshim/cpuset.h"

#include <algorithm>
#include <exception>
#include <iterator>

#include "cpuset_modifier.h"
#include "kubelet_modifier.h"
#include "specshim/error.h"
#include "specshim/log.h"
#include "specshim/modifiers.h"
#include "specshim/node/kubelet_session.h"

namespace specshim::cpuset {
namespace {

using device_plugin::kDevicesFrom;
using device_plugin::kDevicesFromPod;
using device_plugin::kPod;
using pod_identity::Identity;

// quoted shows a list's text in a message when it is short and printable.
std::string quoted(std::string_view text) {
  if (text.size() > 64 || contains_control(text)) return "";
  return " `" + std::string(text) + "`";
}

// character names one byte of tenant text for a message.
std::string character(char c) {
  static const char* hex = "0123456789abcdef";
  auto u = static_cast<unsigned char>(c);
  if (u > 0x20 && u < 0x7f) return "`" + std::string(1, c) + "`";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

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

}  // namespace

IdSet parse_list(std::string_view field, std::string_view text, std::uint32_t limit) {
  std::string what(field);
  if (text.size() > kMaxListBytes) throw Error(what + ": longer than " + std::to_string(kMaxListBytes) + " bytes");
  auto fail = [&](const std::string& why) -> Error {
    return Error(what + quoted(text) + ": " + why + " (want ids and ranges such as 0,2-5)");
  };
  std::size_t i = 0;
  auto number = [&]() -> std::uint32_t {
    std::size_t start = i;
    std::uint64_t v = 0;
    while (i < text.size() && digit(text[i])) {
      v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
      if (v >= limit) {
        std::size_t end = i;
        while (end < text.size() && digit(text[end])) ++end;
        std::string_view n = text.substr(start, std::min<std::size_t>(end - start, 24));
        throw fail(std::string(n) + (end - start > 24 ? "..." : "") + " is above the largest id " +
                   std::to_string(limit - 1));
      }
      ++i;
    }
    if (i == start)
      throw fail(i == text.size() ? "ends where an id is expected"
                                  : "unexpected " + character(text[i]) + " at byte " + std::to_string(i));
    return static_cast<std::uint32_t>(v);
  };

  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
  while (i < text.size()) {
    std::uint32_t first = number();
    std::uint32_t last = first;
    if (i < text.size() && text[i] == '-') {
      ++i;
      last = number();
      if (last < first) throw fail("range " + std::to_string(first) + "-" + std::to_string(last) + " runs backwards");
    }
    ranges.emplace_back(first, last);
    if (i == text.size()) break;
    if (text[i] != ',') throw fail("unexpected " + character(text[i]) + " at byte " + std::to_string(i));
    if (++i == text.size()) throw fail("ends where an id is expected");
  }
  // Merged as ranges first, so a long list of wide ranges costs no more than its length.
  std::sort(ranges.begin(), ranges.end());
  IdSet out;
  for (auto [first, last] : ranges)
    for (std::uint64_t id = out.empty() ? first : std::max<std::uint64_t>(first, out.back() + 1ULL); id <= last; ++id)
      out.push_back(static_cast<std::uint32_t>(id));
  return out;
}

std::string format_list(const IdSet& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

IdSet intersect(const IdSet& a, const IdSet& b) {
  IdSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

IdSet unite(const IdSet& a, const IdSet& b) {
  IdSet out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

Config read_table(config::Section& s, const KubeletKeys& kubelet) {
  auto c = read_enabled_kubelet_keys<Config>(s, kubelet);
  std::string on_error = s.string("on-error").value_or("fail");
  if (on_error != "fail" && on_error != "skip") s.fail("on-error", "must be \"fail\" or \"skip\"");
  c.on_error = on_error == "fail" ? OnError::fail : OnError::skip;
  return c;
}

std::optional<Config> read_config(config::Section& s, const KubeletKeys& kubelet) {
  Config c = read_table(s, kubelet);
  if (!c.enabled) return std::nullopt;
  return c;
}

struct Cpuset::State {
  Config config;
  std::shared_ptr<KubeletSession> session;
  std::vector<std::string> changes;  // what the last apply set

  // Per apply.
  Identity id;
  std::string target;  // "container `ctr-1` of pod `ns/p`"

  std::string socket() const { return kubelet::pod_resources_socket(config.kubelet_root).string(); }

  // pod asks PodResources once per create (KubeletSession).
  const kubelet::PodResources& pod() { return session->pod_resources(id.pod.ns, id.pod.name); }

  // settle applies on-error to a failure to learn the source's CPUs: fail
  // throws, skip leaves a warning in the debug log.
  void settle(const std::string& what, const std::string& cause) const {
    std::string msg = what + " for " + target + " (socket " + socket() + "): " + cause;
    if (config.on_error == OnError::fail) throw Error(msg);
    log::warn("cpuset: skipped (on-error = skip): {}", msg);
  }

  // wanted reads the request annotations and returns what the sources hold;
  // nullopt when nothing is asked for or the failure was skipped.
  std::optional<Wanted> wanted(const std::optional<std::string>& from, bool pod_sync) {
    Wanted w;
    std::string what = pod_sync
                           ? "read the CPUs of pod `" + id.pod.str() + "` (annotation " + kDevicesFromPod + ")"
                           : "read the CPUs of container `" + from.value_or("") + "` (annotation " + kDevicesFrom + ")";
    if (from &&
        (from->empty() || from->size() > 253 || contains_control(*from) || from->find('/') != std::string::npos)) {
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
  void narrow(Spec& spec, const ListField& f, const std::optional<IdSet>& have, const IdSet& want, const Wanted& w) {
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

Cpuset::Cpuset(Config config, device_plugin::ClientFactory make_client)
    : Cpuset(config, std::make_shared<KubeletSession>(std::move(make_client), config.budget)) {}

Cpuset::Cpuset(Config config, std::shared_ptr<KubeletSession> session) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->session = std::move(session);
}

Cpuset::~Cpuset() = default;

bool Cpuset::client_made() const {
  return state_->session->client_made();
}

std::string Cpuset::last_change() const {
  return join(state_->changes, "; ");
}

void Cpuset::apply(Spec& spec, Context& ctx) {
  State& s = *state_;
  s.changes.clear();
  if (ctx.kind == ContainerKind::sandbox) return;  // the pause container runs no workload
  auto from = spec.annotation(kDevicesFrom);
  auto pod_value = spec.annotation(kDevicesFromPod);
  bool pod_sync = pod_value && *pod_value != "false";
  if (!from && !pod_sync) return;

  s.id = pod_identity::identify(spec);
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
