// SPDX-License-Identifier: Apache-2.0
// env-devices' pure pieces: the list grammar (NVIDIA's runtime's rules, its
// duplicate bug aside), names to CDI, the config, and what a stored answer
// grants. The whole path (checkpoint, trust, cdi) is in the golden cases
// test/golden/env-devices and the integration tests.
#include "specshim/modifiers/env_devices.h"

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"

using namespace specshim;
using namespace specshim::env_devices;
using Catch::Contains;
using test::error_of;
using What = DeviceList::What;

namespace {

DeviceList names(std::vector<std::string> n) {
  return {What::names, std::move(n)};
}

std::vector<Entry> entries_of(const std::string& text) {
  auto doc = config::Document::parse(text, "test.toml");
  auto root = doc.root();
  auto only = root.only("env-devices");
  auto e = read_entries(only);
  only.finish();
  return e;
}

Entry nvidia() {
  return entries_of(
             "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
             "volume-mounts = \"/var/run/nvidia-container-devices/\"\n")
      .front();
}

}  // namespace

TEST_CASE("env-devices: a value parses as NVIDIA's runtime reads it") {
  struct Row {
    std::string value;
    DeviceList want;
  };
  std::vector<Row> rows = {
      {"", {}},
      {" , ", {}},
      {"void", {}},
      {"0,void", {}},
      {"all,void", {}},  // void anywhere wins
      {"all", {What::all, {}}},
      {"0,all", {What::all, {}}},
      {"all,none", {What::all, {}}},
      {"none", {What::none, {}}},
      {"none,0", {What::none, {}}},
      {"0,none", {What::none, {}}},
      {"ALL", names({"ALL"})},  // case-sensitive: a name
      {"0, 1", names({"0", "1"})},
      {" 0 ,\t1 ", names({"0", "1"})},
      {"0,,1,", names({"0", "1"})},
      {"GPU-a,GPU-a", names({"GPU-a"})},  // NCT makes this ["", "GPU-a"], i.e. no GPU
      {"0,1,0", names({"0", "1"})},
      {"0:1,MIG-x", names({"0:1", "MIG-x"})},
      {"nvidia.com/gpu=0,1", names({"nvidia.com/gpu=0", "1"})},
      {"/var/run/nvidia-container-devices", names({"/var/run/nvidia-container-devices"})},
  };
  for (const auto& row : rows) {
    CAPTURE(row.value);
    REQUIRE(parse_device_list(row.value) == row.want);
  }
}

TEST_CASE("env-devices: a list longer than any node's is refused") {
  std::string value;
  for (std::size_t i = 0; i <= kMaxNames; ++i) value += std::to_string(i) + ",";
  REQUIRE_THAT(error_of<Error>([&] { parse_device_list(value); }), Contains("more than 1024 device names"));
  value.resize(value.rfind(std::to_string(kMaxNames)));
  REQUIRE(parse_device_list(value).names.size() == kMaxNames);
}

TEST_CASE("env-devices: a value parses as Ascend's runtime reads it") {
  struct Row {
    std::string value;
    DeviceList want;
  };
  std::vector<Row> rows = {
      {"", {}},
      {" , ", {}},
      {"void", {}},
      {"0,void", {}},
      {"3", names({"3"})},
      {"0-3,5", names({"0", "1", "2", "3", "5"})},
      {" 5 , 0-1 ", names({"0", "1", "5"})},  // ascending, as Ascend's runtime sorts
      {"2-2,2,02", names({"2"})},             // each id once; 02 is 2
      {"Ascend910-0,Ascend910-3", names({"0", "3"})},
      {"Ascend310P-1", names({"1"})},
      {"Ascend310B-1,Ascend310B-0", names({"0", "1"})},
      {"npu-4,npu-1", names({"1", "4"})},
      {"npu-2,Ascend910-0,1", names({"0", "1", "2"})},
  };
  for (const auto& row : rows) {
    CAPTURE(row.value);
    REQUIRE(parse_ascend_list(row.value) == row.want);
  }
  struct Bad {
    std::string value;
    std::string want;
  };
  std::vector<Bad> bad = {
      {"all", "\"all\" is not an NPU id, a range of ids (0-3) or a name (Ascend910-0, npu-0)"},
      {"none", "is not an NPU id"},
      {"3-1", "\"3-1\" is a range whose first id is above its last"},
      {"0-", "is not an NPU id"},
      {"-1", "is not an NPU id"},
      {"1-2-3", "is not an NPU id"},
      {"Ascend910", "is not an NPU id"},
      {"Ascend920-0", "is not an NPU id"},
      {"Ascend910-x", "is not an NPU id"},
      {"npu-", "is not an NPU id"},
      {"12345", "is not an NPU id"},
      {"GPU-4a3b", "is not an NPU id"},
      {"Ascend910-0,Ascend310P-1", "names an Ascend310P after Ascend910: one list names one chip type"},
  };
  for (const auto& row : bad) {
    CAPTURE(row.value);
    REQUIRE_THAT(error_of<Error>([&] { parse_ascend_list(row.value); }), Contains(row.want));
  }
  REQUIRE_THAT(error_of<Error>([&] { parse_ascend_list("0-1024"); }), Contains("more than 1024 device names"));
  REQUIRE(parse_ascend_list("0-1023").names.size() == kMaxNames);
}

TEST_CASE("env-devices: the last entry counts, but with Ascend's grammar an entry listing nothing is passed over") {
  Spec spec = Spec::parse(
      R"({"process":{"env":["ASCEND_VISIBLE_DEVICES=0,1","PATH=/bin","ASCEND_VISIBLE_DEVICES= , ","X=1"]}})");
  REQUIRE(value_of(Grammar::nvidia, spec, "ASCEND_VISIBLE_DEVICES") == " , ");
  REQUIRE(value_of(Grammar::ascend, spec, "ASCEND_VISIBLE_DEVICES") == "0,1");
  REQUIRE(value_of(Grammar::ascend, spec, "NVIDIA_VISIBLE_DEVICES") == std::nullopt);
  Spec blank = Spec::parse(R"({"process":{"env":["ASCEND_VISIBLE_DEVICES="]}})");
  REQUIRE(value_of(Grammar::ascend, blank, "ASCEND_VISIBLE_DEVICES") == std::nullopt);
}

TEST_CASE("env-devices: the vendor table gives a known variable its grammar and its `after`") {
  REQUIRE(nvidia().grammar == Grammar::nvidia);
  Entry ascend = entries_of("[[env-devices]]\nenv = \"ASCEND_VISIBLE_DEVICES\"\nkind = \"ascend.com/npu\"\n").front();
  REQUIRE(ascend.grammar == Grammar::ascend);
  REQUIRE(ascend.after == After::keep);
  REQUIRE(ascend.resources == std::vector<std::string>{"huawei.com/Ascend*"});
  REQUIRE(ascend.counts("huawei.com/Ascend910"));
  REQUIRE(ascend.counts("huawei.com/Ascend310P"));
  Entry amd = entries_of("[[env-devices]]\nenv = \"AMD_VISIBLE_DEVICES\"\nkind = \"amd.com/gpu\"\n").front();
  REQUIRE(amd.grammar == Grammar::nvidia);
  REQUIRE(amd.after == After::void_value);
  Entry set = entries_of(
                  "[[env-devices]]\nenv = \"ASCEND_VISIBLE_DEVICES\"\nkind = \"ascend.com/npu\"\n"
                  "after = \"void\"\n[[env-devices]]\nenv = \"NPU_LIST\"\nkind = \"ascend.com/npu\"\n"
                  "grammar = \"ascend\"\n")
                  .front();
  REQUIRE(set.after == After::void_value);
  REQUIRE(
      entries_of("[[env-devices]]\nenv = \"NPU_LIST\"\nkind = \"a.com/b\"\ngrammar = \"ascend\"\n").front().grammar ==
      Grammar::ascend);
}

TEST_CASE("env-devices: Ascend's device plugin grants the ids of its env, whatever its device specs and mounts") {
  Entry e = entries_of("[[env-devices]]\nenv = \"ASCEND_VISIBLE_DEVICES\"\nkind = \"ascend.com/npu\"\n").front();
  Grant g{.resource = "huawei.com/Ascend910",
          .envs = {{"ASCEND_RUNTIME_OPTIONS", ""}, {"ASCEND_VISIBLE_DEVICES", "2,3"}},
          .mounts = {"/usr/local/Ascend/driver"}};
  REQUIRE(grant_of(e, g).names == std::vector<std::string>{"ascend.com/npu=2", "ascend.com/npu=3"});
  REQUIRE(grant_of(e, {.envs = {{"ASCEND_VISIBLE_DEVICES", "Ascend910-0"}}}).names ==
          std::vector<std::string>{"ascend.com/npu=0"});
  REQUIRE(grant_of(e, {.envs = {{"ASCEND_VISIBLE_DEVICES", "all"}}}).names.empty());  // not Ascend's: no grant
}

TEST_CASE("env-devices: bare names take the kind, qualified names stay as they are") {
  REQUIRE(qualify("nvidia.com/gpu", "0") == "nvidia.com/gpu=0");
  REQUIRE(qualify("nvidia.com/gpu", "GPU-4a3b") == "nvidia.com/gpu=GPU-4a3b");
  REQUIRE(qualify("nvidia.com/gpu", "0:1") == "nvidia.com/gpu=0:1");
  REQUIRE(qualify("nvidia.com/gpu", "k8s.device-plugin.nvidia.com/gpu=GPU-a") ==
          "k8s.device-plugin.nvidia.com/gpu=GPU-a");
  std::string why;
  REQUIRE(qualify("nvidia.com/gpu", "MIG-GPU-x/1/0", &why).empty());
  REQUIRE_FALSE(why.empty());
  REQUIRE(qualify("nvidia.com/gpu", "bad=", &why).empty());
  REQUIRE(qualify("nvidia.com/gpu", "-x", &why).empty());
}

TEST_CASE("env-devices: entries read with their defaults, every bad key is named") {
  Entry e = nvidia();
  REQUIRE(e.env == "NVIDIA_VISIBLE_DEVICES");
  REQUIRE(e.volume_mounts == "/var/run/nvidia-container-devices");  // cleaned
  REQUIRE(e.resources == std::vector<std::string>{"nvidia.com/gpu"});
  REQUIRE(e.on_excess == OnExcess::fail);
  REQUIRE(e.privileged == Trust::honour);
  REQUIRE(e.outside_kubernetes == Outside::honour);
  REQUIRE(e.after == After::void_value);
  REQUIRE(e.scope == Scope::host);
  REQUIRE(e.kubelet_root == "/var/lib/kubelet");
  REQUIRE(entries_of("").empty());

  const std::string head = "[[env-devices]]\nenv = \"X\"\nkind = \"a.com/b\"\n";
  struct Row {
    std::string text;
    std::string want;
  };
  std::vector<Row> rows = {
      {"[[env-devices]]\nkind = \"a.com/b\"\n", "`env-devices[0].env`"},
      {"[[env-devices]]\nenv = \"1X\"\nkind = \"a.com/b\"\n", "needs the variable's name"},
      {"[[env-devices]]\nenv = \"X\"\n", "needs the CDI kind"},
      {"[[env-devices]]\nenv = \"X\"\nkind = \"gpu\"\n", "is not a CDI kind"},
      {"[[env-devices]]\nenv = \"X\"\nkind = \"a.com/-b\"\n", "is not a CDI kind"},
      {head + "volume-mounts = \"rel\"\n", "must be an absolute directory path"},
      {head + "volume-mounts = \"/\"\n", "must be an absolute directory path"},
      {head + "resources = [\"gpu\"]\n", "is not a resource name"},
      {head + "on-excess = \"drop\"\n", "want one of \"fail\", \"clamp\""},
      {head + "privileged = \"yes\"\n", "want one of \"honour\", \"check\""},
      {head + "outside-kubernetes = \"fail\"\n", "want one of \"honour\", \"ignore\""},
      {head + "after = \"unset\"\n", "want one of \"void\", \"keep\""},
      {head + "scope = \"local\"\n", "want one of \"host\", \"visible\""},
      {head + "grammar = \"amd\"\n", "want one of \"nvidia\", \"ascend\""},
      {head + "trusted-namespaces = [\"a b\"]\n", "is not a namespace name"},
      {head + "kubelet-root = \"var\"\n", "must be an absolute path"},
      {head + "budget-ms = 5\n", "budget-ms"},
      {head + head, "has two [[env-devices]] entries"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.text);
    REQUIRE_THAT(error_of<Error>([&] { entries_of(row.text); }), Contains(row.want));
  }
}

TEST_CASE("env-devices: resources match exactly or by a prefix ending in *") {
  Entry e = entries_of(
                "[[env-devices]]\nenv = \"X\"\nkind = \"nvidia.com/gpu\"\n"
                "resources = [\"nvidia.com/gpu\", \"nvidia.com/mig-*\"]\n")
                .front();
  REQUIRE(e.counts("nvidia.com/gpu"));
  REQUIRE(e.counts("nvidia.com/mig-1g.10gb"));
  REQUIRE(e.counts("nvidia.com/mig-"));
  REQUIRE_FALSE(e.counts("nvidia.com/gpu.shared"));
  REQUIRE_FALSE(e.counts("nvidia.com/mi"));
}

TEST_CASE("env-devices: a stored answer grants its env list, its mounts and its CDI names") {
  Entry e = nvidia();
  SECTION("uuid strategy") {
    Grant g{.resource = "nvidia.com/gpu", .envs = {{"NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b"}, {"OTHER", "1"}}};
    auto got = grant_of(e, g);
    REQUIRE(got.names == std::vector<std::string>{"nvidia.com/gpu=GPU-a", "nvidia.com/gpu=GPU-b"});
    REQUIRE_FALSE(got.all);
  }
  SECTION("index strategy, and a plugin that hands over all") {
    REQUIRE(grant_of(e, {.envs = {{"NVIDIA_VISIBLE_DEVICES", "0,1:2"}}}).names ==
            std::vector<std::string>{"nvidia.com/gpu=0", "nvidia.com/gpu=1:2"});
    REQUIRE(grant_of(e, {.envs = {{"NVIDIA_VISIBLE_DEVICES", "all"}}}).all);
  }
  SECTION("volume-mounts strategy: the dir as the value, the devices as mounts below it") {
    Grant g{.envs = {{"NVIDIA_VISIBLE_DEVICES", "/var/run/nvidia-container-devices"}},
            .mounts = {"/var/run/nvidia-container-devices/GPU-a", "/var/run/nvidia-container-devices/imex/3",
                       "/var/run/nvidia-container-devices/cdi/example.com/gpu/x",
                       "/var/run/nvidia-container-devices/cdi/example.com/gpu=y",
                       "/var/run/nvidia-container-devicesX/GPU-z", "/var/run/nvidia-container-devices"}};
    REQUIRE(grant_of(e, g).names ==
            std::vector<std::string>{"nvidia.com/gpu=GPU-a", "example.com/gpu=x", "example.com/gpu=y"});
  }
  SECTION("CDI strategies: names as given; invalid ones grant nothing") {
    Grant g{.cdi_devices = {"k8s.device-plugin.nvidia.com/gpu=GPU-a", "not a name"}};
    REQUIRE(grant_of(e, g).names == std::vector<std::string>{"k8s.device-plugin.nvidia.com/gpu=GPU-a"});
  }
  SECTION("HAMi: the real UUIDs of the env, whatever the kubelet's virtual IDs") {
    Grant g{.resource = "nvidia.com/gpu",
            .envs = {{"CUDA_DEVICE_MEMORY_LIMIT_0", "4000m"}, {"NVIDIA_VISIBLE_DEVICES", "GPU-real"}}};
    REQUIRE(grant_of(e, g).names == std::vector<std::string>{"nvidia.com/gpu=GPU-real"});
  }
}
