// SPDX-License-Identifier: Apache-2.0
// [hotplug] bound = "pod-allocation" on running runc containers (busybox, as
// root): reconcile, the hotplug modifier at create and attach --gpu give a
// container an accelerator only when the kubelet allocated it to a container
// of its pod. The kubelet is the in-process FakeKubelet (PodResources, which
// specshim reaches through the specshim-kubelet helper next to it) and a
// checkpoint written by the fakes under a temp kubelet root. Two stand-in
// GPUs are listed by a driver list under a fake --proc: the pod's (GPU-aaa,
// a c 1:11 node that opens where the cgroup allows it) and another pod's
// (GPU-bbb, c 1:12). A FUSE-like node (c 10:229) is of no resource.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <sstream>

#include "container.h"
#include "fake_kubelet.h"
#include "host_device.h"
#include "running.h"
#include "specshim/base/spec.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;
using specshim::kubelet::AllocateResponse;

namespace {

const std::string kOurs = "GPU-0a0a0a0a-0000-1111-2222-333344445555";
const std::string kTheirs = "GPU-0b0b0b0b-0000-1111-2222-333344445555";
const std::string kUid = "5e1f0000-0000-4000-8000-00000000b0c7";
const std::string kOtherUid = "5e1f0000-0000-4000-8000-0000000000f1";
const std::string kResource = "nvidia.com/gpu";

// Node is the node: the kubelet (checkpoint and PodResources) with pod
// dev/box-7's container `main` holding GPU-aaa and pod team-b/other's
// `main` holding GPU-bbb, the two GPUs (stand-in minors given per test:
// cases run in parallel), specshim's config with the bound, the
// desired-state file and one runc --root.
struct Node {
  TempDir tmp;
  fs::path kubelet_root = tmp / "kubelet";
  fs::path proc = tmp / "proc";
  fs::path config = tmp / "specshim.toml";
  fs::path desired = tmp / "etc" / "hotplug.yaml";
  fs::path root = tmp / "runc-root";
  fs::path fuse = tmp / "host-dev" / "fuse";
  StandInGpu ours;
  StandInGpu theirs;
  std::unique_ptr<FakeKubelet> kubelet;

  Node(int ours_minor, int theirs_minor)
      : ours(proc, "0000:3b:00.0", kOurs, ours_minor), theirs(proc, "0000:af:00.0", kTheirs, theirs_minor, 12) {
    fs::create_directories(desired.parent_path());
    fs::create_directories(root);
    fs::create_directories(fuse.parent_path());
    REQUIRE(::mknod(fuse.c_str(), S_IFCHR | 0666, makedev(10, 229)) == 0);
    write_checkpoint(kubelet_root,
                     {{kUid, "main", kResource, {{"0", {kOurs}}}, answer(ours.node())},
                      {kOtherUid, "main", kResource, {{"0", {kTheirs}}}, answer(theirs.node())}},
                     {{kResource, {kOurs, kTheirs}}}, CheckpointLayout::numa);
    kubelet = std::make_unique<FakeKubelet>(kubelet_root);
    kubelet->add_pod("dev", "box-7", kUid, {{"main", {{kResource, {kOurs}}}}, {"side", {}}});
    kubelet->add_pod("team-b", "other", kOtherUid, {{"main", {{kResource, {kTheirs}}}}});
    write_file(config, config_text(false));
  }
  static AllocateResponse answer(const std::string& node) {
    AllocateResponse a;
    a.devices = {{node, node, "rw"}};
    return a;
  }
  std::string config_text(bool modifier) const {
    return "[runtime]\npath = \"/usr/sbin/runc\"\n\n[kubelet]\nroot = \"" + kubelet_root.string() +
           "\"\n\n[[device-plugin.resources]]\nname = \"" + kResource + "\"\nproviders = [\"kubelet\"]\n\n[hotplug]\n" +
           (modifier ? "enabled = true\n" : "") + "desired = \"" + desired.string() + "\"\nproc = \"" + proc.string() +
           "\"\nbound = \"pod-allocation\"\n";
  }
  void want(const std::string& yaml) const { write_file(desired, yaml); }
  ProcessResult reconcile() const {
    return run_process({SPECSHIM_BINARY, "reconcile", "--root", root.string(), "--config", config.string()});
  }
  ProcessResult attach(const std::string& id, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {SPECSHIM_BINARY, "attach",        "--root", root.string(),
                                     "--config",      config.string(), "--proc", proc.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(id);
    return run_process(argv);
  }
};

// cri gives a container containerd's CRI annotations of container `name`
// of pod ns/pod (uid).
std::function<void(BusyboxBundle&)> cri(const std::string& ns, const std::string& pod, const std::string& uid,
                                        const std::string& name = "main") {
  return [=](BusyboxBundle& b) {
    b.spec()["annotations"] = {{"io.kubernetes.cri.container-type", "container"},
                               {"io.kubernetes.cri.sandbox-namespace", ns},
                               {"io.kubernetes.cri.sandbox-name", pod},
                               {"io.kubernetes.cri.sandbox-uid", uid},
                               {"io.kubernetes.cri.sandbox-id", "sandbox-" + pod},
                               {"io.kubernetes.cri.container-name", name}};
  };
}
const auto box_main = [] { return cri("dev", "box-7", kUid); };

// sibling is a container created outside CRI (a dev box's docker-in-docker
// sibling) that names pod dev/box-7 and takes its devices from `main`.
void sibling(BusyboxBundle& b) {
  b.spec()["annotations"] = {{"specshim.io/pod", "dev/box-7"}, {"specshim.io/devices-from", "main"}};
}

bool present(const Running& c, const std::string& path) {
  return c.sh("test -e " + path + " && echo present || echo gone") == "present\n";
}

std::string gpu_entry(const std::string& who, const std::vector<std::string>& gpus, bool shared = false) {
  std::string list;
  for (const auto& g : gpus) list += (list.empty() ? "\"" : ", \"") + g + "\"";
  return "  - " + who + "\n    gpus: [" + list + "]\n" + (shared ? "    shared: true\n" : "");
}

}  // namespace

TEST_CASE("reconcile bound: the pod's GPU attaches, another pod's is refused by name, the rest applies, exit 1") {
  Node node(240, 241);
  Running main(node.tmp / "main", box_main(), "it-bound", node.root);
  Running loose(node.tmp / "loose", {}, "it-bound", node.root);
  node.want("containers:\n" + gpu_entry("pod: {namespace: dev, name: box-7, container: main}", {kOurs, kTheirs}, true) +
            gpu_entry("id: " + loose.id(), {kOurs}, true) + "    devices: [\"" + node.fuse.string() +
            ":/dev/fuse-test\"]\n");

  auto r = node.reconcile();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  std::string main_who = "container `" + main.id() + "` (pod `dev/box-7` container `main`)";
  CHECK_THAT(r.out, Contains(main_who + ": attached " + node.ours.node() + " (c 1:11 rwm, mknod) for gpu " + kOurs));
  CHECK_THAT(r.out,
             Contains("container `" + loose.id() + "`: attached /dev/fuse-test (c 10:229 rwm, mknod) for device " +
                      node.fuse.string() + ":/dev/fuse-test:rwm"));
  // Another pod's GPU: named with its UUID, the pod, and what the pod holds.
  CHECK_THAT(r.err, Contains("specshim reconcile: " + main_who + ": refused gpu " + kTheirs + ": " +
                             node.theirs.node() + " (c 1:12, GPU " + kTheirs + ", of the NVIDIA driver, `" + kResource +
                             "`) is not allocated to pod `dev/box-7`, which holds `" + kResource + "` " + kOurs +
                             " of container `main` (c 1:11"));
  // A container of no pod gets no accelerator.
  CHECK_THAT(r.err, Contains("specshim reconcile: container `" + loose.id() + "`: refused gpu " + kOurs + ": " +
                             node.ours.node() + " (c 1:11, GPU " + kOurs));
  CHECK_THAT(r.err, Contains("is an accelerator, and the container belongs to no pod (created outside CRI, no "
                             "specshim.io/pod annotation)"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 2);

  CHECK(main.exec(opens(node.ours.node())).out == "open-ok\n");
  CHECK_FALSE(present(main, node.theirs.node()));
  CHECK(present(loose, "/dev/fuse-test"));
  CHECK_FALSE(present(loose, node.ours.node()));
  Json rec = Specshim{main, node.config}.attached();
  CHECK(rec["reconciled"] == Json::array({"gpu " + kOurs}));
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == node.ours.node());

  // The refusals stand on the next pass; nothing given is taken back.
  auto again = node.reconcile();
  CHECK(again.exit_code == 1);
  CHECK(again.out.empty());
  CHECK_THAT(again.err, Contains("refused gpu " + kTheirs));
  CHECK(main.exec(opens(node.ours.node())).out == "open-ok\n");
}

TEST_CASE("reconcile bound: a GPU moves from the dev box to its sibling, never to another pod's container") {
  Node node(242, 243);
  Running main(node.tmp / "main", box_main(), "it-bound", node.root);
  Running sib(node.tmp / "sib", sibling, "it-bound", node.root);
  Running stranger(node.tmp / "stranger", cri("team-b", "other", kOtherUid), "it-bound", node.root);
  const std::string gpu = node.ours.node();

  node.want("containers:\n" + gpu_entry("pod: {namespace: dev, name: box-7, container: main}", {kOurs}));
  auto r = node.reconcile();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(main.exec(opens(gpu)).out == "open-ok\n");

  // The dev box hands it to its sibling (created outside CRI, specshim.io/pod dev/box-7).
  node.want("containers:\n" + gpu_entry("id: " + sib.id(), {kOurs}));
  r = node.reconcile();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("container `" + main.id() + "`: detached " + gpu + " (c 1:11)"));
  CHECK_THAT(r.out,
             Contains("container `" + sib.id() + "`: attached " + gpu + " (c 1:11 rwm, mknod) for gpu " + kOurs));
  CHECK(sib.exec(opens(gpu)).out == "open-ok\n");
  CHECK(main.exec(opens(gpu)).out == "open-failed\n");

  // A container of another pod never gets it.
  node.want("containers:\n" + gpu_entry("pod: {namespace: team-b, name: other, container: main}", {kOurs}));
  r = node.reconcile();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out == "container `" + sib.id() + "`: detached " + gpu + " (c 1:11)\n");
  CHECK_THAT(r.err, Contains("container `" + stranger.id() + "` (pod `team-b/other` container `main`): refused gpu " +
                             kOurs + ": " + gpu + " (c 1:11, GPU " + kOurs));
  CHECK_THAT(r.err, Contains("is not allocated to pod `team-b/other`, which holds `" + kResource + "` " + kTheirs +
                             " of container `main` (c 1:12)"));
  CHECK_FALSE(present(stranger, gpu));
  CHECK_FALSE(fs::exists(stranger.record()));
}

TEST_CASE("hotplug modifier bound: a create gets its pod's GPU, a create wanting another pod's fails naming it") {
  Node node(244, 245);
  Shim shim(node.tmp.path(), node.config_text(true));
  REQUIRE(shim.config_path() == node.config);
  node.want("containers:\n" + gpu_entry("pod: {namespace: dev, name: box-7, container: main}", {kOurs}) +
            gpu_entry("pod: {namespace: dev, name: box-7, container: side}", {kTheirs}));

  auto create = [&](const std::string& name, const std::string& dir, const std::string& id) {
    BusyboxBundle b(node.tmp / dir / "bundle");
    b.set_args({"/bin/sleep", "600"});
    cri("dev", "box-7", kUid, name)(b);
    b.save();
    auto r = shim.call(b, {"create", "--bundle", b.dir().string(), id}, false);
    return std::pair{r, Shim::log(b)};
  };
  std::string main_id = unique_id("it-bound-create"), side_id = unique_id("it-bound-create");
  struct Cleanup {
    const Node& node;
    std::vector<std::string> ids;
    ~Cleanup() {
      for (const auto& id : ids) {
        run_process({kRunc, "--root", node.root.string(), "kill", id, "KILL"});
        run_process({kRunc, "--root", node.root.string(), "delete", "--force", id});
      }
    }
  } cleanup{node, {main_id, side_id}};

  auto [ok, ok_log] = create("main", "main", main_id);
  INFO(ok_log);
  REQUIRE(ok.exit_code == 0);
  Json spec = Json::parse(read_file(node.tmp / "main" / "bundle" / "config.json"));
  bool has = false;
  for (const auto& d : spec["linux"]["devices"]) has = has || d["path"] == node.ours.node();
  CHECK(has);

  auto [refused, log] = create("side", "side", side_id);
  INFO(log);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(log, Contains("hotplug: desired-state file " + node.desired.string() +
                           ":4: pod `dev/box-7` container `side`: gpu " + kTheirs + ": " + node.theirs.node() +
                           " (c 1:12, GPU " + kTheirs));
  CHECK_THAT(log, Contains("is not allocated to pod `dev/box-7`, which holds `" + kResource + "` " + kOurs +
                           " of container `main` (c 1:11)"));
  CHECK(read_file(node.tmp / "side" / "bundle" / "config.json").find(node.theirs.node()) == std::string::npos);
}

TEST_CASE("attach bound: --gpu of the pod attaches, another pod's and a pod-less container's are refused") {
  Node node(246, 247);
  Running main(node.tmp / "main", box_main(), "it-bound", node.root);
  Running sib(node.tmp / "sib", sibling, "it-bound", node.root);
  Running loose(node.tmp / "loose", {}, "it-bound", node.root);

  auto r = node.attach(main.id(), {"--gpu", kTheirs});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("specshim attach: container `" + main.id() + "`: device `" + node.theirs.node() +
                             "`: " + node.theirs.node() + " (c 1:12, GPU " + kTheirs));
  CHECK_THAT(r.err, Contains("is not allocated to pod `dev/box-7`, which holds `" + kResource + "` " + kOurs));
  CHECK_FALSE(present(main, node.theirs.node()));
  CHECK_FALSE(fs::exists(main.record()));

  r = node.attach(sib.id(), {"--gpu", kOurs});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "attached " + node.ours.node() + " (c 1:11 rwm, mknod)\n");
  CHECK(sib.exec(opens(node.ours.node())).out == "open-ok\n");

  // A node of no resource is not bound; an accelerator for a pod-less container is.
  r = node.attach(loose.id(), {"--device", node.fuse.string() + ":/dev/fuse-test", "--gpu", kOurs});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("the container belongs to no pod"));
  CHECK_FALSE(present(loose, "/dev/fuse-test"));  // together or not at all
  r = node.attach(loose.id(), {"--device", node.fuse.string() + ":/dev/fuse-test"});
  CHECK(r.exit_code == 0);
  CHECK(present(loose, "/dev/fuse-test"));

  // PodResources gone: refused, naming the socket.
  node.kubelet.reset();
  r = node.attach(main.id(), {"--gpu", kOurs});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("cannot tell what pod `dev/box-7` holds: "));
  CHECK_THAT(r.err, Contains((node.kubelet_root / "pod-resources" / "kubelet.sock").string()));
  CHECK_FALSE(present(main, node.ours.node()));
}
