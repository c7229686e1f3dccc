// SPDX-License-Identifier: Apache-2.0
// Doctor's runtime check: the low-level runtime create would exec is there
// and answers --version, and is not NVIDIA's runtime injecting CDI devices a
// second time.
#include "runtime.h"

#include <filesystem>

#include "doctor/doctor.h"
#include "specshim/base/error.h"

namespace specshim::shim::doctor {
namespace {

// is_nvidia_runtime: nvidia-container-runtime (and its .cdi/.legacy
// variants) by file name, or anything whose --version names it.
bool is_nvidia_runtime(const std::string& path, const std::string& version) {
  std::string name = std::filesystem::path(path).filename().string();
  return name.rfind("nvidia-container-runtime", 0) == 0 ||
         version.find("NVIDIA Container Runtime") != std::string::npos;
}

}  // namespace

Check check_runtime(const Loaded& loaded) {
  Check c("runtime");
  std::string path;
  try {
    path = find_runtime(loaded.settings.runtime_path);
  } catch (const std::exception& e) {
    c.add(Severity::fail, describe(e));
    return c;
  }
  Output version = probe({path, "--version"});
  if (version.exit_code != 0) {
    c.add(Severity::fail,
          "`" + path + " --version` failed (exit " + std::to_string(version.exit_code) + "): " + version.text);
    return c;
  }
  c.add(Severity::ok, path);
  std::string text = version.text;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (std::size_t nl; (nl = text.find('\n')) != std::string::npos;) text.replace(nl, 1, "; ");
  c.add(Severity::info, text.empty() ? "(`--version` printed nothing)" : text);
  // In its cdi (and auto) mode NCT reads the same cdi.k8s.io/* annotations
  // and, unlike specshim, adds edits that are already there again.
  if (is_nvidia_runtime(path, version.text) && loaded.on("cdi") && loaded.cdi_dirs)
    c.add(Severity::warn,
          "the runtime is nvidia-container-runtime and specshim's cdi modifier is on: both inject the CDI devices "
          "that cdi.k8s.io/* annotations request, so env entries and cgroup rules end up twice; set [cdi] enabled = "
          "false (NCT injects) or run runc directly (see docs/deploying.md, \"NVIDIA's runtime\")");
  return c;
}

}  // namespace specshim::shim::doctor
