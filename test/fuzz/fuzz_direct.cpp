// SPDX-License-Identifier: Apache-2.0
// Fuzzes device-plugin's direct requests (docs/device-plugin.md, "direct"):
// an annotation whose key is a resource's name and whose value, tenant
// input, is a JSON list of device IDs. parse_device_ids either refuses the
// value with an Error naming the annotation, in a message of bounded size,
// or returns at most 1024 distinct IDs, each a non-empty string of at most
// 256 printable bytes, that read back the same from their own JSON list.
// The value nested 60,000 lists deep is refused by its depth alone: libFuzzer
// keeps its inputs near 4 KiB, and run-fuzzer.sh leaves seeds over 64 KiB out,
// so the depth that overflowed the stack is built here around each input.
//
// Then the same value as the request of a container created outside CRI,
// through device-plugin alone (on-error = "fail"), whose checkpoint answered
// one GPU: a create that succeeds got that answer or none, never another
// device, and never for a value parse_device_ids refuses. A chain run costs
// far more than a parse, so it takes every accepted value and the refused
// ones of at most 16 bytes (the refusal itself is parse_device_ids').
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz_support.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/device_plugin.h"

using namespace specshim;

namespace {

constexpr const char* kKey = "nvidia.com/gpu";

// check_ids reports whether parse_device_ids accepts value.
bool check_ids(std::string_view value) {
  std::vector<std::string> ids;
  try {
    ids = device_plugin::parse_device_ids(kKey, value);
  } catch (const Error& e) {
    std::string_view msg = e.what();
    if (msg.rfind("annotation `nvidia.com/gpu`: ", 0) != 0 || msg.size() > 1024) std::abort();
    return false;
  }
  if (ids.size() > 1024) std::abort();
  for (const auto& id : ids) {
    if (id.empty() || id.size() > 256 || contains_control(id)) std::abort();
    if (std::count(ids.begin(), ids.end(), id) != 1) std::abort();
  }
  if (device_plugin::parse_device_ids(kKey, Json(ids).dump()) != ids) std::abort();
  return true;
}

void through_chain(std::string_view value) {
  static const std::filesystem::path bundle = [] {
    auto dir = fuzz::make_scratch("direct", {"rootfs", "kubelet/device-plugins"});
    fuzz::write_bytes(dir / "kubelet/device-plugins/kubelet_internal_checkpoint", fuzz::kOneGpuCheckpoint);
    return dir;
  }();
  static const std::string config =
      "[chain]\norder = [\"device-plugin\"]\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" +
      (bundle / "kubelet").string() +
      "\"\ndirect-requires-pod-devices = false\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\n"
      "providers = [\"direct\"]\n";
  Json spec = {{"ociVersion", "1.1.0"},
               {"process", {{"args", Json::array({"/bin/sh"})}, {"cwd", "/"}, {"env", Json::array()}}},
               {"root", {{"path", "rootfs"}}},
               {"annotations", {{"specshim.io/pod", "team-a/trainer"}, {kKey, std::string(value)}}}};
  std::string text = spec.dump(-1, ' ', false, Json::error_handler_t::replace);
  fuzz::write_bytes(bundle / "config.json", text);
  create::Outcome out;
  try {
    out = fuzz::dry_run(bundle, config);
  } catch (const Error&) {
    return;  // refused: nothing given
  }
  auto env = out.spec.env("NVIDIA_VISIBLE_DEVICES");
  if (env && *env != fuzz::kGrantedGpu) std::abort();  // an answer the checkpoint never gave
  // The value the chain read: bytes that are not UTF-8 were replaced when
  // config.json was written.
  std::string seen = Json::parse(text)["annotations"][kKey];
  try {
    device_plugin::parse_device_ids(kKey, seen);
  } catch (const Error&) {
    std::abort();  // a malformed request did not fail the create
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view value(reinterpret_cast<const char*>(data), size);
  const std::string deep = std::string(60000, '[') + std::string(value) + std::string(60000, ']');
  try {
    device_plugin::parse_device_ids(kKey, deep);
    std::abort();
  } catch (const Error& e) {
    if (std::string_view(e.what()) != "annotation `nvidia.com/gpu`: nested deeper than 512 levels") std::abort();
  }
  if (check_ids(value) || size <= 16) through_chain(value);
  return 0;
}
