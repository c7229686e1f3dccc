// SPDX-License-Identifier: Apache-2.0
// Fuzzes every annotation a modifier reads. Annotations are tenant input: a
// pod's reach config.json through the handler's pod_annotations (and
// specshim-nri's [nri] pod-annotations), a container's own come with it. The
// first byte picks the key, the rest is its value, set on a spec beside a
// fixed, harmless set.
//
// The readers are called on that spec directly (identify, parse_device_ids,
// cdi::requested_devices, pod_identity::kind_of, patches::recorded), then the chain of
// every modifier that reads annotations runs on it in dry-run mode. Each
// either reads the value or refuses it with specshim::Error; any other
// exception, a crash or a sanitizer report is a finding. One key per input
// keeps the kubelet out: devices-from alone names no pod, and the pod alone
// asks for no devices, so no helper process is ever started.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/patches.h"
#include "specshim/node/cdi.h"
#include "specshim/node/pod_identity.h"

using namespace specshim;

namespace {

std::vector<std::string> keys() {
  std::vector<std::string> k = {device_plugin::kPod,
                                device_plugin::kDevicesFrom,
                                device_plugin::kDevicesFromPod,
                                "nvidia.com/gpu",  // a direct request: the resource's name
                                std::string(cdi::kAnnotationPrefix) + "fuzz",
                                cdi::kDevicesAnnotation,
                                "specshim.io/resources",
                                "specshim.io/passwd-name",
                                "specshim.io/passwd-home",
                                std::string(patches::kRecordAnnotation),
                                "example.com/patch-me"};
  for (const auto* row : pod_identity::kEngines)
    for (std::string_view key : {row->kind, row->pod_namespace, row->pod_name, row->pod_uid, row->container})
      k.emplace_back(key);
  k.emplace_back(pod_identity::kCrioLabels);
  return k;
}

// Scratch is a bundle (a rootfs with passwd and group), a CDI spec dir with
// one GPU and a kubelet root with a checkpoint, made once per process.
struct Scratch {
  std::filesystem::path dir = fuzz::make_scratch("annotations", {"bundle/rootfs/etc", "cdi", "kubelet/device-plugins"});
  std::string config;
  Scratch() {
    fuzz::write_bytes(dir / "bundle/rootfs/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    fuzz::write_bytes(dir / "bundle/rootfs/etc/group", "root:x:0:\n");
    fuzz::write_bytes(dir / "cdi/gpu.yaml",
                      "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n"
                      "    deviceNodes:\n    - path: /dev/nvidia0\n      hostPath: /dev/null\n      type: c\n"
                      "      major: 195\n      minor: 0\n");
    fuzz::write_bytes(dir / "kubelet/device-plugins/kubelet_internal_checkpoint",
                      R"({"Data": {"PodDeviceEntries": [], "RegisteredDevices": null}, "Checksum": 1})");
    std::string kubelet = (dir / "kubelet").string();
    config =
        "[chain]\norder = [\"passwd\", \"device-plugin\", \"cpuset\", \"cdi\", \"requirements\", \"patches\"]\n"
        "\n[passwd]\nallow-annotations = true\n"
        "\n[cdi]\nspec-dirs = [\"" +
        (dir / "cdi").string() + "\"]\ncache-dir = \"\"\n" + "\n[device-plugin]\nenabled = true\nkubelet-root = \"" +
        kubelet +
        "\"\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\n"
        "providers = [\"kubelet\", \"container-sync\", \"pod-sync\", \"direct\"]\n"
        "\n[cpuset]\nenabled = true\nkubelet-root = \"" +
        kubelet +
        "\"\n"
        "\n[[requirements]]\nname = \"gpu\"\nmatch = { cdi-kinds = [\"nvidia.com/gpu\"], resources = "
        "[\"nvidia.com/gpu\"] }\nadditional-gids = [44]\n"
        "\n[[patches]]\nname = \"p\"\nmatch = { annotations = { \"example.com/patch-me\" = \"*\" } }\n"
        "ops = [{ op = \"add\", path = \"/process/env/-\", value = \"PATCHED=1\" }]\n";
  }
};

void readers(const Spec& spec, const std::string& key, std::string_view value) {
  auto refused = [](auto&& read) {
    try {
      read();
    } catch (const Error&) {
    }
  };
  refused([&] { pod_identity::identify(spec); });
  refused([&] { device_plugin::parse_device_ids(key, value); });
  refused([&] { cdi::requested_devices(spec); });
  refused([&] { pod_identity::kind_of(spec); });
  refused([&] { patches::recorded(spec); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> all = keys();
  static const Scratch scratch;
  if (size == 0) return 0;
  const std::string& key = all[data[0] % all.size()];
  std::string value(reinterpret_cast<const char*>(data) + 1, size - 1);
  Json annotations = {{"example.com/other", "x"}};
  annotations[key] = value;
  Json doc = {{"ociVersion", "1.1.0"},
              {"process",
               {{"args", Json::array({"/bin/sh"})},
                {"cwd", "/"},
                {"user", {{"uid", 10001}, {"gid", 10001}}},
                {"env", Json::array({"PATH=/bin"})}}},
              {"root", {{"path", "rootfs"}}},
              {"annotations", annotations}};
  std::string text = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  Spec spec;
  try {
    spec = Spec::parse(text);
  } catch (const Error&) {
    std::abort();  // what nlohmann wrote, specshim's reader must read
  }
  readers(spec, key, value);
  fuzz::write_bytes(scratch.dir / "bundle/config.json", text);
  try {
    auto out = fuzz::dry_run(scratch.dir / "bundle", scratch.config);
    (void)out.spec.serialize();
  } catch (const Error&) {
  }
  return 0;
}
