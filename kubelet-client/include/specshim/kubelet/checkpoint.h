// SPDX-License-Identifier: Apache-2.0
// Reader for the kubelet device manager's checkpoint,
// <kubelet-root>/device-plugins/kubelet_internal_checkpoint. It holds, per
// (pod UID, container, resource), the device IDs and the exact Allocate
// answer the kubelet used, so specshim can learn an allocation without
// calling Allocate again (unsafe for plugins that change state on Allocate).
#pragma once

#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/kubelet/types.h"

namespace specshim::kubelet {

// Checkpoint is a parsed checkpoint file. Every layout the kubelet ever
// wrote is accepted: DeviceIDs as a flat list (<= 1.19) or as a map of NUMA
// node -> IDs (1.20+); unknown keys are ignored and the Go checksum is not
// verified (it cannot be reproduced outside Go). AllocResp is decoded only
// for the entries asked for, so one bad entry of another pod does not stop
// this one.
class Checkpoint {
 public:
  // read parses file; nullopt when it does not exist. Throws Protocol for a
  // malformed file and Error when it cannot be read; messages name the file.
  static std::optional<Checkpoint> read(const std::filesystem::path& file);
  // parse reads checkpoint text; name is the file named in messages.
  static Checkpoint parse(std::string text, std::string name);

  // entries returns the entries of one container, AllocResp decoded.
  std::vector<CheckpointEntry> entries(std::string_view pod_uid, std::string_view container) const;
  // entries_of_pod returns the entries of every container of one pod,
  // AllocResp decoded.
  std::vector<CheckpointEntry> entries_of_pod(std::string_view pod_uid) const;
  // entries_of_resources returns the entries, of any pod, whose resource
  // keep accepts, AllocResp decoded: which devices the kubelet handed out.
  std::vector<CheckpointEntry> entries_of_resources(const std::function<bool(std::string_view)>& keep) const;
  // entries_for_devices returns the entries of resource whose device IDs are
  // the set device_ids, AllocResp decoded.
  std::vector<CheckpointEntry> entries_for_devices(std::string_view resource,
                                                   const std::vector<std::string>& device_ids) const;
  // registered_devices is Data.RegisteredDevices: healthy IDs per resource.
  const ResourceDevices& registered_devices() const { return registered_; }
  // allocated_devices is the device IDs of every entry per resource, each
  // once, in entry order: what the kubelet allocated, pods gone included.
  ResourceDevices allocated_devices() const;
  std::size_t size() const { return raw_.size(); }

  // RawEntry is an entry as read: views into the checkpoint's text (or, for
  // a string with escapes, into its decoded copy), AllocResp still base64,
  // decoded on lookup. A create reads every entry of the node and uses one
  // or two: nothing is copied out of the text until it is asked for.
  struct RawEntry {
    std::string_view pod_uid;
    std::string_view container;
    std::string_view resource;
    std::size_t first_id = 0;  // device IDs: ids_[first_id, first_id + id_count)
    std::size_t id_count = 0;
    std::optional<std::string_view> alloc_resp;  // base64 of the protobuf bytes
  };

 private:
  CheckpointEntry decoded(const RawEntry& raw) const;
  std::vector<std::string> ids_of(const RawEntry& raw) const;

  // Text is what the views point into; shared, so a copy of a Checkpoint
  // keeps it alive and nothing the views see ever moves.
  struct Text {
    std::string bytes;
    std::deque<std::string> decoded;  // strings that had escapes, decoded
  };
  std::shared_ptr<const Text> text_;
  std::string name_;
  std::vector<RawEntry> raw_;
  std::vector<std::string_view> ids_;
  ResourceDevices registered_;
};

}  // namespace specshim::kubelet
