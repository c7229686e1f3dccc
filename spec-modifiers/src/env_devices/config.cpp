// SPDX-License-Identifier: Apache-2.0
// The [[env-devices]] entries: read strictly, each variable once.
#include <algorithm>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/node/cdi.h"

namespace specshim::env_devices {

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

}  // namespace specshim::env_devices
