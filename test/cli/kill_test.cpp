// SPDX-License-Identifier: Apache-2.0
// Real SIGKILLs at random moments of real creates, on a bundle on disk where
// the atomic writes' fsyncs take time: config.json is always the original or
// the rewritten text, a generated file is absent or whole, and the next
// create leaves no temp file in the bundle.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "container.h"
#include "tempdir.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace specshim::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kTries = 300;
// The sanitizer build creates ~8x slower; it stops at this budget instead
// (~100 tries there) so the ASan pass of the cli tier stays short.
constexpr auto kBudget = std::chrono::seconds(40);

// A bundle whose create does passwd work (uid 10001 is not in the image:
// specshim-passwd and specshim-group are written) and CDI work (one device's
// env), with the static exit-0 runtime, under /var/tmp: containerd keeps
// bundles on tmpfs, but on a disk the fsyncs widen every window a kill can hit.
struct DiskBundle {
  TempDir tmp{"/var/tmp"};
  fs::path dir = tmp / "bundle";
  fs::path config = tmp / "specshim.toml";
  std::string original =
      R"({"ociVersion":"1.0.2","process":{"user":{"uid":10001,"gid":10001},"args":["sh"],"env":["PATH=/bin"]},)"
      R"("root":{"path":"rootfs"},"mounts":[],"annotations":{"cdi.k8s.io/t":"example.com/dev=0"}})";

  DiskBundle() {
    write_file(dir / "rootfs" / "etc" / "passwd", "root:x:0:0:root:/root:/bin/sh\n");
    write_file(dir / "rootfs" / "etc" / "group", "root:x:0:\n");
    write_file(tmp / "cdi" / "dev.yaml",
               "cdiVersion: 0.5.0\nkind: example.com/dev\ndevices:\n- name: \"0\"\n"
               "  containerEdits:\n    env: [DEV=0]\n");
    // The parse cache lives in the test's dir, not the host's /run.
    write_file(config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n[cdi]\ncache-dir = \"" +
                           (tmp / "cdi-cache").string() + "\"\nspec-dirs = [\"" + (tmp / "cdi").string() + "\"]\n");
    reset();
  }
  // reset puts the bundle back as containerd hands it over: config.json and rootfs only.
  void reset() const {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename() != "rootfs") fs::remove_all(e.path());
    write_file(dir / "config.json", original);
  }
  // spawn starts `specshim create` without waiting for it.
  pid_t spawn() const {
    std::vector<std::string> args = {SPECSHIM_BINARY, "--log",      (tmp / "log.json").string(),
                                     "--log-format",  "json",       "create",
                                     "--bundle",      dir.string(), "id"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    for (int fd = 0; fd <= 2; ++fd) ::posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
    pid_t pid = 0;
    int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (err != 0) FAIL("posix_spawn " << argv[0] << ": " << std::strerror(err));
    return pid;
  }
  // wait returns the wait status of pid.
  static int wait(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }
  // temps lists the bundle entries named like specshim's temp files.
  std::vector<std::string> temps() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::string name = e.path().filename();
      if (name.find(".specshim-") != std::string::npos && name.ends_with(".tmp")) out.push_back(name);
    }
    return out;
  }
  std::map<std::string, std::string> files() const {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out[e.path().filename()] = read_file(e.path());
    return out;
  }
};

}  // namespace

TEST_CASE("kill: random SIGKILLs during creates leave config.json whole and, after the next create, no temp file") {
  DiskBundle b;
  ::setenv("SPECSHIM_CONFIG", b.config.c_str(), 1);

  // The undisturbed result, and how long a create takes here (median of 7).
  std::vector<double> durations;
  std::map<std::string, std::string> expected;
  for (int i = 0; i < 7; ++i) {
    b.reset();
    auto start = Clock::now();
    int status = DiskBundle::wait(b.spawn());
    durations.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    INFO("log: " << (fs::exists(b.tmp / "log.json") ? read_file(b.tmp / "log.json") : ""));
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    expected = b.files();
  }
  std::sort(durations.begin(), durations.end());
  double median_us = durations[durations.size() / 2];
  REQUIRE(expected.count("specshim-passwd") == 1);
  REQUIRE(expected.count("specshim-group") == 1);
  const std::string rewritten = expected["config.json"];
  REQUIRE(rewritten != b.original);
  REQUIRE_THAT(rewritten, Catch::Contains("DEV=0"));
  expected.erase("log.json");

  std::random_device rd;
  unsigned seed = rd();
  std::mt19937 rng(seed);
  // Up to 1.2 create durations after the spawn: some kills land before the
  // first write, some after the exec of the runtime, most during the writes.
  // The duration is the median of the last retries (full creates), so the
  // delays follow the machine's load as it changes during the run.
  std::deque<double> recent(durations.begin(), durations.end());
  auto delay_us = [&] {
    std::vector<double> sorted(recent.begin(), recent.end());
    std::sort(sorted.begin(), sorted.end());
    return std::uniform_int_distribution<long>(0, static_cast<long>(sorted[sorted.size() / 2] * 1.2))(rng);
  };

  int killed = 0, finished = 0, old_text = 0, new_text = 0, left_by_kill = 0;
  std::vector<std::string> broken;  // what went wrong, per try
  auto suite_start = Clock::now();
  int tries = 0;
  for (; tries < kTries && Clock::now() - suite_start < kBudget; ++tries) {
    b.reset();
    auto start = Clock::now();
    pid_t pid = b.spawn();
    std::this_thread::sleep_until(start + std::chrono::microseconds(delay_us()));
    ::kill(pid, SIGKILL);
    int status = DiskBundle::wait(pid);
    (WIFSIGNALED(status) ? killed : finished)++;

    std::string at = "try " + std::to_string(tries) + ": ";
    std::string text = read_file(b.dir / "config.json");
    if (text == b.original)
      ++old_text;
    else if (text == rewritten)
      ++new_text;
    else
      broken.push_back(at + "config.json is neither the original nor the rewritten text: " + text);
    if (!nlohmann::json::accept(text)) broken.push_back(at + "config.json does not parse");
    for (const auto& [name, content] : b.files())  // the generated files: absent or whole
      if (name != "config.json" && expected.count(name) && content != expected[name])
        broken.push_back(at + name + " is not whole");
    left_by_kill += static_cast<int>(b.temps().size());

    // A retry (as containerd's would be) completes and cleans up.
    auto retry_start = Clock::now();
    int retry = DiskBundle::wait(b.spawn());
    recent.push_back(std::chrono::duration<double, std::micro>(Clock::now() - retry_start).count());
    if (recent.size() > 15) recent.pop_front();
    if (!WIFEXITED(retry) || WEXITSTATUS(retry) != 0) broken.push_back(at + "the create after the kill failed");
    if (read_file(b.dir / "config.json") != rewritten) broken.push_back(at + "config.json not rewritten by the retry");
    for (const auto& t : b.temps()) broken.push_back(at + "left after the retry: " + t);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - suite_start).count();
  std::printf(
      "kill: %d tries in %.1f s (seed %u, create median %.0f us): %d killed, %d finished first; config.json old %d, "
      "new %d; temp files right after the kills %d; problems %zu\n",
      tries, seconds, seed, median_us, killed, finished, old_text, new_text, left_by_kill, broken.size());
  INFO("seed " << seed << "; first problems:\n"
               << [&] {
                    std::string s;
                    for (std::size_t k = 0; k < std::min<std::size_t>(broken.size(), 10); ++k) s += broken[k] + "\n";
                    return s;
                  }());
  REQUIRE(broken.empty());
  // Most kills must land inside the create, or the test tests nothing.
  REQUIRE(tries >= 50);
  REQUIRE(killed > tries / 2);
}
