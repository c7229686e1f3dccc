// SPDX-License-Identifier: Apache-2.0
// specshim reconcile on running runc containers (busybox, as root): the
// desired-state file's wants are attached, dropped ones detached, hand-made
// attaches survive, --watch follows the file and new containers, and a bad
// file changes nothing. The hotplug modifier gives a container created
// through specshim its devices at create. The device is a c 1:11 node in a
// temp dir on the host (test/support/host_device.h): runc's default rules do
// not cover it.
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <sstream>

#include "background.h"
#include "container.h"
#include "host_device.h"
#include "running.h"
#include "specshim/spec.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using Catch::EndsWith;
using Catch::StartsWith;
using specshim::Json;

namespace {

// Host is the host side: two c 1:11 nodes at different host paths (one
// device to the kernel: two entries that each want one must say `shared:
// true`), specshim's config, the desired-state file and one runc --root for
// every container of a test.
struct Host : HostDevice {
  fs::path config = tmp / "specshim.toml";
  fs::path desired = tmp / "etc" / "hotplug.yaml";
  fs::path other = tmp / "host-dev" / "accel1";
  fs::path root = tmp / "runc-root";
  Host() {
    fs::create_directories(desired.parent_path());
    fs::create_directories(root);
    REQUIRE(::mknod(other.c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
    fs::permissions(node, fs::perms(0666));
    fs::permissions(other, fs::perms(0666));
    write_file(config, config_text(false));
  }
  std::string config_text(bool enabled) const {
    return "[runtime]\npath = \"/usr/sbin/runc\"\n\n[hotplug]\n" + std::string(enabled ? "enabled = true\n" : "") +
           "desired = \"" + desired.string() + "\"\n";
  }
  // want writes the desired-state file.
  void want(const std::string& yaml) const { write_file(desired, yaml); }
  // reconcile runs `specshim reconcile --root ROOT --config CONFIG ARGS...`.
  ProcessResult reconcile(const std::vector<std::string>& args = {}) const {
    std::vector<std::string> argv = {SPECSHIM_BINARY, "reconcile", "--root",
                                     root.string(),   "--config",  config.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
  }
  std::vector<std::string> watch_argv(const std::string& interval) const {
    return {SPECSHIM_BINARY, "reconcile", "--root",     root.string(), "--config",
            config.string(), "--watch",   "--interval", interval};
  }
};

// in_pod gives a container CRI's annotations of a container (type
// "container", name) or the sandbox (type "sandbox", no container name) of
// pod dev/box-7, as containerd writes them.
std::function<void(BusyboxBundle&)> in_pod(const std::string& type, const std::string& name = "main") {
  return [type, name](BusyboxBundle& b) {
    b.spec()["annotations"] = {{"io.kubernetes.cri.container-type", type},
                               {"io.kubernetes.cri.sandbox-namespace", "dev"},
                               {"io.kubernetes.cri.sandbox-name", "box-7"},
                               {"io.kubernetes.cri.sandbox-id", "sandbox-0123"}};
    if (type == "container") b.spec()["annotations"]["io.kubernetes.cri.container-name"] = name;
  };
}

const char* const kPod = "{namespace: dev, name: box-7, container: main}";

// Reconcile's stdout lines. who is "container `ID`", plus " (pod ...)" for a pod entry.
std::string by_id(const std::string& id) {
  return "container `" + id + "`";
}
std::string by_pod(const std::string& id) {
  return by_id(id) + " (pod `dev/box-7` container `main`)";
}
std::string attached(const std::string& who, const std::string& path, const std::string& perms,
                     const std::string& key) {
  return who + ": attached " + path + " (c 1:11 " + perms + ", mknod) for " + key + "\n";
}
std::string detached(const std::string& who, const std::string& path) {
  return who + ": detached " + path + " (c 1:11)\n";
}

// lines are text's lines, sorted: the containers of a pass come in runc's order.
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l + "\n");
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

bool gone(const Running& c, const std::string& path) {
  return c.sh("test -e " + path + " && echo present || echo gone") == "gone\n";
}

// one_line_error: a refused reconcile says why in exactly one stderr line.
void one_line_error(const ProcessResult& r, const std::string& want) {
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains(want));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

// eventually polls until done() or the deadline; true when done.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    timespec pause{0, 50'000'000};
    ::nanosleep(&pause, nullptr);
  }
  return done();
}

// replace_atomically writes text under a temp name next to file and renames it over file.
void replace_atomically(const fs::path& file, const std::string& text) {
  fs::path tmp = file.parent_path() / ("." + file.filename().string() + ".new");
  write_file(tmp, text);
  fs::rename(tmp, file);
}

// FileOpens counts the opens of a file (inotify IN_OPEN), read as they come:
// a reconcile pass reads the desired-state file once.
class FileOpens {
 public:
  explicit FileOpens(const fs::path& file) : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::inotify_add_watch(fd_, file.c_str(), IN_OPEN) >= 0);
  }
  ~FileOpens() { ::close(fd_); }
  FileOpens(const FileOpens&) = delete;
  FileOpens& operator=(const FileOpens&) = delete;
  int count() {
    alignas(inotify_event) char buf[64 * sizeof(inotify_event)];
    for (ssize_t len; (len = ::read(fd_, buf, sizeof buf)) > 0;)
      for (char* p = buf; p < buf + len; p += sizeof(inotify_event) + reinterpret_cast<inotify_event*>(p)->len)
        if (reinterpret_cast<inotify_event*>(p)->mask & IN_OPEN) ++count_;
    return count_;
  }

 private:
  int fd_;
  int count_ = 0;
};

// Created is a container created and started THROUGH specshim (the create
// path: the modifier chain, then runc), running `sleep`, killed and deleted
// at the end. Its bundle is dir/bundle, edit applied.
class Created {
 public:
  Created(const Shim& shim, const fs::path& root, const fs::path& dir, const std::function<void(BusyboxBundle&)>& edit,
          const std::string& id = unique_id("it-rec-create"))
      : shim_(shim), root_(root), bundle_(dir / "bundle"), id_(id) {
    bundle_.set_args({"/bin/sleep", "600"});
    for (const char* set : {"bounding", "effective", "permitted"})
      bundle_.spec()["process"]["capabilities"][set].push_back("CAP_MKNOD");
    if (edit) edit(bundle_);
    bundle_.save();
    auto create = shim_.call(bundle_, {"create", "--bundle", bundle_.dir().string(), id_}, false);
    INFO(Shim::log(bundle_));
    REQUIRE(create.exit_code == 0);
    auto start = shim_.call(bundle_, {"start", id_});
    INFO(start.err << Shim::log(bundle_));
    REQUIRE(start.exit_code == 0);
  }
  ~Created() {
    run_process({kRunc, "--root", root_.string(), "kill", id_, "KILL"});
    run_process({kRunc, "--root", root_.string(), "delete", "--force", id_});
  }
  Created(const Created&) = delete;
  Created& operator=(const Created&) = delete;

  const std::string& id() const { return id_; }
  const BusyboxBundle& bundle() const { return bundle_; }
  Json spec() const { return Json::parse(read_file(bundle_.dir() / "config.json")); }
  std::string sh(const std::string& script) const {
    return run_process({kRunc, "--root", root_.string(), "exec", id_, "/bin/sh", "-c", script}).out;
  }
  std::string open(const std::string& path) const { return sh(opens(path)[2]); }

 private:
  const Shim& shim_;
  fs::path root_;
  BusyboxBundle bundle_;
  std::string id_;
};

// rules_for_1_11 are the spec's linux.resources.devices entries for c 1:11.
Json rules_for_1_11(const Json& spec) {
  Json out = Json::array();
  for (const auto& r : spec["linux"]["resources"]["devices"])
    if (r.value("major", Json()) == 1 && r.value("minor", Json()) == 11) out.push_back(r);
  return out;
}

}  // namespace

TEST_CASE("reconcile: a container the file selects by id gets the device, and loses it once the file drops it") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  write_file(host.desired,
             "containers:\n  - id: " + c.id() + "\n    devices: [\"" + host.node.string() + ":/dev/kmsg-test:rw\"]\n");
  auto r = specshim("reconcile", {});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "container `" + c.id() + "`: attached /dev/kmsg-test (c 1:11 rw, mknod) for device " +
                     host.node.string() + ":/dev/kmsg-test:rw\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  Json rec = specshim.attached();
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"device " + host.node.string() + ":/dev/kmsg-test:rw"}));

  r = specshim("reconcile", {});
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());

  write_file(host.desired, "containers: []\n");
  r = specshim("reconcile", {});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "container `" + c.id() + "`: detached /dev/kmsg-test (c 1:11)\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-failed\n");
  CHECK_FALSE(c.rule_allows());
}

TEST_CASE("reconcile: one pass attaches to a pod's container selected by CRI annotations and to one selected by id") {
  Host host;
  Running a(host.tmp / "a", in_pod("container", "main"), "it-rec", host.root);
  Running side(host.tmp / "side", in_pod("container", "side"), "it-rec", host.root);
  Running b(host.tmp / "b", {}, "it-rec", host.root);
  std::string key_a = "device " + host.node.string() + ":/dev/kmsg-test:rw";
  std::string key_b = "device " + host.other.string() + ":/dev/kmsg-test:rwm";
  host.want(std::string("containers:\n") + "  - pod: " + kPod + "\n    shared: true\n    devices: [\"" +
            host.node.string() + ":/dev/kmsg-test:rw\"]\n" + "  - id: " + b.id() +
            "\n    shared: true\n    devices: [\"" + host.other.string() + ":/dev/kmsg-test\"]\n");
  REQUIRE(a.exec(opens("/dev/kmsg-test")).out == "open-failed\n");

  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(lines(r.out) == sorted({attached(by_pod(a.id()), "/dev/kmsg-test", "rw", key_a),
                                attached(by_id(b.id()), "/dev/kmsg-test", "rwm", key_b)}));
  CHECK(a.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  CHECK(b.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  CHECK(b.rule_allows());
  // The pod's other container (container-name `side`) is not the entry's.
  CHECK(side.exec(opens("/dev/kmsg-test")).out == "open-failed\n");
  CHECK_FALSE(fs::exists(side.record()));

  Json rec_a = Specshim{a, host.config}.attached();
  REQUIRE(rec_a["devices"].size() == 1);
  CHECK(rec_a["devices"][0]["reconcile"] == Json::array({key_a}));
  CHECK(rec_a["devices"][0]["direct"] == false);
  CHECK(rec_a["devices"][0]["permissions"] == "rw");
  CHECK(rec_a["devices"][0]["hostPath"] == fs::canonical(host.node).string());
  Json rec_b = Specshim{b, host.config}.attached();
  REQUIRE(rec_b["devices"].size() == 1);
  CHECK(rec_b["devices"][0]["reconcile"] == Json::array({key_b}));
  CHECK(rec_b["devices"][0]["hostPath"] == fs::canonical(host.other).string());

  auto again = host.reconcile();
  CHECK(again.exit_code == 0);
  CHECK(again.out.empty());
  CHECK(again.err.empty());
}

TEST_CASE("reconcile: the file losing one of two devices detaches only that one, the rule stays while one holds it") {
  // Both are c 1:11 at two container paths, /dev/kmsg-a rwm and /dev/kmsg-b
  // rw: one cgroup rule's numbers. Dropping a takes its node only; rw stays
  // b's, so a node the container makes itself still opens. Dropping b then
  // revokes it.
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Specshim specshim{c, host.config};
  std::string a = host.node.string() + ":/dev/kmsg-a", b = host.node.string() + ":/dev/kmsg-b:rw";
  auto want = [&](const std::vector<std::string>& devices) {
    std::string list;
    for (const auto& d : devices) list += (list.empty() ? "\"" : ", \"") + d + "\"";
    host.want("containers:\n  - id: " + c.id() + "\n    devices: [" + list + "]\n");
  };
  want({a, b});
  REQUIRE_FALSE(c.rule_allows());
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == attached(by_id(c.id()), "/dev/kmsg-a", "rwm", "device " + a + ":rwm") +
                     attached(by_id(c.id()), "/dev/kmsg-b", "rw", "device " + b));
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
  CHECK(c.exec(opens("/dev/kmsg-b")).out == "open-ok\n");
  CHECK(c.rule_allows());

  want({b});
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(c.id()), "/dev/kmsg-a"));
  CHECK(gone(c, "/dev/kmsg-a"));
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-failed\n");
  CHECK(c.exec(opens("/dev/kmsg-b")).out == "open-ok\n");
  CHECK(c.rule_allows());  // b still holds c 1:11 rw
  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-b");
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"device " + b}));

  want({});
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(c.id()), "/dev/kmsg-b"));
  CHECK(gone(c, "/dev/kmsg-b"));
  CHECK_FALSE(c.rule_allows());
  CHECK(specshim.attached()["devices"].empty());
}

TEST_CASE("reconcile: a hand-made attach survives, a device also attached by hand is released and stays until detach") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Specshim specshim{c, host.config};
  std::string node = host.node.string();
  std::string both_key = "device " + node + ":/dev/kmsg-both:rwm", rec_key = "device " + node + ":/dev/kmsg-rec:rwm";
  REQUIRE(specshim.attach({"--device", node + ":/dev/kmsg-hand"}).exit_code == 0);
  REQUIRE(specshim.attach({"--device", node + ":/dev/kmsg-both"}).exit_code == 0);

  host.want("containers:\n  - id: " + c.id() + "\n    devices: [\"" + node + ":/dev/kmsg-both\", \"" + node +
            ":/dev/kmsg-rec\"]\n");
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == attached(by_id(c.id()), "/dev/kmsg-rec", "rwm", rec_key) + by_id(c.id()) + ": " + both_key +
                     ": already there; recorded as reconcile's\n");
  for (const char* p : {"/dev/kmsg-hand", "/dev/kmsg-both", "/dev/kmsg-rec"})
    CHECK(c.exec(opens(p)).out == "open-ok\n");
  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 3);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-hand");
  CHECK(rec["devices"][0]["direct"] == true);
  CHECK_FALSE(rec["devices"][0].contains("reconcile"));
  CHECK(rec["devices"][1]["path"] == "/dev/kmsg-both");
  CHECK(rec["devices"][1]["direct"] == true);
  CHECK(rec["devices"][1]["reconcile"] == Json::array({both_key}));
  CHECK(rec["devices"][2]["path"] == "/dev/kmsg-rec");
  CHECK(rec["devices"][2]["direct"] == false);
  CHECK(rec["devices"][2]["reconcile"] == Json::array({rec_key}));

  // What only reconcile holds is not detached by hand.
  auto d = specshim.detach({"--device", "/dev/kmsg-rec"});
  INFO(d.err);
  CHECK(d.exit_code == 1);
  CHECK_THAT(d.err, Contains("device `/dev/kmsg-rec` was attached by reconcile (" + rec_key +
                             "); remove it from the desired-state file"));
  CHECK(c.exec(opens("/dev/kmsg-rec")).out == "open-ok\n");

  host.want("containers: []\n");
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(c.id()), "/dev/kmsg-rec") + by_id(c.id()) + ": " + both_key +
                     ": released; /dev/kmsg-both stays, held by --device " + fs::canonical(host.node).string() + "\n");
  CHECK(gone(c, "/dev/kmsg-rec"));
  CHECK(c.exec(opens("/dev/kmsg-hand")).out == "open-ok\n");
  CHECK(c.exec(opens("/dev/kmsg-both")).out == "open-ok\n");
  rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 2);
  CHECK(rec["devices"][1]["path"] == "/dev/kmsg-both");
  CHECK(rec["devices"][1]["direct"] == true);
  CHECK_FALSE(rec["devices"][1].contains("reconcile"));
  auto again = host.reconcile();
  CHECK(again.exit_code == 0);
  CHECK(again.out.empty());

  d = specshim.detach({"--device", "/dev/kmsg-both"});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(d.out == "detached /dev/kmsg-both (c 1:11)\n");
  CHECK(gone(c, "/dev/kmsg-both"));
  CHECK(c.exec(opens("/dev/kmsg-hand")).out == "open-ok\n");
  REQUIRE(specshim.detach({"--device", "/dev/kmsg-hand"}).exit_code == 0);
  CHECK_FALSE(c.rule_allows());
}

TEST_CASE("reconcile: a container whose entry is removed loses only what reconcile gave it") {
  Host host;
  Running a(host.tmp / "a", in_pod("container", "main"), "it-rec", host.root);
  Running b(host.tmp / "b", {}, "it-rec", host.root);
  Specshim on_a{a, host.config};
  REQUIRE(on_a.attach({"--device", host.node.string() + ":/dev/kmsg-hand"}).exit_code == 0);
  std::string entry_b =
      "  - id: " + b.id() + "\n    shared: true\n    devices: [\"" + host.other.string() + ":/dev/kmsg-r\"]\n";
  host.want(std::string("containers:\n  - pod: ") + kPod + "\n    shared: true\n    devices: [\"" + host.node.string() +
            ":/dev/kmsg-r\"]\n" + entry_b);
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(lines(r.out).size() == 2);
  REQUIRE(a.exec(opens("/dev/kmsg-r")).out == "open-ok\n");
  std::string b_before = read_file(b.record());

  host.want("containers:\n" + entry_b);
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(a.id()), "/dev/kmsg-r"));
  CHECK(r.err.empty());
  CHECK(gone(a, "/dev/kmsg-r"));
  CHECK(a.exec(opens("/dev/kmsg-hand")).out == "open-ok\n");
  CHECK(a.rule_allows());  // the hand-made attach's rule
  Json rec = on_a.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-hand");
  CHECK(rec["devices"][0]["direct"] == true);
  CHECK(b.exec(opens("/dev/kmsg-r")).out == "open-ok\n");
  CHECK(read_file(b.record()) == b_before);
}

TEST_CASE("reconcile --watch: an atomic rename of the file is acted on well within the interval") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  std::string a = host.node.string() + ":/dev/kmsg-a", b = host.node.string() + ":/dev/kmsg-b";
  host.want("containers:\n  - id: " + c.id() + "\n    devices: [\"" + a + "\"]\n");
  std::string line_a = attached(by_id(c.id()), "/dev/kmsg-a", "rwm", "device " + a + ":rwm");
  std::string line_b = attached(by_id(c.id()), "/dev/kmsg-b", "rwm", "device " + b + ":rwm");

  Background watch(host.watch_argv("60"));
  // The first pass's line: the file's directory is watched from before it.
  REQUIRE(eventually([&] { return watch.out() == line_a; }, std::chrono::seconds(15)));
  REQUIRE(c.exec(opens("/dev/kmsg-b")).out == "open-failed\n");

  auto renamed = std::chrono::steady_clock::now();
  replace_atomically(host.desired,
                     "containers:\n  - id: " + c.id() + "\n    devices: [\"" + a + "\", \"" + b + "\"]\n");
  CHECK(eventually([&] { return c.exec(opens("/dev/kmsg-b")).out == "open-ok\n"; }, std::chrono::seconds(15)));
  INFO("acted on after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - renamed).count()
       << " ms");
  CHECK(watch.running());
  auto r = watch.stop(SIGTERM);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.signaled);
  CHECK(r.out == line_a + line_b);
  CHECK(r.err.empty());
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
}

TEST_CASE("reconcile --watch: a container started after it began is picked up by the interval's pass") {
  Host host;
  std::string key = "device " + host.node.string() + ":/dev/kmsg-test:rwm";
  host.want(std::string("containers:\n  - pod: ") + kPod + "\n    devices: [\"" + host.node.string() +
            ":/dev/kmsg-test\"]\n");
  std::string missing =
      "specshim reconcile: " + host.desired.string() +
      ":2: pod `dev/box-7` container `main`: no such container (created or running, not a pod sandbox)\n";
  FileOpens passes(host.desired);  // each pass reads the file once
  Background watch(host.watch_argv("1"));
  REQUIRE(eventually([&] { return watch.err() == missing; }, std::chrono::seconds(15)));
  // A third pass has begun, so the second one, with the container still missing, is over.
  REQUIRE(eventually([&] { return passes.count() >= 3; }, std::chrono::seconds(15)));
  CHECK(watch.err() == missing);

  Running c(host.tmp / "c", in_pod("container", "main"), "it-rec", host.root);
  CHECK(eventually([&] { return c.exec(opens("/dev/kmsg-test")).out == "open-ok\n"; }, std::chrono::seconds(15)));
  auto r = watch.stop(SIGTERM);
  CHECK(r.exit_code == 0);
  CHECK(r.out == attached(by_pod(c.id()), "/dev/kmsg-test", "rwm", key));
  CHECK(r.err == missing);  // once, not on every pass while it stayed missing
  CHECK(Specshim{c, host.config}.attached()["devices"][0]["reconcile"] == Json::array({key}));
}

TEST_CASE(
    "reconcile after create: the hotplug modifier gives a created container its device, reconcile takes it back") {
  Host host;
  Shim shim(host.tmp.path(), host.config_text(true));  // the same --root and config file reconcile uses
  REQUIRE(shim.config_path() == host.config);
  std::string key = "device " + host.node.string() + ":/dev/kmsg-test:rwm";
  host.want(std::string("containers:\n  - pod: ") + kPod + "\n    devices: [\"" + host.node.string() +
            ":/dev/kmsg-test\"]\n");
  Created c(shim, host.root, host.tmp / "c", in_pod("container", "main"));
  Created sandbox(shim, host.root, host.tmp / "sandbox", in_pod("sandbox"));

  Json spec = c.spec();
  Json node = {{"path", "/dev/kmsg-test"}, {"type", "c"}, {"major", 1}, {"minor", 11},
               {"fileMode", 0666},         {"uid", 0},    {"gid", 0}};
  auto& devs = spec["linux"]["devices"];
  CHECK(std::count(devs.begin(), devs.end(), node) == 1);
  Json rule = {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rwm"}};
  CHECK(rules_for_1_11(spec) == Json::array({rule}));
  REQUIRE(fs::exists(c.bundle().dir() / "specshim-hotplug.json"));
  Json grant = Json::parse(read_file(c.bundle().dir() / "specshim-hotplug.json"));
  CHECK(grant["container"] == c.id());
  CHECK(grant["desired"] == host.desired.string() + ":2");
  REQUIRE(grant["devices"].size() == 1);
  CHECK(grant["devices"][0]["key"] == key);
  CHECK(grant["devices"][0]["path"] == "/dev/kmsg-test");
  CHECK(grant["rules"] == Json::array({rule}));
  CHECK(c.open("/dev/kmsg-test") == "open-ok\n");

  // The pod's sandbox gets nothing.
  Json sandbox_spec = sandbox.spec();
  CHECK(rules_for_1_11(sandbox_spec).empty());
  for (const auto& d : sandbox_spec["linux"].value("devices", Json::array())) CHECK(d["path"] != "/dev/kmsg-test");
  CHECK_FALSE(fs::exists(sandbox.bundle().dir() / "specshim-hotplug.json"));
  CHECK(sandbox.open("/dev/kmsg-test") == "open-failed\n");

  auto r = host.reconcile();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK(r.err.empty());

  auto attached_json = run_process({SPECSHIM_BINARY, "attached", "--root", host.root.string(), "--config",
                                    host.config.string(), "--format", "json", c.id()});
  REQUIRE(attached_json.exit_code == 0);
  Json rec = Json::parse(attached_json.out);
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["node"] == "create");
  CHECK(rec["devices"][0]["reconcile"] == Json::array({key}));
  CHECK(rec["createRules"] == Json::array({rule}));

  // The file keeps the entry, without the device.
  host.want(std::string("containers:\n  - pod: ") + kPod + "\n    devices: []\n");
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_pod(c.id()), "/dev/kmsg-test"));
  CHECK(c.sh("test -e /dev/kmsg-test && echo present || echo gone") == "gone\n");
  CHECK(c.open("/dev/kmsg-test") == "open-failed\n");
  // The rule the modifier appended is revoked: a node the container makes itself is denied.
  CHECK(c.sh("rm -f /tmp/probe; mknod /tmp/probe c 1 11 && (: > /tmp/probe) 2>/dev/null && echo yes") != "yes\n");
  r = host.reconcile();
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());

  // Listed again, the device comes back as reconcile's own.
  host.want(std::string("containers:\n  - pod: ") + kPod + "\n    devices: [\"" + host.node.string() +
            ":/dev/kmsg-test\"]\n");
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == attached(by_pod(c.id()), "/dev/kmsg-test", "rwm", key));
  CHECK(c.open("/dev/kmsg-test") == "open-ok\n");
}

TEST_CASE("reconcile after create: a pod sandbox the file names by id gets nothing at create, nor from reconcile") {
  // The pause container runs no workload: the modifier skips it even when an
  // entry selects it, and reconcile must agree with create, else the first
  // pass after every sandbox create gives it what create withheld.
  Host host;
  Shim shim(host.tmp.path(), host.config_text(true));
  std::string id = unique_id("it-rec-sandbox");
  host.want("containers:\n  - id: " + id + "\n    devices: [\"" + host.node.string() + ":/dev/kmsg-test\"]\n");
  Created sandbox(shim, host.root, host.tmp / "sandbox", in_pod("sandbox"), id);
  Json spec = sandbox.spec();
  CHECK(rules_for_1_11(spec).empty());
  for (const auto& d : spec["linux"].value("devices", Json::array())) CHECK(d["path"] != "/dev/kmsg-test");
  CHECK_FALSE(fs::exists(sandbox.bundle().dir() / "specshim-hotplug.json"));
  CHECK(sandbox.open("/dev/kmsg-test") == "open-failed\n");

  auto r = host.reconcile();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "");
  CHECK(sandbox.open("/dev/kmsg-test") == "open-failed\n");
  CHECK_FALSE(fs::exists(sandbox.bundle().dir() / "specshim-attached.json"));
}

TEST_CASE("reconcile: a GPU named by UUID is attached, an unknown UUID fails its container only") {
  // A stand-in /dev/nvidia248 (not attach_test's /dev/nvidia250, which may
  // exist at the same time), and a driver list under a fake --proc.
  Host host;
  fs::path proc = host.tmp / "proc";
  const std::string known = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
  StandInGpu gpu(proc, "0000:3b:00.0", known, 248);
  list_gpu(proc, "0000:af:00.0", "GPU-ffff0000-0000-1111-2222-333344445555", 251);
  const std::string node = gpu.node();
  Running good(host.tmp / "good", {}, "it-rec", host.root);
  Running bad(host.tmp / "bad", {}, "it-rec", host.root);
  host.want("containers:\n  - id: " + good.id() + "\n    gpus: [\"" + known + "\"]\n  - id: " + bad.id() +
            "\n    gpus: [\"GPU-99\"]\n");
  REQUIRE(good.exec(opens(node)).out == "open-failed\n");

  auto r = host.reconcile({"--proc", proc.string()});
  one_line_error(r, "specshim reconcile: container `" + bad.id() + "`: GPU `GPU-99`: no such GPU in " +
                        (proc / "driver/nvidia/gpus").string() + "; it has " + known +
                        " (/dev/nvidia248), GPU-ffff0000-0000-1111-2222-333344445555 (/dev/nvidia251)");
  CHECK_THAT(r.err, StartsWith("specshim reconcile: container `" + bad.id() + "`"));
  CHECK(r.out == attached(by_id(good.id()), node, "rwm", "gpu " + known));
  CHECK(good.exec(opens(node)).out == "open-ok\n");
  Json rec = Specshim{good, host.config}.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == node);
  CHECK(rec["devices"][0]["hostPath"] == node);
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"gpu " + known}));
  CHECK(bad.exec(opens(node)).out == "open-failed\n");
  CHECK_FALSE(fs::exists(bad.record()));

  // The GPU dropped: its node goes.
  host.want("containers:\n  - id: " + bad.id() + "\n    gpus: [\"GPU-99\"]\n");
  r = host.reconcile({"--proc", proc.string()});
  CHECK(r.exit_code == 1);
  CHECK(r.out == detached(by_id(good.id()), node));
  CHECK(good.exec(opens(node)).out == "open-failed\n");
}

TEST_CASE("reconcile: a malformed or conflicting file is refused with one line and changes nothing") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Running d(host.tmp / "d", {}, "it-rec", host.root);
  std::string node = host.node.string(), file = host.desired.string();
  host.want("containers:\n  - id: " + c.id() + "\n    devices: [\"" + node + ":/dev/kmsg-a\"]\n");
  REQUIRE(host.reconcile().exit_code == 0);
  REQUIRE(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
  std::string before = read_file(c.record());
  // Each file, were it taken, would drop /dev/kmsg-a and attach /dev/kmsg-b.
  std::string head = "containers:\n  - id: " + c.id() + "\n";
  std::string b = "    devices: [\"" + node + ":/dev/kmsg-b\"]\n";
  struct Bad {
    const char* what;
    std::string text;
    int line;           // the line the message names
    std::string names;  // and what else it says
  };
  const std::vector<Bad> bad = {
      {"YAML syntax error", head + "    devices: [\"" + node + ":/dev/kmsg-b\"\n", 4, "did not find expected"},
      {"unknown field", head + b + "    shard: true\n", 4, "shard"},
      {"bad device", head + "    devices: [\"" + node + ":/dev/kmsg-b:rwx\"]\n", 3, "rwx"},
      {"the same container twice", head + b + "  - id: " + c.id() + "\n" + b, 4, "already listed at line 2"},
      {"same host device in two entries, not shared", head + b + "  - id: " + d.id() + "\n" + b, 4, "shared: true"},
      {"same host device in two entries, only one shared", head + b + "    shared: true\n  - id: " + d.id() + "\n" + b,
       5, "shared: true"},
  };
  for (const auto& x : bad) {
    INFO(x.what);
    host.want(x.text);
    auto r = host.reconcile();
    one_line_error(r, file + ": line " + std::to_string(x.line) + ": ");
    CHECK_THAT(r.err, Contains(x.names));
    CHECK_THAT(r.err, StartsWith("specshim reconcile: "));
    CHECK_THAT(r.err, EndsWith("; nothing was changed\n"));
    CHECK(r.out.empty());
    CHECK(read_file(c.record()) == before);
    CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
    CHECK(gone(c, "/dev/kmsg-b"));
    CHECK(gone(d, "/dev/kmsg-b"));
    CHECK_FALSE(fs::exists(d.record()));
  }
}

TEST_CASE("reconcile: entries that both say shared: true get the same host device") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Running d(host.tmp / "d", in_pod("container", "main"), "it-rec", host.root);
  std::string dev = "    devices: [\"" + host.node.string() + ":/dev/kmsg-s\"]\n    shared: true\n";
  host.want("containers:\n  - id: " + c.id() + "\n" + dev + "  - pod: " + kPod + "\n" + dev);
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  std::string key = "device " + host.node.string() + ":/dev/kmsg-s:rwm";
  CHECK(lines(r.out) == sorted({attached(by_id(c.id()), "/dev/kmsg-s", "rwm", key),
                                attached(by_pod(d.id()), "/dev/kmsg-s", "rwm", key)}));
  CHECK(c.exec(opens("/dev/kmsg-s")).out == "open-ok\n");
  CHECK(d.exec(opens("/dev/kmsg-s")).out == "open-ok\n");
}

TEST_CASE("reconcile: an entry naming no live container is reported and exit is 0, a missing file is exit 1") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  std::string file = host.desired.string();
  host.want(
      "containers:\n  - id: " + c.id() + "\n    shared: true\n    devices: [\"" + host.node.string() +
      ":/dev/kmsg-a\"]\n  - pod: {namespace: dev, name: gone-1, container: main}\n    shared: true\n    devices: [\"" +
      host.other.string() + ":/dev/kmsg-a\"]\n  - id: no-such-container\n    gpus: [GPU-1]\n");
  auto r = host.reconcile();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == attached(by_id(c.id()), "/dev/kmsg-a", "rwm", "device " + host.node.string() + ":/dev/kmsg-a:rwm"));
  CHECK(
      lines(r.err) ==
      sorted({"specshim reconcile: " + file +
                  ":5: pod `dev/gone-1` container `main`: no such container (created or running, not a pod sandbox)\n",
              "specshim reconcile: " + file +
                  ":8: container `no-such-container`: no such container (created or "
                  "running, not a pod sandbox)\n"}));
  REQUIRE(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
  std::string before = read_file(c.record());

  fs::remove(host.desired);
  r = host.reconcile();
  one_line_error(r, "`" + file + "`: no such file");
  CHECK_THAT(r.err, StartsWith("specshim reconcile: "));
  CHECK_THAT(r.err, EndsWith("; nothing was changed\n"));
  CHECK(r.out.empty());
  CHECK(read_file(c.record()) == before);
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
}
