// SPDX-License-Identifier: Apache-2.0
// Doctor's nri check: which front-end runs the chain here besides the
// handler (docs/nri.md). specshim-nri writes its registration into [nri]
// state-dir when the runtime configures it and removes it when the
// connection ends; a registration whose process is gone is stale.
#include <ctime>
#include <filesystem>
#include <optional>

#include "doctor/doctor.h"
#include "specshim/base/config.h"
#include "specshim/base/fs.h"
#include "specshim/node/nri_status.h"

namespace specshim::shim::doctor {
namespace {

// is_plugin reports whether pid is a live specshim-nri process on host.
bool is_plugin(const Host& host, pid_t pid) {
  try {
    std::string comm = fs::read_regular_file(host.path("/proc/" + std::to_string(pid) + "/comm"), 4096);
    return comm == "specshim-nri\n";
  } catch (const std::exception&) {
    return false;
  }
}

std::string when(std::int64_t since) {
  std::time_t t = static_cast<std::time_t>(since);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// kNvidiaConfig is NVIDIA's runtime's config file; kAcceptEnv the key that
// lets it read NVIDIA_VISIBLE_DEVICES from unprivileged containers (on
// unless set false).
constexpr const char* kNvidiaConfig = "/etc/nvidia-container-runtime/config.toml";
constexpr const char* kAcceptEnv = "accept-nvidia-visible-devices-envvar-when-unprivileged";

// nvidia_runtime says, where NVIDIA's runtime is installed, whether a
// container the plugin was not consulted for (NRI fails open) would get
// every GPU its variable names from it.
void nvidia_runtime(const Host& host, Check& c) {
  std::filesystem::path file = host.path(kNvidiaConfig);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return;
  std::optional<bool> accept;
  try {
    auto doc = config::Document::load(file);
    auto root = doc.root();
    if (root.has(kAcceptEnv)) accept = root.boolean(kAcceptEnv);
  } catch (const std::exception& e) {
    c.add(Severity::info, "NVIDIA's runtime config " + q(kNvidiaConfig) + " was not read: " + describe(e));
    return;
  }
  if (accept == false) {
    c.add(Severity::ok, "NVIDIA's runtime reads NVIDIA_VISIBLE_DEVICES only from privileged containers (" +
                            std::string(kAcceptEnv) + " = false in " + kNvidiaConfig +
                            "): a container the plugin misses gets no GPU from the variable");
    return;
  }
  c.add(Severity::warn,
        "NVIDIA's runtime accepts NVIDIA_VISIBLE_DEVICES from unprivileged containers (" + std::string(kAcceptEnv) +
            (accept ? " = true" : " unset, true by default") + " in " + kNvidiaConfig +
            "): a container created while specshim-nri is not consulted gets every GPU its variable names, a CUDA "
            "image's `all` included; set it to false and hand devices over as volume mounts or CDI (docs/nri.md, "
            "\"NVIDIA's runtime after the plugin\")");
}

}  // namespace

Check check_nri(const Host& host, const Loaded& loaded) {
  Check c("nri");
  NriSettings on_host = loaded.nri;
  on_host.state_dir = host.path(loaded.nri.state_dir).string();
  std::optional<nri_status::Registration> s;
  try {
    s = nri_status::read(on_host);
  } catch (const std::exception& e) {
    c.add(Severity::warn, describe(e));
  }
  const std::string fail_open =
      "while it is not registered, the runtime creates containers without its chain (NRI fails open)";
  if (s && is_plugin(host, s->pid)) {
    c.add(Severity::ok,
          "specshim-nri (pid " + std::to_string(s->pid) + ") registered as " + s->plugin + " with " + s->runtime +
              " (NRI v0." + std::to_string(s->nri_minor) + ") since " + when(s->since) +
              ": it runs the chain for the pods of every handler but " +
              (loaded.nri.shim_handlers.empty() ? std::string("none") : join(loaded.nri.shim_handlers, ", ")));
    c.add(Severity::info, "NRI fails open: " + fail_open);
    nvidia_runtime(host, c);
    return c;
  }
  if (s)
    c.add(Severity::warn, "specshim-nri registered as " + s->plugin + " with " + s->runtime + " at " + when(s->since) +
                              ", but its process (pid " + std::to_string(s->pid) + ") is gone: " + fail_open);
  else if (loaded.nri_table)
    c.add(Severity::warn, "[nri] is configured, but specshim-nri is not registered with the runtime (no " +
                              nri_status::file(loaded.nri).string() + "): " + fail_open);
  else
    c.add(Severity::info, "specshim-nri is not in use here (no [nri] table, no registration)");
  if (s || loaded.nri_table) nvidia_runtime(host, c);
  return c;
}

}  // namespace specshim::shim::doctor
