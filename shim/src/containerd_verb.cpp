// SPDX-License-Identifier: Apache-2.0
// specshim containerd configure|unconfigure|check: the command line of the
// node installer (shim/src/containerd/), parsed here; the engine does the rest.
#include <cstdio>

#include "containerd/install.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {
namespace {

constexpr const char* kUsage =
    "usage: specshim containerd configure|unconfigure|check [options]\n"
    "\n"
    "Registers specshim with the node's containerd (what packaging/install-on-host.sh runs):\n"
    "  configure    install specshim on the node at --host-root and register the runtime handler\n"
    "               \"specshim\", or with --handler NAME make specshim the BinaryName of the\n"
    "               existing handler NAME\n"
    "  unconfigure  take back exactly what configure recorded in /var/lib/specshim/install-state\n"
    "  check        plan only: every refusal configure would make and each change it would make,\n"
    "               changing nothing; exit 0 when the node is configured as configure would leave\n"
    "               it, 1 on a refusal or error, 2 when configure would change something\n"
    "\n"
    "`specshim containerd SUBCOMMAND --help` lists the options.\n";

void options(VerbCli& cli, containerd::Options& o, bool& no_restart) {
  cli.option("--host-root", o.host_root, "the node's / as seen here").show_default();
  cli.option("--source-root", o.source_root,
             "where the package's files are: usr/bin/specshim, usr/libexec/specshim/specshim-kubelet, "
             "etc/specshim/config.toml, usr/share/specshim/containerd/containerd-{1,2}.x.toml")
      .show_default();
  cli.option("--binary-path", o.binary_path,
             "node path of the binary, used as BinaryName (/usr/bin/specshim on a node that has the .deb)")
      .show_default();
  cli.option("--containerd-config", o.containerd_config, "node path of containerd's config").show_default();
  cli.option("--config-version", o.config_version,
             "containerd config version, when it cannot be read from the config: 2 = containerd 1.6/1.7, "
             "3 = 2.0-2.2, 4 = 2.3 and later");
  cli.option("--restart-cmd", o.restart_cmd,
             "how to restart containerd (sh -c, at most 120 s). Before it, the node's containerd reads the changed "
             "config (config dump, at most 60 s); if it rejects it, the old files come back and nothing restarts")
      .show_default();
  cli.flag("--no-restart", no_restart, "change files only; print the restart command instead");
  cli.option("--handler", o.handler,
             "an existing handler of the containerd config (or runc) whose BinaryName specshim becomes; the "
             "default, specshim, adds the new handler \"specshim\"")
      .show_default();
  cli.flag("--chain", o.chain, "with --handler: keep the handler's old BinaryName as specshim's [runtime] path");
  cli.option("--config", o.config_file,
             "the site's specshim config, installed as /etc/specshim/config.toml in place of the node's (kept as a "
             "backup); refused, changing nothing, when this specshim cannot load it");
  cli.option("--check-cmd", o.check_cmd,
             "the node's containerd, a command line split on blanks (default: chroot HOST_ROOT containerd); "
             "config dump at most 60 s");
  cli.option("--version-cmd", o.version_cmd,
             "prints the node's containerd version when there is no config file (default: chroot HOST_ROOT "
             "containerd --version; at most 30 s)");
}

}  // namespace

int containerd_main(const std::vector<std::string>& argv) {
  if (argv.size() < 3 || argv[2] == "--help" || argv[2] == "-h" || argv[2] == "help") {
    std::fputs(kUsage, argv.size() < 3 ? stderr : stdout);
    return argv.size() < 3 ? 1 : 0;
  }
  const std::string& sub = argv[2];
  if (sub != "configure" && sub != "unconfigure" && sub != "check") {
    std::fputs(kUsage, stderr);
    std::fprintf(stderr, "specshim-install: error: unknown subcommand `%s`\n", sub.c_str());
    return 1;
  }
  containerd::Run run;
  bool no_restart = false;
  VerbCli cli(sub == "check"       ? "Plan only: what `specshim containerd configure` would refuse or change."
              : sub == "configure" ? "Install specshim on the node and register it with containerd."
                                   : "Take back what `specshim containerd configure` recorded.",
              "specshim containerd " + sub);
  options(cli, run.opt, no_restart);
  std::vector<std::string> rest(argv);
  rest.erase(rest.begin() + 1);
  if (int rc = cli.parse(rest); rc >= 0) return rc == 0 ? 0 : 1;
  if (no_restart) run.opt.restart_cmd.clear();
  run.dry = sub == "check";
  try {
    containerd::validate(run.opt);
    if (sub == "unconfigure") {
      containerd::unconfigure(run);
    } else {
      containerd::configure(run);
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "specshim-install: error: %s\n", describe(e).c_str());
    return 1;
  }
  if (!run.dry) return 0;
  if (run.planned.empty()) {
    run.log("check: the node is configured as configure would leave it");
    return 0;
  }
  run.log("check: configure would make " + std::to_string(run.planned.size()) + " change(s)");
  return 2;
}

}  // namespace specshim::shim
