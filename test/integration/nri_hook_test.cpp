// SPDX-License-Identifier: Apache-2.0
// `specshim nri-hook` (shim/src/nri_hook.cpp) as the OCI createRuntime hook
// specshim-nri adds, run by the runtime itself: no containerd and no specshim
// in front of it. This file plays the plugin's part (nri/src/passwd_hook.cpp):
// empty copies STATE/<id>/specshim-passwd and specshim-group, their read-only
// bind mounts over /etc/passwd and /etc/group, the hook. What the plugin relies
// on, shown on Debian 12's runc 1.1.5 and on runc 1.3 and crun 1.28 from
// Debian sid (scripts/fetch-runtimes.sh): the runtime runs createRuntime hooks
// during create, in its own namespaces, with the state on stdin, after it has
// made the container's bind mounts and before the process execs; the mount
// holds the copy's inode, so what the hook writes in place is what the
// container reads; a failing hook fails the create.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "container.h"
#include "runtimes.h"
#include "specshim/modifiers/passwd_copies.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;

namespace {

constexpr unsigned kHostBase = 100000;  // container id 0 on the host, in the user-namespaced case
constexpr const char* kImagePasswd = "root:x:0:0:root:/root:/bin/sh\n";  // what BusyboxBundle writes
constexpr const char* kImageGroup = "root:x:0:\n";
constexpr const char* kUserLine = "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin\n";
constexpr const char* kGroupLine = "group10001:x:10001:\n";

// kObserver is a createRuntime hook put before specshim's: it keeps what the
// runtime shows a hook (the state on stdin, its own and the container
// process's mount namespace, that process's name and mounts) and the size of
// the passwd copy ($1) at that moment, in the directory $2.
constexpr const char* kObserver = R"(#!/bin/sh
cat > "$2/state.json"
pid=$(tr -d ' \n' < "$2/state.json" | sed 's/.*"pid":\([0-9]*\).*/\1/')
readlink /proc/self/ns/mnt > "$2/hook-mntns"
readlink "/proc/$pid/ns/mnt" > "$2/container-mntns"
cat "/proc/$pid/comm" > "$2/container-comm"
cat "/proc/$pid/mountinfo" > "$2/container-mountinfo"
wc -c < "$1" | tr -d ' ' > "$2/copy-size"
)";

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// mounted_at reports whether a mountinfo text lists a mount at target.
bool mounted_at(const std::string& mountinfo, const fs::path& target) {
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    if (fields >> id >> parent >> devno >> root >> point && point == target.string()) return true;
  }
  return false;
}

// HookPod is a busybox bundle as specshim-nri has the runtime create it,
// run by the runtime `runtime` (runtimes.h: "runc-1.1", "runc-1.3", "crun").
struct HookPod {
  explicit HookPod(const std::string& runtime_name)
      : name(runtime_name), runtime(runtime_binary(name, "integration_nri_hook (" + name + ")")) {
    if (name == "crun") free_cgroup2_controllers("crun (integration_nri_hook)", "integration_nri_hook");
    // What the plugin makes at CreateContainer: a directory per container,
    // root's and 0700 (create::make_files_dir), with the two copies, empty.
    fs::create_directories(copies());
    fs::permissions(copies(), fs::perms(0700));
    for (const auto& c : specshim::passwd::kCopies) write_file(copies() / c.bundle_name, "", 0644);
    write_file(config, "");
    b.set_user(10001, 10001);
    b.spec()["process"]["env"] = Json::array({"PATH=/bin"});  // HOME from the passwd entry
    for (const auto& c : specshim::passwd::kCopies) {
      Json options = Json::array();
      for (const char* o : specshim::passwd::kCopyMountOptions) options.push_back(o);
      b.spec()["mounts"].push_back({{"destination", std::string(c.path)},
                                    {"type", "bind"},
                                    {"source", (copies() / c.bundle_name).string()},
                                    {"options", options}});
    }
    b.spec()["hooks"]["createRuntime"] = Json::array({hook(state)});
    b.save();
  }
  ~HookPod() { run_process({runtime.string(), "--root", root.string(), "delete", "--force", id}); }
  HookPod(const HookPod&) = delete;
  HookPod& operator=(const HookPod&) = delete;

  fs::path copies() const { return state / id; }
  // hook is the plugin's hook, with state_dir as its --state-dir.
  Json hook(const fs::path& state_dir) const {
    return {{"path", SPECSHIM_BINARY},
            {"args", {"specshim", "nri-hook", "--state-dir", state_dir.string(), "--config", config.string()}}};
  }
  // observe puts kObserver before specshim's hook; it writes to observed.
  void observe() {
    write_file(tmp / "observe.sh", kObserver, 0755);
    fs::create_directories(observed);
    Json first = {{"path", (tmp / "observe.sh").string()},
                  {"args", {"observe.sh", (copies() / "specshim-passwd").string(), observed.string()}},
                  {"env", Json::array({"PATH=/usr/sbin:/usr/bin:/sbin:/bin"})}};
    auto& hooks = b.spec()["hooks"]["createRuntime"];
    hooks.insert(hooks.begin(), first);
    b.save();
  }
  // run: `RUNTIME --root R run --bundle B ID`, the process `sh -c script`.
  ProcessResult run(const std::string& script) {
    b.set_args({"/bin/sh", "-c", script});
    b.save();
    return run_process({runtime.string(), "--root", root.string(), "run", "--bundle", b.dir().string(), id});
  }
  std::string copy(const char* name) const { return read_file(copies() / name); }

  std::string name;
  fs::path runtime;
  TempDir tmp;
  BusyboxBundle b{tmp / "bundle"};
  fs::path state = tmp / "nri-state";  // the plugin's [nri] state-dir
  fs::path config = tmp / "specshim.toml";
  fs::path root = tmp / "runtime-root";
  fs::path observed = tmp / "observed";
  std::string id = unique_id("it-nri-hook");
};

}  // namespace

TEST_CASE("nri-hook: a uid the image lacks gets its entry in the copies the runtime mounted") {
  HookPod pod(GENERATE(as<std::string>{}, "runc-1.1", "runc-1.3", "crun"));
  pod.observe();
  auto r = pod.run(
      "id -un; id -gn; echo $HOME; grep 10001 /etc/passwd; "
      "(echo x >> /etc/passwd) 2>/dev/null && echo writable || echo read-only");
  INFO(pod.name << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  // $HOME: the runtime itself looked the uid up in the filled copy before the exec.
  CHECK(r.out == "user10001\ngroup10001\n/tmp\n" + std::string(kUserLine) + "read-only\n");
  CHECK(pod.copy("specshim-passwd") == std::string(kImagePasswd) + kUserLine);
  CHECK(pod.copy("specshim-group") == std::string(kImageGroup) + kGroupLine);
  CHECK(read_file(pod.b.rootfs() / "etc/passwd") == kImagePasswd);  // the image is untouched

  // What the hook before specshim's saw: the state on stdin, the host's mount
  // namespace (the runtime's), the container's process not yet exec'd, the
  // copies already bind-mounted in the container's namespace and still empty.
  // So specshim's hook wrote in place behind the mount, and the container
  // read that.
  Json state = Json::parse(read_file(pod.observed / "state.json"));
  CAPTURE(state.dump());
  CHECK(state["id"] == pod.id);
  CHECK(fs::equivalent(state["bundle"].get<std::string>(), pod.b.dir()));
  CHECK(state["pid"].get<int>() > 0);
  CHECK(trimmed(read_file(pod.observed / "hook-mntns")) == fs::read_symlink("/proc/self/ns/mnt").string());
  CHECK(read_file(pod.observed / "container-mntns") != read_file(pod.observed / "hook-mntns"));
  CHECK(trimmed(read_file(pod.observed / "container-comm")) != "sh");
  const std::string mountinfo = read_file(pod.observed / "container-mountinfo");
  CAPTURE(mountinfo);
  CHECK(mounted_at(mountinfo, fs::canonical(pod.b.rootfs()) / "etc/passwd"));
  CHECK(mounted_at(mountinfo, fs::canonical(pod.b.rootfs()) / "etc/group"));
  CHECK(trimmed(read_file(pod.observed / "copy-size")) == "0");
}

TEST_CASE("nri-hook: uid 0, left alone by the modifier, gets the image's own files byte for byte in root's copies") {
  HookPod pod(GENERATE(as<std::string>{}, "runc-1.1", "runc-1.3", "crun"));
  // No newline at the end: copied as it is. A setuid, world-writable file
  // of uid 4242: its content is copied, its mode and owner are not.
  const std::string passwd = std::string(kImagePasswd) + "daemon:x:1:1:daemon:/usr/sbin:/bin/false";
  const std::string group = std::string(kImageGroup) + "daemon:x:1:\n";
  write_file(pod.b.rootfs() / "etc/passwd", passwd);
  write_file(pod.b.rootfs() / "etc/group", group);
  REQUIRE(::chown((pod.b.rootfs() / "etc/passwd").c_str(), 4242, 4242) == 0);
  REQUIRE(::chmod((pod.b.rootfs() / "etc/passwd").c_str(), 06777) == 0);
  pod.b.set_user(0, 0);
  auto r = pod.run("id -un; cat /etc/passwd; echo ---; cat /etc/group; stat -c '%u:%g %a' /etc/passwd");
  INFO(pod.name << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "root\n" + passwd + "---\n" + group + "0:0 644\n");
  CHECK(pod.copy("specshim-passwd") == passwd);
  CHECK(pod.copy("specshim-group") == group);
  for (const char* name : {"specshim-passwd", "specshim-group"}) {
    INFO(name);
    struct stat st = stat_of(pod.copies() / name);
    CHECK((st.st_mode & 07777) == 0644);
    CHECK(st.st_uid == 0);
    CHECK(st.st_gid == 0);
  }
  CHECK((stat_of(pod.copies()).st_mode & 07777) == 0700);
}

TEST_CASE("nri-hook: in a user namespace, uid 10001 gets its entry in a copy container root owns") {
  // Each runtime runs this on the rootfs as it is (host root's, 0755 dirs
  // and 0644 files the container's ids read as others): runc 1.1.5 too, so no
  // chowned copy (userns_test.cpp's chown_tree) is needed here.
  HookPod pod(GENERATE(as<std::string>{}, "runc-1.1", "runc-1.3", "crun"));
  // The container's root (host 100000) must reach the rootfs and the copies.
  fs::permissions(pod.tmp.path(), fs::perms(0755));
  write_file(pod.config, "[passwd]\nshell = \"/bin/sh\"\n");  // the hook reads --config
  auto& linux = pod.b.spec()["linux"];
  linux["namespaces"].push_back({{"type", "user"}});
  linux["uidMappings"] = Json::array({{{"containerID", 0}, {"hostID", kHostBase}, {"size", 65536}}});
  linux["gidMappings"] = linux["uidMappings"];
  auto& mounts = pod.b.spec()["mounts"];  // cgroupfs cannot be mounted from a user namespace on cgroup v1
  for (auto it = mounts.begin(); it != mounts.end(); ++it)
    if ((*it)["destination"] == "/sys/fs/cgroup") {
      mounts.erase(it);
      break;
    }
  auto r = pod.run(
      "id -un; id -gn; grep 10001 /etc/passwd; stat -c '%u:%g %a' /etc/passwd /etc/group; "
      "(echo x >> /etc/passwd) 2>/dev/null && echo writable || echo read-only");
  INFO(pod.name << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string line = "user10001:x:10001:10001:specshim runtime user:/tmp:/bin/sh\n";
  CHECK(r.out == "user10001\ngroup10001\n" + line + "0:0 644\n0:0 644\nread-only\n");
  CHECK(pod.copy("specshim-passwd") == kImagePasswd + line);
  CHECK(stat_of(pod.copies() / "specshim-passwd").st_uid == kHostBase);
  CHECK(stat_of(pod.copies() / "specshim-group").st_gid == kHostBase);
}

TEST_CASE("nri-hook: a failing hook fails the run before the process starts") {
  HookPod pod(GENERATE(as<std::string>{}, "runc-1.1", "runc-1.3", "crun"));
  // The mounts' copies exist (else the runtime's mount would fail first);
  // the hook's --state-dir has none, so it cannot open them.
  const fs::path elsewhere = pod.tmp / "other-state";
  fs::create_directories(elsewhere);
  pod.b.spec()["hooks"]["createRuntime"] = Json::array({pod.hook(elsewhere)});
  auto r = pod.run("touch /tmp/ran");
  INFO(pod.name << ": " << r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK_FALSE(fs::exists(pod.b.rootfs() / "tmp/ran"));
  CHECK(pod.copy("specshim-passwd").empty());
  const std::string hook_error = "specshim nri-hook: container " + pod.id + ": open `" +
                                 (elsewhere / pod.id / "specshim-passwd").string() + "`: No such file or directory";
  if (pod.name != "crun") {
    // runc puts the hook's stderr in its error (containerd returns that from
    // StartContainer).
    CHECK_THAT(r.err, Catch::Contains(hook_error));
  } else {
    // crun 1.28 sends a hook's stdout and stderr to /dev/null unless the
    // annotations run.oci.hooks.stdout/stderr name files: its error names the
    // hook's path and exit code only.
    CHECK_THAT(r.err, Catch::Contains("error executing hook `" SPECSHIM_BINARY "` (exit code: 1)"));
    CHECK_THAT(r.err, !Catch::Contains("specshim nri-hook"));
  }
  auto state = run_process({pod.runtime.string(), "--root", pod.root.string(), "state", pod.id});
  CHECK(state.exit_code != 0);  // nothing left behind
}
