// SPDX-License-Identifier: Apache-2.0
// Doctor's kubelet check: what the device-plugin modifier would ask, asked
// the way it asks: through the specshim-kubelet helper (no gRPC in this
// process), under the configured kubelet root, each call bounded by the
// configured budget. PodResources (GetAllocatableResources, then Get as a
// create calls it, then List for what pods hold besides devices: DRA claims,
// exclusive CPUs, pinned memory), every device plugin's device list, and the
// device manager's checkpoint. With the modifier off the kubelet is still probed,
// but nothing found here is a problem.
#include <algorithm>

#include "doctor/doctor.h"
#include "specshim/kubelet/checkpoint.h"
#include "specshim/kubelet/client.h"

namespace specshim::shim::doctor {
namespace {

namespace fs = std::filesystem;

// The pod the Get probe asks for: a NotFound answer proves the kubelet
// serves the call creates make (names with '_' are not valid pod names, so
// it cannot exist).
constexpr const char* kProbeNamespace = "specshim_doctor";
constexpr const char* kProbePod = "no_such_pod";

std::size_t total(const kubelet::ResourceDevices& devices) {
  std::size_t n = 0;
  for (const auto& [resource, ids] : devices) n += ids.size();
  return n;
}

// cpu_list writes CPU ids in cpuset list syntax: 0-3,8.
std::string cpu_list(std::vector<std::int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ids[i]) + (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return out;
}

// assignment_lines describes one container's DRA claims (one line per
// claimed device), exclusive CPUs and pinned memory.
std::vector<std::string> assignment_lines(const std::string& who, const kubelet::ContainerAssignment& a) {
  std::vector<std::string> out;
  for (const auto& claim : a.dynamic_resources)
    for (const auto& r : claim.claim_resources)
      out.push_back(who + ": DRA claim `" + claim.claim_namespace + "/" + claim.claim_name + "`, driver `" +
                    r.driver_name + "`, device " + r.pool_name + "/" + r.device_name +
                    (r.share_id ? " (share " + *r.share_id + ")" : "") + ", CDI " +
                    (r.cdi_devices.empty() ? std::string("none") : join(r.cdi_devices, ",")));
  if (!a.cpu_ids.empty()) out.push_back(who + ": exclusive CPUs " + cpu_list(a.cpu_ids));
  for (const auto& m : a.memory)
    out.push_back(who + ": " + m.memory_type + " " + std::to_string(m.size) + " bytes on NUMA nodes " +
                  cpu_list(m.numa_nodes));
  return out;
}

// Probe is one run of the check: where the kubelet is, how long each call
// may take, and how bad a kubelet that does not answer is.
class Probe {
 public:
  Probe(const Host& host, const Loaded& loaded, Check& check)
      : root_(host.path(loaded.device_plugin.kubelet_root.string())),
        budget_(loaded.device_plugin.budget),
        problem_(loaded.on("device-plugin") ? Status::fail : Status::info),
        check_(check) {}

  void pod_resources() {
    fs::path socket = kubelet::pod_resources_socket(root_);
    if (!present(socket, " (no kubelet here, or another kubelet-root)")) return;
    if (std::string why = connect_unix(socket); !why.empty()) {
      check_.add(problem_, socket.string() + ": " + why);
      return;
    }
    if (!client()) return;
    if (!allocatable(socket)) return;
    get(socket);
    pods(socket);
  }

  void plugins() {
    fs::path dir = kubelet::device_plugin_dir(root_);
    if (!present(dir, "")) return;
    std::vector<kubelet::PluginInfo> plugins;
    try {
      if (kubelet::plugin_sockets(dir).empty()) {
        check_.add(Status::info, dir.string() + ": no device-plugin sockets");
        return;
      }
      if (!client()) return;
      plugins = client_->list_plugins(kubelet::Budget(budget_));
    } catch (const kubelet::Error& e) {
      check_.add(problem_, e.what());
      return;
    }
    for (const auto& p : plugins) {
      if (!p.reachable()) {
        check_.add(problem_, p.error);
        continue;
      }
      std::vector<std::string> ids;
      std::size_t unhealthy = 0;
      for (const auto& d : p.devices) {
        bool healthy = d.health == "Healthy";
        unhealthy += !healthy;
        ids.push_back(healthy ? d.id : d.id + " (" + (d.health.empty() ? "no health" : d.health) + ")");
      }
      std::string resource =
          p.resource.empty() ? "resource unknown (not registered in the checkpoint)" : "`" + p.resource + "`";
      check_.add(Status::ok,
                 p.socket.string() + ": " + resource + ", " + count(p.devices.size(), "device") +
                     (unhealthy ? " (" + std::to_string(unhealthy) + " not healthy)" : ""),
                 ids);
    }
  }

  // checkpoint reads the file the modifier reads first, with its reader.
  void checkpoint() {
    fs::path file = kubelet::checkpoint_file(root_);
    try {
      auto cp = kubelet::Checkpoint::read(file);
      if (!cp) {
        check_.add(Status::info, file.string() + ": absent (creates ask PodResources instead)");
        return;
      }
      std::vector<std::string> registered;
      for (const auto& [resource, ids] : cp->registered_devices())
        registered.push_back(resource + ": " + count(ids.size(), "device"));
      check_.add(Status::ok,
                 file.string() + ": " + count(cp->size(), "allocation") + ", " +
                     count(cp->registered_devices().size(), "registered resource"),
                 registered);
    } catch (const kubelet::Error& e) {
      check_.add(problem_, e.what());
    }
  }

 private:
  // present reports path as absent, a problem_, when it is not there.
  bool present(const fs::path& path, std::string_view why) {
    std::error_code ec;
    if (fs::exists(path, ec)) return true;
    check_.add(problem_, path.string() + ": absent" + std::string(why));
    return false;
  }

  // client makes the helper client on the first RPC, as the modifier does,
  // after finding the helper (reported once, with the problem status when
  // it is missing).
  kubelet::KubeletClient* client() {
    if (client_ || helper_failed_) return client_.get();
    try {
      fs::path helper = kubelet::find_helper();
      check_.add(Status::info,
                 "helper " + helper.string() + ", budget " + std::to_string(budget_.count()) + " ms per call");
      client_ = kubelet::make_helper_client({root_}, helper);
    } catch (const kubelet::Error& e) {
      helper_failed_ = true;
      check_.add(problem_, e.what());
    }
    return client_.get();
  }

  // allocatable reports the node's devices; false when the kubelet does not
  // answer at all (then Get is not tried). Any other error (a kubelet
  // before 1.23, or the call gated off) is a note: creates do not use it.
  bool allocatable(const fs::path& socket) {
    try {
      auto devices = client_->allocatable(kubelet::Budget(budget_));
      check_.add(Status::ok, socket.string() + ": GetAllocatableResources: " + count(devices.size(), "resource") +
                                 ", " + count(total(devices), "device"));
      for (const auto& [resource, ids] : devices)
        check_.add(Status::info, "allocatable `" + resource + "`: " + count(ids.size(), "device"), ids);
      return true;
    } catch (const kubelet::Error& e) {
      auto kind = kubelet::kind_of(e);
      bool answered = kind == kubelet::ErrorKind::other || kind == kubelet::ErrorKind::not_found;
      check_.add(answered ? Status::info : problem_, e.what());
      return answered;
    }
  }

  // get asks for a pod that cannot exist, as a create asks for its own: a
  // NotFound answer means the call works (through List when the kubelet
  // has Get disabled, which costs every create a list of all pods).
  void get(const fs::path& socket) {
    try {
      client_->pod_resources(kProbeNamespace, kProbePod, kubelet::Budget(budget_));
      check_.add(Status::ok, socket.string() + ": PodResources Get answers");
    } catch (const kubelet::NotFound& e) {
      bool listed = std::string_view(e.what()).starts_with("call List");
      check_.add(Status::ok, socket.string() + (listed ? ": PodResources Get is disabled here: creates use List"
                                                       : ": PodResources Get answers"));
    } catch (const kubelet::Error& e) {
      check_.add(problem_, e.what());
    }
  }

  // pods lists, per container (details: --verbose), what the kubelet
  // assigned besides device-plugin devices, and says when no container has
  // DRA claims: PodResources cannot tell "no pod uses DRA" from "not
  // reported" (gate KubeletPodResourcesDynamicResources off, or a kubelet
  // that predates the field), so that is a note, not a warning.
  void pods(const fs::path& socket) {
    std::vector<kubelet::PodResources> pods;
    try {
      pods = client_->list_pods(kubelet::Budget(budget_));
    } catch (const kubelet::Error& e) {
      check_.add(problem_, e.what());
      return;
    }
    std::size_t with_claims = 0, with_cpus = 0;
    std::vector<std::string> lines;
    for (const auto& p : pods) {
      bool claims = false, cpus = false;
      for (const auto& [container, a] : p.assignments) {
        claims |= !a.dynamic_resources.empty();
        cpus |= !a.cpu_ids.empty();
        auto more = assignment_lines("pod `" + p.ns + "/" + p.name + "` container `" + container + "`", a);
        lines.insert(lines.end(), more.begin(), more.end());
      }
      with_claims += claims;
      with_cpus += cpus;
    }
    check_.add(Status::ok,
               socket.string() + ": PodResources List: " + count(pods.size(), "pod") + ", " +
                   std::to_string(with_claims) + " with DRA claims, " + std::to_string(with_cpus) +
                   " with exclusive CPUs",
               lines);
    if (with_claims == 0)
      check_.add(Status::info,
                 "no container has DRA claims (PodResources dynamic_resources): no pod here uses DRA, or the "
                 "kubelet does not report them (gate KubeletPodResourcesDynamicResources off, or a kubelet before "
                 "1.34 without the gate on); [device-plugin.dra] hands nothing to siblings then");
  }

  fs::path root_;
  std::chrono::milliseconds budget_;
  Status problem_;
  Check& check_;
  std::unique_ptr<kubelet::KubeletClient> client_;
  bool helper_failed_ = false;
};

}  // namespace

Check check_kubelet(const Host& host, const Loaded& loaded) {
  Check c("kubelet");
  if (!loaded.on("device-plugin"))
    c.add(Status::info, "device-plugin modifier off: the kubelet is probed, nothing found here is a problem");
  Probe probe(host, loaded, c);
  probe.pod_resources();
  probe.plugins();
  probe.checkpoint();
  return c;
}

}  // namespace specshim::shim::doctor
