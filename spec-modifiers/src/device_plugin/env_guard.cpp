// SPDX-License-Identifier: Apache-2.0
#include "device_plugin/env_guard.h"

#include <algorithm>
#include <utility>

#include "specshim/base/error.h"
#include "specshim/base/text.h"

namespace specshim::device_plugin {

bool protect_env(Spec& spec, const std::vector<Grant>& answers, ProtectEnv policy, const std::set<std::string>& voided,
                 const std::string& target) {
  const Json* env = std::as_const(spec).find({"process", "env"});
  if (policy == ProtectEnv::off || !env || !env->is_array()) return false;
  auto text = [&](std::size_t i) -> const std::string* {
    const Json& e = (*env)[i];
    return e.is_string() ? &e.get_ref<const std::string&>() : nullptr;
  };
  std::vector<std::size_t> overriding;
  for (const auto& answer : answers) {
    for (const auto& [key, value] : answer.envs) {
      const std::string prefix = key + "=", own = prefix + value;
      std::size_t last = env->size();  // the last entry the answer wrote
      for (std::size_t i = 0; i < env->size(); ++i)
        if (const std::string* e = text(i); e && *e == own) last = i;
      for (std::size_t i = last + 1; i < env->size(); ++i) {
        const std::string* e = text(i);
        if (!e || e->rfind(prefix, 0) != 0 || *e == own || (voided.count(key) && *e == prefix + "void")) continue;
        if (policy == ProtectEnv::fail)
          throw Error("process.env[" + std::to_string(i) + "] " + shown(*e) + " overrides " + shown(own) +
                      ", which the device plugin of `" + answer.resource + "` set for " + target + " (" +
                      answer.source +
                      "): plugin env is the plugin's (protect-env = true; \"drop\" removes such "
                      "entries)");
        overriding.push_back(i);
      }
    }
  }
  if (overriding.empty()) return false;
  std::sort(overriding.begin(), overriding.end());
  overriding.erase(std::unique(overriding.begin(), overriding.end()), overriding.end());
  Json& list = spec.array_at({"process", "env"});
  for (auto i = overriding.rbegin(); i != overriding.rend(); ++i)
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(*i));
  return true;
}

bool EnvGuard::guard(const Target& t, Spec& spec) const {
  const auto& id = t.id;
  if (t.config.protect_env == ProtectEnv::off || !id.cri || id.uid.empty() || id.container.empty()) return false;
  std::vector<Grant> answers;
  try {
    for (const auto& e : t.session.checkpoint(id.uid, id.container))
      if (e.alloc) answers.push_back(granted(*e.alloc, e.resource, "the checkpoint"));
  } catch (const kubelet::Error& e) {
    throw Error("read the env the kubelet's device plugins set for " + t.who + " (protect-env, " +
                kubelet::checkpoint_file(t.config.kubelet_root).string() + "): " + e.what());
  }
  return protect_env(spec, answers, t.config.protect_env, voided_, t.who);
}

}  // namespace specshim::device_plugin
