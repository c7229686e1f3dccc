// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/docker.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/spec.h"

namespace specshim::docker {

bool is_container_id(std::string_view id) {
  return id.size() == 64 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_name(std::string_view name) {
  auto alnum = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  return !name.empty() && alnum(name[0]) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

std::optional<std::string> container_name(const std::filesystem::path& data_root, std::string_view id) {
  if (!is_container_id(id)) return std::nullopt;
  std::filesystem::path record = data_root / "containers" / std::string(id) / "config.v2.json";
  struct stat st {};
  if (::lstat(record.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw_errno("stat dockerd's record " + q(record.string()));
  }
  std::string what = "dockerd's record " + q(record.string());
  Json j = parse_json(fs::read_regular_file(record, kMaxRecordBytes), "parse " + what);
  auto text = [&](const char* key) -> std::string {
    if (!j.is_object() || !j.contains(key) || !j[key].is_string()) throw Error(what + ": no string `" + key + "`");
    return j[key].get<std::string>();
  };
  if (text("ID") != id) throw Error(what + ": its ID is " + q(text("ID")) + ", not the container's");
  std::string name = text("Name");
  if (name.empty() || name[0] != '/' || !is_name(std::string_view(name).substr(1)))
    throw Error(what + ": `Name` " + q(name) + " is not a name dockerd gives");
  return name.substr(1);
}

}  // namespace specshim::docker
