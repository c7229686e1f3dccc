// SPDX-License-Identifier: Apache-2.0
// ClientBase: the parts of KubeletClient that need no RPC of their own
// (checkpoint lookup, choosing a plugin socket), shared by the helper and
// the gRPC implementations.
#pragma once

#include <optional>

#include "specshim/kubelet/checkpoint.h"
#include "specshim/kubelet/client.h"

namespace specshim::kubelet {

class ClientBase : public KubeletClient {
 public:
  explicit ClientBase(ClientOptions options) : options_(std::move(options)) {}

  std::filesystem::path plugin_for_resource(const std::string& resource, const std::string& configured,
                                            const std::vector<std::string>& device_ids, const Budget& budget) override;
  std::vector<CheckpointEntry> checkpoint(const std::string& pod_uid, const std::string& container) override;
  std::vector<CheckpointEntry> checkpoint_for_devices(const std::string& resource,
                                                      const std::vector<std::string>& device_ids) override;

 protected:
  const ClientOptions& options() const { return options_; }
  // loaded_checkpoint reads the checkpoint once per client; nullptr when the
  // file does not exist.
  const Checkpoint* loaded_checkpoint();
  // resource_of guesses which registered resource a plugin's devices belong
  // to (largest overlap with RegisteredDevices); empty when unknown.
  std::string resource_of(const std::vector<Device>& devices);

 private:
  ClientOptions options_;
  std::optional<std::optional<Checkpoint>> checkpoint_;
};

}  // namespace specshim::kubelet
