// SPDX-License-Identifier: Apache-2.0
// Fuzzes the device-list grammar of env-devices (a variable's value is tenant
// input: images and pod specs set it). A parsed list holds only trimmed,
// non-empty names, each once, none `void`, `all` or `none` (those decide the
// whole list); joining its names and parsing again gives the same list; and
// every name either qualifies to a valid CDI name or is refused with a reason.
//
// Then the closed set: the same value, as the env of a sibling created
// outside CRI whose grant is its source's one GPU (a direct request the
// checkpoint answers), through device-plugin, env-devices (clamp) and cdi on
// a spec of three GPUs. Whatever the value asks for, a create that succeeds
// gives no GPU node but the granted one, and a device outside the grant is
// never injected.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz_support.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/node/cdi.h"

using namespace specshim;
using namespace specshim::env_devices;

namespace {

// GPU 0 is the checkpoint's one grant.
const char* kGranted = fuzz::kGrantedGpu;
const char* kCheckpoint = fuzz::kOneGpuCheckpoint;

std::filesystem::path sibling_bundle() {
  auto dir = fuzz::make_scratch("envdev", {"rootfs", "cdi", "kubelet/device-plugins"});
  std::string y = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n";
  for (int i = 0; i < 3; ++i)
    for (std::string name :
         {std::to_string(i), std::string("GPU-4a3b2c1d-0000-4000-8000-00000000000") + std::to_string(i)})
      y += "- name: \"" + name + "\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia" +
           std::to_string(i) +
           "\n      hostPath: /dev/null\n      type: c\n      major: 195\n      minor: " + std::to_string(i) + "\n";
  y += "- name: all\n  containerEdits:\n    deviceNodes:\n";
  for (int i = 0; i < 3; ++i)
    y += "    - path: /dev/nvidia" + std::to_string(i) +
         "\n      hostPath: /dev/null\n      type: c\n      major: 195\n      minor: " + std::to_string(i) + "\n";
  fuzz::write_bytes(dir / "cdi/nvidia.yaml", y);
  fuzz::write_bytes(dir / "kubelet/device-plugins/kubelet_internal_checkpoint", kCheckpoint);
  return dir;
}

void closed_set(std::string_view value) {
  static const std::filesystem::path bundle = sibling_bundle();
  static const std::string config =
      "[chain]\norder = [\"device-plugin\", \"env-devices\", \"cdi\"]\n\n[cdi]\nspec-dirs = [\"" +
      (bundle / "cdi").string() + "\"]\ncache-dir = \"\"\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" +
      (bundle / "kubelet").string() +
      "\"\ndirect-requires-pod-devices = false\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\n"
      "providers = [\"direct\"]\n\n[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
      "on-excess = \"clamp\"\noutside-kubernetes = \"honour\"\nkubelet-root = \"" +
      (bundle / "kubelet").string() + "\"\n";
  Json spec = {{"ociVersion", "1.1.0"},
               {"process",
                {{"args", Json::array({"/bin/sh"})},
                 {"cwd", "/"},
                 {"env", Json::array({"NVIDIA_VISIBLE_DEVICES=" + std::string(value)})}}},
               {"root", {{"path", "rootfs"}}},
               {"annotations",
                {{"specshim.io/pod", "team-a/trainer"}, {"nvidia.com/gpu", std::string("[\"") + kGranted + "\"]"}}}};
  fuzz::write_bytes(bundle / "config.json", spec.dump());
  create::Outcome out;
  try {
    out = fuzz::dry_run(bundle, config);
  } catch (const Error&) {
    return;  // refused: nothing given
  }
  const Json* devices = out.spec.find({"linux", "devices"});
  if (!devices) return;
  for (const auto& d : *devices)
    if (d.value("major", 0) == 195 && d.value("minor", -1) != 0) std::abort();  // beyond the grant
}

// ascend checks Ascend's grammar: ids come out as canonical decimals, once
// each, ascending, and a list of them reads back the same.
void ascend(std::string_view text) {
  DeviceList list;
  try {
    list = parse_ascend_list(text);
  } catch (const Error&) {
    return;
  }
  if (list.what != DeviceList::What::names && list.what != DeviceList::What::nothing) std::abort();
  if ((list.what == DeviceList::What::names) == list.names.empty()) std::abort();
  std::string joined;
  unsigned long last = 0;
  for (std::size_t i = 0; i < list.names.size(); ++i) {
    const std::string& n = list.names[i];
    if (n.empty() || n.size() > 4 || (n.size() > 1 && n[0] == '0') ||
        !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
      std::abort();
    unsigned long id = std::stoul(n);
    if (i > 0 && id <= last) std::abort();
    last = id;
    joined += (i ? "," : "") + n;
  }
  if (list.what == DeviceList::What::names && !(parse_ascend_list(joined) == list)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  DeviceList list;
  try {
    list = parse_device_list(text);
  } catch (const Error&) {
    return 0;
  }
  if (list.what != DeviceList::What::names && !list.names.empty()) std::abort();
  if (list.what == DeviceList::What::names && list.names.empty()) std::abort();
  std::string joined;
  for (std::size_t i = 0; i < list.names.size(); ++i) {
    const std::string& n = list.names[i];
    if (n.empty() || n == "void" || n == "all" || n == "none" || n.find(',') != std::string::npos) std::abort();
    if (n.front() == ' ' || n.back() == ' ' || n.front() == '\t' || n.back() == '\t') std::abort();
    if (std::count(list.names.begin(), list.names.end(), n) != 1) std::abort();
    joined += (i ? "," : "") + n;
    std::string why;
    std::string q = qualify("nvidia.com/gpu", n, &why);
    if (q.empty() == why.empty()) std::abort();
    if (!q.empty() && !cdi::parse_qualified_name(q)) std::abort();
  }
  if (list.what == DeviceList::What::names && !(parse_device_list(joined) == list)) std::abort();
  ascend(text);
  if (size <= 256 && std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; }))
    closed_set(text);
  return 0;
}
