// SPDX-License-Identifier: Apache-2.0
// specshim doctor, the real binary, against fake host trees (--host-root).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "doctor_host.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using nlohmann::json;

namespace {

// Listener is a unix socket something listens on, like a live kubelet's.
class Listener {
 public:
  explicit Listener(const fs::path& path) {
    fs::create_directories(path.parent_path());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
  }
  ~Listener() { ::close(fd_); }
  // stale closes the listener and leaves the socket file: a dead plugin.
  void stale() { ::close(std::exchange(fd_, -1)); }

 private:
  int fd_ = -1;
};

}  // namespace

TEST_CASE("doctor: a healthy fake host has no problems and says so in text") {
  FakeHost h;
  auto r = h.doctor();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.out, Catch::Contains("0 problems"));
  REQUIRE_THAT(r.out, Catch::Contains("BinaryName `/usr/local/bin/specshim` is this binary"));
  REQUIRE_THAT(r.out, Catch::Contains("devices controller at /sys/fs/cgroup/devices"));
  REQUIRE_THAT(r.out, Catch::Contains("initial user namespace"));
}

TEST_CASE("doctor --json parses, lists every check, and problems match the exit status") {
  FakeHost h;
  h.write_config("[chain]\norder = [\"nope\"]\n");
  auto r = h.doctor({"--json"});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& c : report["checks"]) names.push_back(c["name"]);
  REQUIRE(names == std::vector<std::string>{"config", "runtime", "cdi", "kubelet", "kernel", "capabilities", "hotplug",
                                            "user-namespaces", "containerd"});
  REQUIRE(report["problems"] == 1);
  REQUIRE(r.exit_code == 1);
}

TEST_CASE("doctor: an invalid config is a problem naming the rule and line") {
  FakeHost h;
  h.write_config(
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "capabilities = [\"CAP_IPC_LOK\"]\n");
  json report = h.report();
  REQUIRE_THAT(report,
               HasFinding("config", "fail",
                          "line 6: `requirements[0].capabilities`: rule `vfio`: unknown capability `CAP_IPC_LOK`"));
}

TEST_CASE("doctor: a bad command line exits 2, --help 0") {
  REQUIRE(run_process({SPECSHIM_BINARY, "doctor", "--bogus"}).exit_code == 2);
  REQUIRE(run_process({SPECSHIM_BINARY, "doctor", "--host-root", "/nonexistent/root"}).exit_code == 2);
  REQUIRE(run_process({SPECSHIM_BINARY, "doctor", "--help"}).exit_code == 0);
}

TEST_CASE("doctor: a valid config reports modifiers on and off, and its rules") {
  FakeHost h;
  h.write_config(
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "capabilities = [\"CAP_IPC_LOCK\"]\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("config", "ok", h.config.string() + ": valid"));
  REQUIRE_THAT(report, HasFinding("config", "info",
                                  "modifiers on: passwd, cdi, requirements, devices-cgroup; off: device-plugin, "
                                  "cpuset, env-devices, hotplug, patches"));
  REQUIRE_THAT(report, HasFinding("config", "info", "requirements rule `vfio` adds CAP_IPC_LOCK"));
  REQUIRE_THAT(report, !HasFinding("config", "warn", "matches resources"));

  h.write_config(
      "[[patches]]\nname = \"vgpu\"\nops = [{ op = \"add\", path = \"/process/env/-\", value = \"A=1\" }]\n"
      "set-mounts = [{ destination = \"/etc/ld.so.preload\", source = \"/p\" }]\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "info", "patch `vgpu`: 1 ops, 1 set-mounts"));

  h.write_config("[[requirements]]\nname = \"vfio\"\nmatch = { resources = [\"example.com/vfio\"] }\n");
  json by_resource = h.report();
  REQUIRE_THAT(
      by_resource,
      HasFinding(
          "config", "warn",
          "rule `vfio` matches resources, but the device-plugin modifier that writes specshim.io/resources is off"));
}

TEST_CASE("doctor: the passwd scope and required are reported") {
  FakeHost h;
  h.write_config("");
  REQUIRE_THAT(h.report(), HasFinding("config", "info",
                                      "passwd: entries for every container; where an entry cannot be ensured the "
                                      "container runs without one (required = false)"));
  h.write_config("[passwd]\nmatch = { namespaces = [\"ml-*\"], uids = [\"1000-65535\"] }\nrequired = true\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "info",
                                      "passwd: entries for namespaces ml-*; uids 1000-65535; an entry that cannot be "
                                      "ensured fails the create (required = true)"));
  h.write_config("[passwd]\nenabled = false\n");
  REQUIRE_THAT(h.report(), !HasFinding("config", "info", "passwd: entries for"));
}

TEST_CASE("doctor: the shipped config turns on the documented defaults and is not warned about") {
  FakeHost h;
  fs::copy_file(kShippedConfig, h.config, fs::copy_options::overwrite_existing);
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("config", "ok", h.config.string() + ": valid"));
  REQUIRE_THAT(report, HasFinding("config", "info",
                                  "modifiers on: passwd, cdi, devices-cgroup; "
                                  "off: device-plugin, cpuset, env-devices, hotplug, requirements, patches"));
  REQUIRE_THAT(report, !HasFinding("config", "warn", "no modifier is on"));
}

TEST_CASE("doctor: a config that turns every modifier off is a warning naming the keys that did it") {
  FakeHost h;
  h.write_config("[chain]\norder = []\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "warn",
                                      "no modifier is on, so specshim changes no container: "
                                      "`chain.order` (line 4) is empty"));
  h.write_config(
      "[chain]\norder = [\"passwd\", \"cdi\"]\n[passwd]\nenabled = false\n[cdi]\nenabled = false\n"
      "[devices-cgroup]\nenabled = false\n");
  REQUIRE_THAT(
      h.report(),
      HasFinding("config", "warn",
                 "no modifier is on, so specshim changes no container: `chain.order` (line 4) "
                 "leaves out device-plugin, cpuset, env-devices, hotplug, requirements, devices-cgroup, patches; "
                 "`passwd.enabled` (line 6), `cdi.enabled` (line 8) are false"));
  h.write_config("[passwd]\nenabled = false\n[cdi]\nenabled = false\n[devices-cgroup]\nenabled = false\n");
  REQUIRE_THAT(
      h.report(),
      HasFinding("config", "warn",
                 "`passwd.enabled` (line 4), `cdi.enabled` (line 6), `devices-cgroup.enabled` "
                 "(line 8) are false; device-plugin, cpuset, env-devices, hotplug, requirements, patches are off "
                 "until configured"));
  h.write_config("[chain]\norder = [\"cdi\"]\n");
  REQUIRE_THAT(h.report(), !HasFinding("config", "warn", "no modifier is on"));
}

TEST_CASE("doctor: [device-plugin.dra] enabled with device-plugin or cdi off is a warning") {
  FakeHost h;
  h.write_config("[device-plugin.dra]\nenabled = true\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "warn",
                                      "[device-plugin.dra] is enabled, but the device-plugin modifier is off: "
                                      "siblings get no DRA claims"));
  h.write_config("[cdi]\nenabled = false\n[device-plugin]\nenabled = true\n[device-plugin.dra]\nenabled = true\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("config", "warn", "[device-plugin.dra] is enabled, but the cdi modifier is off"));
  REQUIRE_THAT(report, !HasFinding("config", "warn", "the device-plugin modifier is off"));
  h.write_config("[device-plugin]\nenabled = true\n[device-plugin.dra]\nenabled = true\n");
  REQUIRE_THAT(h.report(), !HasFinding("config", "warn", "[device-plugin.dra]"));
}

TEST_CASE("doctor: a missing or failing runtime is a problem") {
  FakeHost h;
  h.write_config("");
  REQUIRE_THAT(h.report(), HasFinding("runtime", "ok", RECORDING_RUNTIME));
  json failing = h.report({{"RECORD_DIR", h.tmp.path().string()}, {"FAKE_EXIT", "3"}});
  REQUIRE_THAT(failing, HasFinding("runtime", "fail", "--version` failed (exit 3)"));
  write_file(h.config, "[runtime]\npath = \"/nonexistent/runc\"\n");
  json missing = h.report();
  REQUIRE_THAT(missing, HasFinding("runtime", "fail", "[runtime] path `/nonexistent/runc`: No such file or directory"));
}

TEST_CASE("doctor: NVIDIA's runtime behind specshim with specshim's cdi on is a warning") {
  FakeHost h;
  const std::string warning = "the runtime is nvidia-container-runtime and specshim's cdi modifier is on";
  SECTION("known by its file name") {
    fs::path nct = h.tmp / "bin/nvidia-container-runtime.cdi";
    fs::create_directories(nct.parent_path());
    fs::create_symlink(RECORDING_RUNTIME, nct);
    write_file(h.config, "[runtime]\npath = \"" + nct.string() + "\"\n");
    REQUIRE_THAT(h.report(), HasFinding("runtime", "warn", warning));
    write_file(h.config, "[runtime]\npath = \"" + nct.string() + "\"\n[cdi]\nenabled = false\n");
    REQUIRE(finding(h.report(), "runtime", warning).is_null());
  }
  SECTION("known by its --version") {
    fs::path wrapper = h.tmp / "gpu-runtime";
    write_file(wrapper, "#!/bin/sh\necho 'NVIDIA Container Runtime version 1.13.1'\necho 'runc version 1.1.5'\n", 0755);
    write_file(h.config, "[runtime]\npath = \"" + wrapper.string() + "\"\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("runtime", "warn", warning));
    REQUIRE_THAT(report, HasFinding("runtime", "warn", "set [cdi] enabled = false"));
    write_file(h.config, "[runtime]\npath = \"" + wrapper.string() + "\"\n[chain]\norder = [\"passwd\"]\n");
    REQUIRE(finding(h.report(), "runtime", warning).is_null());
  }
  SECTION("runc is not") {
    REQUIRE(finding(h.report(), "runtime", warning).is_null());
  }
}

TEST_CASE("doctor: what user-namespaced pods need is reported as information") {
  FakeHost h;
  fs::path runtime = h.tmp / "bin/runc";
  // A runtime whose `features` answers as runc 1.1 does (no mountExtensions),
  // or as runc 1.2 does (idmap mounts), or not at all (runc 1.0).
  auto runtime_answering = [&](const std::string& features) {
    write_file(runtime, "#!/bin/sh\n[ \"$1\" = features ] || { echo 'runc version 1.1.5'; exit 0; }\n" + features,
               0755);
    write_file(h.config, "[runtime]\npath = \"" + runtime.string() + "\"\n");
  };
  write_file(h.root / "proc/sys/user/max_user_namespaces", "63417\n");
  SECTION("runc 1.1: user namespaces but no idmap mounts") {
    runtime_answering("echo '{\"linux\":{\"namespaces\":[\"mount\",\"user\"]}}'\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("user-namespaces", "info", "user namespaces: at most 63417"));
    REQUIRE_THAT(report, HasFinding("user-namespaces", "info",
                                    "features`: user namespaces yes, idmap mounts no (runc 1.2+ and crun 1.9+ have "
                                    "them); containerd 2.x then does not offer the handler to hostUsers: false pods"));
    REQUIRE_THAT(report, HasFinding("user-namespaces", "info", "kernel "));
    REQUIRE_THAT(report, HasFinding("user-namespaces", "info", "passwd: entries for user-namespaced containers too"));
    REQUIRE(report["problems"] == 0);
  }
  SECTION("runc 1.2: idmap mounts") {
    runtime_answering(
        "echo '{\"linux\":{\"namespaces\":[\"user\"],\"mountExtensions\":{\"idmap\":{\"enabled\":true}}}}'\n");
    REQUIRE_THAT(h.report(), HasFinding("user-namespaces", "info", "features`: user namespaces yes, idmap mounts yes"));
  }
  SECTION("no features command") {
    runtime_answering("echo 'No help topic for features' >&2; exit 1\n");
    REQUIRE_THAT(h.report(), HasFinding("user-namespaces", "info", "features` did not answer"));
  }
  SECTION("user namespaces turned off") {
    write_file(h.root / "proc/sys/user/max_user_namespaces", "0\n");
    REQUIRE_THAT(h.report(), HasFinding("user-namespaces", "info", "user.max_user_namespaces is 0"));
  }
}

TEST_CASE("doctor: each CDI spec file, JSON or YAML, loads or shows its error with the line") {
  FakeHost h;
  write_file(
      h.root / "etc/cdi/good.json",
      R"({"cdiVersion":"0.6.0","kind":"example.com/accel","devices":[{"name":"0","containerEdits":{"env":["A=1"]}}]})");
  write_file(h.root / "etc/cdi/broken.json", "{\n  \"cdiVersion\": \"0.6.0\",\n  \"kind\": ,\n}\n");
  write_file(h.root / "var/run/cdi/net.yaml",
             "cdiVersion: \"0.6.0\"\nkind: example.com/net\ndevices:\n  - name: eth0\n    containerEdits:\n"
             "      bogus: 1\n");
  write_file(h.root / "var/run/cdi/good.yaml",
             "cdiVersion: \"0.6.0\"\nkind: example.com/vfio\ndevices:\n  - name: \"1\"\n    containerEdits:\n"
             "      env: [A=1]\n  - name: \"2\"\n    containerEdits:\n      env: [A=2]\n");
  write_file(h.root / "etc/cdi/README", "not a spec");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("cdi", "ok", "etc/cdi: 2 spec files"));
  REQUIRE_THAT(report, HasFinding("cdi", "ok", "etc/cdi/good.json: loaded (`example.com/accel`"));
  REQUIRE_THAT(report, HasFinding("cdi", "fail", "etc/cdi/broken.json: line 3: "));
  REQUIRE_THAT(report,
               HasFinding("cdi", "fail", "var/run/cdi/net.yaml: line 6: devices[0].containerEdits: unknown field"));
  REQUIRE_THAT(report, HasFinding("cdi", "ok",
                                  "var/run/cdi/good.yaml: loaded (`example.com/vfio`, cdiVersion 0.6.0, 2 devices)"));
  REQUIRE_THAT(report, HasFinding("cdi", "info", "2 of 4 spec files loaded, 3 devices usable"));
  json summary = finding(report, "cdi", "spec files loaded");
  REQUIRE(summary["details"] == json::array({"example.com/accel=0", "example.com/vfio=1", "example.com/vfio=2"}));
  REQUIRE(report["problems"] == 2);

  auto text = h.doctor({"--verbose"});
  INFO(text.out);
  REQUIRE_THAT(text.out, Catch::Contains("3 devices usable\n" + std::string(22, ' ') + "example.com/accel=0\n"));
  REQUIRE_THAT(h.doctor().out, !Catch::Contains("example.com/accel=0\n"));
}

TEST_CASE("doctor: a CDI device name defined by two spec files of one dir names both files") {
  FakeHost h;
  auto spec = [](const std::string& kind) {
    return R"({"cdiVersion":"0.6.0","kind":")" + kind +
           R"(","devices":[{"name":"0","containerEdits":{"env":["A=1"]}}]})";
  };
  write_file(h.root / "etc/cdi/a.json", spec("example.com/accel"));
  write_file(h.root / "etc/cdi/b.json", spec("example.com/accel"));
  write_file(h.root / "var/run/cdi/override.json", spec("example.com/accel"));  // a later dir wins: no conflict
  write_file(h.root / "var/run/cdi/c.json", spec("example.com/other"));
  write_file(h.root / "var/run/cdi/d.json", spec("example.com/other"));
  json report = h.report();
  std::string dir = (h.root / "var/run/cdi").string();
  REQUIRE_THAT(report, HasFinding("cdi", "fail",
                                  "device `example.com/other=0` is defined by more than one spec file (" + dir +
                                      "/c.json, " + dir + "/d.json)"));
  REQUIRE_THAT(report, !HasFinding("cdi", "fail", "example.com/accel=0"));
  REQUIRE(finding(report, "cdi", "spec files loaded")["details"] == json::array({"example.com/accel=0"}));
}

TEST_CASE("doctor: CDI disabled says so, and configured spec dirs are the ones read") {
  FakeHost h;
  write_file(h.root / "etc/cdi/broken.json", "{");
  h.write_config("[cdi]\nenabled = false\n");
  json off = h.report();
  REQUIRE(findings(off, "cdi") == std::vector<std::string>{"info disabled ([cdi] enabled = false)"});
  h.write_config("[chain]\norder = [\"passwd\"]\n");
  REQUIRE(findings(h.report(), "cdi") == std::vector<std::string>{"info disabled (not in [chain] order)"});

  // A dir that cannot be read is a problem; one that does not exist is not.
  write_file(h.root / "srv/not-a-dir", "");
  write_file(h.root / "opt/cdi/x.yaml",
             "cdiVersion: \"0.6.0\"\nkind: example.com/x\ndevices:\n  - name: a\n"
             "    containerEdits:\n      env: [A=1]\n");
  h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\", \"/srv/not-a-dir\", \"/srv/absent\"]\n");
  json configured = h.report();
  REQUIRE_THAT(configured, HasFinding("cdi", "ok", "opt/cdi: 1 spec file"));
  REQUIRE_THAT(configured, HasFinding("cdi", "fail", "srv/not-a-dir`: Not a directory"));
  REQUIRE_THAT(configured, HasFinding("cdi", "info", "srv/absent: absent"));
  REQUIRE_THAT(configured, HasFinding("cdi", "info", "1 of 1 spec file loaded, 1 device usable"));
  REQUIRE_THAT(configured, !HasFinding("cdi", "fail", "broken.json"));
}

TEST_CASE("doctor: [[env-devices]] entries are listed, and a kind without a spec is a warning") {
  FakeHost h;
  write_file(h.root / "etc/cdi/nvidia.yaml",
             "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n  - name: \"0\"\n"
             "    containerEdits:\n      env: [A=1]\n");
  const std::string entries =
      "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
      "resources = [\"nvidia.com/gpu\", \"nvidia.com/mig-*\"]\n"
      "[[env-devices]]\nenv = \"AMD_VISIBLE_DEVICES\"\nkind = \"amd.com/gpu\"\n"
      "[[env-devices]]\nenv = \"ASCEND_VISIBLE_DEVICES\"\nkind = \"ascend.com/npu\"\n";
  h.write_config(entries);
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("config", "info",
                                  "env-devices `ASCEND_VISIBLE_DEVICES`: bare names are `ascend.com/npu`; grants of "
                                  "huawei.com/Ascend* count; Ascend's grammar; after = \"keep\""));
  REQUIRE_THAT(report, HasFinding("config", "info",
                                  "env-devices `AMD_VISIBLE_DEVICES`: bare names are `amd.com/gpu`; grants of "
                                  "amd.com/gpu count; NVIDIA's grammar; after = \"void\""));
  REQUIRE_THAT(report, HasFinding("config", "info",
                                  "env-devices `NVIDIA_VISIBLE_DEVICES`: bare names are `nvidia.com/gpu`; grants of "
                                  "nvidia.com/gpu, nvidia.com/mig-* count"));
  REQUIRE_THAT(report,
               HasFinding("cdi", "ok", "env-devices `NVIDIA_VISIBLE_DEVICES`: `nvidia.com/gpu` devices are defined"));
  REQUIRE_THAT(report, HasFinding("cdi", "warn",
                                  "env-devices `AMD_VISIBLE_DEVICES`: no spec file defines a `amd.com/gpu` device"));
  h.write_config(entries + "[cdi]\nenabled = false\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "warn",
                                      "env-devices `NVIDIA_VISIBLE_DEVICES`: the cdi modifier that injects its devices "
                                      "is off"));
}

TEST_CASE("doctor: the CDI parse cache is reported, and a directory open to others is a warning") {
  FakeHost h;
  write_file(h.root / "opt/cdi/x.yaml",
             "cdiVersion: \"0.6.0\"\nkind: example.com/x\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n");
  SECTION("absent until the first create") {
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\ncache-dir = \"/run/specshim/cdi-cache\"\n");
    REQUIRE_THAT(h.report(), HasFinding("cdi", "info", "parse cache /run/specshim/cdi-cache: absent"));
  }
  SECTION("in use") {
    fs::create_directories(h.root / "run/cache");
    ::chmod((h.root / "run/cache").c_str(), 0700);
    write_file(h.root / "run/cache/0123456789abcdef.cdi", "x", 0600);
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\ncache-dir = \"/run/cache\"\n");
    REQUIRE_THAT(h.report(), HasFinding("cdi", "ok", "parse cache /run/cache: 1 entry"));
  }
  SECTION("owned by another user: not used") {
    fs::create_directories(h.root / "run/cache");
    ::chmod((h.root / "run/cache").c_str(), 0700);
    if (::geteuid() != 0) return;  // chown needs root (CI runs as root)
    REQUIRE(::chown((h.root / "run/cache").c_str(), 1, 1) == 0);
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\ncache-dir = \"/run/cache\"\n");
    REQUIRE_THAT(h.report(), HasFinding("cdi", "warn", "parse cache /run/cache: not used"));
  }
  SECTION("open to others: not used") {
    fs::create_directories(h.root / "run/cache");
    ::chmod((h.root / "run/cache").c_str(), 0755);
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\ncache-dir = \"/run/cache\"\n");
    REQUIRE_THAT(h.report(), HasFinding("cdi", "warn", "parse cache /run/cache: not used"));
  }
  SECTION("off") {
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\ncache-dir = \"\"\n");
    REQUIRE_THAT(h.report(), HasFinding("cdi", "info", "parse cache off"));
  }
  SECTION("a relative path is a config error") {
    h.write_config("[cdi]\ncache-dir = \"run/cache\"\n");
    REQUIRE_THAT(h.report(), HasFinding("config", "fail", "`cdi.cache-dir`: `run/cache` is not an absolute path"));
  }
}

TEST_CASE("doctor: containerd config registering specshim with the wrong BinaryName") {
  FakeHost h;
  SECTION("a file that is not this binary") {
    write_file(h.root / "usr/local/bin/specshim-old", "#!/bin/sh\n", 0755);
    write_file(h.root / "etc/containerd/config.toml",
               FakeHost::containerd_config("specshim", "/usr/local/bin/specshim-old"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "fail",
                                    "runtime `specshim`: BinaryName `/usr/local/bin/specshim-old` is not this binary"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "no containerd config registers this binary"));
  }
  SECTION("a path that does not exist, in an imported file") {
    write_file(h.root / "etc/containerd/config.toml", "version = 2\nimports = [\"/etc/containerd/runtimes/*.toml\"]\n");
    write_file(h.root / "etc/containerd/runtimes/gpu.toml",
               FakeHost::containerd_config("gpu", "/opt/specshim/bin/specshim"));
    json report = h.report();
    REQUIRE_THAT(
        report, HasFinding("containerd", "fail",
                           "runtimes/gpu.toml: runtime `gpu`: BinaryName `/opt/specshim/bin/specshim` does not exist"));
  }
  SECTION("conf.d registers it right, with a runtime_type that ignores BinaryName") {
    write_file(h.root / "etc/containerd/config.toml", "version = 2\n");
    std::string text = FakeHost::containerd_config("specshim", "/usr/local/bin/specshim");
    write_file(h.root / "etc/containerd/conf.d/10-specshim.toml",
               replace_all(text, "io.containerd.runc.v2", "io.containerd.runsc.v1"));
    json report = h.report();
    REQUIRE_THAT(
        report,
        HasFinding("containerd", "ok",
                   "conf.d/10-specshim.toml: runtime `specshim`: BinaryName `/usr/local/bin/specshim` is this binary"));
    REQUIRE_THAT(report, HasFinding("containerd", "fail", "runtime_type `io.containerd.runsc.v1` ignores BinaryName"));
  }
  SECTION("the default-handler install: a drop-in sets only runc's BinaryName, the type is the root's") {
    // install-on-host.sh --handler runc on a version 3 root; containerd 2.x
    // merges the drop-in into the root's runc table key by key.
    const std::string runc = "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc";
    write_file(h.root / "etc/containerd/config.toml",
               "version = 3\nimports = [\"/etc/containerd/conf.d/specshim.toml\"]\n" + runc +
                   "]\n  runtime_type = \"io.containerd.runc.v2\"\n" + runc + ".options]\n  SystemdCgroup = true\n");
    write_file(h.root / "etc/containerd/conf.d/specshim.toml",
               "version = 3\n" + runc + ".options]\n  BinaryName = \"/usr/local/bin/specshim\"\n");
    json report = h.report();
    REQUIRE_THAT(
        report,
        HasFinding("containerd", "ok",
                   "conf.d/specshim.toml: runtime `runc`: BinaryName `/usr/local/bin/specshim` is this binary"));
    REQUIRE_THAT(report, !HasFinding("containerd", "fail", "runtime_type"));
    // Without any runtime_type, runc is containerd's built-in handler (runc.v2).
    write_file(h.root / "etc/containerd/config.toml",
               "version = 3\nimports = [\"/etc/containerd/conf.d/specshim.toml\"]\n");
    REQUIRE_THAT(h.report(), !HasFinding("containerd", "fail", "runtime_type"));
  }
  SECTION("a version 4 root (containerd 2.3's default) and the handler in a conf.d drop-in its glob imports") {
    const std::string v3 = "[plugins.'io.containerd.cri.v1.runtime'.containerd";
    write_file(h.root / "etc/containerd/config.toml",
               "version = 4\nimports = ['/etc/containerd/conf.d/*.toml']\n\n[plugins.'io.containerd.server.v1.grpc']\n"
               "  address = '/run/containerd/containerd.sock'\n");
    write_file(h.root / "etc/containerd/conf.d/specshim.toml",
               "version = 4\n\n" + v3 + ".runtimes.specshim]\n  runtime_type = 'io.containerd.runc.v2'\n" + v3 +
                   ".runtimes.specshim.options]\n  BinaryName = '/usr/local/bin/specshim'\n" + v3 +
                   "]\n  default_runtime_name = 'specshim'\n");
    json report = h.report();
    REQUIRE_THAT(
        report,
        HasFinding("containerd", "ok",
                   "conf.d/specshim.toml: runtime `specshim`: BinaryName `/usr/local/bin/specshim` is this binary"));
    REQUIRE_THAT(report, HasFinding("containerd", "info", "assuming 2.x, whose config version 4 is"));
    REQUIRE_THAT(report, HasFinding("containerd", "ok", "get the handler `specshim` (default_runtime_name, "));
  }
  SECTION("a relative BinaryName") {
    write_file(h.root / "etc/containerd/config.toml", FakeHost::containerd_config("specshim", "specshim"));
    REQUIRE_THAT(h.report(), HasFinding("containerd", "warn", "BinaryName `specshim` is relative"));
  }
  SECTION("a containerd config that does not parse") {
    write_file(h.root / "etc/containerd/config.toml", "version = 2\n[plugins\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "fail", "etc/containerd/config.toml`: line 2"));
  }
}

TEST_CASE("doctor: which handler a pod without a RuntimeClass gets, and whether specshim is in its chain") {
  FakeHost h;
  write_file(h.root / "usr/bin/nvidia-container-runtime", "#!/bin/sh\n", 0755);
  // nvidia-ctk runtime configure --set-as-default on a version 3 root: a
  // drop-in in conf.d with the nvidia handler and default_runtime_name.
  const std::string v3 = "[plugins.\"io.containerd.cri.v1.runtime\".containerd";
  auto toolkit_v3 = [&](const std::string& binary) {
    return "version = 3\n\n" + v3 + "]\n  default_runtime_name = \"nvidia\"\n\n" + v3 +
           ".runtimes.nvidia]\n  runtime_type = \"io.containerd.runc.v2\"\n\n" + v3 +
           ".runtimes.nvidia.options]\n  BinaryName = \"" + binary + "\"\n  SystemdCgroup = true\n";
  };
  const std::string root_v3 = "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n" + v3 +
                              ".runtimes.specshim]\n  runtime_type = \"io.containerd.runc.v2\"\n" + v3 +
                              ".runtimes.specshim.options]\n  BinaryName = \"/usr/local/bin/specshim\"\n";
  SECTION("no default_runtime_name: containerd's runc, without specshim") {
    REQUIRE_THAT(h.report(), HasFinding("containerd", "info",
                                        "pods without a RuntimeClass get the handler `runc` (containerd's default), "
                                        "which runs runc: specshim is not in their chain"));
  }
  SECTION("the toolkit's drop-in makes nvidia the default; NVIDIA's runtime runs runc") {
    write_file(h.root / "etc/containerd/config.toml", root_v3);
    write_file(h.root / "etc/containerd/conf.d/99-nvidia.toml", toolkit_v3("/usr/bin/nvidia-container-runtime"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    "pods without a RuntimeClass get the handler `nvidia` (default_runtime_name, "));
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    "conf.d/99-nvidia.toml line 4), which runs NVIDIA's runtime "
                                    "(/usr/bin/nvidia-container-runtime), which runs "));
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    "(NVIDIA's default runtimes list): specshim is not in their chain; pods reach "
                                    "specshim only through a RuntimeClass whose handler runs it, or install-on-host.sh "
                                    "--handler nvidia --chain puts it in front"));
    // NVIDIA's runtime configured to run specshim puts it in the chain.
    write_file(h.root / "etc/nvidia-container-runtime/config.toml",
               "[nvidia-container-runtime]\nruntimes = [\"/usr/local/bin/specshim\", \"runc\"]\n");
    REQUIRE_THAT(h.report(), HasFinding("containerd", "ok",
                                        "which runs NVIDIA's runtime (/usr/bin/nvidia-container-runtime), which runs "
                                        "specshim (this binary, runtimes in "
                                        "/etc/nvidia-container-runtime/config.toml)"));
  }
  SECTION("install-on-host.sh --handler nvidia --chain: specshim in the handler, NVIDIA's runtime after it") {
    write_file(h.root / "etc/containerd/config.toml", root_v3);
    write_file(h.root / "etc/containerd/conf.d/99-nvidia.toml", toolkit_v3("/usr/local/bin/specshim"));
    REQUIRE_THAT(h.report(), HasFinding("containerd", "ok",
                                        "get the handler `nvidia` (default_runtime_name, " + h.root.string() +
                                            "/etc/containerd/conf.d/99-nvidia.toml line 4), which runs specshim "
                                            "(this binary), which runs "));
  }
  SECTION("a version 2 root the toolkit edited in place; containerd 1.x replaces a plugin table whole") {
    const std::string v2 = "[plugins.\"io.containerd.grpc.v1.cri\"";
    write_file(h.root / "etc/containerd/config.toml",
               "version = 2\nimports = [\"/etc/containerd/extra.toml\"]\n\n" + v2 + ".containerd]\n" +
                   "  default_runtime_name = \"nvidia\"\n" + v2 + ".containerd.runtimes.nvidia]\n" +
                   "  runtime_type = \"io.containerd.runc.v2\"\n" + v2 + ".containerd.runtimes.nvidia.options]\n" +
                   "  BinaryName = \"/usr/bin/nvidia-container-runtime\"\n");
    write_file(h.root / "etc/containerd/extra.toml", "version = 2\n");
    write_file(h.root / "usr/bin/containerd", "#!/bin/sh\necho 'containerd github.com/containerd/containerd 1.7.24'\n",
               0755);
    REQUIRE_THAT(h.report(), HasFinding("containerd", "info", "get the handler `nvidia` (default_runtime_name, "));
    // An imported file with its own CRI table replaces the root's in 1.x: the default is runc again.
    write_file(h.root / "etc/containerd/extra.toml", "version = 2\n" + v2 + "]\n  sandbox_image = \"pause:3.9\"\n");
    REQUIRE_THAT(h.report(), HasFinding("containerd", "info", "get the handler `runc` (containerd's default)"));
  }
}

namespace {

// fake_containerd puts a `containerd` that prints version_line for
// --version into the fake host's /usr/bin.
void fake_containerd(const FakeHost& h, const std::string& version_line) {
  write_file(h.root / "usr/bin/containerd", "#!/bin/sh\necho '" + version_line + "'\n", 0755);
}

// v2_cri is a version 2 config with the specshim handler and cri_keys in
// the CRI plugin's own table.
std::string v2_cri(const std::string& cri_keys) {
  return "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n" + cri_keys +
         "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.specshim]\n"
         "  runtime_type = \"io.containerd.runc.v2\"\n"
         "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.specshim.options]\n"
         "  BinaryName = \"/usr/local/bin/specshim\"\n";
}

// v3_cri is the same in a version 3 config (containerd 2.x).
std::string v3_cri(const std::string& cri_keys, const std::string& top = "") {
  return "version = 3\n" + top + "[plugins.\"io.containerd.cri.v1.runtime\"]\n" + cri_keys +
         "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.specshim]\n"
         "  runtime_type = \"io.containerd.runc.v2\"\n"
         "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.specshim.options]\n"
         "  BinaryName = \"/usr/local/bin/specshim\"\n";
}

const std::string kDiffers = "its cdi_spec_dirs are ";

}  // namespace

TEST_CASE("doctor: containerd 2.x's own CDI with spec dirs other than specshim's is a warning naming both") {
  FakeHost h;
  SECTION("a version 3 config without a containerd binary: 2.x assumed and CDI on by default") {
    write_file(h.root / "etc/containerd/config.toml", v3_cri(""));
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info", "containerd version unknown"));
    REQUIRE_THAT(report, HasFinding("containerd", "info", "assuming 2.x, whose config version 3 is"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn",
                                    "containerd's CRI CDI is on (the default of containerd 2.x (a version 3 config)) "
                                    "and resolves CRI's CDI requests before specshim runs: its cdi_spec_dirs are "
                                    "/etc/cdi, /var/run/cdi (the default), specshim's [cdi] spec-dirs are /opt/cdi; "
                                    "a device whose spec is only in /opt/cdi fails the create in containerd "
                                    "(\"CDI device injection failed: unresolvable CDI devices …\") and specshim never "
                                    "sees it; a device whose spec is only in /etc/cdi, /var/run/cdi is injected by "
                                    "containerd, and specshim's cdi fails the create"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "set both to the same list"));
    REQUIRE(report["problems"] == 0);
  }
  SECTION("the same dirs are ok, /run and /var/run alike") {
    fake_containerd(h,
                    "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376");
    write_file(h.root / "etc/containerd/config.toml", v3_cri("cdi_spec_dirs = [\"/etc/cdi/\", \"/run/cdi\"]\n"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info", "usr/bin/containerd: containerd 2.1.4"));
    REQUIRE_THAT(report, HasFinding("containerd", "ok",
                                    "containerd's CRI CDI is on (the default of containerd 2.1.4) and resolves CRI's "
                                    "CDI requests before specshim runs, from the spec dirs specshim's [cdi] reads "
                                    "(/etc/cdi/, /run/cdi)"));
    REQUIRE_THAT(report, !HasFinding("containerd", "warn", kDiffers));
  }
  SECTION("a drop-in imported by a relative glob adds a dir, merged key by key") {
    fake_containerd(h, "containerd github.com/containerd/containerd/v2 v2.3.4 0123456");
    write_file(h.root / "etc/containerd/config.toml", v3_cri("enable_cdi = true\n", "imports = [\"conf.d/*.toml\"]\n"));
    write_file(h.root / "etc/containerd/conf.d/50-cdi.toml",
               "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n"
               "cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\", \"/opt/vendor/cdi\"]\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "containerd's CRI CDI is on (enable_cdi = true, "));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "etc/containerd/config.toml line 4)"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn",
                                    "its cdi_spec_dirs are /etc/cdi, /var/run/cdi, /opt/vendor/cdi (cdi_spec_dirs, "));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "conf.d/50-cdi.toml line 3)"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn",
                                    "a device whose spec is only in /opt/vendor/cdi is injected by containerd"));
    REQUIRE_THAT(report, !HasFinding("containerd", "warn", "fails the create in containerd"));
  }
  SECTION("the same dirs in another order") {
    fake_containerd(h, "containerd github.com/containerd/containerd/v2 v2.0.0 207ad71");
    write_file(h.root / "etc/containerd/config.toml", v3_cri("cdi_spec_dirs = [\"/var/run/cdi\", \"/etc/cdi\"]\n"));
    REQUIRE_THAT(h.report(), HasFinding("containerd", "warn", "the same dirs in another order"));
  }
  SECTION("enable_cdi = false on 2.x: specshim alone, and CRI's CDIDevices go nowhere") {
    fake_containerd(h, "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7");
    write_file(h.root / "etc/containerd/config.toml", v3_cri("enable_cdi = false\n"));
    h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info", "containerd's CRI CDI is off (enable_cdi = false, "));
    REQUIRE_THAT(report, HasFinding("containerd", "info", "CRI's CDIDevices requests"));
    REQUIRE_THAT(report, !HasFinding("containerd", "warn", kDiffers));
  }
  SECTION("specshim's cdi off: containerd alone") {
    write_file(h.root / "etc/containerd/config.toml", v3_cri(""));
    h.write_config("[cdi]\nenabled = false\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info", "specshim's cdi modifier is off: containerd alone injects"));
    REQUIRE_THAT(report, !HasFinding("containerd", "warn", kDiffers));
  }
}

TEST_CASE("doctor: containerd 1.7 injects CDI only with enable_cdi and 1.6 never") {
  FakeHost h;
  h.write_config("[cdi]\nspec-dirs = [\"/opt/cdi\"]\n");
  SECTION("1.7 with enable_cdi = true and its own dirs") {
    fake_containerd(h, "containerd github.com/containerd/containerd v1.7.13 7c3aca7a610df76212171d200ca3811ff6096eb8");
    write_file(h.root / "etc/containerd/config.toml", v2_cri("enable_cdi = true\ncdi_spec_dirs = [\"/etc/cdi\"]\n"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info", "containerd 1.7.13"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "its cdi_spec_dirs are /etc/cdi (cdi_spec_dirs, "));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "specshim's [cdi] spec-dirs are /opt/cdi"));
  }
  SECTION("1.7 without enable_cdi: off by default") {
    fake_containerd(h, "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da");
    write_file(h.root / "etc/containerd/config.toml", v2_cri(""));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    "containerd's CRI CDI is off (the default of containerd 1.7): specshim alone"));
    REQUIRE_THAT(report, !HasFinding("containerd", "warn", kDiffers));
  }
  SECTION("1.6 (Debian's version string) has no CDI even with enable_cdi = true") {
    fake_containerd(h, "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3");
    write_file(h.root / "etc/containerd/config.toml", v2_cri("enable_cdi = true\n"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    "containerd 1.6.20~ds1 has no CDI (it came in 1.7): specshim alone injects"));
    REQUIRE_THAT(report, !HasFinding("containerd", "warn", kDiffers));
  }
  SECTION("an import replaces the whole CRI table on 1.x, and is merged key by key on 2.x") {
    // The root turns CDI on with its own dirs; the drop-in only registers the handler.
    write_file(h.root / "etc/containerd/config.toml",
               "version = 2\nimports = [\"/etc/containerd/runtimes.toml\"]\n"
               "[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\ncdi_spec_dirs = [\"/srv/cdi\"]\n");
    write_file(h.root / "etc/containerd/runtimes.toml",
               FakeHost::containerd_config("specshim", "/usr/local/bin/specshim"));
    fake_containerd(h, "containerd github.com/containerd/containerd v1.7.13 7c3aca7");
    json v1 = h.report();
    REQUIRE_THAT(v1, HasFinding("containerd", "ok", "runtimes.toml: runtime `specshim`"));
    REQUIRE_THAT(v1, HasFinding("containerd", "info", "containerd's CRI CDI is off (the default of containerd 1.7)"));
    fake_containerd(h, "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7");
    json v2 = h.report();
    REQUIRE_THAT(v2, HasFinding("containerd", "warn", "its cdi_spec_dirs are /srv/cdi (cdi_spec_dirs, "));
  }
  SECTION("no containerd binary and a version 2 config: 1.7 assumed, said so") {
    write_file(h.root / "etc/containerd/config.toml", v2_cri(""));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    "assuming 1.7 for a version 2 config (1.6 has no CDI; 2.x also reads version 2 "
                                    "configs, with CRI CDI on by default)"));
    REQUIRE_THAT(report,
                 HasFinding("containerd", "info", "containerd's CRI CDI is off (the default of containerd 1.7)"));
  }
}

TEST_CASE("doctor --containerd-config reads another containerd config, and a missing import is a warning") {
  FakeHost h;
  fs::path k3s = h.tmp / "k3s/agent/etc/containerd/config.toml";
  write_file(k3s, v3_cri("cdi_spec_dirs = [\"/var/lib/rancher/cdi\"]\n", "imports = [\"extra.toml\"]\n"));
  auto r = h.doctor({"--json", "--containerd-config", k3s.string()});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  REQUIRE_THAT(report, HasFinding("containerd", "ok", k3s.string() + ": runtime `specshim`"));
  REQUIRE_THAT(report, HasFinding("containerd", "warn", "its cdi_spec_dirs are /var/lib/rancher/cdi"));
  REQUIRE_THAT(report, HasFinding("containerd", "warn",
                                  "imports `extra.toml`: " + (k3s.parent_path() / "extra.toml").string() +
                                      " does not exist: containerd fails to start on a missing import"));
}

// The fake kubelet's answers are checked in test/component/doctor_kubelet_test.cpp.
TEST_CASE("doctor: an absent kubelet is a problem only with the device-plugin modifier on") {
  FakeHost h;
  json off = h.report();
  REQUIRE_THAT(off, HasFinding("kubelet", "info", "device-plugin modifier off"));
  REQUIRE_THAT(off, HasFinding("kubelet", "info", "var/lib/kubelet/pod-resources/kubelet.sock: absent"));
  REQUIRE(off["problems"] == 0);
  for (const auto& f : findings(off, "kubelet")) REQUIRE(f.rfind("info ", 0) == 0);

  h.write_config("[device-plugin]\nenabled = true\n");
  auto r = h.doctor({"--json"});
  json on = json::parse(r.out);
  REQUIRE_THAT(
      on, HasFinding("kubelet", "fail", (h.root / "var/lib/kubelet/pod-resources/kubelet.sock").string() + ": absent"));
  REQUIRE_THAT(on, HasFinding("kubelet", "fail", (h.root / "var/lib/kubelet/device-plugins").string() + ": absent"));
  REQUIRE(r.exit_code == 1);
}

TEST_CASE("doctor: a stale PodResources socket under the configured kubelet root is named") {
  FakeHost h;
  Listener dead(h.root / "srv/kubelet/pod-resources/kubelet.sock");
  dead.stale();
  h.write_config("[device-plugin]\nkubelet-root = \"/srv/kubelet\"\n");
  REQUIRE_THAT(h.report(), HasFinding("kubelet", "info", "srv/kubelet/pod-resources/kubelet.sock: Connection refused"));
  h.write_config("[device-plugin]\nenabled = true\nkubelet-root = \"/srv/kubelet\"\n");
  REQUIRE_THAT(h.report(), HasFinding("kubelet", "fail", "srv/kubelet/pod-resources/kubelet.sock: Connection refused"));
}

TEST_CASE("doctor: [kubelet] root is where the kubelet check looks, and modifiers on different roots are a warning") {
  FakeHost h;
  Listener dead(h.root / "var/lib/k0s/kubelet/pod-resources/kubelet.sock");
  dead.stale();
  h.write_config(
      "[kubelet]\nroot = \"/var/lib/k0s/kubelet\"\n[device-plugin]\nenabled = true\n[cpuset]\nenabled = true\n");
  json inherited = h.report();
  REQUIRE_THAT(inherited,
               HasFinding("kubelet", "fail", "var/lib/k0s/kubelet/pod-resources/kubelet.sock: Connection refused"));
  REQUIRE_THAT(inherited, !HasFinding("config", "warn", "different roots"));

  // Only [device-plugin] moved: cpuset would still ask /var/lib/kubelet (the case [kubelet] is for).
  h.write_config(
      "[device-plugin]\nenabled = true\nkubelet-root = \"/var/lib/k0s/kubelet\"\n[cpuset]\nenabled = true\n"
      "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "warn",
                                      "the modifiers that ask the kubelet look for it in different roots "
                                      "(device-plugin /var/lib/k0s/kubelet, cpuset /var/lib/kubelet, env-devices "
                                      "`NVIDIA_VISIBLE_DEVICES` /var/lib/kubelet): a node has one kubelet; set "
                                      "[kubelet] root once"));
  h.write_config("[kubelet]\nroot = \"/srv/k\"\nbogus = 1\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "fail", "line 5: unknown key `kubelet.bogus`"));
}

TEST_CASE("doctor: kernel cgroup layouts") {
  FakeHost h;
  SECTION("cgroup v2 loads the BPF device filter (we are root)") {
    write_file(h.root / "proc/self/mountinfo",
               "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("kernel", "ok", "cgroup v2 (unified) at /sys/fs/cgroup"));
    REQUIRE_THAT(report, HasFinding("kernel", "ok", "BPF device filter: loads"));
  }
  SECTION("cgroup v1 without the devices controller") {
    write_file(h.root / "proc/self/mountinfo", "27 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("kernel", "fail", "cgroup v1 without the devices controller"));
  }
  REQUIRE_THAT(h.report(), HasFinding("kernel", "ok", "openat2 with RESOLVE_IN_ROOT: available"));
}

TEST_CASE("doctor: rootless, and CAP_MKNOD missing, are problems") {
  FakeHost h;
  write_file(h.root / "proc/self/uid_map", "         0       1000          1\n");
  json rootless = h.report();
  REQUIRE_THAT(rootless, HasFinding("capabilities", "fail", "in a user namespace (uid_map `0 1000 1`)"));

  FakeHost h2;
  auto r = run_process({"/usr/bin/setpriv", "--bounding-set", "-mknod", SPECSHIM_BINARY, "doctor", "--json", "--config",
                        h2.config.string(), "--host-root", h2.root.string()});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  REQUIRE_THAT(report, HasFinding("capabilities", "fail", "CAP_MKNOD: not effective (not in the bounding set)"));
  REQUIRE(r.exit_code == 1);
}

TEST_CASE("doctor: a rule the runtime cannot honour from here is a warning") {
  FakeHost h;
  h.write_config(
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "capabilities = [\"CAP_IPC_LOCK\"]\nrlimits = { RLIMIT_MEMLOCK = \"unlimited\" }\n");
  // A low hard limit and no CAP_SYS_RESOURCE, whatever this host allows.
  auto r = run_process({"/usr/bin/prlimit", "--memlock=65536:65536", "/usr/bin/setpriv", "--bounding-set",
                        "-sys_resource,-ipc_lock", SPECSHIM_BINARY, "doctor", "--json", "--config", h.config.string(),
                        "--host-root", h.root.string()});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  REQUIRE_THAT(
      report,
      HasFinding("capabilities", "warn",
                 "rule `vfio` raises the RLIMIT_MEMLOCK hard limit to unlimited, above this process's 65536, without "
                 "CAP_SYS_RESOURCE"));
  REQUIRE_THAT(report, HasFinding("capabilities", "warn",
                                  "rule `vfio` adds CAP_IPC_LOCK, which is not in specshim's bounding set"));
  REQUIRE(r.exit_code == 0);  // warnings only
}

TEST_CASE("doctor: hot-plug on a hybrid host as root: mode, a real device program load, capabilities, no systemd") {
  FakeHost h;
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("hotplug", "ok",
                                  "cgroup v1 hybrid: attach writes devices.allow under /sys/fs/cgroup/devices, and "
                                  "replaces a device program on the container's cgroup under /sys/fs/cgroup/unified"));
  REQUIRE_THAT(report, HasFinding("hotplug", "ok", "bpf(2): specshim's device program for runc's default rules loads"));
  REQUIRE_THAT(report, HasFinding("hotplug", "ok", "CAP_MKNOD: effective"));
  REQUIRE_THAT(report, HasFinding("hotplug", "ok", "CAP_SYS_ADMIN: effective"));
  REQUIRE_THAT(report, HasFinding("hotplug", "info", "systemd is not PID 1"));
  REQUIRE(report["problems"] == 0);
}

TEST_CASE("doctor: the desired-state file is read as reconcile reads it: absent, valid, or malformed with its line") {
  FakeHost h;
  REQUIRE_THAT(h.report(), HasFinding("hotplug", "info",
                                      "desired-state file /etc/specshim/hotplug.yaml: absent (reconcile has nothing to "
                                      "attach; the hotplug modifier (off) would give nothing at create)"));
  write_file(h.root / "etc/specshim/hotplug.yaml",
             "containers:\n  - id: c1\n    devices: [/dev/nvidia0]\n  - pod: {namespace: dev, name: box, container: "
             "main}\n    gpus: [GPU-1]\n");
  h.write_config("[hotplug]\nenabled = true\n");
  REQUIRE_THAT(h.report(),
               HasFinding("hotplug", "ok", "desired-state file /etc/specshim/hotplug.yaml: 2 entries, valid"));
  write_file(h.root / "etc/specshim/hotplug.yaml", "containers:\n  - id: c1\n    device: [/dev/nvidia0]\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("hotplug", "warn", "hotplug.yaml: line 3: containers[0]: unknown field \"device\""));
  REQUIRE_THAT(report,
               HasFinding("hotplug", "warn", "reconcile changes nothing and the hotplug modifier gives nothing"));
}

TEST_CASE("doctor: hot-plug cgroup modes") {
  FakeHost h;
  SECTION("v2") {
    write_file(h.root / "proc/self/mountinfo",
               "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
    REQUIRE_THAT(h.report(), HasFinding("hotplug", "ok",
                                        "cgroup v2 at /sys/fs/cgroup: attach replaces the container's device program"));
  }
  SECTION("v1 only") {
    write_file(h.root / "proc/self/mountinfo", "28 25 0:25 / /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n");
    REQUIRE_THAT(h.report(),
                 HasFinding("hotplug", "ok", "cgroup v1: attach writes devices.allow under /sys/fs/cgroup/devices"));
  }
  SECTION("nothing that confines devices: a warning, not a problem for hot-plug") {
    write_file(h.root / "proc/self/mountinfo", "27 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
    REQUIRE_THAT(h.report(), HasFinding("hotplug", "warn",
                                        "no cgroup devices controller and no cgroup2: attach cannot grant a device"));
  }
}

TEST_CASE("doctor: hot-plug with systemd as PID 1, with and without systemctl") {
  FakeHost h;
  std::filesystem::create_directories(h.root / "run/systemd/system");
  REQUIRE_THAT(h.report(), HasFinding("hotplug", "warn", "systemd is PID 1 but systemctl is not in /usr/bin or /bin"));
  write_file(h.root / "usr/bin/systemctl", "#!/bin/sh\n", 0755);
  REQUIRE_THAT(h.report(),
               HasFinding("hotplug", "ok",
                          "systemd is PID 1: for a container cgroup in a .scope, attach also sets DeviceAllow= with "
                          "`/usr/bin/systemctl set-property --runtime`"));
}

TEST_CASE("doctor: hot-plug without CAP_MKNOD and CAP_SYS_ADMIN warns for each") {
  FakeHost h;
  auto r = run_process({"/usr/bin/setpriv", "--bounding-set", "-mknod,-sys_admin", SPECSHIM_BINARY, "doctor", "--json",
                        "--config", h.config.string(), "--host-root", h.root.string()});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  REQUIRE_THAT(report, HasFinding("hotplug", "warn",
                                  "CAP_MKNOD: not effective (not in the bounding set): attach cannot create device "
                                  "nodes in a container"));
  REQUIRE_THAT(report, HasFinding("hotplug", "warn",
                                  "CAP_SYS_ADMIN: not effective (not in the bounding set): attach cannot enter a "
                                  "container's mount namespace with setns, bind-mount"));
}

TEST_CASE("doctor: an env-devices kind with absent nodes warns that `all` fails, and scope = visible counts them") {
  FakeHost h;
  // GPU 0's node is here (/dev/null stands in); GPU 1's is not, as in a
  // container that runs a nested runtime and was given one GPU.
  write_file(h.root / "etc/cdi/nvidia.yaml",
             "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n"
             "  - name: \"0\"\n    containerEdits:\n      deviceNodes: [{path: /dev/nvidia0, hostPath: /dev/null}]\n"
             "  - name: \"1\"\n    containerEdits:\n      deviceNodes: [{path: /dev/nvidia1, hostPath: "
             "/dev/specshim-doctor-absent}]\n");
  const std::string entry = "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n";
  h.write_config(entry);
  REQUIRE_THAT(h.report(), HasFinding("cdi", "warn",
                                      "env-devices `NVIDIA_VISIBLE_DEVICES`: 1 of 2 `nvidia.com/gpu` devices have "
                                      "their nodes here; absent: nvidia.com/gpu=1: `all` fails on this node"));
  h.write_config(entry + "scope = \"visible\"\n");
  REQUIRE_THAT(h.report(), HasFinding("cdi", "ok",
                                      "env-devices `NVIDIA_VISIBLE_DEVICES`: 1 of 2 `nvidia.com/gpu` devices have "
                                      "their nodes here (scope = \"visible\""));
}
