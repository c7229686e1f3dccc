// SPDX-License-Identifier: Apache-2.0
// specshim-nri-bench: what specshim-nri adds to CRI CreateContainer, for
// scripts/bench-nri.sh and docs/BENCHMARKS.md. A benchmark, not a test.
//
// One private containerd 2.x with NRI on (the e2e harness: Setup{.nri},
// no specshim handler, containerd's log at info as on a node) and two pods
// on containerd's default runc handler:
//   - "no device": a pod without annotations; the chain runs and changes
//     nothing, so the plugin answers with no adjustment (the common case);
//   - "CDI device": a pod annotated cdi.k8s.io/bench = example.com/accel=0,
//     which containerd does not resolve and the chain does (pod-annotations
//     = ["cdi.k8s.io/*"]): the plugin answers with an adjustment (a device,
//     its rule, env, a mount, a poststop hook).
// specshim-nri runs with a config a node would have: the CDI fixture's
// [cdi] and [nri] state-dir and pod-annotations, no debug log.
//
// Pairs of blocks, alternating: K creates of each variant (interleaved:
// no device, CDI device, ...) with the plugin registered ("plugin"), then K
// of each with the plugin stopped and dropped by containerd ("none"). Each
// sample is the wall time of one CRI CreateContainer call (the client's
// round trip; not StartContainer); the container is then checked (verbose
// ContainerStatus: the CDI device and specshim-nri's mark are in its spec
// exactly when the plugin was expected to add them) and removed, untimed.
// Each block begins with W unmeasured creates of each variant: after a
// stop, containerd drops the closed plugin at its next NRI request; after a
// start, the plugin's first create reads its config cold.
//
// Prints, in ms: median and p90 of each mode and variant over all samples,
// and the median (p25 – p75) of the per-pair differences of block medians
// (plugin − none): both blocks of a pair see nearly the same machine. Then
// the CPU time containerd's and the plugin's threads had around each call
// (/proc/<pid>/task/*/schedstat), which a loaded machine disturbs less than
// wall time: what the plugin itself spends per create; and how long the
// plugin's threads, runnable, waited for a CPU (a loaded machine's share).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kMark = "specshim.io/nri";  // specshim-nri's annotation on what it adjusted
// containerd's NRI (v0.8, containerd 2.1) logs these at info for our plugin.
constexpr const char* kRegistered = "specshim\\\" connected and synchronized";
constexpr const char* kDropped = "specshim\\\" closed";

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) {
  g_interrupted = 1;
}
void check_interrupted() {
  if (g_interrupted) throw std::runtime_error("interrupted");
}

std::string read_from(const fs::path& p, std::streamoff offset = 0) {
  std::ifstream in(p, std::ios::binary);
  in.seekg(offset);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::streamoff size_of(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<std::streamoff>(n);
}

// Sched is what all of a process's threads have had so far (ns, from
// /proc/<pid>/task/*/schedstat): time on a CPU, and time runnable but waiting
// for one. Zero once the process is gone.
struct Sched {
  std::int64_t run = 0, wait = 0;
};
Sched sched_of(pid_t pid) {
  Sched sum;
  if (pid <= 0) return sum;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    std::int64_t run = 0, wait = 0;
    if (in >> run >> wait) sum.run += run, sum.wait += wait;
  }
  return sum;
}

// Plugin runs the built specshim-nri against c's NRI socket with c's
// specshim.toml, its stderr appended to specshim-nri.log.
class Plugin {
 public:
  explicit Plugin(const Containerd& c) : c_(c), log_(c.dir() / "specshim-nri.log") {}
  ~Plugin() {
    if (pid_ > 0) ::kill(pid_, SIGTERM), ::waitpid(pid_, nullptr, 0);
  }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // start spawns the plugin and returns once containerd has it: its log says
  // the plugin connected and was synchronized.
  void start() {
    const auto from = size_of(containerd_log());
    pid_ = spawn_specshim_nri(c_);
    if (!poll_until([&] { return occurrences(read_from(containerd_log(), from), kRegistered) > 0; }, 20s, 5ms))
      throw std::runtime_error("containerd did not register specshim-nri within 20 s\n--- specshim-nri.log\n" +
                               read_from(log_) + c_.diagnostics());
  }

  // stop ends the plugin (SIGTERM, as a DaemonSet's pod is ended) and
  // returns once containerd has seen its connection close.
  void stop() {
    if (pid_ <= 0) return;
    const auto from = size_of(containerd_log());
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (!poll_until([&] { return occurrences(read_from(containerd_log(), from), kDropped) > 0; }, 20s, 5ms))
      throw std::runtime_error("containerd did not see specshim-nri's connection close within 20 s\n" +
                               c_.diagnostics());
  }

  std::string log() const { return read_from(log_); }
  pid_t pid() const { return pid_; }

 private:
  fs::path containerd_log() const { return c_.dir() / "containerd.log"; }

  const Containerd& c_;
  fs::path log_;
  pid_t pid_ = -1;
};

// Status reads a container's spec through a verbose ContainerStatus (the
// harness's client has no verbose call).
class Status {
 public:
  explicit Status(const Containerd& c)
      : stub_(cri::RuntimeService::NewStub(
            grpc::CreateChannel("unix://" + c.socket(), grpc::InsecureChannelCredentials()))) {}

  json spec(const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    cri::ContainerStatusRequest req;
    req.set_container_id(id);
    req.set_verbose(true);
    cri::ContainerStatusResponse resp;
    grpc::Status s = stub_->ContainerStatus(&ctx, req, &resp);
    if (!s.ok()) throw RpcError("ContainerStatus", s);
    auto it = resp.info().find("info");
    if (it == resp.info().end()) throw std::runtime_error("ContainerStatus of " + id + ": no verbose info");
    return json::parse(it->second).at("runtimeSpec");
  }

 private:
  std::unique_ptr<cri::RuntimeService::Stub> stub_;
};

struct Options {
  int pairs = 20;      // pairs of blocks (plugin, none)
  int per_block = 20;  // measured creates of each variant per block
  int warmup = 1;      // unmeasured creates of each variant at the start of each block
  std::string containerd_log_level = "info";
};

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--pairs N] [--per-block K] [--warmup W] [--containerd-log-level LEVEL]\n"
               "  N pairs of blocks (default 20); each block K measured creates of each variant (default 20)\n"
               "  after W unmeasured ones (default 1); containerd's log level (default info; the e2e\n"
               "  harness runs it at debug). As root.\n",
               argv0);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage(argv[0]);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](int min) {
      const std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < min || n > 100000) {
        std::fprintf(stderr, "%s: %s wants an integer >= %d, not `%s`\n", argv[0], a.c_str(), min, v.c_str());
        std::exit(2);
      }
      return static_cast<int>(n);
    };
    if (a == "--pairs") {
      o.pairs = number(1);
    } else if (a == "--per-block") {
      o.per_block = number(1);
    } else if (a == "--warmup") {
      o.warmup = number(0);
    } else if (a == "--containerd-log-level") {
      o.containerd_log_level = value();
    } else if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    } else {
      usage(argv[0]);
      std::exit(2);
    }
  }
  return o;
}

double quantile(std::vector<double> v, double q) {  // linear interpolation between order statistics
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

enum Mode { kPlugin, kNone };
enum Variant { kPlain, kAsked };
constexpr const char* kVariantNames[] = {"no device (the chain runs, changes nothing)",
                                         "CDI device by pod annotation (an adjustment)"};

// Sample is one CreateContainer: its wall time, the CPU time containerd's
// and the plugin's threads had from just before the call to just after it,
// and the time the plugin's threads waited for a CPU meanwhile.
struct Sample {
  double wall_ms, containerd_cpu_ms, plugin_cpu_ms, plugin_wait_ms;
};

struct Bench {
  Containerd& c;
  Status status;
  Pod* pods[2];
  const Plugin& plugin;
  pid_t containerd;
  int created = 0;

  // create_once times one CreateContainer, checks what the plugin did to the
  // container and removes it.
  Sample create_once(Mode mode, Variant variant) {
    check_interrupted();
    auto cfg = container_config("bench-" + std::to_string(created++), "exec sleep 600");
    Pod& pod = *pods[variant];
    const pid_t plugin_pid = mode == kPlugin ? plugin.pid() : -1;
    const Sched c0 = sched_of(containerd), p0 = sched_of(plugin_pid);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string id = c.cri().create_container(pod.id, cfg, pod.config);
    const auto t1 = std::chrono::steady_clock::now();
    const Sched c1 = sched_of(containerd), p1 = sched_of(plugin_pid);
    const json spec = status.spec(id);
    const bool marked = spec.value("annotations", json::object()).contains(kMark);
    const CdiEdits edits = cdi_fixture_edits(spec);
    const bool adjusted = mode == kPlugin && variant == kAsked;
    if (marked != adjusted || edits != (adjusted ? CdiEdits{1, 1, 1, 1, 1} : CdiEdits{0, 0, 0, 0, 0})) {
      std::ostringstream msg;
      msg << "container " << id << " (" << (mode == kPlugin ? "plugin" : "none") << ", " << kVariantNames[variant]
          << "): specshim-nri's mark " << (marked ? "present" : "absent") << ", CDI edits " << edits
          << ", expected the chain's " << (adjusted ? "adjustment" : "absence") << "\n"
          << spec.dump();
      throw std::runtime_error(msg.str());
    }
    c.cri().remove_container(id);
    auto ms = [](std::int64_t ns) { return static_cast<double>(ns) / 1e6; };
    return {std::chrono::duration<double, std::milli>(t1 - t0).count(), ms(c1.run - c0.run), ms(p1.run - p0.run),
            ms(p1.wait - p0.wait)};
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  if (::geteuid() != 0) {
    std::fprintf(stderr, "%s: run as root (it starts a containerd)\n", argv[0]);
    return 1;
  }
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  try {
    Setup setup;
    setup.handler = false;
    setup.nri = true;
    // A node's containerd logs at info; the harness's config says debug.
    setup.install = [&](const Containerd& c) {
      std::string config = read_from(c.config_file());
      const std::string from = "level = \"debug\"";
      const auto at = config.find(from);
      if (at == std::string::npos) throw std::runtime_error("no `" + from + "` in " + c.config_file().string());
      config.replace(at, from.size(), "level = \"" + opt.containerd_log_level + "\"");
      std::ofstream(c.config_file()) << config;
    };
    Containerd c(setup);
    c.set_specshim_config_file(cdi_fixture(c) + "\n[nri]\nstate-dir = \"" + (c.dir() / "nri-state").string() +
                               "\"\npod-annotations = [\"cdi.k8s.io/*\"]\n");
    const std::string version = c.cri().version().runtime_version();
    Pod plain(c, "nri-bench-plain", {}, "");
    Pod asked(c, "nri-bench-cdi", {{"cdi.k8s.io/bench", kFixtureDevice}}, "");
    Plugin plugin(c);
    const pid_t containerd = std::stoi(read_from(c.dir() / "containerd.pid"));
    Bench bench{c, Status(c), {&plain, &asked}, plugin, containerd};

    // samples[mode][variant]: every measured create; blocks[mode][variant]:
    // each block's median wall time; cpu: containerd's and the plugin's.
    std::vector<double> samples[2][2], blocks[2][2], containerd_cpu[2][2], plugin_cpu[2], plugin_wait[2];
    const auto started = std::chrono::steady_clock::now();
    for (int pair = 0; pair < opt.pairs; ++pair) {
      for (Mode mode : {kPlugin, kNone}) {
        if (mode == kPlugin)
          plugin.start();
        else
          plugin.stop();
        for (int i = 0; i < opt.warmup; ++i)
          for (Variant v : {kPlain, kAsked}) bench.create_once(mode, v);
        std::vector<double> block[2];
        for (int i = 0; i < opt.per_block; ++i)
          for (Variant v : {kPlain, kAsked}) {
            const Sample s = bench.create_once(mode, v);
            block[v].push_back(s.wall_ms);
            containerd_cpu[mode][v].push_back(s.containerd_cpu_ms);
            if (mode == kPlugin) plugin_cpu[v].push_back(s.plugin_cpu_ms), plugin_wait[v].push_back(s.plugin_wait_ms);
          }
        for (Variant v : {kPlain, kAsked}) {
          samples[mode][v].insert(samples[mode][v].end(), block[v].begin(), block[v].end());
          blocks[mode][v].push_back(quantile(block[v], 0.5));
        }
      }
      std::fprintf(stderr, "pair %d/%d: plugin − none, block medians: no device %+.3f ms, CDI device %+.3f ms\n",
                   pair + 1, opt.pairs, blocks[kPlugin][kPlain].back() - blocks[kNone][kPlain].back(),
                   blocks[kPlugin][kAsked].back() - blocks[kNone][kAsked].back());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    std::printf(
        "CRI CreateContainer on containerd %s (NRI on, default runc handler): %d pairs of blocks, "
        "%d measured creates of each variant per block (after %d unmeasured), %d cores, %.0f s\n\n",
        version.c_str(), opt.pairs, opt.per_block, opt.warmup, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)),
        seconds);
    std::printf(
        "| container | none median | none p90 | plugin median | plugin p90 | "
        "plugin − none, median of per-pair block differences (p25 – p75) |\n");
    std::printf("|---|---:|---:|---:|---:|---:|\n");
    for (Variant v : {kPlain, kAsked}) {
      std::vector<double> diffs;
      for (std::size_t i = 0; i < blocks[kPlugin][v].size(); ++i)
        diffs.push_back(blocks[kPlugin][v][i] - blocks[kNone][v][i]);
      std::printf("| %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms | **%+.2f ms** (%+.2f – %+.2f) |\n", kVariantNames[v],
                  quantile(samples[kNone][v], 0.5), quantile(samples[kNone][v], 0.9),
                  quantile(samples[kPlugin][v], 0.5), quantile(samples[kPlugin][v], 0.9), quantile(diffs, 0.5),
                  quantile(diffs, 0.25), quantile(diffs, 0.75));
    }
    std::printf(
        "\nCPU time per CreateContainer, and the plugin's time runnable but waiting for a CPU (schedstat "
        "of all threads, from just before the call to just after it), median (p90):\n\n");
    std::printf(
        "| container | containerd, none | containerd, plugin | specshim-nri | specshim-nri waiting for a CPU |\n"
        "|---|---:|---:|---:|---:|\n");
    for (Variant v : {kPlain, kAsked})
      std::printf("| %s | %.2f ms (%.2f) | %.2f ms (%.2f) | %.2f ms (%.2f) | %.2f ms (%.2f) |\n", kVariantNames[v],
                  quantile(containerd_cpu[kNone][v], 0.5), quantile(containerd_cpu[kNone][v], 0.9),
                  quantile(containerd_cpu[kPlugin][v], 0.5), quantile(containerd_cpu[kPlugin][v], 0.9),
                  quantile(plugin_cpu[v], 0.5), quantile(plugin_cpu[v], 0.9), quantile(plugin_wait[v], 0.5),
                  quantile(plugin_wait[v], 0.9));
    // Anything the plugin warned about besides [kubelet] budget-ms (which it
    // says at each registration: the default budget equals containerd's timeout).
    std::istringstream log(plugin.log());
    std::string warnings;
    for (std::string line; std::getline(log, line);)
      if ((line.find(" warn ") != std::string::npos || line.find(" error ") != std::string::npos) &&
          line.find("budget-ms") == std::string::npos)
        warnings += line + "\n";
    if (!warnings.empty()) std::printf("\nspecshim-nri warned:\n%s", warnings.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
