// SPDX-License-Identifier: Apache-2.0
// specshim doctor's nri check against fake host trees: whether specshim-nri
// is registered (its registration file under [nri] state-dir, its process in
// the host's /proc), and a warning when it is meant to run and is not.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "doctor_host.h"

using namespace specshim::test;
using nlohmann::json;

namespace {

// registered writes the file specshim-nri writes on Configure, for pid.
void registered(const FakeHost& h, int pid) {
  write_file(h.root / "run/specshim/nri/.registered", json{{"pid", pid},
                                                           {"plugin", "10-specshim"},
                                                           {"runtime", "containerd 2.1.9"},
                                                           {"nri_minor", 8},
                                                           {"since", 1764979200}}
                                                          .dump());
}

}  // namespace

TEST_CASE("doctor nri: not in use without an [nri] table or a registration") {
  FakeHost h;
  h.write_config("");
  REQUIRE_THAT(h.report(), HasFinding("nri", "info", "specshim-nri is not in use here"));
}

TEST_CASE("doctor nri: an [nri] table without a registered plugin warns that NRI fails open") {
  FakeHost h;
  h.write_config("[nri]\nindex = \"20\"\n");
  REQUIRE_THAT(h.report(), HasFinding("nri", "warn",
                                      "[nri] is configured, but specshim-nri is not registered with the runtime (no "
                                      "/run/specshim/nri/.registered): while it is not registered, the runtime "
                                      "creates containers without its chain (NRI fails open)"));
}

TEST_CASE("doctor nri: a registration whose process is specshim-nri is the plugin mode, running") {
  FakeHost h;
  h.write_config("[nri]\nshim-handlers = [\"specshim\", \"runc-specshim\"]\n");
  registered(h, 4242);
  write_file(h.root / "proc/4242/comm", "specshim-nri\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("nri", "ok",
                                  "specshim-nri (pid 4242) registered as 10-specshim with containerd 2.1.9 (NRI v0.8) "
                                  "since 2025-12-06T00:00:00Z: it runs the chain for the pods of every handler but "
                                  "specshim, runc-specshim"));
  REQUIRE_THAT(report, HasFinding("nri", "info", "NRI fails open"));
}

TEST_CASE("doctor nri: a registration left by a plugin that is gone warns") {
  FakeHost h;
  h.write_config("");
  registered(h, 4242);
  write_file(h.root / "proc/4242/comm", "bash\n");  // the pid now belongs to another process
  REQUIRE_THAT(h.report(), HasFinding("nri", "warn",
                                      "specshim-nri registered as 10-specshim with containerd 2.1.9 at "
                                      "2025-12-06T00:00:00Z, but its process (pid 4242) is gone"));
}

TEST_CASE("doctor nri: NVIDIA's runtime that accepts the variable from unprivileged containers warns") {
  FakeHost h;
  h.write_config("[nri]\n");
  // Not installed: nothing said of it.
  REQUIRE_THAT(h.report(), !HasFinding("nri", "warn", "NVIDIA's runtime"));
  // Installed with its defaults: the variable is accepted.
  write_file(h.root / "etc/nvidia-container-runtime/config.toml",
             "[nvidia-container-cli]\nldconfig = \"@/sbin/ldconfig\"\n");
  REQUIRE_THAT(h.report(),
               HasFinding("nri", "warn",
                          "NVIDIA's runtime accepts NVIDIA_VISIBLE_DEVICES from unprivileged containers "
                          "(accept-nvidia-visible-devices-envvar-when-unprivileged unset, true by default"));
  write_file(h.root / "etc/nvidia-container-runtime/config.toml",
             "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n");
  REQUIRE_THAT(h.report(), HasFinding("nri", "warn", "envvar-when-unprivileged = true in"));
  write_file(h.root / "etc/nvidia-container-runtime/config.toml",
             "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
             "accept-nvidia-visible-devices-as-volume-mounts = true\n");
  json report = h.report();
  REQUIRE_THAT(report, HasFinding("nri", "ok", "NVIDIA's runtime reads NVIDIA_VISIBLE_DEVICES only from privileged"));
  REQUIRE_THAT(report, !HasFinding("nri", "warn", "NVIDIA's runtime"));
}

TEST_CASE("doctor nri: NVIDIA's runtime is not judged where the plugin is not in use") {
  FakeHost h;
  h.write_config("");
  write_file(h.root / "etc/nvidia-container-runtime/config.toml", "");
  REQUIRE_THAT(h.report(), !HasFinding("nri", "warn", "NVIDIA's runtime"));
}
