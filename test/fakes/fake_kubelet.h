// SPDX-License-Identifier: Apache-2.0
// In-process fakes of the kubelet's gRPC servers, speaking the real protocol
// on unix sockets under a temporary kubelet root, driven by plain data:
//   FakeKubelet       PodResourcesLister on <root>/pod-resources/kubelet.sock
//                     and Registration on <root>/device-plugins/kubelet.sock
//   FakeDevicePlugin  DevicePlugin on any socket path
//   checkpoint_json / write_checkpoint: kubelet_internal_checkpoint in every
//                     layout the kubelet wrote, with real protobuf AllocResp
// The header uses only plain types, so tests of kubelet-client's users (the
// device-plugin modifier, e2e) need no generated code.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/kubelet/types.h"

namespace specshim::test {

// Code is a gRPC status code a fake answers with (grpc::StatusCode numbers).
enum class Code {
  ok = 0,
  cancelled = 1,
  unknown = 2,
  deadline_exceeded = 4,
  not_found = 5,
  resource_exhausted = 8,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
};

// Registration is one Register call a plugin made to the fake kubelet.
struct Registration {
  std::string version;
  std::string endpoint;
  std::string resource_name;
};

class FakeKubelet {
 public:
  // FakeKubelet creates the pod-resources/ and device-plugins/ directories
  // under kubelet_root and serves both sockets until destroyed.
  explicit FakeKubelet(std::filesystem::path kubelet_root);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // add_pod makes a pod known: per container, resource -> device IDs.
  void add_pod(std::string ns, std::string name, std::string uid,
               std::map<std::string, kubelet::ResourceDevices> containers);
  // assign gives a container of a pod added before (added itself when new)
  // exclusive CPUs, memory and DRA claims, sent in every Get and List answer;
  // a container without them gets none of these fields, as from an older
  // kubelet.
  void assign(const std::string& ns, const std::string& name, const std::string& container,
              kubelet::ContainerAssignment assignment);
  // disable_get answers Get like a kubelet with the KubeletPodResourcesGet
  // gate off (1.27-1.33): UNKNOWN "PodResources API Get method disabled".
  void disable_get();
  // unimplement_get answers Get like a kubelet older than 1.27: UNIMPLEMENTED.
  void unimplement_get();
  // rate_limit_next rejects the next n PodResources calls with
  // RESOURCE_EXHAUSTED "rejected by rate limit", as the kubelet's limiter does.
  void rate_limit_next(int n);
  // per_numa_entries sends devices as kubelets >= 1.21 do: one entry per
  // device and NUMA node, every device on two nodes (so each ID appears twice).
  void per_numa_entries(bool on);
  // set_allocatable is the GetAllocatableResources answer.
  void set_allocatable(kubelet::ResourceDevices devices);

  // calls counts the calls of one method ("List", "Get",
  // "GetAllocatableResources", "Register"), rejected ones included.
  int calls(std::string_view method) const;
  // authority is the :authority of the last PodResources call.
  std::string authority() const;
  std::vector<Registration> registrations() const;
  std::filesystem::path socket() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class FakeDevicePlugin {
 public:
  // FakeDevicePlugin serves DevicePlugin on socket (any stale file there is
  // replaced) with the given healthy devices until destroyed.
  FakeDevicePlugin(std::filesystem::path socket, std::vector<std::string> devices);
  ~FakeDevicePlugin();
  FakeDevicePlugin(const FakeDevicePlugin&) = delete;
  FakeDevicePlugin& operator=(const FakeDevicePlugin&) = delete;

  // respond sets the answer to every Allocate (one container response).
  void respond(kubelet::AllocateResponse response);
  // container_responses makes Allocate answer n copies instead of one (0 or
  // 2 break the contract).
  void container_responses(int n);
  // set_options is the GetDevicePluginOptions answer.
  void set_options(kubelet::PluginOptions options);
  // delay holds every answer (and the first ListAndWatch message) back this
  // long; destruction releases held calls at once.
  void delay(std::chrono::milliseconds d);
  // fail makes every call fail with code and message.
  void fail(Code code, std::string message);
  // register_with calls Registration.Register on kubelet_socket, as a
  // plugin does at start-up.
  void register_with(const std::filesystem::path& kubelet_socket, const std::string& resource);

  // allocations lists the device IDs of every Allocate call, in order.
  std::vector<std::vector<std::string>> allocations() const;
  // calls counts the calls of one method ("Allocate", "ListAndWatch",
  // "GetDevicePluginOptions").
  int calls(std::string_view method) const;
  std::string authority() const;
  const std::filesystem::path& socket() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// CheckpointLayout is a shape of kubelet_internal_checkpoint's DeviceIDs.
enum class CheckpointLayout {
  flat,  // kubelet <= 1.19: "DeviceIDs": ["a", "b"]
  numa,  // kubelet >= 1.20: "DeviceIDs": {"0": ["a"], "-1": ["b"]}
};

struct FakeCheckpointEntry {
  std::string pod_uid;
  std::string container;
  std::string resource;
  // NUMA node ("0", "1", "-1" for none) -> IDs; the flat layout joins them.
  std::map<std::string, std::vector<std::string>> devices_by_numa;
  std::optional<kubelet::AllocateResponse> alloc;  // AllocResp; absent key when empty
};

// encode_allocate_response serializes r as a v1beta1.ContainerAllocateResponse
// with the protobuf library (the bytes the kubelet stores).
std::string encode_allocate_response(const kubelet::AllocateResponse& r);
std::string base64_encode(std::string_view bytes);

// checkpoint_json renders a checkpoint as the kubelet's Go code writes it.
std::string checkpoint_json(const std::vector<FakeCheckpointEntry>& entries, const kubelet::ResourceDevices& registered,
                            CheckpointLayout layout);
// write_checkpoint writes checkpoint_json to <kubelet_root>/device-plugins/.
void write_checkpoint(const std::filesystem::path& kubelet_root, const std::vector<FakeCheckpointEntry>& entries,
                      const kubelet::ResourceDevices& registered, CheckpointLayout layout);

}  // namespace specshim::test
