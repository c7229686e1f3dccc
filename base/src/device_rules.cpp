// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/device_rules.h"

#include "specshim/base/error.h"

namespace specshim {
namespace {

constexpr std::string_view kRules = "linux.resources.devices";
constexpr std::int64_t kMaxNumber = 0xffffffffLL;

// number reads major or minor: absent or null is the wildcard, else an
// integer 0..2^32-1 (a negative one would be a wildcard in runc's v2 filter
// and an error in the v1 kernel file).
std::optional<std::int64_t> number(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  bool fits = it->is_number_unsigned()
                  ? it->get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxNumber)
                  : it->is_number_integer() && it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() <= kMaxNumber;
  if (!fits) throw Error("`" + where + "." + key + "`: " + it->dump() + " is not an integer 0..4294967295 or null");
  return it->get<std::int64_t>();
}

DeviceRule read_rule(const Json& j, const std::string& where) {
  if (!j.is_object()) throw Error("`" + where + "`: want an object, got " + shown_json(j));
  DeviceRule r;
  auto a = j.find("allow");
  if (a == j.end() || !a->is_boolean())
    throw Error("`" + where + ".allow`: " + (a == j.end() ? std::string("missing") : a->dump()) +
                ", want true or false");
  r.allow = a->get<bool>();
  if (auto t = j.find("type"); t != j.end() && !t->is_null()) {
    std::string type = t->is_string() ? t->get<std::string>() : "?";
    if (type.empty()) type = "a";  // runc: an empty type is "a"
    if (type != "a" && type != "b" && type != "c")
      throw Error("`" + where + ".type`: " + t->dump() + " is not \"a\", \"b\" or \"c\"");
    r.type = type[0];
  }
  r.major = number(j, "major", where);
  r.minor = number(j, "minor", where);
  auto access = j.find("access");
  const std::string* text = access != j.end() && access->is_string() ? &access->get_ref<const std::string&>() : nullptr;
  if (!text || text->empty() || text->find_first_not_of("rwm") != std::string::npos)
    throw Error("`" + where + ".access`: " + (access == j.end() ? std::string("missing") : access->dump()) +
                " is not a non-empty combination of r, w and m");
  r.access.clear();
  for (char c : {'r', 'w', 'm'})
    if (text->find(c) != std::string::npos) r.access += c;
  return r;
}

}  // namespace

std::vector<DeviceRule> read_device_rules(const Spec& spec) {
  std::vector<DeviceRule> rules;
  const Json* list = spec.find({"linux", "resources", "devices"});
  if (!list || list->is_null()) return rules;
  if (!list->is_array()) throw Error("`" + std::string(kRules) + "`: want a list, got " + list->dump());
  rules.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i)
    rules.push_back(read_rule((*list)[i], std::string(kRules) + "[" + std::to_string(i) + "]"));
  return rules;
}

bool allows_all(const std::vector<DeviceRule>& rules) {
  for (auto r = rules.rbegin(); r != rules.rend(); ++r) {
    if (!r->allow) return false;
    if (r->type == 'a' && !r->major && !r->minor) return r->access == "rwm";
  }
  return false;
}

}  // namespace specshim
