// SPDX-License-Identifier: Apache-2.0
#include "specshim/live/reconcile.h"

#include <algorithm>
#include <set>

#include "specshim/error.h"

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
Wanted wanted_by(const Setup& setup, const Target& t, const std::string& key, const std::string& proc) {
  Wanted one;
  if (key.rfind("device ", 0) == 0) {
    one.devices.push_back(device_wanted(hotplug::parse_device_arg(key.substr(7))));
  } else if (key.rfind("gpu ", 0) == 0) {
    std::string node = gpu_nodes({key.substr(4)}, proc).front();
    one.devices.push_back(device_wanted(DeviceArg{node, node, "rwm"}));
  } else {
    cdi_wanted(setup, t, {key.substr(4)}, one);
  }
  own(one, key);
  return one;
}

}  // namespace

std::optional<Reconciled> reconcile_container(const Setup& setup, const ContainerState& c,
                                              const std::vector<std::string>& wanted, const std::string& proc,
                                              Bound* bound) {
  std::set<std::string> want(wanted.begin(), wanted.end());
  auto recorded = [](const Record& r) { return std::set<std::string>(r.reconciled.begin(), r.reconciled.end()); };
  if (want == recorded(current_record(c.bundle, c.id, setup.nri_state_dir))) return std::nullopt;  // no pin, no lock

  Target t = open_target(setup, c.id, true);
  BundleLock lock(t.state.bundle);
  Reconciled out;
  out.before = current_record(t.state.bundle, t.id, setup.nri_state_dir);
  std::set<std::string> had = recorded(out.before);
  for (const auto& k : had)
    if (!want.count(k)) out.dropped.push_back(k);
  for (const auto& k : wanted)
    if (!had.count(k)) out.added.push_back(k);

  Released released = release(out.before, Release{{}, {}, out.dropped});
  out.in_spec = std::move(released.in_spec);
  Record after = std::move(released.record);
  Wanted w;
  std::vector<std::string> refused;
  for (const auto& k : out.added) {
    Wanted one = wanted_by(setup, t, k, proc);
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
  for (const auto& k : wanted)
    if (std::find(refused.begin(), refused.end(), k) == refused.end()) after.reconciled.push_back(k);
  out.change = transition(t, out.before, plan(after, w).record);
  return out;
}

}  // namespace specshim::live::attach
