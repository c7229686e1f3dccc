// SPDX-License-Identifier: Apache-2.0
// diagnose --all: every live container of a runtime root in one run, a
// summary line each and the findings that failed. What seed 002's recovery
// needed: which containers run without what their grant should have given
// them (require-env), named with their pods.
#include <algorithm>
#include <iostream>

#include "diagnose/diagnose.h"
#include "specshim/live/runtime_state.h"
#include "specshim/node/pod_identity.h"

namespace specshim::shim::diagnose {
namespace {

bool sandbox(const Spec& spec) {
  try {
    return pod_identity::kind_of(spec) == ContainerKind::sandbox;
  } catch (const std::exception&) {
    return false;  // identity keys that disagree: the identity layer says so
  }
}

std::string who(const Container& c) {
  if (c.identity.pod.empty()) return "-";
  return c.identity.pod.str() + (c.identity.container.empty() ? "" : "/" + c.identity.container);
}

// failing_layers lists the layers with a failed finding, in report order.
std::vector<std::string> failing_layers(const Report& r) {
  std::vector<std::string> layers;
  for (const auto& f : r.findings())
    if (f.status == Severity::fail && std::find(layers.begin(), layers.end(), f.layer) == layers.end())
      layers.push_back(f.layer);
  return layers;
}

// Tally counts the summary's outcomes.
struct Tally {
  std::size_t ok = 0, warn = 0, fail = 0, not_inspected = 0;
  std::string line() const {
    std::size_t all = ok + warn + fail + not_inspected;
    return std::to_string(all) + " container" + (all == 1 ? "" : "s") + ": " + std::to_string(fail) + " failed, " +
           std::to_string(warn) + " with warnings, " + std::to_string(ok) + " ok" +
           (not_inspected ? ", " + std::to_string(not_inspected) + " not inspected" : "") + "\n";
  }
};

void text_row(const Container& c, const Report& r, std::string& out) {
  Severity s = r.status();
  out += c.id + "  " + who(c) + "  " + status_label(s);
  if (s == Severity::fail) out += "  (" + join(failing_layers(r), ", ") + ")";
  out += "\n";
  for (const auto& f : r.findings()) {
    if (f.status != Severity::fail) continue;
    out += "    " + f.layer + "  " + f.subject + "  " + f.message + "\n";
    if (!f.hint.empty()) out += "      hint: " + f.hint + "\n";
  }
}

}  // namespace

int diagnose_all(const Setup& setup, const Options& o) {
  std::vector<live::ContainerState> states;
  try {
    states = live::runtime_list(setup.runtime, setup.runtime_root);
  } catch (const Error& e) {
    throw CannotInspect(e.what());
  }
  Tally tally;
  std::string text;
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const auto& state : states) {
    if (state.status != "created" && state.status != "running") continue;
    try {
      Container c = open_container(setup, state.id, o.sysfs);
      if (sandbox(c.spec)) continue;
      Report r = run_layers(setup, c, o);
      Severity s = r.status();
      (s == Severity::fail ? tally.fail : s == Severity::warn ? tally.warn : tally.ok)++;
      text_row(c, r, text);
      json.push_back(to_json(c, r));
    } catch (const std::exception& e) {
      // Gone between the list and the look (deleted, stopped), or unreadable.
      ++tally.not_inspected;
      text += state.id + "  -  NOT INSPECTED  " + describe(e) + "\n";
      json.push_back({{"container", state.id}, {"pod", nullptr}, {"status", "not-inspected"}, {"error", describe(e)}});
    }
  }
  if (o.format == "json")
    std::cout << json.dump(2) << "\n";
  else
    std::cout << text << (text.empty() ? "" : "\n") << tally.line();
  return tally.fail || tally.not_inspected ? 1 : 0;
}

}  // namespace specshim::shim::diagnose
