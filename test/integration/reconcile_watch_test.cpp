// SPDX-License-Identifier: Apache-2.0
// specshim reconcile --watch on running runc containers (busybox, as root):
// it follows the file and new containers; and the hotplug modifier gives a
// container created through specshim its devices at create, which reconcile
// then manages. The device is a c 1:11 node in a temp dir on the host.
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>

#include "background.h"
#include "container.h"
#include "reconcile_support.h"
#include "running.h"
#include "specshim/base/spec.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;

namespace {

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
