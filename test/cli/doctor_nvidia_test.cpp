// SPDX-License-Identifier: Apache-2.0
// specshim doctor on fake hosts with NVIDIA's driver: the CDI spec of
// nvidia.com/gpu against the driver's version and GPUs (fresh, stale,
// missing), and the unit that regenerates it at boot.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "doctor_host.h"
#include "host_device.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using nlohmann::json;

namespace {

// driver writes the driver's version file and its GPUs' information files.
void driver(const FakeHost& h, const std::string& version, const std::vector<std::pair<std::string, int>>& gpus) {
  write_file(h.root / "proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version +
                 "  Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  for (const auto& [uuid, minor] : gpus)
    list_gpu(h.root / "proc", "0000:0" + std::to_string(minor) + ":00.0", uuid, minor);
}

// nvidia_spec writes /var/run/cdi/nvidia.yaml as nvidia-ctk names devices
// (index, UUID, all), its libraries those of driver `version`.
void nvidia_spec(const FakeHost& h, const std::string& version, const std::vector<std::pair<std::string, int>>& gpus) {
  std::string devices;
  for (const auto& [uuid, minor] : gpus)
    for (const std::string& name : {std::to_string(minor), uuid})
      devices += "  - name: \"" + name + "\"\n    containerEdits:\n      deviceNodes:\n        - path: /dev/nvidia" +
                 std::to_string(minor) + "\n";
  write_file(h.root / "var/run/cdi/nvidia.yaml",
             "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n" + devices +
                 "containerEdits:\n  deviceNodes:\n    - path: /dev/nvidiactl\n  mounts:\n"
                 "    - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so." +
                 version + "\n      containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so." + version +
                 "\n      options: [ro, nosuid, nodev, bind]\n"
                 "    - hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so." +
                 version + "\n      containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + version +
                 "\n      options: [ro, nosuid, nodev, bind]\n");
}

// unit installs a systemd unit file, enabled through a link in multi-user.target.wants.
void unit(const FakeHost& h, const std::string& name, bool enabled) {
  write_file(h.root / "usr/lib/systemd/system" / name, "[Service]\n");
  if (!enabled) return;
  fs::create_directories(h.root / "etc/systemd/system/multi-user.target.wants");
  fs::create_symlink("/usr/lib/systemd/system/" + name, h.root / "etc/systemd/system/multi-user.target.wants" / name);
}

const std::vector<std::pair<std::string, int>> kTwo = {{"GPU-0a1b2c3d-0000-4000-8000-00000000000a", 0},
                                                       {"GPU-0a1b2c3d-0000-4000-8000-00000000000b", 1}};

}  // namespace

TEST_CASE("doctor: NVIDIA's CDI spec that describes the driver and its GPUs is ok, its refresh unit named") {
  FakeHost h;
  driver(h, "550.54.15", kTwo);
  nvidia_spec(h, "550.54.15", kTwo);
  unit(h, "nvidia-cdi-refresh.service", true);
  json report = h.report();
  REQUIRE_THAT(report,
               HasFinding("cdi", "ok", "var/run/cdi/nvidia.yaml: describes NVIDIA driver 550.54.15 and its 2 GPUs"));
  REQUIRE_THAT(report, HasFinding("cdi", "info", "nvidia-cdi-refresh.service regenerates NVIDIA's CDI spec at boot"));
  REQUIRE_THAT(report, !HasFinding("cdi", "fail", "nvidia"));
  REQUIRE_THAT(report, !HasFinding("cdi", "warn", "NVIDIA"));
}

TEST_CASE("doctor: NVIDIA's CDI spec of another driver, without a GPU the driver lists, is stale: a problem") {
  FakeHost h;
  auto three = kTwo;
  three.emplace_back("GPU-0a1b2c3d-0000-4000-8000-00000000000c", 2);
  driver(h, "555.42.02", three);
  // Made before the upgrade and the third GPU; and naming one since removed.
  auto old = kTwo;
  old.emplace_back("GPU-0a1b2c3d-0000-4000-8000-0000000000ff", 3);
  nvidia_spec(h, "550.54.15", old);
  json report = h.report();
  json f = finding(report, "cdi", "var/run/cdi/nvidia.yaml: stale");
  REQUIRE(f["status"] == "fail");
  std::string text = f["text"];
  CHECK_THAT(text, Catch::Contains("its library mounts are driver 550.54.15's; the driver is 555.42.02"));
  CHECK_THAT(text, Catch::Contains("it has no device for GPU-0a1b2c3d-0000-4000-8000-00000000000c (/dev/nvidia2)"));
  CHECK_THAT(
      text, Catch::Contains("its device `GPU-0a1b2c3d-0000-4000-8000-0000000000ff` is a GPU the driver does not list"));
  CHECK_THAT(text, Catch::Contains("run `nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`"));
  REQUIRE_THAT(report, HasFinding("cdi", "warn", "nothing regenerates NVIDIA's CDI spec at boot"));
}

TEST_CASE("doctor: NVIDIA's driver without a spec of its GPUs is a warning, and so is an installed unit not enabled") {
  FakeHost h;
  driver(h, "550.54.15", kTwo);
  unit(h, "specshim-nvidia-cdi.service", false);
  json report = h.report();
  REQUIRE_THAT(report,
               HasFinding("cdi", "warn",
                          "NVIDIA driver 550.54.15 is loaded, but no spec file defines `nvidia.com/gpu` devices"));
  REQUIRE_THAT(report, HasFinding("cdi", "warn",
                                  "specshim-nvidia-cdi.service is installed but not enabled: `systemctl enable --now "
                                  "specshim-nvidia-cdi.path specshim-nvidia-cdi.service`"));
}

TEST_CASE("doctor: without NVIDIA's driver nothing is said about its spec") {
  FakeHost h;
  json report = h.report();
  REQUIRE_THAT(report, !HasFinding("cdi", "warn", "NVIDIA"));
  REQUIRE_THAT(report, !HasFinding("cdi", "info", "NVIDIA"));
}
