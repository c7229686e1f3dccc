// SPDX-License-Identifier: Apache-2.0
// Helpers both device-plugin component test files use: the log collector, pod annotations, specs, what a spec got.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/log.h"
#include "specshim/base/spec.h"
#include "specshim/modifiers/device_plugin.h"

namespace specshim::test {

// Logs collects what the modifier logs, for the skip policy's warnings.
struct Logs {
  inline static std::mutex mu;
  inline static std::vector<std::string> lines;
  static void sink(log::Level, std::string_view msg) {
    std::lock_guard lock(mu);
    lines.emplace_back(msg);
  }
  Logs() {
    lines.clear();
    log::set_sink(&Logs::sink, log::Level::debug);
  }
  ~Logs() { log::set_sink(nullptr, log::Level::off); }
  std::string all() const {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

inline Json cri_annotations(const std::string& container = "main") {
  return {{"io.kubernetes.cri.container-type", "container"},
          {"io.kubernetes.cri.sandbox-namespace", "ns"},
          {"io.kubernetes.cri.sandbox-name", "pod"},
          {"io.kubernetes.cri.sandbox-uid", "uid-1"},
          {"io.kubernetes.cri.container-name", container}};
}

// sibling is a container created outside CRI that names its pod.
inline Json sibling(Json more) {
  Json a = {{device_plugin::kPod, "ns/pod"}};
  a.update(more);
  return a;
}

inline Spec spec_with(const Json& annotations) {
  Json doc = {{"ociVersion", "1.1.0"},
              {"process", {{"args", {"sh"}}, {"env", {"PATH=/bin"}}}},
              {"mounts", Json::array()},
              {"annotations", annotations},
              {"linux", Json::object()}};
  return Spec::parse(doc.dump(2));
}

inline std::vector<std::string> device_paths(const Spec& spec) {
  std::vector<std::string> out;
  if (const Json* d = spec.find({"linux", "devices"}))
    for (const auto& e : *d) out.push_back(e["path"]);
  return out;
}

inline std::string annotation(const Spec& spec, const char* key) {
  return spec.annotation(key).value_or("");
}

}  // namespace specshim::test
