// SPDX-License-Identifier: Apache-2.0
// The real specshim binary against the recording fake runtime, creates through
// the modifier chain: dry-run, cdi spec dirs and the parse cache, refused
// creates' messages, temp files of dead creates, patches, and the config
// file read whole by every verb.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.h"
#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

TEST_CASE("dry-run names the owner a user-namespaced container's passwd copy would get") {
  Cli c;
  write_file(c.bundle / "rootfs/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
  write_file(c.bundle / "config.json",
             R"({"process":{"user":{"uid":10001,"gid":0},"args":["sh"]},"root":{"path":"rootfs"},
                 "linux":{"namespaces":[{"type":"user"}],"uidMappings":[{"containerID":0,"hostID":100000,"size":65536}],
                 "gidMappings":[{"containerID":0,"hostID":300000,"size":65536}]}})");
  c.write_config("[chain]\norder = [\"passwd\"]\n");
  auto r = c.shim({"dry-run", "--bundle", c.bundle.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.err, Catch::Contains("dry-run: would write " + (c.bundle / "specshim-passwd").string() +
                                      " (91 bytes, owner 100000:300000)"));
  REQUIRE_FALSE(fs::exists(c.bundle / "specshim-passwd"));
}

TEST_CASE("dry-run prints the spec and writes nothing") {
  Cli c;
  auto r = c.shim({"dry-run", "--bundle", c.bundle.string(), "--config", c.config.string()});
  REQUIRE(r.exit_code == 0);
  REQUIRE(nlohmann::ordered_json::parse(r.out) == nlohmann::ordered_json::parse(c.spec_text));
  REQUIRE_THAT(r.out, Catch::Contains("1.50"));  // number text kept
  auto d = c.shim({"dry-run", "--bundle", c.bundle.string(), "--format", "diff"});
  REQUIRE(d.exit_code == 0);
  REQUIRE(nlohmann::json::parse(d.out) == nlohmann::json::array());
  REQUIRE_FALSE(c.runtime_ran());
  write_file(c.bundle / "config.json", "{");
  auto e = c.shim({"dry-run", "--bundle", c.bundle.string()});
  REQUIRE(e.exit_code == 1);
  REQUIRE_THAT(e.err, Catch::StartsWith("specshim dry-run: parse `"));
  auto u = c.shim({"dry-run"});
  REQUIRE(u.exit_code != 0);
  REQUIRE_THAT(u.err, Catch::Contains("give --bundle DIR [--format json|diff], or --all"));
}

TEST_CASE("cdi: a spec dir of 1,000 files, some huge or not regular, costs bounded time and names the bad ones") {
  Cli c;
  fs::path dir = c.tmp / "cdi";
  fs::create_directories(dir);
  for (int i = 0; i < 996; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "v%03d.yaml", i);
    write_file(dir / name, "cdiVersion: 0.5.0\nkind: vendor" + std::to_string(i) +
                               ".com/gpu\ndevices:\n- name: \"0\"\n" + "  containerEdits:\n    env: [\"DEV" +
                               std::to_string(i) + "=1\"]\n");
  }
  // 5 MiB (over the 4 MiB cap), sparse: never read whole.
  { std::ofstream(dir / "w-huge.yaml"); }
  fs::resize_file(dir / "w-huge.yaml", 5 << 20);
  REQUIRE(::mkfifo((dir / "x-fifo.yaml").c_str(), 0644) == 0);  // would block a plain open()
  fs::create_symlink("/dev/zero", dir / "y-device.json");       // endless if read
  fs::create_symlink(dir / "missing", dir / "z-dangling.json");
  c.write_config("[chain]\norder = [\"cdi\"]\n[cdi]\nspec-dirs = [\"" + dir.string() + "\"]\n");

  auto request = [&](const std::string& devices) {
    write_file(c.bundle / "config.json",
               "{\"ociVersion\": \"1.0.2\", \"process\": {\"args\": [\"sh\"], \"env\": []},\n"
               " \"annotations\": {\"cdi.k8s.io/t\": \"" +
                   devices + "\"}}\n");
    auto start = std::chrono::steady_clock::now();
    auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "ctr"}));
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    CHECK(ms.count() < 5000);  // the whole test takes ~0.4 s here; a blocking open would hit the 10 s kill
    return r;
  };

  SECTION("devices from the first and the last good file resolve; the bad files do not get in the way") {
    auto r = request("vendor0.com/gpu=0,vendor995.com/gpu=0");
    INFO(c.last_error());
    REQUIRE(r.exit_code == 0);
    auto spec = nlohmann::json::parse(read_file(c.bundle / "config.json"));
    CHECK(spec["process"]["env"] == nlohmann::json::array({"DEV0=1", "DEV995=1"}));
  }
  SECTION("an unknown device fails naming each file that did not load, and why") {
    auto r = request("vendor.com/gpu=0");
    CHECK(r.exit_code != 0);
    CHECK_FALSE(c.runtime_ran());
    std::string msg = c.last_error();
    CHECK_THAT(msg, Catch::Contains("unresolvable CDI devices vendor.com/gpu=0"));
    for (const char* f : {"w-huge.yaml", "x-fifo.yaml", "y-device.json", "z-dangling.json"})
      CHECK_THAT(msg, Catch::Contains((dir / f).string()));
    CHECK(msg.find("v000.yaml") == std::string::npos);
  }
}

TEST_CASE("a refused create lists at most a few tenant-supplied items and caps its whole message") {
  Cli c;
  c.write_config("[chain]\norder = [\"cdi\"]\n[cdi]\nspec-dirs = [\"" + (c.tmp / "no-cdi").string() + "\"]\n");
  auto create_with = [&](const std::string& annotation) {
    write_file(c.bundle / "config.json",
               "{\"ociVersion\": \"1.0.2\", \"process\": {\"args\": [\"sh\"]},\n"
               " \"annotations\": {\"cdi.k8s.io/t\": \"" +
                   annotation + "\"}}\n");
    auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "ctr"}));
    CHECK(r.exit_code == 1);
    CHECK_FALSE(c.runtime_ran());
    CHECK(fs::file_size(c.log) < 5000);  // the one line, msg and all
    return c.last_error();
  };

  SECTION("20,000 unresolvable CDI names: ten are named, then how many more") {
    std::string names;
    for (int i = 0; i < 20000; ++i) names += (i ? "," : "") + std::string("vendor.com/gpu=") + std::to_string(i);
    REQUIRE(names.size() > 300000);
    std::string msg = create_with(names);
    CHECK_THAT(msg, Catch::StartsWith("specshim: cdi: unresolvable CDI devices vendor.com/gpu="));
    CHECK_THAT(msg, Catch::Contains(", \u2026 and 19990 more; searched " + (c.tmp / "no-cdi").string()));
    CHECK(msg.size() < 1000);
  }
  SECTION("one name of 100,000 characters: the message is cut at 4 KiB and says so") {
    std::string msg = create_with("vendor.com/gpu" + std::string(100000, 'x'));
    CHECK_THAT(msg, Catch::StartsWith("specshim: cdi: annotation \"cdi.k8s.io/t\": invalid CDI device name "));
    CHECK_THAT(msg, Catch::EndsWith(" bytes]"));
    CHECK_THAT(msg, Catch::Contains(" \u2026 [message cut: "));
    CHECK(msg.size() <= 4096);
  }
}

TEST_CASE("cdi: the second create reads the spec from the parse cache and writes the same config.json") {
  Cli c;
  write_file(c.tmp / "cdi/vendor.yaml",
             "cdiVersion: 0.5.0\nkind: vendor.com/x\ndevices:\n- name: a\n  containerEdits:\n    env: [A=1]\n"
             "    mounts: [{hostPath: /opt/x.so, containerPath: /usr/lib/x.so, options: [ro, bind]}]\n");
  std::string spec =
      R"({"ociVersion": "1.0.2", "process": {"args": ["sh"]}, "annotations": {"cdi.k8s.io/t": "vendor.com/x=a"}})";
  auto create = [&](const std::string& cache_dir) {
    c.write_config("[log]\nfile = \"" + (c.tmp / "debug.log").string() +
                   "\"\nlevel = \"debug\"\n[cdi]\ncache-dir = \"" + cache_dir + "\"\nspec-dirs = [\"" +
                   (c.tmp / "cdi").string() + "\"]\n");
    write_file(c.bundle / "config.json", spec);
    fs::remove(c.tmp / "debug.log");
    auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "ctr"}));
    INFO(c.last_error());
    REQUIRE(r.exit_code == 0);
    REQUIRE(c.runtime_ran());
    return std::pair{read_file(c.bundle / "config.json"), read_file(c.tmp / "debug.log")};
  };
  std::string cache = (c.tmp / "cache").string();
  auto [uncached, log0] = create("");
  CHECK_THAT(log0, !Catch::Contains("vendor.yaml: stored") && !Catch::Contains("vendor.yaml: hit"));
  CHECK_FALSE(fs::exists(cache));
  auto [first, log1] = create(cache);
  CHECK_THAT(log1, Catch::Contains("vendor.yaml: stored"));
  auto [second, log2] = create(cache);
  CHECK_THAT(log2, Catch::Contains("vendor.yaml: hit"));
  CHECK(first == uncached);
  CHECK(second == uncached);
  CHECK_THAT(second, Catch::Contains("/usr/lib/x.so"));
  // The spec file changes: its new bytes are parsed, whatever its timestamps say.
  write_file(c.tmp / "cdi/vendor.yaml", replace_all(read_file(c.tmp / "cdi/vendor.yaml"), "A=1", "A=2"));
  auto [changed, log3] = create(cache);
  CHECK_THAT(log3, Catch::Contains("vendor.yaml: stored"));
  CHECK_THAT(changed, Catch::Contains("A=2"));
  // dry-run writes nothing: not even the cache dir.
  std::string fresh = (c.tmp / "fresh-cache").string();
  c.write_config("[cdi]\ncache-dir = \"" + fresh + "\"\nspec-dirs = [\"" + (c.tmp / "cdi").string() + "\"]\n");
  write_file(c.bundle / "config.json", spec);
  auto d = c.shim({"dry-run", "--bundle", c.bundle.string()});
  CHECK(d.exit_code == 0);
  CHECK_THAT(d.out, Catch::Contains("A=2"));
  CHECK_FALSE(fs::exists(fresh));
}

TEST_CASE("a create that writes removes the temp files of dead creates, nothing to change and dry-run remove none") {
  Cli c;
  const std::string dead = ".config.json.specshim-99999999-1.tmp";  // above any pid_max: no such process
  const std::string live = ".config.json.specshim-" + std::to_string(::getpid()) + "-2.tmp";
  const std::string other = ".config.json.specshim-99999999-1.tmp~";
  for (const auto& name : {dead, live, other}) write_file(c.bundle / name, "partial");
  auto names = [&] {
    std::vector<std::string> out;
    for (auto& e : fs::directory_iterator(c.bundle)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  };
  auto before = names();
  REQUIRE(c.shim({"dry-run", "--bundle", c.bundle.string()}).exit_code == 0);
  REQUIRE(names() == before);
  // Nothing to change (uid 0, no request): nothing is written and the bundle is not even read.
  REQUIRE(c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "ctr"})).exit_code == 0);
  REQUIRE(read_file(c.bundle / "config.json") == c.spec_text);
  REQUIRE(names() == before);
  // A CDI request: config.json is rewritten, and the dead create's file goes first.
  write_file(c.tmp / "cdi/vendor.yaml",
             "cdiVersion: 0.3.0\nkind: vendor.com/x\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n");
  c.write_config("[cdi]\nspec-dirs = [\"" + (c.tmp / "cdi").string() + "\"]\n");
  write_file(
      c.bundle / "config.json",
      R"({"ociVersion": "1.0.2", "process": {"args": ["sh"]}, "annotations": {"cdi.k8s.io/t": "vendor.com/x=a"}})");
  REQUIRE(c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "ctr"})).exit_code == 0);
  REQUIRE_THAT(read_file(c.bundle / "config.json"), Catch::Contains("A=1"));
  auto after = names();
  REQUIRE(std::find(after.begin(), after.end(), dead) == after.end());
  REQUIRE(std::find(after.begin(), after.end(), live) != after.end());
  REQUIRE(std::find(after.begin(), after.end(), other) != after.end());
}

TEST_CASE("patches: a failing op fails the create in runc's format and leaves config.json byte-identical") {
  Cli c;
  c.write_config(
      "[[patches]]\nname = \"strict\"\nops = [\n  { op = \"add\", path = \"/process/env\", value = [\"A=1\"] },\n"
      "  { op = \"remove\", path = \"/linux/sysctl/net.core.somaxconn\" },\n]\n");
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE(r.out.empty());
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE(c.last_error() ==
          "specshim: patches: patch `strict` ops[1] (remove /linux/sysctl/net.core.somaxconn): path not found");
  REQUIRE(read_file(c.bundle / "config.json") == c.spec_text);
}

TEST_CASE("patches: dry-run shows the ops, create applies them once and records them") {
  Cli c;
  fs::path debug_log = c.tmp / "debug.log";
  c.write_config(
      "[log]\nfile = \"" + debug_log.string() +
      "\"\nlevel = \"debug\"\n\n"
      "[[patches]]\nname = \"env\"\nops = [{ op = \"add\", path = \"/process/env\", value = [\"A=1\"] }]\n"
      "set-mounts = [{ destination = \"/etc/hosts\", type = \"bind\", source = \"/h\", options = [\"ro\"] }]\n");
  auto d = c.shim({"dry-run", "--bundle", c.bundle.string(), "--format", "diff"});
  REQUIRE(d.exit_code == 0);
  REQUIRE(nlohmann::json::parse(d.out) == nlohmann::json::parse(R"([
    {"op": "add", "path": "/process/env", "value": ["A=1"]},
    {"op": "add", "path": "/mounts",
     "value": [{"destination": "/etc/hosts", "type": "bind", "source": "/h", "options": ["ro"]}]},
    {"op": "add", "path": "/annotations", "value": {"specshim.io/patches": "env"}}
  ])"));
  REQUIRE_THAT(d.err, Catch::Contains("changed by: patches"));
  REQUIRE(read_file(c.bundle / "config.json") == c.spec_text);

  auto args = c.create_args({"create", "--bundle", c.bundle.string(), "id"});
  REQUIRE(c.shim(args).exit_code == 0);
  std::string patched = read_file(c.bundle / "config.json");
  auto spec = nlohmann::ordered_json::parse(patched);
  REQUIRE(spec["process"]["env"] == nlohmann::ordered_json{"A=1"});
  REQUIRE(spec["annotations"]["specshim.io/patches"] == "env");
  REQUIRE_THAT(patched, Catch::Contains("1.50"));  // the rest keeps its text
  REQUIRE_THAT(read_file(debug_log), Catch::Contains("patches: applied env"));

  // A second create of the patched bundle changes nothing: the record says it is done.
  struct stat before {};
  ::stat((c.bundle / "config.json").c_str(), &before);
  REQUIRE(c.shim(args).exit_code == 0);
  REQUIRE(read_file(c.bundle / "config.json") == patched);
  struct stat after {};
  ::stat((c.bundle / "config.json").c_str(), &after);
  REQUIRE(after.st_ino == before.st_ino);
}

TEST_CASE(
    "every verb reads the config file whole: a key create refuses fails dry-run, the hot-plug verbs and diagnose") {
  Cli c;
  write_file(c.config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n[hotplug]\nno-such-key = 1\n");
  const std::string unknown = "line 4: unknown key `hotplug.no-such-key`";
  auto create = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(create.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains(unknown));

  std::vector<std::vector<std::string>> verbs = {
      {"dry-run", "--bundle", c.bundle.string()},
      {"attach", "--device", "/dev/null", "id"},
      {"detach", "--device", "/dev/null", "id"},
      {"attached", "id"},
      {"diagnose", "id"},
  };
  for (const auto& args : verbs) {
    CAPTURE(args[0]);
    auto r = c.shim(args);
    CHECK(r.exit_code == (args[0] == "diagnose" ? 2 : 1));  // diagnose: 2, the container cannot be inspected
    CHECK_THAT(r.err, Catch::Contains(unknown));
  }
  CHECK_FALSE(c.runtime_ran());  // refused before the runtime is asked for any container
}

TEST_CASE("cdi: a GPU NVIDIA's spec lacks fails the create, saying how to regenerate the spec") {
  Cli c;
  fs::create_directories(c.tmp / "cdi");
  c.write_config("[cdi]\nspec-dirs = [\"" + (c.tmp / "cdi").string() + "\"]\n");
  write_file(
      c.bundle / "config.json",
      R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"annotations":{"cdi.k8s.io/gpu":"nvidia.com/gpu=GPU-0a1b"}})");
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::Contains("unresolvable CDI devices nvidia.com/gpu=GPU-0a1b"));
  REQUIRE_THAT(c.last_error(),
               Catch::Contains("NVIDIA's spec lacks it: regenerate it (`systemctl restart nvidia-cdi-refresh.service` "
                               "or specshim-nvidia-cdi.service, or `nvidia-ctk cdi generate "
                               "--output=/var/run/cdi/nvidia.yaml`)"));
  // Another vendor's device gets no such advice.
  write_file(
      c.bundle / "config.json",
      R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"annotations":{"cdi.k8s.io/x":"example.com/accel=0"}})");
  r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(c.last_error(), !Catch::Contains("NVIDIA"));
}
