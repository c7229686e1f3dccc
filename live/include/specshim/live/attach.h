// SPDX-License-Identifier: Apache-2.0
// The hot-plug engine: give a running container devices and bind mounts and
// take them back, recorded in <bundle>/specshim-attached.json
// (attach_record.h). attach, detach and reconcile drive it, diagnose reads
// its record. A change is planned on the record first (plan, release), then
// the container is moved from the old record to the new one (transition),
// each step undone in reverse when a later one fails. The engine prints
// nothing: it returns what it did and what it warns. See docs/attach.md.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "specshim/base/fs.h"
#include "specshim/base/spec.h"
#include "specshim/live/attach_record.h"
#include "specshim/live/process.h"
#include "specshim/live/runtime_state.h"
#include "specshim/node/pod_allocation.h"

namespace specshim::live::attach {

// Setup is what the engine needs of specshim's config and command line,
// read once by the verb.
struct Setup {
  std::filesystem::path runtime;  // the delegate runtime (found as create finds it)
  std::string root;               // its --root; empty: its own default
  // [cdi] spec-dirs; nullopt when [cdi] enabled = false (--cdi is refused,
  // naming config_file).
  std::optional<std::vector<std::string>> cdi_dirs;
  std::string config_file;
  // [nri] state-dir: a container specshim-nri's chain created has its
  // create-time hot-plug grant there (current_record).
  std::filesystem::path nri_state_dir = {};
};

// Target is a container opened for a change.
struct Target {
  std::string id;
  ContainerState state;
  Process process;  // pinned when the container must be live
  Spec spec;
};
// open_target asks the runtime for the container's state, pins its process
// when require_live, and reads its spec. Throws Error.
Target open_target(const Setup& setup, const std::string& id, bool require_live);

// BundleLock holds flock(LOCK_EX) on <bundle>/specshim-attached.lock for the
// whole read-modify-write of the record and the cgroup program built from
// it, so concurrent attaches, detaches and reconciles serialize. It waits at
// most 30 s.
class BundleLock {
 public:
  explicit BundleLock(const std::filesystem::path& bundle);

 private:
  fs::Fd fd_;
};

// Wanted is what arguments (or a desired-state entry) ask for, before it is
// compared with the record. Each device and mount carries its references:
// direct and cdi for attach's arguments, reconcile for reconcile's wants.
struct Wanted {
  std::vector<RecordedDevice> devices;
  std::vector<RecordedMount> mounts;
  std::vector<NotApplied> not_applied;
};
// device_wanted is a --device argument's node (direct).
RecordedDevice device_wanted(const DeviceArg& a);
// cdi_wanted adds the named CDI devices from setup's spec dirs. An unknown
// name fails naming every spec file that did not load, as create does.
void cdi_wanted(const Setup& setup, const Target& t, const std::vector<std::string>& names, Wanted& w);
// gpu_nodes maps GPU UUIDs to their nodes through <proc>/driver/nvidia/gpus.
std::vector<std::string> gpu_nodes(const std::vector<std::string>& uuids, const std::string& proc);
// not_applied_reason says why a running container cannot take a CDI edit.
std::string not_applied_reason(const std::string& edit);

// check_bound applies [hotplug] bound as attach and reconcile do (the
// hotplug modifier applies the same check at create). bound is what the
// node's kubelet, CDI spec dirs and driver say, read once for its life (one
// attach, one reconcile pass); with bound = "none" there is none. It throws pod_allocation::Refused when w would give t
// an accelerator the kubelet did not allocate to a container of t's pod, naming each such device (and its GPU), the pod
// and what the pod holds. A null bound checks nothing.
void check_bound(pod_allocation::Node* bound, const Target& t, const Wanted& w);

// Plan is the record after an attach and what in it is new.
struct Plan {
  Record record;
  std::vector<std::size_t> new_devices;  // indexes into record.devices
  std::vector<std::size_t> new_mounts;
};
// plan merges what is wanted into the record: a node at a path already
// attached with the same device and permissions only gains the references;
// another device there is an error naming who attached it.
Plan plan(Record rec, const Wanted& w);

// Release is what to let go of: nodes attached with --device (by container
// path), CDI devices attached with --cdi, desired-state wants reconcile holds.
struct Release {
  std::vector<std::string> devices;
  std::vector<std::string> cdi;
  std::vector<std::string> wants;
};
// Released is the record after a release, and the wants released whose CDI
// device the hotplug modifier put in the spec at create: its nodes and
// mounts stay until the container is created again.
struct Released {
  Record record;
  std::vector<std::string> in_spec;
};
// release drops r's references from the record, then what nothing holds any
// more. A device or CDI name that is not attached, or a node held otherwise
// than r says, is an error naming who holds it; a want that is not held is
// nothing to release.
Released release(Record rec, const Release& r);

// Change is what a transition did: the record written, the nodes and mounts
// made (with how) and removed, and what it warns of.
struct Change {
  Record record;
  std::vector<RecordedDevice> made, removed;
  std::vector<RecordedMount> mounted, unmounted;
  std::vector<std::string> warnings;
};
// transition moves a live container from what before records to what after
// records, under the BundleLock the caller holds: (1) the cgroup rules, (2)
// the mounts and nodes gone from after removed, (3) the new ones made, (4)
// the directories made for removed ones removed when empty, (5) the record
// written. Each step pushes its undo; when a later step fails, the undos run
// in reverse and the Error ends in "; nothing was changed" or lists the undo
// that failed. Nothing to change writes nothing.
Change transition(const Target& t, const Record& before, Record after);

}  // namespace specshim::live::attach
