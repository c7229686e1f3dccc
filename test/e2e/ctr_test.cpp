// SPDX-License-Identifier: Apache-2.0
// `ctr run --runc-binary specshim`: containerd's task API with specshim in
// runc's place, through containerd-shim-runc-v2.
#include <catch2/catch.hpp>

#include "containerd_harness.h"
#include "e2e_util.h"

using namespace specshim::e2e;

TEST_CASE("ctr run: the container runs through specshim and its output and exit status come back") {
  Containerd c;
  const std::string id = specshim::test::unique_id("ctr-run");
  auto r = c.ctr({"--namespace", kCtrNamespace, "run", "--rm", "--runtime", "io.containerd.runc.v2", "--runc-binary",
                  SPECSHIM_BINARY, kImage, id, "/bin/sh", "-c", "echo hello-from-ctr uid=$(id -u); exit 3"});
  INFO(r.out << r.err << c.diagnostics());
  CHECK(r.out == "hello-from-ctr uid=0\n");
  CHECK(r.exit_code == 3);
  CHECK_THAT(c.specshim_log(), Catch::Contains("create " + id + ": "));

  // specshim handed every call to runc with containerd's argv, in
  // containerd's order: create, start, delete, then the one-shot cleanup.
  const std::string bundle = (c.dir() / "state/io.containerd.runtime.v2.task" / kCtrNamespace / id).string();
  const std::string flags =
      "--root /run/containerd/runc/" + std::string(kCtrNamespace) + " --log " + bundle + "/log.json --log-format json ";
  auto calls = calls_for(c.runtime_calls(), id);
  INFO(join(calls));
  REQUIRE(calls.size() >= 4);
  CHECK(calls[0] == flags + "create --bundle " + bundle + " --pid-file " + bundle + "/init.pid " + id);
  CHECK(calls[1] == flags + "start " + id);
  CHECK(in_order(calls, {flags + "delete " + id, flags + "delete --force " + id}));
}

TEST_CASE("ctr run: a create specshim refuses fails with specshim's own message") {
  Containerd c;
  c.set_specshim_config("[chain]\norder = [\"no-such-modifier\"]\n");
  const std::string id = specshim::test::unique_id("ctr-refused");
  auto r =
      c.ctr({"--namespace", kCtrNamespace, "run", "--rm", "--runc-binary", SPECSHIM_BINARY, kImage, id, "/bin/true"});
  INFO(r.out << r.err << c.diagnostics());
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("OCI runtime create failed: " + specshim_config_error(c) + tier().error_suffix));
  // runc never saw the create: only containerd's cleanup reached it.
  for (const auto& call : calls_for(c.runtime_calls(), id)) CHECK_THAT(call, !Catch::Contains(" create "));
}
