// SPDX-License-Identifier: Apache-2.0
// What a runtime makes of an adjustment (nri/src/applied.h), as NRI's
// generate.Adjust does it in containerd and CRI-O, and the adjustment
// builder's refusals where that is not what the chain made: a repeated env
// key (AdjustEnv), a destination with two mounts (AdjustMounts).
#include <catch2/catch.hpp>

#include "applied.h"
#include "error_of.h"
#include "specshim/base/error.h"

namespace api = ::nri::pkg::api::v1alpha1;
using Catch::Contains;
using specshim::Json;
using specshim::nri::adjustment;
using specshim::nri::applied_env;
using specshim::nri::applied_mounts;
using specshim::nri::Level;
using specshim::test::error_of;

namespace {

api::ContainerAdjustment env_adjustment(std::initializer_list<std::pair<const char*, const char*>> kvs) {
  api::ContainerAdjustment adj;
  for (auto [k, v] : kvs) {
    auto* kv = adj.add_env();
    kv->set_key(k);
    kv->set_value(v);
  }
  return adj;
}

Json spec_with_env(Json env) {
  return {{"process", {{"args", {"sh"}}, {"env", std::move(env)}}}};
}

Level v08() {
  Level l;
  l.runtime = "containerd 2.1.9";
  l.nri_minor = 8;
  return l;
}

std::string refusal(const Json& before, const Json& after, std::string_view by = "env-devices") {
  return error_of<specshim::Error>([&] { adjustment(before, after, v08(), by); });
}

}  // namespace

TEST_CASE("nri applied_env: the first entry of an adjusted key gets the value, later entries their own over it") {
  Json env = {"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=GPU-a", "X=1", "NVIDIA_VISIBLE_DEVICES=all"};
  // The repeated key ends with its last original value, in its first place.
  CHECK(applied_env(env, env_adjustment({{"NVIDIA_VISIBLE_DEVICES", "void"}})) ==
        Json({"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all", "X=1"}));
  // A removal removes the first entry only: the later one is added again.
  CHECK(applied_env(env, env_adjustment({{"-NVIDIA_VISIBLE_DEVICES", ""}})) ==
        Json({"PATH=/bin", "X=1", "NVIDIA_VISIBLE_DEVICES=all"}));
  // A key seen once is replaced in place; a new key is appended; an entry without '=' goes.
  CHECK(applied_env(Json({"A=1", "NOEQUALS", "B=2"}), env_adjustment({{"A", "9"}, {"C", "3"}})) ==
        Json({"A=9", "B=2", "C=3"}));
  // No env adjustment: the list is left as it is, repeats and all.
  CHECK(applied_env(env, api::ContainerAdjustment()) == env);
}

TEST_CASE("nri applied_mounts: the first mount at a destination is replaced, then all sorted by depth") {
  Json mounts = Json::parse(R"([{"destination": "/etc/passwd", "source": "/a"},
                                {"destination": "/proc", "type": "proc", "source": "proc"},
                                {"destination": "/etc/passwd", "source": "/b"}])");
  api::ContainerAdjustment adj;
  auto* m = adj.add_mounts();
  m->set_destination("/etc/passwd");
  m->set_source("/mine");
  m->add_options("ro");
  CHECK(applied_mounts(mounts, adj) == Json::parse(R"([{"destination": "/proc", "type": "proc", "source": "proc"},
                                                       {"destination": "/etc/passwd", "source": "/b"},
                                                       {"destination": "/etc/passwd", "source": "/mine",
                                                        "options": ["ro"]}])"));
  CHECK(applied_mounts(mounts, api::ContainerAdjustment()) == mounts);
}

TEST_CASE("nri adjustment: a repeated env key whose final value the chain changes is refused, naming it") {
  // The device plugin's list, then the pod's `all`: env-devices' void would end as `all`.
  Json before = spec_with_env({"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=GPU-a", "NVIDIA_VISIBLE_DEVICES=all"});
  Json after = before;
  after["process"]["env"].push_back("NVIDIA_VISIBLE_DEVICES=void");
  CHECK_THAT(refusal(before, after),
             Contains("the chain (env-devices) changed process.env (NVIDIA_VISIBLE_DEVICES), which NRI on containerd "
                      "2.1.9 cannot pass on: the spec has 2 entries of it, and NRI's AdjustEnv gives the first the "
                      "new value, then writes each later entry's own value over it: the process would get \"all\" "
                      "where the chain's spec has \"void\""));
  // HAMi's limit under protect-env = "drop": the pod's override would win.
  Json hami = spec_with_env({"CUDA_DEVICE_MEMORY_LIMIT_0=4000m", "CUDA_DEVICE_MEMORY_LIMIT_0=80000m"});
  Json dropped = spec_with_env({"CUDA_DEVICE_MEMORY_LIMIT_0=4000m"});
  CHECK_THAT(refusal(hami, dropped, "device-plugin"), Contains("process.env (CUDA_DEVICE_MEMORY_LIMIT_0)"));
  // Removing a repeated key cannot be passed on either.
  CHECK_THAT(refusal(before, spec_with_env({"PATH=/bin"})),
             Contains("the process would get \"all\" where the chain's spec has no such variable"));
}

TEST_CASE("nri adjustment: a repeated key the runtime ends with the chain's value anyway passes") {
  Json before = spec_with_env({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=void"});
  Json after = before;
  after["process"]["env"].push_back("OTHER=1");
  auto adj = adjustment(before, after, v08());
  CHECK(adj.env_size() == 1);
  // A key seen once takes the adjustment's value.
  Json once = spec_with_env({"NVIDIA_VISIBLE_DEVICES=all"});
  Json voided = once;
  voided["process"]["env"].push_back("NVIDIA_VISIBLE_DEVICES=void");
  CHECK(adjustment(once, voided, v08()).env(0).value() == "void");
}

TEST_CASE("nri adjustment: a destination with two mounts, of which NRI would replace only the first, is refused") {
  Json before = Json::parse(R"({"mounts": [{"destination": "/etc/passwd", "source": "/a"},
                                            {"destination": "/etc/passwd", "source": "/b"}]})");
  Json after = Json::parse(R"({"mounts": [{"destination": "/etc/passwd", "source": "/mine"}]})");
  CHECK_THAT(refusal(before, after, "passwd"),
             Contains("changed mounts (/etc/passwd), which NRI on containerd 2.1.9 cannot pass on: NRI's "
                      "AdjustMounts replaces the first mount at a destination and keeps the rest: the runtime would "
                      "mount 2 there where the chain's spec has 1"));
}
