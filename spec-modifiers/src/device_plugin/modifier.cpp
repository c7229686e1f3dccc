// SPDX-License-Identifier: Apache-2.0
#include "device_plugin/modifier.h"

#include <algorithm>

#include "kubelet_modifier.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/factories.h"

namespace specshim::device_plugin {

DevicePlugin::DevicePlugin(Config config, ClientFactory make_client, NodeLookup lookup)
    : DevicePlugin(config, std::make_shared<KubeletSession>(std::move(make_client), config.budget), std::move(lookup)) {
}

DevicePlugin::DevicePlugin(Config config, std::shared_ptr<KubeletSession> session, NodeLookup lookup,
                           std::set<std::string> voided_env)
    : config_(std::move(config)),
      session_(std::move(session)),
      resolver_(std::move(lookup)),
      guard_(std::move(voided_env)) {}

bool DevicePlugin::client_made() const {
  return session_->client_made();
}

std::string DevicePlugin::last_change() const {
  return join(changes_, "; ");
}

void DevicePlugin::apply(Spec& spec, Context& ctx) {
  changes_.clear();
  if (ctx.kind == ContainerKind::sandbox) return;  // the pause container runs no workload
  Target t{.config = config_, .session = *session_, .id = pod_identity::identify(spec)};
  t.who = target_name(t.id, ctx.container_id);

  // Direct requests are read from the annotations as this pass found them.
  std::vector<std::pair<const Resource*, std::string>> direct;
  for (const auto& r : config_.resources) {
    if (!r.has(Provider::direct) || !spec.find({"annotations", r.name})) continue;
    if (auto v = spec.annotation(r.name))
      direct.emplace_back(&r, *v);
    else
      t.settle({&r}, "resolve annotation `" + r.name + "`", t.socket_of(r), "must be a string");
  }

  if (guard_.guard(t, spec))
    changes_.push_back("dropped env entries that overrode plugin env (protect-env = \"drop\")");
  for (const auto& req : provided_requests(t, spec)) merge(t, spec, ctx, req);
  if (std::string handed = dra_.hand_over(t, spec, ctx); !handed.empty()) changes_.push_back(std::move(handed));
  for (const auto& [r, value] : direct)
    if (auto req = direct_request(t, *r, value, resolver_.vouching(r->name, value))) merge(t, spec, ctx, *req);
}

void DevicePlugin::merge(const Target& t, Spec& spec, Context& ctx, const Request& req) {
  const Resolution* res = resolver_.resolve(t, req, ctx.allow_allocate);
  if (!res) {
    for (const auto& part : req.parts) merge(t, spec, ctx, part);
    return;
  }
  if (!res->answer) return;
  if (std::find(ctx.grants.begin(), ctx.grants.end(), res->grant) == ctx.grants.end()) ctx.grants.push_back(res->grant);
  std::vector<std::string> conflicts;
  if (merge_answer(spec, *res->answer, res->resource->name, conflicts))
    changes_.push_back("merged " + res->label + " from " + res->source + " (" + res->how + ")");
  for (const auto& c : conflicts) log::debug("device-plugin: {} for {}: {}", res->label, t.who, c);
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
