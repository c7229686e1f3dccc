// SPDX-License-Identifier: Apache-2.0
// The chain's device nodes and devices-cgroup rules in a ContainerAdjustment,
// and what NRI's implicit allow rule per added device lets through.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adjust_parts.h"
#include "specshim/base/device_rules.h"
#include "specshim/base/log.h"

namespace specshim::nri {
namespace {

std::vector<DeviceRule> rules_of(const Json& spec) {
  Json j = {{"linux", {{"resources", {{"devices", array_at(spec, {"linux", "resources", "devices"})}}}}}};
  return read_device_rules(Spec::parse(j.dump()));
}

// allows: whether rules (in order, the last match deciding, as the devices
// cgroup applies them over a default deny) allow every letter of access on
// the device.
bool allows(const std::vector<DeviceRule>& rules, char type, std::int64_t major, std::int64_t minor,
            std::string_view access) {
  for (char letter : access) {
    bool allowed = false;
    for (const auto& r : rules) {
      bool hits = (r.type == 'a' || r.type == type) && (!r.major || *r.major == major) &&
                  (!r.minor || *r.minor == minor) && r.access.find(letter) != std::string::npos;
      if (hits) allowed = r.allow;
    }
    if (!allowed) return false;
  }
  return true;
}

// same_node: the same device node at the same path, whatever its mode and owner.
bool same_node(const Json& a, const Json& b) {
  for (const char* key : {"path", "type", "major", "minor"})
    if (a.value(key, Json()) != b.value(key, Json())) return false;
  return true;
}

// implicit_access: the allow rule NRI adds with each device it adds
// (AdjustDevices): "rw" for a character device, "rwm" for a block device.
std::string implicit_access(char type) {
  return type == 'b' ? "rwm" : "rw";
}

std::string rule_text(const DeviceRule& r) {
  auto num = [](const std::optional<std::int64_t>& n) { return n ? std::to_string(*n) : std::string("*"); };
  return std::string(r.allow ? "allow " : "deny ") + r.type + " " + num(r.major) + ":" + num(r.minor) + " " + r.access;
}

}  // namespace

void adjust_devices(const Json& before, const Json& after, api::ContainerAdjustment& adj, const Level& level,
                    const Refusal& refuse) {
  auto b = by_key(array_at(before, {"linux", "devices"}), "path");
  auto a = by_key(array_at(after, {"linux", "devices"}), "path");
  std::vector<DeviceRule> final_rules = rules_of(after);
  std::vector<DeviceRule> implicit;  // the rules NRI will add for the devices below
  for (const auto& d : array_at(after, {"linux", "devices"})) {
    if (!d.is_object() || !d.contains("path")) continue;
    std::string path = d["path"].get<std::string>();
    auto it = b.find(path);
    if (it != b.end() && it->second == d) continue;
    if (it != b.end() && same_node(it->second, d)) {
      // Only its mode or owner differ (a CDI spec's node that containerd's
      // own CDI added first, without them). NRI can only add the device
      // again, with a second allow rule: the node stays as the runtime made it.
      log::info("nri: {}: the chain's file mode and owner are not passed on ({}: NRI adds a device again whole)", path,
                level.runtime);
      continue;
    }
    std::string type = d.value("type", "c");
    std::int64_t major = d.value("major", std::int64_t{0}), minor = d.value("minor", std::int64_t{0});
    char t = type.empty() ? 'c' : type[0];
    std::string access = implicit_access(t);
    if (t == 'c' || t == 'b') {
      if (!allows(final_rules, t, major, minor, access))
        refuse("linux.devices (" + path + ")", "NRI gives each device it adds an allow rule for `" + access +
                                                   "`, and the chain's rules do not allow " + "that on " + type + " " +
                                                   std::to_string(major) + ":" + std::to_string(minor) +
                                                   ": the container would get more than the chain granted");
      implicit.push_back(DeviceRule{true, t, major, minor, access});
    }
    auto* out = adj.mutable_linux()->add_devices();
    out->set_path(path);
    out->set_type(type);
    out->set_major(major);
    out->set_minor(minor);
    if (d.contains("fileMode")) out->mutable_file_mode()->set_value(d["fileMode"].get<std::uint32_t>());
    if (d.contains("uid")) out->mutable_uid()->set_value(d["uid"].get<std::uint32_t>());
    if (d.contains("gid")) out->mutable_gid()->set_value(d["gid"].get<std::uint32_t>());
  }
  for (auto& [path, d] : b)
    if (!a.count(path)) adj.mutable_linux()->add_devices()->set_path("-" + path);

  std::vector<DeviceRule> old_rules = rules_of(before);
  bool prefix =
      final_rules.size() >= old_rules.size() && std::equal(old_rules.begin(), old_rules.end(), final_rules.begin());
  if (!prefix) refuse("linux.resources.devices", "NRI adds devices-cgroup rules; it cannot remove or change one");
  for (std::size_t i = old_rules.size(); i < final_rules.size(); ++i) {
    const DeviceRule& r = final_rules[i];
    if (level.device_rules()) {
      auto* out = adj.mutable_linux()->mutable_resources()->add_devices();
      out->set_allow(r.allow);
      out->set_type(std::string(1, r.type));
      if (r.major) out->mutable_major()->set_value(*r.major);
      if (r.minor) out->mutable_minor()->set_value(*r.minor);
      out->set_access(r.access);
      continue;
    }
    // Before v0.10 the runtime applies no rule of an adjustment, only the
    // allow rule of each device added. An allow rule for such a device is
    // passed on by it: whole, or without the letters it lacks (`m` of a
    // CDI node's "rwm"), which narrows what the container gets, never widens.
    auto same = std::find_if(implicit.begin(), implicit.end(), [&](const DeviceRule& i) {
      return r.allow && r.type == i.type && r.major == i.major && r.minor == i.minor;
    });
    if (same != implicit.end() && r.access.find_first_not_of(same->access) != std::string::npos)
      log::info("nri: {} is passed on as `{}` ({}: an added device's own allow rule)", rule_text(r), same->access,
                level.runtime);
    if (same == implicit.end())
      refuse("linux.resources.devices (" + rule_text(r) + ")",
             "NRI before v0.10 (containerd 2.2) applies no devices-cgroup rule of an adjustment, only an allow rule "
             "for each device added");
  }
}

}  // namespace specshim::nri
