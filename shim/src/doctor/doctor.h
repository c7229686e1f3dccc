// SPDX-License-Identifier: Apache-2.0
// specshim doctor: checks of the node a shim runs on, one function per
// concern (one file each), and the report they fill.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "settings.h"
#include "severity.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/cpuset.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/requirements.h"
#include "specshim/node/hotplug.h"

namespace specshim::shim::doctor {

// Severity (severity.h): a check is as bad as its worst finding (a check with
// nothing but notes is info), and any fail makes doctor exit 1.
using shim::Severity;
using shim::severity_name;

// Finding is one line of the report. details are what it counted (device
// names, device IDs): in the JSON always, in the text with --verbose.
struct Finding {
  Severity status;
  std::string text;
  std::vector<std::string> details = {};
};

// Check is one concern's findings, in the order they were made.
struct Check {
  std::string name;
  std::vector<Finding> findings;

  explicit Check(std::string n) : name(std::move(n)) {}
  Severity status() const;
  void add(Severity s, std::string text, std::vector<std::string> details = {}) {
    findings.push_back({s, std::move(text), std::move(details)});
  }
};

// Host is where doctor looks: every host path a check reads goes through
// path(), so tests (and a debug pod with the node's / mounted somewhere) can
// point doctor at another tree. This process's own capabilities and the
// kernel probes are always the real ones.
struct Host {
  std::filesystem::path root = "/";
  std::filesystem::path path(std::string_view absolute) const;
};

// Loaded is what the config check learned, for the checks after it. The
// [cdi], [kubelet], [device-plugin] and [cpuset] tables are read by their
// modifiers' own readers (built-in defaults while the config is invalid),
// so the cdi and kubelet checks look where a create would.
struct Loaded {
  bool valid = false;
  Settings settings;
  std::vector<std::string> modifiers_on;
  std::vector<requirements::Rule> rules;
  std::optional<std::vector<std::string>> cdi_dirs;  // nullopt: [cdi] enabled = false
  std::string cdi_cache_dir;                         // "": the parse cache is off
  KubeletKeys kubelet;                               // [kubelet]
  device_plugin::Config device_plugin;               // read whether enabled or not, over [kubelet]
  cpuset::Config cpuset;                             // read whether enabled or not, over [kubelet]
  std::vector<env_devices::Entry> env_devices;       // when the modifier is on
  hotplug::Config hotplug;                           // read whether enabled or not
  NriSettings nri;                                   // [nri], for the nri check
  bool nri_table = false;                            // the file has an [nri] table: the plugin mode is meant
  bool on(std::string_view modifier) const;
};

// HandlerCgroup is how one containerd handler whose BinaryName is this
// binary makes container cgroups: options.SystemdCgroup, merged over the
// files containerd loads (containerd's default: false, cgroupfs). With it
// true runc makes each container's cgroup a systemd scope.
struct HandlerCgroup {
  std::string handler;
  bool systemd = false;
  std::string at;  // "SystemdCgroup = true, FILE line N", or "SystemdCgroup unset: containerd's default, false"
};
using HandlerCgroups = std::vector<HandlerCgroup>;

Check check_config(const std::filesystem::path& file, Loaded& loaded);
Check check_runtime(const Loaded& loaded);
Check check_cdi(const Host& host, const Loaded& loaded);
Check check_kubelet(const Host& host, const Loaded& loaded);
Check check_kernel(const Host& host);
Check check_capabilities(const Host& host, const Loaded& loaded);
// check_hotplug takes the handlers' cgroups from check_containerd: under
// systemd, whether a daemon-reload can touch container cgroups depends on it.
Check check_hotplug(const Host& host, const Loaded& loaded, const HandlerCgroups& handlers);
Check check_user_namespaces(const Host& host, const Loaded& loaded);
// check_nri says whether specshim-nri is registered with the runtime (its
// registration file under [nri] state-dir, its process alive), and warns
// when it is meant to run ([nri] in the config) and is not: NRI fails open.
Check check_nri(const Host& host, const Loaded& loaded);
// check_containerd reads containerd's config (config_file, then the files
// it imports, as containerd does) for handlers running this binary, their
// cgroup driver against the kubelet's, and containerd's own CRI CDI
// injection against the cdi modifier's spec dirs. It fills handlers.
Check check_containerd(const Host& host, const Loaded& loaded, const std::filesystem::path& self_exe,
                       const std::filesystem::path& config_file, HandlerCgroups& handlers);

// render_text and render_json print the report (render_text lists details
// when verbose); problems() counts fails.
std::string render_text(const std::vector<Check>& checks, bool verbose = false);
std::string render_json(const std::vector<Check>& checks);
int problems(const std::vector<Check>& checks);

// count says "1 device", "2 devices".
std::string count(std::size_t n, std::string_view noun);

// connect_unix reports whether a unix stream socket accepts a connection:
// empty on success, else why not ("connection refused").
std::string connect_unix(const std::filesystem::path& socket);

// Output is what a probe command printed (stdout and stderr together).
struct Output {
  int exit_code = -1;  // -1: killed or did not start
  std::string text;
};

// probe runs argv (run_command, stderr merged) for a check, waiting at most
// 5 s: a command that does not start or answer reads as exit -1, with why in
// its text.
Output probe(const std::vector<std::string>& argv);

}  // namespace specshim::shim::doctor
