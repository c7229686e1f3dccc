// SPDX-License-Identifier: Apache-2.0
// specshim nri-hook: the OCI createRuntime hook specshim-nri adds to a
// container (docs/nri.md, "passwd without a rootfs"). The runtime runs it
// with the container's state on stdin once the bundle and rootfs exist; it
// fills the passwd and group copies the plugin mounted (passwd_copies.h).
#include <cstdio>
#include <iostream>

#include "argv.h"
#include "hook_state.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/modifiers/create.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/passwd_copies.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {

int nri_hook_main(const std::vector<std::string>& argv) {
  VerbCli cli(
      "Fill the passwd and group copies specshim-nri mounted into a container (an OCI createRuntime hook; "
      "the container's state on stdin).",
      "specshim nri-hook");
  std::string config_file = config::path_from_env().string();
  std::string state_dir;
  cli.option("--config", config_file, "specshim config file").show_default();
  cli.option("--state-dir", state_dir, "[nri] state-dir of the plugin that added the hook").required();
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  std::string id = "?";
  try {
    HookState state = read_hook_state();
    id = state.id;
    const std::string& bundle = state.bundle;
    NriSettings plugin;  // the plugin that added the hook: its state dir
    plugin.state_dir = state_dir;
    std::filesystem::path copies = plugin.container_dir(id);
    ConfigFile config = read_config_file(config_file);
    create::BundleDir dir{bundle};
    auto root = config.doc.root();
    auto passwd_table = root.section("passwd");
    passwd::fill_copies(passwd_table, read_opt_out_annotation(root), dir.read(), bundle, copies);
    return 0;
  } catch (const std::exception& e) {
    // runc puts a failed hook's stderr in its error, which containerd returns
    // from StartContainer; crun 1.28 names only the hook and its exit code.
    std::cerr << "specshim nri-hook: container " << id << ": " << describe(e) << "\n";
    return 1;
  }
}

}  // namespace specshim::shim
