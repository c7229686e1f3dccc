// SPDX-License-Identifier: Apache-2.0
// specshim's chain as an NRI Service: each CreateContainer runs the chain
// that the shim runs at `create`, over NRI's view of the container, and
// answers with the difference (adjust.h). The config file is read again for
// every container, as the shim reads it for every create.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "specshim/modifiers/config_file.h"
#include "specshim/nri/adjust.h"
#include "specshim/nri/session.h"

namespace specshim::nri {

// kSubscribed: the events specshim-nri takes. Bits every NRI since v0.2
// knows (a runtime refuses a plugin asking for a bit it does not know).
inline constexpr std::int32_t kSubscribed = event_bit(api::CREATE_CONTAINER) | event_bit(api::REMOVE_CONTAINER);

// kMark is the annotation on every container the plugin adjusted, valued
// "<index>-specshim": doctor, diagnose and dry-run show which front-end ran
// the chain. The shim does not skip its chain for it (an annotation is no
// proof); its modifiers find the plugin's changes applied.
inline constexpr const char* kMark = "specshim.io/nri";

class Plugin final : public Service {
 public:
  // config_file: specshim's config; settings: its [nri] as read at start
  // (the socket and index need a restart to change, the rest does not).
  Plugin(std::filesystem::path config_file, NriSettings settings, std::string name = "specshim")
      : config_file_(std::move(config_file)), settings_(std::move(settings)), name_(std::move(name)) {}

  std::int32_t configure(const api::ConfigureRequest& req) override;
  // synchronized removes the state directories of containers the runtime
  // no longer has (left by a plugin that was down when they went).
  void synchronized(const std::vector<std::string>& container_ids) override;
  api::CreateContainerResponse create_container(const api::CreateContainerRequest& req) override;
  void removed(const api::Container& container) override;
  // disconnected: the connection ended; the registration file goes.
  void disconnected();

  const Level& level() const { return level_; }
  // answer_within is how long a create may take: the runtime's request
  // timeout (from Configure; 2 s when it sends none) less [nri]
  // answer-margin-ms, and at least 100 ms.
  std::chrono::milliseconds answer_within(const NriSettings& nri) const;

 private:
  std::filesystem::path config_file_;
  NriSettings settings_;
  std::string name_;
  Level level_;
  std::chrono::milliseconds request_timeout_{2000};
};

}  // namespace specshim::nri
