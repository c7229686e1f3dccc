// SPDX-License-Identifier: Apache-2.0
// The JSON forms of the plain kubelet types, as the specshim-kubelet helper
// sends them: PodResources with per-container CPUs, memory and DRA claims,
// and the answers of older helpers and kubelets that have none.
#include <catch2/catch.hpp>

#include "specshim/kubelet/json.h"

using namespace specshim;
using kubelet::ClaimResource;
using kubelet::ContainerAssignment;
using kubelet::PodResources;
using nlohmann::json;

namespace {

PodResources assigned_pod() {
  ContainerAssignment a;
  a.cpu_ids = {0, 1, 64};
  a.memory = {{"memory", 17179869184ull, {0}}, {"hugepages-2Mi", 18446744073709551615ull, {0, 1}}};
  a.dynamic_resources = {{"gpus",
                          "team-a",
                          {{"gpu.nvidia.com", "node-1", "gpu-0", {"k8s.gpu.nvidia.com/device=gpu-0"}, std::nullopt},
                           {"gpu.nvidia.com", "node-1", "gpu-1", {"k8s.gpu.nvidia.com/device=gpu-1"}, "share-1"}}},
                         {"empty-claim", "team-a", {}}};
  return {"team-a", "pod", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}, {"idle", {}}}, {{"main", a}}};
}

}  // namespace

TEST_CASE("PodResources with CPUs, memory and DRA claims survives its JSON form") {
  PodResources want = assigned_pod();
  json j = want;
  CHECK(json::parse(j.dump()).get<PodResources>() == want);
  const json& claim = j.at("assignments").at("main").at("dynamic_resources").at(0);
  CHECK(claim.at("claim_name") == "gpus");
  CHECK(claim.at("claim_namespace") == "team-a");
  CHECK(claim.at("claim_resources").at(0) == json{{"driver_name", "gpu.nvidia.com"},
                                                  {"pool_name", "node-1"},
                                                  {"device_name", "gpu-0"},
                                                  {"cdi_devices", {"k8s.gpu.nvidia.com/device=gpu-0"}}});
  CHECK(claim.at("claim_resources").at(1).at("share_id") == "share-1");
  CHECK(j.at("assignments").at("main").at("memory").at(1).at("size").get<std::uint64_t>() == 18446744073709551615ull);
}

TEST_CASE("ClaimResource keeps an absent share_id apart from an empty one") {
  ClaimResource absent{"d", "p", "dev", {}, std::nullopt};
  ClaimResource empty{"d", "p", "dev", {}, ""};
  CHECK_FALSE(json(absent).contains("share_id"));
  CHECK(json(empty).at("share_id") == "");
  CHECK_FALSE(json(absent).get<ClaimResource>().share_id.has_value());
  CHECK(json(empty).get<ClaimResource>().share_id == "");
  CHECK_FALSE(json::parse(R"({"driver_name": "d", "share_id": null})").get<ClaimResource>().share_id.has_value());
}

TEST_CASE("PodResources JSON without assignments (an older helper) reads as empty assignments") {
  auto got = json::parse(R"({"ns": "ns", "name": "pod", "containers": {"main": {"nvidia.com/gpu": ["GPU-a"]}}})")
                 .get<PodResources>();
  CHECK(got.containers.at("main").at("nvidia.com/gpu") == std::vector<std::string>{"GPU-a"});
  CHECK(got.assignments.empty());
  CHECK(got.assignment("main").empty());
  auto partial =
      json::parse(R"({"cpu_ids": [3], "dynamic_resources": [{"claim_name": "c"}]})").get<ContainerAssignment>();
  CHECK(partial.cpu_ids == std::vector<std::int64_t>{3});
  CHECK(partial.memory.empty());
  CHECK(partial.dynamic_resources.at(0).claim_namespace.empty());
  CHECK(partial.dynamic_resources.at(0).claim_resources.empty());
}
