// SPDX-License-Identifier: Apache-2.0
// specshim attach/detach/attached on running runc containers (busybox, as
// root): the node appears and opens only after attach, detach takes node and
// rule back, CDI devices and mounts, a user-namespaced container gets a bind
// mount, concurrent attaches are all recorded, and every bad input fails
// with one line and changes nothing. The device is a c 1:11 node in a temp
// dir on the host (test/support/host_device.h): runc's default rules do not
// cover it. The probes open it for writing and write nothing.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>

#include "bpf_object.h"
#include "container.h"
#include "host_device.h"
#include "running.h"
#include "specshim/base/spec.h"
#include "specshim/live/cgroup_devices.h"
#include "tempdir.h"
#include "verb_error.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;

namespace {

// Host is the host side: the 1:11 node, a CDI spec dir and specshim's config.
struct Host : HostDevice {
  fs::path cdi = tmp / "cdi";
  fs::path config = tmp / "specshim.toml";
  Host() {
    fs::permissions(node, fs::perms(0666));  // writable by the user-namespaced container's root too
    fs::create_directories(cdi);
    write_file(config, "[runtime]\npath = \"/usr/sbin/runc\"\n\n[cdi]\nspec-dirs = [\"" + cdi.string() + "\"]\n");
  }
};

}  // namespace

TEST_CASE("attach: a running container gains a node that opens, detach takes node and rule back") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  REQUIRE(c.exec(opens("/dev/kmsg-test")).out == "open-failed\n");
  REQUIRE_FALSE(c.rule_allows());

  auto r = specshim.attach({"--device", host.node.string() + ":/dev/kmsg-test:rw"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "attached /dev/kmsg-test (c 1:11 rw, mknod)\n");
  CHECK(c.sh("stat -c '%F %t:%T %a' /dev/kmsg-test") == "character special file 1:b 666\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  CHECK(c.exec(opens("/dev/null")).out == "open-ok\n");
  CHECK(c.rule_allows());

  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-test");
  CHECK(rec["devices"][0]["hostPath"] == fs::canonical(host.node).string());
  CHECK(rec["devices"][0]["major"] == 1);
  CHECK(rec["devices"][0]["minor"] == 11);
  CHECK(rec["devices"][0]["permissions"] == "rw");
  CHECK(rec["devices"][0]["node"] == "mknod");
  CHECK(rec["devices"][0]["direct"] == true);
  auto text = specshim("attached", {c.id()});
  CHECK_THAT(text.out, Contains("/dev/kmsg-test  c 1:11"));

  auto d = specshim.detach({"--device", "/dev/kmsg-test"});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(c.sh("test -e /dev/kmsg-test && echo present || echo gone") == "gone\n");
  CHECK_FALSE(c.rule_allows());
  CHECK(c.exec(opens("/dev/null")).out == "open-ok\n");
  CHECK(specshim.attached()["devices"].empty());
}

TEST_CASE("attach: an identical second attach changes nothing, another device at a taken path is refused") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  std::string arg = host.node.string() + ":/dev/accel0";
  REQUIRE(specshim.attach({"--device", arg}).exit_code == 0);
  std::string before = read_file(c.record());
  auto again = specshim.attach({"--device", arg});
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.err, Contains("already attached"));
  CHECK(read_file(c.record()) == before);

  fs::path zero = host.tmp / "zero";
  REQUIRE(::mknod(zero.c_str(), S_IFCHR | 0666, makedev(1, 5)) == 0);
  one_line_error(specshim.attach({"--device", zero.string() + ":/dev/accel0"}),
                 "container path `/dev/accel0` is taken by c 1:11 rwm");
  one_line_error(specshim.attach({"--device", arg + ":r"}), "is taken by c 1:11 rwm");
  CHECK(read_file(c.record()) == before);
  CHECK(c.sh("stat -c '%t:%T' /dev/accel0") == "1:b\n");
}

TEST_CASE(
    "attach --cdi: nodes with the spec's mode, a read-only bind mount, and env and hooks reported, never silent") {
  Host host;
  write_file(host.tmp / "libaccel.so", "accel library\n");
  write_file(
      host.cdi / "accel.yaml",
      "cdiVersion: 0.5.0\nkind: example.com/accel\n"
      "containerEdits:\n  env: [ACCEL_COMMON=1]\n"
      "devices:\n- name: \"0\"\n  containerEdits:\n    env: [ACCEL_VISIBLE=0]\n"
      "    deviceNodes:\n    - path: /dev/accel/0\n      hostPath: " +
          host.node.string() +
          "\n      permissions: rw\n      fileMode: 0640\n      gid: 5\n"
          "    mounts:\n    - hostPath: " +
          (host.tmp / "libaccel.so").string() +
          "\n      containerPath: /usr/lib/libaccel.so\n      options: [ro, nosuid, nodev, bind]\n"
          "    hooks:\n    - hookName: createContainer\n      path: /usr/bin/accel-hook\n      args: [accel-hook, "
          "ldcache]\n");
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  REQUIRE(c.exec(opens("/dev/accel/0")).out == "open-failed\n");

  auto r = specshim.attach({"--cdi", "example.com/accel=0"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("CDI device `example.com/accel=0`: env `ACCEL_COMMON=1` not applied"));
  CHECK_THAT(r.err, Contains("env `ACCEL_VISIBLE=0` not applied (a running process's environment cannot change)"));
  CHECK_THAT(r.err, Contains("hook `createContainer /usr/bin/accel-hook ldcache` not applied"));
  CHECK(c.sh("stat -c '%t:%T %a %g' /dev/accel/0") == "1:b 640 5\n");
  CHECK(c.exec(opens("/dev/accel/0")).out == "open-ok\n");
  CHECK(c.sh("cat /usr/lib/libaccel.so") == "accel library\n");
  CHECK(c.sh("echo x >> /usr/lib/libaccel.so 2>/dev/null && echo wrote || echo read-only") == "read-only\n");

  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["cdi"] == Json::array({"example.com/accel=0"}));
  CHECK(rec["devices"][0]["direct"] == false);
  CHECK(rec["devices"][0]["fileMode"] == 0640);
  REQUIRE(rec["mounts"].size() == 1);
  CHECK(rec["mounts"][0]["path"] == "/usr/lib/libaccel.so");
  CHECK(rec["notApplied"].size() == 3);

  auto again = specshim.attach({"--cdi", "example.com/accel=0"});
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.err, Contains("already attached"));

  one_line_error(specshim.detach({"--device", "/dev/accel/0"}), "was attached by --cdi example.com/accel=0");
  auto d = specshim.detach({"--cdi", "example.com/accel=0"});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(c.sh("test -e /dev/accel/0 || test -e /usr/lib/libaccel.so || echo gone") == "gone\n");
  CHECK_FALSE(c.rule_allows());
  Json empty = specshim.attached();
  CHECK(empty["devices"].empty());
  CHECK(empty["mounts"].empty());
  CHECK(empty["notApplied"].empty());
}

TEST_CASE("attach --cdi: an unknown name fails naming the spec files that did not load") {
  Host host;
  write_file(host.cdi / "broken.yaml", "cdiVersion: 0.5.0\nkind: example.com/accel\nbogus: 1\n");
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  auto r = specshim.attach({"--cdi", "example.com/accel=9"});
  one_line_error(r, "unresolvable CDI devices example.com/accel=9; spec files not loaded: " +
                        (host.cdi / "broken.yaml").string() + ": ");
  CHECK_THAT(r.err, Contains("container `" + c.id() + "`"));
  CHECK_FALSE(fs::exists(c.record()));
}

TEST_CASE("attach: a user-namespaced container gets the host node bind-mounted") {
  Host host;
  // The container's root (host uid 200000) must reach its rootfs through the temp dir.
  fs::permissions(host.tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                       fs::perms::others_read | fs::perms::others_exec);
  Running c(host.tmp / "c", [](BusyboxBundle& b) {
    auto& linux = b.spec()["linux"];
    linux["namespaces"].push_back({{"type", "user"}});
    linux["uidMappings"] = Json::array({{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}});
    linux["gidMappings"] = Json::array({{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}});
    auto& mounts = b.spec()["mounts"];  // cgroupfs cannot be mounted from a user namespace on cgroup v1
    for (auto it = mounts.begin(); it != mounts.end(); ++it)
      if ((*it)["destination"] == "/sys/fs/cgroup") {
        mounts.erase(it);
        break;
      }
  });
  Specshim specshim{c, host.config};
  auto r = specshim.attach({"--device", host.node.string() + ":/dev/kmsg-test"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "attached /dev/kmsg-test (c 1:11 rwm, bind)\n");
  CHECK(specshim.attached()["devices"][0]["node"] == "bind");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  REQUIRE(specshim.detach({"--device", "/dev/kmsg-test"}).exit_code == 0);
  CHECK(c.sh("test -e /dev/kmsg-test && echo present || echo gone") == "gone\n");
  CHECK(c.sh("grep -c kmsg-test /proc/self/mountinfo") == "0\n");
}

TEST_CASE("attach: concurrent attaches to one container are all recorded") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  constexpr int kN = 6;
  std::vector<std::future<ProcessResult>> runs;
  for (int i = 0; i < kN; ++i)
    runs.push_back(std::async(std::launch::async, [&, i] {
      return specshim.attach({"--device", host.node.string() + ":/dev/accel" + std::to_string(i)});
    }));
  for (auto& f : runs) {
    auto r = f.get();
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == kN);
  for (int i = 0; i < kN; ++i) CHECK(c.exec(opens("/dev/accel" + std::to_string(i))).out == "open-ok\n");
}

TEST_CASE("attach: a failure after the rule and a first node undoes both") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  auto r = specshim.attach(
      {"--device", host.node.string() + ":/dev/accel0", "--device", host.node.string() + ":/etc/passwd"});
  one_line_error(r, "device `" + fs::canonical(host.node).string() +
                        "`: make c 1:11 at `/etc/passwd` in the container: exists in the container and is a regular "
                        "file, not c 1:11");
  CHECK_THAT(r.err, Contains("nothing was changed"));
  CHECK(c.sh("test -e /dev/accel0 && echo present || echo gone") == "gone\n");
  CHECK_FALSE(c.rule_allows());
  CHECK_FALSE(fs::exists(c.record()));
}

TEST_CASE("attach: bad input fails with one line naming container, device and cause, and changes nothing") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  std::string id = "container `" + c.id() + "`";
  write_file(host.tmp / "regular", "x");
  fs::create_symlink("/proc/self/fd/0", host.tmp / "link-out");

  SECTION("no device") {
    one_line_error(specshim.attach({}), "give at least one --device, --cdi or --gpu");
  }
  SECTION("bad --device syntax") {
    one_line_error(specshim.attach({"--device", host.node.string() + ":/dev/x:rwx"}),
                   "must be a non-empty subset of rwm");
  }
  SECTION("missing container") {
    one_line_error(specshim("attach", {"no-such-container", "--device", host.node.string()}),
                   "container `no-such-container`: runc state: container does not exist");
  }
  SECTION("HOST not a device node") {
    one_line_error(
        specshim.attach({"--device", (host.tmp / "regular").string() + ":/dev/x"}),
        id + ": host device node `" + (host.tmp / "regular").string() + "` is not a device node (a regular file)");
  }
  SECTION("HOST missing") {
    one_line_error(specshim.attach({"--device", (host.tmp / "nope").string() + ":/dev/x"}),
                   "No such file or directory");
  }
  SECTION("HOST through a symlink out of /dev") {
    one_line_error(specshim.attach({"--device", (host.tmp / "link-out").string() + ":/dev/x"}), "outside /dev");
  }
  SECTION("CONTAINER escaping the root") {
    one_line_error(
        specshim.attach({"--device", host.node.string() + ":/dev/../../x"}),
        id + ": device `" + host.node.string() + "`: container path `/dev/../../x` must not contain . or ..");
  }
  SECTION("not root") {
    auto r = run_process({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SPECSHIM_BINARY,
                          "attach", "--root", c.root().string(), "--config", host.config.string(), c.id(), "--device",
                          host.node.string()});
    one_line_error(r, id + ": must run as root on the host");
  }
  CHECK_FALSE(fs::exists(c.record()));
  CHECK(c.sh("ls /dev | grep -c '^x$'") == "0\n");
  CHECK_FALSE(c.rule_allows());
}

TEST_CASE("attach: a symlink in the container resolves inside its root, never to the host") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  fs::path outside = host.tmp / "host-side";
  fs::create_directories(outside);
  // The same path exists inside the container: the symlink's target, resolved in its root.
  c.sh("mkdir -p " + outside.string() + " && ln -s /../../../.." + outside.string() + " /dev/esc");
  auto r = specshim.attach({"--device", host.node.string() + ":/dev/esc/kmsg"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_empty(outside));
  CHECK(c.sh("stat -c '%t:%T' " + outside.string() + "/kmsg") == "1:b\n");  // inside the container's root
}

TEST_CASE("attach: a stopped container is refused") {
  Host host;
  TempDir tmp;
  BusyboxBundle b(tmp / "bundle");
  b.set_args({"/bin/true"});
  b.save();
  fs::create_directories(tmp / "root");
  std::string id = unique_id("it-stopped");
  REQUIRE(run_process({kRunc, "--root", (tmp / "root").string(), "run", "--keep", "--bundle", b.dir().string(), id})
              .exit_code == 0);
  auto r = run_process({SPECSHIM_BINARY, "attach", "--root", (tmp / "root").string(), "--config", host.config.string(),
                        id, "--device", host.node.string()});
  run_process({kRunc, "--root", (tmp / "root").string(), "delete", "--force", id});
  one_line_error(r, "container `" + id + "` is stopped, not created or running");
  CHECK_FALSE(fs::exists(b.dir() / "specshim-attached.json"));
}

TEST_CASE("detach: what is not attached is refused, naming it") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  one_line_error(specshim.detach({"--device", "/dev/accel0"}), "nothing is attached");
  REQUIRE(specshim.attach({"--device", host.node.string() + ":/dev/accel0"}).exit_code == 0);
  std::string before = read_file(c.record());
  one_line_error(specshim.detach({"--device", "/dev/accel1"}), "device `/dev/accel1` is not attached");
  one_line_error(specshim.detach({"--cdi", "example.com/accel=0"}), "CDI device `example.com/accel=0` is not attached");
  CHECK(read_file(c.record()) == before);
}

TEST_CASE("attach: the device program on the container's cgroup2 directory is replaced, exactly one afterwards") {
  namespace live = specshim::live;
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  live::CgroupPlaces places = live::cgroup_places(c.pid());
  REQUIRE(places.unified);
  REQUIRE(places.v1_devices);
  REQUIRE(live::attached_device_programs(*places.unified).empty());  // runc attaches none on a hybrid host
  // Another manager's program there, clang-built and attached by bpftool: everything but 1:11. With v1
  // allowing 1:11, the program alone denies it.
  ensure_bpffs();
  AttachedBpfObject other(*places.unified, deny_1_11_object());
  REQUIRE(live::attached_device_programs(*places.unified) == std::vector<std::uint32_t>{other.id()});
  live::DeviceRule rule{true, 'c', 1, 11, "rwm"};
  live::v1_write(*places.v1_devices, rule);
  CHECK_FALSE(c.rule_allows());
  rule.allow = false;
  live::v1_write(*places.v1_devices, rule);

  auto r = specshim.attach({"--device", host.node.string() + ":/dev/kmsg-test"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  CHECK(c.exec(opens("/dev/null")).out == "open-ok\n");
  auto after = live::attached_device_programs(*places.unified);
  REQUIRE(after.size() == 1);
  CHECK(after[0] != other.id());
  CHECK_FALSE(other.attached());

  REQUIRE(specshim.detach({"--device", "/dev/kmsg-test"}).exit_code == 0);
  CHECK_FALSE(c.rule_allows());
  CHECK(c.exec(opens("/dev/null")).out == "open-ok\n");
  CHECK(live::attached_device_programs(*places.unified).size() == 1);
  // With v1 allowing 1:11 again, the rebuilt program (the spec's rules and runc's defaults) still denies it.
  rule.allow = true;
  live::v1_write(*places.v1_devices, rule);
  CHECK_FALSE(c.rule_allows());
}

TEST_CASE("detach: what the container's own spec allows stays allowed") {
  Host host;
  Running c(host.tmp / "c", [](BusyboxBundle& b) {
    b.spec()["linux"]["resources"]["devices"].push_back(
        {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rw"}});
  });
  Specshim specshim{c, host.config};
  REQUIRE(c.rule_allows());
  REQUIRE(specshim.attach({"--device", host.node.string() + ":/dev/kmsg-test"}).exit_code == 0);
  REQUIRE(specshim.detach({"--device", "/dev/kmsg-test"}).exit_code == 0);
  CHECK(c.sh("test -e /dev/kmsg-test && echo present || echo gone") == "gone\n");
  CHECK(c.rule_allows());
}

TEST_CASE("detach: the directories attach made go when their last node does, others' directories stay") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  std::string node = host.node.string();
  REQUIRE(specshim.attach({"--device", node + ":/dev/accel/by-id/a"}).exit_code == 0);
  REQUIRE(specshim.attach({"--device", node + ":/dev/accel/by-id/b"}).exit_code == 0);
  CHECK(specshim.attached()["dirs"] == Json::array({"/dev/accel", "/dev/accel/by-id"}));
  c.sh("mkdir /dev/mine && true");

  auto first = specshim.detach({"--device", "/dev/accel/by-id/a"});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(c.sh("ls /dev/accel/by-id") == "b\n");  // b still needs them
  CHECK(specshim.attached()["dirs"] == Json::array({"/dev/accel", "/dev/accel/by-id"}));

  REQUIRE(specshim.detach({"--device", "/dev/accel/by-id/b"}).exit_code == 0);
  CHECK(c.sh("test -e /dev/accel || echo gone") == "gone\n");
  CHECK(c.sh("test -d /dev/mine && echo kept") == "kept\n");
  CHECK(specshim.attached()["dirs"].empty());

  // A file someone put in a directory attach made keeps that directory.
  REQUIRE(specshim.attach({"--device", node + ":/dev/accel/0"}).exit_code == 0);
  c.sh("touch /dev/accel/notes");
  REQUIRE(specshim.detach({"--device", "/dev/accel/0"}).exit_code == 0);
  CHECK(c.sh("ls /dev/accel") == "notes\n");
  CHECK(specshim.attached()["dirs"] == Json::array({"/dev/accel"}));
}

TEST_CASE(
    "attach --gpu: a GPU named by its UUID is /dev/nvidia<minor> from the driver's list, detach --gpu takes it back") {
  // A stand-in /dev/nvidia250 and a driver list under a fake --proc.
  Host host;
  fs::path proc = host.tmp / "proc";
  StandInGpu gpu(proc, "0000:3b:00.0", "GPU-0a1b2c3d-0000-1111-2222-333344445555", 250);
  list_gpu(proc, "0000:af:00.0", "GPU-ffff0000-0000-1111-2222-333344445555", 251);
  const std::string node = gpu.node();
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  REQUIRE(c.exec(opens(node)).out == "open-failed\n");

  auto r = specshim.attach({"--gpu", "gpu-0A1B2C3D-0000-1111-2222-333344445555", "--proc", proc.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(c.exec(opens(node)).out == "open-ok\n");
  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == node);
  CHECK(rec["devices"][0]["direct"] == true);

  one_line_error(specshim.attach({"--gpu", "GPU-99", "--proc", proc.string()}),
                 "GPU `GPU-99`: no such GPU in " + (proc / "driver/nvidia/gpus").string() +
                     "; it has GPU-0a1b2c3d-0000-1111-2222-333344445555 (/dev/nvidia250), "
                     "GPU-ffff0000-0000-1111-2222-333344445555 (/dev/nvidia251)");

  auto d = specshim.detach({"--gpu", "GPU-0a1b2c3d-0000-1111-2222-333344445555", "--proc", proc.string()});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(c.exec(opens(node)).out == "open-failed\n");
  CHECK(specshim.attached()["devices"].empty());
}
