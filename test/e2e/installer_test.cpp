// SPDX-License-Identifier: Apache-2.0
// packaging/install-on-host.sh --handler runc (the default-handler install,
// seed 002) against each tier's real containerd: the installer edits a
// node's containerd config on a temporary host root, containerd starts on the
// result, a pod without a RuntimeClass runs through specshim, and
// --uninstall gives back the original bytes.
#include <catch2/catch.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kUid = 10001;

// Installer runs install-on-host.sh on the node root of a harness, from the
// package layout staged from this build as the .deb lays it out.
struct Installer {
  Installer() {
    auto staged = specshim::test::run_process({E2E_CMAKE, "--install", E2E_BUILD_DIR, "--prefix", "/usr"},
                                              {{"DESTDIR", stage.path().string()}});
    if (staged.exit_code != 0) throw std::runtime_error("cmake --install: " + staged.out + staged.err);
  }
  specshim::test::ProcessResult run(const Containerd& c, std::vector<std::string> args) const {
    args.insert(args.begin(), {"/bin/bash", E2E_SOURCE_DIR "/packaging/install-on-host.sh"});
    // BinaryName is a node path: the built binary's own path, so that the
    // containerd here (on the real /) runs the same bytes the installer copied.
    args.insert(args.end(), {"--binary-path", SPECSHIM_BINARY, "--no-restart"});
    return specshim::test::run_process(
        args, {{"SPECSHIM_HOST_ROOT", c.node_root().string()}, {"SPECSHIM_SOURCE_ROOT", stage.path().string()}});
  }
  specshim::test::TempDir stage;
};

}  // namespace

TEST_CASE(
    "install-on-host.sh --handler runc: a pod on containerd's default handler runs through specshim and "
    "--uninstall restores the config bytes") {
  Installer installer;
  std::string original, installed_log;
  Setup setup;
  setup.handler = false;  // the node has only its runc handler
  setup.on_node = true;
  setup.install = [&](const Containerd& c) {
    original = specshim::test::read_file(c.config_file());
    auto r = installer.run(c, {"--handler", "runc"});
    installed_log = r.out + r.err;
    if (r.exit_code != 0) throw std::runtime_error("install-on-host.sh --handler runc failed:\n" + installed_log);
  };
  Containerd c(setup);
  INFO(installed_log << c.diagnostics());
  // containerd started on the installed config; its default handler is now specshim.
  Pod pod(c, "default-handler-pod", {}, "");
  auto cfg = container_config("main", "id -un; id -u");
  cfg.mutable_linux()->mutable_security_context()->mutable_run_as_user()->set_value(kUid);
  auto ran = pod.run(cfg);
  const std::string log = log_text(ran.log);
  INFO(log);
  CHECK(ran.status.exit_code() == 0);
  CHECK(log == "stdout: user10001\nstdout: 10001\n");  // the passwd modifier ran
  for (const auto& id : {pod.id, ran.id}) CHECK_THAT(c.specshim_log(), Catch::Contains("create " + id + ": "));

  auto r = installer.run(c, {"--uninstall"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(specshim::test::read_file(c.config_file()) == original);
}
