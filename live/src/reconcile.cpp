// SPDX-License-Identifier: Apache-2.0
#include "specshim/live/reconcile.h"

#include <algorithm>
#include <set>

#include "specshim/base/error.h"

namespace specshim::live::attach {
namespace {

// owned marks what w holds as reconcile's, for key.
void own(Wanted& w, const std::string& key) {
  for (auto& d : w.devices) {
    d.direct = false;
    d.cdi.clear();
    d.reconcile = {key};
  }
  for (auto& m : w.mounts) {
    m.cdi.clear();
    m.reconcile = {key};
  }
}

// wanted_by is what one desired-state want asks for.
Wanted wanted_by(const Setup& setup, const Target& t, const hotplug::Want& want, const std::string& proc) {
  using Kind = hotplug::Want::Kind;
  Wanted one;
  switch (want.kind) {
    case Kind::device:
      one.devices.push_back(device_wanted(hotplug::parse_device_arg(want.arg)));
      break;
    case Kind::gpu: {
      std::string node = gpu_nodes({want.arg}, proc).front();
      one.devices.push_back(device_wanted(DeviceArg{node, node, "rwm"}));
      break;
    }
    case Kind::cdi:
      cdi_wanted(setup, t, {want.arg}, one);
      break;
  }
  own(one, want.key());
  return one;
}

}  // namespace

std::optional<Reconciled> reconcile_container(const Setup& setup, const ContainerState& c,
                                              const std::vector<hotplug::Want>& wanted, const std::string& proc,
                                              pod_allocation::Node* bound) {
  std::vector<std::string> keys;
  for (const auto& w : wanted) keys.push_back(w.key());
  std::set<std::string> want(keys.begin(), keys.end());
  auto recorded = [](const Record& r) { return std::set<std::string>(r.reconciled.begin(), r.reconciled.end()); };
  if (want == recorded(current_record(c.bundle, c.id, setup.nri_state_dir))) return std::nullopt;  // no pin, no lock

  Target t = open_target(setup, c.id, true);
  BundleLock lock(t.state.bundle);
  Reconciled out;
  out.before = current_record(t.state.bundle, t.id, setup.nri_state_dir);
  std::set<std::string> had = recorded(out.before);
  for (const auto& k : had)
    if (!want.count(k)) out.dropped.push_back(k);
  std::vector<const hotplug::Want*> added;
  for (const auto& w : wanted)
    if (!had.count(w.key())) {
      out.added.push_back(w.key());
      added.push_back(&w);
    }

  Released released = release(out.before, Release{{}, {}, out.dropped});
  out.in_spec = std::move(released.in_spec);
  Record after = std::move(released.record);
  Wanted w;
  std::vector<std::string> refused;
  for (const hotplug::Want* a : added) {
    const std::string k = a->key();
    Wanted one = wanted_by(setup, t, *a, proc);
    try {
      check_bound(bound, t, one);
    } catch (const pod_allocation::Refused& e) {
      out.refused.emplace_back(k, e.what());
      refused.push_back(k);
      continue;
    }
    for (const auto& n : one.not_applied) out.not_applied.emplace_back(k, n);
    w.devices.insert(w.devices.end(), one.devices.begin(), one.devices.end());
    w.mounts.insert(w.mounts.end(), one.mounts.begin(), one.mounts.end());
  }
  after.reconciled.clear();
  for (const auto& k : keys)
    if (std::find(refused.begin(), refused.end(), k) == refused.end()) after.reconciled.push_back(k);
  out.change = transition(t, out.before, plan(after, w).record);
  return out;
}

}  // namespace specshim::live::attach
