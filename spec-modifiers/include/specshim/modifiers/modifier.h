// SPDX-License-Identifier: Apache-2.0
// The Modifier interface and the per-create Context it sees.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specshim/base/file_owner.h"
#include "specshim/base/spec.h"
#include "specshim/node/grant.h"
#include "specshim/node/pod_identity.h"

namespace specshim {

// BundleFile is a file a modifier wants next to config.json (a generated
// /etc/passwd, say). It is written by the shim, atomically, only after the
// whole chain succeeded and just before config.json; dry-run only lists it.
struct BundleFile {
  std::string content;
  unsigned mode = 0644;
  std::optional<FileOwner> owner = std::nullopt;  // unset: root, who writes it
};

// DeviceRequest is a CDI request handed to the cdi modifier in memory, not
// as an annotation, so neither it nor the grant it must stay within can be
// forged by a tenant (env-devices makes them).
struct DeviceRequest {
  enum class Scope {
    names,  // the qualified names below
    all,    // every device of kind (its `all` device when the spec has one)
    none,   // the spec-level edits of kind's spec files, no device
  };
  std::string from = {};    // the modifier that made it
  std::string origin = {};  // "env NVIDIA_VISIBLE_DEVICES=\"GPU-a\" of container `main` of pod `ns/p`"
  std::string kind = {};    // vendor/class
  Scope scope = Scope::names;
  std::vector<std::string> names = {};  // qualified CDI names; Scope::names only
  // Granted is what the kubelet granted, the bound a request is checked
  // against: a requested device is within it when the host device nodes it
  // opens are among those of the granted devices (an index and a UUID naming
  // one GPU open the same node).
  struct Granted {
    std::vector<std::string> names = {};  // qualified
    bool all = false;                     // every device of kind is granted
    std::string what = {};                // "granted by `nvidia.com/gpu` (the checkpoint)"
    bool clamp = false;                   // beyond it: inject the grant instead of failing
  };
  std::optional<Granted> granted = {};  // nullopt: not checked (a trusted container)
  // visible: this runtime sees only some of the node's devices (it runs
  // inside a container: dind); `all` and index names count among the
  // devices of kind whose every node is present here ([[env-devices]]
  // scope = "visible"). On a node, where all are present, it changes
  // nothing; the bound is checked by host node either way.
  bool visible = false;
};

// Context is what a modifier knows about the create besides the spec.
struct Context {
  std::filesystem::path bundle;  // absolute bundle directory
  std::string container_id;      // empty in dry-run
  ContainerKind kind = ContainerKind::unknown;
  bool dry_run = false;
  bool allow_allocate = true;  // may call device-plugin Allocate (dry-run: only with --allow-allocate)
  int pass = 0;                // 1-based pass of the fixed-point chain

  // Files to write into the bundle, by file name (no directories).
  std::map<std::string, BundleFile> bundle_files;

  // Where a CDI name handed over in specshim.io/cdi-devices came from, by
  // qualified name ("DRA claim `ns/gpus` of container `main`, driver
  // `gpu.example.com`"): the cdi modifier quotes it when it cannot resolve
  // the name. Kept out of the spec, so tenant annotations cannot forge it.
  std::map<std::string, std::string> cdi_origins;

  // The answers device-plugin merged into this spec, and the requests cdi
  // resolves besides the annotations. Both live for the whole create; a
  // modifier that adds to them replaces what it added in an earlier pass.
  std::vector<Grant> grants;
  std::vector<DeviceRequest> device_requests;

  // rootfs returns root.path resolved against the bundle, or empty when the
  // spec has no root.path.
  std::filesystem::path rootfs(const Spec& spec) const;
};

// Feed is a part of the Context that modifiers pass on to each other: one
// fills it in, a later one reads it. The chain runs a modifier again only
// when the spec changed, never for the context, so a reader placed before
// its writer would never see what was written: build_chain refuses such an
// order, naming both.
enum class Feed {
  grants,           // Context::grants: device-plugin writes, env-devices reads
  device_requests,  // Context::device_requests: env-devices and hotplug write, cdi reads
  cdi_origins,      // Context::cdi_origins: device-plugin writes, cdi reads
};
// feed_name is how a message names it: "the device requests".
const char* feed_name(Feed feed);
// Feeds is what a modifier writes to and reads from the context.
struct Feeds {
  std::vector<Feed> produces = {};
  std::vector<Feed> consumes = {};
};

// Modifier changes a spec for one concern. Contract:
//  - apply converges: run on its own output it changes nothing, or moves on
//    towards a fixed point the chain reaches in a few passes (device-plugin
//    follows, in the next pass, an annotation it added itself);
//  - it touches only the fields it owns and keeps everything else as it is;
//  - it throws specshim::Error with an actionable message on failure;
//  - collaborators (config, clients) come in through the constructor.
class Modifier {
 public:
  virtual ~Modifier() = default;
  // name is the modifier's kebab-case id, the same string in config keys,
  // log lines, error context and golden-case directories.
  virtual std::string_view name() const = 0;
  virtual void apply(Spec& spec, Context& ctx) = 0;
  // last_change may say what the last apply changed, in the modifier's own
  // terms ("merged `nvidia.com/gpu` GPU-1"); the chain quotes it when the
  // spec does not converge. Empty: nothing to add to the modifier's name.
  virtual std::string last_change() const { return {}; }
  // idempotent is true when apply, run on its own output with the same
  // context, never changes anything. The chain does not run such a modifier
  // again while nothing changed since it last ran.
  virtual bool idempotent() const { return false; }
  // feeds declares the parts of the Context this modifier writes and reads
  // (Feed); build_chain orders nothing by it, it refuses a wrong order.
  virtual Feeds feeds() const { return {}; }
};

}  // namespace specshim
