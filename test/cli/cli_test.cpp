// SPDX-License-Identifier: Apache-2.0
// The real specshim binary against the recording fake runtime.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

namespace {

// Fixture: a temp dir with a bundle, a record dir, and a config pointing
// [runtime] path at the recording runtime.
struct Cli {
  TempDir tmp;
  fs::path bundle = tmp / "bundle";
  fs::path record = tmp / "record";
  fs::path config = tmp / "specshim.toml";
  fs::path log = tmp / "bundle" / "log.json";
  std::string spec_text =
      "{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {\"user\": {\"uid\": 0, \"gid\": 0}, \"args\": [\"sh\"]},\n  "
      "\"x-unknown\": {\"n\": 1.50}\n}\n";

  Cli() {
    fs::create_directories(bundle);
    fs::create_directories(record);
    write_file(bundle / "config.json", spec_text);
    write_config("");
  }
  void write_config(const std::string& extra) {
    write_file(config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n" + extra);
  }
  std::map<std::string, std::string> env(std::map<std::string, std::string> more = {}) const {
    more["SPECSHIM_CONFIG"] = config.string();
    more["RECORD_DIR"] = record.string();
    return more;
  }
  ProcessResult shim(std::vector<std::string> args, std::map<std::string, std::string> more = {},
                     const fs::path& cwd = {}) const {
    args.insert(args.begin(), SPECSHIM_BINARY);
    return run_process(args, env(std::move(more)), 10000, cwd);
  }
  bool runtime_ran() const { return fs::exists(record / "argv"); }
  std::vector<std::string> recorded_argv() const {
    std::string raw = read_file(record / "argv");
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (raw[i] == '\0') out.push_back(raw.substr(start, i - start)), start = i + 1;
    return out;
  }
  // last_error returns the msg of the last error line in --log ("" if none).
  std::string last_error() const {
    if (!fs::exists(log)) return "";
    std::string text = read_file(log), msg;
    std::size_t start = 0;
    while (start < text.size()) {
      auto end = text.find('\n', start);
      auto j = nlohmann::json::parse(text.substr(start, end - start));
      if (j.value("level", "") == "error") msg = j.value("msg", "");
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return msg;
  }
  std::vector<std::string> create_args(std::vector<std::string> tail) const {
    std::vector<std::string> a = {"--root", (tmp / "root").string(), "--log", log.string(), "--log-format", "json"};
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  }
};

}  // namespace

TEST_CASE("passthrough verbs reach the runtime byte for byte, same pid, same env") {
  Cli c;
  std::vector<std::string> args = {"--root",      "/run/x", "--log",     c.log.string(),       "--log-format",
                                   "json",        "exec",   "--process", "/tmp/p.json",        "ctr",
                                   "/bin/echo",   "create", "",          "\xff\xfe raw bytes", "--bundle",
                                   "/nonexistent"};
  auto r = c.shim(args, {{"SOME_VAR", "kept"}});
  REQUIRE(r.exit_code == 0);
  auto got = c.recorded_argv();
  REQUIRE(got[0] == RECORDING_RUNTIME);
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == args);
  REQUIRE(read_file(c.record / "pid") == std::to_string(r.pid));  // execve: same process
  REQUIRE_THAT(read_file(c.record / "env"), Catch::Contains(std::string("SOME_VAR=kept\0", 14)));
  REQUIRE(r.out.empty());
  REQUIRE(r.err.empty());
}

TEST_CASE("non-create command lines are never taken for a create") {
  auto args = GENERATE(values<std::vector<std::string>>({
      {"exec", "ctr", "/bin/echo", "create"},
      {"--log", "create", "state", "x"},
      {"delete", "create"},
      {"kill", "--all", "create", "9"},
      {"state", "create"},
      {"features"},
      {},
      {"no-such-verb", "--bundle", "."},
      {"checkpoint", "--image-path", "/i", "--work-path", "/w", "create"},
  }));
  Cli c;
  write_file(c.bundle / "config.json", "{ broken json");  // a create would fail on this
  auto r = c.shim(args, {}, c.bundle);
  REQUIRE(r.exit_code == 0);
  REQUIRE(c.runtime_ran());
  REQUIRE(c.last_error().empty());
}

TEST_CASE("exit status and signals pass through") {
  Cli c;
  auto code = c.shim({"state", "x"}, {{"FAKE_EXIT", "42"}});
  REQUIRE(code.exit_code == 42);
  auto sig = c.shim({"create", "--bundle", c.bundle.string(), "id"}, {{"FAKE_SIGNAL", "9"}});
  REQUIRE(sig.signaled);
  REQUIRE(sig.exit_code == 128 + 9);
}

TEST_CASE("create with nothing to change leaves config.json byte-identical and prints nothing") {
  Cli c;
  struct stat before {};
  ::stat((c.bundle / "config.json").c_str(), &before);
  auto args =
      c.create_args({"create", "--bundle", c.bundle.string(), "--pid-file", (c.bundle / "init.pid").string(), "id1"});
  auto r = c.shim(args);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.empty());
  REQUIRE(read_file(c.bundle / "config.json") == c.spec_text);
  struct stat after {};
  ::stat((c.bundle / "config.json").c_str(), &after);
  REQUIRE(after.st_ino == before.st_ino);  // not rewritten
  auto got = c.recorded_argv();
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == args);
  REQUIRE_FALSE(fs::exists(c.log));  // nothing logged on success
}

TEST_CASE("every bundle spelling finds the bundle, and the default is the cwd") {
  Cli c;
  write_file(c.bundle / "config.json", "{ not json");
  auto form = GENERATE(as<std::string>{}, "--bundle", "--bundle=", "-b", "-b=", "-bundle", "cwd", "after-id");
  std::vector<std::string> args = {"--log", c.log.string(), "--log-format", "json", "create"};
  fs::path cwd;
  if (form == "cwd") {
    cwd = c.bundle;
  } else if (form == "after-id") {
    args.insert(args.end(), {"id", "--bundle", c.bundle.string()});
  } else if (form.back() == '=') {
    args.push_back(form + c.bundle.string());
  } else {
    args.insert(args.end(), {form, c.bundle.string()});
  }
  if (form != "after-id") args.push_back("id");
  auto r = c.shim(args, {}, cwd);
  INFO("form " << form);
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: parse `" + (c.bundle / "config.json").string() + "`: "));
}

TEST_CASE("bad config.json fails the create: error in --log, runtime not run, file untouched") {
  struct Case {
    std::string name, content, error;
  };
  auto k = GENERATE(values<Case>({
      {"malformed", "{\"a\": [1, 2}", "parse `"},
      {"not an object", "[1,2]", "spec is not a JSON object"},
      {"non-UTF-8", "{\"a\": \"\xc3\x28\"}", "line 1, column 8: invalid UTF-8 in a string, found bytes 0xC3 0x28"},
      {"empty", "", "parse `"},
      {"oversized", std::string(16 * 1024 * 1024 + 1, ' '), "the limit is 16777216"},
  }));
  Cli c;
  write_file(c.bundle / "config.json", k.content);
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  INFO(k.name);
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::Contains(k.error));
  REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: "));
  REQUIRE(read_file(c.bundle / "config.json") == k.content);
  REQUIRE(r.out.empty());
}

TEST_CASE("missing config.json and missing bundle are clear errors") {
  Cli c;
  fs::remove(c.bundle / "config.json");
  c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE_THAT(c.last_error(), Catch::Contains("config.json`: No such file or directory"));
  REQUIRE_FALSE(c.runtime_ran());
}

TEST_CASE("log format text, and no --log at all") {
  Cli c;
  write_file(c.bundle / "config.json", "nope");
  c.shim({"--log", c.log.string(), "create", "--bundle", c.bundle.string(), "id"});
  REQUIRE_THAT(read_file(c.log), Catch::Matches("time=\"[0-9T:Z-]+\" level=error msg=\"specshim: parse .*\"\n"));
  auto r = c.shim({"create", "--bundle", c.bundle.string(), "id"});
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(r.err, Catch::Contains("level=error msg=\"specshim: parse"));
}

TEST_CASE("runtime lookup: configured path missing, PATH skips specshim itself") {
  Cli c;
  c.write_config("");
  write_file(c.config, "[runtime]\npath = \"/nonexistent/runc\"\n");
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("[runtime] path `/nonexistent/runc`: No such file or directory"));
  // passthrough reports it too
  auto p = c.shim({"--log", c.log.string(), "--log-format", "json", "state", "x"});
  REQUIRE(p.exit_code == 1);

  // specshim installed as `runc` first on PATH, the real one later.
  fs::create_directories(c.tmp / "a");
  fs::create_directories(c.tmp / "b");
  fs::copy_file(SPECSHIM_BINARY, c.tmp / "a" / "runc");
  fs::copy_file(RECORDING_RUNTIME, c.tmp / "b" / "runc");
  write_file(c.config, "");
  std::string path = (c.tmp / "a").string() + ":" + (c.tmp / "b").string();
  auto q = run_process({(c.tmp / "a" / "runc").string(), "state", "x"}, c.env({{"PATH", path}}));
  REQUIRE(q.exit_code == 0);
  REQUIRE(c.recorded_argv()[0] == (c.tmp / "b" / "runc").string());

  // Only specshim on PATH: a clear error, no recursion.
  auto z = run_process({(c.tmp / "a" / "runc").string(), "--log", c.log.string(), "--log-format", "json", "state", "x"},
                       c.env({{"PATH", (c.tmp / "a").string()}}));
  REQUIRE(z.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("no `runc` on PATH other than specshim itself"));
}

TEST_CASE("a broken specshim config fails create but never blocks delete") {
  Cli c;
  write_file(c.config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n[chain]\nno-such-key = 1\n");
  auto del = c.shim({"--log", c.log.string(), "--log-format", "json", "delete", "--force", "id"});
  REQUIRE(del.exit_code == 0);
  REQUIRE(c.runtime_ran());
  fs::remove(c.record / "argv");
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::Contains("line 4: unknown key `chain.no-such-key`"));

  // Not even TOML: passthrough falls back to the default lookup (runc on PATH).
  write_file(c.config, "[runtime\n");
  fs::create_directories(c.tmp / "bin");
  fs::copy_file(RECORDING_RUNTIME, c.tmp / "bin" / "runc");
  auto d2 = run_process({SPECSHIM_BINARY, "delete", "id"}, c.env({{"PATH", (c.tmp / "bin").string()}}));
  REQUIRE(d2.exit_code == 0);
  REQUIRE(c.recorded_argv()[0] == (c.tmp / "bin" / "runc").string());
}

TEST_CASE("create lines of newer runtimes: --pidfd-socket and global flags after the verb run the chain") {
  Cli c;
  auto args = GENERATE(values<std::vector<std::string>>({
      {"create", "--pidfd-socket", "/run/pidfd.sock", "id"},
      {"run", "--detach", "--pidfd-socket=/run/pidfd.sock", "id"},
      {"create", "--root", "/run/x", "--systemd-cgroup", "id"},
  }));
  CAPTURE(args);
  auto line = c.create_args(args);
  auto r = c.shim(line, {}, c.bundle);
  REQUIRE(r.exit_code == 0);
  REQUIRE(c.last_error().empty());
  auto got = c.recorded_argv();
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == line);
  // It went through the chain, not around it: a broken config.json now fails the create.
  write_file(c.bundle / "config.json", "{ broken json");
  fs::remove_all(c.record / "argv");
  REQUIRE(c.shim(line, {}, c.bundle).exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("config.json"));
  REQUIRE_FALSE(c.runtime_ran());
}

TEST_CASE("unknown create flags are refused, not guessed") {
  Cli c;
  auto r = c.shim(c.create_args({"create", "--future-flag=x", "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("flag `--future-flag=x` of `create` is unknown"));
  REQUIRE_FALSE(c.runtime_ran());
}

namespace {

// restore_bundle writes a bundle whose container runs as uid 10001, which its
// image's /etc/passwd lacks, and asks for a CDI device (a node in front of
// the host's /dev/null) by annotation, as a CRI checkpoint's config.json would.
void restore_bundle(const fs::path& bundle) {
  write_file(bundle / "rootfs/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
  write_file(bundle / "rootfs/etc/group", "root:x:0:\n");
  write_file(bundle / "config.json",
             R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
                 "process": {"user": {"uid": 10001, "gid": 10001}, "args": ["sh"], "env": ["PATH=/bin"]},
                 "annotations": {"cdi.k8s.io/accel": "example.com/accel=0"},
                 "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
}

}  // namespace

TEST_CASE("restore goes through the chain like create: passwd mount and CDI device, then runc with the original argv") {
  Cli c;
  fs::path cdi = c.tmp / "cdi";
  write_file(cdi / "accel.json", R"({"cdiVersion": "0.6.0", "kind": "example.com/accel",
      "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/accel0", "hostPath": "/dev/null"}]}}]})");
  c.write_config("[cdi]\nspec-dirs = [\"" + cdi.string() + "\"]\ncache-dir = \"\"\n");
  fs::path created = c.tmp / "created";
  restore_bundle(c.bundle);
  restore_bundle(created);

  // containerd's shim (go-runc RestoreOpts): --bundle after the other flags, the single-dash -no-subreaper.
  auto args = c.create_args({"restore", "--image-path", (c.tmp / "image").string(), "--work-path",
                             (c.tmp / "work").string(), "--detach", "--pid-file", (c.bundle / "init.pid").string(),
                             "--no-pivot", "-no-subreaper", "--bundle", c.bundle.string(), "ctr-1"});
  auto r = c.shim(args);
  INFO(r.err << c.last_error());
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.empty());
  auto got = c.recorded_argv();
  REQUIRE(got[0] == RECORDING_RUNTIME);
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == args);  // byte for byte
  REQUIRE(read_file(c.record / "pid") == std::to_string(r.pid));          // exec'd, not spawned

  auto spec = nlohmann::json::parse(read_file(c.bundle / "config.json"));
  bool passwd_mounted = false;
  for (const auto& m : spec["mounts"])
    if (m["destination"] == "/etc/passwd") passwd_mounted = m["source"] == (c.bundle / "specshim-passwd").string();
  REQUIRE(passwd_mounted);
  REQUIRE_THAT(read_file(c.bundle / "specshim-passwd"), Catch::Contains("user10001:x:10001:10001:"));
  REQUIRE(spec["linux"]["devices"][0]["path"] == "/dev/accel0");
  REQUIRE(spec["linux"]["devices"][0]["major"] == 1);
  REQUIRE(spec["linux"]["devices"][0]["minor"] == 3);

  // The same bundle created instead of restored comes out the same.
  auto create =
      c.create_args({"create", "--bundle", created.string(), "--pid-file", (created / "init.pid").string(), "ctr-2"});
  REQUIRE(c.shim(create).exit_code == 0);
  REQUIRE(replace_all(read_file(created / "config.json"), created.string(), c.bundle.string()) ==
          read_file(c.bundle / "config.json"));
}

TEST_CASE("a refused restore writes runc's JSON error line to --log and runs nothing, like create") {
  Cli c;
  SECTION("a device no spec defines") {
    restore_bundle(c.bundle);
    std::string before = read_file(c.bundle / "config.json");
    c.write_config("[cdi]\nspec-dirs = [\"" + (c.tmp / "no-cdi").string() + "\"]\n");
    auto r = c.shim(
        c.create_args({"restore", "--image-path", "/i", "--work-path", "/w", "--detach", "--pid-file",
                       (c.bundle / "init.pid").string(), "-no-subreaper", "--bundle", c.bundle.string(), "ctr-1"}));
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.out.empty());
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE(read_file(c.bundle / "config.json") == before);
    REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: cdi: unresolvable CDI devices example.com/accel=0"));
    // One line, runc's fields: level, msg, time.
    auto line = nlohmann::json::parse(read_file(c.log));
    REQUIRE(line["level"] == "error");
    REQUIRE(line.contains("time"));
  }
  SECTION("a flag runc's restore does not define") {
    auto r = c.shim(c.create_args({"restore", "--page-server=10.0.0.1:27", "--bundle", c.bundle.string(), "id"}));
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE_THAT(c.last_error(),
                 Catch::Contains("flag `--page-server=10.0.0.1:27` of `restore` is unknown to specshim"));
  }
  SECTION("a broken config.json") {
    write_file(c.bundle / "config.json", "{ broken");
    auto r = c.shim(c.create_args({"restore", "--bundle", c.bundle.string(), "id"}));
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: parse `" + (c.bundle / "config.json").string() + "`: "));
  }
}

TEST_CASE("version: prints specshim's version, then the runtime's") {
  Cli c;
  auto r = c.shim({"--version"});
  REQUIRE_THAT(r.out, Catch::StartsWith("specshim version "));
  REQUIRE(c.recorded_argv().back() == "--version");
}

TEST_CASE("help: --help, -h and help print specshim's usage, then the runtime's help") {
  Cli c;
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"-h"}, {"help"}, {"--debug", "--help"}}) {
    CAPTURE(args);
    auto r = c.shim(args);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::StartsWith("specshim "));
    for (const char* want :
         {"dry-run ", "doctor ", "attach ", "detach ", "attached ", "/etc/specshim/config.toml", "SPECSHIM_CONFIG",
          "man specshim", "passwd, device-plugin, cpuset, env-devices, hotplug, cdi"})
      REQUIRE_THAT(r.out, Catch::Contains(want));
    REQUIRE(c.recorded_argv() == [&] {  // the runtime got the same argv, and prints its own help
      std::vector<std::string> want{RECORDING_RUNTIME};
      want.insert(want.end(), args.begin(), args.end());
      return want;
    }());
  }
}

TEST_CASE("help: a runc command's help and `help VERB` are not specshim's usage") {
  Cli c;
  auto create = c.shim({"create", "--help"});
  REQUIRE_THAT(create.out, !Catch::Contains("specshim's own commands"));
  REQUIRE(c.runtime_ran());
  auto topic = c.shim({"help", "create"});
  REQUIRE_THAT(topic.out, !Catch::Contains("specshim's own commands"));
  auto verb = c.shim({"help", "dry-run"});
  REQUIRE(verb.exit_code == 0);
  REQUIRE_THAT(verb.out, Catch::Contains("--bundle"));
}

TEST_CASE("help: attach, detach and attached each print their own --help, and refuse bad arguments") {
  Cli c;
  for (const char* verb : {"attach", "detach", "attached"}) {
    CAPTURE(verb);
    auto r = c.shim({verb, "--help"});
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains(std::string("specshim ") + verb));
    REQUIRE_THAT(r.out, Catch::Contains("--root"));
    REQUIRE_THAT(r.out, Catch::Contains("CONTAINER-ID"));
    auto bare = c.shim({verb});
    REQUIRE(bare.exit_code != 0);
    REQUIRE_THAT(bare.err, Catch::Contains("CONTAINER-ID is required"));
    REQUIRE_FALSE(c.runtime_ran());
  }
  REQUIRE_THAT(c.shim({"attach", "--help"}).out, Catch::Contains("HOST[:CONTAINER[:PERMS]]"));
  REQUIRE_THAT(c.shim({"attached", "--help"}).out, Catch::Contains("--format"));
}

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
  REQUIRE_THAT(u.err, Catch::Contains("--bundle is required"));
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

// What a command prints on stdout; it must exit 0.
static std::string output(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  REQUIRE(::pclose(p) == 0);
  return out;
}

TEST_CASE(
    "the specshim binary is linked as configured, constructs no streams at start-up, and unwinds through "
    "PT_GNU_EH_FRAME") {
  std::string link = SPECSHIM_LINK;
  std::string headers = output("readelf -hlW " SPECSHIM_BINARY);
  INFO("linked " << link);
  if (link == "dynamic") {  // sanitizer builds
    CHECK_THAT(headers, Catch::Contains("INTERP"));
    return;
  }
  CHECK_THAT(headers, !Catch::Contains("INTERP"));
  CHECK_THAT(headers, Catch::Contains("GNU_EH_FRAME"));
  // No translation unit constructs the standard streams at start-up
  // (shim/src/no_static_iostream.h): libstdc++'s per-TU object is __ioinit.
  CHECK_THAT(output("nm " SPECSHIM_BINARY), !Catch::Contains("__ioinit"));
  if (link == "static-pie") {
    CHECK_THAT(headers, Catch::Contains("DYN ("));
    return;
  }
  CHECK_THAT(headers, Catch::Contains("EXEC (Executable file)"));
  // crtbeginT's registration of .eh_frame lands in the no-op of
  // shim/src/static_unwind.cpp; without it the first throw sorts every FDE.
  CHECK_THAT(output("nm " SPECSHIM_BINARY), Catch::Contains(" T __wrap___register_frame_info"));
}

#ifdef SPECSHIM_HOT_PATH_LAYOUT
TEST_CASE("the hot path is laid out in one block of .text, in shim/hot-path.order, apart from code it never runs") {
  // Link order alone puts the shim library (doctor included) before the
  // modifiers, and libc last. lld puts the ordered functions together: first
  // in .text on x86-64; on aarch64, whose branches need range-extension thunks
  // past 128 MiB, lld puts them after about half of the other code instead,
  // so that both ends stay in reach. Either way the hot path is one block of
  // about 0.5 MiB, and code it never runs (doctor) is outside it.
  std::map<std::string, unsigned long> address;
  std::istringstream nm(output("nm --defined-only " SPECSHIM_BINARY));
  for (std::string line; std::getline(nm, line);) {
    std::istringstream fields(line);
    std::string addr, type, name;
    if (fields >> addr >> type >> name && std::string("TtWw").find(type) != std::string::npos)
      address[name] = std::stoul(addr, nullptr, 16);
  }
  std::istringstream sections(output("readelf -SW " SPECSHIM_BINARY " | sed -n 's/.* \\.text *PROGBITS *//p'"));
  std::string text_start;
  REQUIRE(sections >> text_start);
  unsigned long text = std::stoul(text_start, nullptr, 16);
  const char* doctor =
      "_ZN8specshim4shim11doctor_mainERKSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS7_EE";
  REQUIRE(address.count(doctor));
  unsigned long first = ~0UL, last = 0;
  for (const char* hot : {"_ZN8specshim4shim16passthrough_mainERKNS0_8RuncArgsERKSt6vectorINSt7__cxx1112basic_"
                          "stringIcSt11char_traitsIcESaIcEEESaISA_EE",
                          "_ZN8specshim4Spec5parseESt17basic_string_viewIcSt11char_traitsIcEE", "execve"}) {
    INFO(hot);
    REQUIRE(address.count(hot));
    first = std::min(first, address[hot]);
    last = std::max(last, address[hot]);
  }
  CHECK(last - first < 1024 * 1024);  // the hot path is about 0.5 MiB of 4
  CHECK((address[doctor] < first || address[doctor] > last));
#if defined(__x86_64__)
  CHECK(address[doctor] > last);
  CHECK(first - text < 1024 * 1024);
#else
  (void)text;
#endif
}
#endif

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
