// SPDX-License-Identifier: Apache-2.0
// Doctor's kubelet check: what the device-plugin modifier would ask, asked
// the way it asks: through the specshim-kubelet helper (no gRPC in this
// process), under the configured kubelet root, each call bounded by the
// configured budget. PodResources (GetAllocatableResources, then Get as a
// create calls it, then List for what pods hold besides devices: DRA claims,
// exclusive CPUs, pinned memory), every device plugin's device list, and the
// device manager's checkpoint. With the modifier off the kubelet is still probed,
// but nothing found here is a problem. Two plugins serving one resource are a
// warning either way: the kubelet itself hands pods one plugin's answer.
#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>

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

// Served is what the node says about the resource one plugin serves: the
// resource its devices are known as (the checkpoint's registered and
// allocated devices, GetAllocatableResources) or, with none of them, the
// [[device-plugin.resources]] entry that names its socket; why, for the
// report; tied, the resources its devices are known as equally often.
struct Served {
  std::string resource;  // empty: unknown or tied
  std::vector<std::string> why;
  std::vector<std::string> tied;
};

// Probe is one run of the check: where the kubelet is, how long each call
// may take, and how bad a kubelet that does not answer is.
class Probe {
 public:
  Probe(const Host& host, const Loaded& loaded, Check& check)
      : host_(host),
        config_(loaded.device_plugin),
        root_(host.path(loaded.device_plugin.kubelet_root.string())),
        budget_(loaded.device_plugin.budget),
        problem_(loaded.on("device-plugin") ? Severity::fail : Severity::info),
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
        check_.add(Severity::info, dir.string() + ": no device-plugin sockets");
        return;
      }
      if (!client()) return;
      plugins = client_->list_plugins(kubelet::Budget(budget_));
    } catch (const kubelet::Error& e) {
      check_.add(problem_, e.what());
      return;
    }
    auto sources = evidence();
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
      Served served = serves(p, sources);
      std::string resource = "`" + served.resource + "`";
      if (served.resource.empty())
        resource = served.tied.empty() ? "resource unknown (its devices are neither in the checkpoint nor allocatable)"
                                       : "resource unclear (its devices are known as " + ticked(served.tied) + ")";
      else
        by_resource_[served.resource].emplace_back(p.socket.string(), join(served.why, ", "));
      check_.add(Severity::ok,
                 p.socket.string() + ": " + resource + ", " + count(p.devices.size(), "device") +
                     (unhealthy ? " (" + std::to_string(unhealthy) + " not healthy)" : ""),
                 ids);
    }
  }

  // shared warns about every resource more than one reachable plugin
  // serves. The kubelet keeps one endpoint per resource name, the last to
  // register, and hands a pod that plugin's Allocate answer alone: what the
  // other's answer sets (HAMi's memory and compute limits) is lost, silently.
  void shared() {
    for (const auto& [resource, plugins] : by_resource_) {
      if (plugins.size() < 2) continue;
      std::vector<std::string> sockets, why;
      for (const auto& [socket, evidence] : plugins) {
        sockets.push_back(socket);
        why.push_back(socket + ": " + evidence);
      }
      std::string guard =
          "list the env keys a pod must get (e.g. CUDA_DEVICE_MEMORY_LIMIT_*) in the resource's "
          "[[device-plugin.resources]] require-env, so a create whose answer lacks them fails";
      if (const auto* r = config_.find(resource); r && !r->require_env.empty())
        guard = "require-env (" + ticked(r->require_env) + ") makes a create whose answer lacks them fail";
      check_.add(Severity::warn,
                 "`" + resource + "` is served by " + std::to_string(plugins.size()) +
                     " device plugins: " + join(sockets, ", ") +
                     "; the kubelet calls only the one that registered last, so a pod gets that plugin's "
                     "Allocate answer alone, without what the others' answers set (HAMi's "
                     "CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_SM_LIMIT: its memory and compute limits); run "
                     "one plugin per resource; " +
                     guard,
                 why);
    }
  }

  // checkpoint reports the file the modifier reads first, read with its reader.
  void checkpoint() {
    fs::path file = kubelet::checkpoint_file(root_);
    try {
      const auto& cp = loaded_checkpoint();
      if (!cp) {
        check_.add(Severity::info, file.string() + ": absent (creates ask PodResources instead)");
        return;
      }
      std::vector<std::string> registered;
      for (const auto& [resource, ids] : cp->registered_devices())
        registered.push_back(resource + ": " + count(ids.size(), "device"));
      check_.add(Severity::ok,
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
      check_.add(Severity::info,
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
      allocatable_ = devices;
      check_.add(Severity::ok, socket.string() + ": GetAllocatableResources: " + count(devices.size(), "resource") +
                                   ", " + count(total(devices), "device"));
      for (const auto& [resource, ids] : devices)
        check_.add(Severity::info, "allocatable `" + resource + "`: " + count(ids.size(), "device"), ids);
      return true;
    } catch (const kubelet::Error& e) {
      auto kind = kubelet::kind_of(e);
      bool answered = kind == kubelet::ErrorKind::other || kind == kubelet::ErrorKind::not_found;
      check_.add(answered ? Severity::info : problem_, e.what());
      return answered;
    }
  }

  // get asks for a pod that cannot exist, as a create asks for its own: a
  // NotFound answer means the call works (through List when the kubelet
  // has Get disabled, which costs every create a list of all pods).
  void get(const fs::path& socket) {
    try {
      client_->pod_resources(kProbeNamespace, kProbePod, kubelet::Budget(budget_));
      check_.add(Severity::ok, socket.string() + ": PodResources Get answers");
    } catch (const kubelet::NotFound& e) {
      bool listed = std::string_view(e.what()).starts_with("call List");
      check_.add(Severity::ok, socket.string() + (listed ? ": PodResources Get is disabled here: creates use List"
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
    check_.add(Severity::ok,
               socket.string() + ": PodResources List: " + count(pods.size(), "pod") + ", " +
                   std::to_string(with_claims) + " with DRA claims, " + std::to_string(with_cpus) +
                   " with exclusive CPUs",
               lines);
    if (with_claims == 0)
      check_.add(Severity::info,
                 "no container has DRA claims (PodResources dynamic_resources): no pod here uses DRA, or the "
                 "kubelet does not report them (gate KubeletPodResourcesDynamicResources off, or a kubelet before "
                 "1.34 without the gate on); [device-plugin.dra] hands nothing to siblings then");
  }

  // loaded_checkpoint reads the checkpoint once, for the plugins' resources
  // and for its own report; a read error is thrown each time it is asked.
  const std::optional<kubelet::Checkpoint>& loaded_checkpoint() {
    if (!checkpoint_read_) {
      checkpoint_read_ = true;
      try {
        checkpoint_ = kubelet::Checkpoint::read(kubelet::checkpoint_file(root_));
      } catch (const kubelet::Error&) {
        checkpoint_error_ = std::current_exception();
      }
    }
    if (checkpoint_error_) std::rethrow_exception(checkpoint_error_);
    return checkpoint_;
  }

  // Sources are the device IDs the node knows per resource, by how it knows
  // them: "registered", "allocated" (the checkpoint), "allocatable".
  using Sources = std::vector<std::pair<std::string, kubelet::ResourceDevices>>;

  // evidence gathers the sources: the checkpoint's (an unreadable one is
  // left out here; checkpoint() reports it) and GetAllocatableResources'.
  Sources evidence() {
    Sources out;
    try {
      if (const auto& cp = loaded_checkpoint()) {
        out.emplace_back("registered", cp->registered_devices());
        out.emplace_back("allocated", cp->allocated_devices());
      }
    } catch (const kubelet::Error&) {
      // checkpoint() reports it; the other sources still tell.
    }
    out.emplace_back("allocatable", allocatable_);
    return out;
  }

  // serves finds the resource plugin p serves: the one most of its devices
  // are known as, from what the kubelet registered, allocated (pods gone
  // included: a plugin that lost its registration to another still lists
  // them) or reports allocatable; a tie is no answer. A plugin whose devices
  // none of these name serves the resource whose configured socket it is.
  Served serves(const kubelet::PluginInfo& p, const Sources& sources) const {
    std::set<std::string> listed;
    for (const auto& d : p.devices) listed.insert(d.id);
    std::map<std::string, std::set<std::string>> known;  // resource -> devices of p known as it
    std::map<std::string, std::vector<std::string>> why;
    for (const auto& [source, devices] : sources)
      for (const auto& [resource, ids] : devices) {
        std::size_t n = 0;
        for (const auto& id : ids)
          if (listed.count(id)) {
            ++n;
            known[resource].insert(id);
          }
        if (n)
          why[resource].push_back(count(n, "device") + " " + source + " as `" + resource + "`" +
                                  (source == "allocatable" ? " (GetAllocatableResources)" : " in the checkpoint"));
      }
    Served out;
    std::size_t best = 0;
    for (const auto& [resource, ids] : known) {
      if (ids.size() > best) best = ids.size(), out.tied.clear();
      if (ids.size() == best && best) out.tied.push_back(resource);
    }
    if (out.tied.size() == 1) {
      out.resource = out.tied.front();
      out.why = why[out.resource];
      out.tied.clear();
    }
    if (best) return out;
    for (const auto& r : config_.resources) {
      if (r.socket.empty()) continue;
      fs::path socket = r.socket[0] == '/' ? host_.path(r.socket) : kubelet::device_plugin_dir(root_) / r.socket;
      if (socket.lexically_normal() == p.socket.lexically_normal())
        return {r.name, {"its socket in [[device-plugin.resources]] `" + r.name + "`"}, {}};
    }
    return out;
  }

  static std::string ticked(const std::vector<std::string>& items) {
    std::vector<std::string> out;
    for (const auto& i : items) out.push_back("`" + i + "`");
    return join(out, ", ");
  }

  const Host& host_;
  const device_plugin::Config& config_;
  fs::path root_;
  std::chrono::milliseconds budget_;
  Severity problem_;
  Check& check_;
  std::unique_ptr<kubelet::KubeletClient> client_;
  bool helper_failed_ = false;
  kubelet::ResourceDevices allocatable_;
  bool checkpoint_read_ = false;
  std::optional<kubelet::Checkpoint> checkpoint_;
  std::exception_ptr checkpoint_error_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_resource_;  // socket, why
};

}  // namespace

Check check_kubelet(const Host& host, const Loaded& loaded) {
  Check c("kubelet");
  if (!loaded.on("device-plugin"))
    c.add(Severity::info, "device-plugin modifier off: the kubelet is probed, nothing found here is a problem");
  Probe probe(host, loaded, c);
  probe.pod_resources();
  probe.plugins();
  probe.checkpoint();
  probe.shared();
  return c;
}

}  // namespace specshim::shim::doctor
