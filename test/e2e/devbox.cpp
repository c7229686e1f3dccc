// SPDX-License-Identifier: Apache-2.0
#include "devbox.h"

#include <stdexcept>

namespace specshim::e2e {
namespace fs = std::filesystem;

namespace {

const std::string kScript = E2E_SOURCE_DIR "/test/e2e/devbox/devbox.sh";

std::string file_tail(const fs::path& p, std::size_t bytes) {
  std::string s;
  try {
    s = test::read_file(p);
  } catch (const std::exception&) {
    return "(" + p.string() + " unreadable)";
  }
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

}  // namespace

DevBox::DevBox() {
  auto started = test::run_process({"/bin/bash", kScript, "start", dir_.path().string(), E2E_BUILD_DIR}, {}, 300000);
  try {
    pid_ = std::stoi(test::read_file(dir_.path() / "pid"));
  } catch (const std::exception&) {  // no pid: the outer runtime did not create it
  }
  if (started.exit_code != 0) {
    std::string why = "devbox.sh start failed:\n" + started.out + started.err + "\n" + diagnostics();
    stop();
    throw std::runtime_error(why);
  }
}

DevBox::~DevBox() {
  stop();
}

void DevBox::stop() noexcept {
  test::run_process({"/bin/bash", kScript, "stop", dir_.path().string()}, {}, 120000);
}

test::ProcessResult DevBox::docker(const std::vector<std::string>& args, int timeout_ms) const {
  std::vector<std::string> full = {"/bin/bash", kScript, "docker", dir_.path().string()};
  full.insert(full.end(), args.begin(), args.end());
  return test::run_process(full, {}, timeout_ms);
}

test::ProcessResult DevBox::exec(const std::vector<std::string>& argv, int timeout_ms) const {
  std::vector<std::string> full = {"/bin/bash", kScript, "exec", dir_.path().string()};
  full.insert(full.end(), argv.begin(), argv.end());
  return test::run_process(full, {}, timeout_ms);
}

std::string DevBox::exec_ok(const std::vector<std::string>& argv, int timeout_ms) const {
  auto r = exec(argv, timeout_ms);
  if (r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    throw std::runtime_error("in the dev box: " + cmd + " exited " + std::to_string(r.exit_code) + ":\n" + r.out +
                             r.err);
  }
  return r.out;
}

fs::path DevBox::in_box(const fs::path& box_path) const {
  return fs::path("/proc/" + std::to_string(pid_) + "/root") / box_path.relative_path();
}

std::string DevBox::diagnostics() const {
  return "--- the dev box's console (dockerd, tail)\n" + file_tail(dir_.path() / "console", 3000) +
         "\n--- the outer runtime's log (tail)\n" + file_tail(dir_.path() / "runtime.log", 1000);
}

}  // namespace specshim::e2e
