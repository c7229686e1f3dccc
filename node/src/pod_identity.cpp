// SPDX-License-Identifier: Apache-2.0
// Who a container is (see specshim/node/pod_identity.h): one engine's keys only.
#include "specshim/node/pod_identity.h"

#include <sys/prctl.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "specshim/base/caps.h"
#include "specshim/base/device_rules.h"
#include "specshim/base/error.h"
#include "specshim/base/text.h"

namespace specshim::pod_identity {
namespace {

// kMaxLabelsBytes bounds CRI-O's labels copy (a pod's labels are at most
// 63-character keys and values; a sandbox carries every label of its pod).
constexpr std::size_t kMaxLabelsBytes = 256 << 10;

bool present(const Spec& spec, std::string_view key) {
  const Json* a = spec.find({"annotations"});
  return a && a->is_object() && a->contains(key);
}

std::string text_of(const Spec& spec, std::string_view key) {
  return spec.annotation(key).value_or("");
}

ContainerKind kind_named(const std::optional<std::string>& v) {
  if (v == "sandbox") return ContainerKind::sandbox;
  if (v == "container") return ContainerKind::container;
  return ContainerKind::unknown;
}

Cri read_family(const Spec& spec, const CriKeys& keys) {
  return Cri{.engine = &keys,
             .kind = kind_named(spec.annotation(keys.kind)),
             .pod = {text_of(spec, keys.pod_namespace), text_of(spec, keys.pod_name)},
             .uid = text_of(spec, keys.pod_uid),
             .container = text_of(spec, keys.container)};
}

// differing names the first of the five keys on which a and b disagree, as
// "key `x` is \"a\" where key `y` is \"b\"", or "" when they agree.
std::string differing(const Spec& spec, const Cri& a, const Cri& b) {
  auto both = [&](std::string_view ka, std::string_view kb) -> std::string {
    std::string va = text_of(spec, ka), vb = text_of(spec, kb);
    if (va == vb) return {};
    return "`" + std::string(ka) + "` is " + shown(va) + " where `" + std::string(kb) + "` is " + shown(vb);
  };
  const CriKeys &x = *a.engine, &y = *b.engine;
  for (auto [ka, kb] : {std::pair{x.kind, y.kind},
                        {x.pod_namespace, y.pod_namespace},
                        {x.pod_name, y.pod_name},
                        {x.pod_uid, y.pod_uid},
                        {x.container, y.container}})
    if (auto why = both(ka, kb); !why.empty()) return why;
  return {};
}

// check_crio_labels compares the label keys CRI-O copied with its own JSON
// copy of the labels, when the spec has one: a pod annotation that reuses a
// label's key must not stand in for the kubelet's label.
void check_crio_labels(const Spec& spec) {
  auto labels = spec.annotation(kCrioLabels);
  if (!labels) return;
  std::string what = "annotation `" + std::string(kCrioLabels) + "`";
  if (labels->size() > kMaxLabelsBytes)
    throw Error(what + ": longer than " + std::to_string(kMaxLabelsBytes) + " bytes");
  // Only the top level is kept: a nested value is no label, and is dropped
  // while parsing, so no depth of it is ever built.
  Json j = Json::parse(
      *labels, [](int depth, Json::parse_event_t, Json&) { return depth <= 1; }, false);
  if (j.is_discarded() || !j.is_object()) throw Error(what + ": want a JSON object of labels");
  for (std::string_view key : {kCrio.pod_namespace, kCrio.pod_name, kCrio.pod_uid, kCrio.container}) {
    auto it = j.find(key);
    std::string label = it != j.end() && it->is_string() ? it->get<std::string>() : "";
    if (label.empty() && !present(spec, key)) continue;
    if (label != text_of(spec, key))
      throw Error("annotation `" + std::string(key) + "` is " + shown(text_of(spec, key)) + ", but CRI-O's " + what +
                  " says " + shown(label) + ": a pod annotation may not stand in for the kubelet's label");
  }
}

bool dns_name(std::string_view s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

PodRef parse_pod(const std::string& value) {
  auto slash = value.find('/');
  PodRef ref;
  if (slash != std::string::npos) ref = {value.substr(0, slash), value.substr(slash + 1)};
  if (!dns_name(ref.ns) || !dns_name(ref.name))
    throw Error(std::string("annotation `") + kPod + "`: want <namespace>/<name>, got " + shown(value));
  return ref;
}

}  // namespace

Cri read_cri(const Spec& spec) {
  const Cri* engine = nullptr;
  Cri found[std::size(kEngines)];
  std::size_t n = 0;
  for (const CriKeys* keys : kEngines) {
    if (!present(spec, keys->kind)) continue;
    found[n] = read_family(spec, *keys);
    if (engine) {
      if (auto why = differing(spec, *engine, found[n]); !why.empty())
        throw Error("the spec carries the identity keys of both " + std::string(engine->engine->engine) + " and " +
                    std::string(keys->engine) + ", and they disagree (" + why +
                    "): one of them was copied from the pod, and the container is refused rather than guessed");
    } else {
      engine = &found[n];
    }
    ++n;
  }
  if (!engine) return {};
  if (std::any_of(found, found + n, [](const Cri& c) { return c.engine == &kCrio; })) check_crio_labels(spec);
  return *engine;
}

ContainerKind kind_of(const Spec& spec) {
  return read_cri(spec).kind;
}

std::optional<std::string> pod_namespace(const Spec& spec) {
  Cri cri = read_cri(spec);
  if (!cri.engine) return std::nullopt;
  return cri.pod.ns;
}

std::vector<std::string> image_references(const Spec& spec) {
  Cri cri = read_cri(spec);
  if (!cri.engine || cri.kind != ContainerKind::container) return {};
  const CriKeys& own = *cri.engine;
  for (const CriKeys* other : kEngines)
    if (other != &own && present(spec, other->kind) && text_of(spec, own.image) != text_of(spec, other->image))
      throw Error("the spec carries the image keys of both " + std::string(own.engine) + " and " +
                  std::string(other->engine) + ", and they disagree (`" + std::string(own.image) + "` is " +
                  shown(text_of(spec, own.image)) + " where `" + std::string(other->image) + "` is " +
                  shown(text_of(spec, other->image)) +
                  "): one of them was copied from the pod, and the container is refused rather than guessed");
  std::vector<std::string> refs;
  for (std::string_view key : {own.image, own.image_ref})
    if (auto v = key.empty() ? std::nullopt : spec.annotation(key); v && !v->empty()) refs.push_back(*v);
  return refs;
}

bool foreign_key(const Spec& spec, std::string_view key) {
  Cri cri = read_cri(spec);
  for (const CriKeys* keys : kEngines) {
    if (keys == cri.engine) continue;
    for (std::string_view k : {keys->kind, keys->pod_namespace, keys->pod_name, keys->pod_uid, keys->container,
                               keys->image, keys->image_ref})
      if (!k.empty() && k == key) return true;
  }
  return key == kCrioLabels && cri.engine != &kCrio;
}

Identity identify(const Spec& spec) {
  Cri cri = read_cri(spec);
  Identity id;
  if (cri.engine) id = {.cri = true, .pod = cri.pod, .uid = cri.uid, .container = cri.container};
  auto named = spec.annotation(kPod);
  if (!named) {
    if (present(spec, kPod)) throw Error(std::string("annotation `") + kPod + "`: must be a string");
    return id;
  }
  PodRef ref = parse_pod(*named);
  if (!id.cri) {
    id.pod = ref;
  } else if (ref != id.pod) {
    throw Error(std::string("annotation `") + kPod + "` names pod `" + ref.str() +
                "`, but the container belongs to pod `" + id.pod.str() +
                "`: another pod is only honoured for containers created outside CRI");
  }
  return id;
}

bool privileged(const Spec& spec) {
  const Json* b = spec.find({"process", "capabilities", "bounding"});
  if (!b || !b->is_array()) return false;
  // containerd gives a privileged container every capability it holds
  // itself (WithAllCurrentCapabilities), and specshim, its runtime, holds
  // the same bounding set: one missing that specshim holds is not privileged.
  // kEveryKernel is in number order: capability i is its i-th name. Only a
  // capability the kernel says is not in the set (0) is left out; one it
  // cannot answer for counts as held, which asks more of the container.
  auto held = [](std::size_t i) { return ::prctl(PR_CAPBSET_READ, static_cast<unsigned long>(i), 0, 0, 0) != 0; };
  for (std::size_t i = 0; i < std::size(caps::kEveryKernel); ++i) {
    std::string_view cap = caps::kEveryKernel[i];
    if (std::none_of(b->begin(), b->end(),
                     [&](const Json& j) { return j.is_string() && j.get_ref<const std::string&>() == cap; }) &&
        held(i))
      return false;
  }
  try {
    return allows_all(read_device_rules(spec));
  } catch (const Error&) {
    return false;  // rules runc would refuse privilege no one
  }
}

}  // namespace specshim::pod_identity
