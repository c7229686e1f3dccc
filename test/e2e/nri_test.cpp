// SPDX-License-Identifier: Apache-2.0
// specshim-nri on containerd 2.x (NRI on, its socket private to the test):
// pods on containerd's plain runc handler, no specshim handler at all, get
// the chain through the plugin. A CDI device lands exactly once whoever
// resolves it; a GPU list beyond the kubelet's grant fails CreateContainer
// with specshim's reason; a containerd restarted under the plugin still has
// it; with the plugin stopped, containerd creates pods without it (its
// fail-open policy, docs/nri.md). Only on the 2.x tier with runc 1.1 (the
// plugin does not depend on the delegate: containerd's own runc runs).
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"
#include "harness_cleanup.h"
#include "runtimes.h"

using namespace specshim::e2e;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kDefaultHandler = "";  // containerd's runc

// nri_setup: containerd with NRI on and only its default handler, runc.
Setup nri_setup() {
  Setup s;
  s.handler = false;
  s.nri = true;
  return s;
}

// NriPlugin runs the built specshim-nri against c's NRI socket with c's
// specshim.toml, its stderr in specshim-nri.log, until stopped.
class NriPlugin {
 public:
  explicit NriPlugin(const Containerd& c) : log_(c.dir() / "specshim-nri.log"), pid_(spawn_specshim_nri(c)) {}
  ~NriPlugin() { stop(); }
  NriPlugin(const NriPlugin&) = delete;
  NriPlugin& operator=(const NriPlugin&) = delete;

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string log() const { return read_or_empty(log_); }
  // configured is how many times a runtime configured the plugin: once per
  // registration, after which containerd calls it for every container.
  int configured() const { return occurrences(log(), "configured by"); }
  // wait_configured waits until the plugin was configured `times` times.
  void wait_configured(int times) const {
    if (!poll_until([&] { return configured() >= times; }, 20s))
      throw std::runtime_error("specshim-nri was not configured " + std::to_string(times) + " time(s):\n" + log());
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
};

// nri_config: the CDI fixture, and the plugin's state under the test's dir;
// the pod's cdi.k8s.io annotations reach the chain (the opt-in that the
// shipped handler snippet documents for pod_annotations).
std::string nri_config(const Containerd& c) {
  return cdi_fixture(c) + "\n[nri]\nstate-dir = \"" + (c.dir() / "nri-state").string() +
         "\"\npod-annotations = [\"cdi.k8s.io/*\"]\n";
}

// NvidiaRuntime stands in for NVIDIA's runtime as the runc handler's
// BinaryName (ACK's GPU pools): on create it records the
// NVIDIA_VISIBLE_DEVICES the bundle's config.json hands it (the last entry,
// as NVIDIA's runtime reads it; "unset" without one), then runs the tier's
// runtime with the same arguments.
struct NvidiaRuntime {
  specshim::test::TempDir dir;
  fs::path script = dir / "nvidia-container-runtime";
  fs::path record = dir / "handed";
  NvidiaRuntime() { specshim::test::write_file(script, specshim::test::nvidia_stand_in(record, tier().runtime), 0755); }
  std::string handed() const { return read_or_empty(record); }
};

// gpu_config: the GPU fixture's CDI spec and [[env-devices]] for it, with
// the kubelet's checkpoint under dir/kubelet, and the plugin's state dir.
std::string gpu_config(const Containerd& c, const std::string& env_devices_extra = "") {
  return "[cdi]\nspec-dirs = [\"" + c.cdi_dir().string() +
         "\"]\n\n[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\nkubelet-root = \"" +
         (c.dir() / "kubelet").string() + "\"\n" + env_devices_extra + "\n[nri]\nstate-dir = \"" +
         (c.dir() / "nri-state").string() + "\"\n";
}

// running_spec starts container id and returns its final config.json.
json running_spec(Containerd& c, const std::string& id) {
  c.cri().start_container(id);
  REQUIRE(c.cri().container_status(id).state() == cri::CONTAINER_RUNNING);
  return json::parse(bundle_config(c, id));
}

}  // namespace

TEST_CASE("NRI: a CDI device lands exactly once, from containerd's own CDI or from the chain", CDI_TAGS) {
  Containerd c(nri_setup());
  c.set_specshim_config(nri_config(c));
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  INFO(plugin.log() << c.diagnostics());

  // A device plugin's request (a container annotation): containerd resolves
  // it before NRI; the chain finds it applied and adds nothing.
  Pod plain(c, "nri-cdi-plain", {}, kDefaultHandler);
  auto annotated = container_config("annotated", "exec sleep 600");
  (*annotated.mutable_annotations())["cdi.k8s.io/accel_0"] = kFixtureDevice;
  const json plain_spec = running_spec(c, plain.create(annotated));
  INFO("specshim-nri's log:\n" << plugin.log() << "config.json: " << plain_spec.dump());
  CHECK(cdi_fixture_edits(plain_spec) == CdiEdits{1, 1, 1, 1, 1});

  // A pod annotation: containerd does not resolve it; the chain does, and
  // the container opens the node and reads the mount.
  Pod asked(c, "nri-cdi-pod", {{"cdi.k8s.io/e2e", kFixtureDevice}}, kDefaultHandler);
  auto main =
      container_config("main", "head -c 4 /dev/accel0 | od -An -tx1; echo env=$E2E_CDI_ENV; cat /mnt/cdi/hello");
  const std::string id = asked.create(main);
  const json spec = running_spec(c, id);
  CHECK(cdi_fixture_edits(spec) == CdiEdits{1, 1, 1, 1, 1});
  auto status = wait_exited(c.cri(), id);
  CHECK(status.exit_code() == 0);
  CHECK(log_text(read_cri_log(asked.log_path(main))) ==
        "stdout:  00 00 00 00\nstdout: env=accel0\nstdout: hello from a CDI mount\n");
}

TEST_CASE("NRI: NVIDIA_VISIBLE_DEVICES beyond the kubelet's grant fails CreateContainer with specshim's reason") {
  Containerd c(nri_setup());
  const fs::path dir = c.dir();
  const std::vector<std::string> uuids = gpu_fixture(c);
  auto config = [&](const char* protect_env) {
    return "[cdi]\nspec-dirs = [\"" + c.cdi_dir().string() +
           "\"]\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" + (dir / "kubelet").string() +
           "\"\nprotect-env = " + protect_env +
           "\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\nproviders = [\"kubelet\"]\n\n"
           "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\non-excess = \"fail\"\n\n"
           "[nri]\nstate-dir = \"" +
           (dir / "nri-state").string() + "\"\n";
  };
  c.set_specshim_config(config("true"));
  NriPlugin plugin(c);
  plugin.wait_configured(1);

  // The pod's two containers each hold GPU 0, and the device plugin's
  // answer set NVIDIA_VISIBLE_DEVICES to it (the kubelet puts the plugin's
  // env first); `override`'s pod spec sets it again, to `all`.
  Pod pod(c, "nri-gpu-pod", {}, kDefaultHandler);
  const auto& meta = pod.config.metadata();
  const json alloc = {{"envs", {{"NVIDIA_VISIBLE_DEVICES", uuids[0]}}}};
  auto entry = [&](const char* container) {
    return json{{"pod_uid", meta.uid()},
                {"container", container},
                {"resource", "nvidia.com/gpu"},
                {"devices_by_numa", {{"0", {uuids[0]}}}},
                {"alloc", alloc}};
  };
  FakeKubelet kubelet(json{{"kubelet_root", (dir / "kubelet").string()},
                           {"pods", json::array({{{"namespace", meta.namespace_()},
                                                  {"name", meta.name()},
                                                  {"uid", meta.uid()},
                                                  {"containers",
                                                   {{"main", {{"nvidia.com/gpu", {uuids[0]}}}},
                                                    {"override", {{"nvidia.com/gpu", {uuids[0]}}}}}}}})},
                           {"allocatable", {{"nvidia.com/gpu", uuids}}},
                           {"checkpoint",
                            {{"registered", {{"nvidia.com/gpu", uuids}}},
                             {"entries", json::array({entry("main"), entry("override")})}}}}
                          .dump(),
                      dir);
  auto with_env = [&](const char* name, std::vector<std::string> values) {
    auto cfg = container_config(name, "echo nodes: $(ls /dev | grep nvidia)");
    for (const auto& v : values) {
      auto* env = cfg.add_envs();
      env->set_key("NVIDIA_VISIBLE_DEVICES");
      env->set_value(v);
    }
    return cfg;
  };
  INFO(plugin.log() << c.diagnostics());

  auto main = with_env("main", {uuids[0]});
  const std::string id = pod.create(main);
  c.cri().start_container(id);
  CHECK(wait_exited(c.cri(), id).exit_code() == 0);
  CHECK(log_text(read_cri_log(pod.log_path(main))) == "stdout: nodes: nvidia0\n");

  // The pod spec's `all` after the plugin's value: the device-plugin
  // modifier refuses the override of its plugin's env (protect-env).
  try {
    pod.create(with_env("override", {uuids[0], "all"}));
    FAIL("CreateContainer succeeded for a container overriding its plugin's GPU list with all");
  } catch (const RpcError& e) {
    CHECK_THAT(e.message, Catch::Contains("specshim: container `override` of pod `default/nri-gpu-pod`: ") &&
                              Catch::Contains("\"NVIDIA_VISIBLE_DEVICES=all\" overrides"));
  }
  // With protect-env off the override reaches env-devices, which refuses
  // the GPUs beyond the kubelet's grant (the config is read per container).
  c.set_specshim_config(config("false"));
  try {
    pod.create(with_env("override", {uuids[0], "all"}));
    FAIL("CreateContainer succeeded for a container asking for every GPU");
  } catch (const RpcError& e) {
    CHECK_THAT(e.message, Catch::Contains("specshim: container `override` of pod `default/nri-gpu-pod`: ") &&
                              Catch::Contains("env NVIDIA_VISIBLE_DEVICES=\"all\"") &&
                              Catch::Contains("beyond what the kubelet granted"));
  }
}

TEST_CASE("NRI: after containerd restarts, the plugin registers again and the next pod gets the chain", CDI_TAGS) {
  Containerd c(nri_setup());
  c.set_specshim_config(nri_config(c));
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  INFO(plugin.log() << c.diagnostics());
  {
    Pod before(c, "nri-before-restart", {{"cdi.k8s.io/e2e", kFixtureDevice}}, kDefaultHandler);
    CHECK(cdi_fixture_edits(running_spec(c, before.create(container_config("main", "exec sleep 600")))) ==
          CdiEdits{1, 1, 1, 1, 1});
  }
  c.restart();
  plugin.wait_configured(2);
  Pod after(c, "nri-after-restart", {{"cdi.k8s.io/e2e", kFixtureDevice}}, kDefaultHandler);
  CHECK(cdi_fixture_edits(running_spec(c, after.create(container_config("main", "exec sleep 600")))) ==
        CdiEdits{1, 1, 1, 1, 1});
}

TEST_CASE("NRI: with the plugin stopped containerd creates pods without it (fail-open)", CDI_TAGS) {
  Containerd c(nri_setup());
  c.set_specshim_config(nri_config(c));
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  plugin.stop();
  INFO(plugin.log() << c.diagnostics());
  // containerd notices the closed connection and drops the plugin; the pod
  // runs, and nothing of the chain's is in it.
  Pod pod(c, "nri-plugin-down", {{"cdi.k8s.io/e2e", kFixtureDevice}}, kDefaultHandler);
  CHECK(cdi_fixture_edits(running_spec(c, pod.create(container_config("main", "exec sleep 600")))) ==
        CdiEdits{0, 0, 0, 0, 0});
}

TEST_CASE("NRI: a uid-10001 pod resolves its name through the passwd copies the createRuntime hook fills",
          PASSWD_TAGS) {
  Containerd c(nri_setup());
  c.set_specshim_config(nri_config(c) + "passwd-hook = true\nhook-binary = \"" SPECSHIM_BINARY "\"\n");
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  INFO(plugin.log() << c.diagnostics());
  const fs::path state = c.dir() / "nri-state";
  auto entries = [&] {  // container directories (.registered is the plugin's own)
    std::error_code ec;
    int n = 0;
    for (const auto& e : fs::directory_iterator(state, ec)) n += e.path().filename().string()[0] != '.';
    return n;
  };
  {
    // containerd 2.1 shows the plugin no uid and no rootfs: the copies are
    // mounted into every container, and the hook fills them from the bundle.
    Pod pod(c, "nri-passwd", {}, kDefaultHandler);
    auto user = container_config("user", "id -un; id -u; grep '^user10001:' /etc/passwd; grep -c '^root:' /etc/passwd");
    user.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(10001);
    auto ran = pod.run(user);
    CHECK(ran.status.exit_code() == 0);
    CHECK_THAT(log_text(ran.log), Catch::StartsWith("stdout: user10001\nstdout: 10001\nstdout: user10001:x:10001:0:") &&
                                      Catch::EndsWith("\nstdout: 1\n"));
    // A root container: its copies are the image's own files, nothing added.
    auto root = pod.run(container_config("root", "id -un; grep -c specshim /etc/passwd || true"));
    CHECK(root.status.exit_code() == 0);
    CHECK(log_text(root.log) == "stdout: root\nstdout: 0\n");
    CHECK(entries() == 2);  // a directory per container
  }
  // The pod and its containers removed: containerd's RemoveContainer took
  // their directories with them.
  CHECK(poll_until([&] { return entries() == 0; }, 10s));
}

TEST_CASE(
    "NRI: beside the specshim handler the plugin leaves that handler's pods to the shim, marks the rest, and "
    "doctor says whether it is registered") {
  Setup both = nri_setup();
  both.handler = true;
  Containerd c(both);
  c.set_specshim_config(nri_config(c));
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  INFO(plugin.log() << c.diagnostics());
  auto doctor_nri = [&] {
    auto r = specshim::test::run_process(
        {SPECSHIM_BINARY, "doctor", "--json", "--config", (c.dir() / "specshim.toml").string()});
    const json report = json::parse(r.out);
    std::string found;
    for (const auto& check : report["checks"])
      if (check["name"] == "nri")
        for (const auto& f : check["findings"])
          found += f["status"].get<std::string>() + " " + f["text"].get<std::string>() + "\n";
    return found.empty() ? "no nri check in: " + r.out + r.err : found;
  };

  // The specshim handler's pod: the shim runs the chain at create; the
  // plugin adds nothing, so nothing carries its mark.
  Pod shim_pod(c, "nri-shim-pod");
  const std::string shim_id = shim_pod.create(container_config("main", "exec sleep 600"));
  const json shim_spec = running_spec(c, shim_id);
  CHECK_FALSE(shim_spec["annotations"].contains("specshim.io/nri"));
  CHECK_FALSE(calls_for(c.runtime_calls(), shim_id).empty());  // it went through specshim
  // A pod on containerd's runc: the plugin's chain, and its mark.
  Pod runc_pod(c, "nri-runc-pod", {{"cdi.k8s.io/e2e", kFixtureDevice}}, kDefaultHandler);
  const json runc_spec = running_spec(c, runc_pod.create(container_config("main", "exec sleep 600")));
  CHECK(cdi_fixture_edits(runc_spec) == CdiEdits{1, 1, 1, 1, 1});
  CHECK(runc_spec["annotations"].value("specshim.io/nri", "") == "10-specshim");

  CHECK_THAT(doctor_nri(), Catch::StartsWith("ok specshim-nri (pid ") &&
                               Catch::Contains("registered as 10-specshim with containerd 2."));
  plugin.stop();
  CHECK_THAT(doctor_nri(), Catch::Contains("warn [nri] is configured, but specshim-nri is not registered"));
}

TEST_CASE("NRI: with NVIDIA's runtime as the handler, a baked `all` without a grant reaches it as void") {
  NvidiaRuntime nvidia;
  Setup setup = nri_setup();
  setup.runc_binary = nvidia.script.string();
  Containerd c(setup);
  gpu_fixture(c);
  c.set_specshim_config(gpu_config(c));
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  INFO(plugin.log() << c.diagnostics());
  // A CUDA image's `all` (the CRI env lands in process.env as the image's
  // does), in a pod the kubelet granted no GPU: env-devices ignores it and
  // makes it inert, so NVIDIA's runtime injects nothing.
  Pod pod(c, "nri-nvidia-baked-all", {}, kDefaultHandler);
  auto main = container_config("main", "echo nodes: $(ls /dev | grep nvidia); echo $NVIDIA_VISIBLE_DEVICES");
  auto* env = main.add_envs();
  env->set_key("NVIDIA_VISIBLE_DEVICES");
  env->set_value("all");
  auto ran = pod.run(main);
  CHECK(ran.status.exit_code() == 0);
  CHECK(log_text(ran.log) == "stdout: nodes:\nstdout: void\n");
  // The pod's sandbox (no variable), then its container.
  CHECK(nvidia.handed() == "unset\nvoid\n");
}

TEST_CASE("NRI: a pod env that repeats NVIDIA_VISIBLE_DEVICES, which NRI cannot make inert, is refused") {
  NvidiaRuntime nvidia;
  Setup setup = nri_setup();
  setup.runc_binary = nvidia.script.string();
  Containerd c(setup);
  const std::vector<std::string> uuids = gpu_fixture(c);
  c.set_specshim_config(gpu_config(c, "on-excess = \"clamp\"\n"));
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  Pod pod(c, "nri-nvidia-repeated", {}, kDefaultHandler);
  const auto& meta = pod.config.metadata();
  FakeKubelet kubelet(
      json{{"kubelet_root", (c.dir() / "kubelet").string()},
           {"pods", json::array()},
           {"allocatable", {{"nvidia.com/gpu", uuids}}},
           {"checkpoint",
            {{"registered", {{"nvidia.com/gpu", uuids}}},
             {"entries", json::array({{{"pod_uid", meta.uid()},
                                       {"container", "main"},
                                       {"resource", "nvidia.com/gpu"},
                                       {"devices_by_numa", {{"0", {uuids[0]}}}},
                                       {"alloc", {{"envs", {{"NVIDIA_VISIBLE_DEVICES", uuids[0]}}}}}}})}}}}
          .dump(),
      c.dir());
  INFO(plugin.log() << c.diagnostics());
  // The device plugin's GPU, then the pod spec's `all`: clamped to the
  // grant, the chain appends void, which NRI's AdjustEnv would put on the
  // first entry and then overwrite with `all`.
  auto main = container_config("main", "echo nodes: $(ls /dev | grep nvidia)");
  for (const std::string& v : {uuids[0], std::string("all")}) {
    auto* env = main.add_envs();
    env->set_key("NVIDIA_VISIBLE_DEVICES");
    env->set_value(v);
  }
  try {
    pod.create(main);
    FAIL("CreateContainer succeeded for a container whose repeated variable would reach NVIDIA's runtime as all");
  } catch (const RpcError& e) {
    CHECK_THAT(e.message, Catch::Contains("specshim: container `main` of pod `default/nri-nvidia-repeated`: ") &&
                              Catch::Contains("process.env (NVIDIA_VISIBLE_DEVICES)") &&
                              Catch::Contains("the spec has 2 entries of it"));
  }
  CHECK(nvidia.handed().find("all") == std::string::npos);
}

TEST_CASE("NRI: reconcile moves a device given at create between containers of a pod, and it leaves the first",
          "[hotplug]") {
  Containerd c(nri_setup());
  const fs::path host_node = c.dir() / "host-dev" / "accel0";
  fs::create_directories(host_node.parent_path());
  REQUIRE(::mknod(host_node.c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
  fs::permissions(host_node, fs::perms(0666));
  const std::string pod_name = specshim::test::unique_id("nri-reconcile");
  const fs::path desired = c.dir() / "etc" / "hotplug.yaml";
  auto want = [&](const char* container) {
    const fs::path tmp = desired.parent_path() / ".hotplug.yaml.new";
    specshim::test::write_file(tmp, "containers:\n  - pod: {namespace: default, name: " + pod_name +
                                        ", container: " + container + "}\n    devices: [\"" + host_node.string() +
                                        ":/dev/accel-hot:rw\"]\n");
    fs::rename(tmp, desired);
  };
  want("first");
  c.set_specshim_config("[hotplug]\nenabled = true\ndesired = \"" + desired.string() + "\"\n\n[nri]\nstate-dir = \"" +
                        (c.dir() / "nri-state").string() + "\"\n");
  NriPlugin plugin(c);
  plugin.wait_configured(1);
  INFO(plugin.log() << c.diagnostics());

  Pod pod(c, pod_name, {}, kDefaultHandler);
  const std::string first = pod.create(container_config("first", "exec sleep 600"));
  c.cri().start_container(first);
  const std::string second = pod.create(container_config("second", "exec sleep 600"));
  c.cri().start_container(second);
  auto opens = [&](const std::string& id) {
    // A device node that opens for writing; `exec 3>` alone would make a file where none is.
    auto r = c.cri().exec_sync(
        id, {"/bin/sh", "-c", "[ -c /dev/accel-hot ] && (exec 3>/dev/accel-hot) 2>/dev/null && echo open || echo no"});
    return r.stdout();
  };
  // The plugin's chain gave `first` its device at create; its grant is in
  // the plugin's state dir, the bundle not existing yet then.
  CHECK(opens(first) == "open\n");
  CHECK(opens(second) == "no\n");
  CHECK(fs::exists(c.dir() / "nri-state" / first / "specshim-hotplug.json"));

  // The device moves to `second`: reconcile takes it from `first`, which
  // create gave it to, and attaches it to `second`.
  want("second");
  auto r = specshim::test::run_process({SPECSHIM_BINARY, "reconcile", "--root", "/run/containerd/runc/k8s.io",
                                        "--config", (c.dir() / "specshim.toml").string()});
  INFO("exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("container `" + first + "`: detached /dev/accel-hot (c 1:11)"));
  CHECK(opens(first) == "no\n");
  CHECK(opens(second) == "open\n");
  c.cri().stop_container(first, 0);
  c.cri().stop_container(second, 0);
}
