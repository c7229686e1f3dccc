// SPDX-License-Identifier: Apache-2.0
// Doctor's kubelet check: the PodResources socket and the device-plugin
// sockets are there and accept connections.
#include <algorithm>

#include "doctor/doctor.h"

namespace specshim::shim::doctor {
namespace {

constexpr const char* kPodResources = "/var/lib/kubelet/pod-resources/kubelet.sock";
constexpr const char* kDevicePlugins = "/var/lib/kubelet/device-plugins";
constexpr const char* kRegistration = "kubelet.sock";  // the kubelet's own socket in kDevicePlugins

}  // namespace

// Seam: with the kubelet client this check also calls PodResources Get (or
// notes the List fallback when the kubelet has Get disabled) and asks every
// plugin for its resource names; until then it stops at connect().
Check check_kubelet(const Host& host, const Loaded& loaded) {
  Check c("kubelet");
  // Unreachable sockets only break creates when a modifier talks to the kubelet.
  Status unreachable = loaded.on("device-plugin") ? Status::fail : Status::warn;

  std::filesystem::path pod_resources = host.path(kPodResources);
  std::error_code ec;
  if (!std::filesystem::exists(pod_resources, ec)) {
    c.add(unreachable, pod_resources.string() + ": absent (no kubelet here, or another --root-dir)");
  } else if (std::string why = connect_unix(pod_resources); !why.empty()) {
    c.add(unreachable, pod_resources.string() + ": " + why);
  } else {
    c.add(Status::ok, pod_resources.string() + ": reachable");
    c.add(Status::info, "PodResources Get/List: not probed (needs the kubelet client)");
  }

  std::filesystem::path plugins = host.path(kDevicePlugins);
  std::vector<std::filesystem::path> sockets;
  for (const auto& e : std::filesystem::directory_iterator(plugins, ec))
    if (e.is_socket() && e.path().filename() != kRegistration) sockets.push_back(e.path());
  std::sort(sockets.begin(), sockets.end());
  if (ec)
    c.add(Status::info, plugins.string() + ": " + ec.message());
  else if (sockets.empty())
    c.add(Status::info, plugins.string() + ": no device-plugin sockets");
  for (const auto& s : sockets) {
    std::string why = connect_unix(s);
    c.add(why.empty() ? Status::ok : unreachable,
          s.string() + (why.empty() ? ": reachable (resources: needs the kubelet client)" : ": " + why));
  }
  return c;
}

}  // namespace specshim::shim::doctor
