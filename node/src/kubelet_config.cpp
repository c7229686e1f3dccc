// SPDX-License-Identifier: Apache-2.0
// The kubelet's config file (kubelet_config.h), read by the YAML/JSON
// reader of CDI spec files.
#include "specshim/node/kubelet_config.h"

#include <sys/stat.h>

#include <cerrno>

#include "cdi/cdi_document.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::node::kubelet_config {

std::filesystem::path config_file(const std::filesystem::path& kubelet_root) {
  return kubelet_root / "config.yaml";
}

std::optional<CgroupDriver> read_cgroup_driver(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("stat " + q(file.string()));
  }
  try {
    using cdi::Node;
    Node root = cdi::read_document(fs::read_regular_file(file, kMaxConfigBytes));
    if (root.type != Node::Type::mapping) throw Error("line " + std::to_string(root.line) + ": not a mapping");
    for (std::size_t i = 0; i < root.keys.size(); ++i) {
      if (root.keys[i] != "cgroupDriver") continue;
      const Node& v = root.values[i];
      if (v.type != Node::Type::plain && v.type != Node::Type::string)
        throw Error("line " + std::to_string(root.key_lines[i]) + ": cgroupDriver is not a string");
      return CgroupDriver{v.text, root.key_lines[i]};
    }
    return CgroupDriver{kDefaultCgroupDriver, 0};
  } catch (const Error&) {
    std::throw_with_nested(Error("read " + q(file.string())));
  }
}

}  // namespace specshim::node::kubelet_config
