// SPDX-License-Identifier: Apache-2.0
// The env-devices modifier (see specshim/env_devices.h, docs/env-devices.md).
//
// A create goes: the request (the variable's last entry, or the /dev/null
// mounts of the volume-mounts strategy) → whom to trust (outside
// Kubernetes, privileged, a trusted namespace) → the grant (the container's
// checkpoint answers and the answers device-plugin merged) → a
// DeviceRequest for cdi, bounded by the grant unless the container is
// trusted → `<ENV>=void` appended. The request is decided once per create,
// on the spec as containerd wrote it: the `void` appended here must not
// read, in the next pass, as the container asking for nothing.
#include "specshim/env_devices.h"

#include <algorithm>

#include "env_devices_modifier.h"
#include "kubelet_modifier.h"
#include "specshim/device_plugin.h"
#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/log.h"
#include "specshim/modifiers.h"
#include "specshim/node/cdi.h"
#include "specshim/registry.h"
#include "specshim/text.h"

namespace specshim::env_devices {

// ---- config -----------------------------------------------------------------

namespace {

bool env_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

bool absolute(std::string_view p) {
  return !p.empty() && p[0] == '/' && !contains_control(p);
}

template <typename E>
E choice(config::Section& t, std::string_view key, std::initializer_list<std::pair<std::string_view, E>> options,
         E fallback) {
  auto v = t.string(key);
  if (!v) return fallback;
  std::string names;
  for (const auto& [name, value] : options) {
    if (*v == name) return value;
    names += (names.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  }
  t.fail(key, "want one of " + names);
}

}  // namespace

bool Entry::counts(std::string_view resource) const {
  return std::any_of(resources.begin(), resources.end(), [&](const std::string& r) {
    if (!r.empty() && r.back() == '*')
      return resource.substr(0, r.size() - 1) == std::string_view(r).substr(0, r.size() - 1);
    return resource == r;
  });
}

std::vector<Entry> read_entries(config::Section& root, const KubeletKeys& kubelet) {
  std::vector<Entry> entries;
  for (auto& t : root.tables("env-devices")) {
    Entry e;
    e.kubelet_root = kubelet.root;
    e.budget = kubelet.budget;
    auto env = t.string("env");
    if (!env || !env_name(*env)) t.fail("env", "needs the variable's name, such as \"NVIDIA_VISIBLE_DEVICES\"");
    e.env = *env;
    auto kind = t.string("kind");
    if (!kind) t.fail("kind", "needs the CDI kind bare names belong to, such as \"nvidia.com/gpu\"");
    auto [vendor, cls] = cdi::split_kind(*kind);
    std::string why = cdi::check_vendor(vendor);
    if (why.empty()) why = cdi::check_class(cls);
    if (kind->find('/') == std::string::npos) why = "want vendor/class";
    if (!why.empty()) t.fail("kind", "`" + *kind + "` is not a CDI kind: " + why);
    e.kind = *kind;
    if (auto dir = t.string("volume-mounts")) {
      if (!absolute(*dir) || fs::clean_path(*dir) == "/") t.fail("volume-mounts", "must be an absolute directory path");
      e.volume_mounts = fs::clean_path(*dir);
    }
    const Vendor& known = vendor_of(e.env);
    e.resources =
        t.strings("resources").value_or(known.resources.empty() ? std::vector<std::string>{e.kind} : known.resources);
    for (const auto& r : e.resources) {
      std::string_view name = r;
      if (!name.empty() && name.back() == '*') name.remove_suffix(1);
      if (name.empty() || contains_control(name) || name.find('/') == std::string_view::npos)
        t.fail("resources", "`" + r + "` is not a resource name (domain/name, or a prefix ending in *)");
    }
    e.on_excess = choice(t, "on-excess", {{"fail", OnExcess::fail}, {"clamp", OnExcess::clamp}}, OnExcess::fail);
    e.privileged = choice(t, "privileged", {{"honour", Trust::honour}, {"check", Trust::check}}, Trust::honour);
    e.trusted_namespaces = t.strings("trusted-namespaces").value_or(std::vector<std::string>{});
    for (const auto& ns : e.trusted_namespaces)
      if (!config::plain_name(ns)) t.fail("trusted-namespaces", "`" + ns + "` is not a namespace name");
    e.outside_kubernetes =
        choice(t, "outside-kubernetes", {{"honour", Outside::honour}, {"ignore", Outside::ignore}}, Outside::honour);
    e.grammar = choice(t, "grammar", {{"nvidia", Grammar::nvidia}, {"ascend", Grammar::ascend}}, known.grammar);
    e.after = choice(t, "after", {{"void", After::void_value}, {"keep", After::keep}}, known.after);
    e.ignored = choice(t, "ignored", {{"inert", Ignored::inert}, {"fail", Ignored::fail}}, Ignored::inert);
    e.scope = choice(t, "scope", {{"host", Scope::host}, {"visible", Scope::visible}}, Scope::host);
    if (auto root_dir = t.string("kubelet-root")) {
      if (!absolute(*root_dir)) t.fail("kubelet-root", "must be an absolute path");
      e.kubelet_root = *root_dir;
    }
    t.finish();
    for (const auto& other : entries)
      if (other.env == e.env) t.fail("env", "`" + e.env + "` has two [[env-devices]] entries");
    entries.push_back(std::move(e));
  }
  return entries;
}

// ---- grants -----------------------------------------------------------------

namespace {

// mounted_name turns a path below the volume-mounts dir into a device name,
// as NCT does: cdi/<vendor>/<class>/<name> and cdi/<vendor>/<class>=<name>
// are qualified names; imex/<channel> is no GPU ("").
std::string mounted_name(std::string_view rel) {
  if (rel.rfind("imex/", 0) == 0) return {};
  if (rel.rfind("cdi/", 0) == 0) {
    std::string q(rel.substr(4));
    if (q.find('=') == std::string::npos) {
      auto last = q.rfind('/');
      if (last != std::string::npos && q.find('/') != last) q[last] = '=';
    }
    return q;
  }
  return std::string(rel);
}

// below returns path relative to dir when it lies strictly below it.
std::optional<std::string> below(std::string_view dir, std::string_view path) {
  std::string p = fs::clean_path(path);
  if (p.size() <= dir.size() + 1 || p.compare(0, dir.size(), dir) != 0 || p[dir.size()] != '/') return std::nullopt;
  return p.substr(dir.size() + 1);
}

void add_name(std::vector<std::string>& names, std::string name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
}

void add_list(const Entry& e, std::string_view value, Granted& g) {
  DeviceList list;
  try {
    list = parse_list(e.grammar, value);
  } catch (const Error&) {
    return;  // a plugin answer too long to be a grant grants nothing
  }
  if (list.what == DeviceList::What::all) g.all = true;
  for (const auto& item : list.names) add_name(g.names, qualify(e.kind, item));
}

}  // namespace

Granted grant_of(const Entry& e, const Grant& grant) {
  Granted g;
  // The volume-mounts dir as the value says: the mounts list the devices.
  for (const auto& [key, value] : grant.envs)
    if (key == e.env && (e.volume_mounts.empty() || fs::clean_path(value) != e.volume_mounts)) add_list(e, value, g);
  if (!e.volume_mounts.empty())
    for (const auto& path : grant.mounts)
      if (auto rel = below(e.volume_mounts, path)) add_name(g.names, qualify(e.kind, mounted_name(*rel)));
  for (const auto& name : grant.cdi_devices)
    if (cdi::parse_qualified_name(name)) add_name(g.names, name);
  return g;
}

// ---- the modifier -----------------------------------------------------------

namespace {

// mounted lists the devices of the volume-mounts strategy: /dev/null bind
// mounts below dir, one per destination, in mount order.
std::vector<std::string> mounted(const Spec& spec, const std::string& dir) {
  std::vector<std::string> names, seen;
  const Json* mounts = spec.find({"mounts"});
  if (!mounts || !mounts->is_array()) return names;
  for (const auto& m : *mounts) {
    if (!m.is_object() || !m.contains("source") || !m.contains("destination") || !m["source"].is_string() ||
        !m["destination"].is_string() || fs::clean_path(m["source"].get_ref<const std::string&>()) != "/dev/null")
      continue;
    auto rel = below(dir, m["destination"].get_ref<const std::string&>());
    if (!rel || std::find(seen.begin(), seen.end(), *rel) != seen.end()) continue;
    seen.push_back(*rel);
    add_name(names, mounted_name(*rel));
  }
  return names;
}

// asks tells whether spec asks for devices through entry e: its variable
// lists something (a value specshim cannot read counts), or /dev/null
// mounts stand below its volume-mounts dir.
bool asks(const Entry& e, const Spec& spec) {
  if (!e.volume_mounts.empty() && !mounted(spec, e.volume_mounts).empty()) return true;
  auto value = value_of(e.grammar, spec, e.env);
  if (!value) return false;
  try {
    return parse_list(e.grammar, *value).what != DeviceList::What::nothing;
  } catch (const Error&) {
    return true;
  }
}

// drop_markers removes the volume-mounts strategy's /dev/null mounts below
// e's dir: a runtime after specshim that reads them (NVIDIA's, with
// accept-nvidia-visible-devices-as-volume-mounts) would find the request in
// them whatever the variable says.
void drop_markers(const Entry& e, Spec& spec, std::vector<std::string>& changes) {
  if (e.volume_mounts.empty() || mounted(spec, e.volume_mounts).empty()) return;
  Json& mounts = spec.array_at({"mounts"});
  std::size_t before = mounts.size();
  mounts.erase(std::remove_if(mounts.begin(), mounts.end(),
                              [&](const Json& m) {
                                return m.is_object() && m.contains("source") && m["source"].is_string() &&
                                       m.contains("destination") && m["destination"].is_string() &&
                                       fs::clean_path(m["source"].get_ref<const std::string&>()) == "/dev/null" &&
                                       below(e.volume_mounts, m["destination"].get_ref<const std::string&>());
                              }),
               mounts.end());
  changes.push_back("removed " + std::to_string(before - mounts.size()) + " /dev/null mount(s) below " +
                    e.volume_mounts);
}

// set_only makes value the variable's one entry (no entry when value is
// nullopt), keeping the place of its first entry.
void set_only(const std::string& env, const std::optional<std::string>& value, Spec& spec,
              std::vector<std::string>& changes) {
  const Json* list = spec.find({"process", "env"});
  if (list && !list->is_array()) list = nullptr;
  std::string prefix = env + "=";
  std::vector<std::size_t> at;
  if (list)
    for (std::size_t i = 0; i < list->size(); ++i)
      if ((*list)[i].is_string() && (*list)[i].get_ref<const std::string&>().rfind(prefix, 0) == 0) at.push_back(i);
  if (value ? at.size() == 1 && (*list)[at[0]].get_ref<const std::string&>() == prefix + *value : at.empty()) return;
  Json& envs = spec.array_at({"process", "env"});
  for (auto i = at.rbegin(); i != at.rend(); ++i)
    if (!value || *i != at.front()) envs.erase(envs.begin() + static_cast<std::ptrdiff_t>(*i));
  if (value && at.empty()) envs.push_back(prefix + *value);
  if (value && !at.empty()) envs[at.front()] = prefix + *value;
  changes.push_back(value ? "set " + prefix + *value : "removed " + env);
}

// make_inert leaves nothing a runtime after specshim would read as a
// request: NVIDIA's convention appends `<ENV>=void` (its runtime reads the
// last entry, and `void` anywhere means no device); a vendor whose value
// is kept (Ascend: tools read it as the ids they see, and stop on `void`)
// loses the variable, which its runtime reads as no request.
void make_inert(const Entry& e, Spec& spec, std::vector<std::string>& changes) {
  drop_markers(e, spec, changes);
  if (e.after == After::keep) {
    set_only(e.env, std::nullopt, spec, changes);
    return;
  }
  if (!spec.env(e.env) || spec.env(e.env) == "void") return;
  spec.array_at({"process", "env"}).push_back(e.env + "=void");
  changes.push_back("appended " + e.env + "=void");
}

// keep_within: a kept variable of a clamped request says what the grant
// injects, not what was asked beyond it, so a runtime after specshim reads
// the grant. A request within its grant keeps its own value.
void keep_within(const Entry& e, const DeviceRequest& req, Spec& spec, std::vector<std::string>& changes) {
  const auto& b = *req.bound;
  if (b.all ||
      (req.scope == DeviceRequest::Scope::names && std::all_of(req.names.begin(), req.names.end(), [&](auto& n) {
         return std::find(b.names.begin(), b.names.end(), n) != b.names.end();
       })))
    return;
  std::vector<std::string> bare;
  std::string prefix = e.kind + "=";
  for (const auto& n : b.names)
    if (n.rfind(prefix, 0) == 0) bare.push_back(n.substr(prefix.size()));
  set_only(e.env, bare.empty() ? std::nullopt : std::optional(join(bare, ",")), spec, changes);
}

// sibling tells a container created outside CRI that belongs to a pod: it
// names one, or asks for a pod's devices. Without a grant it gets nothing,
// never the outside-kubernetes policy's `honour`.
bool sibling(const Spec& spec) {
  return spec.annotation(device_plugin::kPod) || spec.annotation(device_plugin::kDevicesFrom) ||
         spec.annotation(device_plugin::kDevicesFromPod);
}

}  // namespace

struct EnvDevices::State {
  std::vector<Entry> entries;
  std::vector<std::shared_ptr<KubeletSession>> sessions;                       // per entry
  std::optional<std::vector<std::pair<const Entry*, DeviceRequest>>> decided;  // on the first apply
  std::vector<const Entry*> inert;                                             // entries whose request was ignored
  std::vector<std::string> changes;

  // Per decision.
  pod_identity::Identity id;
  std::string target;

  // own_grants are the container's checkpoint answers (the session reads
  // them once per create, for device-plugin too).
  std::vector<Grant> own_grants(const Entry& e, KubeletSession& session) {
    std::vector<Grant> grants;
    if (!id.cri || id.uid.empty() || id.container.empty()) return grants;
    try {
      for (const auto& entry : session.checkpoint(id.uid, id.container))
        if (entry.alloc) grants.push_back(specshim::granted(*entry.alloc, entry.resource, "the checkpoint"));
    } catch (const kubelet::Error& err) {
      throw Error("read the devices the kubelet granted " + target + " from " +
                  kubelet::checkpoint_file(e.kubelet_root).string() + ": " + err.what());
    }
    return grants;
  }

  // decide makes the request of one entry, or nullopt when there is none to
  // make; ignored then says why a request the spec makes is not honoured.
  std::optional<DeviceRequest> decide(const Entry& e, KubeletSession& session, const Spec& spec, const Context& ctx,
                                      std::string& ignored) {
    DeviceList list;
    std::string origin;
    std::vector<std::string> from_mounts;
    if (!e.volume_mounts.empty()) from_mounts = mounted(spec, e.volume_mounts);
    std::optional<std::string> value = value_of(e.grammar, spec, e.env);
    if (!from_mounts.empty()) {
      list = {DeviceList::What::names, from_mounts};
      origin = "/dev/null mounts below " + e.volume_mounts + " of " + target;
    } else {
      if (!value || (!e.volume_mounts.empty() && fs::clean_path(*value) == e.volume_mounts)) return std::nullopt;
      origin = "env " + e.env + "=" + shown(*value) + " of " + target;
      try {
        list = parse_list(e.grammar, *value);
      } catch (const Error& err) {
        throw Error(origin + ": " + err.what());
      }
    }
    if (list.what == DeviceList::What::nothing) return std::nullopt;

    DeviceRequest req{.from = "env-devices", .origin = origin, .kind = e.kind};
    req.scope = list.what == DeviceList::What::all    ? DeviceRequest::Scope::all
                : list.what == DeviceList::What::none ? DeviceRequest::Scope::none
                                                      : DeviceRequest::Scope::names;
    for (const auto& item : list.names) {
      std::string why;
      std::string name = qualify(e.kind, item, &why);
      if (name.empty()) throw Error(origin + ": " + cdi::quote(item) + " is not a CDI device name: " + why);
      if (std::find(req.names.begin(), req.names.end(), name) == req.names.end()) req.names.push_back(name);
    }

    req.visible = e.scope == Scope::visible;

    // Whom to trust with a request of their own. Only CRI's identity can
    // make a container trusted: a sibling's pod and capabilities are
    // written by whoever creates it.
    if (id.cri && e.privileged == Trust::honour && pod_identity::privileged(spec)) return req;
    if (id.cri &&
        std::find(e.trusted_namespaces.begin(), e.trusted_namespaces.end(), id.pod.ns) != e.trusted_namespaces.end())
      return req;

    // The grant: the container's own checkpoint answers, and what
    // device-plugin handed it in memory (a sibling's source's answers and
    // DRA claims). A container with a grant is judged by it, whatever it
    // is and whatever its annotations say.
    DeviceRequest::Bound bound{.clamp = e.on_excess == OnExcess::clamp};
    std::vector<std::string> by;
    auto take = [&](const Grant& g) {
      if (!g.claim && !e.counts(g.resource)) return;
      Granted granted = grant_of(e, g);
      if (granted.names.empty() && !granted.all) return;
      bound.all = bound.all || granted.all;
      for (auto& n : granted.names) add_name(bound.names, std::move(n));
      std::string one = g.claim ? g.source : "`" + g.resource + "` (" + g.source + ")";
      if (std::find(by.begin(), by.end(), one) == by.end()) by.push_back(one);
    };
    for (const auto& g : own_grants(e, session)) take(g);
    for (const auto& g : ctx.grants) take(g);
    bool granted = !bound.names.empty() || bound.all;
    if (!granted) {
      if (!id.cri && !sibling(spec)) {
        if (e.outside_kubernetes == Outside::honour) return req;
        ignored = origin + ": the container was not created through CRI (outside-kubernetes = \"ignore\")";
        return std::nullopt;
      }
      ignored = origin + ": " + (id.cri ? "the kubelet granted " : "nothing was handed over from its pod to ") +
                target + " no device of " + join(e.resources, ", ");
      return std::nullopt;
    }

    // Everyone else gets what was granted, at most.
    std::vector<std::string> names = bound.names;
    if (bound.all) names.insert(names.begin(), e.kind + "=all");
    bound.what = (id.cri ? "the kubelet granted " : "the kubelet granted its source ") + join_some(names, ", ") +
                 " by " + join(by, ", ");
    req.bound = std::move(bound);
    return req;
  }
};

EnvDevices::EnvDevices(std::vector<Entry> entries, KubeletSessions& sessions) : state_(std::make_unique<State>()) {
  for (const auto& e : entries) state_->sessions.push_back(sessions.helper_session(e.kubelet_root, e.budget));
  state_->entries = std::move(entries);
}

EnvDevices::EnvDevices(std::vector<Entry> entries, std::shared_ptr<KubeletSession> session)
    : state_(std::make_unique<State>()) {
  state_->sessions.assign(entries.size(), session);
  state_->entries = std::move(entries);
}

EnvDevices::~EnvDevices() = default;

void EnvDevices::add_facts(ChainFacts& facts) const {
  facts.env_devices = state_->entries;
}

std::string EnvDevices::last_change() const {
  return join(state_->changes, "; ");
}

void EnvDevices::apply(Spec& spec, Context& ctx) {
  State& s = *state_;
  s.changes.clear();
  if (!s.decided) {
    s.decided.emplace();
    // The pause container runs no workload: whatever its spec asks is
    // ignored, and made inert for the runtime after specshim.
    bool sandbox = ctx.kind == ContainerKind::sandbox;
    if (!sandbox) {
      s.id = pod_identity::identify(spec);
      s.target = target_name(s.id, ctx.container_id);
    }
    for (std::size_t i = 0; i < s.entries.size(); ++i) {
      const Entry& e = s.entries[i];
      std::string ignored;
      if (sandbox) {
        if (asks(e, spec)) s.inert.push_back(&e);
        continue;
      }
      if (auto req = s.decide(e, *s.sessions[i], spec, ctx, ignored)) {
        log::debug("env-devices: {}: {}", req->origin,
                   req->bound ? "within what " + req->bound->what : std::string("trusted, no grant checked"));
        s.decided->emplace_back(&e, std::move(*req));
      } else if (!ignored.empty()) {
        if (e.ignored == Ignored::fail) throw Error(ignored + " (ignored = \"fail\")");
        log::debug("env-devices: {}: ignored, made inert for the runtime after specshim", ignored);
        s.inert.push_back(&e);
      }
    }
  }

  std::erase_if(ctx.device_requests, [](const DeviceRequest& r) { return r.from == "env-devices"; });
  for (const auto& [e, req] : *s.decided) {
    ctx.device_requests.push_back(req);
    if (e->after == After::void_value)
      make_inert(*e, spec, s.changes);
    else if (req.bound && req.bound->clamp)
      keep_within(*e, req, spec, s.changes);
  }
  for (const Entry* e : s.inert) make_inert(*e, spec, s.changes);
}

}  // namespace specshim::env_devices

namespace specshim {

std::unique_ptr<Modifier> make_env_devices(config::Section& s, const ChainPlan& plan, KubeletSessions& sessions) {
  if (!s.lists("env-devices", "variable")) return nullptr;
  // The plan read and checked the entries (device-plugin needs their `after`
  // before any modifier is built): mark them read in this view too.
  s.only("env-devices");
  if (plan.env_devices.empty()) return nullptr;
  return std::make_unique<env_devices::EnvDevices>(plan.env_devices, sessions);
}

}  // namespace specshim
