// SPDX-License-Identifier: Apache-2.0
// specshim doctor, the real binary, against fake host trees (--host-root): the
// containerd config, its runtime handlers and its own CDI, by version.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "doctor_host.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using nlohmann::json;

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

TEST_CASE("doctor: the kubelet's cgroupDriver against the SystemdCgroup of the handler that runs specshim") {
  FakeHost h;
  const fs::path kubelet = h.root / "var/lib/kubelet/config.yaml";
  const std::string systemd_cgroup =
      FakeHost::containerd_config("specshim", "/usr/local/bin/specshim") + "  SystemdCgroup = true\n";
  SECTION("no kubelet config: a note, nothing compared") {
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "info",
                                    kubelet.string() +
                                        ": absent (no kubelet here, or another [kubelet] root): the kubelet's cgroup "
                                        "driver is not compared with the handlers' SystemdCgroup"));
    REQUIRE(report["problems"] == 0);
  }
  SECTION("kubeadm's systemd against a handler left on containerd's default: a problem naming both") {
    write_file(kubelet,
               "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n");
    auto r = h.doctor({"--json"});
    INFO(r.out << r.err);
    REQUIRE_THAT(json::parse(r.out),
                 HasFinding("containerd", "fail",
                            "the kubelet's cgroupDriver is systemd (" + kubelet.string() +
                                " line 3) but handler `specshim` uses cgroupfs (SystemdCgroup unset: containerd's "
                                "default, false): kubelet and containerd disagree, so its pods fail to start or land "
                                "in the wrong cgroup hierarchy; set SystemdCgroup = true in the handler's options"));
    REQUIRE(r.exit_code == 1);
  }
  SECTION("both systemd: ok, with the handler's file and line") {
    write_file(kubelet, "kind: KubeletConfiguration\ncgroupDriver: \"systemd\"\n");
    write_file(h.root / "etc/containerd/config.toml", systemd_cgroup);
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "ok",
                                    "the kubelet's cgroupDriver is systemd (" + kubelet.string() +
                                        " line 2), handler `specshim` uses systemd (SystemdCgroup = true, " +
                                        (h.root / "etc/containerd/config.toml").string() + " line 6)"));
    REQUIRE(report["problems"] == 0);
  }
  SECTION("a kubelet config without cgroupDriver is the kubelet's default, cgroupfs") {
    write_file(kubelet, "{\"kind\": \"KubeletConfiguration\", \"apiVersion\": \"kubelet.config.k8s.io/v1beta1\"}\n");
    write_file(h.root / "etc/containerd/config.toml", systemd_cgroup);
    REQUIRE_THAT(h.report(), HasFinding("containerd", "fail",
                                        "the kubelet's cgroupDriver is cgroupfs (" + kubelet.string() +
                                            " leaves it out: the kubelet's default) but handler `specshim` uses "
                                            "systemd (SystemdCgroup = true, "));
  }
  SECTION("version 3: a drop-in sets BinaryName, the root SystemdCgroup; under [kubelet] root") {
    const std::string v3 = "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.specshim";
    write_file(h.root / "etc/containerd/config.toml", "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n" +
                                                          v3 + "]\n  runtime_type = \"io.containerd.runc.v2\"\n" + v3 +
                                                          ".options]\n  SystemdCgroup = true\n");
    write_file(h.root / "etc/containerd/conf.d/specshim.toml",
               "version = 3\n" + v3 + ".options]\n  BinaryName = \"/usr/local/bin/specshim\"\n");
    write_file(h.root / "var/lib/k0s/kubelet/config.yaml", "cgroupDriver: cgroupfs\n");
    h.write_config("[kubelet]\nroot = \"/var/lib/k0s/kubelet\"\n");
    REQUIRE_THAT(h.report(), HasFinding("containerd", "fail",
                                        "the kubelet's cgroupDriver is cgroupfs (" +
                                            (h.root / "var/lib/k0s/kubelet/config.yaml").string() +
                                            " line 1) but handler `specshim` uses systemd (SystemdCgroup = true, " +
                                            (h.root / "etc/containerd/config.toml").string() + " line 6)"));
  }
  SECTION("a kubelet config that does not parse is a note") {
    write_file(kubelet, "cgroupDriver: [systemd\n");
    REQUIRE_THAT(h.report(), HasFinding("containerd", "info", "config.yaml`: line "));
  }
}
