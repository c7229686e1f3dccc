// SPDX-License-Identifier: Apache-2.0
#include "e2e_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace specshim::e2e {

std::vector<std::string> calls_for(const std::vector<std::string>& calls, const std::string& id) {
  std::vector<std::string> out;
  for (const auto& call : calls) {
    std::istringstream words(call);
    for (std::string w; words >> w;)
      if (w == id) {
        out.push_back(call);
        break;
      }
  }
  return out;
}

bool in_order(const std::vector<std::string>& calls, const std::vector<std::string>& expected) {
  auto it = calls.begin();
  for (const auto& e : expected) {
    it = std::find(it, calls.end(), e);
    if (it == calls.end()) return false;
    ++it;
  }
  return true;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string specshim_config_error(const Containerd& c) {
  // dry-run reports the same describe() text a create logs, after its own
  // prefix; the config is read before the bundle, so no bundle is needed.
  auto r = test::run_process(
      {SPECSHIM_BINARY, "dry-run", "--bundle", "/nonexistent", "--config", (c.dir() / "specshim.toml").string()});
  const std::string marker = "specshim dry-run: ";
  auto at = r.err.find(marker);
  if (r.exit_code != 1 || at == std::string::npos)
    throw std::runtime_error("specshim dry-run found no config error:\n" + r.err);
  auto end = r.err.find('\n', at);
  return "specshim: " + r.err.substr(at + marker.size(), end - at - marker.size());
}

std::vector<LogLine> read_cri_log(const std::string& path) {
  std::vector<LogLine> out;
  std::istringstream in(test::read_file(path));
  std::string partial;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string time, stream, tag;
    fields >> time >> stream >> tag;
    std::string text = line.size() > time.size() + stream.size() + tag.size() + 3
                           ? line.substr(time.size() + stream.size() + tag.size() + 3)
                           : "";
    partial += text;
    if (tag == "F") {
      out.push_back({stream, partial});
      partial.clear();
    }
  }
  return out;
}

std::string log_text(const std::vector<LogLine>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.stream + ": " + l.text + "\n";
  return out;
}

cri::ContainerConfig container_config(const std::string& name, const std::string& script) {
  cri::ContainerConfig cfg;
  cfg.mutable_metadata()->set_name(name);
  cfg.mutable_image()->set_image(kImage);
  cfg.add_command("/bin/sh");
  cfg.add_command("-c");
  cfg.add_command(script);
  cfg.set_log_path(name + ".log");
  auto* sc = cfg.mutable_linux()->mutable_security_context();
  sc->mutable_namespace_options()->set_pid(cri::CONTAINER);
  sc->mutable_namespace_options()->set_network(cri::NODE);
  // The kubelet's defaults for a non-privileged container.
  for (const char* p :
       {"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
        "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"})
    sc->add_masked_paths(p);
  for (const char* p : {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"})
    sc->add_readonly_paths(p);
  auto* res = cfg.mutable_linux()->mutable_resources();
  res->set_cpu_shares(2);  // BestEffort
  res->set_cpu_period(100000);
  res->set_oom_score_adj(1000);
  (*cfg.mutable_labels())["io.kubernetes.container.name"] = name;
  (*cfg.mutable_annotations())["io.kubernetes.container.restartCount"] = "0";
  (*cfg.mutable_annotations())["io.kubernetes.container.terminationMessagePath"] = "/dev/termination-log";
  return cfg;
}

cri::ContainerStatus wait_exited(CriClient& cri, const std::string& id, std::chrono::milliseconds deadline) {
  cri::ContainerStatus status;
  poll_until(
      [&] {
        status = cri.container_status(id);
        return status.state() == cri::CONTAINER_EXITED;
      },
      deadline);
  return status;
}

std::string bundle_config(const Containerd& c, const std::string& id) {
  return test::read_file(c.dir() / "state/io.containerd.runtime.v2.task/k8s.io" / id / "config.json");
}

Pod::Pod(Containerd& c, const std::string& name, const std::map<std::string, std::string>& annotations,
         const std::string& handler)
    : c(c), config(c.pod_config(name)) {
  for (const auto& [k, v] : annotations) (*config.mutable_annotations())[k] = v;
  id = c.cri().run_pod_sandbox(config, handler);
}

Pod::Pod(Containerd& c, cri::PodSandboxConfig config, const std::string& handler) : c(c), config(std::move(config)) {
  id = c.cri().run_pod_sandbox(this->config, handler);
}

Pod::~Pod() {
  try {
    c.cri().stop_pod_sandbox(id);
    c.cri().remove_pod_sandbox(id);
  } catch (const std::exception&) {
    // The harness removes whatever is left.
  }
}

Pod::Exited Pod::run(const cri::ContainerConfig& cfg) {
  Exited e;
  e.id = create(cfg);
  c.cri().start_container(e.id);
  e.status = wait_exited(c.cri(), e.id);
  e.log = read_cri_log(log_path(cfg));
  return e;
}

std::string cdi_fixture(const Containerd& c) {
  namespace fs = std::filesystem;
  const fs::path dir = c.dir();
  fs::create_directories(dir / "cdi-dev");
  ::mknod((dir / "cdi-dev/accel0").c_str(), S_IFCHR | 0666, makedev(1, 7));
  test::write_file(dir / "cdi-share/hello", "hello from a CDI mount\n");
  nlohmann::json spec = {
      {"cdiVersion", "0.6.0"},
      {"kind", "example.com/accel"},
      {"devices",
       {{{"name", "0"},
         {"containerEdits",
          {{"deviceNodes", {{{"path", "/dev/accel0"}, {"hostPath", (dir / "cdi-dev/accel0").string()}}}},
           {"env", {"E2E_CDI_ENV=accel0"}},
           {"mounts",
            {{{"hostPath", (dir / "cdi-share").string()},
              {"containerPath", "/mnt/cdi"},
              {"options", {"ro", "nosuid", "nodev", "bind"}}}}},
           {"hooks", {{{"hookName", "poststop"}, {"path", "/bin/true"}, {"args", {"true", "e2e-accel0"}}}}}}}}}}};
  test::write_file(c.cdi_dir() / "example.json", spec.dump(2));
  return "[cdi]\nspec-dirs = [\"" + c.cdi_dir().string() + "\"]\n";
}

pid_t spawn_specshim_nri(const Containerd& c) {
  const std::string config = (c.dir() / "specshim.toml").string(), socket = c.nri_socket(),
                    log = (c.dir() / "specshim-nri.log").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const char* argv[] = {E2E_SPECSHIM_NRI, "--config", config.c_str(), "--socket", socket.c_str(), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(std::string("spawn ") + E2E_SPECSHIM_NRI + ": " + std::strerror(rc));
  return pid;
}

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> gpu_fixture(const Containerd& c) {
  namespace fs = std::filesystem;
  using nlohmann::json;
  const std::vector<std::string> uuids = {"GPU-4a3b2c1d-0000-4000-8000-0000000000f0",
                                          "GPU-4a3b2c1d-0000-4000-8000-0000000000f1"};
  fs::create_directories(c.dir() / "gpu-dev");
  json devices = json::array();
  for (std::size_t i = 0; i < uuids.size(); ++i) {
    const fs::path node = c.dir() / "gpu-dev" / ("nvidia" + std::to_string(i));
    if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
      throw std::runtime_error("mknod " + node.string() + ": " + std::strerror(errno));
    json edits = {{"deviceNodes", {{{"path", "/dev/nvidia" + std::to_string(i)}, {"hostPath", node.string()}}}}};
    devices.push_back({{"name", std::to_string(i)}, {"containerEdits", edits}});
    devices.push_back({{"name", uuids[i]}, {"containerEdits", edits}});
  }
  test::write_file(c.cdi_dir() / "nvidia.json",
                   json{{"cdiVersion", "0.5.0"}, {"kind", "nvidia.com/gpu"}, {"devices", devices}}.dump(2));
  return uuids;
}

namespace {

// count is how many elements of the array at `p` satisfy `match`.
template <typename Match>
int count(const nlohmann::json& j, const nlohmann::json::json_pointer& p, Match match) {
  if (!j.contains(p) || !j.at(p).is_array()) return 0;
  return static_cast<int>(std::count_if(j.at(p).begin(), j.at(p).end(), match));
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const CdiEdits& e) {
  return os << "{nodes " << e.nodes << ", env " << e.env << ", rules " << e.rules << ", mounts " << e.mounts
            << ", hooks " << e.hooks << "}";
}

CdiEdits cdi_fixture_edits(const nlohmann::json& spec) {
  using nlohmann::json;
  return {
      count(spec, "/linux/devices"_json_pointer, [](const json& d) { return d.value("path", "") == "/dev/accel0"; }),
      count(spec, "/process/env"_json_pointer, [](const json& e) { return e == "E2E_CDI_ENV=accel0"; }),
      count(spec, "/linux/resources/devices"_json_pointer,
            [](const json& r) {
              return r.value("allow", false) && r.value("type", "") == "c" && r.value("major", -1) == 1 &&
                     r.value("minor", -1) == 7;
            }),
      count(spec, "/mounts"_json_pointer, [](const json& m) { return m.value("destination", "") == "/mnt/cdi"; }),
      count(spec, "/hooks/poststop"_json_pointer, [](const json& h) {
        return h.value("path", "") == "/bin/true" && h.value("args", json::array()) == json{"true", "e2e-accel0"};
      })};
}

FakeKubelet::FakeKubelet(const std::string& config_json, const std::filesystem::path& dir) {
  const std::string config = (dir / "fake-kubelet.json").string();
  test::write_file(config, config_json);
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe for the fake kubelet");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  const char* argv[] = {E2E_FAKE_KUBELET, "--config", config.c_str(), nullptr};
  int rc = ::posix_spawn(&pid_, argv[0], &fa, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error(std::string("spawn ") + E2E_FAKE_KUBELET + " failed");
  }
  // It says "ready" once every socket listens (or exits, closing the pipe).
  std::string got;
  char ch;
  while (got.find('\n') == std::string::npos && ::read(out[0], &ch, 1) == 1) got += ch;
  ::close(out[0]);
  if (got != "ready\n") {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    throw std::runtime_error("the fake kubelet did not start: " + got);
  }
}

FakeKubelet::~FakeKubelet() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace specshim::e2e
