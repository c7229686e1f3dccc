// SPDX-License-Identifier: Apache-2.0
// The cpuset modifier: a container created outside CRI that takes the devices
// of another container of its pod (specshim.io/devices-from, -from-pod) also
// takes that container's exclusive CPUs and memory NUMA nodes, as the kubelet
// reports them in PodResources, written as linux.resources.cpu.cpus / .mems.
// A cpuset the spec already has is only ever narrowed. See docs/cpuset.md.
//
// The pieces are split so they can be tested alone:
//   parse_list / format_list  the kernel's cpuset list syntax ("0,2-5")
//   intersect / unite         set operations on sorted id lists
//   read_config               [cpuset], strictly
//   Cpuset                    the modifier (src/cpuset/modifier.h): sources, memo, budget, policy
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/base/spec.h"
#include "specshim/kubelet/client.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/modifier.h"

namespace specshim::cpuset {

// Limits on ids and on the text of a list, which is tenant input in the spec.
inline constexpr std::uint32_t kMaxCpus = 8192;       // CPU ids 0..8191: the kernel's largest NR_CPUS
inline constexpr std::uint32_t kMaxNumaNodes = 1024;  // node ids 0..1023: the kernel's largest MAX_NUMNODES
inline constexpr std::size_t kMaxListBytes = 65536;

// IdSet is a set of CPU or NUMA node ids: sorted, each once.
using IdSet = std::vector<std::uint32_t>;

// parse_list reads cpuset list syntax: comma-separated ids and inclusive
// ranges ("0", "2-5", "0,2-5"), in any order, overlaps allowed. The empty
// text is the empty set. Nothing else is accepted: no spaces, signs, empty
// items, reversed ranges or the kernel's stride form. Every id must be below
// limit. Throws Error starting with field.
IdSet parse_list(std::string_view field, std::string_view text, std::uint32_t limit);

// format_list writes ids in the canonical form: ascending, runs of two or
// more as ranges ("0,2-5"); the empty set is "".
std::string format_list(const IdSet& ids);

IdSet intersect(const IdSet& a, const IdSet& b);
IdSet unite(const IdSet& a, const IdSet& b);

enum class OnError { fail, skip };

// Config is the [cpuset] table. The kubelet keys default to [kubelet]'s, as
// [device-plugin]'s do. When both tables come to the same kubelet root and
// budget, the two modifiers share one session (KubeletSessions): one
// client, one budget, PodResources asked once.
struct Config {
  bool enabled = false;
  std::filesystem::path kubelet_root = kubelet::kDefaultKubeletRoot;
  std::chrono::milliseconds budget{2000};
  OnError on_error = OnError::fail;
};

// read_table reads the table strictly, enabled or not; read_config is
// read_table, nullopt when enabled is false (the default). Both throw
// config errors.
Config read_table(config::Section& s, const KubeletKeys& kubelet = {});
std::optional<Config> read_config(config::Section& s, const KubeletKeys& kubelet = {});

}  // namespace specshim::cpuset
