// SPDX-License-Identifier: Apache-2.0
// live's cgroup side on the real kernel, as root: a forked child in a fresh
// cgroup (cgroup2 at the host's unified mount, and the v1 devices
// hierarchy) opens test nodes on request over a pipe, while the test
// replaces device programs (a clang-built one first, attached by bpftool)
// and writes v1 rules.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <random>

#include "bpf_object.h"
#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/live/cgroup_devices.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim;
using namespace specshim::live;
using specshim::test::AttachedBpfObject;
using specshim::test::deny_1_11_object;
using specshim::test::error_of;
using specshim::test::TempDir;

namespace {

std::string unique_name() {
  static int n = 0;
  return "specshim-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// Cgroup is a fresh child cgroup of a hierarchy, removed (rmdir) at the end;
// its processes must be gone by then.
struct Cgroup {
  fs::path dir;
  explicit Cgroup(const fs::path& hierarchy) : dir(hierarchy / unique_name()) {
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  }
  ~Cgroup() {
    if (::rmdir(dir.c_str()) != 0) WARN("rmdir " << dir << ": " << std::strerror(errno));
  }
  void add(pid_t pid) const {
    int fd = ::open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    std::string text = std::to_string(pid);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
};

// Nodes are device nodes on a tmpfs the test mounts (without nodev):
// kmsg 1:11, null 1:3, zero 1:5.
struct Nodes {
  TempDir tmp;
  fs::path kmsg = tmp / "kmsg", null = tmp / "null", zero = tmp / "zero";
  Nodes() {
    REQUIRE(::mount("specshim-test", tmp.path().c_str(), "tmpfs", MS_NOSUID, "mode=0755,size=64k") == 0);
    REQUIRE(::mknod(kmsg.c_str(), S_IFCHR | 0600, makedev(1, 11)) == 0);
    REQUIRE(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    REQUIRE(::mknod(zero.c_str(), S_IFCHR | 0666, makedev(1, 5)) == 0);
  }
  ~Nodes() { ::umount2(tmp.path().c_str(), MNT_DETACH); }
};

// Prober is a forked child that opens a path when asked (a fixed-size
// request on one pipe) and answers 0 or the errno (on another). The child
// does nothing but read, open, close, write and _exit. It is put into the
// given cgroups before its first request.
class Prober {
 public:
  Prober() {
    int req[2], ans[2];
    REQUIRE(::pipe2(req, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(ans, O_CLOEXEC) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      // fork keeps O_CLOEXEC descriptors: without this the child would hold
      // the request pipe's write end and never see EOF.
      ::close(req[1]);
      ::close(ans[0]);
      serve(req[0], ans[1]);
    }
    ::close(req[0]);
    ::close(ans[1]);
    req_ = req[1];
    ans_ = ans[0];
  }
  ~Prober() {
    ::close(req_);  // EOF: the child exits
    ::close(ans_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }

  // open returns 0 when the child could open path with flags, else errno.
  int open(const fs::path& path, int flags) const {
    Request r{};
    std::strncpy(r.path, path.c_str(), sizeof r.path - 1);
    r.flags = flags;
    REQUIRE(::write(req_, &r, sizeof r) == static_cast<ssize_t>(sizeof r));
    int err = -1;
    REQUIRE(::read(ans_, &err, sizeof err) == static_cast<ssize_t>(sizeof err));
    return err;
  }

 private:
  struct Request {
    char path[256];
    int flags;
  };
  [[noreturn]] static void serve(int req, int ans) {
    Request r;
    while (::read(req, &r, sizeof r) == static_cast<ssize_t>(sizeof r)) {
      int fd = ::open(r.path, r.flags | O_CLOEXEC | O_NONBLOCK);
      int err = fd >= 0 ? 0 : errno;
      if (fd >= 0) ::close(fd);
      if (::write(ans, &err, sizeof err) != static_cast<ssize_t>(sizeof err)) break;
    }
    ::_exit(0);
  }
  pid_t pid_ = -1;
  int req_ = -1, ans_ = -1;
};

fs::path unified_root() {
  auto places = cgroup_places(::getpid());
  REQUIRE(places.unified);  // this host: hybrid, cgroup2 at /sys/fs/cgroup/unified
  // Fresh test cgroups go right below the hierarchy's root, wherever this
  // process is.
  fs::path root = *places.unified;
  while (fs::exists(root.parent_path() / "cgroup.controllers")) root = root.parent_path();
  return root;
}

fs::path v1_devices_root() {
  auto places = cgroup_places(::getpid());
  REQUIRE(places.v1_devices);
  fs::path root = *places.v1_devices;
  while (fs::exists(root.parent_path() / "devices.allow")) root = root.parent_path();
  return root;
}

DeviceRule allow(std::int64_t major, std::int64_t minor, std::string access = "rwm") {
  return {true, 'c', major, minor, std::move(access)};
}

}  // namespace

TEST_CASE("live cgroup: cgroup_places of a process in fresh cgroups names them") {
  Cgroup unified(unified_root());
  Cgroup v1(v1_devices_root());
  Prober child;
  unified.add(child.pid());
  v1.add(child.pid());
  auto places = cgroup_places(child.pid());
  REQUIRE(places.unified);
  CHECK(*places.unified == unified.dir);
  REQUIRE(places.v1_devices);
  CHECK(*places.v1_devices == v1.dir);
  CHECK(places.systemd_unit.empty());
  CHECK(attached_device_programs(unified.dir).empty());
}

TEST_CASE("live cgroup: replace_device_program replaces a clang-built program, once more, and undoes both") {
  Nodes nodes;
  Cgroup cg(unified_root());
  Prober child;
  cg.add(child.pid());
  REQUIRE(child.open(nodes.kmsg, O_WRONLY) == 0);
  REQUIRE(child.open(nodes.null, O_RDWR) == 0);

  AttachedBpfObject deny(cg.dir, deny_1_11_object());
  REQUIRE(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{deny.id()});
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.null, O_RDWR) == 0);
  CHECK(child.open(nodes.zero, O_RDONLY) == 0);  // the clang program allows all but 1:11

  // What diagnose reads: the kernel's copy of the program, run on requests, decides as the kernel did.
  REQUIRE(effective_device_programs(cg.dir) == std::vector<std::uint32_t>{deny.id()});
  std::vector<bpf_insn> clang_insns = device_program_instructions(deny.id());
  CHECK(run_device_program(clang_insns, 'c', 1, 11, "w").allow == false);
  CHECK(run_device_program(clang_insns, 'c', 1, 3, "rw").allow == true);
  CHECK(run_device_program(clang_insns, 'c', 1, 5, "r").allow == true);

  Undo first = replace_device_program(cg.dir, {allow(1, 3)});
  auto ids = attached_device_programs(cg.dir);
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] != deny.id());
  CHECK_FALSE(deny.attached());
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.null, O_RDWR) == 0);
  CHECK(child.open(nodes.zero, O_RDONLY) == EPERM);  // ours allows 1:3 only

  Undo second = replace_device_program(cg.dir, {allow(1, 3), allow(1, 11, "w")});
  auto ids2 = attached_device_programs(cg.dir);
  REQUIRE(ids2.size() == 1);
  CHECK(ids2[0] != ids[0]);
  CHECK(child.open(nodes.kmsg, O_WRONLY) == 0);
  CHECK(child.open(nodes.kmsg, O_RDONLY) == EPERM);  // w only
  CHECK(child.open(nodes.null, O_RDWR) == 0);

  second();
  CHECK(attached_device_programs(cg.dir) == ids);
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.zero, O_RDONLY) == EPERM);

  first();
  CHECK(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{deny.id()});
  CHECK(deny.attached());
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.zero, O_RDONLY) == 0);
}

TEST_CASE("live cgroup: a program attached without BPF_F_ALLOW_MULTI is swapped in place and put back") {
  Nodes nodes;
  Cgroup cg(unified_root());
  Prober child;
  cg.add(child.pid());
  AttachedBpfObject deny(cg.dir, deny_1_11_object(), /*multi=*/false);
  REQUIRE(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  Undo undo = replace_device_program(cg.dir, {allow(1, 3), allow(1, 11, "w")});
  auto ids = attached_device_programs(cg.dir);
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] != deny.id());
  CHECK(child.open(nodes.kmsg, O_WRONLY) == 0);
  CHECK(child.open(nodes.zero, O_RDONLY) == EPERM);
  undo();
  CHECK(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{deny.id()});
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.zero, O_RDONLY) == 0);
}

TEST_CASE("live cgroup: with no program attached, replace attaches one and its undo detaches it") {
  Nodes nodes;
  Cgroup cg(unified_root());
  Prober child;
  cg.add(child.pid());
  Undo undo = replace_device_program(cg.dir, {allow(1, 3)});
  CHECK(attached_device_programs(cg.dir).size() == 1);
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.null, O_RDWR) == 0);
  undo();
  CHECK(attached_device_programs(cg.dir).empty());
  CHECK(child.open(nodes.kmsg, O_WRONLY) == 0);
}

TEST_CASE("live cgroup: two attached programs are not replaced, a refused list changes nothing") {
  Nodes nodes;
  Cgroup cg(unified_root());
  Prober child;
  cg.add(child.pid());
  AttachedBpfObject a(cg.dir, deny_1_11_object());
  {
    AttachedBpfObject b(cg.dir, deny_1_11_object());
    auto before = attached_device_programs(cg.dir);
    REQUIRE(before.size() == 2);
    CHECK_THAT(error_of<Error>([&] { replace_device_program(cg.dir, {allow(1, 11)}); }),
               Catch::Contains("has 2 device programs attached (ids ") && Catch::Contains("not replacing one of them"));
    CHECK(attached_device_programs(cg.dir) == before);
    CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  }
  CHECK(error_of<Error>([&] {
          replace_device_program(cg.dir, {{true, 'c', 1, std::nullopt, "rwm"}, {false, 'c', 1, 11, "w"}});
        }).starts_with("device rule `c 1:11 w` cannot take access"));
  CHECK(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{a.id()});
  CHECK_THAT(error_of<Error>([&] { replace_device_program(cg.dir / "missing", {allow(1, 3)}); }),
             Catch::Contains("open cgroup `" + (cg.dir / "missing").string() + "`: No such file or directory"));
}

TEST_CASE("live cgroup: under systemd, its sd_devices program stays and the other one is replaced") {
  Nodes nodes;
  Cgroup cg(unified_root());
  Prober child;
  cg.add(child.pid());
  // runc's program and systemd's beside it, as on a scope after a reload.
  AttachedBpfObject runc(cg.dir, deny_1_11_object());
  AttachedBpfObject systemd(cg.dir, specshim::test::sd_devices_object());
  REQUIRE(device_program_name(systemd.id()) == kSystemdDeviceProgram);
  REQUIRE(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  // Not told that systemd owns the cgroup: two programs, none replaced.
  CHECK_THAT(error_of<Error>([&] { replace_device_program(cg.dir, {allow(1, 11)}); }),
             Catch::Contains("has 2 device programs attached"));
  Undo undo = replace_device_program(cg.dir, {allow(1, 11), allow(1, 3)}, /*leave_systemd=*/true);
  auto after = attached_device_programs(cg.dir);
  CHECK(after.size() == 2);
  CHECK(std::count(after.begin(), after.end(), systemd.id()) == 1);
  CHECK(std::count(after.begin(), after.end(), runc.id()) == 0);
  CHECK(child.open(nodes.kmsg, O_WRONLY) == 0);
  undo();
  CHECK(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{runc.id(), systemd.id()});
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  // systemd's alone: it is systemd's to rebuild, nothing is attached.
  REQUIRE(runc.detach());
  Undo none = replace_device_program(cg.dir, {allow(1, 3)}, /*leave_systemd=*/true);
  CHECK(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{systemd.id()});
  CHECK(child.open(nodes.kmsg, O_WRONLY) == 0);
  none();
  CHECK(attached_device_programs(cg.dir) == std::vector<std::uint32_t>{systemd.id()});
}

TEST_CASE("live cgroup: the verifier accepts every program the compiler makes for varied lists") {
  Cgroup cg(unified_root());
  std::mt19937 rng(7);
  const std::vector<std::int64_t> numbers = {0, 1, 3, 11, 136, 4095, 0x80000000LL, 0xffffffffLL};
  const std::vector<std::string> accesses = {"r", "w", "m", "rw", "rm", "wm", "rwm"};
  int loaded = 0;
  std::vector<std::vector<DeviceRule>> lists = {{}, {{true, 'a', {}, {}, "rwm"}}, runc_default_rules()};
  for (int n = 0; n < 40; ++n) {
    std::vector<DeviceRule> rules = runc_default_rules();
    for (std::size_t i = 0, len = rng() % 12; i < len; ++i) {
      DeviceRule r{rng() % 4 != 0, rng() % 8 == 0 ? 'a' : rng() % 2 ? 'c' : 'b', {}, {}, accesses[rng() % 7]};
      if (rng() % 3) r.major = numbers[rng() % numbers.size()];
      if (rng() % 3) r.minor = numbers[rng() % numbers.size()];
      rules.push_back(r);
    }
    lists.push_back(rules);
  }
  for (const auto& rules : lists) {
    try {
      compile_program(rules);
    } catch (const Error&) {
      continue;  // refused as runc refuses it (unit-tested)
    }
    Undo undo = replace_device_program(cg.dir, rules);
    auto ids = effective_device_programs(cg.dir);
    REQUIRE(ids.size() == 1);
    // The kernel's (translated) copy runs as the reference decides, on a sample of requests.
    std::vector<bpf_insn> kernel_copy = device_program_instructions(ids[0]);
    for (char type : {'c', 'b'})
      for (auto major : {std::int64_t{1}, std::int64_t{136}, std::int64_t{0xffffffffLL}})
        for (auto minor : {std::int64_t{3}, std::int64_t{11}})
          for (const char* access : {"r", "w", "m"}) {
            ProgramRun run = run_device_program(kernel_copy, type, major, minor, access);
            INFO(type << " " << major << ":" << minor << " " << access << ": " << run.error);
            REQUIRE(run.allow);
            CHECK(*run.allow == reference_decision(rules, {type, major, minor, access[0]}));
          }
    undo();
    ++loaded;
  }
  CHECK(attached_device_programs(cg.dir).empty());
  CHECK(loaded > 20);
}

TEST_CASE("live cgroup: v1_write's allow and deny change what the child can open") {
  Nodes nodes;
  Cgroup cg(v1_devices_root());
  Prober child;
  cg.add(child.pid());
  REQUIRE(child.open(nodes.kmsg, O_WRONLY) == 0);  // a new v1 cgroup inherits the root's allow-all
  v1_write(cg.dir, {false, 'a', {}, {}, "rwm"});
  CHECK(child.open(nodes.null, O_RDWR) == EPERM);
  v1_write(cg.dir, allow(1, 3));
  CHECK(child.open(nodes.null, O_RDWR) == 0);
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  v1_write(cg.dir, allow(1, 11, "w"));
  CHECK(child.open(nodes.kmsg, O_WRONLY) == 0);
  CHECK(child.open(nodes.kmsg, O_RDONLY) == EPERM);
  CHECK(specshim::test::read_file(cg.dir / "devices.list").find("c 1:11 w") != std::string::npos);
  v1_write(cg.dir, {false, 'c', 1, 11, "w"});
  CHECK(child.open(nodes.kmsg, O_WRONLY) == EPERM);
  CHECK(child.open(nodes.null, O_RDWR) == 0);
  CHECK(error_of<Error>([&] { v1_write(cg.dir / "missing", allow(1, 3)); }) ==
        "open `" + (cg.dir / "missing/devices.allow").string() + "` to write `c 1:3 rwm`: No such file or directory");
}
