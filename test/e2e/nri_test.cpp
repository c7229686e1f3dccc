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
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"
#include "harness_cleanup.h"

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
