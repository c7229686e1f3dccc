// SPDX-License-Identifier: Apache-2.0
#include "devbox.h"

#include <stdexcept>

#include "script_verb.h"

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
  return script_verb(kScript, "docker", dir_.path(), args, timeout_ms);
}

test::ProcessResult DevBox::exec(const std::vector<std::string>& argv, int timeout_ms) const {
  return script_verb(kScript, "exec", dir_.path(), argv, timeout_ms);
}

std::string DevBox::exec_ok(const std::vector<std::string>& argv, int timeout_ms) const {
  return succeeded(exec(argv, timeout_ms), "the dev box", argv);
}

fs::path DevBox::in_box(const fs::path& box_path) const {
  return fs::path("/proc/" + std::to_string(pid_) + "/root") / box_path.relative_path();
}

std::string DevBox::diagnostics() const {
  return "--- the dev box's console (dockerd, tail)\n" + file_tail(dir_.path() / "console", 3000) +
         "\n--- the outer runtime's log (tail)\n" + file_tail(dir_.path() / "runtime.log", 1000);
}

}  // namespace specshim::e2e
