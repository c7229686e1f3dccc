// SPDX-License-Identifier: Apache-2.0
// What the bundle-based fuzz targets share: a scratch directory made once per
// process, writing the fuzzer's bytes into a file there, and running a chain
// on a bundle as `create` would, without writing anything.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>

#include "specshim/modifiers/create.h"

namespace specshim::fuzz {

// make_scratch creates /tmp/specshim-fuzz-<name>-XXXXXX with the given
// subdirectories; it aborts when it cannot (the target cannot run then).
inline std::filesystem::path make_scratch(const std::string& name, std::initializer_list<const char*> subdirs) {
  std::string tmpl = "/tmp/specshim-fuzz-" + name + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) std::abort();
  for (const char* d : subdirs) std::filesystem::create_directories(std::filesystem::path(tmpl) / d);
  return tmpl;
}

inline void write_bytes(const std::filesystem::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// kGrantedGpu is the one GPU kOneGpuCheckpoint granted: its one entry
// answered it with NVIDIA_VISIBLE_DEVICES set to its UUID (a
// ContainerAllocateResponse: envs, field 1, a map entry).
inline constexpr const char* kGrantedGpu = "GPU-4a3b2c1d-0000-4000-8000-000000000000";
inline constexpr const char* kOneGpuCheckpoint =
    R"({"Data": {"PodDeviceEntries": [{"PodUID": "uid-src", "ContainerName": "main", "ResourceName": )"
    R"("nvidia.com/gpu", "DeviceIDs": {"-1": ["GPU-4a3b2c1d-0000-4000-8000-000000000000"]}, "AllocResp": )"
    R"("CkIKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSKEdQVS00YTNiMmMxZC0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDA="}], )"
    R"("RegisteredDevices": null}, "Checksum": 1})";

// dry_run loads bundle/config.json and runs the chain config_toml builds, in
// dry-run mode and never calling Allocate. Throws Error as create would.
inline create::Outcome dry_run(const std::filesystem::path& bundle, const std::string& config_toml) {
  auto doc = config::Document::parse(config_toml, "fuzz.toml");
  auto root = doc.root();
  Context ctx;
  ctx.dry_run = true;
  ctx.allow_allocate = false;
  create::BundleDir dir(bundle);
  return create::modify(dir, root, std::move(ctx));
}

}  // namespace specshim::fuzz
