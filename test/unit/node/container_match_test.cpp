// SPDX-License-Identifier: Apache-2.0
// container_match: `match.images` over the engine's own image keys, the
// `not` table, the admin's opt-out annotation, their config errors and
// what doctor says of them.
#include "specshim/node/container_match.h"

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/config.h"
#include "specshim/base/error.h"

using namespace specshim;
using Catch::Contains;
using test::error_of;

namespace {

Spec spec_with(Json annotations, std::uint32_t uid = 1000) {
  Json j = {{"ociVersion", "1.1.0"}, {"process", {{"user", {{"uid", uid}, {"gid", uid}}}, {"args", {"sh"}}}}};
  j["annotations"] = std::move(annotations);
  return Spec::parse(j.dump());
}

Json with(Json base, const Json& more) {
  for (auto& [k, v] : more.items()) base[k] = v;
  return base;
}

const Json kContainerd = {{"io.kubernetes.cri.container-type", "container"},
                          {"io.kubernetes.cri.sandbox-namespace", "team-a"},
                          {"io.kubernetes.cri.sandbox-name", "trainer"},
                          {"io.kubernetes.cri.sandbox-uid", "u-1"},
                          {"io.kubernetes.cri.container-name", "main"},
                          {"io.kubernetes.cri.image-name", "nvcr.io/nvidia/pytorch:24.01-py3"}};

const Json kCrio = {
    {"io.kubernetes.cri-o.ContainerType", "container"},
    {"io.kubernetes.pod.namespace", "team-a"},
    {"io.kubernetes.pod.name", "trainer"},
    {"io.kubernetes.pod.uid", "u-1"},
    {"io.kubernetes.container.name", "main"},
    {"io.kubernetes.cri-o.ImageName", "nvcr.io/nvidia/pytorch:24.01-py3"},
    {"io.kubernetes.cri-o.ImageRef", "nvcr.io/nvidia/pytorch@sha256:0123abcd"},
    {"io.kubernetes.cri-o.Labels", R"({"io.kubernetes.container.name":"main","io.kubernetes.pod.name":"trainer",)"
                                   R"("io.kubernetes.pod.namespace":"team-a","io.kubernetes.pod.uid":"u-1"})"}};

// match_of reads `[m.match]` + toml with opt_out as [policy]'s annotation.
ContainerMatch match_of(const std::string& toml, std::string_view opt_out = "") {
  static std::vector<config::Document> docs;  // the Section reads from its document
  docs.push_back(config::Document::parse("[m.match]\n" + toml, "m.toml"));
  auto root = docs.back().root();
  auto t = root.section("m");
  return read_container_match(t, "patch `p`", opt_out);
}

// opt_out_of reads [policy] opt-out-annotation from toml.
std::string opt_out_of(const std::string& toml) {
  auto doc = config::Document::parse("[policy]\n" + toml, "p.toml");
  auto root = doc.root();
  auto policy = root.section("policy");
  std::string key = read_opt_out(policy);
  policy.finish();
  return key;
}

}  // namespace

TEST_CASE("container_match: images match the image references the spec's engine wrote") {
  ContainerMatch nvidia = match_of("images = [\"nvcr.io/nvidia/*\"]\n");
  CHECK(nvidia.holds(spec_with(kContainerd)));
  CHECK(nvidia.holds(spec_with(kCrio)));
  CHECK_FALSE(nvidia.holds(spec_with(with(kContainerd, {{"io.kubernetes.cri.image-name", "docker.io/x:1"}}))));
  // One glob of the list matching one reference is enough: CRI-O's ImageRef.
  ContainerMatch digest = match_of("images = [\"quay.io/*\", \"*@sha256:0123*\"]\n");
  CHECK(digest.holds(spec_with(kCrio)));
  CHECK_FALSE(digest.holds(spec_with(kContainerd)));
  // CRI-O writes "" as ImageName for an image known by ID only: the ref still counts.
  CHECK(digest.holds(spec_with(with(kCrio, {{"io.kubernetes.cri-o.ImageName", ""}}))));
  CHECK_FALSE(match_of("images = [\"*\"]\n")
                  .holds(spec_with(
                      with(kCrio, {{"io.kubernetes.cri-o.ImageName", ""}, {"io.kubernetes.cri-o.ImageRef", ""}}))));
}

TEST_CASE("container_match: the other engine's image key is tenant input and never matches") {
  ContainerMatch nvidia = match_of("images = [\"nvcr.io/*\"]\n");
  Json containerd = kContainerd;
  containerd.erase("io.kubernetes.cri.image-name");  // containerd < 1.5
  CHECK_FALSE(nvidia.holds(spec_with(with(containerd, {{"io.kubernetes.cri-o.ImageName", "nvcr.io/x:1"},
                                                       {"io.kubernetes.cri-o.ImageRef", "nvcr.io/x@sha256:1"}}))));
  Json crio = kCrio;
  crio["io.kubernetes.cri-o.ImageName"] = "docker.io/x:1";
  crio["io.kubernetes.cri-o.ImageRef"] = "0123abcd";
  CHECK_FALSE(nvidia.holds(spec_with(with(crio, {{"io.kubernetes.cri.image-name", "nvcr.io/x:1"}}))));
  // The same keys read as absent through match.annotations.
  ContainerMatch by_key = match_of("annotations = { \"io.kubernetes.cri-o.ImageName\" = \"*\" }\n");
  CHECK_FALSE(by_key.holds(spec_with(with(kContainerd, {{"io.kubernetes.cri-o.ImageName", "nvcr.io/x:1"}}))));
  CHECK(by_key.holds(spec_with(kCrio)));
  // A pod that copies every containerd identity key into a CRI-O spec (they
  // agree) but names another image is refused, as disagreeing identity keys are.
  Json forged = with(kCrio, kContainerd);
  forged["io.kubernetes.cri.image-name"] = "nvcr.io/nvidia/other:1";
  CHECK_THAT(error_of<Error>([&] { nvidia.holds(spec_with(forged)); }),
             Contains("the image keys of both containerd and CRI-O, and they disagree"));
  CHECK(nvidia.holds(spec_with(with(kCrio, kContainerd))));
}

TEST_CASE("container_match: a container with no image reference never matches images") {
  ContainerMatch any = match_of("images = [\"*\"]\n");
  // Created outside CRI (ctr, a docker-in-docker sibling): every image key is anyone's to write.
  CHECK_FALSE(any.holds(spec_with({{"io.kubernetes.cri.image-name", "nvcr.io/x:1"}})));
  CHECK_FALSE(any.holds(spec_with(Json::object())));
  // A sandbox: containerd writes no image-name for one, CRI-O the pause image.
  Json sandbox = kCrio;
  sandbox["io.kubernetes.cri-o.ContainerType"] = "sandbox";
  CHECK_FALSE(any.holds(spec_with(sandbox)));
}

TEST_CASE("container_match: not excludes the containers its conditions hold for") {
  ContainerMatch m = match_of("images = [\"nvcr.io/*\"]\nnot = { namespaces = [\"kube-*\"], uids = [\"0\"] }\n");
  CHECK(m.holds(spec_with(kContainerd)));
  Json system = with(kContainerd, {{"io.kubernetes.cri.sandbox-namespace", "kube-system"}});
  CHECK(m.holds(spec_with(system)));  // not root: the `not` table does not hold whole
  CHECK_FALSE(m.holds(spec_with(system, 0)));
  // `not` alone: every container but those.
  ContainerMatch all_but = match_of("not = { images = [\"*/pause:*\"] }\n");
  CHECK_FALSE(all_but.holds(spec_with(with(kContainerd, {{"io.kubernetes.cri.image-name", "k8s.io/pause:3.9"}}))));
  CHECK(all_but.holds(spec_with(kContainerd)));
  CHECK(all_but.holds(spec_with(Json::object())));  // no image: nothing to exclude it by
  CHECK(all_but.describe() == "every container; not (images */pause:*)");
  CHECK(m.describe() == "images nvcr.io/*; not (namespaces kube-*; uids 0)");
  ContainerMatch kinds = match_of("not = { container-kind = \"sandbox\", annotations = { a = \"1\" } }\n");
  CHECK(kinds.describe() == "every container; not (annotation a = 1; sandboxes only)");
}

TEST_CASE("container_match: the opt-out takes a container out only when configured and exactly \"true\"") {
  const char* key = "example.com/skip-site-rules";
  Json opted = with(kContainerd, {{key, "true"}});
  ContainerMatch off = match_of("images = [\"nvcr.io/*\"]\n");
  CHECK(off.holds(spec_with(opted)));  // off by default: the annotation means nothing
  ContainerMatch on = match_of("images = [\"nvcr.io/*\"]\n", key);
  CHECK_FALSE(on.holds(spec_with(opted)));
  CHECK(on.opted_out(spec_with(opted)));
  CHECK(on.holds(spec_with(kContainerd)));
  for (const char* value : {"True", "TRUE", "1", "yes", "true ", ""}) {
    INFO(value);
    CHECK(on.holds(spec_with(with(kContainerd, {{key, value}}))));
  }
  // A table with no match at all carries it too.
  static auto doc = config::Document::parse("[m]\n", "m.toml");
  auto root = doc.root();
  auto t = root.section("m");
  ContainerMatch every = read_container_match(t, "", key);
  CHECK_FALSE(every.holds(spec_with(with(Json::object(), {{key, "true"}}))));
  CHECK(every.describe() == "every container; unless opted out (annotation example.com/skip-site-rules = \"true\")");
  CHECK(off.describe() == "images nvcr.io/*");
}

TEST_CASE("container_match: config errors name the key and line") {
  auto error = [](const std::string& toml) { return error_of<Error>([&] { match_of(toml); }); };
  CHECK_THAT(error("namespaces = [\"a\"]\nimages = [\"nvcr.io/[x\"]\n"),
             Contains("line 3: `m.match.images`: patch `p`: `nvcr.io/[x` is not an image glob"));
  CHECK_THAT(error("images = [\"\"]\n"), Contains("`m.match.images`: patch `p`: `` is not an image glob"));
  CHECK_THAT(error("images = []\n"), Contains("`m.match.images`: patch `p`: an empty list matches no container"));
  CHECK_THAT(error("images = \"nvcr.io/*\"\n"), Contains("`m.match.images`: must be an array of strings"));
  CHECK_THAT(error("not = {}\n"),
             Contains("line 2: `m.match.not`: patch `p`: an empty `not` table would exclude every container"));
  CHECK_THAT(error("not = { annotations = {} }\n"), Contains("`m.match.not`: patch `p`: an empty `not` table"));
  CHECK_THAT(error("not = { images = [\"[\"] }\n"), Contains("line 2: `m.match.not.images`: patch `p`: `[` is not"));
  CHECK_THAT(error("not = { not = { uids = [\"0\"] } }\n"),
             Contains("`m.match.not.not`: patch `p`: `not` does not nest"));
  CHECK_THAT(error("not = { image = [\"x\"] }\n"), Contains("unknown key `m.match.not.image`"));
  CHECK_THAT(error("not = \"kube-system\"\n"), Contains("`m.match.not`: must be a table"));

  CHECK(opt_out_of("").empty());
  CHECK(opt_out_of("opt-out-annotation = \"example.com/skip\"\n") == "example.com/skip");
  CHECK(opt_out_of("opt-out-annotation = \"skip_rules.v1\"\n") == "skip_rules.v1");
  auto policy_error = [](const std::string& toml) { return error_of<Error>([&] { opt_out_of(toml); }); };
  for (const char* bad : {"", "/skip", "example.com/", "a/b/c", "Example.com/skip", "skip rules", "-skip"}) {
    INFO(bad);
    CHECK_THAT(policy_error("opt-out-annotation = \"" + std::string(bad) + "\"\n"),
               Contains("line 2: `policy.opt-out-annotation`: ") && Contains("is not an annotation key"));
  }
  CHECK_THAT(policy_error("opt-out-annotation = true\n"), Contains("`policy.opt-out-annotation`: must be a string"));
  CHECK_THAT(policy_error("opt-out = \"x\"\n"), Contains("unknown key `policy.opt-out`"));
}
