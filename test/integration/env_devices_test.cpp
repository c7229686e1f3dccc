// SPDX-License-Identifier: Apache-2.0
// env-devices through the real specshim binary and real runc: the
// NVIDIA_VISIBLE_DEVICES of a CRI container becomes CDI requests, bounded by
// the kubelet's device-manager checkpoint, which cdi injects. The GPUs are
// the test's own host nodes, 1:11 like test/support's HostDevice, named by a
// CDI spec in a temp spec dir as nvidia-ctk names them (index and UUID with
// identical edits, and `all`); the control node /dev/nvidiactl is /dev/null.
// runc's default allow list does not cover 1:11, so a GPU node opens only by
// the rule cdi added for it; the probe's own 1:11 node, made in the
// container, shows whether any such rule is there.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <map>

#include "container.h"
#include "fake_kubelet.h"
#include "runtimes.h"
#include "specshim/base/caps.h"
#include "specshim/kubelet/types.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;
using specshim::kubelet::AllocateResponse;

namespace {

const std::string kUid = "0f6a1c2e-0000-4000-8000-0000000000e1";
const std::vector<std::string> kGpu = {"GPU-4a3b2c1d-0000-4000-8000-000000000000",
                                       "GPU-4a3b2c1d-0000-4000-8000-000000000001",
                                       "GPU-4a3b2c1d-0000-4000-8000-000000000002"};

// The probe prints, per node, whether it is there and opens (for writing,
// nothing written: harmless on 1:11 and /dev/null), every /dev/nvidia* name,
// whether a 1:11 node the container makes itself opens, and the variable.
const std::vector<std::string> kProbe = {
    "/bin/sh", "-c",
    "for n in nvidia0 nvidia1 nvidia2 nvidiactl; do"
    "  if [ ! -e /dev/$n ]; then echo \"$n absent\";"
    "  elif (exec 3>/dev/$n) 2>/dev/null; then echo \"$n $(stat -c '%t:%T' /dev/$n) open\";"
    "  else echo \"$n denied\"; fi;"
    "done;"
    "echo \"nodes:\" $(ls /dev | grep nvidia);"
    "mknod /dev/own-1-11 c 1 11 && if (exec 3>/dev/own-1-11) 2>/dev/null; then echo 'own 1:11 open';"
    "  else echo 'own 1:11 denied'; fi;"
    "echo \"NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES\""};

// Host holds the host side: three GPU nodes, the CDI spec dir and the kubelet root.
struct Host {
  TempDir tmp;
  fs::path cdi = tmp / "cdi";
  fs::path kubelet = tmp / "kubelet";
  std::vector<fs::path> gpu_nodes;

  // absent: GPUs whose node this host's /dev lacks, as in a container that
  // runs a nested runtime and was given only some GPUs; the CDI spec, the
  // node's, still names them.
  explicit Host(const std::vector<std::size_t>& absent = {}) {
    fs::create_directories(tmp / "host-dev");
    for (std::size_t i = 0; i < kGpu.size(); ++i) {
      gpu_nodes.push_back(tmp / "host-dev" / ("nvidia" + std::to_string(i)));
      if (std::find(absent.begin(), absent.end(), i) != absent.end()) continue;
      REQUIRE(::mknod(gpu_nodes.back().c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
    }
    std::string y = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n";
    auto device = [&](const std::string& name, const std::vector<std::size_t>& gpus) {
      y += "- name: \"" + name + "\"\n  containerEdits:\n    deviceNodes:\n";
      for (auto i : gpus)
        y += "    - path: /dev/nvidia" + std::to_string(i) + "\n      hostPath: " + gpu_nodes[i].string() + "\n";
    };
    for (std::size_t i = 0; i < kGpu.size(); ++i) {
      device(std::to_string(i), {i});
      device(kGpu[i], {i});
    }
    device("all", {0, 1, 2});
    y += "containerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n    hostPath: /dev/null\n";
    write_file(cdi / "nvidia.yaml", y);
  }

  // grant writes the checkpoint: pod_uid's container `main` got gpus (indexes
  // into kGpu) of nvidia.com/gpu, the plugin's answer naming their UUIDs.
  void grant(const std::string& pod_uid, const std::vector<std::size_t>& gpus,
             const std::map<std::string, std::string>& more_env = {}) const {
    std::vector<std::string> ids;
    for (auto i : gpus) ids.push_back(kGpu[i]);
    AllocateResponse alloc;
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
    alloc.envs = more_env;
    alloc.envs["NVIDIA_VISIBLE_DEVICES"] = list;
    write_checkpoint(kubelet, {{pod_uid, "main", "nvidia.com/gpu", {{"-1", ids}}, alloc}}, {}, CheckpointLayout::numa);
  }

  // with_device_plugin adds [device-plugin] with no resources: only its
  // protect-env (on by default) reads the checkpoint.
  std::string config(bool with_device_plugin = false) const {
    return std::string("[chain]\norder = [") + (with_device_plugin ? "\"device-plugin\", " : "") +
           "\"env-devices\", \"cdi\", \"devices-cgroup\"]" +
           (with_device_plugin ? "\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" + kubelet.string() + "\""
                               : "") +
           "\n\n[cdi]\nspec-dirs = [\"" + cdi.string() +
           "\"]\ncache-dir = \"\"\n\n[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
           "kubelet-root = \"" +
           kubelet.string() + "\"\n";
  }

  // sibling_config turns on device-plugin's providers for nvidia.com/gpu
  // (and DRA hand-overs) beside env-devices.
  std::string sibling_config(const std::string& env_devices_extra,
                             const std::string& providers = "\"kubelet\", \"container-sync\"") const {
    return "[chain]\norder = [\"device-plugin\", \"env-devices\", \"cdi\", \"devices-cgroup\"]\n\n"
           "[device-plugin]\nenabled = true\nkubelet-root = \"" +
           kubelet.string() +
           "\"\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\n"
           "providers = [" +
           providers +
           "]\n\n[device-plugin.dra]\nenabled = true\n\n"
           "[cdi]\nspec-dirs = [\"" +
           cdi.string() +
           "\"]\ncache-dir = \"\"\n\n[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
           "kubelet-root = \"" +
           kubelet.string() + "\"\n" + env_devices_extra;
  }
};

// cri_bundle is the probe as containerd's CRI writes a pod's container `main`:
// its annotations, the image's and the device plugin's env entries, and
// containerd's default capabilities (CAP_MKNOD among them) plus extra ones.
BusyboxBundle cri_bundle(const Host& host, const std::vector<std::string>& env,
                         const std::vector<std::string>& extra_caps = {}, const std::string& dir = "bundle") {
  BusyboxBundle b(host.tmp / dir);
  b.set_args(kProbe);
  b.spec()["annotations"] = {
      {"io.kubernetes.cri.container-type", "container"}, {"io.kubernetes.cri.container-name", "main"},
      {"io.kubernetes.cri.sandbox-id", "0123abcd"},      {"io.kubernetes.cri.sandbox-name", "trainer"},
      {"io.kubernetes.cri.sandbox-namespace", "team-a"}, {"io.kubernetes.cri.sandbox-uid", kUid}};
  for (const auto& e : env) b.spec()["process"]["env"].push_back(e);
  Json caps = Json::array({"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
                           "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                           "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"});
  for (const auto& c : extra_caps) caps.push_back(c);
  b.spec()["process"]["capabilities"] = {{"bounding", caps}, {"effective", caps}, {"permitted", caps}};
  b.save();
  return b;
}

// sibling_bundle is the probe as a dev box creates its sibling through the
// node's containerd, outside CRI: no io.kubernetes.cri.* annotations, the
// pod and the source container named by specshim.io annotations (or, with
// annotations given, those: none for a container that names no pod).
BusyboxBundle sibling_bundle(const Host& host, const std::vector<std::string>& env, const std::string& dir,
                             const Json& annotations = {{"specshim.io/pod", "team-a/trainer"},
                                                        {"specshim.io/devices-from", "main"}}) {
  BusyboxBundle b = cri_bundle(host, env, {}, dir);
  b.spec()["annotations"] = annotations;
  b.save();
  return b;
}

// run_probe runs the bundle through specshim (with config) and runc; the
// probe exits 0.
std::string run_probe(const Host& host, const BusyboxBundle& b, const std::string& config) {
  Shim shim(host.tmp.path(), config);
  auto r = shim.run(b, unique_id("it-envdev"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  return r.out;
}
std::string run_probe(const Host& host, const BusyboxBundle& b, bool with_device_plugin = false) {
  return run_probe(host, b, host.config(with_device_plugin));
}

// refused_log runs the bundle through specshim (with config) and expects
// the create refused before runc ran: exit 1, no output, config.json
// byte-identical, no container; it returns the --log file.
std::string refused_log(const Host& host, const BusyboxBundle& b, const std::string& config) {
  const std::string before = read_file(b.dir() / "config.json");
  Shim shim(host.tmp.path(), config);
  std::string id = unique_id("it-envdev-refused");
  auto r = shim.run(b, id);
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.out.empty());
  REQUIRE(read_file(b.dir() / "config.json") == before);
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);
  return Shim::log(b);
}

const std::string kPlugin = "NVIDIA_VISIBLE_DEVICES=" + kGpu[0] + "," + kGpu[1];

// kNoGpuVoid is the probe of a container that got no GPU and whose
// variable ends inert.
const std::string kNoGpuVoid =
    "nvidia0 absent\nnvidia1 absent\nnvidia2 absent\nnvidiactl absent\n"
    "nodes:\nown 1:11 denied\nNVIDIA_VISIBLE_DEVICES=void\n";

// kEveryCapability is what containerd's privileged: true adds to its defaults
// (cri_bundle's): every capability of a 3.16+ kernel.
const std::vector<std::string> kEveryCapability = {
    "CAP_DAC_READ_SEARCH", "CAP_LINUX_IMMUTABLE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",       "CAP_SYS_MODULE",      "CAP_SYS_RAWIO",     "CAP_SYS_PTRACE",   "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",       "CAP_SYS_BOOT",        "CAP_SYS_NICE",      "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",  "CAP_LEASE",           "CAP_AUDIT_CONTROL", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN",
    "CAP_SYSLOG",          "CAP_WAKE_ALARM",      "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ"};

}  // namespace

TEST_CASE("env-devices: a 2-GPU grant opens exactly the granted GPUs and the control node and PID 1 sees void") {
  Host host;
  host.grant(kUid, {0, 1});
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all", kPlugin});
  REQUIRE(run_probe(host, b) ==
          "nvidia0 1:b open\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl 1:3 open\n"
          "nodes: nvidia0 nvidia1 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");
}

TEST_CASE("env-devices: a pod-spec `all` beyond the grant fails the create naming the extra GPU before runc runs") {
  Host host;
  host.grant(kUid, {0, 1});
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all", kPlugin, "NVIDIA_VISIBLE_DEVICES=all"});
  REQUIRE_THAT(refused_log(host, b, host.config()),
               Contains("\"level\":\"error\",\"msg\":\"specshim: cdi: env NVIDIA_VISIBLE_DEVICES=\\\"all\\\" of "
                        "container `main` of pod `team-a/trainer` asks for nvidia.com/gpu=2 = nvidia.com/gpu=" +
                        kGpu[2] + ", beyond what the kubelet granted nvidia.com/gpu=" + kGpu[0] + ", nvidia.com/gpu=" +
                        kGpu[1] + " by `nvidia.com/gpu` (the checkpoint) (on-excess = \\\"fail\\\")"));
}

TEST_CASE("env-devices: `none` gives the control node only and no GPU node or GPU rule") {
  Host host;
  host.grant(kUid, {0});
  BusyboxBundle b = cri_bundle(
      host, {"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=" + kGpu[0], "NVIDIA_VISIBLE_DEVICES=none"});
  REQUIRE(run_probe(host, b) ==
          "nvidia0 absent\nnvidia1 absent\nnvidia2 absent\nnvidiactl 1:3 open\n"
          "nodes: nvidiactl\nown 1:11 denied\nNVIDIA_VISIBLE_DEVICES=void\n");
}

TEST_CASE("env-devices: a privileged container without a grant gets the GPU it names (privileged = honour)") {
  Host host;
  host.grant("uid-other", {2});
  // privileged: true as containerd writes it: every capability and a rule allowing every device.
  // Those this process holds: containerd gives its own, and runc can give no more.
  std::vector<std::string> every;
  for (const auto& cap : kEveryCapability)
    if (specshim::caps::own(cap).bounding) every.push_back(cap);
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=1"}, every);
  b.spec()["linux"]["resources"]["devices"] = Json::array({{{"allow", true}, {"access", "rwm"}}});
  b.save();
  REQUIRE(run_probe(host, b) ==
          "nvidia0 absent\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl 1:3 open\n"
          "nodes: nvidia1 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");
}

TEST_CASE("env-devices: CAP_SYS_ADMIN alone is not privileged: without a grant its `all` gets no GPU and ends void") {
  Host host;
  host.grant("uid-other", {2});
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, {"CAP_SYS_ADMIN"});
  REQUIRE(run_probe(host, b) == kNoGpuVoid);
}

TEST_CASE("env-devices: an unprivileged container without a grant and the image's `all` runs with no GPU, void") {
  Host host;
  host.grant("uid-other", {2});
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"});
  REQUIRE(run_probe(host, b) == kNoGpuVoid);
}

// ---- NVIDIA's runtime after specshim (install-on-host.sh --chain) ----

// NvidiaStandIn is NVIDIA's runtime as [runtime] path: a script that records
// the NVIDIA_VISIBLE_DEVICES the bundle's config.json hands it (the last
// entry, as NVIDIA's runtime reads it; "unset" without one) and runs runc.
struct NvidiaStandIn {
  fs::path script, record;
  explicit NvidiaStandIn(const Host& host)
      : script(host.tmp / "nvidia-container-runtime"), record(host.tmp / "handed") {
    write_file(script, nvidia_stand_in(record, "runc"));
    fs::permissions(script, fs::perms(0755));
  }
  std::string config(const Host& host, const std::string& extra = "") const {
    return host.config() + extra + "\n[runtime]\npath = \"" + script.string() + "\"\n";
  }
  std::string handed() const { return fs::exists(record) ? read_file(record) : ""; }
};

TEST_CASE("env-devices --chain: an image's baked `all` without a grant reaches NVIDIA's runtime as void") {
  Host host;
  host.grant("uid-other", {2});
  NvidiaStandIn nvidia(host);
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"});
  REQUIRE(run_probe(host, b, nvidia.config(host)) == kNoGpuVoid);
  REQUIRE(nvidia.handed() == "void\n");
}

TEST_CASE("env-devices --chain: outside-kubernetes = \"ignore\" hands NVIDIA's runtime void, not the request") {
  Host host;
  NvidiaStandIn nvidia(host);
  BusyboxBundle b = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, "outside", Json::object());
  REQUIRE(run_probe(host, b, nvidia.config(host, "outside-kubernetes = \"ignore\"\n")) == kNoGpuVoid);
  REQUIRE(nvidia.handed() == "void\n");
}

TEST_CASE("env-devices --chain: a granted request reaches NVIDIA's runtime as void, its GPUs already in") {
  Host host;
  host.grant(kUid, {0, 1});
  NvidiaStandIn nvidia(host);
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all", kPlugin});
  REQUIRE(run_probe(host, b, nvidia.config(host)) ==
          "nvidia0 1:b open\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl 1:3 open\n"
          "nodes: nvidia0 nvidia1 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");
  REQUIRE(nvidia.handed() == "void\n");
}

TEST_CASE("env-devices: HAMi's memory limit overridden by the pod spec is refused (device-plugin protect-env)") {
  Host host;
  host.grant(kUid, {1}, {{"CUDA_DEVICE_MEMORY_LIMIT_0", "4000m"}});
  std::vector<std::string> hami = {"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=" + kGpu[1],
                                   "CUDA_DEVICE_MEMORY_LIMIT_0=4000m"};
  // The plugin's own env passes, and so does the void env-devices appends.
  BusyboxBundle ok = cri_bundle(host, hami);
  REQUIRE(run_probe(host, ok, true) ==
          "nvidia0 absent\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl 1:3 open\n"
          "nodes: nvidia1 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");

  hami.push_back("CUDA_DEVICE_MEMORY_LIMIT_0=80000m");
  BusyboxBundle b = cri_bundle(host, hami, {}, "overridden");
  REQUIRE_THAT(refused_log(host, b, host.config(true)),
               Contains("specshim: device-plugin: process.env[") &&
                   Contains("CUDA_DEVICE_MEMORY_LIMIT_0=80000m\\\" overrides \\\"CUDA_DEVICE_MEMORY_LIMIT_0="
                            "4000m\\\", which the device plugin of `nvidia.com/gpu` set for container "
                            "`main` of pod `team-a/trainer` (the checkpoint)"));
}

// A dev box (`main` of team-a/trainer, granted GPUs 0 and 1) creates a
// sibling from a CUDA image, which bakes in NVIDIA_VISIBLE_DEVICES=all. The
// sibling's grant is its source's, carried from device-plugin in memory.
struct DevBox {
  Host host;
  FakeKubelet kubelet{host.kubelet};
  DevBox() {
    host.grant(kUid, {0, 1});
    kubelet.add_pod("team-a", "trainer", kUid, {{"main", {{"nvidia.com/gpu", {kGpu[0], kGpu[1]}}}}});
  }
};

const std::string kGpus01 =
    "nvidia0 1:b open\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl 1:3 open\n"
    "nodes: nvidia0 nvidia1 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n";

// run_sibling runs the dev box's sibling with env and [[env-devices]] keys
// extra; the probe exits 0.
std::string run_sibling(const DevBox& box, const std::vector<std::string>& env, const std::string& extra) {
  return run_probe(box.host, sibling_bundle(box.host, env, "sibling"), box.host.sibling_config(extra));
}

TEST_CASE("env-devices: a sibling outside CRI whose image bakes in `all` gets exactly its source's GPUs (clamp)") {
  DevBox box;
  REQUIRE(run_sibling(box, {"NVIDIA_VISIBLE_DEVICES=all"}, "on-excess = \"clamp\"\n") == kGpus01);
}

TEST_CASE("env-devices: a sibling's baked `all` beyond its source's grant fails naming the variable and the grant") {
  DevBox box;
  BusyboxBundle b = sibling_bundle(box.host, {"NVIDIA_VISIBLE_DEVICES=all"}, "sibling");
  // outside-kubernetes = "ignore" does not apply: the sibling has a grant.
  REQUIRE_THAT(refused_log(box.host, b, box.host.sibling_config("outside-kubernetes = \"ignore\"\n")),
               Contains("\"level\":\"error\",\"msg\":\"specshim: cdi: env NVIDIA_VISIBLE_DEVICES=\\\"all\\\" of "
                        "container `") &&
                   Contains("of pod `team-a/trainer` asks for nvidia.com/gpu=2 = nvidia.com/gpu=" + kGpu[2] +
                            ", beyond what the kubelet granted its source nvidia.com/gpu=" + kGpu[0] +
                            ", nvidia.com/gpu=" + kGpu[1] + " by `nvidia.com/gpu` (the checkpoint)"));
}

TEST_CASE("env-devices: a sibling without the variable gets its source's two GPUs from the plugin's answer") {
  DevBox box;
  // outside-kubernetes = "ignore" used to leave such a sibling with none.
  REQUIRE(run_sibling(box, {}, "outside-kubernetes = \"ignore\"\n") == kGpus01);
}

TEST_CASE("env-devices: a sibling whose source holds a DRA claim is bound by the claim's devices") {
  Host host;
  FakeKubelet kubelet(host.kubelet);
  kubelet.add_pod("team-a", "trainer", kUid, {{"main", {}}});  // it holds the claim only
  specshim::kubelet::ContainerAssignment claimed;
  specshim::kubelet::ClaimResource gpu{.driver_name = "gpu.nvidia.com",
                                       .pool_name = "node",
                                       .device_name = "gpu-1",
                                       .cdi_devices = {"k8s.gpu.nvidia.com/device=gpu-1"},
                                       .share_id = {}};
  claimed.dynamic_resources = {{"gpus", "team-a", {gpu}}};
  kubelet.assign("team-a", "trainer", "main", claimed);
  // The DRA driver's own spec: another kind, the same host node as GPU 1.
  write_file(host.cdi / "dra.yaml",
             "cdiVersion: 0.5.0\nkind: k8s.gpu.nvidia.com/device\ndevices:\n"
             "- name: gpu-1\n  containerEdits:\n    deviceNodes:\n"
             "    - path: /dev/nvidia1\n      hostPath: " +
                 host.gpu_nodes[1].string() + "\n");
  BusyboxBundle b = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, "sibling");
  REQUIRE_THAT(refused_log(host, b, host.sibling_config("", "\"kubelet\"")),
               Contains("beyond what the kubelet granted its source k8s.gpu.nvidia.com/device=gpu-1 "
                        "by DRA claim `team-a/gpus` of container `main`"));
  // The claim's device only: the control node is nvidia.com/gpu's spec-level
  // edit, and the DRA driver's spec (another kind) has none here.
  REQUIRE(run_probe(host, b, host.sibling_config("on-excess = \"clamp\"\n", "\"kubelet\"")) ==
          "nvidia0 absent\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl absent\n"
          "nodes: nvidia1\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");
}

TEST_CASE("env-devices: a nested runtime that sees 2 of 3 GPU nodes gets those 2 for `all` (scope = \"visible\")") {
  Host host({1});
  // A container of the nested containerd: no CRI identity, no grant.
  BusyboxBundle b = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, "bundle", Json::object());
  REQUIRE(run_probe(host, b, host.config() + "scope = \"visible\"\n") ==
          "nvidia0 1:b open\nnvidia1 absent\nnvidia2 1:b open\nnvidiactl 1:3 open\n"
          "nodes: nvidia0 nvidia2 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");

  // Without it, `all` is the node's: the absent node fails the create closed.
  BusyboxBundle host_scope = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, "host-scope", Json::object());
  Shim plain(host.tmp.path(), host.config());
  auto refused = plain.run(host_scope, unique_id("it-envdev-host-scope"));
  INFO(refused.err << Shim::log(host_scope));
  REQUIRE(refused.exit_code == 1);
  REQUIRE_THAT(Shim::log(host_scope), Contains(host.gpu_nodes[1].string()));
}

namespace {

// docker_gpus_bundle is a container of a dev box's dockerd asked for `--gpus`
// (moby's daemon/nvidia_linux.go): the request in NVIDIA_VISIBLE_DEVICES and
// NVIDIA's prestart hook, found on dockerd's PATH: here specshim's stand-in,
// a link named nvidia-container-runtime-hook as the package installs it.
BusyboxBundle docker_gpus_bundle(const Host& host, const std::string& list, const std::string& dir) {
  fs::path hook_dir = host.tmp / "libexec-docker";
  fs::create_directories(hook_dir);
  if (!fs::is_symlink(hook_dir / "nvidia-container-runtime-hook"))
    fs::create_symlink(SPECSHIM_BINARY, hook_dir / "nvidia-container-runtime-hook");
  BusyboxBundle b = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=" + list, "NVIDIA_DRIVER_CAPABILITIES=utility"}, dir,
                                   Json::object());
  b.spec()["hooks"]["prestart"] = Json::array({{{"path", (hook_dir / "nvidia-container-runtime-hook").string()},
                                                {"args", {"nvidia-container-runtime-hook", "prestart"}},
                                                {"env", {"PATH=" + hook_dir.string() + ":/usr/sbin:/usr/bin"}}}});
  b.save();
  return b;
}

}  // namespace

TEST_CASE(
    "env-devices: docker --gpus device=1 in a dev box gets the second GPU it sees, and NVIDIA's hook is removed") {
  Host host({1});
  BusyboxBundle b = docker_gpus_bundle(host, "1", "bundle");
  REQUIRE(run_probe(host, b, host.config() + "scope = \"visible\"\n") ==
          "nvidia0 absent\nnvidia1 absent\nnvidia2 1:b open\nnvidiactl 1:3 open\n"
          "nodes: nvidia2 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");
  Json spec = Json::parse(read_file(b.dir() / "config.json"));
  REQUIRE(spec["hooks"]["prestart"] == Json::array());
}

TEST_CASE("env-devices: specshim's stand-in hook refuses a --gpus container no specshim chain gave its GPUs") {
  Host host({1});
  // Plain runc, as `docker run --runtime runc --gpus all` would run it: runc
  // runs the hook, which names the request and what to do.
  BusyboxBundle b = docker_gpus_bundle(host, "all", "plain-runc");
  TempDir root;
  auto plain = run_process({"/usr/sbin/runc", "--root", root.path().string(), "run", "--bundle", b.dir().string(),
                            unique_id("it-envdev-plain")});
  INFO(plain.out << plain.err);
  REQUIRE(plain.exit_code != 0);
  REQUIRE_THAT(plain.err, Contains("specshim (installed as nvidia-container-runtime-hook): container it-envdev-plain"));
  REQUIRE_THAT(plain.err, Contains("asks for devices with NVIDIA_VISIBLE_DEVICES=all (docker --gpus), and nothing "
                                   "gave them"));
  REQUIRE(plain.out.find("nvidia0") == std::string::npos);  // the probe never ran

  // specshim without an [[env-devices]] entry for the variable leaves the
  // hook, which refuses the same way: no container without its GPUs.
  BusyboxBundle unowned = docker_gpus_bundle(host, "all", "unowned");
  Shim shim(host.tmp.path(), "[chain]\norder = [\"cdi\", \"devices-cgroup\"]\n");
  auto r = shim.run(unowned, unique_id("it-envdev-unowned"));
  INFO(r.err << Shim::log(unowned));
  REQUIRE(r.exit_code != 0);
  REQUIRE_THAT(Shim::log(unowned), Contains("and nothing gave them"));

  // `--gpus 0` (NVIDIA_VISIBLE_DEVICES=void) asks for nothing: the stand-in passes.
  BusyboxBundle none = docker_gpus_bundle(host, "void", "none");
  auto passed = run_process({"/usr/sbin/runc", "--root", root.path().string(), "run", "--bundle", none.dir().string(),
                             unique_id("it-envdev-void")});
  INFO(passed.err);
  REQUIRE(passed.exit_code == 0);
}

TEST_CASE("env-devices: with the shipped dind config, an inner container's forged pod annotations gain nothing") {
  // The dev box's specshim, as packaging/examples/dind/config.toml ships it
  // (its CDI dir aside); the dev box sees GPUs 0 and 2 of three.
  Host host({1});
  const std::string config = read_file(SPECSHIM_TEST_DATA_DIR "/../packaging/examples/dind/config.toml") +
                             "\n[cdi]\nspec-dirs = [\"" + host.cdi.string() + "\"]\ncache-dir = \"\"\n";
  const std::string visible =
      "nvidia0 1:b open\nnvidia1 absent\nnvidia2 1:b open\nnvidiactl 1:3 open\n"
      "nodes: nvidia0 nvidia2 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n";
  // What dockerd creates: no identity, `all` is what the dev box sees.
  BusyboxBundle plain = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, "plain", Json::object());
  REQUIRE(run_probe(host, plain, config) == visible);
  // `docker run --annotation specshim.io/pod=… --annotation specshim.io/devices-from=…`:
  // a sibling of that pod, whose source's grant nobody here hands over.
  BusyboxBundle sibling = sibling_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, "sibling");
  REQUIRE(run_probe(host, sibling, config) == kNoGpuVoid);
  // The whole containerd CRI family: a pod's container, whose grant no
  // kubelet here holds.
  BusyboxBundle cri = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"}, {}, "cri");
  REQUIRE(run_probe(host, cri, config) == kNoGpuVoid);
}
