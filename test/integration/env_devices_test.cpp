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

  Host() {
    fs::create_directories(tmp / "host-dev");
    for (std::size_t i = 0; i < kGpu.size(); ++i) {
      gpu_nodes.push_back(tmp / "host-dev" / ("nvidia" + std::to_string(i)));
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

// run_probe runs the bundle through specshim and runc; the probe exits 0.
std::string run_probe(const Host& host, const BusyboxBundle& b, bool with_device_plugin = false) {
  Shim shim(host.tmp.path(), host.config(with_device_plugin));
  auto r = shim.run(b, unique_id("it-envdev"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  return r.out;
}

const std::string kPlugin = "NVIDIA_VISIBLE_DEVICES=" + kGpu[0] + "," + kGpu[1];

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
  const std::string before = read_file(b.dir() / "config.json");
  Shim shim(host.tmp.path(), host.config());
  std::string id = unique_id("it-envdev-excess");
  auto r = shim.run(b, id);
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.out.empty());
  REQUIRE_THAT(Shim::log(b),
               Contains("\"level\":\"error\",\"msg\":\"specshim: cdi: env NVIDIA_VISIBLE_DEVICES=\\\"all\\\" of "
                        "container `main` of pod `team-a/trainer` asks for nvidia.com/gpu=2 = nvidia.com/gpu=" +
                        kGpu[2] + ", beyond what the kubelet granted nvidia.com/gpu=" + kGpu[0] + ", nvidia.com/gpu=" +
                        kGpu[1] + " by `nvidia.com/gpu` (the checkpoint) (on-excess = \\\"fail\\\")"));
  REQUIRE(read_file(b.dir() / "config.json") == before);
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);
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
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=1"}, {"CAP_SYS_ADMIN"});
  REQUIRE(run_probe(host, b) ==
          "nvidia0 absent\nnvidia1 1:b open\nnvidia2 absent\nnvidiactl 1:3 open\n"
          "nodes: nvidia1 nvidiactl\nown 1:11 open\nNVIDIA_VISIBLE_DEVICES=void\n");
}

TEST_CASE("env-devices: an unprivileged container without a grant and the image's `all` runs with no GPU") {
  Host host;
  host.grant("uid-other", {2});
  BusyboxBundle b = cri_bundle(host, {"NVIDIA_VISIBLE_DEVICES=all"});
  REQUIRE(run_probe(host, b) ==
          "nvidia0 absent\nnvidia1 absent\nnvidia2 absent\nnvidiactl absent\n"
          "nodes:\nown 1:11 denied\nNVIDIA_VISIBLE_DEVICES=all\n");
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
  const std::string before = read_file(b.dir() / "config.json");
  Shim shim(host.tmp.path(), host.config(true));
  auto r = shim.run(b, unique_id("it-envdev-protect"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.out.empty());
  REQUIRE_THAT(Shim::log(b),
               Contains("specshim: device-plugin: process.env[") &&
                   Contains("CUDA_DEVICE_MEMORY_LIMIT_0=80000m\\\" overrides \\\"CUDA_DEVICE_MEMORY_LIMIT_0="
                            "4000m\\\", which the device plugin of `nvidia.com/gpu` set for container "
                            "`main` of pod `team-a/trainer` (the checkpoint)"));
  REQUIRE(read_file(b.dir() / "config.json") == before);
}
