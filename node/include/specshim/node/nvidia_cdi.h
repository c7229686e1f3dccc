// SPDX-License-Identifier: Apache-2.0
// NVIDIA's CDI spec against the driver it describes. With specshim in place
// of NVIDIA's runtime, the spec nvidia-ctk writes (often to /var/run/cdi, a
// tmpfs) is the source of every GPU a container gets: one that is missing,
// or stale after a driver upgrade or a GPU swap, fails creates or mounts the
// wrong libraries. Doctor compares it with the driver; a create that names
// a GPU the spec lacks says how to regenerate it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/node/cdi.h"
#include "specshim/node/nvidia_gpus.h"

namespace specshim::nvidia {

// kGpuKind is the kind of NVIDIA's GPU spec (nvidia-ctk cdi generate).
inline constexpr std::string_view kGpuKind = "nvidia.com/gpu";

// kRefreshUnits are the systemd units that regenerate it at boot and on a
// driver change: NVIDIA's (the toolkit 1.18 and later) and the one the
// specshim package ships for older toolkits (packaging/systemd/).
inline constexpr std::string_view kRefreshUnits[] = {"nvidia-cdi-refresh.service", "specshim-nvidia-cdi.service"};

// kRefresh is what regenerates the spec by hand, as both units run it.
inline constexpr std::string_view kRefresh = "nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml";

// driver_version is the loaded kernel module's version, from
// <proc>/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  550.54.15  ..."): nullopt when no driver is loaded or the line
// holds no version.
std::optional<std::string> driver_version(const std::filesystem::path& proc = "/proc");

// SpecFreshness is one spec file of kGpuKind compared with the driver.
struct SpecFreshness {
  // versions are the driver versions its library mounts were made for
  // (libcuda.so.550.54.15, libnvidia-ml.so.550.54.15): sorted, unique; empty
  // when it mounts none with a version.
  std::vector<std::string> versions;
  // stale says why it no longer describes the node: another driver
  // version, a GPU it lacks, a GPU it names that the driver does not list.
  // Empty: fresh.
  std::vector<std::string> stale;
};

// freshness compares spec with the driver's version and GPUs. A GPU counts
// as in the spec when a device is named by its UUID or gives its node
// /dev/nvidia<minor>.
SpecFreshness freshness(const cdi::SpecFile& spec, const std::string& version, const std::vector<Gpu>& gpus);

}  // namespace specshim::nvidia
