// SPDX-License-Identifier: Apache-2.0
// pod_identity: one engine's keys only, families that disagree fail closed,
// CRI-O's labels, foreign keys in match tables, and what privileged means.
#include "specshim/node/pod_identity.h"

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/caps.h"
#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/node/container_match.h"

using namespace specshim;
using namespace specshim::pod_identity;
using Catch::Contains;
using test::error_of;

namespace {

Spec spec_with(Json annotations) {
  Json j = {{"ociVersion", "1.1.0"}, {"process", {{"args", {"sh"}}}}};
  j["annotations"] = std::move(annotations);
  return Spec::parse(j.dump());
}

const Json kContainerdKeys = {{"io.kubernetes.cri.container-type", "container"},
                              {"io.kubernetes.cri.sandbox-namespace", "team-a"},
                              {"io.kubernetes.cri.sandbox-name", "trainer"},
                              {"io.kubernetes.cri.sandbox-uid", "u-1"},
                              {"io.kubernetes.cri.container-name", "main"}};

const Json kCrioKeys = {
    {"io.kubernetes.cri-o.ContainerType", "container"},
    {"io.kubernetes.pod.namespace", "team-a"},
    {"io.kubernetes.pod.name", "trainer"},
    {"io.kubernetes.pod.uid", "u-1"},
    {"io.kubernetes.container.name", "main"},
    {"io.kubernetes.cri-o.Labels", R"({"io.kubernetes.container.name":"main","io.kubernetes.pod.name":"trainer",)"
                                   R"("io.kubernetes.pod.namespace":"team-a","io.kubernetes.pod.uid":"u-1"})"}};

Json with(Json base, const Json& more) {
  for (auto& [k, v] : more.items()) base[k] = v;
  return base;
}

ContainerMatch match_of(const std::string& toml) {
  static std::vector<config::Document> docs;  // the Section reads from its document
  docs.push_back(config::Document::parse("[m.match]\n" + toml, "m.toml"));
  auto root = docs.back().root();
  auto t = root.section("m");
  return read_container_match(t, "", "");
}

Json privileged_spec(std::vector<std::string_view> drop = {},
                     Json rules = Json::array({{{"allow", true}, {"access", "rwm"}}})) {
  Json caps = Json::array();
  for (auto c : caps::kEveryKernel)
    if (std::find(drop.begin(), drop.end(), c) == drop.end()) caps.push_back(std::string(c));
  caps.push_back("CAP_BPF");
  return {{"ociVersion", "1.1.0"},
          {"process", {{"capabilities", {{"bounding", caps}}}}},
          {"linux", {{"resources", {{"devices", rules}}}}}};
}

}  // namespace

TEST_CASE("pod_identity: each engine is read from its own keys") {
  Cri c = read_cri(spec_with(kContainerdKeys));
  CHECK(c.engine == &pod_identity::kContainerd);
  CHECK(c.kind == ContainerKind::container);
  CHECK(c.pod == PodRef{"team-a", "trainer"});
  CHECK(c.uid == "u-1");
  CHECK(c.container == "main");
  Cri o = read_cri(spec_with(kCrioKeys));
  CHECK(o.engine == &pod_identity::kCrio);
  CHECK(o.pod == PodRef{"team-a", "trainer"});
  CHECK(read_cri(spec_with(Json::object())).engine == nullptr);
  CHECK(kind_of(spec_with({{"io.kubernetes.cri.container-type", "sandbox"}})) == ContainerKind::sandbox);
}

TEST_CASE("pod_identity: a CRI-O pod's forged containerd keys are tenant input") {
  // Without containerd's kind key the family is not there: CRI-O's keys count.
  Spec forged = spec_with(with(kCrioKeys, {{"io.kubernetes.cri.sandbox-namespace", "kube-system"},
                                           {"io.kubernetes.cri.sandbox-uid", "u-other"}}));
  CHECK(pod_namespace(forged) == "team-a");
  CHECK(identify(forged).uid == "u-1");
  CHECK(foreign_key(forged, "io.kubernetes.cri.sandbox-namespace"));
  CHECK_FALSE(foreign_key(forged, "io.kubernetes.pod.namespace"));
}

TEST_CASE("pod_identity: two families that disagree fail closed, naming both keys") {
  Json containerd_keys = kContainerdKeys;
  containerd_keys["io.kubernetes.cri.sandbox-namespace"] = "kube-system";
  CHECK_THAT(error_of<Error>([&] { read_cri(spec_with(with(kCrioKeys, containerd_keys))); }),
             Contains("`io.kubernetes.cri.sandbox-namespace` is \"kube-system\" where "
                      "`io.kubernetes.pod.namespace` is \"team-a\""));
  // A forged sandbox type would skip the chain.
  CHECK_THAT(error_of<Error>([&] {
               kind_of(spec_with(with(kCrioKeys, {{"io.kubernetes.cri.container-type", "sandbox"}})));
             }),
             Contains("`io.kubernetes.cri.container-type` is \"sandbox\""));
  // Another pod's UID would pass that pod's grant.
  Json uid = kContainerdKeys;
  uid["io.kubernetes.cri.sandbox-uid"] = "u-other";
  CHECK_THROWS_AS(identify(spec_with(with(kCrioKeys, uid))), Error);
  // Both families, agreeing: accepted.
  CHECK(identify(spec_with(with(kCrioKeys, kContainerdKeys))).pod == PodRef{"team-a", "trainer"});
  // containerd's spec with CRI-O's family passed through, disagreeing: refused too.
  Json crio_type = {{"io.kubernetes.cri-o.ContainerType", "sandbox"}};
  CHECK_THROWS_AS(kind_of(spec_with(with(kContainerdKeys, crio_type))), Error);
}

TEST_CASE("pod_identity: CRI-O's label keys must agree with its own copy of the labels") {
  Spec forged = spec_with(with(kCrioKeys, {{"io.kubernetes.pod.namespace", "kube-system"}}));
  CHECK_THAT(error_of<Error>([&] { identify(forged); }),
             Contains("annotation `io.kubernetes.pod.namespace` is \"kube-system\", but CRI-O's annotation "
                      "`io.kubernetes.cri-o.Labels` says \"team-a\""));
  Json no_labels = kCrioKeys;
  no_labels.erase("io.kubernetes.cri-o.Labels");
  CHECK(pod_namespace(spec_with(no_labels)) == "team-a");  // older CRI-O: the keys alone
  CHECK_THAT(error_of<Error>([&] {
               identify(spec_with(with(kCrioKeys, {{"io.kubernetes.cri-o.Labels", "[1]"}})));
             }),
             Contains("want a JSON object of labels"));
  // Deep nesting is dropped while parsing, never built.
  std::string deep = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  Json labels = kCrioKeys;
  labels["io.kubernetes.cri-o.Labels"] = deep;
  CHECK_THAT(error_of<Error>([&] { identify(spec_with(labels)); }), Contains("io.kubernetes.pod.namespace"));
}

TEST_CASE("pod_identity: outside CRI every identity key is foreign, specshim.io/pod names the pod") {
  Spec outside = spec_with({{"io.kubernetes.pod.namespace", "kube-system"}, {kPod, "team-a/box"}});
  CHECK(pod_namespace(outside) == std::nullopt);
  CHECK(foreign_key(outside, "io.kubernetes.pod.namespace"));
  CHECK(foreign_key(outside, "io.kubernetes.cri.sandbox-namespace"));
  CHECK(identify(outside).pod == PodRef{"team-a", "box"});
  CHECK_FALSE(identify(outside).cri);
}

TEST_CASE("pod_identity: a match table reads the other engine's identity keys as absent") {
  ContainerMatch m = match_of("annotations = { \"io.kubernetes.cri.sandbox-namespace\" = \"kube-*\" }\n");
  Json system = kContainerdKeys;
  system["io.kubernetes.cri.sandbox-namespace"] = "kube-system";
  CHECK(m.holds(spec_with(system)));
  CHECK_FALSE(m.holds(spec_with(with(kCrioKeys, {{"io.kubernetes.cri.sandbox-namespace", "kube-system"}}))));
  ContainerMatch ns = match_of("namespaces = [\"kube-*\"]\n");
  CHECK_FALSE(ns.holds(spec_with(with(kCrioKeys, {{"io.kubernetes.cri.sandbox-namespace", "kube-system"}}))));
  ContainerMatch kind = match_of("container-kind = \"container\"\n");
  CHECK_THROWS_AS(kind.holds(spec_with(with(kCrioKeys, {{"io.kubernetes.cri.container-type", "sandbox"}}))), Error);
}

TEST_CASE("pod_identity: image references are the engine's own image keys, for workload containers") {
  using Refs = std::vector<std::string>;
  Json containerd = with(kContainerdKeys, {{"io.kubernetes.cri.image-name", "docker.io/library/busybox:1.36"}});
  CHECK(image_references(spec_with(containerd)) == Refs{"docker.io/library/busybox:1.36"});
  Json crio = with(kCrioKeys, {{"io.kubernetes.cri-o.ImageName", "docker.io/library/busybox:1.36"},
                               {"io.kubernetes.cri-o.ImageRef", "docker.io/library/busybox@sha256:1f2e"}});
  CHECK(image_references(spec_with(crio)) ==
        Refs{"docker.io/library/busybox:1.36", "docker.io/library/busybox@sha256:1f2e"});
  CHECK(foreign_key(spec_with(crio), "io.kubernetes.cri.image-name"));
  CHECK(foreign_key(spec_with(containerd), "io.kubernetes.cri-o.ImageRef"));
  CHECK_FALSE(foreign_key(spec_with(crio), "io.kubernetes.cri-o.ImageRef"));
  // The other family's keys, a sandbox's image and a container outside CRI: none.
  CHECK(image_references(spec_with(with(kContainerdKeys, {{"io.kubernetes.cri-o.ImageName", "x:1"}}))).empty());
  CHECK(image_references(spec_with(with(crio, {{"io.kubernetes.cri-o.ContainerType", "sandbox"}}))).empty());
  CHECK(image_references(spec_with({{"io.kubernetes.cri.image-name", "x:1"}})).empty());
  CHECK(image_references(spec_with(with(kCrioKeys, {{"io.kubernetes.cri-o.ImageName", ""}}))).empty());
}

TEST_CASE("pod_identity: privileged is every capability and a rule allowing every device") {
  CHECK(privileged(Spec::parse(privileged_spec().dump())));
  // CAP_SYS_ADMIN alone, or every capability but one.
  Json sys_admin = privileged_spec();
  sys_admin["process"]["capabilities"]["bounding"] = {"CAP_CHOWN", "CAP_SYS_ADMIN"};
  CHECK_FALSE(privileged(Spec::parse(sys_admin.dump())));
  CHECK_FALSE(privileged(Spec::parse(privileged_spec({"CAP_CHOWN"}).dump())));
  // Every capability (capabilities.add: [ALL]) under the default deny rule.
  CHECK_FALSE(
      privileged(Spec::parse(privileged_spec({}, Json::array({{{"allow", false}, {"access", "rwm"}}})).dump())));
  // A deny after the allow-all rule; an allow-all of one access only.
  CHECK_FALSE(privileged(Spec::parse(
      privileged_spec({}, Json::array({{{"allow", true}, {"access", "rwm"}},
                                       {{"allow", false}, {"type", "c"}, {"major", 195}, {"access", "rwm"}}}))
          .dump())));
  CHECK_FALSE(privileged(Spec::parse(privileged_spec({}, Json::array({{{"allow", true}, {"access", "rw"}}})).dump())));
  // Device rules appended after containerd's allow-all (CDI, device plugins) keep it privileged.
  CHECK(privileged(Spec::parse(
      privileged_spec({},
                      Json::array({{{"allow", true}, {"access", "rwm"}},
                                   {{"allow", true}, {"type", "c"}, {"major", 195}, {"minor", 0}, {"access", "rw"}}}))
          .dump())));
}
