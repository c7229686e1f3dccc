// SPDX-License-Identifier: Apache-2.0
// The kubelet's path: CRI RunPodSandbox / CreateContainer / StartContainer /
// ContainerStatus / Stop / Remove against containerd with the runtime
// handler `specshim` from the shipped snippet.
//
// The passwd and CDI cases are compiled in once their modifiers exist
// (spec-modifiers/src/passwd/, cdi/); until then their tags hide them
// (`[.pending-...]`) and ctest does not register them.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kUid = 10001;

// checkpoint_with_env is a kubelet_internal_checkpoint with one entry, for
// pod_uid's container `main`, whose stored answer sets one env variable: a
// v1beta1 ContainerAllocateResponse with envs (field 1, a map entry of key 1
// and value 2), base64 as Go writes []byte. Written by hand: the fakes'
// encoder links a second gRPC into this binary.
std::string checkpoint_with_env(const std::string& pod_uid, const std::string& resource, const std::string& id,
                                const std::string& key, const std::string& value) {
  auto field = [](char tag, const std::string& payload) {
    REQUIRE(payload.size() < 128);  // one-byte lengths
    return std::string(1, tag) + static_cast<char>(payload.size()) + payload;
  };
  const std::string bytes = field('\x0a', field('\x0a', key) + field('\x12', value));
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t n = static_cast<std::uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<std::uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<std::uint8_t>(bytes[i + 2]);
    for (std::size_t k = 0; k < 4; ++k) b64 += i + k <= bytes.size() ? digits[(n >> (18 - 6 * k)) & 63] : '=';
  }
  nlohmann::json entry = {{"PodUID", pod_uid},
                          {"ContainerName", "main"},
                          {"ResourceName", resource},
                          {"DeviceIDs", {{"0", {id}}}},
                          {"AllocResp", b64}};
  return nlohmann::json{{"Data", {{"PodDeviceEntries", {entry}}, {"RegisteredDevices", {{resource, {id}}}}}},
                        {"Checksum", 1}}
      .dump();
}

// run_as_uid runs script as uid kUid in a pod of its own and returns its
// log; the container must exit 0.
std::string run_as_uid(Containerd& c, const std::string& pod_name, const std::string& script) {
  Pod pod(c, pod_name);
  auto cfg = container_config("main", script);
  cfg.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(kUid);
  auto ran = pod.run(cfg);
  const std::string log = log_text(ran.log);
  INFO(log << c.diagnostics());
  CHECK(ran.status.exit_code() == 0);
  return log;
}

// The specshim config every case starts from: CDI specs from the fixture
// (the CDI modifier's default dirs are the node's).
std::string base_config(Containerd& c) {
  return cdi_fixture(c);
}

}  // namespace

TEST_CASE("CRI: a pod with the specshim handler runs its containers through specshim") {
  Containerd c;
  c.set_specshim_config(base_config(c));
  Pod pod(c, "e2e-pod",
          {{"specshim.io/passwd-name", "e2e-user"},         // allowlisted
           {"specshim.io/pod", "kube-system/other-pod"},    // never passed from a Pod
           {"cdi.k8s.io/from-pod", "example.com/accel=0"},  // opt-in, off
           {"other.example.org/note", "x"}});

  // main: what the workload sees; exits 7.
  auto main = container_config("main",
                               "echo uid=$(id -u); echo env=$E2E_VAR; ls -ln /dev/fakegpu0; "
                               "echo to-stderr >&2; exit 7");
  main.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(kUid);
  main.add_envs()->set_key("E2E_VAR");
  main.mutable_envs(0)->set_value("hello-env");
  auto* dev = main.add_devices();
  dev->set_host_path("/dev/null");
  dev->set_container_path("/dev/fakegpu0");
  dev->set_permissions("rw");
  auto ran = pod.run(main);
  const std::string main_id = ran.id;
  const std::string log = log_text(ran.log);
  INFO(log << c.diagnostics());
  REQUIRE(ran.status.state() == cri::CONTAINER_EXITED);
  CHECK(ran.status.exit_code() == 7);
  CHECK(ran.status.reason() == "Error");
  CHECK_THAT(log, Catch::Contains("stdout: uid=10001\n"));
  CHECK_THAT(log, Catch::Contains("stdout: env=hello-env\n"));
  CHECK_THAT(log, Catch::Matches("[\\s\\S]*stdout: crw-rw-rw- +1 0 +0 +1, +3 [^\\n]*/dev/fakegpu0\n[\\s\\S]*"));
  CHECK_THAT(log, Catch::Contains("stderr: to-stderr\n"));

  // sleeper: a running task whose config.json shows what the handler's
  // annotation allowlists let through to specshim.
  auto sleeper = container_config("sleeper", "exec sleep 600");
  (*sleeper.mutable_annotations())["cdi.k8s.io/e2e"] = "example.com/accel=0";  // as a device plugin sets it
  (*sleeper.mutable_annotations())["other.example.org/x"] = "y";
  const std::string sleeper_id = pod.create(sleeper);
  c.cri().start_container(sleeper_id);
  REQUIRE(c.cri().container_status(sleeper_id).state() == cri::CONTAINER_RUNNING);
  CHECK(c.shim_pids().size() == 1);  // one shim per pod runs specshim for all its containers
  auto annotations = nlohmann::json::parse(bundle_config(c, sleeper_id))["annotations"];
  INFO(annotations.dump(2));
  CHECK(annotations["cdi.k8s.io/e2e"] == "example.com/accel=0");
  CHECK(annotations["specshim.io/passwd-name"] == "e2e-user");
  CHECK(annotations["io.kubernetes.cri.sandbox-id"] == pod.id);
  CHECK_FALSE(annotations.contains("specshim.io/pod"));
  CHECK_FALSE(annotations.contains("cdi.k8s.io/from-pod"));
  CHECK_FALSE(annotations.contains("other.example.org/note"));
  CHECK_FALSE(annotations.contains("other.example.org/x"));

  c.cri().stop_container(sleeper_id, 0);
  CHECK(wait_exited(c.cri(), sleeper_id).exit_code() == 137);
  for (const auto& id : {main_id, sleeper_id}) c.cri().remove_container(id);
  CHECK(c.cri().list_containers(pod.id).empty());

  // Every container of the pod, and the pod itself, went through specshim.
  for (const auto& id : {pod.id, main_id, sleeper_id})
    CHECK_THAT(c.specshim_log(), Catch::Contains("create " + id + ": "));
  const std::string bundle = (c.dir() / "state/io.containerd.runtime.v2.task/k8s.io" / main_id).string();
  const std::string flags = "--root /run/containerd/runc/k8s.io --log " + bundle + "/log.json --log-format json ";
  auto calls = calls_for(c.runtime_calls(), main_id);
  INFO(join(calls));
  CHECK(in_order(calls, {flags + "create --bundle " + bundle + " --pid-file " + bundle + "/init.pid " + main_id,
                         flags + "start " + main_id, flags + "delete " + main_id}));

  // containerd 2.x asks each runc-typed handler's binary for its features
  // when CRI starts (`BinaryName features`, no flags); specshim hands the
  // call to runc untouched, so the handler keeps runc's features.
  auto all = c.runtime_calls();
  CHECK((std::find(all.begin(), all.end(), "features") != all.end()) == tier().calls_features);
}

TEST_CASE("CRI: StartContainer surfaces specshim's refusal as the kubelet sees it") {
  Containerd c;
  c.set_specshim_config(base_config(c));
  Pod pod(c, "refused-pod");
  // CreateContainer does not run the runtime; the create happens in StartContainer.
  c.set_specshim_config(base_config(c) + "[chain]\norder = [\"no-such-modifier\"]\n");
  const std::string expected = "OCI runtime create failed: " + specshim_config_error(c) + tier().error_suffix;
  auto cfg = container_config("main", "echo never");
  const std::string id = pod.create(cfg);
  try {
    c.cri().start_container(id);
    FAIL("StartContainer succeeded");
  } catch (const RpcError& e) {
    CHECK(e.code == grpc::StatusCode::UNKNOWN);
    CHECK_THAT(e.message, Catch::EndsWith(expected));
  }
  auto status = c.cri().container_status(id);
  CHECK(status.state() == cri::CONTAINER_EXITED);
  CHECK(status.exit_code() == 128);
  CHECK(status.reason() == "StartError");
  CHECK_THAT(status.message(), Catch::EndsWith(expected));
  for (const auto& call : calls_for(c.runtime_calls(), id)) CHECK_THAT(call, !Catch::Contains(" create "));
  c.cri().remove_container(id);
}

TEST_CASE("CRI: RunPodSandbox surfaces specshim's refusal and leaves no pod behind") {
  // A rule that refuses sandboxes: a patch scoped to them whose op fails.
  Containerd c;
  c.set_specshim_config(base_config(c) +
                        "[[patches]]\nname = \"no-sandboxes\"\nmatch = { container-kind = \"sandbox\" }\n"
                        "ops = [{ op = \"remove\", path = \"/linux/sysctl/no.such.key\" }]\n");
  const std::string expected =
      "OCI runtime create failed: specshim: patches: patch `no-sandboxes` ops[0] (remove "
      "/linux/sysctl/no.such.key): path not found" +
      tier().error_suffix;
  try {
    c.cri().run_pod_sandbox(c.pod_config("refused-sandbox"), kHandler);
    FAIL("RunPodSandbox succeeded");
  } catch (const RpcError& e) {
    CHECK(e.code == grpc::StatusCode::UNKNOWN);
    CHECK_THAT(e.message, Catch::EndsWith(expected));
  }
  CHECK(c.cri().list_pod_sandboxes().empty());
}

TEST_CASE("CRI: with a config that does not load, the sandbox starts and its container's start names the line") {
  // What the kubelet then shows on the pod: specshim's error on the
  // container, not "Failed to create pod sandbox".
  Containerd c;
  c.set_specshim_config(base_config(c) + "[chain]\norder = [\"no-such-modifier\"]\n");
  const std::string expected = "OCI runtime create failed: " + specshim_config_error(c) + tier().error_suffix;
  Pod pod(c, "broken-config-pod");
  CHECK(c.cri().list_pod_sandboxes().size() == 1);
  const std::string id = pod.create(container_config("main", "echo never"));
  try {
    c.cri().start_container(id);
    FAIL("StartContainer succeeded");
  } catch (const RpcError& e) {
    CHECK_THAT(e.message, Catch::EndsWith(expected));
  }
  // The sandbox's create went to runc with its spec untouched, and runc's log says why.
  auto calls = calls_for(c.runtime_calls(), pod.id);
  INFO(join(calls));
  CHECK(std::any_of(calls.begin(), calls.end(),
                    [](const std::string& call) { return call.find(" create ") != std::string::npos; }));
  c.cri().remove_container(id);
}

TEST_CASE("CRI: a uid without a passwd entry resolves to a name (passwd modifier)", PASSWD_TAGS) {
  Containerd c;
  c.set_specshim_config(base_config(c));
  CHECK_THAT(run_as_uid(c, "passwd-pod", "id -un; id -u; grep '^user10001:' /etc/passwd"),
             Catch::StartsWith("stdout: user10001\nstdout: 10001\nstdout: user10001:x:10001:0:"));
}

TEST_CASE("CRI: with the specshim config install-on-host.sh installs, a uid without a passwd entry gets one",
          PASSWD_TAGS) {
  // The package staged as the .deb lays it out, and the installer run on a
  // temporary host root as the DaemonSet runs it on a node. The .deb's
  // conffile /etc/specshim/config.toml is the same file
  // (packaging/CPackConfig.cmake installs packaging/specshim.toml).
  specshim::test::TempDir node;
  const fs::path stage = node / "stage", host = node / "host";
  fs::create_directories(host);
  auto staged = specshim::test::run_process({E2E_CMAKE, "--install", E2E_BUILD_DIR, "--prefix", "/usr"},
                                            {{"DESTDIR", stage.string()}});
  INFO(staged.out << staged.err);
  REQUIRE(staged.exit_code == 0);
  auto installed = specshim::test::run_process(
      {"/bin/bash", E2E_SOURCE_DIR "/packaging/install-on-host.sh", "--config-version", "2", "--no-restart"},
      {{"SPECSHIM_HOST_ROOT", host.string()}, {"SPECSHIM_SOURCE_ROOT", stage.string()}});
  INFO(installed.out << installed.err);
  REQUIRE(installed.exit_code == 0);
  const std::string config = specshim::test::read_file(host / "etc/specshim/config.toml");
  REQUIRE(config == specshim::test::read_file(specshim::test::kShippedConfig));

  Containerd c;
  c.set_specshim_config_file(config);
  CHECK(run_as_uid(c, "installed-config-pod", "id -un; id -u") == "stdout: user10001\nstdout: 10001\n");
}

TEST_CASE("CRI: a cdi.k8s.io annotation brings the device node and env and mount (CDI modifier)", CDI_TAGS) {
  Containerd c;
  c.set_specshim_config(base_config(c));
  Pod pod(c, "cdi-pod");
  auto cfg = container_config("main",
                              "test -c /dev/accel0 && head -c 4 /dev/accel0 | od -An -tx1 && echo node-opens; "
                              "echo cdi-env=$E2E_CDI_ENV; cat /mnt/cdi/hello");
  cfg.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(kUid);
  (*cfg.mutable_annotations())["cdi.k8s.io/e2e"] = "example.com/accel=0";  // as a device plugin sets it
  auto ran = pod.run(cfg);
  const std::string log = log_text(ran.log);
  INFO(log << c.diagnostics());
  CHECK(ran.status.exit_code() == 0);
  CHECK(log ==
        "stdout:  00 00 00 00\n"
        "stdout: node-opens\n"
        "stdout: cdi-env=accel0\n"
        "stdout: hello from a CDI mount\n");
}

TEST_CASE("CRI: an unresolvable CDI device fails the create with the message of whoever resolves it (CDI modifier)",
          CDI_TAGS) {
  Containerd c;
  c.set_specshim_config(base_config(c));
  Pod pod(c, "cdi-refused-pod");
  auto cfg = container_config("main", "echo never");
  (*cfg.mutable_annotations())["cdi.k8s.io/e2e"] = "example.com/accel=missing";
  if (tier().cri_cdi) {
    // containerd resolves container annotations itself (1.7 with enable_cdi,
    // 2.x) and fails CreateContainer before any runtime runs: specshim never
    // sees this container (what doctor's containerd CDI check warns about).
    try {
      pod.create(cfg);
      FAIL("CreateContainer succeeded");
    } catch (const RpcError& e) {
      INFO(e.message << "\n" << c.diagnostics());
      CHECK(e.code == grpc::StatusCode::UNKNOWN);
      CHECK_THAT(e.message, Catch::EndsWith("failed to create containerd container: CDI device injection failed: "
                                            "unresolvable CDI devices example.com/accel=missing"));
    }
    CHECK(c.cri().list_containers(pod.id).empty());
    for (const auto& call : c.runtime_calls())
      CHECK_THAT(call, !Catch::Contains("create --bundle") || Catch::Contains(pod.id));
    return;
  }
  // containerd 1.6 has no CDI: specshim resolves the annotation at the create.
  const std::string id = pod.create(cfg);
  try {
    c.cri().start_container(id);
    FAIL("StartContainer succeeded");
  } catch (const RpcError& e) {
    INFO(e.message << "\n" << c.diagnostics());
    CHECK(e.code == grpc::StatusCode::UNKNOWN);
    CHECK_THAT(e.message, Catch::Contains("OCI runtime create failed: specshim: "));
    CHECK_THAT(e.message, Catch::Contains("example.com/accel=missing"));
    CHECK_THAT(e.message, Catch::EndsWith(tier().error_suffix));
  }
  CHECK(c.cri().container_status(id).reason() == "StartError");
  c.cri().remove_container(id);
}

TEST_CASE("CRI: a GPU handed over in NVIDIA_VISIBLE_DEVICES as the kubelet passes plugin env arrives (env-devices)",
          CDI_TAGS) {
  Containerd c;
  const fs::path dir = c.dir();
  const std::string gpu = "GPU-4a3b2c1d-0000-4000-8000-0000000000e2";
  fs::create_directories(dir / "gpu-dev");
  ::mknod((dir / "gpu-dev/nvidia0").c_str(), S_IFCHR | 0666, makedev(1, 7));
  nlohmann::json device = {
      {"deviceNodes", {{{"path", "/dev/nvidia0"}, {"hostPath", (dir / "gpu-dev/nvidia0").string()}}}}};
  nlohmann::json spec = {
      {"cdiVersion", "0.5.0"},
      {"kind", "nvidia.com/gpu"},
      {"devices", {{{"name", "0"}, {"containerEdits", device}}, {{"name", gpu}, {"containerEdits", device}}}},
      {"containerEdits", {{"env", {"E2E_DRIVER=570.86.15"}}}}};
  specshim::test::write_file(c.cdi_dir() / "nvidia.json", spec.dump(2));
  c.set_specshim_config("[cdi]\nspec-dirs = [\"" + c.cdi_dir().string() +
                        "\"]\n\n[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
                        "kubelet-root = \"" +
                        (dir / "kubelet").string() + "\"\n");

  Pod pod(c, "env-gpu-pod");
  // The kubelet's device manager recorded the plugin's answer before CreateContainer.
  specshim::test::write_file(
      dir / "kubelet/device-plugins/kubelet_internal_checkpoint",
      checkpoint_with_env(pod.config.metadata().uid(), "nvidia.com/gpu", gpu, "NVIDIA_VISIBLE_DEVICES", gpu));
  auto cfg = container_config("main",
                              "test -c /dev/nvidia0 && head -c 4 /dev/nvidia0 | od -An -tx1 && echo gpu-opens; "
                              "echo driver=$E2E_DRIVER devices=$NVIDIA_VISIBLE_DEVICES");
  auto* env = cfg.add_envs();  // the plugin's env, which the kubelet puts first
  env->set_key("NVIDIA_VISIBLE_DEVICES");
  env->set_value(gpu);
  auto ran = pod.run(cfg);
  const std::string log = log_text(ran.log);
  INFO(log << c.diagnostics());
  CHECK(ran.status.exit_code() == 0);
  CHECK(log == "stdout:  00 00 00 00\nstdout: gpu-opens\nstdout: driver=570.86.15 devices=void\n");
}
