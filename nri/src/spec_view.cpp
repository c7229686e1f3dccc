// SPDX-License-Identifier: Apache-2.0
// NRI's pod and container as an OCI spec (adjust.h).
#include <fnmatch.h>

#include <algorithm>

#include "specshim/nri/adjust.h"

namespace specshim::nri {
namespace {

Json strings(const google::protobuf::RepeatedPtrField<std::string>& list) {
  Json out = Json::array();
  for (const auto& s : list) out.push_back(s);
  return out;
}

Json hook_json(const api::Hook& h) {
  Json j = {{"path", h.path()}};
  if (h.args_size()) j["args"] = strings(h.args());
  if (h.env_size()) j["env"] = strings(h.env());
  if (h.has_timeout()) j["timeout"] = h.timeout().value();
  return j;
}

Json hooks_json(const api::Hooks& h) {
  Json j = Json::object();
  auto add = [&](const char* name, const google::protobuf::RepeatedPtrField<api::Hook>& list) {
    if (list.empty()) return;
    Json& a = j[name] = Json::array();
    for (const auto& hook : list) a.push_back(hook_json(hook));
  };
  add("prestart", h.prestart());
  add("createRuntime", h.create_runtime());
  add("createContainer", h.create_container());
  add("startContainer", h.start_container());
  add("poststart", h.poststart());
  add("poststop", h.poststop());
  return j;
}

Json device_json(const api::LinuxDevice& d) {
  Json j = {{"path", d.path()}, {"type", d.type()}, {"major", d.major()}, {"minor", d.minor()}};
  if (d.has_file_mode()) j["fileMode"] = d.file_mode().value();
  if (d.has_uid()) j["uid"] = d.uid().value();
  if (d.has_gid()) j["gid"] = d.gid().value();
  return j;
}

Json rule_json(const api::LinuxDeviceCgroup& r) {
  Json j = {{"allow", r.allow()}};
  if (!r.type().empty()) j["type"] = r.type();
  if (r.has_major()) j["major"] = r.major().value();
  if (r.has_minor()) j["minor"] = r.minor().value();
  if (!r.access().empty()) j["access"] = r.access();
  return j;
}

// sorted: protobuf maps iterate in no set order; the view's annotations go
// in key order so the same container always makes the same spec.
std::vector<std::pair<std::string, std::string>> sorted(const google::protobuf::Map<std::string, std::string>& m) {
  std::vector<std::pair<std::string, std::string>> out(m.begin(), m.end());
  std::sort(out.begin(), out.end());
  return out;
}

bool matches_any(const std::string& key, const std::vector<std::string>& globs) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return ::fnmatch(g.c_str(), key.c_str(), FNM_PATHNAME) == 0; });
}

}  // namespace

Spec spec_view(const api::PodSandbox& pod, const api::Container& c, const std::vector<std::string>& pod_annotations) {
  Json j = Json::object();
  j["ociVersion"] = "1.2.0";
  Json& process = j["process"] = Json::object();
  if (c.has_user()) {
    Json user = {{"uid", c.user().uid()}, {"gid", c.user().gid()}};
    if (c.user().additional_gids_size()) {
      Json& gids = user["additionalGids"] = Json::array();
      for (auto g : c.user().additional_gids()) gids.push_back(g);
    }
    process["user"] = user;
  }
  process["args"] = strings(c.args());
  process["env"] = strings(c.env());
  if (c.rlimits_size()) {
    Json& rl = process["rlimits"] = Json::array();
    for (const auto& r : c.rlimits()) rl.push_back({{"type", r.type()}, {"hard", r.hard()}, {"soft", r.soft()}});
  }

  Json& mounts = j["mounts"] = Json::array();
  for (const auto& m : c.mounts()) {
    Json mj = {{"destination", m.destination()}};
    if (!m.type().empty()) mj["type"] = m.type();
    mj["source"] = m.source();
    if (m.options_size()) mj["options"] = strings(m.options());
    mounts.push_back(mj);
  }
  if (c.has_hooks()) {
    Json hooks = hooks_json(c.hooks());
    if (!hooks.empty()) j["hooks"] = hooks;
  }

  Json& annotations = j["annotations"] = Json::object();
  for (auto& [k, v] : sorted(c.annotations())) annotations[k] = v;
  for (auto& [k, v] : sorted(pod.annotations()))
    if (!annotations.contains(k) && matches_any(k, pod_annotations)) annotations[k] = v;

  Json& linux = j["linux"] = Json::object();
  const api::LinuxContainer& l = c.linux();
  Json& devices = linux["devices"] = Json::array();
  for (const auto& d : l.devices()) devices.push_back(device_json(d));
  Json& resources = linux["resources"] = Json::object();
  Json& rules = resources["devices"] = Json::array();
  for (const auto& r : l.resources().devices()) rules.push_back(rule_json(r));
  const api::LinuxCPU& cpu = l.resources().cpu();
  if (!cpu.cpus().empty() || !cpu.mems().empty()) {
    Json& cj = resources["cpu"] = Json::object();
    if (!cpu.cpus().empty()) cj["cpus"] = cpu.cpus();
    if (!cpu.mems().empty()) cj["mems"] = cpu.mems();
  }
  if (!l.cgroups_path().empty()) linux["cgroupsPath"] = l.cgroups_path();
  if (l.namespaces_size()) {
    Json& ns = linux["namespaces"] = Json::array();
    for (const auto& n : l.namespaces()) {
      Json nj = {{"type", n.type()}};
      if (!n.path().empty()) nj["path"] = n.path();
      ns.push_back(nj);
    }
  }
  return Spec::parse(j.dump());
}

}  // namespace specshim::nri
