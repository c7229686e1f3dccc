// SPDX-License-Identifier: Apache-2.0
// Doctor's runtime check: the low-level runtime create would exec is there
// and answers --version.
#include "runtime.h"

#include "doctor/doctor.h"
#include "specshim/error.h"

namespace specshim::shim::doctor {

Check check_runtime(const Loaded& loaded) {
  Check c("runtime");
  std::string path;
  try {
    path = find_runtime(loaded.settings.runtime_path);
  } catch (const std::exception& e) {
    c.add(Status::fail, describe(e));
    return c;
  }
  Output version = run_command({path, "--version"}, 5000);
  if (version.exit_code != 0) {
    c.add(Status::fail,
          "`" + path + " --version` failed (exit " + std::to_string(version.exit_code) + "): " + version.text);
    return c;
  }
  c.add(Status::ok, path);
  std::string text = version.text;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (std::size_t nl; (nl = text.find('\n')) != std::string::npos;) text.replace(nl, 1, "; ");
  c.add(Status::info, text.empty() ? "(`--version` printed nothing)" : text);
  return c;
}

}  // namespace specshim::shim::doctor
