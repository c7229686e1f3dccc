// SPDX-License-Identifier: Apache-2.0
#include "env_devices/after.h"

#include <algorithm>
#include <optional>

#include "env_devices/grant.h"
#include "specshim/base/error.h"

namespace specshim::env_devices {
namespace {

// drop_markers removes the volume-mounts strategy's /dev/null mounts below
// e's dir: a runtime after specshim that reads them (NVIDIA's, with
// accept-nvidia-visible-devices-as-volume-mounts) would find the request in
// them whatever the variable says.
void drop_markers(const Entry& e, Spec& spec, std::vector<std::string>& changes) {
  if (e.volume_mounts.empty() || mounted(spec, e.volume_mounts).empty()) return;
  Json& mounts = spec.array_at({"mounts"});
  std::size_t before = mounts.size();
  mounts.erase(std::remove_if(mounts.begin(), mounts.end(),
                              [&](const Json& m) { return dev_null_below(m, e.volume_mounts).has_value(); }),
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

// kHookLists: every hook list of the runtime spec.
constexpr std::string_view kHookLists[] = {"prestart",       "createRuntime", "createContainer",
                                           "startContainer", "poststart",     "poststop"};

// legacy names the hook's program when it is one of names.
std::optional<std::string_view> legacy(const Json& hook, const std::vector<std::string_view>& names) {
  if (!hook.is_object() || !hook.contains("path") || !hook["path"].is_string()) return std::nullopt;
  std::string_view path = hook["path"].get_ref<const std::string&>();
  std::string_view base = path.substr(path.rfind('/') + 1);
  for (auto name : names)
    if (base == name) return name;
  return std::nullopt;
}

}  // namespace

void drop_legacy_hooks(const Entry& e, Spec& spec, std::vector<std::string>& changes) {
  const auto& names = vendor_of(e.env).legacy_hooks;
  if (names.empty()) return;
  for (std::string_view list : kHookLists) {
    const Json* hooks = spec.find({"hooks", list});
    if (!hooks || !hooks->is_array() ||
        std::none_of(hooks->begin(), hooks->end(), [&](const Json& h) { return legacy(h, names).has_value(); }))
      continue;
    Json& edit = spec.array_at({"hooks", list});
    for (auto it = edit.begin(); it != edit.end();) {
      if (auto name = legacy(*it, names)) {
        changes.push_back("removed the " + std::string(list) + " hook " + std::string(*name) + " (it reads " + e.env +
                          " itself; its devices come through cdi)");
        it = edit.erase(it);
      } else {
        ++it;
      }
    }
  }
}

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

void keep_within(const Entry& e, const DeviceRequest& req, Spec& spec, std::vector<std::string>& changes) {
  const auto& b = *req.granted;
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

}  // namespace specshim::env_devices
