// SPDX-License-Identifier: Apache-2.0
// `specshim diagnose` on a CRI container, on every containerd tier: the
// container the kubelet's path made through the specshim handler (a CRI
// `devices` entry for test/support's c 1:11 node, which runc's default
// rules do not cover), found by its pod from the runc root the containerd
// shim used, passes healthy; once `kubectl exec` (CRI ExecSync) removes the
// node inside, the node layer alone fails. The pod's sandbox (its pause
// container, in the same root with the same pod annotations) is never
// picked. The harness's specshim config has passwd on, so a uid without an
// entry is no break through CRI: the node is.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "containerd_harness.h"
#include "e2e_util.h"
#include "host_device.h"

using namespace specshim::e2e;
using nlohmann::json;

namespace {

constexpr const char* kDevicePath = "/dev/accel0";

// runtime_root is the --root containerd-shim-runc-v2 passed to specshim (and
// specshim on to runc) when it created container id, from the recording.
std::string runtime_root(const Containerd& c, const std::string& id) {
  for (const auto& call : calls_for(c.runtime_calls(), id)) {
    std::istringstream words(call);
    std::vector<std::string> argv;
    for (std::string w; words >> w;) argv.push_back(w);
    if (std::find(argv.begin(), argv.end(), "create") == argv.end()) continue;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--root") return argv[i + 1];
  }
  return "";
}

// Diagnosis is one `specshim diagnose --format json` run.
struct Diagnosis {
  specshim::test::ProcessResult r;
  json report;  // null when stdout is no JSON
};

Diagnosis diagnose(const Containerd& c, const std::string& root, const std::vector<std::string>& args) {
  const std::string config = (c.dir() / "specshim.toml").string();
  std::vector<std::string> argv = {SPECSHIM_BINARY, "diagnose", "--root", root, "--config", config, "--format", "json"};
  argv.insert(argv.end(), args.begin(), args.end());
  Diagnosis d{specshim::test::run_process(argv), nullptr};
  d.report = json::parse(d.r.out, nullptr, false);
  if (d.report.is_discarded()) d.report = nullptr;
  return d;
}

std::string shown(const Containerd& c, const Diagnosis& d) {
  return "exit " + std::to_string(d.r.exit_code) + "\nstdout:\n" + d.r.out + "\nstderr:\n" + d.r.err + "\n" +
         c.diagnostics();
}

// statuses are the statuses of the checks of layer about subject.
std::set<std::string> statuses(const json& report, const std::string& layer, const std::string& subject) {
  std::set<std::string> found;
  if (report.is_object())
    for (const auto& check : report["checks"])
      if (check["layer"] == layer && check["subject"] == subject) found.insert(check["status"].get<std::string>());
  return found;
}

// failing are the "layer subject" of every failing check.
std::set<std::string> failing(const json& report) {
  std::set<std::string> found;
  if (report.is_object())
    for (const auto& check : report["checks"])
      if (check["status"] == "fail")
        found.insert(check["layer"].get<std::string>() + " " + check["subject"].get<std::string>());
  return found;
}

}  // namespace

TEST_CASE(
    "CRI: specshim diagnose --pod finds a pod's container (never its sandbox), passes it healthy, and fails "
    "the node layer alone once its device node is removed") {
  Containerd c;
  specshim::test::HostDevice host;
  Pod pod(c, "diagnose-pod");
  const std::string ns = pod.config.metadata().namespace_(), name = pod.config.metadata().name();
  const std::string pod_ref = ns + "/" + name;
  const std::string sandbox_root = runtime_root(c, pod.id);
  INFO("tier " << tier().name);
  // The shim's runc root: containerd's default for the CRI namespace, outside
  // the harness's private state dir, on every tier.
  {
    INFO(join(c.runtime_calls()));
    REQUIRE(sandbox_root == "/run/containerd/runc/k8s.io");
  }

  {
    // Only the sandbox is there: it carries the pod's annotations, and is
    // still no container of the pod.
    auto d = diagnose(c, sandbox_root, {"--pod", pod_ref});
    INFO(shown(c, d));
    CHECK(d.r.exit_code == 2);
    CHECK_THAT(d.r.err, Catch::Contains("pod `" + pod_ref + "`: the runtime under `" + sandbox_root +
                                        "` runs no such container"));
    CHECK_THAT(d.r.err, Catch::Contains("the pod has its sandbox " + pod.id + " (never inspected)"));
  }

  // As the kubelet passes a device plugin's DeviceSpec.
  auto cfg = container_config("main", "exec sleep 600");
  auto* dev = cfg.add_devices();
  dev->set_host_path(host.node.string());
  dev->set_container_path(kDevicePath);
  dev->set_permissions("rw");
  const std::string id = pod.create(cfg);
  c.cri().start_container(id);
  REQUIRE(c.cri().container_status(id).state() == cri::CONTAINER_RUNNING);
  const std::string root = runtime_root(c, id);
  REQUIRE(root == sandbox_root);
  // The workload can open its device: what diagnose is to confirm.
  auto opened = c.cri().exec_sync(id, {"/bin/sh", "-c", std::string("(exec 3>") + kDevicePath + ") && echo open-ok"});
  INFO("open: exit " << opened.exit_code() << " " << opened.stdout() << opened.stderr());
  REQUIRE(opened.stdout() == "open-ok\n");

  const json pod_json = {{"namespace", ns}, {"name", name}, {"container", "main"}};
  json healthy_checks;
  {
    auto d = diagnose(c, root, {"--pod", pod_ref, "--container", "main"});
    INFO(shown(c, d));
    REQUIRE(d.report.is_object());
    CHECK(d.r.exit_code == 0);
    CHECK(d.report["container"] == id);
    CHECK(d.report["pod"] == pod_json);
    CHECK(failing(d.report).empty());
    CHECK(statuses(d.report, "node", kDevicePath) == std::set<std::string>{"ok"});
    CHECK(statuses(d.report, "cgroup", kDevicePath) == std::set<std::string>{"ok"});
    CHECK(statuses(d.report, "identity", "uid 0") == std::set<std::string>{"ok"});
    healthy_checks = d.report["checks"];
  }
  {
    // The pod's one container, without naming it; not the sandbox.
    auto d = diagnose(c, root, {"--pod", pod_ref});
    INFO(shown(c, d));
    REQUIRE(d.report.is_object());
    CHECK(d.r.exit_code == 0);
    CHECK(d.report["container"] == id);
    CHECK(d.report["pod"] == pod_json);
    CHECK(d.report["checks"] == healthy_checks);
  }

  // `kubectl exec` removes the node: the node layer fails, for that path alone.
  auto rm = c.cri().exec_sync(id, {"/bin/rm", kDevicePath});
  INFO("rm: exit " << rm.exit_code() << " " << rm.stderr());
  REQUIRE(rm.exit_code() == 0);
  auto broken = diagnose(c, root, {"--pod", pod_ref, "--container", "main"});
  INFO(shown(c, broken));
  REQUIRE(broken.report.is_object());
  CHECK(broken.r.exit_code == 1);
  CHECK(broken.report["status"] == "fail");
  CHECK(broken.report["container"] == id);
  CHECK(failing(broken.report) == std::set<std::string>{std::string("node ") + kDevicePath});
  CHECK(statuses(broken.report, "cgroup", kDevicePath) == std::set<std::string>{"ok"});
  c.cri().stop_container(id, 0);
}
