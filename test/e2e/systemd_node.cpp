// SPDX-License-Identifier: Apache-2.0
#include "systemd_node.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "containerd_harness.h"
#include "harness_cleanup.h"
#include "runtimes.h"
#include "script_verb.h"

namespace specshim::e2e {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string kNodeScript = E2E_SOURCE_DIR "/test/e2e/systemd-node/node.sh";

}  // namespace

std::string unit_of(const std::string& container_id) {
  return "cri-containerd-" + container_id + ".scope";
}

SystemdNode::SystemdNode() {
  // The node's files, and what the tests hand it, must be reachable by
  // whatever the node runs: containerd's shim and runc run as root, but the
  // share is searched by the container's users too (log dirs).
  ::chmod(share().c_str(), 0755);
  fs::copy_file(E2E_IMAGE_TAR, share() / "busybox-oci.tar");
  auto booted = test::run_process(
      {"/bin/bash", kNodeScript, "boot", dir_.path().string(), E2E_BUILD_DIR, share().string()}, {}, 600000);
  try {
    pid_ = std::stoi(read_or_empty(dir_.path() / "pid"));
  } catch (const std::exception&) {  // no pid: the boot failed before systemd started
  }
  if (booted.exit_code != 0) {
    stop();
    throw std::runtime_error("node.sh boot failed:\n" + booted.out + booted.err);
  }
  try {
    // The packaged installer, on the node, as a node's admin (or the
    // DaemonSet with --host-root /) runs it: it restarts containerd with
    // systemctl.
    // The delegate of this binary (runc 1.1.5 is the tree's own), for the
    // node's runtime wrapper (systemd-node/runtime.sh).
    const std::string runc = delegate_name() == std::string("runc-1.1")
                                 ? "/usr/sbin/runc"
                                 : test::runtime_binary(delegate_name(), "systemd node").string();
    test::write_file(in_node("/etc/specshim-node/runc"), runc + "\n");
    installed_ = exec_ok({"/usr/libexec/specshim/install-on-host.sh", "--host-root", "/"}, 120000);
    // install-on-host.sh restarted containerd; its socket may not be there yet.
    cri_ =
        cri_when_ready(in_node("/run/containerd/containerd.sock").string(), 60s, [&] { return ::kill(pid_, 0) == 0; });
    if (!cri_) throw std::runtime_error("containerd's CRI does not answer within 60s");
    exec_ok({"ctr", "--namespace", "k8s.io", "images", "import", std::string(kShare) + "/busybox-oci.tar"}, 120000);
    if (!poll_until([&] { return cri_->image_present(kImage); }, 30s))
      throw std::runtime_error("CRI does not list the imported image");
  } catch (const std::exception& e) {
    std::string why = std::string(e.what()) + "\n" + diagnostics();
    stop();
    throw std::runtime_error(why);
  }
}

SystemdNode::~SystemdNode() {
  stop();
}

void SystemdNode::stop() noexcept {
  cri_.reset();
  test::run_process({"/bin/bash", kNodeScript, "stop", dir_.path().string()}, {}, 120000);
}

fs::path SystemdNode::in_node(const fs::path& node_path) const {
  return fs::path("/proc/" + std::to_string(pid_) + "/root") / node_path.relative_path();
}

test::ProcessResult SystemdNode::exec(const std::vector<std::string>& argv, int timeout_ms) const {
  return script_verb(kNodeScript, "exec", dir_.path(), argv, timeout_ms);
}

std::string SystemdNode::exec_ok(const std::vector<std::string>& argv, int timeout_ms) const {
  return succeeded(exec(argv, timeout_ms), "the node", argv);
}

void SystemdNode::daemon_reload() const {
  exec_ok({"systemctl", "daemon-reload"});
}

std::string SystemdNode::device_allow(const std::string& unit) const {
  return exec_ok({"systemctl", "show", "--property=DeviceAllow", "--value", unit});
}

void SystemdNode::write_config(const std::string& text) const {
  test::write_file(in_node("/etc/specshim/config.toml"), text);
}

cri::PodSandboxConfig SystemdNode::pod_config(const std::string& name) const {
  cri::PodSandboxConfig pod;
  // The kubelet's systemd driver names a pod's slice after its uid, with
  // "_" for "-" (a "-" in a slice name is a level of the hierarchy).
  std::string uid = "uid_" + name + "_" + std::to_string(::getpid());
  for (auto& ch : uid)
    if (ch == '-') ch = '_';
  pod.mutable_metadata()->set_name(name);
  pod.mutable_metadata()->set_namespace_("default");
  pod.mutable_metadata()->set_uid(uid);
  fs::create_directories(share() / "pods" / uid);
  pod.set_log_directory(std::string(kShare) + "/pods/" + uid);
  (*pod.mutable_labels())["io.kubernetes.pod.name"] = name;
  auto* linux = pod.mutable_linux();
  linux->set_cgroup_parent("specshim_e2e-pod" + uid + ".slice");
  linux->mutable_security_context()->mutable_namespace_options()->set_network(cri::NODE);
  return pod;
}

std::string SystemdNode::diagnostics() const {
  auto journal = exec({"journalctl", "--no-pager", "-n", "60", "-u", "containerd"}, 20000);
  const std::string console = read_or_empty(dir_.path() / "console");
  return "--- the node's journal, containerd (tail)\n" + tail(journal.out + journal.err, 5000) +
         "\n--- the node's console (tail)\n" + tail(console, 2000);
}

}  // namespace specshim::e2e
