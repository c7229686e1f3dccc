// SPDX-License-Identifier: Apache-2.0
// User-namespaced containers (a pod with hostUsers: false) through the real
// specshim binary and real runc: container ids 0-65535 are host ids
// 100000-165535. The rootfs is prepared the two ways containerd does it:
// chowned to the mapped ids, or an idmapped mount of a root-owned tree
// (containerd 2.x's idmapped layers), made here with open_tree and
// mount_setattr(MOUNT_ATTR_IDMAP). What is checked: the passwd entry
// resolves, the copy is container root's and read-only, an image file the
// mapped uid can write is left to the image, and a CDI device node whose
// host file is elsewhere arrives as a bind mount that opens.
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "container.h"
#include "host_device.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;

namespace {

constexpr unsigned kHostBase = 100000;  // container id 0 on the host
constexpr const char* kUserLine = "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin\n";

// chown_tree gives every file under dir to host ids uid:gid, as containerd's
// overlayfs snapshotter does for a user-namespaced pod without idmapped layers.
void chown_tree(const fs::path& dir, unsigned uid, unsigned gid) {
  REQUIRE(::lchown(dir.c_str(), uid, gid) == 0);
  for (const auto& e : fs::recursive_directory_iterator(dir)) REQUIRE(::lchown(e.path().c_str(), uid, gid) == 0);
}

// UsernsFd is a user namespace with container ids 0-65535 at host
// kHostBase: a child unshares one and waits while its maps are written and
// the namespace is opened, then exits.
class UsernsFd {
 public:
  UsernsFd() {
    int ready[2], go[2];
    REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(go, O_CLOEXEC) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(ready[0]);
      ::close(go[1]);  // so that the parent's close is the end of go
      char c = 0;
      if (::unshare(CLONE_NEWUSER) != 0 || ::write(ready[1], &c, 1) != 1) ::_exit(1);
      ::_exit(::read(go[0], &c, 1) == 0 ? 0 : 1);  // until the parent closes go
    }
    ::close(ready[1]);
    ::close(go[0]);
    char c;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    std::string proc = "/proc/" + std::to_string(pid);
    for (const char* map : {"/uid_map", "/gid_map"}) std::ofstream(proc + map) << "0 " << kHostBase << " 65536\n";
    fd_ = ::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    ::close(go[1]);
    ::close(ready[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(fd_ >= 0);
  }
  ~UsernsFd() { ::close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// IdmappedMount mounts `lower` at `target` through the mapping of UsernsFd:
// a file owned by host 0 in lower is owned by kHostBase at target.
class IdmappedMount {
 public:
  IdmappedMount(const fs::path& lower, const fs::path& target) : target_(target) {
    UsernsFd ns;
    int tree = ::open_tree(AT_FDCWD, lower.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    REQUIRE(tree >= 0);
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<__u64>(ns.get());
    int set = ::mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr);
    int moved = set == 0 ? ::move_mount(tree, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) : -1;
    ::close(tree);
    REQUIRE(set == 0);
    REQUIRE(moved == 0);
  }
  ~IdmappedMount() { ::umount2(target_.c_str(), MNT_DETACH); }

 private:
  fs::path target_;
};

// Pod is a busybox bundle running as 10001:10001 in a user namespace, with
// the given specshim config.
struct Pod {
  explicit Pod(const std::string& config) : shim(tmp.path(), config) {
    // The container's root (host uid 100000) must reach the rootfs.
    fs::permissions(tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
    b.set_user(10001, 10001);
    b.spec()["process"]["env"] = Json::array({"PATH=/bin"});
    auto& linux = b.spec()["linux"];
    linux["namespaces"].push_back({{"type", "user"}});
    linux["uidMappings"] = Json::array({{{"containerID", 0}, {"hostID", kHostBase}, {"size", 65536}}});
    linux["gidMappings"] = linux["uidMappings"];
    auto& mounts = b.spec()["mounts"];  // cgroupfs cannot be mounted from a user namespace on cgroup v1
    for (auto it = mounts.begin(); it != mounts.end(); ++it)
      if ((*it)["destination"] == "/sys/fs/cgroup") {
        mounts.erase(it);
        break;
      }
    b.save();
  }
  ProcessResult run(const std::vector<std::string>& args) {
    b.set_args(args);
    b.save();
    return shim.run(b, unique_id("it-userns"));
  }
  std::string sh(const std::string& script) {
    auto r = run({"/bin/sh", "-c", script});
    INFO(r.out << r.err << Shim::log(b));
    REQUIRE(r.exit_code == 0);
    return r.out;
  }
  Json spec() const { return Json::parse(read_file(b.dir() / "config.json")); }
  struct stat stat_of(const char* name) const {
    struct stat st {};
    REQUIRE(::stat((b.dir() / name).c_str(), &st) == 0);
    return st;
  }

  TempDir tmp;
  BusyboxBundle b{tmp / "bundle"};
  Shim shim;
};

constexpr const char* kPasswdOnly = "[chain]\norder = [\"passwd\"]\n";

// kWho prints the names of the process's ids, who owns /etc/passwd and
// /etc/group inside, and whether the process can append to /etc/passwd.
constexpr const char* kWho =
    "id -un; id -gn; stat -c '%u:%g %a' /etc/passwd /etc/group; "
    "(echo x >> /etc/passwd) 2>/dev/null && echo writable || echo read-only";

// cdi_accel_config writes a CDI spec of example.com/accel=0, /dev/accel0 from
// dev's node, and returns a config whose chain injects it (passwd, cdi,
// devices-cgroup).
std::string cdi_accel_config(const HostDevice& dev) {
  write_file(dev.tmp / "cdi/accel.yaml",
             "cdiVersion: 0.5.0\nkind: example.com/accel\ndevices:\n- name: \"0\"\n  containerEdits:\n"
             "    deviceNodes:\n    - path: /dev/accel0\n      hostPath: " +
                 dev.node.string() + "\n");
  return "[chain]\norder = [\"passwd\", \"cdi\", \"devices-cgroup\"]\n\n[cdi]\nspec-dirs = [\"" +
         (dev.tmp / "cdi").string() + "\"]\n";
}

}  // namespace

TEST_CASE("userns: a rootfs chowned to the mapped ids, uid 10001 gets user10001, in a copy container root owns") {
  Pod pod(kPasswdOnly);
  chown_tree(pod.b.rootfs(), kHostBase, kHostBase);
  REQUIRE(pod.sh(kWho) == "user10001\ngroup10001\n0:0 644\n0:0 644\nread-only\n");
  CHECK(pod.stat_of("specshim-passwd").st_uid == kHostBase);
  CHECK(pod.stat_of("specshim-passwd").st_gid == kHostBase);
  CHECK(pod.stat_of("specshim-group").st_uid == kHostBase);
  CHECK(read_file(pod.b.dir() / "specshim-passwd") == "root:x:0:0:root:/root:/bin/sh\n" + std::string(kUserLine));
  CHECK(read_file(pod.b.rootfs() / "etc/passwd") == "root:x:0:0:root:/root:/bin/sh\n");  // the image is untouched
}

TEST_CASE("userns: an idmapped rootfs is judged as the container sees it") {
  Pod pod(kPasswdOnly);
  fs::path lower = pod.tmp / "lower";
  fs::rename(pod.b.rootfs(), lower);  // root-owned on disk, like an image layer
  fs::create_directory(pod.b.rootfs());

  SECTION("root's files: the process cannot write them, so it gets its entry") {
    IdmappedMount idmapped(lower, pod.b.rootfs());
    REQUIRE(pod.sh(kWho) == "user10001\ngroup10001\n0:0 644\n0:0 644\nread-only\n");
  }
  SECTION("a file the mapped uid owns and may write (host 10001 on disk): the image manages it") {
    // Through the idmapped mount this file is host 110001's: uid 10001's inside.
    REQUIRE(::chown((lower / "etc/passwd").c_str(), 10001, 0) == 0);
    IdmappedMount idmapped(lower, pod.b.rootfs());
    REQUIRE(pod.sh("grep -q :10001: /etc/passwd || echo self:x:10001:10001::/tmp:/bin/sh >> /etc/passwd; id -un") ==
            "self\n");
    CHECK_FALSE(fs::exists(pod.b.dir() / "specshim-passwd"));
    CHECK(fs::exists(pod.b.dir() / "specshim-group"));
  }
}

TEST_CASE("userns: a file host uid 10001 owns is nobody's inside, so it does not count as the image managing it") {
  Pod pod(kPasswdOnly);
  chown_tree(pod.b.rootfs(), kHostBase, kHostBase);
  REQUIRE(::chown((pod.b.rootfs() / "etc/passwd").c_str(), 10001, 10001) == 0);  // writable by host 10001 only
  REQUIRE(pod.sh("id -un") == "user10001\n");
}

TEST_CASE("userns: a uid outside the mappings fails the create, naming the mapping, and runc does not run") {
  Pod pod(kPasswdOnly);
  pod.b.set_user(70000, 70000);
  pod.b.set_args({"id", "-un"});
  pod.b.save();
  std::string before = read_file(pod.b.dir() / "config.json");
  auto r = pod.shim.run(pod.b, unique_id("it-userns"));
  std::string log = Shim::log(pod.b);
  INFO(r.err << log);
  REQUIRE(r.exit_code == 1);
  CHECK_THAT(log, Catch::Contains("specshim: passwd: process.user.uid 70000 is outside linux.uidMappings "
                                  "(0-65535 → 100000-165535)"));
  CHECK(read_file(pod.b.dir() / "config.json") == before);
  CHECK_FALSE(fs::exists(pod.b.dir() / "specshim-passwd"));
}

TEST_CASE("userns: a CDI device node whose host file is elsewhere is a bind mount of it, and opens") {
  HostDevice dev;
  // A bound node keeps its host mode and owner (host root, nobody inside):
  // uid 10001 opens it through the others' bits, as GPU nodes (0666) allow.
  REQUIRE(::chmod(dev.node.c_str(), 0666) == 0);
  Pod pod(cdi_accel_config(dev));
  IdmappedMount idmapped = [&]() -> IdmappedMount {
    fs::path lower = pod.tmp / "lower";
    fs::rename(pod.b.rootfs(), lower);
    fs::create_directory(pod.b.rootfs());
    return IdmappedMount(lower, pod.b.rootfs());
  }();
  pod.b.spec()["annotations"]["cdi.k8s.io/test"] = "example.com/accel=0";
  REQUIRE(pod.sh("id -un; stat -c '%F %t:%T' /dev/accel0; (exec 3>/dev/accel0) 2>&1 && echo open-ok; true") ==
          "user10001\n" + std::string(kAccelVisible) + kAccelOpened);
  Json spec = pod.spec();
  CHECK_FALSE(spec["linux"].contains("devices"));
  Json bind = {{"destination", "/dev/accel0"}, {"type", "bind"}, {"source", dev.node.string()}, {"options", {"bind"}}};
  CHECK(std::count(spec["mounts"].begin(), spec["mounts"].end(), bind) == 1);
  Json rule = {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rwm"}};
  CHECK(std::count(spec["linux"]["resources"]["devices"].begin(), spec["linux"]["resources"]["devices"].end(), rule) ==
        1);
}

TEST_CASE("userns: a linux.devices entry whose host file at its path is another node fails the create") {
  Pod pod("[chain]\norder = [\"devices-cgroup\"]\n");
  // runc would bind-mount the host's /dev/null here, not a node 1:11.
  pod.b.spec()["linux"]["devices"] = Json::array({{{"path", "/dev/null"}, {"type", "c"}, {"major", 1}, {"minor", 11}}});
  auto r = pod.run({"true"});
  std::string log = Shim::log(pod.b);
  INFO(r.err << log);
  REQUIRE(r.exit_code == 1);
  CHECK_THAT(log, Catch::Contains("devices-cgroup: `linux.devices[0]` (c 1:11 at `/dev/null`): the container has a "
                                  "user namespace"));
  CHECK_THAT(log, Catch::Contains("the host's `/dev/null` is c 1:3"));
}

TEST_CASE("userns: diagnose judges a bound node by its host owner and mode, shown as the container sees them") {
  HostDevice dev;
  REQUIRE(::chmod(dev.node.c_str(), 0666) == 0);
  Pod pod(cdi_accel_config(dev));
  chown_tree(pod.b.rootfs(), kHostBase, kHostBase);
  pod.b.spec()["annotations"]["cdi.k8s.io/test"] = "example.com/accel=0";
  pod.b.set_args({"/bin/sleep", "600"});
  pod.b.save();
  std::string id = unique_id("it-userns-diag");
  REQUIRE(pod.shim.call(pod.b, {"create", "--bundle", pod.b.dir().string(), id}, false).exit_code == 0);
  struct Cleanup {
    const Pod& pod;
    std::string id;
    ~Cleanup() { pod.shim.call(pod.b, {"delete", "--force", id}); }
  } cleanup{pod, id};
  REQUIRE(pod.shim.call(pod.b, {"start", id}).exit_code == 0);
  auto diagnose = [&](int expect_exit) {
    auto r = run_process({SPECSHIM_BINARY, "diagnose", "--root", (pod.tmp / "runc-root").string(), "--config",
                          pod.shim.config_path().string(), "--format", "json", id});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == expect_exit);
    return Json::parse(r.out);
  };
  auto finding = [](const Json& report, const std::string& layer, const std::string& subject) {
    for (const auto& c : report["checks"])
      if (c["layer"] == layer && c["subject"] == subject) return c;
    return Json();
  };
  Json report = diagnose(0);
  // Host root owns the bound node: nobody (65534) inside, so only its others' bits let uid 10001 open it.
  Json node = finding(report, "node", "/dev/accel0");
  CHECK(node["status"] == "ok");
  CHECK_THAT(node["message"].get<std::string>(), Catch::Contains("crw-rw-rw- 65534:65534 (host 0:0)"));
  CHECK(finding(report, "identity", "uid 10001")["status"] == "ok");
  CHECK(finding(report, "spec", "/dev/accel0")["status"] == "ok");

  // 0660 on the host: the group's bits are host root's group, which the container does not have.
  REQUIRE(::chmod(dev.node.c_str(), 0660) == 0);
  node = finding(diagnose(1), "node", "/dev/accel0");
  CHECK(node["status"] == "fail");
  CHECK_THAT(node["message"].get<std::string>(), Catch::Contains("not mapped into the container's user namespace"));
}
