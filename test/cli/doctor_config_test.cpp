// SPDX-License-Identifier: Apache-2.0
// specshim doctor, the real binary, against fake host trees (--host-root): the
// specshim config, the runtime, CDI spec files and env-devices.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "doctor_host.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using nlohmann::json;

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
                                            "user-namespaces", "nri", "containerd"});
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

TEST_CASE("doctor: a config that does not load says what creates do until it loads") {
  FakeHost h;
  h.write_config("[chain]\nno-such-key = 1\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "info",
                                      "until it loads, every container's create fails with this error; sandboxes "
                                      "start untouched"));
  h.write_config("[policy]\non-config-error = \"pass\"\n[chain]\nno-such-key = 1\n");
  REQUIRE_THAT(h.report(), HasFinding("config", "info",
                                      "until it loads, containers start WITHOUT the chain ([policy] on-config-error = "
                                      "\"pass\"), and sandboxes start untouched"));
}

TEST_CASE("doctor: on-config-error = pass in a valid config is a warning") {
  FakeHost h;
  h.write_config("[policy]\non-config-error = \"pass\"\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("config", "warn", "[policy] on-config-error = \"pass\": should this file stop"));
  h.write_config("[policy]\non-config-error = \"fail\"\n");
  REQUIRE_THAT(h.report(), !HasFinding("config", "warn", "on-config-error"));
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
  REQUIRE_THAT(h.report(), HasFinding("config", "info", "patch `vgpu`: 1 ops, 1 set-mounts; for every container"));

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
  h.write_config(
      "[policy]\nopt-out-annotation = \"example.com/skip\"\n[passwd]\n"
      "match = { images = [\"nvcr.io/*\"], not = { namespaces = [\"kube-*\"] } }\n"
      "[[patches]]\nname = \"p\"\nops = [{ op = \"add\", path = \"/x\", value = 1 }]\n");
  json rollout = h.report();
  REQUIRE_THAT(rollout, HasFinding("config", "info",
                                   "passwd: entries for images nvcr.io/*; not (namespaces kube-*); unless opted out "
                                   "(annotation example.com/skip = \"true\"); where an entry cannot be ensured"));
  REQUIRE_THAT(rollout, HasFinding("config", "info",
                                   "patch `p`: 1 ops, 0 set-mounts; for every container; unless opted out "
                                   "(annotation example.com/skip = \"true\")"));
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
