// SPDX-License-Identifier: Apache-2.0
// What dockerd knows of its containers, read from its own records: the
// name a container was given (`docker run --name`), for the desired-state
// file's `docker: {name: …}` entries (hotplug.h). A container dockerd
// creates has the same id in the OCI runtime (runc's --root) as in docker,
// and `docker restart` keeps it; a name outlives even `docker rm` and a new
// `docker run --name`. docs/reconcile.md, "Docker's containers".
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace specshim::docker {

// kDefaultDataRoot is dockerd's data-root (daemon.json "data-root").
inline constexpr const char* kDefaultDataRoot = "/var/lib/docker";
// kMaxRecordBytes bounds config.v2.json (the container's whole config).
inline constexpr std::size_t kMaxRecordBytes = 4 << 20;

// is_container_id tells dockerd's container ids: 64 lowercase hex digits.
bool is_container_id(std::string_view id);

// is_name tells the names dockerd accepts: [a-zA-Z0-9][a-zA-Z0-9_.-]*.
bool is_name(std::string_view name);

// container_name is dockerd's name for the container `id`, without the
// leading '/' dockerd stores ("gpu-a"), from
// <data_root>/containers/<id>/config.v2.json. nullopt when id is not a
// docker id or dockerd holds no record of it. Throws Error when the record
// is not a regular file, is over kMaxRecordBytes, is not JSON, names another
// id or no valid name.
std::optional<std::string> container_name(const std::filesystem::path& data_root, std::string_view id);

}  // namespace specshim::docker
