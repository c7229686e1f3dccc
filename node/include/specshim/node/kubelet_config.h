// SPDX-License-Identifier: Apache-2.0
// The kubelet's config file (a KubeletConfiguration), read for what doctor
// compares with containerd: the kubelet's cgroup driver.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace specshim::node::kubelet_config {

// kDefaultCgroupDriver is cgroupDriver when a KubeletConfiguration leaves it
// out: the kubelet's own default, "cgroupfs" (KubeletConfiguration
// v1beta1; kubernetes.io, "Configuring a cgroup driver": "the kubelet's
// default cgroupfs driver"). kubeadm 1.22 and later writes `cgroupDriver:
// systemd` into the file when its own config leaves the field out, so on a
// kubeadm node the file says which.
inline constexpr const char* kDefaultCgroupDriver = "cgroupfs";
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;

// config_file is the kubelet's config under its root: <root>/config.yaml,
// where kubeadm writes it (and the kubelet's --config names it).
std::filesystem::path config_file(const std::filesystem::path& kubelet_root);

// CgroupDriver is the kubelet's cgroup driver as its config file says.
struct CgroupDriver {
  std::string value;  // "systemd", "cgroupfs" (kDefaultCgroupDriver when absent)
  int line = 0;       // the line of cgroupDriver; 0: the file leaves it out
};

// read_cgroup_driver reads cgroupDriver of a KubeletConfiguration file
// (YAML or JSON, as the kubelet reads it); nullopt when the file does not
// exist. Throws Error naming the file when it cannot be read, does not
// parse, is not a mapping, or its cgroupDriver is not a string.
std::optional<CgroupDriver> read_cgroup_driver(const std::filesystem::path& file);

}  // namespace specshim::node::kubelet_config
