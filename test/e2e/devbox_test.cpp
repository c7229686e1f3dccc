// SPDX-License-Identifier: Apache-2.0
// The dev box (devbox.h): dockerd inside a privileged container that was
// given GPUs 1 and 3 of the node's 4, with specshim as dockerd's default
// runtime, packaging/examples/dind/ as shipped (docs/dind.md). Issue 53.
//
// The GPUs are 195:N stand-ins no driver holds: an open the device cgroup
// allows fails with ENXIO ("No such device or address"), one it denies with
// EPERM. The probe says, per node, absent / allowed / denied.
#include "devbox.h"

#include <catch2/catch.hpp>

#include "specshim/base/spec.h"

using namespace specshim::e2e;
using Catch::Matchers::Contains;

namespace {

const std::string kProbe =
    "for n in nvidia0 nvidia1 nvidia2 nvidia3 nvidiactl; do"
    "  if [ ! -e /dev/$n ]; then echo \"$n absent\"; continue; fi;"
    "  case \"$( (exec 3</dev/$n) 2>&1 )\" in"
    "    *'No such device'*) echo \"$n allowed\";; *'not permitted'*) echo \"$n denied\";; *) echo \"$n ?\";;"
    "  esac;"
    "done;"
    "echo \"NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES\"";

std::string uuid(int n) {
  std::string digits = std::to_string(n);
  return "GPU-4a3b2c1d-0000-4000-8000-" + std::string(12 - digits.size(), '0') + digits;
}

// seen is the probe's output for a container holding exactly the GPUs
// listed (of 0..3), with the control node and `void` after the hand-over.
std::string seen(const std::vector<int>& gpus, bool control = true, const std::string& variable = "void") {
  std::string out;
  for (int i = 0; i < 4; ++i)
    out += "nvidia" + std::to_string(i) +
           (std::find(gpus.begin(), gpus.end(), i) != gpus.end() ? " allowed\n" : " absent\n");
  out += control ? "nvidiactl allowed\n" : "nvidiactl absent\n";
  return out + "NVIDIA_VISIBLE_DEVICES=" + variable + "\n";
}

// probe runs the probe in a new container of the dev box's dockerd: run's
// args, then the image.
std::string probe(const DevBox& box, std::vector<std::string> args, const std::string& image = "busybox") {
  std::vector<std::string> full = {"run", "--rm"};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {image, "sh", "-c", kProbe});
  auto r = box.docker(full);
  INFO("docker " << full[2] << " ...: " << r.out << r.err << box.diagnostics());
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// refused runs args and expects docker run to fail; it returns its stderr.
std::string refused(const DevBox& box, std::vector<std::string> args) {
  std::vector<std::string> full = {"run", "--rm"};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {"busybox", "sh", "-c", kProbe});
  auto r = box.docker(full);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code != 0);
  REQUIRE(r.out.empty());  // the probe never ran
  return r.err;
}

}  // namespace

TEST_CASE("a container of the dev box's dockerd runs through specshim", "[devbox]") {
  DevBox box;
  // The busybox image has no user 10001: the name comes from the passwd
  // modifier (on in the shipped config), which only specshim applies.
  auto r = box.docker({"run", "--rm", "--user", "10001", "busybox", "id", "-un"});
  INFO(r.out << r.err << box.diagnostics());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "user10001\n");
  // Without specshim the same image has no name for the uid.
  auto plain = box.docker({"run", "--rm", "--runtime", "runc", "--user", "10001", "busybox", "id", "-un"});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code != 0);
  CHECK_THAT(plain.err, Contains("unknown ID 10001"));
  // The dev box holds the GPUs it was given, and only those.
  CHECK(box.exec_ok({"ls", "/dev"}).find("nvidia0") == std::string::npos);
  CHECK_THAT(box.exec_ok({"stat", "-c", "%n %t:%T", "/dev/nvidia1", "/dev/nvidia3", "/dev/nvidiactl"}),
             Contains("/dev/nvidia1 c3:1") && Contains("/dev/nvidia3 c3:3") && Contains("/dev/nvidiactl c3:ff"));
}

TEST_CASE("every way a tenant asks for GPUs gets the dev box's GPUs, never more", "[devbox]") {
  DevBox box;
  CHECK(probe(box, {"--gpus", "all"}) == seen({1, 3}));
  CHECK(probe(box, {"--gpus", "1"}) == seen({1}));         // NVIDIA_VISIBLE_DEVICES=0: the first it sees
  CHECK(probe(box, {"--gpus", "device=1"}) == seen({3}));  // the second it sees
  CHECK(probe(box, {"--gpus", "\"device=" + uuid(1) + "\""}) == seen({1}));
  CHECK(probe(box, {"-e", "NVIDIA_VISIBLE_DEVICES=all"}) == seen({1, 3}));
  // An image that bakes the variable in, as CUDA's do.
  REQUIRE(box.docker({"create", "--name", "base", "busybox", "true"}).exit_code == 0);
  auto committed = box.docker({"commit", "-c", "ENV NVIDIA_VISIBLE_DEVICES=all", "base", "cuda-like"});
  INFO(committed.err);
  REQUIRE(committed.exit_code == 0);
  CHECK(probe(box, {}, "cuda-like") == seen({1, 3}));
  // No request, no GPU.
  CHECK(probe(box, {}) == seen({}, false, ""));

  // Beyond what the dev box sees: the create fails, and docker run says why.
  std::string beyond = refused(box, {"--gpus", "device=2"});
  CHECK_THAT(beyond, Contains("index 2: this runtime's /dev holds 2 device(s) of kind `nvidia.com/gpu` by index "
                              "(nvidia.com/gpu=1, nvidia.com/gpu=3)"));
  std::string absent = refused(box, {"--gpus", "\"device=" + uuid(0) + "\""});
  CHECK_THAT(absent, Contains("/dev/nvidia0"));
}

TEST_CASE("docker --gpus works without NVIDIA's toolkit, and no legacy hook reaches the container", "[devbox]") {
  DevBox box;
  auto started = box.docker({"run", "-d", "--name", "held", "--gpus", "all", "busybox", "sleep", "600"});
  INFO(started.err << box.diagnostics());
  REQUIRE(started.exit_code == 0);
  std::string id = started.out.substr(0, started.out.find('\n'));
  // The spec runc got: dockerd's bundle under its containerd's state.
  auto spec = specshim::Json::parse(
      box.exec_ok({"cat", "/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/" + id + "/config.json"}));
  std::string hooks = spec.contains("hooks") ? spec["hooks"].dump() : "";
  CHECK(hooks.find("nvidia-container-runtime-hook") == std::string::npos);
  CHECK(spec["process"]["env"].dump().find("NVIDIA_VISIBLE_DEVICES=void") != std::string::npos);
  // Another runtime than specshim runs the stand-in, which refuses.
  std::string err = refused(box, {"--runtime", "runc", "--gpus", "all"});
  CHECK_THAT(err, Contains("specshim (installed as nvidia-container-runtime-hook)") &&
                      Contains("asks for devices with NVIDIA_VISIBLE_DEVICES=all"));
}

TEST_CASE("an inner container's forged pod annotations gain nothing", "[devbox]") {
  DevBox box;
  // A sibling of a pod: its source's grant is nobody's to hand over here.
  CHECK(probe(box, {"--annotation", "specshim.io/pod=dev/box-7", "--annotation", "specshim.io/devices-from=main",
                    "--gpus", "all"}) == seen({}, false));
  // containerd's whole CRI family: a pod's container no kubelet here granted anything.
  CHECK(probe(box, {"--annotation", "io.kubernetes.cri.container-type=container", "--annotation",
                    "io.kubernetes.cri.sandbox-namespace=kube-system", "--annotation",
                    "io.kubernetes.cri.sandbox-name=gpu-operator", "--annotation",
                    "io.kubernetes.cri.sandbox-uid=0f6a1c2e-0000-4000-8000-0000000000e1", "--annotation",
                    "io.kubernetes.cri.container-name=main", "--gpus", "all"}) == seen({}, false));
}

TEST_CASE("Docker's own CDI injects what the dev box holds and fails on what it does not", "[devbox]") {
  DevBox box;
  // dockerd resolves CDI names itself, against the node's spec.
  CHECK(probe(box, {"--device", "nvidia.com/gpu=1"}) == seen({1}, true, ""));
  std::string err = refused(box, {"--device", "nvidia.com/gpu=all"});
  CHECK_THAT(err, Contains("CDI device injection failed") && Contains("/dev/nvidia0"));
}

namespace {

// held is what the probe sees in a running container (docker exec), but its
// variable: docker exec takes its env from docker's record, not the spec.
std::string held(const DevBox& box, const std::string& name) {
  auto r = box.docker({"exec", name, "sh", "-c", kProbe});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, r.out.rfind("NVIDIA_VISIBLE_DEVICES="));
}

std::string nodes(const std::vector<int>& gpus) {
  std::string all = seen(gpus);
  return all.substr(0, all.rfind("NVIDIA_VISIBLE_DEVICES="));
}

// reconcile writes the desired-state file into the dev box (atomically, as
// docs/reconcile.md asks of writers) and runs one pass there, on dockerd's
// runc root.
specshim::test::ProcessResult reconcile(const DevBox& box, const std::string& desired) {
  auto file = box.in_box("/etc/specshim/hotplug.yaml");
  specshim::test::write_file(file.string() + ".new", desired);
  std::filesystem::rename(file.string() + ".new", file);
  return box.exec({"specshim", "reconcile", "--root", "/run/docker/runtime-runc/moby"});
}

}  // namespace

TEST_CASE("reconcile in the dev box moves a GPU between its containers by docker name, across docker restart",
          "[devbox]") {
  DevBox box;
  // Control nodes only at create (`none`); the GPUs come from the file.
  for (const char* name : {"trainer", "notebook"}) {
    auto r = box.docker({"run", "-d", "--name", name, "-e", "NVIDIA_VISIBLE_DEVICES=none", "busybox", "sleep", "600"});
    INFO(r.err << box.diagnostics());
    REQUIRE(r.exit_code == 0);
  }
  // The shipped example: trainer gets nvidia1, notebook nvidia3.
  auto first = reconcile(box, specshim::test::read_file(E2E_SOURCE_DIR "/packaging/examples/dind/hotplug.yaml"));
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(held(box, "trainer") == nodes({1}));
  CHECK(held(box, "notebook") == nodes({3}));

  // nvidia3 moves from notebook to trainer.
  auto moved = reconcile(box,
                         "containers:\n"
                         "  - docker: {name: trainer}\n    devices: [/dev/nvidia1, /dev/nvidia3]\n"
                         "  - docker: {name: notebook}\n    devices: []\n");
  INFO(moved.out << moved.err);
  REQUIRE(moved.exit_code == 0);
  CHECK(held(box, "trainer") == nodes({1, 3}));
  CHECK(held(box, "notebook") == nodes({}));

  // docker restart keeps the id and creates the container again: the
  // hotplug modifier gives it what the file lists at once.
  auto restarted = box.docker({"restart", "-t", "0", "trainer"});
  INFO(restarted.err << box.diagnostics());
  REQUIRE(restarted.exit_code == 0);
  CHECK(held(box, "trainer") == nodes({1, 3}));

  // A GPU the dev box does not hold cannot be given: no node for it here.
  auto beyond = reconcile(box, "containers:\n  - docker: {name: notebook}\n    devices: [/dev/nvidia0]\n");
  INFO(beyond.out << beyond.err);
  CHECK(beyond.exit_code == 1);
  CHECK_THAT(beyond.err, Contains("/dev/nvidia0"));
  CHECK(held(box, "notebook") == nodes({}));
}
