// SPDX-License-Identifier: Apache-2.0
// specshim-nri's Service (specshim/nri/plugin.h) behind a real session, the
// runtime played by the test (nri_test_support.h): what a pod writes is
// tenant input, and a hostile CreateContainer fails alone while the plugin
// stays registered and serves the next one.
#include <catch2/catch.hpp>
#include <string>

#include "test_support.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/nri/plugin.h"
#include "tempdir.h"

using namespace nri_test;
using specshim::test::TempDir;

namespace {

// direct_config is a chain of device-plugin alone, whose one resource takes
// direct requests, with the resource's annotation passed from the pod.
std::string direct_config(const TempDir& tmp) {
  return "[chain]\norder = [\"device-plugin\"]\n\n[nri]\nstate-dir = \"" + (tmp / "state").string() +
         "\"\npod-annotations = [\"nvidia.com/gpu\"]\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" +
         (tmp / "kubelet").string() +
         "\"\n\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\nproviders = [\"direct\"]\n";
}

}  // namespace

TEST_CASE("nri plugin: a pod's direct request nested 60,000 deep fails its CreateContainer, the next is served") {
  TempDir tmp;
  const auto config_file = tmp / "config.toml";
  specshim::test::write_file(config_file, direct_config(tmp));
  specshim::nri::Plugin plugin(config_file, specshim::read_config_file(config_file).nri);
  Runtime runtime(plugin);
  runtime.register_plugin();
  payload_of<api::ConfigureResponse>(runtime.call(1, "Configure", configure_request()));

  api::CreateContainerRequest hostile = create_request("c1");
  hostile.mutable_pod()->set_namespace_("team-a");
  hostile.mutable_pod()->set_name("evil");
  (*hostile.mutable_pod()->mutable_annotations())["nvidia.com/gpu"] = std::string(60000, '[') + std::string(60000, ']');
  auto refused = runtime.call(3, "CreateContainer", hostile);
  CHECK(refused.status().code() == specshim::nri::kFailedPrecondition);
  CHECK_THAT(refused.status().message(),
             Catch::StartsWith("specshim: container `c1-name` of pod `team-a/evil`: ") &&
                 Catch::Contains("annotation `nvidia.com/gpu`: nested deeper than 512 levels"));
  CHECK(refused.status().message().size() <= specshim::kMessageMax);
  CHECK(refused.payload().empty());

  // Still registered, on the same connection: the next container is served.
  auto next = payload_of<api::CreateContainerResponse>(runtime.call(5, "CreateContainer", create_request("c2")));
  CHECK_FALSE(next.has_adjust());
  CHECK(runtime.ended() == "the runtime closed the connection");
}
