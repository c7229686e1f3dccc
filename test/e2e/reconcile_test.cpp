// SPDX-License-Identifier: Apache-2.0
// The desired-state file through a real containerd, on every containerd tier:
// a pod's container created through CRI on the specshim handler gets the
// device the file names for it from the hotplug modifier at create (its
// sandbox, the pause container of the same pod, gets nothing), `specshim
// reconcile` on containerd's runc root for k8s.io then has nothing to do,
// and once the file drops the device reconcile takes the node and its
// cgroup rule back from the running container. The device is a c 1:11 node
// in a temp dir (/dev/kmsg's numbers): runc's default rules do not cover it,
// so only the rule the modifier added lets the container open it.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPath = "/dev/kmsg-hot";
// The --root containerd-shim-runc-v2 gives runc (through specshim) for the
// CRI namespace, on every tier (diagnose_test.cpp asserts it).
constexpr const char* kRuncRoot = "/run/containerd/runc/k8s.io";

fs::path bundle_dir(const Containerd& c, const std::string& id) {
  return c.dir() / "state/io.containerd.runtime.v2.task/k8s.io" / id;
}

// replace_atomically writes text under a temp name next to file and renames
// it over file, as a platform agent updates the desired-state file.
void replace_atomically(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.parent_path() / ("." + file.filename().string() + ".new");
  specshim::test::write_file(tmp, text);
  fs::rename(tmp, file);
}

// reconcile is one `specshim reconcile` pass over containerd's k8s.io containers.
specshim::test::ProcessResult reconcile(const Containerd& c) {
  return specshim::test::run_process(
      {SPECSHIM_BINARY, "reconcile", "--root", kRuncRoot, "--config", (c.dir() / "specshim.toml").string()});
}

// sh runs a script in the container (`kubectl exec`): its stdout then stderr.
std::string sh(Containerd& c, const std::string& id, const std::string& script) {
  auto r = c.cri().exec_sync(id, {"/bin/sh", "-c", script});
  return r.stdout() + r.stderr();
}

// The node's type and numbers (hex, as stat prints them), then whether it
// opens for writing (the cgroup's say; opening /dev/kmsg's numbers without
// writing is harmless).
const std::string kProbe =
    std::string("stat -c '%F %t:%T' ") + kPath + " && (exec 3>" + kPath + ") 2>&1 && echo open-ok; true";
// A node the container makes itself (containerd's default capabilities
// include CAP_MKNOD; runc's default rules allow mknod of any char device):
// whether it opens depends on the cgroup's rule alone.
const std::string kMknodProbe =
    "rm -f /dev/probe-1-11; mknod /dev/probe-1-11 c 1 11 2>&1 && (exec 3>/dev/probe-1-11) 2>&1 && echo open-ok; "
    "rm -f /dev/probe-1-11; true";

// allow rules of linux.resources.devices for c 1:11.
json rules_1_11(const json& spec) {
  json out = json::array();
  const auto p = "/linux/resources/devices"_json_pointer;
  if (spec.contains(p))
    for (const auto& r : spec.at(p))
      if (r.value("allow", false) && r.value("type", "") == "c" && r.value("major", -1) == 1 &&
          r.value("minor", -1) == 11)
        out.push_back(r);
  return out;
}

// nodes_at: linux.devices entries with path `path`.
json nodes_at(const json& spec, const std::string& path) {
  json out = json::array();
  const auto p = "/linux/devices"_json_pointer;
  if (spec.contains(p))
    for (const auto& d : spec.at(p))
      if (d.value("path", "") == path) out.push_back(d);
  return out;
}

}  // namespace

TEST_CASE(
    "CRI: the hotplug modifier gives a pod's container its device at create, and reconcile takes it back when the "
    "file drops it",
    "[hotplug]") {
  Containerd c;
  INFO("tier " << tier().name);
  // The host's device node, readable and writable by all as a device
  // plugin's usually is (no umask in the way).
  const fs::path host_node = c.dir() / "host-dev" / "accel0";
  fs::create_directories(host_node.parent_path());
  REQUIRE(::mknod(host_node.c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
  fs::permissions(host_node, fs::perms(0666));

  // The pod's name is this process's own: reconcile looks at every container
  // under the shared runc root.
  const std::string pod_name = specshim::test::unique_id("reconcile-pod");
  const fs::path desired = c.dir() / "etc" / "hotplug.yaml";
  fs::create_directories(desired.parent_path());
  const std::string entry = "containers:\n  - pod: {namespace: default, name: " + pod_name + ", container: main}\n";
  specshim::test::write_file(desired, entry + "    devices: [\"" + host_node.string() + ":" + kPath + ":rw\"]\n");
  c.set_specshim_config("[hotplug]\nenabled = true\ndesired = \"" + desired.string() + "\"\n");

  Pod pod(c, pod_name);
  REQUIRE(pod.config.metadata().namespace_() == "default");
  const std::string id = pod.create(container_config("main", "exec sleep 600"));
  c.cri().start_container(id);
  INFO(c.diagnostics());
  REQUIRE(c.cri().container_status(id).state() == cri::CONTAINER_RUNNING);

  // The workload has its device, usable from its first instruction.
  CHECK(sh(c, id, kProbe) == "character special file 1:b\nopen-ok\n");
  // The probe that shows the rule's revocation later opens now.
  CHECK(sh(c, id, kMknodProbe) == "open-ok\n");

  const json node = {{"path", kPath},    {"type", "c"}, {"major", 1}, {"minor", 11},
                     {"fileMode", 0666}, {"uid", 0},    {"gid", 0}};
  const json rule = {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rw"}};
  const std::string key = "device " + host_node.string() + ":" + kPath + ":rw";
  {
    const json spec = json::parse(bundle_config(c, id));
    CHECK(nodes_at(spec, kPath) == json::array({node}));
    CHECK(rules_1_11(spec) == json::array({rule}));
    const fs::path grant_file = bundle_dir(c, id) / "specshim-hotplug.json";
    REQUIRE(fs::exists(grant_file));
    const json grant = json::parse(specshim::test::read_file(grant_file));
    INFO(grant.dump(2));
    CHECK(grant["container"] == id);
    CHECK(grant["desired"] == desired.string() + ":2");
    REQUIRE(grant["devices"].size() == 1);
    CHECK(grant["devices"][0]["key"] == key);
    CHECK(grant["devices"][0]["path"] == kPath);
    CHECK(grant["rules"] == json::array({rule}));
  }
  {
    // The sandbox (pause) container of the same pod, created through the same
    // handler with the pod's annotations, got nothing.
    const json spec = json::parse(specshim::test::read_file(bundle_dir(c, pod.id) / "config.json"));
    CHECK(spec["annotations"].value("io.kubernetes.cri.container-type", "") == "sandbox");
    CHECK(nodes_at(spec, kPath).empty());
    CHECK(rules_1_11(spec).empty());
    CHECK_FALSE(fs::exists(bundle_dir(c, pod.id) / "specshim-hotplug.json"));
    CHECK_FALSE(fs::exists(bundle_dir(c, pod.id) / "specshim-attached.json"));
  }

  // Create gave what the file wants: reconcile has nothing to do.
  {
    auto r = reconcile(c);
    INFO("exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
  }

  // The platform drops every entry, replacing the file as agents do.
  replace_atomically(desired, "containers: []\n");
  {
    auto r = reconcile(c);
    INFO("exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "container `" + id + "`: detached " + kPath + " (c 1:11)\n");
    CHECK(r.err.empty());
  }
  CHECK(sh(c, id, std::string("test -e ") + kPath + " && echo present || echo gone") == "gone\n");
  // The rule create appended is revoked: the container's own node is denied.
  CHECK(sh(c, id, kMknodProbe) == "/bin/sh: can't create /dev/probe-1-11: Operation not permitted\n");
  // And a second pass finds nothing left to do.
  {
    auto r = reconcile(c);
    INFO("exit " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
  }
  c.cri().stop_container(id, 0);
}
