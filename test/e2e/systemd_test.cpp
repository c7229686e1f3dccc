// SPDX-License-Identifier: Apache-2.0
// The systemd node (systemd_node.h): containerd 1.6 and runc 1.1.5 on the
// systemd cgroup driver, where a container's device access is the program
// systemd builds for its scope from the unit's DeviceAllow= and rebuilds on
// every `systemctl daemon-reload`. A device that is only in a program, and
// not in the unit, is gone after a reload: these cases reload after every
// change and open the device again.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "e2e_util.h"
#include "systemd_node.h"

using namespace specshim::e2e;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The stand-in devices, made in the share (the node's /specshim-test/dev):
// accel0 has /dev/kmsg's numbers (1:11), gpu0 /dev/fuse's (10:229); both
// open for writing, neither is in runc's default rules. Real drivers hold
// them: runc 1.1.5 leaves a device out of the unit's DeviceAllow= when
// /sys/dev/char/M:m does not exist (a number no driver holds), and a reload
// then takes it away.
constexpr const char* kAccel = "/specshim-test/dev/accel0";
constexpr const char* kGpu = "/specshim-test/dev/gpu0";
// unheld0: 240:0, a number no driver holds (opens with ENXIO where allowed).
constexpr const char* kUnheld = "/specshim-test/dev/unheld0";

void make_devices(const SystemdNode& n) {
  fs::create_directories(n.share() / "dev");
  for (auto [name, major, minor] :
       {std::tuple{"accel0", 1, 11}, std::tuple{"gpu0", 10, 229}, std::tuple{"unheld0", 240, 0}}) {
    const fs::path p = n.share() / "dev" / name;
    REQUIRE(::mknod(p.c_str(), S_IFCHR | 0666, makedev(major, minor)) == 0);
    fs::permissions(p, fs::perms(0666));
  }
}

// The CDI specs: example.com/accel=0, nvidia.com/gpu=0, example.com/unheld=0.
void write_cdi(const SystemdNode& n) {
  auto spec = [](const std::string& kind, const std::string& path, const std::string& host) {
    json node = {{"path", path}, {"hostPath", host}};
    json device = {{"name", "0"}, {"containerEdits", {{"deviceNodes", json::array({node})}}}};
    return json{{"cdiVersion", "0.5.0"}, {"kind", kind}, {"devices", json::array({device})}};
  };
  specshim::test::write_file(n.share() / "cdi/accel.json", spec("example.com/accel", "/dev/accel0", kAccel).dump(2));
  specshim::test::write_file(n.share() / "cdi/gpu.json", spec("nvidia.com/gpu", "/dev/nvidia0", kGpu).dump(2));
  specshim::test::write_file(n.share() / "cdi/unheld.json",
                             spec("example.com/unheld", "/dev/unheld0", kUnheld).dump(2));
}

// The node's specshim config: runc behind the node's wrapper (node.sh) and
// the CDI specs above; then `extra`.
std::string node_config(const std::string& extra = "") {
  return "[runtime]\npath = \"/usr/local/libexec/specshim-node/runtime\"\n\n"
         "[cdi]\nspec-dirs = [\"/specshim-test/cdi\"]\n" +
         extra;
}

// kDevicePlugin: the device-plugin modifier for nvidia.com/gpu, from the
// (fake) kubelet's checkpoint under the share.
constexpr const char* kDevicePlugin =
    "\n[device-plugin]\nenabled = true\nkubelet-root = \"/specshim-test/kubelet\"\n\n"
    "[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\nproviders = [\"kubelet\"]\n";

// run_verb runs `specshim VERB --root <containerd's runc root> ARGS...` in
// the node, with `path` as PATH when given.
specshim::test::ProcessResult run_verb(const SystemdNode& n, const std::string& verb,
                                       const std::vector<std::string>& args, const std::string& path = "") {
  std::vector<std::string> argv;
  if (!path.empty()) argv = {"env", "PATH=" + path};
  argv.insert(argv.end(), {"specshim", verb, "--root", "/run/containerd/runc/k8s.io"});
  argv.insert(argv.end(), args.begin(), args.end());
  return n.exec(argv);
}

// A running CRI pod of one container on the node, removed at scope exit.
struct RunningPod {
  RunningPod(SystemdNode& n, const std::string& name, const cri::ContainerConfig& cfg) : n(n) {
    config = n.pod_config(name);
    id = n.cri().run_pod_sandbox(config, kHandler);
    container = n.cri().create_container(id, cfg, config);
    n.cri().start_container(container);
    if (n.cri().container_status(container).state() != cri::CONTAINER_RUNNING)
      throw std::runtime_error("container of " + name + " is not running\n" + n.diagnostics());
  }
  ~RunningPod() {
    try {
      n.cri().stop_pod_sandbox(id);
      n.cri().remove_pod_sandbox(id);
    } catch (const std::exception&) {
    }
  }
  SystemdNode& n;
  cri::PodSandboxConfig config;
  std::string id, container;
};

// sleeper: a kubelet-like container that waits, without the cpu shares and
// oom_score_adj (this cgroup2 has no cpu controller; see runtime.sh).
cri::ContainerConfig sleeper(const std::string& name) {
  auto cfg = container_config(name, "exec sleep 600");
  cfg.mutable_linux()->clear_resources();
  return cfg;
}

// open_result: what opening `path` for writing in the container says: "opens"
// (or ENXIO: the cgroup let it through to a number no driver holds, as
// 240:1 below), "denied" (EPERM: the cgroup refused), or the shell's words.
std::string open_result(SystemdNode& n, const std::string& id, const std::string& path) {
  auto r = n.cri().exec_sync(id, {"/bin/sh", "-c", "(exec 3>" + path + ") 2>&1 && echo opens; true"});
  const std::string out = r.stdout();
  if (out == "opens\n" || out.find("No such device or address") != std::string::npos) return "opens";
  if (out.find("Operation not permitted") != std::string::npos) return "denied";
  return out;
}

// mknod_result: the container makes its own node with `major:minor` (runc's
// default rules allow mknod of any char device) and opens it: only the
// cgroup's rule decides.
std::string mknod_result(SystemdNode& n, const std::string& id, int major, int minor) {
  const std::string node = "/tmp/probe-" + std::to_string(major) + "-" + std::to_string(minor);
  n.cri().exec_sync(
      id, {"/bin/sh", "-c",
           "rm -f " + node + "; mknod " + node + " c " + std::to_string(major) + " " + std::to_string(minor)});
  return open_result(n, id, node);
}

// allows: DeviceAllow= (systemctl show --value: an entry a line) holds
// `entry` ("/dev/char/1:11 rw"); mentions: some entry is for `device`.
bool allows(const std::string& device_allow, const std::string& entry) {
  return ("\n" + device_allow).find("\n" + entry + "\n") != std::string::npos;
}
bool mentions(const std::string& device_allow, const std::string& device) {
  return ("\n" + device_allow).find("\n" + device + " ") != std::string::npos;
}

}  // namespace

TEST_CASE(
    "systemd node: a CRI pod's CDI device and kubelet-granted GPU are in its scope's DeviceAllow= and open "
    "after a daemon-reload") {
  SystemdNode n;
  // The installer, run with --host-root /, checked the changed config with
  // the node's own containerd before restarting it.
  CHECK_THAT(n.installed(), Catch::Contains("the node's containerd reads the changed configuration (chroot / "
                                            "containerd --config /etc/containerd/config.toml config dump)"));
  make_devices(n);
  write_cdi(n);
  n.write_config(node_config(kDevicePlugin));
  auto cfg = sleeper("main");
  (*cfg.mutable_annotations())["cdi.k8s.io/accel_0"] = "example.com/accel=0";
  const std::string name = "gpu-pod";
  const auto pod_cfg = n.pod_config(name);
  const auto& meta = pod_cfg.metadata();
  // The kubelet granted nvidia.com/gpu 0; its device plugin answered with the
  // CDI name (the checkpoint's entry for the container).
  FakeKubelet kubelet(json{{"kubelet_root", (n.share() / "kubelet").string()},
                           {"pods", json::array({{{"namespace", meta.namespace_()},
                                                  {"name", meta.name()},
                                                  {"uid", meta.uid()},
                                                  {"containers", {{"main", {{"nvidia.com/gpu", {"0"}}}}}}}})},
                           {"allocatable", {{"nvidia.com/gpu", {"0"}}}},
                           {"checkpoint",
                            {{"registered", {{"nvidia.com/gpu", {"0"}}}},
                             {"entries", json::array({{{"pod_uid", meta.uid()},
                                                       {"container", "main"},
                                                       {"resource", "nvidia.com/gpu"},
                                                       {"devices_by_numa", {{"0", {"0"}}}},
                                                       {"alloc", {{"cdi_devices", {"nvidia.com/gpu=0"}}}}}})}}}}
                          .dump(),
                      n.share());
  RunningPod pod(n, name, cfg);
  const auto diagnosed = run_verb(n, "diagnose", {pod.container});
  INFO(n.diagnostics() << "\n--- specshim diagnose\n" << diagnosed.out << diagnosed.err);
  const std::string unit = unit_of(pod.container);
  const std::string allow = n.device_allow(unit);
  INFO("DeviceAllow= of " << unit << ": " << allow);
  CHECK(allows(allow, "/dev/char/1:11 rwm"));
  CHECK(allows(allow, "/dev/char/10:229 rwm"));
  CHECK(open_result(n, pod.container, "/dev/accel0") == "opens");
  CHECK(open_result(n, pod.container, "/dev/nvidia0") == "opens");
  n.daemon_reload();
  CHECK(open_result(n, pod.container, "/dev/accel0") == "opens");
  CHECK(open_result(n, pod.container, "/dev/nvidia0") == "opens");
  // What was not granted stays out, before and after the reload.
  CHECK(mknod_result(n, pod.container, 240, 1) == "denied");
}

TEST_CASE("systemd node: attach survives a daemon-reload, and detach takes the device back for good") {
  SystemdNode n;
  make_devices(n);
  n.write_config(node_config());
  RunningPod pod(n, "attach-pod", sleeper("main"));
  INFO(n.diagnostics());
  const std::string unit = unit_of(pod.container);
  REQUIRE(mknod_result(n, pod.container, 1, 11) == "denied");

  auto attach = run_verb(n, "attach", {pod.container, "--device", std::string(kAccel) + ":/dev/accel0:rw"});
  INFO("attach: " << attach.out << attach.err);
  REQUIRE(attach.exit_code == 0);
  CHECK(allows(n.device_allow(unit), "/dev/char/1:11 rw"));
  CHECK(open_result(n, pod.container, "/dev/accel0") == "opens");
  n.daemon_reload();
  CHECK(open_result(n, pod.container, "/dev/accel0") == "opens");
  CHECK(mknod_result(n, pod.container, 1, 11) == "opens");

  auto detach = run_verb(n, "detach", {pod.container, "--device", "/dev/accel0"});
  INFO("detach: " << detach.out << detach.err);
  REQUIRE(detach.exit_code == 0);
  CHECK_FALSE(mentions(n.device_allow(unit), "/dev/char/1:11"));
  CHECK(mknod_result(n, pod.container, 1, 11) == "denied");
  n.daemon_reload();
  CHECK(mknod_result(n, pod.container, 1, 11) == "denied");
}

TEST_CASE("systemd node: an attach whose DeviceAllow= fails is undone: program, node and record as before") {
  SystemdNode n;
  make_devices(n);
  n.write_config(node_config());
  RunningPod pod(n, "undo-pod", sleeper("main"));
  INFO(n.diagnostics());
  const std::string unit = unit_of(pod.container);
  const std::string allowed_before = n.device_allow(unit);
  // systemd refuses the property (a policy, a bus that went away): the
  // systemctl attach finds first on its PATH says so.
  specshim::test::write_file(n.share() / "failbin/systemctl",
                             "#!/bin/sh\necho 'Failed to set unit properties: Access denied' >&2\nexit 1\n", 0755);
  auto attach = run_verb(n, "attach", {pod.container, "--device", std::string(kAccel) + ":/dev/accel0:rw"},
                         "/specshim-test/failbin:/usr/sbin:/usr/bin:/sbin:/bin");
  INFO("attach: " << attach.out << attach.err);
  CHECK(attach.exit_code != 0);
  CHECK_THAT(attach.err, Catch::Contains("systemctl set-property `" + unit + "`") && Catch::Contains("Access denied"));
  // The program attach had replaced is back, the node and the record gone.
  CHECK(n.device_allow(unit) == allowed_before);
  CHECK(mknod_result(n, pod.container, 1, 11) == "denied");
  CHECK(n.cri()
            .exec_sync(pod.container, {"/bin/sh", "-c", "test -e /dev/accel0 && echo present || echo gone"})
            .stdout() == "gone\n");
  CHECK_FALSE(fs::exists(
      n.in_node("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + pod.container + "/specshim-attached.json")));
}

TEST_CASE("systemd node: reconcile moves a device between two containers, and a daemon-reload keeps that state",
          "[hotplug]") {
  SystemdNode n;
  make_devices(n);
  const fs::path desired = n.share() / "hotplug.yaml";
  auto wants = [&](const std::string& pod) {
    specshim::test::write_file(desired.string() + ".tmp", "containers:\n  - pod: {namespace: default, name: " + pod +
                                                              ", container: main}\n    devices: [\"" + kGpu +
                                                              ":/dev/nvidia0:rw\"]\n");
    fs::rename(desired.string() + ".tmp", desired);  // as agents replace it
  };
  wants("reconcile-a");
  n.write_config(node_config("\n[hotplug]\nenabled = true\ndesired = \"/specshim-test/hotplug.yaml\"\n"));
  RunningPod a(n, "reconcile-a", sleeper("main"));
  RunningPod b(n, "reconcile-b", sleeper("main"));
  INFO(n.diagnostics());
  // The hotplug modifier gave a's container the device at create.
  CHECK(open_result(n, a.container, "/dev/nvidia0") == "opens");
  CHECK(mknod_result(n, b.container, 10, 229) == "denied");

  wants("reconcile-b");
  auto r = run_verb(n, "reconcile", {});
  INFO("reconcile: " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("container `" + a.container + "`: detached /dev/nvidia0 (c 10:229)") &&
                        Catch::Contains("container `" + b.container +
                                        "` (pod `default/reconcile-b` container `main`): attached /dev/nvidia0 "
                                        "(c 10:229 rw"));
  for (int reloaded = 0; reloaded < 2; ++reloaded) {
    INFO("after " << reloaded << " daemon-reload");
    CHECK_FALSE(mentions(n.device_allow(unit_of(a.container)), "/dev/char/10:229"));
    CHECK(allows(n.device_allow(unit_of(b.container)), "/dev/char/10:229 rw"));
    CHECK(mknod_result(n, a.container, 10, 229) == "denied");
    CHECK(open_result(n, b.container, "/dev/nvidia0") == "opens");
    if (!reloaded) n.daemon_reload();
  }
}

TEST_CASE("systemd node: diagnose FAILs a device its container's program allows and its unit does not") {
  SystemdNode n;
  make_devices(n);
  // An admin's patch gives containers a rule for minor 11 of any major, and
  // the workload makes its own /dev/accel0 (runc allows mknod): runc's
  // program allows it, but systemd has no DeviceAllow= for "c *:11", and runc
  // leaves it out of the unit (with a warning in its log).
  n.write_config(node_config(R"(
[[patches]]
name = "accel-any-major"
match = { container-kind = "container" }
allow-sensitive = true
ops = [
  { op = "add", path = "/linux/resources/devices/-", value = { allow = true, type = "c", minor = 11, access = "rw" } },
]
)"));
  auto cfg = container_config("main", "mknod /dev/accel0 c 1 11 && exec sleep 600");
  cfg.mutable_linux()->clear_resources();
  RunningPod pod(n, "diagnose-pod", cfg);
  INFO(n.diagnostics());
  const std::string unit = unit_of(pod.container);
  REQUIRE(open_result(n, pod.container, "/dev/accel0") == "opens");
  REQUIRE_FALSE(mentions(n.device_allow(unit), "/dev/char/1:11"));

  auto d = run_verb(n, "diagnose", {pod.container, "--device", "/dev/accel0"});
  INFO("diagnose: " << d.out << d.err);
  CHECK(d.exit_code == 1);
  CHECK_THAT(d.out, Catch::Contains("DeviceAllow= of `" + unit + "` does not allow c 1:11 rw"));
  // What the FAIL foretells: a reload takes the device away.
  n.daemon_reload();
  CHECK(open_result(n, pod.container, "/dev/accel0") == "denied");
}

TEST_CASE(
    "systemd node: a CDI device no driver holds at create: runc 1.1.5 leaves it out of DeviceAllow=, runc "
    "1.3 keeps it") {
  SystemdNode n;
  make_devices(n);
  write_cdi(n);
  n.write_config(node_config());
  auto cfg = sleeper("main");
  (*cfg.mutable_annotations())["cdi.k8s.io/unheld_0"] = "example.com/unheld=0";
  RunningPod pod(n, "unheld-pod", cfg);
  INFO(n.diagnostics());
  const std::string unit = unit_of(pod.container);
  REQUIRE(open_result(n, pod.container, "/dev/unheld0") == "opens");
  auto d = run_verb(n, "diagnose", {pod.container, "--device", "/dev/unheld0"});
  INFO("diagnose: " << d.out << d.err);
  if (delegate_name() == std::string("runc-1.1")) {
    // runc 1.1.5 gives systemd a device only when /dev/char/240:0 or
    // /sys/dev/char/240:0 exists; neither does for a number no driver holds.
    CHECK_FALSE(mentions(n.device_allow(unit), "/dev/char/240:0"));
    CHECK(d.exit_code == 1);
    CHECK_THAT(d.out, Catch::Contains("DeviceAllow= of `" + unit + "` does not allow c 240:0 rw"));
    n.daemon_reload();
    CHECK(open_result(n, pod.container, "/dev/unheld0") == "denied");
  } else {
    CHECK(allows(n.device_allow(unit), "/dev/char/240:0 rwm"));
    CHECK(d.exit_code == 0);
    n.daemon_reload();
    CHECK(open_result(n, pod.container, "/dev/unheld0") == "opens");
  }
}

TEST_CASE("systemd node: booting and stopping nodes leaves this host's /tmp, /run and cgroup2 root as they were") {
  const fs::path sentinel = fs::temp_directory_path() / ("specshim-node-sentinel-" + std::to_string(::getpid()));
  specshim::test::write_file(sentinel, "kept\n");
  std::string unified = "/sys/fs/cgroup/unified";
  if (!fs::exists(unified + "/cgroup.controllers")) unified = "/sys/fs/cgroup";
  auto children = [&] {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(unified))
      if (e.is_directory()) out.insert(e.path().filename().string());
    return out;
  };
  const auto before = children();
  const bool host_systemd = fs::exists("/run/systemd/system");
  {
    SystemdNode n;
    // The node's systemd runs in its own pid namespace and cgroup root.
    auto init = n.exec_ok({"cat", "/proc/1/comm"});
    CHECK(init == "systemd\n");
    // Its cgroup2 line, as the node's cgroup namespace shows it: systemd put
    // itself in init.scope of a root of its own.
    CHECK_THAT(n.exec_ok({"cat", "/proc/1/cgroup"}), Catch::EndsWith("\n0::/init.scope\n"));
    // Its tmpfiles emptied its own /tmp, not this host's.
    CHECK_FALSE(fs::exists(n.in_node(sentinel)));
  }
  CHECK(specshim::test::read_file(sentinel) == "kept\n");
  CHECK(fs::exists("/run/systemd/system") == host_systemd);  // no systemd took over this host's /run
  // No system.slice or init.scope of a systemd on this host's hierarchy, and
  // the node's own cgroups are gone (other tiers' cgroups may come and go).
  for (const auto& name : children())
    if (!before.count(name)) {
      CHECK(name != "system.slice");
      CHECK(name != "init.scope");
      CHECK(name.rfind("specshim-node-", 0) != 0);
    }
  fs::remove(sentinel);
}
