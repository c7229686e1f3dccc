// SPDX-License-Identifier: Apache-2.0
#include "doctor_host.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specshim::test {
namespace {

constexpr const char* kHybridMounts =
    "25 1 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    "27 25 0:24 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory\n"
    "28 25 0:25 / /sys/fs/cgroup/devices rw,nosuid shared:10 - cgroup cgroup rw,devices\n";
constexpr const char* kInitialUserns = "         0          0 4294967295\n";

}  // namespace

FakeHost::FakeHost() {
  write_file(root / "proc/self/mountinfo", kHybridMounts);
  write_file(root / "proc/self/uid_map", kInitialUserns);
  fs::create_directories(root / "usr/local/bin");
  fs::create_symlink(SPECSHIM_BINARY, root / "usr/local/bin/specshim");
  write_file(root / "etc/containerd/config.toml", containerd_config("specshim", "/usr/local/bin/specshim"));
  write_config("");
}

std::string FakeHost::containerd_config(const std::string& runtime, const std::string& binary) {
  return "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." + runtime +
         "]\n  runtime_type = "
         "\"io.containerd.runc.v2\"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes." +
         runtime + ".options]\n  BinaryName = \"" + binary + "\"\n";
}

void FakeHost::write_config(const std::string& extra) {
  write_file(config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n" + extra);
}

ProcessResult FakeHost::doctor(std::vector<std::string> more, std::map<std::string, std::string> env) const {
  std::vector<std::string> args = {SPECSHIM_BINARY, "doctor",      "--config",
                                   config.string(), "--host-root", root.string()};
  args.insert(args.end(), more.begin(), more.end());
  return run_process(args, env, 10000);
}

json FakeHost::report(std::map<std::string, std::string> env) const {
  auto r = doctor({"--json"}, env);
  INFO(r.out << r.err);
  return json::parse(r.out);
}

std::vector<std::string> findings(const json& report, const std::string& check) {
  std::vector<std::string> out;
  for (const auto& c : report["checks"])
    if (c["name"] == check)
      for (const auto& f : c["findings"])
        out.push_back(f["status"].get<std::string>() + " " + f["text"].get<std::string>());
  return out;
}

json finding(const json& report, const std::string& check, const std::string& text) {
  for (const auto& c : report["checks"])
    if (c["name"] == check)
      for (const auto& f : c["findings"])
        if (f["text"].get<std::string>().find(text) != std::string::npos) return f;
  return nullptr;
}

bool HasFinding::match(const json& report) const {
  for (const auto& f : findings(report, check_))
    if (f.rfind(status_ + " ", 0) == 0 && f.find(text_) != std::string::npos) return true;
  return false;
}

std::string HasFinding::describe() const {
  return "has a " + status_ + " finding in " + check_ + " containing \"" + text_ + "\"";
}

}  // namespace specshim::test
