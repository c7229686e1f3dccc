// SPDX-License-Identifier: Apache-2.0
// The hotplug modifier (off by default): at create, a container the
// desired-state file selects gets what the file wants for it in its spec, so
// a re-created dev box has its devices from its first instruction and
// `specshim reconcile` finds nothing to do. Device and GPU entries become
// linux.devices entries and exactly one allow rule each (which the
// devices-cgroup modifier then finds granted); CDI names go to the cdi
// modifier as an in-memory request. What it gave is left in the bundle
// (specshim-hotplug.json) so reconcile can take a node back later. See
// docs/reconcile.md.
#include <algorithm>

#include "specshim/base/device_rules.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/factories.h"
#include "specshim/node/cdi.h"
#include "specshim/node/hotplug.h"
#include "specshim/node/nvidia_gpus.h"
#include "specshim/node/pod_allocation.h"

namespace specshim::hotplug {
namespace {

class Hotplug : public Modifier {
 public:
  // bound is set when [hotplug] bound = "pod-allocation": the sources of the
  // accelerators and the kubelet's PodResources (the create's session).
  Hotplug(Config c, bool cdi_on, std::optional<pod_allocation::Sources> bound = std::nullopt,
          pod_allocation::PodResourcesLookup lookup = nullptr)
      : config_(std::move(c)), cdi_on_(cdi_on), bound_(std::move(bound)), lookup_(std::move(lookup)) {}
  std::string_view name() const override { return "hotplug"; }
  Feeds feeds() const override { return {.produces = {Feed::device_requests}}; }

  void apply(Spec& spec, Context& ctx) override {
    if (ctx.kind == ContainerKind::sandbox) return;  // the pause container runs no workload
    if (!decided_) decided_ = decide(spec, ctx);
    CreateGrant& g = *decided_;
    if (g.devices.empty() && g.cdi.empty()) return;
    std::vector<DeviceRule> rules = read_device_rules(spec);
    for (const auto& d : g.devices) {
      add_node(spec, d, g.desired);
      DeviceRule rule{true, d.type, d.major, d.minor, d.permissions};
      if (std::find(rules.begin(), rules.end(), rule) != rules.end()) continue;
      spec.array_at({"linux", "resources", "devices"}).push_back(rule_json(rule));
      rules.push_back(rule);
      if (std::find(g.rules.begin(), g.rules.end(), rule) == g.rules.end()) g.rules.push_back(rule);
    }
    std::erase_if(ctx.device_requests, [](const DeviceRequest& r) { return r.from == "hotplug"; });
    for (const auto& name : g.cdi) {
      auto qn = cdi::parse_qualified_name(name);
      std::string kind = qn->kind();
      auto req = std::find_if(ctx.device_requests.begin(), ctx.device_requests.end(),
                              [&](const DeviceRequest& r) { return r.from == "hotplug" && r.kind == kind; });
      if (req == ctx.device_requests.end())
        req = ctx.device_requests.insert(
            ctx.device_requests.end(),
            DeviceRequest{.from = "hotplug", .origin = "the desired-state file " + g.desired, .kind = kind});
      req->names.push_back(name);
    }
    ctx.bundle_files[kGrantFile] = BundleFile{grant_json(g)};
  }

 private:
  // decide reads the file once per create and resolves what the entry
  // selecting this container wants. A file that is missing gives nothing; a
  // malformed one gives nothing and a warning (reconcile, which refuses it
  // loudly, is where it gets fixed): one bad edit must not stop every create
  // on the node. A device the entry names that cannot be given fails the
  // create: the platform promised it.
  CreateGrant decide(const Spec& spec, const Context& ctx) {
    CreateGrant g;
    g.container = ctx.container_id;
    std::optional<Desired> desired;
    try {
      desired = read_desired(config_.desired);
    } catch (const Error& e) {
      log::warn("hotplug: {}; the container gets no devices from it", describe(e));  // it names the file
      return g;
    }
    if (!desired) return g;
    pod_identity::Identity identity;
    try {
      identity = pod_identity::identify(spec);
    } catch (const Error&) {
      // A malformed specshim.io/pod selects by id only (device-plugin, when
      // on, refuses it with its own message).
    }
    std::string docker_name;
    try {
      docker_name = docker_name_of(*desired, config_, ctx.container_id);
    } catch (const Error& err) {
      log::warn("hotplug: {}; `docker` entries do not select the container", describe(err));
    }
    const Entry* e = select(*desired, ctx.container_id, identity, docker_name);
    if (!e) return g;
    g.desired = desired->where(*e);
    std::string what = "desired-state file " + g.desired + ": " + e->who();
    try {
      std::vector<Want> wants = e->wants();  // its devices first
      for (std::size_t i = 0; i < e->devices.size(); ++i) g.devices.push_back(device_of(e->devices[i], wants[i].key()));
      if (!e->gpus.empty()) {
        auto gpus = nvidia::read_gpus(config_.proc);
        for (const auto& uuid : e->gpus) {
          std::string node = nvidia::find_gpu(gpus, uuid, config_.proc).node();
          g.devices.push_back(device_of(DeviceArg{node, node, "rwm"}, Want{Want::Kind::gpu, uuid}.key()));
        }
      }
    } catch (const std::exception&) {
      std::throw_with_nested(Error(what));
    }
    if (!e->cdi.empty() && !cdi_on_)
      log::warn("hotplug: {}: the cdi modifier is off, so its CDI devices are not given at create", what);
    else
      g.cdi = e->cdi;
    drop_spec_own(spec, g);
    try {
      check_bound(spec, g);
    } catch (const std::exception&) {
      std::throw_with_nested(Error(what));
    }
    log::debug("hotplug: {}: {} device(s), {} CDI device(s)", what, g.devices.size(), g.cdi.size());
    return g;
  }

  // check_bound refuses, under [hotplug] bound = "pod-allocation", an
  // accelerator the kubelet did not allocate to a container of this
  // container's pod: the nodes the grant puts in the spec and those of the
  // CDI devices it hands to cdi. The kubelet is asked only when one is an
  // accelerator.
  void check_bound(const Spec& spec, const CreateGrant& g) {
    if (!bound_ || (g.devices.empty() && g.cdi.empty())) return;
    pod_allocation::Node node(*bound_, lookup_);
    std::vector<pod_allocation::Asked> wants;
    for (const auto& d : g.devices) wants.push_back({d.key, d.host_path, {d.type, d.major, d.minor}});
    for (const auto& name : g.cdi)
      for (auto& w : node.cdi_wants(name, Want{Want::Kind::cdi, name}.key())) wants.push_back(std::move(w));
    pod_allocation::check_bound(node, pod_allocation::target_of(spec), wants);
  }

  // spec_node is the spec's linux.devices entry at path, or nullptr.
  static const Json* spec_node(const Spec& spec, const std::string& path) {
    const Json* list = spec.find({"linux", "devices"});
    if (!list || !list->is_array()) return nullptr;
    for (const auto& e : *list)
      if (e.is_object() && e.value("path", "") == path) return &e;
    return nullptr;
  }

  static bool is_device(const Json& e, const GrantedDevice& d) {
    return e.value("type", "") == std::string(1, d.type) && e.value("major", -1) == d.major &&
           e.value("minor", -1) == d.minor;
  }

  // drop_spec_own leaves out the devices the spec already has at their path
  // (a device plugin's or CDI's): they are the spec's own, so reconcile must
  // never take them back; it records the want as held by a node already there.
  static void drop_spec_own(const Spec& spec, CreateGrant& g) {
    std::erase_if(g.devices, [&](const GrantedDevice& d) {
      const Json* e = spec_node(spec, d.path);
      return e && is_device(*e, d);
    });
  }

  // add_node puts d in linux.devices unless that path already is that device.
  static void add_node(Spec& spec, const GrantedDevice& d, const std::string& where) {
    if (const Json* e = spec_node(spec, d.path)) {
      if (is_device(*e, d)) return;
      throw Error("desired-state file " + where + ": container path " + q(d.path) +
                  " is already another device in the spec's linux.devices");
    }
    spec.array_at({"linux", "devices"})
        .push_back(Json{{"path", d.path},
                        {"type", std::string(1, d.type)},
                        {"major", d.major},
                        {"minor", d.minor},
                        {"fileMode", d.file_mode},
                        {"uid", d.uid},
                        {"gid", d.gid}});
  }

  Config config_;
  bool cdi_on_;  // the cdi modifier is in the chain (ChainPlan::cdi)
  std::optional<pod_allocation::Sources> bound_;
  pod_allocation::PodResourcesLookup lookup_;
  std::optional<CreateGrant> decided_;
};

}  // namespace
}  // namespace specshim::hotplug

namespace specshim {

std::unique_ptr<Modifier> make_hotplug(config::Section& section, const ChainPlan& plan, KubeletSessions& sessions) {
  hotplug::Config c = hotplug::read_config(section, plan.kubelet_configured);
  if (!c.enabled) return nullptr;
  if (c.bound == hotplug::Bound::none) return std::make_unique<hotplug::Hotplug>(std::move(c), plan.cdi);
  // The plan reads them whenever [hotplug] enabled = true.
  if (!plan.allocation) section.fail("bound", "needs the resources it binds (a bug: the chain's plan has none)");
  pod_allocation::Sources sources = *plan.allocation;
  sources.proc = c.proc;
  auto session = sessions.helper_session(sources.kubelet_root, sources.budget);
  auto lookup = [session](const std::string& ns, const std::string& name) { return session->pod_resources(ns, name); };
  return std::make_unique<hotplug::Hotplug>(std::move(c), plan.cdi, std::move(sources), std::move(lookup));
}

}  // namespace specshim
