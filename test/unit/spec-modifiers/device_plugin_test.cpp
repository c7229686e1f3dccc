// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's pure pieces: config, identity, direct
// requests, and merging an answer into the spec (rules and idempotence).
#include "specshim/modifiers/device_plugin.h"

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/node/pod_identity.h"

using namespace specshim;
using namespace specshim::device_plugin;
using Catch::Contains;
using pod_identity::identify;
using pod_identity::PodRef;
using test::error_of;

namespace {

std::optional<Config> config_of(const std::string& text) {
  auto doc = config::Document::parse(text, "test.toml");
  auto root = doc.root();
  auto section = root.section("device-plugin");
  auto c = read_config(section);
  section.finish();
  return c;
}

Spec spec_with(Json annotations) {
  Json doc = {{"ociVersion", "1.1.0"},
              {"process", {{"args", {"sh"}}, {"env", {"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"}}}},
              {"mounts",
               {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
                {{"destination", "/usr/local/vgpu/libvgpu.so"}, {"type", "bind"}, {"source", "/x"}}}},
              {"annotations", std::move(annotations)},
              {"linux", Json::object()}};
  return Spec::parse(doc.dump(2));
}

HostNode fake_node(const std::string& host_path) {
  if (host_path == "/dev/nvidia0") return {'c', 195, 0, 0666, 0, 0};
  if (host_path == "/dev/nvidiactl") return {'c', 195, 255, 0666, 0, 0};
  throw Error("stat host device `" + host_path + "`: No such file or directory");
}

kubelet::AllocateResponse gpu_answer() {
  kubelet::AllocateResponse a;
  a.envs = {{"NVIDIA_VISIBLE_DEVICES", "GPU-1"}, {"CUDA_DEVICE_MEMORY_LIMIT_0", "1000m"}};
  a.annotations = {{"example.com/note", "x"}};
  a.mounts = {{"/usr/local/vgpu", "/usr/local/vgpu/containers/uid_main", false}, {"/usr/bin/tool", "/opt/tool", true}};
  a.devices = {{"/dev/nvidia0", "/dev/nvidia0", "rw"}, {"/dev/nvidiactl", "/dev/nvidiactl", ""}};
  a.cdi_devices = {"nvidia.com/gpu=GPU-1"};
  return a;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

}  // namespace

TEST_CASE("config: disabled by default, every key read, resources in file order") {
  CHECK_FALSE(config_of(""));
  CHECK_FALSE(config_of("[device-plugin]\nbudget-ms = 5\n"));
  auto c = config_of(R"(
[device-plugin]
enabled = true
kubelet-root = "/k"
budget-ms = 300
direct-requires-pod-devices = false
[[device-plugin.resources]]
name = "spot.example.com/gpu"
providers = ["kubelet", "direct"]
[[device-plugin.resources]]
name = "nvidia.com/gpu"
socket = "nvidia.sock"
allocate = true
on-error = "skip"
providers = ["direct", "pod-sync", "container-sync"]
)");
  REQUIRE(c);
  CHECK(c->kubelet_root == "/k");
  CHECK(c->budget.count() == 300);
  CHECK_FALSE(c->direct_requires_pod_devices);
  REQUIRE(c->resources.size() == 2);
  CHECK(c->resources[0].name == "spot.example.com/gpu");
  CHECK_FALSE(c->resources[0].allocate);
  CHECK(c->resources[0].on_error == OnError::fail);
  CHECK(c->resources[0].has(Provider::kubelet));
  CHECK_FALSE(c->resources[0].has(Provider::pod_sync));
  CHECK(c->resources[1].socket == "nvidia.sock");
  CHECK(c->resources[1].on_error == OnError::skip);
  CHECK(c->find("nvidia.com/gpu") == &c->resources[1]);
  CHECK(config_of("[device-plugin]\nenabled = true\n")->direct_requires_pod_devices);
}

TEST_CASE("config: errors name the key") {
  auto err = [](const std::string& body) {
    return error_of<Error>([&] { config_of("[device-plugin]\nenabled = true\n" + body); });
  };
  CHECK_THAT(err("kubelet-root = \"var\"\n"), Contains("`device-plugin.kubelet-root`: must be an absolute path"));
  CHECK_THAT(err("budget-ms = 0\n"), Contains("`device-plugin.budget-ms`: must be between 1 and 600000"));
  CHECK_THAT(err("[[device-plugin.resources]]\nproviders = []\n"),
             Contains("`device-plugin.resources[0]`: missing `name`"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"gpu\"\nproviders = []\n"),
             Contains("`device-plugin.resources[0].name`: `gpu` is not an extended resource name"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g,b\"\nproviders = []\n"),
             Contains("is not an extended resource name"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"specshim.io/x\"\nproviders = []\n"),
             Contains("the specshim.io/ domain is specshim's own"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g\"\n"), Contains("missing `providers`"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g\"\nproviders = [\"magic\"]\n"),
             Contains("`device-plugin.resources[0].providers`: unknown provider `magic`"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g\"\nproviders = [\"direct\", \"direct\"]\n"),
             Contains("provider `direct` listed twice"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g\"\nproviders = []\non-error = \"retry\"\n"),
             Contains("`device-plugin.resources[0].on-error`: must be \"fail\" or \"skip\""));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g\"\nproviders = []\nsockt = \"x\"\n"),
             Contains("unknown key `device-plugin.resources[0].sockt`"));
  CHECK_THAT(err("[[device-plugin.resources]]\nname = \"a.com/g\"\nproviders = []\n"
                 "[[device-plugin.resources]]\nname = \"a.com/g\"\nproviders = []\n"),
             Contains("`device-plugin.resources[1].name`: resource `a.com/g` is listed twice"));
}

TEST_CASE("config: require-env reads env keys and globs, each checked, default none") {
  auto c = config_of(R"(
[device-plugin]
enabled = true
[[device-plugin.resources]]
name = "nvidia.com/gpu"
providers = ["kubelet"]
require-env = ["CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_SM_LIMIT"]
[[device-plugin.resources]]
name = "example.com/vfio"
providers = ["kubelet"]
)");
  REQUIRE(c);
  CHECK(c->resources[0].require_env == std::vector<std::string>{"CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_SM_LIMIT"});
  CHECK(c->resources[1].require_env.empty());

  auto err = [](const std::string& value) {
    return error_of<Error>([&] {
      config_of(
          "[device-plugin]\nenabled = true\n[[device-plugin.resources]]\nname = \"a.com/g\"\n"
          "providers = []\nrequire-env = " +
          value + "\n");
    });
  };
  CHECK_THAT(err("\"CUDA_DEVICE_SM_LIMIT\""), Contains("`device-plugin.resources[0].require-env`"));
  CHECK_THAT(err("[1]"), Contains("`device-plugin.resources[0].require-env`"));
  CHECK_THAT(err("[\"A\", \"\"]"),
             Contains("`device-plugin.resources[0].require-env`: entry 1 must be a non-empty env key or glob"));
  CHECK_THAT(err("[\"A\\u0001*\"]"), Contains("entry 0 must be a non-empty env key or glob without control"));
  CHECK_THAT(err("[\"CUDA=1\"]"), Contains("`CUDA=1` has a `=`, which no env key has"));
  CHECK_THAT(err("[\"A*\", \"A*\"]"), Contains("`A*` listed twice"));
}

TEST_CASE("missing_env: a glob is met by any key it matches, fnmatch-style") {
  std::vector<std::pair<std::string, std::string>> hami = {
      {"NVIDIA_VISIBLE_DEVICES", "GPU-1"}, {"CUDA_DEVICE_MEMORY_LIMIT_0", "1000m"}, {"CUDA_DEVICE_SM_LIMIT", "50"}};
  std::vector<std::pair<std::string, std::string>> plain = {{"NVIDIA_VISIBLE_DEVICES", "GPU-1"}};
  std::vector<std::string> want = {"CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_SM_LIMIT"};
  CHECK(missing_env(want, hami).empty());
  CHECK(missing_env(want, plain) == want);
  CHECK(missing_env(want, {}) == want);
  CHECK(missing_env({}, plain).empty());
  CHECK(missing_env({"CUDA_DEVICE_MEMORY_LIMIT_?"}, hami).empty());
  CHECK(missing_env({"CUDA_DEVICE_MEMORY_LIMIT_[1-9]"}, hami) ==
        std::vector<std::string>{"CUDA_DEVICE_MEMORY_LIMIT_[1-9]"});
  CHECK(missing_env({"CUDA_DEVICE_MEMORY_LIMIT"}, hami) == std::vector<std::string>{"CUDA_DEVICE_MEMORY_LIMIT"});
}

TEST_CASE("config: [device-plugin.dra] off by default, drivers as listed, no resource needed") {
  auto off = config_of("[device-plugin]\nenabled = true\n");
  REQUIRE(off);
  CHECK_FALSE(off->dra.enabled);
  CHECK(off->dra.drivers.empty());
  auto on = config_of(
      "[device-plugin]\nenabled = true\n[device-plugin.dra]\nenabled = true\n"
      "drivers = [\"gpu.nvidia.com\", \"nic.example.com\"]\n");
  REQUIRE(on);
  CHECK(on->dra.enabled);
  CHECK(on->dra.drivers == std::vector<std::string>{"gpu.nvidia.com", "nic.example.com"});
  CHECK(on->dra.follows("nic.example.com"));
  CHECK_FALSE(on->dra.follows("gpu.example.com"));
  CHECK(on->resources.empty());
  CHECK(config_of("[device-plugin]\nenabled = true\n[device-plugin.dra]\nenabled = true\n")->dra.follows("any.io"));
}

TEST_CASE("config: [device-plugin.dra] errors name the key") {
  auto err = [](const std::string& body) {
    return error_of<Error>([&] { config_of("[device-plugin]\nenabled = true\n[device-plugin.dra]\n" + body); });
  };
  CHECK_THAT(err("enabled = true\ndriver = [\"gpu.nvidia.com\"]\n"),
             Contains("unknown key `device-plugin.dra.driver`"));
  CHECK_THAT(err("enabled = \"yes\"\n"), Contains("`device-plugin.dra.enabled`"));
  CHECK_THAT(err("drivers = \"gpu.nvidia.com\"\n"), Contains("`device-plugin.dra.drivers`"));
  CHECK_THAT(err("drivers = [1]\n"), Contains("`device-plugin.dra.drivers`"));
  CHECK_THAT(err("drivers = [\"GPU.nvidia.com\"]\n"),
             Contains("`device-plugin.dra.drivers`: `GPU.nvidia.com` is not a DRA driver name"));
  CHECK_THAT(err("drivers = [\"a.io\", \"a.io\"]\n"), Contains("driver `a.io` listed twice"));
  CHECK_THAT(error_of<Error>([] { config_of("[device-plugin]\nenabled = true\ndra = 1\n"); }),
             Contains("`device-plugin.dra`: must be a table"));
}

TEST_CASE("identify: containerd, CRI-O, outside CRI") {
  auto containerd = identify(spec_with({{"io.kubernetes.cri.container-type", "container"},
                                        {"io.kubernetes.cri.sandbox-namespace", "ns"},
                                        {"io.kubernetes.cri.sandbox-name", "p"},
                                        {"io.kubernetes.cri.sandbox-uid", "u-1"},
                                        {"io.kubernetes.cri.container-name", "main"},
                                        {"io.kubernetes.pod.name", "forged"}}));
  CHECK(containerd.cri);
  CHECK(containerd.pod == PodRef{"ns", "p"});
  CHECK(containerd.uid == "u-1");
  CHECK(containerd.container == "main");

  auto crio = identify(spec_with({{"io.kubernetes.cri-o.ContainerType", "container"},
                                  {"io.kubernetes.pod.namespace", "ns"},
                                  {"io.kubernetes.pod.name", "p"},
                                  {"io.kubernetes.pod.uid", "u-2"},
                                  {"io.kubernetes.container.name", "side"}}));
  CHECK(crio.cri);
  CHECK(crio.pod == PodRef{"ns", "p"});
  CHECK(crio.uid == "u-2");
  CHECK(crio.container == "side");

  // io.kubernetes.pod.* without CRI-O's own annotation is tenant text, not identity.
  auto outside = identify(spec_with({{"io.kubernetes.pod.name", "p"}, {kPod, "ns/p"}}));
  CHECK_FALSE(outside.cri);
  CHECK(outside.pod == PodRef{"ns", "p"});
  CHECK(outside.uid.empty());
  CHECK(outside.container.empty());
  CHECK(identify(spec_with(Json::object())).pod.empty());
}

TEST_CASE("identify: specshim.io/pod is checked, and cannot move a CRI container to another pod") {
  CHECK_THAT(error_of<Error>([] {
               identify(spec_with({{kPod, "just-a-name"}}));
             }),
             Contains("annotation `specshim.io/pod`: want <namespace>/<name>, got \"just-a-name\""));
  CHECK_THAT(error_of<Error>([] { identify(spec_with({{kPod, "ns/P_Q"}})); }), Contains("want <namespace>/<name>"));
  Json cri = {{"io.kubernetes.cri.container-type", "container"},
              {"io.kubernetes.cri.sandbox-namespace", "ns"},
              {"io.kubernetes.cri.sandbox-name", "p"},
              {kPod, "other/victim"}};
  CHECK_THAT(error_of<Error>([&] { identify(spec_with(cri)); }),
             Contains("names pod `other/victim`, but the container belongs to pod `ns/p`"));
  cri[kPod] = "ns/p";
  CHECK(identify(spec_with(cri)).pod == PodRef{"ns", "p"});
}

TEST_CASE("parse_device_ids: a JSON list of printable IDs, repeats dropped") {
  CHECK(parse_device_ids("a.com/g", R"(["GPU-1","GPU-2","GPU-1"])") == std::vector<std::string>{"GPU-1", "GPU-2"});
  CHECK(parse_device_ids("a.com/g", "[]").empty());
  CHECK_THAT(error_of<Error>([] { parse_device_ids("a.com/g", "GPU-1"); }),
             Contains("annotation `a.com/g`: want a JSON list of device IDs"));
  CHECK_THAT(error_of<Error>([] { parse_device_ids("a.com/g", R"(["ok", 3])"); }), Contains("device ID 3 is not"));
  CHECK_THAT(error_of<Error>([] { parse_device_ids("a.com/g", R"(["a\nb"])"); }),
             Contains("is not a non-empty string"));
  CHECK_THAT(error_of<Error>([] { parse_device_ids("a.com/g", R"([""])"); }), Contains("is not a non-empty string"));
}

TEST_CASE("parse_device_ids: a list nested 60,000 deep is refused by depth, one 512 deep quoted short") {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  CHECK(error_of<Error>([&] { parse_device_ids("a.com/g", deep); }) ==
        "annotation `a.com/g`: nested deeper than 512 levels");
  const std::string at_limit = std::string(512, '[') + std::string(512, ']');
  CHECK(error_of<Error>([&] { parse_device_ids("a.com/g", at_limit); }) ==
        "annotation `a.com/g`: device ID " + std::string(117, '[') +
            "... is not a non-empty string of printable characters");
}

TEST_CASE("prepare_answer: containerd's shapes for mounts, devices and rules") {
  PreparedAnswer p = prepare_answer(gpu_answer(), fake_node);
  REQUIRE(p.mounts.size() == 2);
  CHECK(p.mounts[0] == Json{{"destination", "/usr/local/vgpu"},
                            {"type", "bind"},
                            {"source", "/usr/local/vgpu/containers/uid_main"},
                            {"options", {"rbind", "rprivate", "rw"}}});
  CHECK(p.mounts[1]["options"] == Json{"rbind", "rprivate", "ro"});
  REQUIRE(p.devices.size() == 2);
  CHECK(p.devices[0].entry == Json{{"path", "/dev/nvidia0"},
                                   {"type", "c"},
                                   {"major", 195},
                                   {"minor", 0},
                                   {"fileMode", 0666},
                                   {"uid", 0},
                                   {"gid", 0}});
  CHECK(p.devices[0].rule == Json{{"allow", true}, {"type", "c"}, {"major", 195}, {"minor", 0}, {"access", "rw"}});
  CHECK(p.devices[1].rule["access"] == "rwm");  // no permissions: Docker's default
}

TEST_CASE("prepare_answer: a bad field fails before anything is merged") {
  auto bad = [](auto change) {
    auto a = gpu_answer();
    change(a);
    return error_of<Error>([&] { prepare_answer(a, fake_node); });
  };
  CHECK_THAT(bad([](auto& a) { a.envs["A=B"] = "x"; }), Contains("env name \"A=B\""));
  CHECK_THAT(bad([](auto& a) { a.mounts[0].container_path = "rel"; }), Contains("mount container path \"rel\""));
  CHECK_THAT(bad([](auto& a) { a.devices[0].permissions = "rx"; }), Contains("permissions \"rx\" are not a subset"));
  CHECK_THAT(bad([](auto& a) { a.devices[0].host_path = "/dev/gone"; }), Contains("stat host device `/dev/gone`"));
  CHECK_THAT(bad([](auto& a) { a.cdi_devices = {"a.com/x=1,b.com/y=2"}; }), Contains("is not vendor/class=name"));
}

TEST_CASE("merge_answer: adds what is missing, keeps what is there, and a second merge changes nothing") {
  Spec spec = spec_with({{kCdiDevices, "other.com/x=1"}, {"example.com/note", "tenant"}});
  PreparedAnswer p = prepare_answer(gpu_answer(), fake_node);
  std::vector<std::string> conflicts;
  REQUIRE(merge_answer(spec, p, "nvidia.com/gpu", conflicts));
  const Json& j = spec.json();

  // envs: a key already set keeps its value (the image's or the pod's).
  CHECK(j["process"]["env"] == Json{"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all", "CUDA_DEVICE_MEMORY_LIMIT_0=1000m"});
  CHECK(j["annotations"]["example.com/note"] == "tenant");
  // mounts: a directory goes before the mounts below it, the rest at the end.
  std::vector<std::string> dests;
  for (const auto& m : j["mounts"]) dests.push_back(m["destination"]);
  CHECK(dests == std::vector<std::string>{"/proc", "/usr/local/vgpu", "/usr/local/vgpu/libvgpu.so", "/usr/bin/tool"});
  CHECK(j["linux"]["devices"].size() == 2);
  CHECK(j["linux"]["resources"]["devices"].size() == 2);
  CHECK(j["annotations"][kCdiDevices] == "other.com/x=1,nvidia.com/gpu=GPU-1");
  CHECK(j["annotations"][kResources] == "nvidia.com/gpu");
  CHECK_THAT(joined(conflicts), Contains("env NVIDIA_VISIBLE_DEVICES: kept \"NVIDIA_VISIBLE_DEVICES=all\""));

  Json once = j;
  conflicts.clear();
  CHECK_FALSE(merge_answer(spec, p, "nvidia.com/gpu", conflicts));
  CHECK(spec.json() == once);
}

TEST_CASE("merge_answer: a node already in the spec gets only its rule, a different node at the path wins") {
  Spec spec = spec_with(Json::object());
  spec.json()["linux"]["devices"] =
      Json::array({{{"path", "/dev/nvidia0"}, {"type", "c"}, {"major", 195}, {"minor", 0}},
                   {{"path", "/dev/nvidiactl"}, {"type", "c"}, {"major", 1}, {"minor", 3}}});
  spec.json()["linux"]["resources"]["devices"] =
      Json::array({{{"allow", false}, {"access", "rwm"}},
                   {{"allow", true}, {"type", "c"}, {"major", 195}, {"minor", 0}, {"access", "rwm"}}});
  Json before = spec.json();
  std::vector<std::string> conflicts;
  REQUIRE(merge_answer(spec, prepare_answer(gpu_answer(), fake_node), "nvidia.com/gpu", conflicts));
  // nvidia0: node and a rule covering rw were there; nvidiactl: another node holds the path.
  CHECK(spec.json()["linux"]["devices"] == before["linux"]["devices"]);
  CHECK(spec.json()["linux"]["resources"]["devices"] == before["linux"]["resources"]["devices"]);
  CHECK_THAT(joined(conflicts), Contains("device /dev/nvidiactl: kept"));
}

TEST_CASE("merge_answer: an answer's annotation is added when absent, mounts dedupe by destination") {
  Spec spec = spec_with(Json::object());
  spec.json()["mounts"].push_back({{"destination", "/usr/bin/tool/"}, {"type", "bind"}, {"source", "/elsewhere"}});
  kubelet::AllocateResponse a;
  a.annotations = {{"nvidia.com/gpu", R"(["GPU-real"])"}};
  a.mounts = {{"/usr/bin/tool", "/opt/tool", true}};
  std::vector<std::string> conflicts;
  REQUIRE(merge_answer(spec, prepare_answer(a, fake_node), "spot.example.com/gpu", conflicts));
  CHECK(spec.json()["annotations"]["nvidia.com/gpu"] == R"(["GPU-real"])");
  CHECK(spec.json()["mounts"].size() == 3);
  CHECK_THAT(joined(conflicts), Contains("mount /usr/bin/tool: kept source \"/elsewhere\""));
  CHECK_FALSE(spec.json()["annotations"].contains(kCdiDevices));  // nothing to hand over: no empty annotation
}

TEST_CASE("merge_list_annotation: appends new items, keeps the existing text") {
  Spec spec = spec_with({{kResources, " a.com/x , b.com/y"}});
  CHECK_FALSE(merge_list_annotation(spec, kResources, {"b.com/y", "a.com/x"}));
  CHECK(merge_list_annotation(spec, kResources, {"c.com/z", "c.com/z"}));
  CHECK(spec.json()["annotations"][kResources] == " a.com/x , b.com/y,c.com/z");
  spec.json()["annotations"][kResources] = "a.com/x,";
  CHECK(merge_list_annotation(spec, kResources, {"b.com/y"}));
  CHECK(spec.json()["annotations"][kResources] == "a.com/x,b.com/y");
  spec.json()["annotations"][kResources] = 3;
  CHECK_THAT(error_of<Error>([&] { merge_list_annotation(spec, kResources, {"x.com/y"}); }),
             Contains("annotation `specshim.io/resources`: must be a string"));
}

TEST_CASE("device-plugin: protect-env reads as true, false, \"fail\" or \"drop\", default fail") {
  REQUIRE(config_of("[device-plugin]\nenabled = true\n")->protect_env == ProtectEnv::fail);
  REQUIRE(config_of("[device-plugin]\nenabled = true\nprotect-env = false\n")->protect_env == ProtectEnv::off);
  REQUIRE(config_of("[device-plugin]\nenabled = true\nprotect-env = true\n")->protect_env == ProtectEnv::fail);
  REQUIRE(config_of("[device-plugin]\nenabled = true\nprotect-env = \"drop\"\n")->protect_env == ProtectEnv::drop);
  REQUIRE_THAT(error_of<Error>([] { config_of("[device-plugin]\nprotect-env = \"warn\"\n"); }),
               Contains("`device-plugin.protect-env`") && Contains("want true (\"fail\"), false"));
}

TEST_CASE("device-plugin: protect-env refuses or drops entries that override the plugin's env") {
  auto spec_of = [](std::vector<std::string> env) {
    return Spec::parse(Json{{"process", {{"env", std::move(env)}}}}.dump());
  };
  auto env_of = [](const Spec& s) { return s.find({"process", "env"})->get<std::vector<std::string>>(); };
  std::vector<Grant> answers = {
      {.resource = "nvidia.com/gpu",
       .source = "the checkpoint",
       .envs = {{"CUDA_DEVICE_MEMORY_LIMIT_0", "4000m"}, {"NVIDIA_VISIBLE_DEVICES", "GPU-1"}}}};
  const std::set<std::string> voided = {"NVIDIA_VISIBLE_DEVICES"};
  const std::vector<std::string> plugin = {"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=GPU-1",
                                           "CUDA_DEVICE_MEMORY_LIMIT_0=4000m"};

  SECTION("the plugin's own entries, an image value before them, and a repeat of the same value pass") {
    auto env = plugin;
    env.push_back("CUDA_DEVICE_MEMORY_LIMIT_0=4000m");
    Spec s = spec_of(env);
    REQUIRE_FALSE(protect_env(s, answers, ProtectEnv::fail, voided, "container `main`"));
    REQUIRE(env_of(s) == env);
  }
  SECTION("a later value fails naming the entry, the plugin's value and whose it is") {
    auto env = plugin;
    env.push_back("CUDA_DEVICE_MEMORY_LIMIT_0=80000m");
    Spec s = spec_of(env);
    REQUIRE_THAT(error_of<Error>([&] { protect_env(s, answers, ProtectEnv::fail, voided, "container `main`"); }),
                 Contains("process.env[3] \"CUDA_DEVICE_MEMORY_LIMIT_0=80000m\" overrides "
                          "\"CUDA_DEVICE_MEMORY_LIMIT_0=4000m\", which the device plugin of `nvidia.com/gpu` set "
                          "for container `main` (the checkpoint)"));
  }
  SECTION("drop removes every overriding entry and nothing else") {
    auto env = plugin;
    env.insert(env.end(), {"NVIDIA_VISIBLE_DEVICES=all", "OTHER=1", "CUDA_DEVICE_MEMORY_LIMIT_0=0"});
    Spec s = spec_of(env);
    REQUIRE(protect_env(s, answers, ProtectEnv::drop, voided, "container `main`"));
    auto want = plugin;
    want.push_back("OTHER=1");
    REQUIRE(env_of(s) == want);
    REQUIRE_FALSE(protect_env(s, answers, ProtectEnv::drop, voided, "container `main`"));
  }
  SECTION("`void` after the plugin's value is env-devices' own only for the variables it voids") {
    auto env = plugin;
    env.push_back("NVIDIA_VISIBLE_DEVICES=void");
    Spec s = spec_of(env);
    REQUIRE_FALSE(protect_env(s, answers, ProtectEnv::fail, voided, "container `main`"));
    REQUIRE_THAT(error_of<Error>([&] { protect_env(s, answers, ProtectEnv::fail, {}, "container `main`"); }),
                 Contains("\"NVIDIA_VISIBLE_DEVICES=void\" overrides"));
    auto limit = plugin;
    limit.push_back("CUDA_DEVICE_MEMORY_LIMIT_0=void");
    Spec l = spec_of(limit);
    REQUIRE_THROWS(protect_env(l, answers, ProtectEnv::fail, voided, "container `main`"));
  }
  SECTION("without the plugin's entry there is nothing to protect; off changes nothing") {
    Spec s = spec_of({"NVIDIA_VISIBLE_DEVICES=all"});
    REQUIRE_FALSE(protect_env(s, answers, ProtectEnv::fail, voided, "container `main`"));
    auto env = plugin;
    env.push_back("NVIDIA_VISIBLE_DEVICES=all");
    Spec o = spec_of(env);
    REQUIRE_FALSE(protect_env(o, answers, ProtectEnv::off, voided, "container `main`"));
  }
}
