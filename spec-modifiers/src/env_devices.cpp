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

#include "cdi/cdi_internal.h"
#include "env_devices_modifier.h"
#include "kubelet_modifier.h"
#include "specshim/cdi.h"
#include "specshim/device_plugin.h"
#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/log.h"
#include "specshim/modifiers.h"
#include "specshim/registry.h"
#include "specshim/text.h"

namespace specshim::env_devices {

// ---- parsing ----------------------------------------------------------------

namespace {

// items splits a value on ',' and trims each item as Go's
// strings.TrimSpace does over the ASCII spaces (a name has no other);
// empty items are dropped.
std::vector<std::string_view> items(std::string_view value) {
  return split_list(value, " \t\n\r\v\f");
}

std::string too_many() {
  return "more than " + std::to_string(kMaxNames) + " device names";
}

// npu_id reads a decimal id of at most 4 digits (Ascend's runtime allows
// ids up to 128).
std::optional<unsigned> npu_id(std::string_view s) {
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  unsigned n = 0;
  for (char c : s) n = n * 10 + unsigned(c - '0');
  return n;
}

// The chip types of Ascend's device names, as its runtime matches them
// (`^Ascend(910|310B|310P|310)-(\d+)$`); `npu-N` names an id on any chip.
constexpr std::string_view kAscendChips[] = {"910", "310B", "310P", "310"};

}  // namespace

DeviceList parse_device_list(std::string_view value) {
  auto list_items = items(value);
  DeviceList list;
  if (list_items.empty() || std::find(list_items.begin(), list_items.end(), "void") != list_items.end()) return list;
  for (auto item : list_items) {
    if (item == "all" || item == "none") {
      list.what = item == "all" ? DeviceList::What::all : DeviceList::What::none;
      return list;
    }
  }
  list.what = DeviceList::What::names;
  for (auto item : list_items) {
    if (std::find(list.names.begin(), list.names.end(), item) != list.names.end()) continue;
    if (list.names.size() == kMaxNames) throw Error(too_many());
    list.names.emplace_back(item);
  }
  return list;
}

DeviceList parse_ascend_list(std::string_view value) {
  auto list_items = items(value);
  DeviceList list;
  if (list_items.empty() || std::find(list_items.begin(), list_items.end(), "void") != list_items.end()) return list;
  std::vector<unsigned> ids;
  std::string_view chip;  // of the first Ascend<chip>-N name
  auto add = [&](unsigned id) {
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) return;
    if (ids.size() == kMaxNames) throw Error(too_many());
    ids.push_back(id);
  };
  for (auto item : list_items) {
    std::string bad = cdi::quote(item) + " is not an NPU id, a range of ids (0-3) or a name (Ascend910-0, npu-0)";
    bool chip_name = item.rfind("Ascend", 0) == 0;  // Ascend<chip>-N; else npu-N, or an id or range
    if (chip_name || item.rfind("npu-", 0) == 0) {
      std::string_view rest = item.substr(chip_name ? 6 : 3);
      auto dash = rest.find('-');
      if (dash == std::string_view::npos) throw Error(bad);
      std::string_view type = rest.substr(0, dash);
      auto id = npu_id(rest.substr(dash + 1));
      if (!id ||
          (chip_name && std::find(std::begin(kAscendChips), std::end(kAscendChips), type) == std::end(kAscendChips)))
        throw Error(bad);
      if (chip_name) {
        if (!chip.empty() && type != chip)
          throw Error(cdi::quote(item) + " names an Ascend" + std::string(type) + " after Ascend" + std::string(chip) +
                      ": one list names one chip type");
        chip = type;
      }
      add(*id);
      continue;
    }
    auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      auto id = npu_id(item);
      if (!id) throw Error(bad);
      add(*id);
      continue;
    }
    auto first = npu_id(item.substr(0, dash)), last = npu_id(item.substr(dash + 1));
    if (!first || !last) throw Error(bad);
    if (*first > *last) throw Error(cdi::quote(item) + " is a range whose first id is above its last");
    for (unsigned id = *first; id <= *last; ++id) add(id);
  }
  std::sort(ids.begin(), ids.end());
  list.what = DeviceList::What::names;
  for (unsigned id : ids) list.names.push_back(std::to_string(id));
  return list;
}

DeviceList parse_list(Grammar grammar, std::string_view value) {
  return grammar == Grammar::ascend ? parse_ascend_list(value) : parse_device_list(value);
}

std::optional<std::string> value_of(Grammar grammar, const Spec& spec, std::string_view env) {
  if (grammar != Grammar::ascend) return spec.env(env);
  return spec.env(env, [](std::string_view value) { return !items(value).empty(); });
}

// kVendors: the variables whose runtime specshim knows.
//   NVIDIA: its runtime appends NVIDIA_VISIBLE_DEVICES=void once the devices
//   are in (research: envvar.md), so a later runtime does nothing more.
//   Ascend: tools inside the container read ASCEND_VISIBLE_DEVICES as the
//   physical ids of the NPUs they see (vLLM-Ascend maps its device i to
//   int(ids[i]) and stops on an empty value): `void` would break them, so it
//   is kept. Its runtime appends nothing either. Its device plugin's
//   resources are named per chip: huawei.com/Ascend910, Ascend310P, and
//   vNPU templates such as Ascend910-16c.
const std::vector<Vendor> kVendors = {
    {"NVIDIA_VISIBLE_DEVICES", Grammar::nvidia, After::void_value, {}},
    {"ASCEND_VISIBLE_DEVICES", Grammar::ascend, After::keep, {"huawei.com/Ascend*"}},
};

const Vendor& vendor_of(std::string_view env) {
  static const Vendor other{"", Grammar::nvidia, After::void_value, {}};
  for (const auto& v : kVendors)
    if (v.env == env) return v;
  return other;
}

std::string qualify(std::string_view kind, std::string_view item, std::string* why) {
  std::string reason;
  if (item.find('=') != std::string_view::npos) {
    auto q = cdi::parse_qualified_name(item, &reason);
    if (q) return q->str();
  } else {
    reason = cdi::check_device_name(item);
    if (reason.empty()) return std::string(kind) + "=" + std::string(item);
  }
  if (why) *why = reason;
  return {};
}

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

bool sys_admin_in_bounding(const Spec& spec) {
  const Json* b = spec.find({"process", "capabilities", "bounding"});
  return b && b->is_array() && std::find(b->begin(), b->end(), Json("CAP_SYS_ADMIN")) != b->end();
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
  std::vector<std::string> changes;

  // Per decision.
  device_plugin::Identity id;
  std::string target;

  // own_grants are the container's checkpoint answers (the session reads
  // them once per create, for device-plugin too).
  std::vector<Grant> own_grants(const Entry& e, KubeletSession& session) {
    std::vector<Grant> grants;
    if (!id.cri || id.uid.empty() || id.container.empty()) return grants;
    try {
      for (const auto& entry : session.checkpoint(id.uid, id.container))
        if (entry.alloc) grants.push_back(device_plugin::granted(*entry.alloc, entry.resource, "the checkpoint"));
    } catch (const kubelet::Error& err) {
      throw Error("read the devices the kubelet granted " + target + " from " +
                  kubelet::checkpoint_file(e.kubelet_root).string() + ": " + err.what());
    }
    return grants;
  }

  // decide makes the request of one entry, or nullopt when there is none to make.
  std::optional<DeviceRequest> decide(const Entry& e, KubeletSession& session, const Spec& spec, const Context& ctx) {
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
    if (id.cri && e.privileged == Trust::honour && sys_admin_in_bounding(spec)) return req;
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
        log::debug(
            "env-devices: {}: ignored, the container was not created through CRI (outside-kubernetes = "
            "\"ignore\")",
            origin);
        return std::nullopt;
      }
      log::debug("env-devices: {}: ignored, {} {} no device of {}", origin,
                 id.cri ? "the kubelet granted" : "nothing was handed over from its pod to", target,
                 join(e.resources, ", "));
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
  if (ctx.kind == ContainerKind::sandbox) return;  // the pause container runs no workload
  if (!s.decided) {
    s.id = device_plugin::identify(spec);
    s.target = target_name(s.id, ctx.container_id);
    s.decided.emplace();
    for (std::size_t i = 0; i < s.entries.size(); ++i)
      if (auto req = s.decide(s.entries[i], *s.sessions[i], spec, ctx)) {
        log::debug("env-devices: {}: {}", req->origin,
                   req->bound ? "within what " + req->bound->what : std::string("trusted, no grant checked"));
        s.decided->emplace_back(&s.entries[i], std::move(*req));
      }
  }

  std::erase_if(ctx.device_requests, [](const DeviceRequest& r) { return r.from == "env-devices"; });
  for (const auto& [e, req] : *s.decided) {
    ctx.device_requests.push_back(req);
    if (e->after != After::void_value || spec.env(e->env) == "void") continue;
    spec.array_at({"process", "env"}).push_back(e->env + "=void");
    s.changes.push_back("appended " + e->env + "=void");
  }
}

}  // namespace specshim::env_devices

namespace specshim {

std::unique_ptr<Modifier> make_env_devices(config::Section& s, Shared& shared) {
  if (!s.lists("env-devices", "variable")) return nullptr;
  auto entries = env_devices::read_entries(s, shared.kubelet_keys);
  if (entries.empty()) return nullptr;
  for (const auto& e : entries)
    if (e.after == env_devices::After::void_value) shared.voided_env->insert(e.env);
  return std::make_unique<env_devices::EnvDevices>(std::move(entries), shared.kubelet);
}

}  // namespace specshim
