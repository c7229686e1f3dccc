// SPDX-License-Identifier: Apache-2.0
// specshim under a vendor's hook name (env_devices::Vendor::legacy_hooks):
// the stand-in that lets dockerd offer `--gpus` on a node or dev box without
// NVIDIA's toolkit. dockerd registers its `nvidia` device driver only when
// nvidia-container-runtime-hook is on its PATH, and then adds it to the spec
// as a prestart hook beside NVIDIA_VISIBLE_DEVICES. specshim's env-devices
// takes the variable and removes the hook, so with specshim as the runtime
// this program never runs. When it does run, nothing took the request: the
// container's runtime is not specshim, or no [[env-devices]] entry owns the
// variable. A request then fails the create, naming why, rather than a
// container starting without the GPUs it asked for. A spec that asks for
// nothing (`void`, unset: `--gpus 0`) passes. docs/env-devices.md, "Docker's --gpus".
#include <iostream>

#include "hook_state.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/create.h"
#include "specshim/modifiers/env_devices.h"
#include "verbs.h"

namespace specshim::shim {
namespace {

std::string_view last_component(std::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

bool runs_as_legacy_hook(std::string_view argv0) {
  return env_devices::legacy_hook_vendor(last_component(argv0)) != nullptr;
}

int legacy_hook_main(const std::vector<std::string>& argv) {
  std::string_view name = last_component(argv[0]);
  const env_devices::Vendor& vendor = *env_devices::legacy_hook_vendor(name);
  // NVIDIA's hook injects at prestart only; its other stages do nothing.
  if (argv.size() < 2 || argv[1] != "prestart") return 0;
  std::string id = "?";
  try {
    HookState state = read_hook_state();
    id = state.id;
    Spec spec = create::BundleDir(state.bundle).read();
    auto value = env_devices::value_of(vendor.grammar, spec, vendor.env);
    if (!value || env_devices::parse_list(vendor.grammar, *value).what == env_devices::DeviceList::What::nothing)
      return 0;
    std::cerr << "specshim (installed as " << name << "): container " << id << " asks for devices with " << vendor.env
              << "=" << *value << " (docker --gpus), and nothing gave them: " << name
              << " is specshim's stand-in, which injects nothing. Create the container with specshim as its runtime "
                 "(dockerd: \"default-runtime\") and an [[env-devices]] entry for "
              << vendor.env << " in specshim's config, which removes this hook and gives the devices\n";
  } catch (const std::exception& e) {
    std::cerr << "specshim (installed as " << name << "): container " << id << ": " << describe(e) << "\n";
  }
  return 1;
}

}  // namespace specshim::shim
