// SPDX-License-Identifier: Apache-2.0
// Who a container is: the one place that reads a spec's Kubernetes identity
// (pod, pod UID, container name, sandbox or container, image). Every reader asks
// here: the modifiers, the hot-plug selection and bound, `match` tables,
// reconcile, diagnose and specshim-nri.
//
// A CRI engine writes the identity into the spec under its own keys, and
// copies other keys from the pod: CRI-O copies every pod annotation, and
// containerd those its handler's pod_annotations allowlist names. So a spec
// is judged by the keys of the engine that wrote it (the family whose kind
// key is present) and the other family's keys are tenant input. A spec that
// carries both families is accepted only when they say the same thing: two
// families that disagree fail closed, naming the key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/spec.h"

namespace specshim {

// ContainerKind tells a sandbox (pause) container from a workload container.
enum class ContainerKind { unknown, sandbox, container };

}  // namespace specshim

namespace specshim::pod_identity {

// CriKeys names the annotations in which one CRI engine writes a container's
// identity.
struct CriKeys {
  std::string_view engine;         // "containerd", "CRI-O"
  std::string_view kind;           // "container" or "sandbox"; present only for CRI's containers
  std::string_view pod_namespace;  // the pod's namespace
  std::string_view pod_name;
  std::string_view pod_uid;
  std::string_view container;  // the Kubernetes container name (workload containers only)
  std::string_view image;      // a name of the container's image (workload containers only)
  std::string_view image_ref;  // the image's digest reference or ID; empty: the engine writes none
};

// containerd's CRI (DefaultCRIAnnotations), and CRI-O's own ContainerType
// beside the kubelet's labels it copies. The image keys: containerd (1.5 and
// later) writes image-name for workload containers: the name of its image
// record that the kubelet's reference resolved to or, from 2.0 with a kubelet
// that sends it (1.28 and later), the image as the pod spec wrote it
// (UserSpecifiedImage). CRI-O writes ImageName (one of the image's names, ""
// for an image known by ID only) and ImageRef (the image's first repo digest,
// repo@sha256:..., in older releases; its ID, 64 hex digits, in later ones).
inline constexpr CriKeys kContainerd{"containerd",
                                     "io.kubernetes.cri.container-type",
                                     "io.kubernetes.cri.sandbox-namespace",
                                     "io.kubernetes.cri.sandbox-name",
                                     "io.kubernetes.cri.sandbox-uid",
                                     "io.kubernetes.cri.container-name",
                                     "io.kubernetes.cri.image-name",
                                     ""};
inline constexpr CriKeys kCrio{"CRI-O",
                               "io.kubernetes.cri-o.ContainerType",
                               "io.kubernetes.pod.namespace",
                               "io.kubernetes.pod.name",
                               "io.kubernetes.pod.uid",
                               "io.kubernetes.container.name",
                               "io.kubernetes.cri-o.ImageName",
                               "io.kubernetes.cri-o.ImageRef"};
inline constexpr const CriKeys* kEngines[] = {&kContainerd, &kCrio};

// kCrioLabels is CRI-O's own JSON copy of the container's labels (the
// kubelet's io.kubernetes.pod.* among them), written after the pod's
// annotations: where present, the copied label keys must agree with it.
inline constexpr std::string_view kCrioLabels = "io.kubernetes.cri-o.Labels";

// PodRef names a pod; empty when unknown.
struct PodRef {
  std::string ns;
  std::string name;
  bool empty() const { return name.empty(); }
  std::string str() const { return ns + "/" + name; }
  bool operator==(const PodRef&) const = default;
};

// Cri is what the engine that wrote a spec says of it.
struct Cri {
  const CriKeys* engine = nullptr;  // nullptr: not created through CRI
  ContainerKind kind = ContainerKind::unknown;
  PodRef pod;
  std::string uid;        // empty on containerd < 1.6.11
  std::string container;  // empty for a sandbox
};

// read_cri reads the spec's CRI identity from its engine's keys. Throws
// Error when both families are present and disagree on any of the five
// keys, or CRI-O's labels disagree with the copied label keys.
Cri read_cri(const Spec& spec);

// kind_of is read_cri(spec).kind. Throws as read_cri.
ContainerKind kind_of(const Spec& spec);

// pod_namespace is the pod's namespace as the spec's engine wrote it;
// nullopt outside CRI. Throws as read_cri.
std::optional<std::string> pod_namespace(const Spec& spec);

// image_references are the references to the image of a workload container
// as the spec's engine wrote them (CriKeys::image and image_ref, the ones
// present and not empty): what `match.images` globs are matched against.
// Empty for a sandbox (containerd writes no image-name for one, CRI-O the
// pause image) and outside CRI. When both families are present, their image
// names must agree as the identity keys must: one of them was copied from
// the pod. Throws as read_cri, and when they disagree.
std::vector<std::string> image_references(const Spec& spec);

// foreign_key tells an identity or image key no engine wrote for this spec:
// a key of a family other than the spec's engine (all of them outside CRI).
// Such a key is tenant input, and a `match` table reads it as absent.
bool foreign_key(const Spec& spec, std::string_view key);

// Identity is who a spec belongs to. For containers created through CRI the
// pod and container come from the engine's own keys (read_cri). A container
// created outside CRI has none; it may name a pod with specshim.io/pod.
struct Identity {
  bool cri = false;       // created through containerd's or CRI-O's CRI
  PodRef pod;             // empty when unknown
  std::string uid;        // pod UID; empty when unknown (outside CRI, containerd < 1.6.11)
  std::string container;  // Kubernetes container name; empty outside CRI
};

// kPod names a pod for a container created outside CRI: <ns>/<name>.
inline constexpr const char* kPod = "specshim.io/pod";

// identify reads the identity. Throws Error as read_cri, for a malformed
// specshim.io/pod, and when a CRI container's specshim.io/pod names another
// pod than its own.
Identity identify(const Spec& spec);

// privileged tells a container its engine made privileged, as containerd
// and CRI-O write `privileged: true`: device rules that allow every device
// (allows_all) and a bounding set with every capability of caps::kEveryKernel
// that this process holds (containerd gives a privileged container all of
// its own, and its runtime holds the same: a node in a container may lack some).
// CAP_SYS_ADMIN alone, or `capabilities: add: [ALL]`, is not privileged: such
// a container is bound by its grant. A privileged pod on a handler with
// privileged_without_host_devices (and not ..._all_devices_allowed) gets no
// allow-all rule, so it is not privileged here either.
bool privileged(const Spec& spec);

}  // namespace specshim::pod_identity
