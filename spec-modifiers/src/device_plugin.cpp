// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's resolution: which (resource, device IDs) a
// container asks for (providers), where their answer comes from (the
// kubelet's checkpoint, or Allocate where allowed), and what happens when
// that fails (on-error). One object lives for one create: what it resolved
// is memoised across the chain's passes, and one budget covers every call.
//
// Each pass reads the requests present in the spec when it starts; requests
// that the answers add (a spot plugin's annotation naming a real GPU) are
// read in the next pass, so a chain of references takes one pass per link.
#include "specshim/device_plugin.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <set>

#include "device_plugin_modifier.h"
#include "kubelet_modifier.h"
#include "specshim/error.h"
#include "specshim/log.h"
#include "specshim/modifiers.h"
#include "specshim/node/cdi.h"
#include "specshim/node/kubelet_session.h"

namespace specshim::device_plugin {
namespace {

// label names a request in messages: `nvidia.com/gpu` GPU-1,GPU-2. A
// direct request's ids are the tenant's: only the first few are named.
std::string label(const std::string& resource, const std::vector<std::string>& ids) {
  return "`" + resource + "` " + join_some(ids, ",");
}

std::string memo_key(const std::string& resource, std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  return resource + "\n" + join(ids, "\n");
}

// Request is one (resource, device IDs) a provider asks for.
struct Request {
  const Resource* resource = nullptr;
  Provider provider = Provider::kubelet;
  std::vector<std::string> ids = {};
  std::string holder = {};                               // container known to hold the IDs; empty: unknown
  std::optional<kubelet::AllocateResponse> stored = {};  // the answer, when the provider found it already
  std::vector<std::string> via = {};                     // labels of the requests whose answers named this one
  std::vector<std::string> via_resources = {};           // their resources
  std::vector<Request> parts = {};                       // pod-sync over several containers: one per container
};

// Resolution is what became of a request.
struct Resolution {
  const Resource* resource = nullptr;
  std::string label = {};
  std::optional<PreparedAnswer> answer = {};    // nullopt: skipped
  Grant grant = {};                             // what the answer granted (Context::grants)
  std::string source = {};                      // "the checkpoint" or "Allocate"
  std::string how = {};                         // provider and chain, for messages
  std::vector<std::string> via = {};            // the chain of labels, this request last
  std::vector<std::string> via_resources = {};  // their resources
};

}  // namespace

struct DevicePlugin::State {
  Config config;
  NodeLookup lookup;
  std::shared_ptr<KubeletSession> session;
  std::map<std::string, std::size_t> memo;                     // memo_key -> index in resolved
  std::deque<Resolution> resolved;                             // in resolution order; references stay valid
  std::vector<std::string> changes;                            // what the last apply merged
  std::optional<std::string> dra_asked;                        // the DRA sources resolved, "from\npod-sync"
  std::vector<std::pair<std::string, std::string>> dra_names;  // CDI name, where it came from
  std::set<std::string> voided_env;                            // ChainPlan::voided_env

  // Per apply.
  Context* ctx = nullptr;
  pod_identity::Identity id;
  std::string target;  // "container `main` of pod `ns/p`"

  kubelet::KubeletClient& kubelet() { return session->client(); }
  const kubelet::Budget& budget() { return session->budget(); }

  std::string plugin_dir() const { return kubelet::device_plugin_dir(config.kubelet_root).string(); }
  std::string pod_resources_socket() const { return kubelet::pod_resources_socket(config.kubelet_root).string(); }

  std::string socket_of(const Resource& r) const {
    if (r.socket.empty()) return "discovered in " + plugin_dir();
    return r.socket[0] == '/' ? r.socket : plugin_dir() + "/" + r.socket;
  }

  // settle applies the strictest on-error of the resources involved: fail
  // throws naming the container, the pod, what was resolved, the socket and
  // the cause; skip leaves a warning in the debug log.
  void settle(const std::vector<const Resource*>& involved, const std::string& what, const std::string& socket,
              const std::string& cause) {
    std::string msg = what + " for " + target + " (socket " + socket + "): " + cause;
    bool fail = std::any_of(involved.begin(), involved.end(), [](auto* r) { return r->on_error == OnError::fail; });
    if (fail) throw Error(msg);
    log::warn("device-plugin: skipped (on-error = skip): {}", msg);
  }

  std::vector<const Resource*> with(Provider p) const {
    std::vector<const Resource*> out;
    for (const auto& r : config.resources)
      if (r.has(p)) out.push_back(&r);
    return out;
  }

  // pod asks PodResources once per create (KubeletSession).
  const kubelet::PodResources& pod() {
    if (id.pod.empty()) throw kubelet::NotFound("no pod is known for this container");
    return session->pod_resources(id.pod.ns, id.pod.name);
  }

  // ---- protect-env ---------------------------------------------------------

  // protect keeps the env the container's own plugins set: the checkpoint's
  // answers for this pod UID and container (every resource; the session
  // reads them once per create). A container outside CRI, or without a pod
  // UID, has none.
  void protect(Spec& spec) {
    if (config.protect_env == ProtectEnv::off || !id.cri || id.uid.empty() || id.container.empty()) return;
    std::vector<Grant> answers;
    try {
      for (const auto& e : session->checkpoint(id.uid, id.container))
        if (e.alloc) answers.push_back(granted(*e.alloc, e.resource, "the checkpoint"));
    } catch (const kubelet::Error& e) {
      throw Error("read the env the kubelet's device plugins set for " + target + " (protect-env, " +
                  kubelet::checkpoint_file(config.kubelet_root).string() + "): " + e.what());
    }
    if (protect_env(spec, answers, config.protect_env, voided_env, target))
      changes.push_back("dropped env entries that overrode plugin env (protect-env = \"drop\")");
  }

  // ---- providers ----------------------------------------------------------

  // kubelet: the container's own allocation. The checkpoint has it without
  // any RPC (the usual path); PodResources is asked only when the pod UID is
  // unknown or the checkpoint file is missing.
  void kubelet_requests(std::vector<Request>& out) {
    auto involved = with(Provider::kubelet);
    if (involved.empty() || !id.cri || id.container.empty()) return;
    std::string source = kubelet::checkpoint_file(config.kubelet_root).string();
    try {
      if (!id.uid.empty()) {
        const auto& entries = session->checkpoint(id.uid, id.container);
        std::error_code ec;
        if (!entries.empty() || std::filesystem::exists(source, ec)) {
          for (const auto& r : config.resources)
            for (auto& e : entries)
              if (e.resource == r.name && r.has(Provider::kubelet) && !e.device_ids.empty())
                out.push_back({.resource = &r,
                               .provider = Provider::kubelet,
                               .ids = e.device_ids,
                               .holder = id.container,
                               .stored = e.alloc});
          return;
        }
      }
      if (id.pod.empty()) return;
      source = pod_resources_socket();
      const auto& containers = pod().containers;
      if (auto c = containers.find(id.container); c != containers.end())
        add_held(out, Provider::kubelet, c->first, c->second);
    } catch (const kubelet::Error& e) {
      settle(involved, "read the devices the kubelet assigned", source, e.what());
    }
  }

  void add_held(std::vector<Request>& out, Provider p, const std::string& holder,
                const kubelet::ResourceDevices& held) {
    for (const auto& r : config.resources)
      if (auto it = held.find(r.name); it != held.end() && r.has(p) && !it->second.empty())
        out.push_back({.resource = &r, .provider = p, .ids = it->second, .holder = holder});
  }

  // container-sync: the devices of another container of the pod.
  void container_sync_requests(const Spec& spec, std::vector<Request>& out) {
    auto involved = with(Provider::container_sync);
    if (involved.empty() || !spec.annotation(kDevicesFrom)) return;
    std::string from = *spec.annotation(kDevicesFrom);
    std::string what = std::string("read the devices of container `") + from + "` (annotation " + kDevicesFrom + ")";
    if (from.empty() || from.size() > 253 || contains_control(from) || from.find('/') != std::string::npos)
      return settle(involved, what, pod_resources_socket(), "not a container name");
    try {
      if (id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
      const auto& containers = pod().containers;
      auto c = containers.find(from);
      if (c == containers.end())
        throw kubelet::NotFound("pod `" + id.pod.str() + "` has no container `" + from + "` with devices");
      add_held(out, Provider::container_sync, from, c->second);
    } catch (const kubelet::Error& e) {
      settle(involved, what, pod_resources_socket(), e.what());
    }
  }

  // pod-sync: every device of every container of the pod. A resource held by
  // several containers is asked for as one set (one coherent answer); when
  // no stored answer covers the set and Allocate is not allowed, each
  // container's own answer is merged instead (parts).
  void pod_sync_requests(const Spec& spec, std::vector<Request>& out) {
    auto involved = with(Provider::pod_sync);
    auto value = spec.annotation(kDevicesFromPod);
    if (involved.empty() || !value || *value == "false") return;
    std::string what =
        std::string("read the devices of pod `") + id.pod.str() + "` (annotation " + kDevicesFromPod + ")";
    if (*value != "true") return settle(involved, what, pod_resources_socket(), "want \"true\" or \"false\"");
    try {
      if (id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
      const auto& containers = pod().containers;
      for (const auto& r : config.resources) {
        if (!r.has(Provider::pod_sync)) continue;
        Request all{.resource = &r, .provider = Provider::pod_sync};
        for (const auto& [name, held] : containers) {
          auto it = held.find(r.name);
          if (it == held.end() || it->second.empty()) continue;
          for (const auto& d : it->second)
            if (std::find(all.ids.begin(), all.ids.end(), d) == all.ids.end()) all.ids.push_back(d);
          all.parts.push_back({.resource = &r, .provider = Provider::pod_sync, .ids = it->second, .holder = name});
        }
        if (all.parts.size() == 1) out.push_back(std::move(all.parts.front()));
        if (all.parts.size() > 1) out.push_back(std::move(all));
      }
    } catch (const kubelet::Error& e) {
      settle(involved, what, pod_resources_socket(), e.what());
    }
  }

  // vouching finds the resolved answer whose annotation key=value is exactly
  // this request: such a request comes from a plugin, not from the tenant.
  const Resolution* vouching(const std::string& key, const std::string& value) const {
    for (const auto& r : resolved)
      if (r.answer)
        for (const auto& [k, v] : r.answer->annotations)
          if (k == key && v == value) return &r;
    return nullptr;
  }

  // direct: annotation <resource name> = JSON list of IDs. Requests a plugin
  // answer made are trusted (and checked for cycles); others must name
  // devices the pod holds unless direct-requires-pod-devices = false.
  std::optional<Request> direct_request(const Resource& r, const std::string& value) {
    std::string what = "resolve annotation `" + r.name + "`";
    Request req{.resource = &r, .provider = Provider::direct};
    try {
      req.ids = parse_device_ids(r.name, value);
    } catch (const Error& e) {
      settle({&r}, what, socket_of(r), e.what());
      return std::nullopt;
    }
    if (req.ids.empty()) return std::nullopt;
    if (const Resolution* by = vouching(r.name, value)) {
      req.via = by->via;
      req.via_resources = by->via_resources;
      if (std::find(req.via_resources.begin(), req.via_resources.end(), r.name) != req.via_resources.end()) {
        settle({&r}, "resolve " + label(r.name, req.ids), socket_of(r),
               "reference cycle, the chain cannot converge: " + join_some(req.via, " → ") + " → " +
                   label(r.name, req.ids));
        return std::nullopt;
      }
      return req;
    }
    if (!config.direct_requires_pod_devices) return req;
    try {
      if (id.pod.empty()) throw kubelet::NotFound("no pod is known to check the devices against");
      std::set<std::string> held;
      for (const auto& [name, devices] : pod().containers)
        if (auto it = devices.find(r.name); it != devices.end()) {
          held.insert(it->second.begin(), it->second.end());
          if (std::all_of(req.ids.begin(), req.ids.end(), [&](auto& d) {
                return std::find(it->second.begin(), it->second.end(), d) != it->second.end();
              }))
            req.holder = name;
        }
      std::vector<std::string> foreign;
      for (const auto& d : req.ids)
        if (!held.count(d)) foreign.push_back(d);
      if (!foreign.empty())
        throw kubelet::NotFound("names devices " + join_some(foreign, ",") + " that pod `" + id.pod.str() +
                                "` does not hold (direct-requires-pod-devices = true)");
    } catch (const kubelet::Error& e) {
      settle({&r}, what, pod_resources_socket(), e.what());
      return std::nullopt;
    }
    return req;
  }

  // ---- DRA claims ---------------------------------------------------------

  // dra_fail throws a DRA hand-off failure. There is no on-error here (no
  // resource entry carries a claim): a sibling that asked for its source's
  // devices never runs without them.
  [[noreturn]] void dra_fail(const std::string& what, const std::string& cause) const {
    throw Error(what + " for " + target + " (socket " + pod_resources_socket() + "): " + cause);
  }

  // dra_claims hands the CDI names of the source containers' DRA claims to
  // cdi: the container specshim.io/devices-from names, every container the
  // kubelet lists for specshim.io/devices-from-pod, drivers filtered. Never
  // a CRI container's own claims: containerd injected those from CRI. The
  // names are gathered once per create (one PodResources answer) and merged
  // again in every pass, which changes nothing after the first.
  void dra_claims(Spec& spec) {
    if (!config.dra.enabled) return;
    auto from = spec.annotation(kDevicesFrom);
    auto pod_sync = spec.annotation(kDevicesFromPod);
    if (pod_sync && *pod_sync != "true" && *pod_sync != "false")
      dra_fail(std::string("read the DRA claims of pod `") + id.pod.str() + "` (annotation " + kDevicesFromPod + ")",
               "want \"true\" or \"false\"");
    bool all = pod_sync && *pod_sync == "true";
    if (!from && !all) return;
    std::string asked = from.value_or("") + "\n" + (all ? "pod-sync" : "");
    if (dra_asked != asked) {
      dra_names = gather_claims(from, all);
      dra_asked = asked;
    }
    std::vector<std::string> names;
    for (const auto& [name, origin] : dra_names) {
      names.push_back(name);
      ctx->cdi_origins.emplace(name, origin);
      // A claim handed over is the sibling's grant, as a merged answer is.
      Grant claim{.resource = "", .source = origin, .cdi_devices = {name}, .claim = true};
      if (std::find(ctx->grants.begin(), ctx->grants.end(), claim) == ctx->grants.end())
        ctx->grants.push_back(std::move(claim));
    }
    if (merge_list_annotation(spec, kCdiDevices, names)) {
      changes.push_back("handed over CDI devices " + join(names, ",") + " of DRA claims");
      for (const auto& [name, origin] : dra_names)
        log::debug("device-plugin: CDI device {} for {}: from {}", name, target, origin);
    }
  }

  // gather_claims lists (CDI name, where it came from) for the sources, in
  // container order, each name once; a malformed name fails here, before
  // the spec is touched.
  std::vector<std::pair<std::string, std::string>> gather_claims(const std::optional<std::string>& from, bool all) {
    std::string what = from ? "read the DRA claims of container `" + *from + "` (annotation " + kDevicesFrom + ")"
                            : "read the DRA claims of pod `" + id.pod.str() + "` (annotation " + kDevicesFromPod + ")";
    if (from &&
        (from->empty() || from->size() > 253 || contains_control(*from) || from->find('/') != std::string::npos))
      dra_fail(what, "not a container name");
    const kubelet::PodResources* pr = nullptr;
    try {
      if (id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
      pr = &pod();
      if (from && !pr->containers.count(*from))
        throw kubelet::NotFound("pod `" + id.pod.str() + "` has no container `" + *from + "`");
    } catch (const kubelet::Error& e) {
      dra_fail(what, e.what());
    }
    std::vector<std::string> sources;
    if (from) sources.push_back(*from);
    if (all)
      for (const auto& [name, devices] : pr->containers)
        if (std::find(sources.begin(), sources.end(), name) == sources.end()) sources.push_back(name);

    // A CRI container's own claims (by namespace/name) are containerd's business.
    std::set<std::string> own;
    if (id.cri && !id.container.empty())
      for (const auto& claim : pr->assignment(id.container).dynamic_resources)
        own.insert(claim.claim_namespace + "/" + claim.claim_name);

    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& source : sources) {
      for (const auto& claim : pr->assignment(source).dynamic_resources) {
        std::string ref = claim.claim_namespace + "/" + claim.claim_name;
        if (own.count(ref)) {
          log::debug("device-plugin: DRA claim `{}` of container `{}`: {} holds it already", ref, source, target);
          continue;
        }
        for (const auto& res : claim.claim_resources) {
          std::string origin = "DRA claim `" + ref + "` of container `" + source + "`, driver `" + res.driver_name +
                               "`, device `" + res.pool_name + "/" + res.device_name + "`";
          if (!config.dra.follows(res.driver_name)) {
            log::debug("device-plugin: {}: driver not in [device-plugin.dra] drivers, left out", origin);
            continue;
          }
          if (res.cdi_devices.empty()) log::debug("device-plugin: {}: the driver named no CDI device", origin);
          for (const auto& name : res.cdi_devices) {
            std::string why;
            if (name.find(',') != std::string::npos || !cdi::parse_qualified_name(name, &why))
              dra_fail(what, origin + ": invalid CDI device name `" + name + "`" + (why.empty() ? "" : ": " + why));
            bool seen = std::any_of(out.begin(), out.end(), [&](auto& o) { return o.first == name; });
            if (!seen) out.emplace_back(name, origin);
          }
        }
      }
    }
    if (out.empty()) log::debug("device-plugin: {}: no DRA claim to hand over for {}", what, target);
    return out;
  }

  // ---- resolution ---------------------------------------------------------

  // stored_answer finds the kubelet's answer for exactly these devices:
  // this pod's entry first, then the holder's, then any (if they agree).
  std::optional<kubelet::AllocateResponse> stored_answer(const Request& req) {
    if (req.stored) return req.stored;
    auto entries = kubelet().checkpoint_for_devices(req.resource->name, req.ids);
    std::erase_if(entries, [](auto& e) { return !e.alloc; });
    auto narrow = [&](auto keep) {
      std::vector<kubelet::CheckpointEntry> kept;
      std::copy_if(entries.begin(), entries.end(), std::back_inserter(kept), keep);
      if (!kept.empty()) entries = std::move(kept);
    };
    if (!id.uid.empty()) narrow([&](auto& e) { return e.pod_uid == id.uid; });
    if (!req.holder.empty()) narrow([&](auto& e) { return e.container == req.holder; });
    if (entries.empty()) return std::nullopt;
    bool agree = std::all_of(entries.begin(), entries.end(), [&](auto& e) { return e.alloc == entries.front().alloc; });
    if (!agree) {
      log::debug("device-plugin: {} entries of the checkpoint differ for {}; not using them", entries.size(),
                 label(req.resource->name, req.ids));
      return std::nullopt;
    }
    return entries.front().alloc;
  }

  std::string how(const Request& req) const {
    std::string s(to_string(req.provider));
    if (!req.via.empty()) s += ", named by the answer for " + req.via.back();
    return s;
  }

  // resolve returns the memoised resolution of req, finding its answer
  // first when needed; nullptr when the parts were resolved instead.
  const Resolution* resolve(const Request& req, Spec& spec) {
    std::string key = memo_key(req.resource->name, req.ids);
    if (auto it = memo.find(key); it != memo.end()) return &resolved[it->second];
    const Resource& r = *req.resource;
    Resolution res{.resource = &r,
                   .label = label(r.name, req.ids),
                   .source = "the checkpoint",
                   .how = how(req),
                   .via = req.via,
                   .via_resources = req.via_resources};
    res.via.push_back(res.label);
    res.via_resources.push_back(r.name);
    std::string socket = socket_of(r);
    try {
      auto answer = stored_answer(req);
      bool may_allocate = r.allocate && ctx->allow_allocate;
      if (!answer && !req.parts.empty() && !may_allocate) {
        for (const auto& part : req.parts) merge(spec, part);
        return nullptr;
      }
      if (!answer && !r.allocate)
        throw kubelet::NotFound("the kubelet checkpoint has no answer for these devices, and allocate = false");
      if (!answer && !may_allocate) {
        log::debug("device-plugin: dry-run: would call Allocate for {} (pass --allow-allocate)", res.label);
        return remember(key, std::move(res));
      }
      if (!answer) {
        socket = kubelet().plugin_for_resource(r.name, r.socket, req.ids, budget()).string();
        answer = kubelet().allocate(socket, r.name, req.ids, budget());
        res.source = "Allocate";
      }
      res.answer = prepare_answer(*answer, lookup);
      res.grant = granted(*answer, r.name, res.source);
    } catch (const kubelet::Error& e) {
      settle({&r}, "resolve " + res.label, socket, e.what());
    } catch (const Error& e) {
      settle({&r}, "resolve " + res.label, socket, std::string("answer: ") + e.what());
    }
    log::debug("device-plugin: {} for {}: {} ({})", res.label, target,
               res.answer ? "answer from " + res.source : std::string("skipped"), res.how);
    if (res.answer && !res.resource->require_env.empty()) require_env(res);
    return remember(key, std::move(res));
  }

  // require_env fails the create when the answer lacks a key its resource's
  // require-env lists, on-error notwithstanding: skipping the answer would
  // not take back the devices containerd already gave a CRI container.
  void require_env(const Resolution& res) const {
    const Resource& r = *res.resource;
    auto missing = missing_env(r.require_env, res.answer->envs);
    if (missing.empty()) return;
    std::vector<std::string> quoted, keys;
    for (const auto& glob : missing) quoted.push_back("`" + glob + "`");
    for (const auto& [k, v] : res.answer->envs) keys.push_back(k);
    throw Error(res.label + " for " + target + ": the answer from " + res.source + " (" + res.how + ") has no env " +
                join(quoted, ", ") + " (require-env of `" + r.name + "`; the answer sets " +
                (keys.empty() ? std::string("no env") : join_some(keys, ", ")) +
                "): another device plugin registered `" + r.name +
                "` may have answered instead of the one that sets it; `specshim doctor` names the plugins "
                "serving each resource");
  }

  const Resolution* remember(const std::string& key, Resolution res) {
    memo[key] = resolved.size();
    resolved.push_back(std::move(res));
    return &resolved.back();
  }

  void merge(Spec& spec, const Request& req) {
    const Resolution* res = resolve(req, spec);
    if (!res || !res->answer) return;
    if (std::find(ctx->grants.begin(), ctx->grants.end(), res->grant) == ctx->grants.end())
      ctx->grants.push_back(res->grant);
    std::vector<std::string> conflicts;
    if (merge_answer(spec, *res->answer, res->resource->name, conflicts))
      changes.push_back("merged " + res->label + " from " + res->source + " (" + res->how + ")");
    for (const auto& c : conflicts) log::debug("device-plugin: {} for {}: {}", res->label, target, c);
  }
};

DevicePlugin::DevicePlugin(Config config, ClientFactory make_client, NodeLookup lookup)
    : DevicePlugin(config, std::make_shared<KubeletSession>(std::move(make_client), config.budget), std::move(lookup)) {
}

DevicePlugin::DevicePlugin(Config config, std::shared_ptr<KubeletSession> session, NodeLookup lookup,
                           std::set<std::string> voided_env)
    : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->session = std::move(session);
  state_->lookup = std::move(lookup);
  state_->voided_env = std::move(voided_env);
}

DevicePlugin::~DevicePlugin() = default;

bool DevicePlugin::client_made() const {
  return state_->session->client_made();
}

std::string DevicePlugin::last_change() const {
  return join(state_->changes, "; ");
}

void DevicePlugin::apply(Spec& spec, Context& ctx) {
  State& s = *state_;
  s.changes.clear();
  if (ctx.kind == ContainerKind::sandbox) return;  // the pause container runs no workload
  s.ctx = &ctx;
  s.id = pod_identity::identify(spec);
  s.target = target_name(s.id, ctx.container_id);

  // Direct requests are read from the annotations as this pass found them.
  std::vector<std::pair<const Resource*, std::string>> direct;
  for (const auto& r : s.config.resources) {
    if (!r.has(Provider::direct) || !spec.find({"annotations", r.name})) continue;
    if (auto v = spec.annotation(r.name))
      direct.emplace_back(&r, *v);
    else
      s.settle({&r}, "resolve annotation `" + r.name + "`", s.socket_of(r), "must be a string");
  }

  s.protect(spec);
  std::vector<Request> requests;
  s.kubelet_requests(requests);
  s.container_sync_requests(spec, requests);
  s.pod_sync_requests(spec, requests);
  for (const auto& req : requests) s.merge(spec, req);
  s.dra_claims(spec);
  for (const auto& [r, value] : direct)
    if (auto req = s.direct_request(*r, value)) s.merge(spec, *req);
}

}  // namespace specshim::device_plugin

namespace specshim {

std::unique_ptr<Modifier> make_device_plugin(config::Section& s, const ChainPlan& plan, KubeletSessions& sessions) {
  auto config = device_plugin::read_config(s, plan.kubelet_keys);
  if (!config) return nullptr;
  return std::make_unique<device_plugin::DevicePlugin>(std::move(*config),
                                                       sessions.helper_session(config->kubelet_root, config->budget),
                                                       device_plugin::stat_host_node, plan.voided_env);
}

}  // namespace specshim
