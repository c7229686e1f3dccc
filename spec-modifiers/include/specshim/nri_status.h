// SPDX-License-Identifier: Apache-2.0
// specshim-nri's registration, as a file: the plugin writes it when the
// runtime configures it and removes it when the connection ends; doctor
// reads it to say whether the plugin mode is active ([nri] state-dir).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "specshim/config_file.h"

namespace specshim::nri_status {

struct Status {
  pid_t pid = 0;
  std::string plugin;      // "10-specshim"
  std::string runtime;     // "containerd 2.1.9"
  int nri_minor = 0;       // NRI API v0.<minor>
  std::int64_t since = 0;  // seconds since the epoch
};

// file is <state-dir>/.registered (a dot name: never a container's).
std::filesystem::path file(const NriSettings& nri);
// write replaces the file atomically; remove deletes it (missing is fine).
void write(const NriSettings& nri, const Status& s);
void remove(const NriSettings& nri);
// read returns nullopt when the file does not exist. Throws Error naming
// the file when it is not what write writes.
std::optional<Status> read(const NriSettings& nri);

}  // namespace specshim::nri_status
