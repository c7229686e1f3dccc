// SPDX-License-Identifier: Apache-2.0
// Devices as a node hands them over, on every containerd tier: a device
// plugin's CDI request (as an Allocate annotation and as CRI's CDI_devices),
// which containerd 1.7/2.x injects before specshim runs; a sibling created
// through the plain task API that takes a CRI container's devices; and
// `specshim attach` into a running CRI container; a sibling whose image
// bakes in NVIDIA_VISIBLE_DEVICES=all, bound by its pod's grant.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kResource = "example.com/accel";

// specshim with the CDI fixture and the device-plugin modifier for the
// fixture's resource, reading the fake kubelet under <dir>/kubelet.
std::string devices_config(const Containerd& c, const std::string& providers) {
  return cdi_fixture(c) + "\n[device-plugin]\nenabled = true\nkubelet-root = \"" + (c.dir() / "kubelet").string() +
         "\"\n\n[[device-plugin.resources]]\nname = \"" + kResource + "\"\nproviders = " + providers + "\n";
}

// A checkpoint entry: the device plugin's stored answer for a container.
json entry(const Pod& pod, const std::string& container, const json& alloc) {
  return {{"pod_uid", pod.config.metadata().uid()},
          {"container", container},
          {"resource", kResource},
          {"devices_by_numa", {{"0", {"0"}}}},
          {"alloc", alloc}};
}

json kubelet_config(const Containerd& c, const json& pods, const json& entries) {
  return {{"kubelet_root", (c.dir() / "kubelet").string()},
          {"pods", pods},
          {"allocatable", {{kResource, {"0"}}}},
          {"checkpoint", {{"registered", {{kResource, {"0"}}}}, {"entries", entries}}}};
}

}  // namespace

TEST_CASE("CRI: a device plugin's CDI device named in an annotation or in CDI_devices is injected exactly once",
          CDI_TAGS) {
  Containerd c;
  c.set_specshim_config(devices_config(c, R"(["kubelet"])"));
  Pod pod(c, "cdi-once-pod");
  // The plugin answered Allocate with a CDI annotation for one container and
  // with cdi_devices for the other; the kubelet recorded both answers and
  // passes them on: the annotation among the container's annotations, the
  // names in CRI's CDI_devices.
  FakeKubelet kubelet(
      kubelet_config(c, json::array(),
                     {entry(pod, "annotated", {{"annotations", {{"cdi.k8s.io/accel_0", kFixtureDevice}}}}),
                      entry(pod, "listed", {{"cdi_devices", {kFixtureDevice}}})})
          .dump(),
      c.dir());
  auto annotated = container_config("annotated", "exec sleep 600");
  (*annotated.mutable_annotations())["cdi.k8s.io/accel_0"] = kFixtureDevice;
  auto listed = container_config("listed", "exec sleep 600");
  listed.add_cdi_devices()->set_name(kFixtureDevice);

  for (auto* cfg : {&annotated, &listed}) {
    const std::string name = cfg->metadata().name();
    const std::string id = pod.create(*cfg);
    c.cri().start_container(id);
    INFO(name << "\n" << c.diagnostics());
    REQUIRE(c.cri().container_status(id).state() == cri::CONTAINER_RUNNING);
    const json spec = json::parse(bundle_config(c, id));
    // Whoever injected first (containerd 1.7 with enable_cdi and 2.x, from
    // CRI; on 1.6 only specshim, from the annotation and the checkpoint),
    // the device's node, env, rule, mount and hook are there once.
    CHECK(cdi_fixture_edits(spec) == CdiEdits{1, 1, 1, 1, 1});
    // ... and specshim did merge the plugin's answer (its record of resources).
    CHECK_THAT(spec["annotations"].value("specshim.io/resources", ""), Catch::Contains(kResource));
    c.cri().stop_container(id, 0);
  }
}

TEST_CASE("ctr run: a sibling created through the task API gets the devices of a CRI container of its pod", CDI_TAGS) {
  Containerd c;
  c.set_specshim_config(devices_config(c, R"(["kubelet", "container-sync"])"));
  Pod pod(c, "sibling-pod");
  const auto& meta = pod.config.metadata();
  FakeKubelet kubelet(kubelet_config(c,
                                     json::array({{{"namespace", meta.namespace_()},
                                                   {"name", meta.name()},
                                                   {"uid", meta.uid()},
                                                   {"containers", {{"main", {{kResource, {"0"}}}}}}}}),
                                     json::array({entry(pod, "main", {{"cdi_devices", {kFixtureDevice}}})}))
                          .dump(),
                      c.dir());
  auto main = container_config("main", "exec sleep 600");
  main.add_cdi_devices()->set_name(kFixtureDevice);
  const std::string main_id = pod.create(main);
  c.cri().start_container(main_id);
  REQUIRE(c.cri().container_status(main_id).state() == cri::CONTAINER_RUNNING);

  // A node agent (docker-in-docker, a build daemon) starts a sibling with
  // containerd's socket, naming the pod and the container whose devices it
  // needs; it opens the device.
  const std::string id = specshim::test::unique_id("sibling");
  auto r = c.ctr({"--namespace", kCtrNamespace, "run", "--rm", "--runc-binary", SPECSHIM_BINARY, "--annotation",
                  "specshim.io/pod=" + meta.namespace_() + "/" + meta.name(), "--annotation",
                  "specshim.io/devices-from=main", kImage, id, "/bin/sh", "-c",
                  "head -c 4 /dev/accel0 | od -An -tx1 && echo env=$E2E_CDI_ENV && cat /mnt/cdi/hello"});
  INFO(r.out << r.err << c.diagnostics());
  CHECK(r.exit_code == 0);
  CHECK(r.out == " 00 00 00 00\nenv=accel0\nhello from a CDI mount\n");
  c.cri().stop_container(main_id, 0);
}

TEST_CASE("CRI: specshim attach gives a running CRI container a CDI device it can open", CDI_TAGS) {
  Containerd c;
  const std::string config = cdi_fixture(c);
  c.set_specshim_config(config);
  Pod pod(c, "attach-pod");
  // The workload waits for its device and the device's mount to appear (attach
  // makes the node before the mount), then uses both and exits.
  auto cfg = container_config("main",
                              "while ! test -c /dev/accel0 || ! test -e /mnt/cdi/hello; do sleep 0.05; done; "
                              "head -c 4 /dev/accel0 | od -An -tx1 && echo attached-opens; cat /mnt/cdi/hello");
  const std::string id = pod.create(cfg);
  c.cri().start_container(id);
  REQUIRE(c.cri().container_status(id).state() == cri::CONTAINER_RUNNING);

  auto r = specshim::test::run_process({SPECSHIM_BINARY, "attach", "--root", "/run/containerd/runc/k8s.io", "--config",
                                        (c.dir() / "specshim.toml").string(), id, "--cdi", kFixtureDevice});
  INFO(r.out << r.err << c.diagnostics());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("attached /dev/accel0 (c 1:7 rwm"));
  auto status = wait_exited(c.cri(), id);
  const std::string log = log_text(read_cri_log(pod.log_path(cfg)));
  INFO(log);
  CHECK(status.exit_code() == 0);
  CHECK(log == "stdout:  00 00 00 00\nstdout: attached-opens\nstdout: hello from a CDI mount\n");
}

TEST_CASE("ctr run: a sibling whose image bakes in NVIDIA_VISIBLE_DEVICES=all gets only its pod's GPU (env-devices)",
          CDI_TAGS) {
  Containerd c;
  const fs::path dir = c.dir();
  // Two stand-in GPUs on the node; the CRI pod's container holds GPU 0.
  const std::vector<std::string> uuids = gpu_fixture(c);
  auto config = [&](const std::string& on_excess) {
    return "[cdi]\nspec-dirs = [\"" + c.cdi_dir().string() +
           "\"]\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" + (dir / "kubelet").string() +
           "\"\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\nproviders = [\"kubelet\", "
           "\"container-sync\"]\n\n[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
           "on-excess = \"" +
           on_excess + "\"\n";
  };
  c.set_specshim_config(config("fail"));

  Pod pod(c, "env-sibling-pod");
  const auto& meta = pod.config.metadata();
  const json alloc = {{"envs", {{"NVIDIA_VISIBLE_DEVICES", uuids[0]}}}};
  FakeKubelet kubelet(json{{"kubelet_root", (dir / "kubelet").string()},
                           {"pods", json::array({{{"namespace", meta.namespace_()},
                                                  {"name", meta.name()},
                                                  {"uid", meta.uid()},
                                                  {"containers", {{"main", {{"nvidia.com/gpu", {uuids[0]}}}}}}}})},
                           {"allocatable", {{"nvidia.com/gpu", uuids}}},
                           {"checkpoint",
                            {{"registered", {{"nvidia.com/gpu", uuids}}},
                             {"entries", json::array({{{"pod_uid", meta.uid()},
                                                       {"container", "main"},
                                                       {"resource", "nvidia.com/gpu"},
                                                       {"devices_by_numa", {{"0", {uuids[0]}}}},
                                                       {"alloc", alloc}}})}}}}
                          .dump(),
                      dir);
  auto main = container_config("main", "exec sleep 600");
  auto* env = main.add_envs();  // the plugin's env, which the kubelet puts first
  env->set_key("NVIDIA_VISIBLE_DEVICES");
  env->set_value(uuids[0]);
  const std::string main_id = pod.create(main);
  c.cri().start_container(main_id);
  REQUIRE(c.cri().container_status(main_id).state() == cri::CONTAINER_RUNNING);

  // The dev box starts a sibling from a CUDA image (its baked variable comes
  // in through --env here) through containerd's socket, outside CRI.
  auto sibling = [&](const std::string& id) {
    return c.ctr({"--namespace", kCtrNamespace, "run", "--rm", "--runc-binary", SPECSHIM_BINARY, "--env",
                  "NVIDIA_VISIBLE_DEVICES=all", "--annotation",
                  "specshim.io/pod=" + meta.namespace_() + "/" + meta.name(), "--annotation",
                  "specshim.io/devices-from=main", kImage, id, "/bin/sh", "-c",
                  "echo nodes: $(ls /dev | grep nvidia)"});
  };
  auto refused = sibling(specshim::test::unique_id("sibling-all"));
  INFO(refused.out << refused.err << c.diagnostics());
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("env NVIDIA_VISIBLE_DEVICES=\"all\"") &&
                              Catch::Contains("beyond what the kubelet granted its source nvidia.com/gpu=" + uuids[0]));

  c.set_specshim_config(config("clamp"));
  auto clamped = sibling(specshim::test::unique_id("sibling-clamp"));
  INFO(clamped.out << clamped.err);
  CHECK(clamped.exit_code == 0);
  CHECK(clamped.out == "nodes: nvidia0\n");
  c.cri().stop_container(main_id, 0);
}
