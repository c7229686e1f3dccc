// SPDX-License-Identifier: Apache-2.0
// specshim doctor, the real binary, against fake host trees (--host-root): the
// kubelet, the kernel's cgroups, capabilities and hot-plug.
#include "doctor_host.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

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
  const fs::path containerd = h.root / "etc/containerd/config.toml";
  write_file(containerd,
             FakeHost::containerd_config("specshim", "/usr/local/bin/specshim") + "  SystemdCgroup = true\n");
  h.write_config("[hotplug]\nenabled = true\n");
  const std::string lost =
      "), but systemctl is not in /usr/bin or /bin: attach cannot set DeviceAllow=, a daemon-reload would take "
      "attached devices away from containers in a .scope";
  SECTION("hot-plug on, the handler on systemd scopes, no systemctl: a warning naming the file") {
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("hotplug", "warn",
                                    "systemd is PID 1 and container cgroups are systemd scopes (handler `specshim`: "
                                    "SystemdCgroup = true, " +
                                        containerd.string() + " line 6" + lost));
    REQUIRE(report["problems"] == 0);
  }
  SECTION("hot-plug off: the same, as a note") {
    h.write_config("");
    REQUIRE_THAT(h.report(),
                 HasFinding("hotplug", "info", lost + " ([hotplug] enabled = false: for an attach by hand)"));
  }
  SECTION("the handler on cgroupfs: no unit owns container cgroups, a reload leaves them alone") {
    write_file(containerd, FakeHost::containerd_config("specshim", "/usr/local/bin/specshim"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("hotplug", "ok",
                                    "systemd is PID 1, but container cgroups are no systemd units (handler "
                                    "`specshim`: SystemdCgroup unset: containerd's default, false): a daemon-reload "
                                    "leaves their devices alone, attach needs no systemctl"));
    REQUIRE_THAT(report, !HasFinding("hotplug", "warn", "systemd"));
  }
  SECTION("no handler runs this binary: whether cgroups are scopes is unknown, a warning") {
    write_file(containerd, "version = 2\n");
    REQUIRE_THAT(h.report(), HasFinding("hotplug", "warn",
                                        "systemd is PID 1 but systemctl is not in /usr/bin or /bin, and no containerd "
                                        "handler runs this binary"));
  }
  SECTION("systemctl there: attach sets DeviceAllow=") {
    write_file(h.root / "usr/bin/systemctl", "#!/bin/sh\n", 0755);
    REQUIRE_THAT(h.report(),
                 HasFinding("hotplug", "ok",
                            "systemd is PID 1: for a container cgroup in a .scope, attach also sets DeviceAllow= with "
                            "`/usr/bin/systemctl set-property --runtime`"));
  }
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
