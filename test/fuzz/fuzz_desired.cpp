// SPDX-License-Identifier: Apache-2.0
// Fuzzes the desired-state file of declarative hot-plug (specshim/node/hotplug.h,
// read by every create when [hotplug] is on, and by `specshim reconcile`) and
// the grant file the hotplug modifier leaves in a bundle. A parsed file has
// entries with a line, either a pod or an id, canonical device arguments and
// one key per want; parse_desired's own sharing check holds again; an entry
// is what select returns for its own container; and a grant that parses
// writes back to the same grant. Only specshim::Error may be thrown.
//
// The bound ([hotplug] bound = "pod-allocation"): on a node whose driver
// lists four GPUs, of which pod dev/box-7 holds only GPU 0, an entry's GPU
// wants for the box's container pass exactly when every one is GPU 0; its
// other devices (no accelerator here) never make a difference.
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>

#include "specshim/base/error.h"
#include "specshim/kubelet/errors.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/cdi.h"
#include "specshim/node/hotplug.h"
#include "specshim/node/nvidia_gpus.h"
#include "specshim/node/pod_allocation.h"

using namespace specshim;
using namespace specshim::hotplug;

namespace {

// gpu_node maps a UUID to one of four nodes, so different UUIDs may share
// one, and refuses UUIDs starting with 'x' as unknown.
std::string gpu_node(const std::string& uuid) {
  if (!uuid.empty() && uuid[0] == 'x') throw Error("GPU `" + uuid + "` is not on this node");
  return "/dev/nvidia" + std::to_string(std::hash<std::string>{}(uuid) % 4);
}

void check_entry(const Desired& d, const Entry& e) {
  if (e.line <= 0) std::abort();
  // exactly one of pod, id and docker
  if ((e.pod.has_value() ? 1 : 0) + (e.id.empty() ? 0 : 1) + (e.docker.empty() ? 0 : 1) != 1) std::abort();
  if (e.pod && (e.pod->ns.empty() || e.pod->name.empty() || e.pod->container.empty())) std::abort();
  if (e.who().empty()) std::abort();
  if (d.where(e) != d.file + ":" + std::to_string(e.line)) std::abort();
  auto keys = e.keys();
  if (keys.size() != e.devices.size() + e.gpus.size() + e.cdi.size()) std::abort();
  for (std::size_t i = 0; i < e.devices.size(); ++i) {
    const DeviceArg& a = e.devices[i];
    // Canonical: the key's argument parses back to the same device.
    std::string_view key = keys[i];
    if (key.substr(0, 7) != "device ") std::abort();
    if (!(parse_device_arg(key.substr(7)) == a)) std::abort();
    if (canonical_permissions(a.permissions) != a.permissions) std::abort();
    if (a.host.empty() || a.host[0] != '/' || a.container.empty() || a.container[0] != '/') std::abort();
  }
  for (const auto& g : e.gpus)
    if (g.empty() || contains_control(g)) std::abort();
  for (const auto& c : e.cdi)
    if (!cdi::parse_qualified_name(c)) std::abort();
  // Its own container selects it: duplicates are refused, so it is the only
  // one (a pod entry's container has no id an id entry could name).
  if (e.pod) {
    pod_identity::Identity id;
    id.cri = true;
    id.pod = {e.pod->ns, e.pod->name};
    id.container = e.pod->container;
    if (select(d, "", id) != &e) std::abort();
    id.cri = false;  // outside CRI a pod entry selects nothing
    if (select(d, "", id) != nullptr) std::abort();
  } else if (!e.docker.empty()) {
    // The container dockerd gave that name, and only it (no id is a name).
    if (!docker::is_name(e.docker) || e.who() != "docker container `" + e.docker + "`") std::abort();
    if (select(d, "", pod_identity::Identity{}, e.docker) != &e) std::abort();
    if (select(d, e.docker, pod_identity::Identity{}) == &e) std::abort();
  } else {
    if (select(d, e.id, pod_identity::Identity{}) != &e) std::abort();
    if (!e.selects(e.id, pod_identity::Identity{})) std::abort();
  }
}

const char* kGpus[] = {"GPU-00000000-0000-4000-8000-000000000000", "GPU-00000000-0000-4000-8000-000000000001",
                       "GPU-00000000-0000-4000-8000-000000000002", "GPU-00000000-0000-4000-8000-000000000003"};

std::filesystem::path driver_list() {
  std::string dir = "/tmp/specshim-fuzz-desired-XXXXXX";
  if (!::mkdtemp(dir.data())) std::abort();
  for (int i = 0; i < 4; ++i) {
    std::filesystem::path info =
        std::filesystem::path(dir) / "driver/nvidia/gpus" / ("0000:0" + std::to_string(i) + ":00.0");
    std::filesystem::create_directories(info);
    std::ofstream(info / "information") << "Model: stand-in\nGPU UUID: " << kGpus[i] << "\nDevice Minor: " << i << "\n";
  }
  return dir;
}

void check_bound(const Entry& e, const pod_identity::Identity& box) {
  static const std::filesystem::path proc = driver_list();
  static const std::vector<nvidia::Gpu> gpus = nvidia::read_gpus(proc);
  pod_allocation::Sources sources;
  sources.resources = {"nvidia.com/gpu"};
  sources.proc = proc;
  sources.kubelet_root = proc / "no-kubelet";  // no checkpoint: PodResources alone
  pod_allocation::Node node(sources, [](const std::string& ns, const std::string& name) {
    if (ns != "dev" || name != "box-7") throw kubelet::NotFound("no such pod");
    kubelet::PodResources pr;
    pr.ns = ns;
    pr.name = name;
    pr.containers["main"]["nvidia.com/gpu"] = {kGpus[0]};
    return pr;
  });
  std::vector<pod_allocation::Asked> wants;
  bool beyond = false;
  for (const auto& uuid : e.gpus) {
    const nvidia::Gpu* g = nullptr;
    for (const auto& one : gpus)
      if (one.uuid == uuid) g = &one;
    if (!g) continue;  // not on this node: attach refuses it by name, before the bound
    beyond = beyond || g->minor != 0;
    wants.push_back({"gpu " + uuid, g->node(), {'c', 195, g->minor}});
  }
  for (const auto& d : e.devices)
    if (auto n = pod_allocation::number_of(d.host)) wants.push_back({"device " + d.host, d.host, *n});
  pod_allocation::Target target;
  target.identity = box;
  bool refused = false;
  try {
    pod_allocation::check_bound(node, target, wants);
  } catch (const pod_allocation::Refused&) {
    refused = true;
  }
  if (refused != beyond) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  try {
    hotplug::CreateGrant g = parse_grant(text, "fuzz.json");
    std::string written = grant_json(g);
    if (!(parse_grant(written, "again") == g)) std::abort();
    if (grant_json(parse_grant(written, "again")) != written) std::abort();
  } catch (const Error&) {
  }

  Desired d;
  try {
    d = parse_desired(text, "fuzz.yaml");
  } catch (const Error&) {
    return 0;
  }
  if (d.file != "fuzz.yaml" || d.entries.size() > kMaxEntries) std::abort();
  for (const auto& e : d.entries) check_entry(d, e);
  check_sharing(d);  // parse_desired checked it: it must not throw now
  try {
    check_sharing(d, gpu_node);
  } catch (const Error&) {
  }
  pod_identity::Identity box;
  box.cri = true;
  box.pod = {"dev", "box-7"};
  box.container = "main";
  try {
    if (const Entry* e = select(d, "c0ffee", box); e && !e->selects("c0ffee", box)) std::abort();
  } catch (const Error&) {
  }
  for (const auto& e : d.entries) check_bound(e, box);
  return 0;
}
