// SPDX-License-Identifier: Apache-2.0
// The env-devices modifier (see specshim/modifiers/env_devices.h, docs/env-devices.md):
// each entry's request decided once (decision.h), handed to cdi as a
// DeviceRequest in every pass, the variable then made inert and the
// vendor's own hook removed (after.h).
#include "env_devices/modifier.h"

#include "env_devices/after.h"
#include "env_devices/decision.h"
#include "kubelet_modifier.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/factories.h"

namespace specshim::env_devices {

EnvDevices::EnvDevices(std::vector<Entry> entries, KubeletSessions& sessions) {
  for (const auto& e : entries) sessions_.push_back(sessions.helper_session(e.kubelet_root, e.budget));
  entries_ = std::move(entries);
}

EnvDevices::EnvDevices(std::vector<Entry> entries, std::shared_ptr<KubeletSession> session)
    : entries_(std::move(entries)), sessions_(entries_.size(), session) {}

std::string EnvDevices::last_change() const {
  return join(changes_, "; ");
}

void EnvDevices::decide_all(const Spec& spec, const Context& ctx) {
  decided_.emplace();
  // The pause container runs no workload: whatever its spec asks is
  // ignored, and made inert for the runtime after specshim.
  if (ctx.kind == ContainerKind::sandbox) {
    for (const auto& e : entries_)
      if (asks(e, spec)) inert_.push_back(&e);
    return;
  }
  const pod_identity::Identity id = pod_identity::identify(spec);
  const std::string target = target_name(id, ctx.container_id);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    std::string ignored;
    if (auto req = decide(e, *sessions_[i], spec, ctx, id, target, ignored)) {
      log::debug("env-devices: {}: {}", req->origin,
                 req->granted ? "within what " + req->granted->what : std::string("trusted, no grant checked"));
      decided_->emplace_back(&e, std::move(*req));
    } else if (!ignored.empty()) {
      if (e.ignored == Ignored::fail) throw Error(ignored + " (ignored = \"fail\")");
      log::debug("env-devices: {}: ignored, made inert for the runtime after specshim", ignored);
      inert_.push_back(&e);
    }
  }
}

void EnvDevices::apply(Spec& spec, Context& ctx) {
  changes_.clear();
  if (!decided_) decide_all(spec, ctx);
  std::erase_if(ctx.device_requests, [](const DeviceRequest& r) { return r.from == "env-devices"; });
  for (const auto& [e, req] : *decided_) {
    ctx.device_requests.push_back(req);
    if (e->after == After::void_value)
      make_inert(*e, spec, changes_);
    else if (req.granted && req.granted->clamp)
      keep_within(*e, req, spec, changes_);
  }
  for (const Entry* e : inert_) make_inert(*e, spec, changes_);
  for (const Entry& e : entries_) drop_legacy_hooks(e, spec, changes_);
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
