// SPDX-License-Identifier: Apache-2.0
// specshim doctor: run every check, print the report, exit 1 on problems.
#include "doctor/doctor.h"

#include <cstdlib>
#include <iostream>
#include <utility>

#include "verb_cli.h"
#include "verbs.h"

#ifndef SPECSHIM_VERSION
#define SPECSHIM_VERSION "0.0.0"
#endif

namespace specshim::shim {

int doctor_main(const std::vector<std::string>& argv) {
  VerbCli cli("Check this node for what specshim needs; exits 1 when something is wrong.", "specshim doctor");
  std::string config_file;
  std::string host_root = "/";
  std::string containerd_config;
  bool json = false;
  bool verbose = false;
  cli.option("--config", config_file,
             "specshim config file (default: $SPECSHIM_CONFIG or " + std::string(config::kDefaultPath) +
                 " under --host-root)");
  cli.option("--host-root", host_root, "read host files (containerd, CDI, kubelet, /proc) under this directory")
      .existing_directory()
      .show_default();
  cli.option("--containerd-config", containerd_config,
             "containerd's config file, whose imports are read too (default: /etc/containerd/config.toml under "
             "--host-root)");
  cli.flag("--json", json, "print the report as JSON");
  cli.flag("-v,--verbose", verbose, "list what findings counted (device names and IDs; always in --json)");
  // 1 means "problems found"; a bad command line is 2, --help is 0.
  if (int rc = cli.parse(argv); rc >= 0) return rc == 0 ? 0 : 2;

  doctor::Host host{host_root};
  std::filesystem::path config_path = config_file;
  if (config_path.empty()) {
    const char* env = std::getenv("SPECSHIM_CONFIG");
    config_path = env && *env ? std::filesystem::path(env) : host.path(config::kDefaultPath);
  }
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);

  doctor::Loaded loaded;
  std::vector<doctor::Check> checks;
  checks.push_back(doctor::check_config(config_path, loaded));
  // containerd's check runs before hotplug's, which needs its handlers'
  // cgroup driver, and is reported last.
  doctor::HandlerCgroups handlers;
  doctor::Check containerd = doctor::check_containerd(
      host, loaded, self.empty() ? "/proc/self/exe" : self,
      containerd_config.empty() ? host.path("/etc/containerd/config.toml") : std::filesystem::path(containerd_config),
      handlers);
  checks.push_back(doctor::check_runtime(loaded));
  checks.push_back(doctor::check_cdi(host, loaded));
  checks.push_back(doctor::check_kubelet(host, loaded));
  checks.push_back(doctor::check_kernel(host));
  checks.push_back(doctor::check_capabilities(host, loaded));
  checks.push_back(doctor::check_hotplug(host, loaded, handlers));
  checks.push_back(doctor::check_user_namespaces(host, loaded));
  checks.push_back(doctor::check_nri(host, loaded));
  checks.push_back(std::move(containerd));

  if (json)
    std::cout << doctor::render_json(checks);
  else
    std::cout << "specshim " SPECSHIM_VERSION " doctor\n\n" << doctor::render_text(checks, verbose);
  return doctor::problems(checks) ? 1 : 0;
}

}  // namespace specshim::shim
