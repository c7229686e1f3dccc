// SPDX-License-Identifier: Apache-2.0
// [device-plugin] and its [[device-plugin.resources]], read strictly.
#include <fnmatch.h>

#include <algorithm>

#include "kubelet_modifier.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/kubelet_session.h"

namespace specshim::device_plugin {
namespace {

constexpr std::pair<Provider, std::string_view> kProviders[] = {
    {Provider::kubelet, "kubelet"},
    {Provider::container_sync, "container-sync"},
    {Provider::pod_sync, "pod-sync"},
    {Provider::direct, "direct"},
};

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

// valid_resource_name accepts an extended resource name, <domain>/<name>.
// The names end up in comma-separated annotations and are annotation keys
// of direct requests, so nothing outside this alphabet is allowed.
bool valid_resource_name(std::string_view n) {
  auto slash = n.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == n.size() || n.size() > 253) return false;
  if (n.find('/', slash + 1) != std::string_view::npos) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return c == '/' || name_char(c); });
}

// read_require_env reads require-env: env keys or fnmatch(3) globs, each
// once; a key never holds `=` or a control character.
std::vector<std::string> read_require_env(config::Section& t) {
  std::vector<std::string> out;
  auto globs = t.strings("require-env").value_or(std::vector<std::string>{});
  for (std::size_t i = 0; i < globs.size(); ++i) {
    const std::string& glob = globs[i];
    if (glob.empty() || contains_control(glob))
      t.fail("require-env",
             "entry " + std::to_string(i) + " must be a non-empty env key or glob without control characters");
    if (glob.find('=') != std::string::npos) t.fail("require-env", "`" + glob + "` has a `=`, which no env key has");
    if (std::find(out.begin(), out.end(), glob) != out.end()) t.fail("require-env", "`" + glob + "` listed twice");
    out.push_back(glob);
  }
  return out;
}

Resource read_resource(config::Section& t, const Config& seen) {
  Resource r;
  auto name = t.string("name");
  if (!name) t.fail("", "missing `name` (the extended resource name, e.g. \"nvidia.com/gpu\")");
  if (!valid_resource_name(*name)) t.fail("name", "`" + *name + "` is not an extended resource name (domain/name)");
  if (name->rfind("specshim.io/", 0) == 0) t.fail("name", "the specshim.io/ domain is specshim's own");
  if (seen.find(*name)) t.fail("name", "resource `" + *name + "` is listed twice");
  r.name = *name;
  if (auto socket = t.string("socket")) {
    if (socket->empty() || contains_control(*socket)) t.fail("socket", "must be a non-empty path");
    r.socket = *socket;
  }
  r.allocate = t.boolean("allocate").value_or(false);
  std::string on_error = t.string("on-error").value_or("fail");
  if (on_error != "fail" && on_error != "skip") t.fail("on-error", "must be \"fail\" or \"skip\"");
  r.on_error = on_error == "fail" ? OnError::fail : OnError::skip;
  auto providers = t.strings("providers");
  if (!providers) t.fail("", "missing `providers` (any of \"kubelet\", \"container-sync\", \"pod-sync\", \"direct\")");
  for (const auto& p : *providers) {
    auto known = std::find_if(std::begin(kProviders), std::end(kProviders), [&](auto& k) { return k.second == p; });
    if (known == std::end(kProviders))
      t.fail("providers", "unknown provider `" + p + "` (known: kubelet, container-sync, pod-sync, direct)");
    if (r.has(known->first)) t.fail("providers", "provider `" + p + "` listed twice");
    r.providers.push_back(known->first);
  }
  if (t.has("require-env")) r.require_env = read_require_env(t);
  t.finish();
  return r;
}

// valid_driver_name accepts a DRA driver name as Kubernetes validates it: a
// DNS subdomain of at most 63 characters (lowercase, digits, '-', '.').
bool valid_driver_name(std::string_view n) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (n.empty() || n.size() > 63 || !alnum(n.front()) || !alnum(n.back())) return false;
  return std::all_of(n.begin(), n.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

Dra read_dra(config::Section& t) {
  Dra d;
  d.enabled = t.boolean("enabled").value_or(false);
  for (const auto& driver : t.strings("drivers").value_or(std::vector<std::string>{})) {
    if (!valid_driver_name(driver))
      t.fail("drivers", "`" + driver + "` is not a DRA driver name (a DNS subdomain, e.g. \"gpu.nvidia.com\")");
    if (d.follows(driver) && !d.drivers.empty()) t.fail("drivers", "driver `" + driver + "` listed twice");
    d.drivers.push_back(driver);
  }
  t.finish();
  return d;
}

}  // namespace

bool Dra::follows(std::string_view driver) const {
  return drivers.empty() || std::find(drivers.begin(), drivers.end(), driver) != drivers.end();
}

std::string_view to_string(Provider p) {
  for (const auto& [provider, name] : kProviders)
    if (provider == p) return name;
  return "?";
}

bool Resource::has(Provider p) const {
  return std::find(providers.begin(), providers.end(), p) != providers.end();
}

std::vector<std::string> missing_env(const std::vector<std::string>& require_env,
                                     const std::vector<std::pair<std::string, std::string>>& envs) {
  std::vector<std::string> out;
  for (const auto& glob : require_env)
    if (std::none_of(envs.begin(), envs.end(),
                     [&](auto& e) { return ::fnmatch(glob.c_str(), e.first.c_str(), 0) == 0; }))
      out.push_back(glob);
  return out;
}

const Resource* Config::find(std::string_view name) const {
  for (const auto& r : resources)
    if (r.name == name) return &r;
  return nullptr;
}

bool Config::any(Provider p) const {
  return std::any_of(resources.begin(), resources.end(), [&](const Resource& r) { return r.has(p); });
}

Config read_table(config::Section& s, const KubeletKeys& kubelet) {
  auto c = read_enabled_kubelet_keys<Config>(s, kubelet);
  c.direct_requires_pod_devices = s.boolean("direct-requires-pod-devices").value_or(true);
  if (s.kind("protect-env") == config::Kind::boolean) {
    c.protect_env = *s.boolean("protect-env") ? ProtectEnv::fail : ProtectEnv::off;
  } else if (auto p = s.string("protect-env")) {
    if (*p != "fail" && *p != "drop") s.fail("protect-env", "want true (\"fail\"), false, \"fail\" or \"drop\"");
    c.protect_env = *p == "fail" ? ProtectEnv::fail : ProtectEnv::drop;
  }
  for (auto& t : s.tables("resources")) c.resources.push_back(read_resource(t, c));
  if (auto dra = s.table("dra")) c.dra = read_dra(*dra);
  return c;
}

std::optional<Config> read_config(config::Section& s, const KubeletKeys& kubelet) {
  Config c = read_table(s, kubelet);
  if (!c.enabled) return std::nullopt;
  return c;
}

}  // namespace specshim::device_plugin
