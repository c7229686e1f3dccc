// SPDX-License-Identifier: Apache-2.0
// env-devices' grammar (see specshim/modifiers/env_devices.h): how each vendor's
// runtime reads its variable, and the one table of the vendors specshim knows.
#include <algorithm>

#include "specshim/base/error.h"
#include "specshim/base/text.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/node/cdi.h"

namespace specshim::env_devices {

namespace {

// items splits a value on ',' and trims each item as Go's
// strings.TrimSpace does over the ASCII spaces (a name has no other);
// empty items are dropped.
std::vector<std::string_view> items(std::string_view value) {
  return split_list(value, " \t\n\r\v\f");
}

std::string too_many() {
  return "more than " + std::to_string(kMaxNames) + " device names";
}

// npu_id reads a decimal id of at most 4 digits (Ascend's runtime allows
// ids up to 128).
std::optional<unsigned> npu_id(std::string_view s) {
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  unsigned n = 0;
  for (char c : s) n = n * 10 + unsigned(c - '0');
  return n;
}

// The chip types of Ascend's device names, as its runtime matches them
// (`^Ascend(910|310B|310P|310)-(\d+)$`); `npu-N` names an id on any chip.
constexpr std::string_view kAscendChips[] = {"910", "310B", "310P", "310"};

}  // namespace

DeviceList parse_device_list(std::string_view value) {
  auto list_items = items(value);
  DeviceList list;
  if (list_items.empty() || std::find(list_items.begin(), list_items.end(), "void") != list_items.end()) return list;
  for (auto item : list_items) {
    if (item == "all" || item == "none") {
      list.what = item == "all" ? DeviceList::What::all : DeviceList::What::none;
      return list;
    }
  }
  list.what = DeviceList::What::names;
  for (auto item : list_items) {
    if (std::find(list.names.begin(), list.names.end(), item) != list.names.end()) continue;
    if (list.names.size() == kMaxNames) throw Error(too_many());
    list.names.emplace_back(item);
  }
  return list;
}

DeviceList parse_ascend_list(std::string_view value) {
  auto list_items = items(value);
  DeviceList list;
  if (list_items.empty() || std::find(list_items.begin(), list_items.end(), "void") != list_items.end()) return list;
  std::vector<unsigned> ids;
  std::string_view chip;  // of the first Ascend<chip>-N name
  auto add = [&](unsigned id) {
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) return;
    if (ids.size() == kMaxNames) throw Error(too_many());
    ids.push_back(id);
  };
  for (auto item : list_items) {
    std::string bad = cdi::quote(item) + " is not an NPU id, a range of ids (0-3) or a name (Ascend910-0, npu-0)";
    bool chip_name = item.rfind("Ascend", 0) == 0;  // Ascend<chip>-N; else npu-N, or an id or range
    if (chip_name || item.rfind("npu-", 0) == 0) {
      std::string_view rest = item.substr(chip_name ? 6 : 3);
      auto dash = rest.find('-');
      if (dash == std::string_view::npos) throw Error(bad);
      std::string_view type = rest.substr(0, dash);
      auto id = npu_id(rest.substr(dash + 1));
      if (!id ||
          (chip_name && std::find(std::begin(kAscendChips), std::end(kAscendChips), type) == std::end(kAscendChips)))
        throw Error(bad);
      if (chip_name) {
        if (!chip.empty() && type != chip)
          throw Error(cdi::quote(item) + " names an Ascend" + std::string(type) + " after Ascend" + std::string(chip) +
                      ": one list names one chip type");
        chip = type;
      }
      add(*id);
      continue;
    }
    auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      auto id = npu_id(item);
      if (!id) throw Error(bad);
      add(*id);
      continue;
    }
    auto first = npu_id(item.substr(0, dash)), last = npu_id(item.substr(dash + 1));
    if (!first || !last) throw Error(bad);
    if (*first > *last) throw Error(cdi::quote(item) + " is a range whose first id is above its last");
    for (unsigned id = *first; id <= *last; ++id) add(id);
  }
  std::sort(ids.begin(), ids.end());
  list.what = DeviceList::What::names;
  for (unsigned id : ids) list.names.push_back(std::to_string(id));
  return list;
}

DeviceList parse_list(Grammar grammar, std::string_view value) {
  return grammar == Grammar::ascend ? parse_ascend_list(value) : parse_device_list(value);
}

std::optional<std::string> value_of(Grammar grammar, const Spec& spec, std::string_view env) {
  if (grammar != Grammar::ascend) return spec.env(env);
  return spec.env(env, [](std::string_view value) { return !items(value).empty(); });
}

// kVendors: the variables whose runtime specshim knows.
//   NVIDIA: its runtime appends NVIDIA_VISIBLE_DEVICES=void once the devices
//   are in (research: envvar.md), so a later runtime does nothing more.
//   dockerd's `--gpus` sets it and adds NVIDIA's prestart hook, found on
//   dockerd's PATH as nvidia-container-runtime-hook (nvidia-container-toolkit
//   is its older name, still a link to it).
//   Ascend: tools inside the container read ASCEND_VISIBLE_DEVICES as the
//   physical ids of the NPUs they see (vLLM-Ascend maps its device i to
//   int(ids[i]) and stops on an empty value): `void` would break them, so it
//   is kept. Its runtime appends nothing either. Its device plugin's
//   resources are named per chip: huawei.com/Ascend910, Ascend310P, and
//   vNPU templates such as Ascend910-16c.
const std::vector<Vendor> kVendors = {
    {"NVIDIA_VISIBLE_DEVICES",
     Grammar::nvidia,
     After::void_value,
     {},
     {"nvidia-container-runtime-hook", "nvidia-container-toolkit"}},
    {"ASCEND_VISIBLE_DEVICES", Grammar::ascend, After::keep, {"huawei.com/Ascend*"}, {}},
};

const Vendor& vendor_of(std::string_view env) {
  static const Vendor other{"", Grammar::nvidia, After::void_value, {}, {}};
  for (const auto& v : kVendors)
    if (v.env == env) return v;
  return other;
}

const Vendor* legacy_hook_vendor(std::string_view name) {
  for (const auto& v : kVendors)
    if (std::find(v.legacy_hooks.begin(), v.legacy_hooks.end(), name) != v.legacy_hooks.end()) return &v;
  return nullptr;
}

std::string qualify(std::string_view kind, std::string_view item, std::string* why) {
  std::string reason;
  if (item.find('=') != std::string_view::npos) {
    auto q = cdi::parse_qualified_name(item, &reason);
    if (q) return q->str();
  } else {
    reason = cdi::check_device_name(item);
    if (reason.empty()) return std::string(kind) + "=" + std::string(item);
  }
  if (why) *why = reason;
  return {};
}

}  // namespace specshim::env_devices
