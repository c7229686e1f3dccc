// SPDX-License-Identifier: Apache-2.0
// specshim doctor, the real binary, against fake host trees (--host-root).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using nlohmann::json;

namespace {

constexpr const char* kHybridMounts =
    "25 1 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    "27 25 0:24 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory\n"
    "28 25 0:25 / /sys/fs/cgroup/devices rw,nosuid shared:10 - cgroup cgroup rw,devices\n";
constexpr const char* kInitialUserns = "         0          0 4294967295\n";

// Listener is a unix socket something listens on, like a live kubelet's.
class Listener {
 public:
  explicit Listener(const fs::path& path) {
    fs::create_directories(path.parent_path());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
  }
  ~Listener() { ::close(fd_); }
  // stale closes the listener and leaves the socket file: a dead plugin.
  void stale() { ::close(std::exchange(fd_, -1)); }

 private:
  int fd_ = -1;
};

// FakeHost is a host tree where every check can pass: cgroup v1 with the
// devices controller, the initial user namespace, a containerd config whose
// specshim runtime points (through a symlink) at the binary under test.
struct FakeHost {
  TempDir tmp;
  fs::path root = tmp / "host";
  fs::path config = tmp / "specshim.toml";

  FakeHost() {
    write_file(root / "proc/self/mountinfo", kHybridMounts);
    write_file(root / "proc/self/uid_map", kInitialUserns);
    fs::create_directories(root / "usr/local/bin");
    fs::create_symlink(SPECSHIM_BINARY, root / "usr/local/bin/specshim");
    write_file(root / "etc/containerd/config.toml", containerd_config("specshim", "/usr/local/bin/specshim"));
    write_config("");
  }
  static std::string containerd_config(const std::string& runtime, const std::string& binary) {
    return "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." + runtime +
           "]\n  runtime_type = "
           "\"io.containerd.runc.v2\"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." +
           runtime + ".options]\n  BinaryName = \"" + binary + "\"\n";
  }
  void write_config(const std::string& extra) {
    write_file(config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n" + extra);
  }
  ProcessResult doctor(std::vector<std::string> more = {}, std::map<std::string, std::string> env = {}) const {
    std::vector<std::string> args = {SPECSHIM_BINARY, "doctor",      "--config",
                                     config.string(), "--host-root", root.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_process(args, env, 10000);
  }
  json report(std::map<std::string, std::string> env = {}) const {
    auto r = doctor({"--json"}, env);
    INFO(r.out << r.err);
    return json::parse(r.out);
  }
};

// findings returns "status text" lines of one check of a JSON report.
std::vector<std::string> findings(const json& report, const std::string& check) {
  std::vector<std::string> out;
  for (const auto& c : report["checks"])
    if (c["name"] == check)
      for (const auto& f : c["findings"])
        out.push_back(f["status"].get<std::string>() + " " + f["text"].get<std::string>());
  return out;
}

// HasFinding matches a JSON report with a finding in check whose status is
// status and whose text contains text; a failure prints the whole report.
class HasFinding : public Catch::MatcherBase<json> {
 public:
  HasFinding(std::string check, std::string status, std::string text)
      : check_(std::move(check)), status_(std::move(status)), text_(std::move(text)) {}
  bool match(const json& report) const override {
    for (const auto& f : findings(report, check_))
      if (f.rfind(status_ + " ", 0) == 0 && f.find(text_) != std::string::npos) return true;
    return false;
  }
  std::string describe() const override {
    return "has a " + status_ + " finding in " + check_ + " containing \"" + text_ + "\"";
  }

 private:
  std::string check_, status_, text_;
};

}  // namespace

TEST_CASE("doctor: a healthy fake host has no problems and says so in text") {
  FakeHost h;
  auto r = h.doctor();
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.out, Catch::Contains("0 problems"));
  REQUIRE_THAT(r.out, Catch::Contains("BinaryName `/usr/local/bin/specshim` is this binary"));
  REQUIRE_THAT(r.out, Catch::Contains("devices controller at /sys/fs/cgroup/devices"));
  REQUIRE_THAT(r.out, Catch::Contains("initial user namespace"));
}

TEST_CASE("doctor --json parses, lists every check, and problems match the exit status") {
  FakeHost h;
  h.write_config("[chain]\norder = [\"nope\"]\n");
  auto r = h.doctor({"--json"});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& c : report["checks"]) names.push_back(c["name"]);
  REQUIRE(names ==
          std::vector<std::string>{"config", "runtime", "cdi", "kubelet", "kernel", "capabilities", "containerd"});
  REQUIRE(report["problems"] == 1);
  REQUIRE(r.exit_code == 1);
}

TEST_CASE("doctor: an invalid config is a problem naming the rule and line") {
  FakeHost h;
  h.write_config(
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "capabilities = [\"CAP_IPC_LOK\"]\n");
  json report = h.report();
  REQUIRE_THAT(report,
               HasFinding("config", "fail",
                          "line 6: `requirements[0].capabilities`: rule `vfio`: unknown capability `CAP_IPC_LOK`"));
}

TEST_CASE("doctor: a bad command line exits 2, --help 0") {
  REQUIRE(run_process({SPECSHIM_BINARY, "doctor", "--bogus"}).exit_code == 2);
  REQUIRE(run_process({SPECSHIM_BINARY, "doctor", "--host-root", "/nonexistent/root"}).exit_code == 2);
  REQUIRE(run_process({SPECSHIM_BINARY, "doctor", "--help"}).exit_code == 0);
}

TEST_CASE("doctor: a valid config reports modifiers on and off, and its rules") {
  FakeHost h;
  h.write_config(
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "capabilities = [\"CAP_IPC_LOCK\"]\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("config", "ok", h.config.string() + ": valid"));
  REQUIRE_THAT(report, HasFinding("config", "info", "modifiers on: passwd, cdi, requirements, devices-cgroup; off: device-plugin"));
  REQUIRE_THAT(report, HasFinding("config", "info", "requirements rule `vfio` adds CAP_IPC_LOCK"));
  REQUIRE_THAT(report, !HasFinding("config", "warn", "matches resources"));

  h.write_config("[[requirements]]\nname = \"vfio\"\nmatch = { resources = [\"example.com/vfio\"] }\n");
  json by_resource = h.report();
  REQUIRE_THAT(
      by_resource,
      HasFinding(
          "config", "warn",
          "rule `vfio` matches resources, but the device-plugin modifier that writes specshim.io/resources is off"));
}

TEST_CASE("doctor: a missing or failing runtime is a problem") {
  FakeHost h;
  h.write_config("");
  REQUIRE_THAT(h.report(), HasFinding("runtime", "ok", RECORDING_RUNTIME));
  json failing = h.report({{"RECORD_DIR", h.tmp.path().string()}, {"FAKE_EXIT", "3"}});
  REQUIRE_THAT(failing, HasFinding("runtime", "fail", "--version` failed (exit 3)"));
  write_file(h.config, "[runtime]\npath = \"/nonexistent/runc\"\n");
  json missing = h.report();
  REQUIRE_THAT(missing, HasFinding("runtime", "fail", "[runtime] path `/nonexistent/runc`: No such file or directory"));
}

TEST_CASE("doctor: each CDI spec file loads or shows its parse error with the line") {
  FakeHost h;
  write_file(h.root / "etc/cdi/good.json",
             R"({"cdiVersion":"0.6.0","kind":"example.com/accel","devices":[{"name":"0","containerEdits":{}}]})");
  write_file(h.root / "etc/cdi/broken.json", "{\n  \"cdiVersion\": \"0.6.0\",\n  \"kind\": ,\n}\n");
  write_file(h.root / "var/run/cdi/nodevices.json", R"({"cdiVersion":"0.6.0","kind":"example.com/net"})");
  write_file(h.root / "etc/cdi/README", "not a spec");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("cdi", "ok", "etc/cdi/good.json: loaded"));
  REQUIRE_THAT(report, HasFinding("cdi", "fail", "etc/cdi/broken.json: parse error at line 3"));
  REQUIRE_THAT(report, HasFinding("cdi", "fail", "var/run/cdi/nodevices.json: `devices` is missing or empty"));
  REQUIRE(findings(report, "cdi").size() == 3);
}

TEST_CASE("doctor: containerd config registering specshim with the wrong BinaryName") {
  FakeHost h;
  SECTION("a file that is not this binary") {
    write_file(h.root / "usr/local/bin/specshim-old", "#!/bin/sh\n", 0755);
    write_file(h.root / "etc/containerd/config.toml",
               FakeHost::containerd_config("specshim", "/usr/local/bin/specshim-old"));
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "fail",
                                    "runtime `specshim`: BinaryName `/usr/local/bin/specshim-old` is not this binary"));
    REQUIRE_THAT(report, HasFinding("containerd", "warn", "no containerd config registers this binary"));
  }
  SECTION("a path that does not exist, in an imported file") {
    write_file(h.root / "etc/containerd/config.toml", "version = 2\nimports = [\"/etc/containerd/runtimes/*.toml\"]\n");
    write_file(h.root / "etc/containerd/runtimes/gpu.toml",
               FakeHost::containerd_config("gpu", "/opt/specshim/bin/specshim"));
    json report = h.report();
    REQUIRE_THAT(
        report, HasFinding("containerd", "fail",
                           "runtimes/gpu.toml: runtime `gpu`: BinaryName `/opt/specshim/bin/specshim` does not exist"));
  }
  SECTION("conf.d registers it right, with a runtime_type that ignores BinaryName") {
    write_file(h.root / "etc/containerd/config.toml", "version = 2\n");
    std::string text = FakeHost::containerd_config("specshim", "/usr/local/bin/specshim");
    write_file(h.root / "etc/containerd/conf.d/10-specshim.toml",
               replace_all(text, "io.containerd.runc.v2", "io.containerd.runsc.v1"));
    json report = h.report();
    REQUIRE_THAT(
        report,
        HasFinding("containerd", "ok",
                   "conf.d/10-specshim.toml: runtime `specshim`: BinaryName `/usr/local/bin/specshim` is this binary"));
    REQUIRE_THAT(report, HasFinding("containerd", "fail", "runtime_type `io.containerd.runsc.v1` ignores BinaryName"));
  }
  SECTION("a relative BinaryName") {
    write_file(h.root / "etc/containerd/config.toml", FakeHost::containerd_config("specshim", "specshim"));
    REQUIRE_THAT(h.report(), HasFinding("containerd", "warn", "BinaryName `specshim` is relative"));
  }
  SECTION("a containerd config that does not parse") {
    write_file(h.root / "etc/containerd/config.toml", "version = 2\n[plugins\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("containerd", "fail", "etc/containerd/config.toml`: line 2"));
  }
}

TEST_CASE("doctor: kubelet sockets, live and stale") {
  FakeHost h;
  REQUIRE_THAT(h.report(), HasFinding("kubelet", "warn", "pod-resources/kubelet.sock: absent"));
  Listener pod_resources(h.root / "var/lib/kubelet/pod-resources/kubelet.sock");
  Listener plugin(h.root / "var/lib/kubelet/device-plugins/vfio.sock");
  Listener dead(h.root / "var/lib/kubelet/device-plugins/dead.sock");
  Listener registration(h.root / "var/lib/kubelet/device-plugins/kubelet.sock");
  dead.stale();
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", "pod-resources/kubelet.sock: reachable"));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", "device-plugins/vfio.sock: reachable"));
  REQUIRE_THAT(report, HasFinding("kubelet", "warn", "device-plugins/dead.sock: Connection refused"));
  for (const auto& f : findings(report, "kubelet")) REQUIRE(f.find("device-plugins/kubelet.sock") == std::string::npos);
}

TEST_CASE("doctor: kernel cgroup layouts") {
  FakeHost h;
  SECTION("cgroup v2 loads the BPF device filter (we are root)") {
    write_file(h.root / "proc/self/mountinfo",
               "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("kernel", "ok", "cgroup v2 (unified) at /sys/fs/cgroup"));
    REQUIRE_THAT(report, HasFinding("kernel", "ok", "BPF device filter: loads"));
  }
  SECTION("cgroup v1 without the devices controller") {
    write_file(h.root / "proc/self/mountinfo", "27 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
    json report = h.report();
    REQUIRE_THAT(report, HasFinding("kernel", "fail", "cgroup v1 without the devices controller"));
  }
  REQUIRE_THAT(h.report(), HasFinding("kernel", "ok", "openat2 with RESOLVE_IN_ROOT: available"));
}

TEST_CASE("doctor: rootless, and CAP_MKNOD missing, are problems") {
  FakeHost h;
  write_file(h.root / "proc/self/uid_map", "         0       1000          1\n");
  json rootless = h.report();
  REQUIRE_THAT(rootless, HasFinding("capabilities", "fail", "in a user namespace (uid_map `0 1000 1`)"));

  FakeHost h2;
  auto r = run_process({"/usr/bin/setpriv", "--bounding-set", "-mknod", SPECSHIM_BINARY, "doctor", "--json", "--config",
                        h2.config.string(), "--host-root", h2.root.string()});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  REQUIRE_THAT(report, HasFinding("capabilities", "fail", "CAP_MKNOD: not effective (not in the bounding set)"));
  REQUIRE(r.exit_code == 1);
}

TEST_CASE("doctor: a rule the runtime cannot honour from here is a warning") {
  FakeHost h;
  h.write_config(
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "capabilities = [\"CAP_IPC_LOCK\"]\nrlimits = { RLIMIT_MEMLOCK = \"unlimited\" }\n");
  // A low hard limit and no CAP_SYS_RESOURCE, whatever this host allows.
  auto r = run_process({"/usr/bin/prlimit", "--memlock=65536:65536", "/usr/bin/setpriv", "--bounding-set",
                        "-sys_resource,-ipc_lock", SPECSHIM_BINARY, "doctor", "--json", "--config", h.config.string(),
                        "--host-root", h.root.string()});
  INFO(r.out << r.err);
  json report = json::parse(r.out);
  REQUIRE_THAT(
      report,
      HasFinding("capabilities", "warn",
                 "rule `vfio` raises the RLIMIT_MEMLOCK hard limit to unlimited, above this process's 65536, without "
                 "CAP_SYS_RESOURCE"));
  REQUIRE_THAT(report, HasFinding("capabilities", "warn",
                                  "rule `vfio` adds CAP_IPC_LOCK, which is not in specshim's bounding set"));
  REQUIRE(r.exit_code == 0);  // warnings only
}
