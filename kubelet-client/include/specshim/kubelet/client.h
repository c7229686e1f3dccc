// SPDX-License-Identifier: Apache-2.0
// KubeletClient: what specshim asks the kubelet and device plugins during a
// create. Two implementations exist: a HelperClient that runs the gRPC calls
// in the specshim-kubelet helper process (what the shim uses, so no gRPC
// code loads into the shim), and the in-process gRPC client (used by the
// helper itself and by component tests). Tests of callers may pass their own
// implementation.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/kubelet/budget.h"
#include "specshim/kubelet/errors.h"
#include "specshim/kubelet/types.h"

namespace specshim::kubelet {

inline constexpr const char* kDefaultKubeletRoot = "/var/lib/kubelet";

// Paths below the kubelet root (--root-dir).
std::filesystem::path pod_resources_socket(const std::filesystem::path& kubelet_root);  // pod-resources/kubelet.sock
std::filesystem::path device_plugin_dir(const std::filesystem::path& kubelet_root);     // device-plugins/
std::filesystem::path checkpoint_file(
    const std::filesystem::path& kubelet_root);  // device-plugins/kubelet_internal_checkpoint

// plugin_sockets lists the device-plugin sockets in dir (every *.sock that
// is a socket, except the kubelet's own kubelet.sock), sorted by name.
std::vector<std::filesystem::path> plugin_sockets(const std::filesystem::path& dir);

// KubeletClient is the kubelet as specshim sees it. Every RPC takes its
// deadline from budget; an expired budget throws DeadlineExceeded without
// dialling. Errors are the types in errors.h.
class KubeletClient {
 public:
  virtual ~KubeletClient() = default;

  // pod_resources returns what the kubelet assigned to pod ns/name: Get, or
  // List when Get is disabled or unimplemented. NotFound for an unknown pod.
  virtual PodResources pod_resources(const std::string& ns, const std::string& name, const Budget& budget) = 0;

  // list_pods returns what the kubelet assigned to every pod (List), for
  // `specshim doctor`; creates never list the node.
  virtual std::vector<PodResources> list_pods(const Budget& budget) = 0;

  // allocatable returns the node's healthy devices (GetAllocatableResources).
  virtual ResourceDevices allocatable(const Budget& budget) = 0;

  // plugin_for_resource returns the socket of the plugin serving resource.
  // configured (from [[device-plugin.resources]] socket) is used when not
  // empty, relative to the device-plugins directory; it must exist.
  // Otherwise every plugin socket is asked for its devices (ListAndWatch) and
  // the one serving all of device_ids is chosen; with no device_ids, the
  // checkpoint's RegisteredDevices for resource are matched. These probes
  // run in parallel with a quarter of the remaining budget. NotFound when no
  // plugin (or more than one) matches; DeadlineExceeded when none matched
  // but some did not answer in time.
  virtual std::filesystem::path plugin_for_resource(const std::string& resource, const std::string& configured,
                                                    const std::vector<std::string>& device_ids,
                                                    const Budget& budget) = 0;

  // plugin_options calls GetDevicePluginOptions.
  virtual PluginOptions plugin_options(const std::filesystem::path& socket, const Budget& budget) = 0;

  // allocate calls Allocate for one container with device_ids of resource
  // and returns the plugin's answer. Plugins that change state on Allocate
  // (HAMi, Ascend in Volcano mode) must not be called this way: prefer the
  // checkpoint.
  virtual AllocateResponse allocate(const std::filesystem::path& socket, const std::string& resource,
                                    const std::vector<std::string>& device_ids, const Budget& budget) = 0;

  // list_plugins reports every plugin socket with its devices or its error
  // (for `specshim doctor`); it throws only when the directory is unreadable.
  virtual std::vector<PluginInfo> list_plugins(const Budget& budget) = 0;

  // checkpoint returns the checkpoint entries of one container (every
  // resource); empty when the file or the entry does not exist. No RPC.
  virtual std::vector<CheckpointEntry> checkpoint(const std::string& pod_uid, const std::string& container) = 0;

  // checkpoint_for_devices returns the checkpoint entries, of any pod and
  // container, of resource whose device IDs are exactly device_ids (in any
  // order): the stored answer for a set of devices when the pod UID is not
  // known. Empty when the file or such an entry does not exist. No RPC.
  virtual std::vector<CheckpointEntry> checkpoint_for_devices(const std::string& resource,
                                                              const std::vector<std::string>& device_ids) {
    (void)resource, (void)device_ids;
    return {};
  }

  // checkpoint_entry is checkpoint() narrowed to one resource.
  std::optional<CheckpointEntry> checkpoint_entry(const std::string& pod_uid, const std::string& container,
                                                  const std::string& resource);
};

// ClientOptions configure both implementations.
struct ClientOptions {
  std::filesystem::path kubelet_root = kDefaultKubeletRoot;  // [device-plugin] kubelet-root
};

// make_helper_client returns the client the shim uses: gRPC runs in the
// helper executable (started on the first RPC, kept for the client's life,
// killed when a call overruns its deadline). helper defaults to find_helper(),
// looked up at the first RPC: checkpoint lookups work without a helper.
std::unique_ptr<KubeletClient> make_helper_client(const ClientOptions& options, std::filesystem::path helper = {});

// find_helper locates specshim-kubelet: $SPECSHIM_KUBELET_HELPER, next to
// the running executable, then the install's libexec dir. Throws Error.
std::filesystem::path find_helper();

// make_grpc_client returns the in-process gRPC client. Defined in
// specshim_kubelet_grpc: only the helper and component tests link it.
std::unique_ptr<KubeletClient> make_grpc_client(const ClientOptions& options);

}  // namespace specshim::kubelet
