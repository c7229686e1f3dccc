// SPDX-License-Identifier: Apache-2.0
// The devices-cgroup modifier: a device node in the container (linux.devices)
// is only useful if the devices cgroup lets the container open it. For every
// b/c/u entry this adds a matching allow rule to linux.resources.devices
// unless the rules already grant that access, and it validates every rule so
// a bad one fails here with its index instead of inside runc. It never adds a
// wildcard rule, never overrides a deny that names the device's major, and leaves
// rules it did not add untouched and in order. See docs/devices-cgroup.md.
#include <fmt/format.h>

#include <algorithm>
#include <bitset>

#include "specshim/base/device_rules.h"
#include "specshim/base/error.h"
#include "specshim/base/host_device.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/factories.h"
#include "specshim/node/userns.h"

namespace specshim {
namespace {

std::string at(std::string_view list, std::size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "]";
}

// number reads a linux.devices entry's optional major or minor (absent or null: unknown).
std::optional<std::int64_t> number(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  bool fits = it->is_number_unsigned() ? it->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)
                                       : it->is_number_integer() && it->get<std::int64_t>() >= 0;
  if (!fits) throw Error("`" + where + "." + key + "`: " + it->dump() + " is not an integer >= 0");
  return it->get<std::int64_t>();
}

bool matches(const DeviceRule& r, char type, std::int64_t major, std::int64_t minor) {
  return (r.type == 'a' || r.type == type) && (!r.major || *r.major == major) && (!r.minor || *r.minor == minor);
}

bool names_exactly(const DeviceRule& r, char type, std::int64_t major, std::int64_t minor) {
  return r.type == type && r.major == major && r.minor == minor;
}

std::bitset<3> bits(const std::string& access) {
  std::bitset<3> b;
  for (char c : access) b.set(c == 'r' ? 0 : c == 'w' ? 1 : 2);
  return b;
}

// granted is the access the rules leave for one device: rules apply in order
// and a later rule overrides an earlier one for the permissions it lists.
std::bitset<3> granted(const std::vector<DeviceRule>& rules, char type, std::int64_t major, std::int64_t minor) {
  std::bitset<3> g;
  for (const auto& r : rules) {
    if (!matches(r, type, major, minor)) continue;
    std::bitset<3> b = bits(r.access);
    g = r.allow ? (g | b) : (g & ~b);
  }
  return g;
}

struct Entry {
  std::string path;
  char type;  // b, c, u or p
  std::int64_t major;
  std::int64_t minor;
  Json fill = Json::object();                     // what the entry left out, from the host node
  std::optional<HostDevice> host = std::nullopt;  // the host node at path, when looked up to fill
};

// read_entry validates linux.devices[i] and finds what it leaves out (type,
// major, minor) from the host node at its path, for the caller to write back
// so runc sees a complete entry.
Entry read_entry(const Json& j, const std::string& where, bool follow_outside_dev) {
  if (!j.is_object()) throw Error("`" + where + "`: want an object, got " + shown_json(j));
  auto p = j.find("path");
  if (p == j.end() || !p->is_string() || p->get_ref<const std::string&>().empty() ||
      p->get_ref<const std::string&>()[0] != '/' || contains_control(p->get_ref<const std::string&>()))
    throw Error("`" + where + ".path`: want an absolute path");
  Entry e{p->get<std::string>(), 0, 0, 0};
  std::string type;
  if (auto t = j.find("type"); t != j.end() && !t->is_null()) {
    if (!t->is_string()) throw Error("`" + where + ".type`: " + t->dump() + " is not b, c, u or p");
    type = t->get<std::string>();
    if (!type.empty() && type != "b" && type != "c" && type != "u" && type != "p")
      throw Error("`" + where + ".type`: " + t->dump() + " is not b, c, u or p");
  }
  auto major = number(j, "major", where);
  auto minor = number(j, "minor", where);
  bool complete = !type.empty() && (type == "p" || (major && minor));
  if (!complete) {
    HostDevice h;
    try {
      h = resolve_device(e.path, "/dev", follow_outside_dev);
    } catch (...) {
      std::throw_with_nested(Error("complete `" + where + "` (" + e.path + ")"));
    }
    e.host = h;
    std::string host_type(1, h.type);
    if (!type.empty() && type != host_type && !(type == "u" && host_type == "c"))
      throw Error("`" + where + "` (" + e.path + "): type " + type + ", but the host node is of type " + host_type);
    if (type.empty()) e.fill["type"] = type = host_type;
    if (type != "p" && !major) e.fill["major"] = *(major = h.major);
    if (type != "p" && !minor) e.fill["minor"] = *(minor = h.minor);
  }
  e.type = type[0];
  e.major = major.value_or(0);
  e.minor = minor.value_or(0);
  return e;
}

// check_bound_node: in a user namespace runc bind-mounts the host file at
// the entry's path (userns.h), so that file must be the device the entry
// and its rule name; anything else would give the container another device
// than the one it was given, or fail inside runc.
void check_bound_node(const Entry& e, const std::string& where) {
  if (e.type == 'p') return;
  std::string found;
  try {
    HostDevice h = e.host ? *e.host : resolve_device(e.path, "/dev", true);  // looked up once
    if ((h.type == e.type || (e.type == 'u' && h.type == 'c')) && h.major == e.major && h.minor == e.minor) return;
    found = fmt::format("the host's `{}` is {} {}:{}", e.path, h.type, h.major, h.minor);
  } catch (const Error& err) {
    found = describe(err);
  }
  throw Error(
      fmt::format("`{}` ({} {}:{} at `{}`): the container has a user namespace, where runc bind-mounts the "
                  "host file at the entry's path instead of creating the node, and {}; a node whose host file "
                  "is elsewhere must come as a bind mount of that file (specshim's cdi and device-plugin write "
                  "it so)",
                  where, e.type, e.major, e.minor, e.path, found));
}

class DevicesCgroup : public Modifier {
 public:
  explicit DevicesCgroup(bool follow_outside_dev) : follow_outside_dev_(follow_outside_dev) {}

  std::string_view name() const override { return "devices-cgroup"; }
  bool idempotent() const override { return true; }

  void apply(Spec& spec, Context&) override {
    std::vector<DeviceRule> rules = read_device_rules(spec);
    const Json* found = spec.find({"linux", "devices"});
    if (!found || found->is_null() || (found->is_array() && found->empty())) return;
    // Read through a const reference and written only where something is
    // added: non-const access makes the chain copy the spec to compare it,
    // and most creates add nothing.
    const Json& devices = found->is_array() ? *found : spec.array_at({"linux", "devices"});  // throws: wrong type
    bool all = allows_all(rules);
    bool userns = userns::has_user_namespace(spec);
    // Appended only after the loop: creating linux.resources inserts into the
    // `linux` object, which would leave `devices` dangling mid-iteration.
    std::vector<Json> additions;
    std::vector<std::pair<std::size_t, Json>> fills;  // by index in linux.devices
    for (std::size_t i = 0; i < devices.size(); ++i) {
      Entry e = read_entry(devices[i], at("linux.devices", i), follow_outside_dev_);
      if (userns) check_bound_node(e, at("linux.devices", i));
      if (!e.fill.empty()) fills.emplace_back(i, std::move(e.fill));
      if (all || e.type == 'p') continue;
      char type = e.type == 'u' ? 'c' : e.type;
      std::string wanted = "rwm";
      for (const auto& r : rules)
        if (r.allow && names_exactly(r, type, e.major, e.minor)) wanted = r.access;
      if ((bits(wanted) & ~granted(rules, type, e.major, e.minor)).none()) continue;
      // A deny with a major number was aimed at this device (or its driver);
      // only type-wide and global denies (the default deny-all) are overridden.
      auto deny = std::find_if(rules.begin(), rules.end(), [&](const DeviceRule& r) {
        return !r.allow && r.major && matches(r, type, e.major, e.minor);
      });
      if (deny != rules.end()) {
        log::debug("devices-cgroup: {} ({}:{}) is denied by a rule naming its major; no allow rule added", e.path,
                   e.major, e.minor);
        continue;
      }
      DeviceRule added{true, type, e.major, e.minor, wanted};
      rules.push_back(added);
      additions.push_back(Json{
          {"allow", true}, {"type", std::string(1, type)}, {"major", e.major}, {"minor", e.minor}, {"access", wanted}});
    }
    if (!fills.empty()) {
      Json& entries = spec.array_at({"linux", "devices"});
      for (auto& [i, fill] : fills)
        for (auto& [key, value] : fill.items()) entries[i][key] = std::move(value);
    }
    if (additions.empty()) return;
    Json& allow = spec.array_at({"linux", "resources", "devices"});
    for (auto& a : additions) allow.push_back(std::move(a));
  }

 private:
  bool follow_outside_dev_;
};

}  // namespace

std::unique_ptr<Modifier> make_devices_cgroup(config::Section& s) {
  if (s.boolean("enabled") == false) return nullptr;
  bool follow = s.boolean("follow-symlinks-outside-dev").value_or(false);
  return std::make_unique<DevicesCgroup>(follow);
}

}  // namespace specshim
