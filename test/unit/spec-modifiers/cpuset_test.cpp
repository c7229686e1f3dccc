// SPDX-License-Identifier: Apache-2.0
// The cpuset modifier's pure pieces: cpuset list syntax (parse, format, set
// operations), [cpuset] config, and the modifier against a scripted kubelet
// client (sources, intersection, policy, idempotence, no calls when not asked).
#include "specshim/modifiers/cpuset.h"

#include <catch2/catch.hpp>

#include "cpuset/modifier.h"
#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/chain.h"
#include "specshim/node/pod_identity.h"

using namespace specshim;
using namespace specshim::cpuset;
using Catch::Contains;
using test::described_error;
using test::error_of;

namespace {

IdSet cpus(std::string_view text) {
  return parse_list("cpus", text, kMaxCpus);
}

std::string bad(std::string_view text, std::uint32_t limit = kMaxCpus) {
  return error_of<Error>([&] { parse_list("linux.resources.cpu.cpus", text, limit); });
}

}  // namespace

TEST_CASE("cpuset list: ids and ranges, in any order, overlapping, become one sorted set") {
  CHECK(cpus("") == IdSet{});
  CHECK(cpus("0") == IdSet{0});
  CHECK(cpus("2-5") == IdSet{2, 3, 4, 5});
  CHECK(cpus("3-3") == IdSet{3});
  CHECK(cpus("5,0-2,1") == IdSet{0, 1, 2, 5});
  CHECK(cpus("4-6,0-4,2") == IdSet{0, 1, 2, 3, 4, 5, 6});
  CHECK(cpus("1,1,1") == IdSet{1});
  CHECK(cpus("007") == IdSet{7});
  CHECK(cpus("8191") == IdSet{8191});
  CHECK(cpus("0-8191").size() == kMaxCpus);
  CHECK(parse_list("mems", "0-1023", kMaxNumaNodes).size() == kMaxNumaNodes);
}

TEST_CASE("cpuset list: anything but ids, ranges and commas is refused, naming the field") {
  for (std::string_view text :
       {" 1", "1 ", "1, 2", "1,", ",1", "1,,2", "1-", "-1", "+1", "a", "1-2-3", "0-7:2/4", "0x1", "1;2", "all"}) {
    CAPTURE(text);
    CHECK_THAT(bad(text), Contains("linux.resources.cpu.cpus") && Contains("want ids and ranges such as 0,2-5"));
  }
  CHECK(bad("1,,2") == "linux.resources.cpu.cpus `1,,2`: unexpected `,` at byte 2 (want ids and ranges such as 0,2-5)");
  CHECK_THAT(bad("1,"), Contains("ends where an id is expected"));
  CHECK_THAT(bad("1-"), Contains("ends where an id is expected"));
  CHECK_THAT(bad("1 "), Contains("unexpected byte 0x20 at byte 1"));
  CHECK_THAT(bad("5-2"), Contains("range 5-2 runs backwards"));
}

TEST_CASE("cpuset list: control characters are named by their byte, never echoed") {
  for (std::string text : {std::string("1\n"), std::string("1\x1b[2J"),
                           std::string("0\0"
                                       "1",
                                       3),
                           std::string("\x7f")}) {
    std::string msg = bad(text);
    CAPTURE(msg);
    CHECK(msg.rfind("linux.resources.cpu.cpus: unexpected byte 0x", 0) == 0);
    CHECK_FALSE(contains_control(msg));
  }
  CHECK_THAT(bad("1\n"), Contains("byte 0x0a at byte 1"));
}

TEST_CASE("cpuset list: ids above the limit, huge numbers and huge texts are refused") {
  CHECK_THAT(bad("8192"), Contains("8192 is above the largest id 8191"));
  CHECK_THAT(bad("0-100000"), Contains("100000 is above the largest id 8191"));
  CHECK_THAT(bad("1024", kMaxNumaNodes), Contains("1024 is above the largest id 1023"));
  std::string huge(400, '9');
  CHECK_THAT(bad(huge), Contains("999999999999999999999999... is above the largest id 8191"));
  CHECK(bad(huge).size() < 200);
  CHECK_THAT(bad("18446744073709551617"), Contains("above the largest id"));
  std::string long_list;
  while (long_list.size() <= kMaxListBytes) long_list += "0-8191,";
  long_list += "0";
  CHECK(bad(long_list) == "linux.resources.cpu.cpus: longer than 65536 bytes");
  // Just under the cap, thousands of wide ranges are still one cheap set.
  std::string wide;
  while (wide.size() + 7 < kMaxListBytes) wide += "0-8191,";
  wide += "0";
  CHECK(cpus(wide).size() == kMaxCpus);
}

TEST_CASE("cpuset list: the canonical form has ascending ids and runs as ranges, and reads back the same") {
  CHECK(format_list({}) == "");
  CHECK(format_list({0}) == "0");
  CHECK(format_list({2, 3}) == "2-3");
  CHECK(format_list({0, 2, 3, 4, 5}) == "0,2-5");
  CHECK(format_list({1, 3, 5}) == "1,3,5");
  CHECK(format_list({0, 1, 2, 7, 9, 10}) == "0-2,7,9-10");
  for (std::string_view text : {"", "0", "2-3", "0,2-5", "1,3,5", "0-2,7,9-10", "8191"}) {
    CAPTURE(text);
    CHECK(format_list(cpus(text)) == text);
  }
  CHECK(format_list(cpus("5,4,3,1,0,0")) == "0-1,3-5");
}

TEST_CASE("cpuset list: intersection and union") {
  CHECK(intersect(cpus("0-7"), cpus("2,4,9")) == cpus("2,4"));
  CHECK(intersect(cpus("0-1"), cpus("2-3")).empty());
  CHECK(intersect({}, cpus("1")).empty());
  CHECK(unite(cpus("0,4"), cpus("1-2,4")) == cpus("0-2,4"));
  CHECK(unite({}, {}).empty());
  // Intersecting again with the same source changes nothing (idempotence).
  IdSet once = intersect(cpus("1-6"), cpus("0,2-3,9"));
  CHECK(intersect(once, cpus("0,2-3,9")) == once);
}

namespace {

std::optional<Config> config_of(const std::string& text) {
  auto doc = config::Document::parse(text, "test.toml");
  auto root = doc.root();
  auto section = root.section("cpuset");
  auto c = read_config(section);
  section.finish();
  return c;
}

}  // namespace

TEST_CASE("cpuset config: off by default, every key checked") {
  CHECK_FALSE(config_of(""));
  CHECK_FALSE(config_of("[cpuset]\nenabled = false\nbudget-ms = 5\n"));
  auto c = config_of("[cpuset]\nenabled = true\n");
  REQUIRE(c);
  CHECK(c->kubelet_root == "/var/lib/kubelet");
  CHECK(c->budget == std::chrono::milliseconds(2000));
  CHECK(c->on_error == OnError::fail);
  c = config_of("[cpuset]\nenabled = true\nkubelet-root = \"/k\"\nbudget-ms = 300\non-error = \"skip\"\n");
  REQUIRE(c);
  CHECK(c->kubelet_root == "/k");
  CHECK(c->budget == std::chrono::milliseconds(300));
  CHECK(c->on_error == OnError::skip);
  CHECK_THAT(error_of<Error>([] { config_of("[cpuset]\nenabled = true\non-error = \"ignore\"\n"); }),
             Contains("line 3: `cpuset.on-error`: must be \"fail\" or \"skip\""));
  CHECK_THAT(error_of<Error>([] { config_of("[cpuset]\nkubelet-root = \"var/lib/kubelet\"\n"); }),
             Contains("`cpuset.kubelet-root`: must be an absolute path"));
  CHECK_THAT(error_of<Error>([] { config_of("[cpuset]\nbudget-ms = 0\n"); }), Contains("`cpuset.budget-ms`"));
  CHECK_THAT(error_of<Error>([] { config_of("[cpuset]\nenabled = true\nmems = true\n"); }), Contains("`cpuset.mems`"));
}

namespace {

// Scripted is a kubelet that knows one pod, ns/pod, and counts its calls.
struct Scripted final : kubelet::KubeletClient {
  kubelet::PodResources pod{"ns", "pod", {}, {}};
  std::optional<kubelet::Unavailable> down;
  int* calls;
  explicit Scripted(int* c) : calls(c) {}
  kubelet::PodResources pod_resources(const std::string& ns, const std::string& name, const kubelet::Budget&) override {
    ++*calls;
    if (down) throw *down;
    if (ns != pod.ns || name != pod.name) throw kubelet::NotFound("pod `" + ns + "/" + name + "` not found");
    return pod;
  }
  std::vector<kubelet::PodResources> list_pods(const kubelet::Budget&) override { return {pod}; }
  kubelet::ResourceDevices allocatable(const kubelet::Budget&) override { return {}; }
  std::filesystem::path plugin_for_resource(const std::string&, const std::string&, const std::vector<std::string>&,
                                            const kubelet::Budget&) override {
    return {};
  }
  kubelet::PluginOptions plugin_options(const std::filesystem::path&, const kubelet::Budget&) override { return {}; }
  kubelet::AllocateResponse allocate(const std::filesystem::path&, const std::string&, const std::vector<std::string>&,
                                     const kubelet::Budget&) override {
    return {};
  }
  std::vector<kubelet::PluginInfo> list_plugins(const kubelet::Budget&) override { return {}; }
  std::vector<kubelet::CheckpointEntry> checkpoint(const std::string&, const std::string&) override { return {}; }
};

kubelet::ContainerAssignment pinned(std::vector<std::int64_t> cpu_ids, std::vector<std::int64_t> numa = {}) {
  kubelet::ContainerAssignment a;
  a.cpu_ids = std::move(cpu_ids);
  if (!numa.empty()) a.memory = {{"memory", 1 << 30, std::move(numa)}};
  return a;
}

// Node runs the modifier in a chain against the scripted kubelet.
struct Node {
  kubelet::PodResources pod{"ns", "pod", {{"main", {}}, {"side", {}}, {"plain", {}}}, {}};
  bool down = false;
  int calls = 0;
  int clients = 0;
  OnError on_error = OnError::fail;
  std::string last_change;  // the modifier's, after the last run that succeeded

  Node() {
    pod.assignments["main"] = pinned({3, 2}, {1});
    pod.assignments["side"] = pinned({6}, {0});
  }

  ChainResult run(Spec& spec) {
    Config c;
    c.enabled = true;
    c.on_error = on_error;
    auto m = std::make_unique<Cpuset>(c, [this]() -> std::unique_ptr<kubelet::KubeletClient> {
      ++clients;
      auto k = std::make_unique<Scripted>(&calls);
      k->pod = pod;
      if (down) k->down.emplace("call Get on `/k/pod-resources/kubelet.sock`: unavailable: connection refused");
      return k;
    });
    Cpuset* cpuset = m.get();  // lives as long as the chain
    std::vector<std::unique_ptr<Modifier>> v;
    v.push_back(std::move(m));
    Chain chain(std::move(v), 8);
    Context ctx;
    ctx.container_id = "sib";
    ctx.kind = pod_identity::kind_of(spec);
    ChainResult r = chain.run(spec, ctx);
    last_change = cpuset->last_change();
    return r;
  }
};

Spec spec_of(Json annotations, Json cpu = nullptr) {
  Json doc = {{"ociVersion", "1.1.0"}, {"annotations", std::move(annotations)}, {"linux", Json::object()}};
  if (!cpu.is_null()) doc["linux"]["resources"] = {{"cpu", std::move(cpu)}};
  return Spec::parse(doc.dump(2));
}

Json sibling_of(const std::string& container) {
  return {{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from", container}};
}

const Json kPodSync = {{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from-pod", "true"}};

const Json* cpu_of(const Spec& spec) {
  return spec.find({"linux", "resources", "cpu"});
}

}  // namespace

TEST_CASE("cpuset modifier: container-sync takes the source's CPUs and NUMA nodes, asking the kubelet once") {
  Node node;
  Spec spec = spec_of(sibling_of("main"));
  auto r = node.run(spec);
  CHECK(r.passes == 2);
  CHECK(*cpu_of(spec) == Json{{"cpus", "2-3"}, {"mems", "1"}});
  CHECK(node.calls == 1);
  CHECK(node.last_change == "");  // the last pass changed nothing
}

TEST_CASE("cpuset modifier: pod-sync takes the union over the pod's containers") {
  Node node;
  Spec spec = spec_of(kPodSync);
  node.run(spec);
  CHECK(*cpu_of(spec) == Json{{"cpus", "2-3,6"}, {"mems", "0-1"}});
}

TEST_CASE("cpuset modifier: a cpuset the spec has is narrowed, never widened, and its text stays when the set does") {
  Node node;
  Spec spec = spec_of(kPodSync, {{"shares", 1024}, {"cpus", "0-3"}, {"mems", "1"}});
  node.run(spec);
  CHECK(*cpu_of(spec) == Json{{"shares", 1024}, {"cpus", "2-3"}, {"mems", "1"}});

  Spec same = spec_of(sibling_of("main"), {{"cpus", "3,2"}});
  node.run(same);
  CHECK((*cpu_of(same))["cpus"] == "3,2");
  CHECK((*cpu_of(same))["mems"] == "1");

  Spec empty_text = spec_of(sibling_of("main"), {{"cpus", ""}, {"mems", nullptr}});
  node.run(empty_text);
  CHECK(*cpu_of(empty_text) == Json{{"cpus", "2-3"}, {"mems", "1"}});
}

TEST_CASE("cpuset modifier: no CPU in common fails naming the pod, the sources and both sets") {
  Node node;
  Spec spec = spec_of(sibling_of("main"), {{"cpus", "0-1,7"}});
  std::string before = spec.serialize();
  CHECK(described_error([&] { node.run(spec); }) ==
        "cpuset: pin container `sib` of pod `ns/pod` to the CPUs of container `main`: linux.resources.cpu.cpus "
        "\"0-1,7\" and the kubelet's \"2-3\" have no CPU in common");
  CHECK(spec.serialize() == before);

  Spec mems = spec_of(kPodSync, {{"mems", "2"}});
  CHECK_THAT(described_error([&] { node.run(mems); }),
             Contains("to the NUMA nodes of containers `main`, `side`: linux.resources.cpu.mems \"2\" and "
                      "the kubelet's \"0-1\" have no NUMA node in common"));
}

TEST_CASE("cpuset modifier: a malformed cpuset in the spec fails before the kubelet is asked") {
  Node node;
  Spec spec = spec_of(sibling_of("main"), {{"cpus", "1-"}});
  CHECK_THAT(described_error([&] { node.run(spec); }), Contains("cpuset: linux.resources.cpu.cpus `1-`: ends where"));
  Spec number = spec_of(sibling_of("main"), {{"mems", 0}});
  CHECK(described_error([&] { node.run(number); }) == "cpuset: linux.resources.cpu.mems: must be a string");
  CHECK(node.clients == 0);
}

TEST_CASE("cpuset modifier: CRI containers, sandboxes and containers that ask for nothing are left alone") {
  Node node;
  Json cri = {{"io.kubernetes.cri.container-type", "container"},
              {"io.kubernetes.cri.sandbox-namespace", "ns"},
              {"io.kubernetes.cri.sandbox-name", "pod"},
              {"io.kubernetes.cri.container-name", "main"},
              {"specshim.io/devices-from", "main"},
              {"specshim.io/devices-from-pod", "true"}};
  Json sandbox = {{"io.kubernetes.cri.container-type", "sandbox"}, {"specshim.io/devices-from-pod", "true"}};
  for (const Json& a : {cri, sandbox, Json{{"specshim.io/pod", "ns/pod"}},
                        Json{{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from-pod", "false"}}}) {
    Spec spec = spec_of(a);
    CHECK(node.run(spec).passes == 1);
    CHECK(cpu_of(spec) == nullptr);
  }
  CHECK(node.clients == 0);
}

TEST_CASE("cpuset modifier: no exclusive CPUs, or no memory nodes, leave those fields alone") {
  Node node;
  Spec plain = spec_of(sibling_of("plain"), {{"cpus", "0-1"}});
  node.run(plain);
  CHECK(*cpu_of(plain) == Json{{"cpus", "0-1"}});
  CHECK(node.calls == 1);

  node.pod.assignments["main"] = pinned({1});  // the memory manager reports nothing
  Spec spec = spec_of(sibling_of("main"), {{"mems", "0"}});
  node.run(spec);
  CHECK(*cpu_of(spec) == Json{{"mems", "0"}, {"cpus", "1"}});

  node.pod.assignments.clear();
  Spec none = spec_of(kPodSync);
  node.run(none);
  CHECK(cpu_of(none) == nullptr);
}

TEST_CASE("cpuset modifier: kubelet down, unknown container or pod: on-error decides") {
  Node node;
  node.down = true;
  Spec spec = spec_of(sibling_of("main"));
  CHECK(described_error([&] { node.run(spec); }) ==
        "cpuset: read the CPUs of container `main` (annotation specshim.io/devices-from) for container `sib` of pod "
        "`ns/pod` (socket /var/lib/kubelet/pod-resources/kubelet.sock): call Get on "
        "`/k/pod-resources/kubelet.sock`: unavailable: connection refused");
  CHECK(node.calls == 1);
  node.down = false;
  Spec unknown = spec_of(sibling_of("gone"));
  CHECK_THAT(described_error([&] { node.run(unknown); }), Contains("pod `ns/pod` has no container `gone`"));
  Spec other_pod = spec_of({{"specshim.io/pod", "ns/other"}, {"specshim.io/devices-from-pod", "true"}});
  CHECK_THAT(described_error([&] { node.run(other_pod); }),
             Contains("read the CPUs of pod `ns/other` (annotation specshim.io/devices-from-pod) for container `sib` "
                      "of pod `ns/other`"));
  Spec no_pod = spec_of({{"specshim.io/devices-from", "main"}});
  CHECK_THAT(described_error([&] { node.run(no_pod); }), Contains("no pod is known: set annotation specshim.io/pod"));
  Spec bad_value = spec_of({{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from-pod", "yes"}});
  CHECK_THAT(described_error([&] { node.run(bad_value); }), Contains("want \"true\" or \"false\""));
  Spec bad_name = spec_of(sibling_of("a/b"));
  CHECK_THAT(described_error([&] { node.run(bad_name); }), Contains("not a container name"));

  node.on_error = OnError::skip;
  node.down = true;
  for (Spec* s : {&spec, &unknown, &bad_value, &bad_name}) {
    CHECK(node.run(*s).passes == 1);
    CHECK(cpu_of(*s) == nullptr);
  }
}

TEST_CASE("cpuset modifier: CPU or node ids the kubelet should never send are refused") {
  Node node;
  node.pod.assignments["main"] = pinned({1, -1});
  Spec spec = spec_of(sibling_of("main"));
  CHECK_THAT(described_error([&] { node.run(spec); }),
             Contains("the kubelet reports CPU -1 for container `main`, outside 0-8191"));
  node.pod.assignments["main"] = pinned({1}, {4096});
  CHECK_THAT(described_error([&] { node.run(spec); }),
             Contains("the kubelet reports NUMA node 4096 for container `main`, outside 0-1023"));
}

TEST_CASE("cpuset modifier: its own output run again changes nothing") {
  Node node;
  Spec spec = spec_of(kPodSync, {{"cpus", "1-6"}});
  node.run(spec);
  std::string once = spec.serialize();
  CHECK(node.run(spec).passes == 1);
  CHECK(spec.serialize() == once);
}
