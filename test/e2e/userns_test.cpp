// SPDX-License-Identifier: Apache-2.0
// A Kubernetes `hostUsers: false` pod through the specshim handler, as the
// kubelet asks for it: userns_options {mode POD, one uid and one gid mapping}
// on the sandbox and on its containers, and a pod network (Setup::cni, a
// fake plugin: containerd 1.7 cannot give a host-network pod a user
// namespace). What containerd does with it depends on the tier
// (Tier::userns, docs/user-namespaces.md): every tier runs the case, and a
// tier whose behaviour changes fails it. The container asks for a CDI device
// (the fixture's example.com/accel=0) as a device plugin's pod does.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;

namespace {

constexpr std::int64_t kUid = 10001;
// Container ids 0-65535 on host ids from kHostBase: a multiple of 65536, as
// the kubelet picks, far from the ids of the 100000 range subuid gives users.
constexpr std::uint32_t kHostBase = 40 * 65536, kRange = 65536;

void set_userns(cri::NamespaceOption& ns) {
  ns.set_network(cri::POD);
  auto* u = ns.mutable_userns_options();
  u->set_mode(cri::POD);
  for (auto* m : {u->add_uids(), u->add_gids()}) {
    m->set_host_id(kHostBase);
    m->set_container_id(0);
    m->set_length(kRange);
  }
}

// The container's script: its name, id, mapping and passwd entry, then
// whether the CDI device's node is there and opens.
constexpr const char* kScript =
    "id -un; id -u; set -- $(cat /proc/self/uid_map); echo uid_map=$*; "
    "grep '^user10001:' /etc/passwd; "
    "test -c /dev/accel0 && head -c 4 /dev/accel0 | od -An -tx1 && echo node-opens; "
    "echo done; exec sleep 600";

bool has_user_namespace(const nlohmann::json& spec) {
  for (const auto& ns : spec["linux"]["namespaces"])
    if (ns.value("type", "") == "user") return true;
  return false;
}

// The mapping as it shows in /proc/self/uid_map (fields split by the shell).
std::string expected_uid_map() {
  if (tier().userns == Userns::ignored) return "0 0 4294967295";  // the host's: no user namespace
  return "0 " + std::to_string(kHostBase) + " " + std::to_string(kRange);
}

}  // namespace

TEST_CASE("CRI: a hostUsers: false pod running as uid 10001 resolves its name (passwd in a user namespace)",
          PASSWD_TAGS) {
  Setup setup;
  setup.cni = true;
  setup.userns = true;
  Containerd c(setup);
  c.set_specshim_config(cdi_fixture(c));
  auto sandbox = c.pod_config("userns-pod");
  set_userns(*sandbox.mutable_linux()->mutable_security_context()->mutable_namespace_options());
  Pod pod(c, sandbox);  // the sandbox runs on every tier
  // ... in a user namespace of its own where containerd knows userns_options.
  CHECK(has_user_namespace(nlohmann::json::parse(bundle_config(c, pod.id))) == (tier().userns != Userns::ignored));

  auto cfg = container_config("main", kScript);
  set_userns(*cfg.mutable_linux()->mutable_security_context()->mutable_namespace_options());
  cfg.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(kUid);
  // A device plugin's CDI device, as in cri_test's CDI case: in a user
  // namespace the runtime cannot mknod, so the node arrives as a bind mount.
  (*cfg.mutable_annotations())["cdi.k8s.io/e2e"] = "example.com/accel=0";
  std::string id = pod.create(cfg);
  INFO("tier " << tier().name << " + " << tier().delegate << ", container " << id);

  if (tier().userns == Userns::refused_without_idmap) {
    // containerd 2.x checks the runtime's features before it creates the
    // task (runc 1.1 has no idmap mounts): specshim never sees the container.
    // The tiers with runc 1.3 or crun behind specshim run it (below).
    try {
      c.cri().start_container(id);
      FAIL(
          "StartContainer succeeded: does the delegate's `features` now list mountExtensions.idmap (runc >= 1.2)? "
          "Then containerd 2.x runs hostUsers: false pods: set Tier::userns to runs");
    } catch (const RpcError& e) {
      INFO(e.message << "\n" << c.diagnostics());
      CHECK(e.code == grpc::StatusCode::UNKNOWN);
      CHECK_THAT(e.message, Catch::Contains("failed to validate OCI runtime features: idmap mounts not supported: "
                                            "missing `mountExtensions.idmap` entry in `features` command"));
    }
    CHECK(c.cri().container_status(id).reason() == "StartError");
    CHECK_THAT(c.specshim_log(), Catch::Contains("create " + pod.id + ": "));
    CHECK_THAT(c.specshim_log(), !Catch::Contains("create " + id + ": "));
    CHECK(calls_for(c.runtime_calls(), id).empty());
    c.cri().remove_container(id);
    return;
  }

  bool with_device = true;
  if (tier().userns_typeless_bind_crashes) {
    // crun 1.28's container process dies of SIGSEGV (dmesg: "segfault at 0
    // ... in libc.so.6") on a bind mount without `type` in a user namespace,
    // before it can report an error: the CDI fixture's mount (no type, options
    // [ro, nosuid, nodev, bind], as NVIDIA's CDI specs write mounts; the
    // runtime spec makes `type` optional). The same mount with `"type":
    // "bind"`, or without the user namespace, runs (docs/user-namespaces.md).
    try {
      c.cri().start_container(id);
      FAIL(
          "StartContainer succeeded: does this crun now handle a typeless bind mount in a user namespace? "
          "Then set Tier::userns_typeless_bind_crashes to false");
    } catch (const RpcError& e) {
      INFO(e.message << "\n" << c.diagnostics());
      CHECK(e.code == grpc::StatusCode::UNKNOWN);
      CHECK_THAT(e.message, Catch::EndsWith("OCI runtime create failed: read status from sync socket"));
    }
    // specshim did its part and handed the create to crun.
    CHECK_THAT(c.specshim_log(), Catch::Contains("create " + id + ": "));
    CHECK(calls_for(c.runtime_calls(), id).size() >= 1);
    c.cri().remove_container(id);
    // The same container without the CDI device runs.
    cfg = container_config("main-without-device", kScript);
    set_userns(*cfg.mutable_linux()->mutable_security_context()->mutable_namespace_options());
    cfg.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(kUid);
    id = pod.create(cfg);
    with_device = false;
  }

  c.cri().start_container(id);
  std::string log;
  poll_until(
      [&] {
        log = log_text(read_cri_log(pod.log_path(cfg)));
        return log.find("stdout: done\n") != std::string::npos;
      },
      std::chrono::seconds(30));
  INFO(log << c.diagnostics());
  CHECK_THAT(log, Catch::StartsWith("stdout: user10001\nstdout: 10001\nstdout: uid_map=" + expected_uid_map() +
                                    "\nstdout: user10001:x:10001:0:"));
  if (with_device) CHECK_THAT(log, Catch::EndsWith("\nstdout:  00 00 00 00\nstdout: node-opens\nstdout: done\n"));
  CHECK_THAT(c.specshim_log(), Catch::Contains("create " + id + ": "));

  // config.json as specshim left it for runc: the user namespace (1.7: the
  // sandbox's, by path, with the mappings) or none (1.6), and the passwd copy
  // bind-mounted either way.
  auto spec = nlohmann::json::parse(bundle_config(c, id));
  const auto& linux = spec["linux"];
  INFO(linux.dump(2));
  CHECK(has_user_namespace(spec) == (tier().userns == Userns::runs));
  const nlohmann::json mapping = {{{"containerID", 0}, {"hostID", kHostBase}, {"size", kRange}}};
  if (tier().userns == Userns::runs) {
    CHECK(linux["uidMappings"] == mapping);
    CHECK(linux["gidMappings"] == mapping);
  } else {
    CHECK_FALSE(linux.contains("uidMappings"));
    CHECK_FALSE(linux.contains("gidMappings"));
  }
  bool passwd_mount = false;
  for (const auto& m : spec["mounts"])
    if (m.value("destination", "") == "/etc/passwd") passwd_mount = true;
  CHECK(passwd_mount);

  c.cri().stop_container(id, 0);
  CHECK(wait_exited(c.cri(), id).exit_code() == 137);
  c.cri().remove_container(id);
}
