// SPDX-License-Identifier: Apache-2.0
// The in-process gRPC client: PodResources v1 and device plugin v1beta1 over
// unix sockets. This file (with the helper it is linked into) is the only
// place the generated protobuf types meet specshim's plain types.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "client_base.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace specshim::kubelet {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

// Matches the 16 MiB clients of the PodResources API use, with headroom:
// List answers grow with every pod on the node.
constexpr int kMaxReceiveBytes = 64 << 20;
// The kubelet's PodResources rate limit refills a token every 10 ms.
constexpr milliseconds kRateLimitBackoff{30};

std::string code_name(grpc::StatusCode code) {
  static constexpr std::array<const char*, 17> names = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  auto i = static_cast<std::size_t>(code);
  return i < names.size() ? names[i] : "code " + std::to_string(i);
}

// Call is one RPC on one socket: it owns the message prefix and the mapping
// of a failed grpc::Status to kubelet errors.
struct Call {
  std::string name;
  fs::path socket;
  const Budget& budget;
  std::shared_ptr<grpc::Channel> channel;

  std::string what() const { return on_socket(name, socket.string()); }

  // preflight fails fast, with a clearer message than gRPC's, when the
  // budget is gone or the socket file is missing.
  void preflight() const {
    if (budget.expired())
      throw DeadlineExceeded(what() + ": budget of " + std::to_string(budget.total().count()) + " ms used up");
    std::error_code ec;
    auto st = fs::status(socket, ec);
    if (ec || !fs::exists(st)) throw Unavailable(what() + ": socket does not exist");
    if (!fs::is_socket(st)) throw Unavailable(what() + ": not a socket");
  }

  void deadline(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() + (budget.deadline() - Budget::Clock::now()));
  }

  [[noreturn]] void fail(const grpc::Status& s) const {
    std::string msg = what() + ": " + code_name(s.error_code()) + ": " + s.error_message();
    switch (s.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::CANCELLED:
        throw Unavailable(msg);
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        throw DeadlineExceeded(what() + ": " + unanswered());
      case grpc::StatusCode::NOT_FOUND:
        throw NotFound(msg);
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        throw Unavailable(msg + " (after one retry)");
      default:
        throw Error(msg);
    }
  }

  // unanswered describes a deadline. It tells a server that never completed
  // the HTTP/2 handshake (hung before accept, or accepting and never
  // speaking) from one that got the call and was slow: gRPC calls a channel
  // ready only once the server's SETTINGS arrived.
  std::string unanswered() const {
    std::string within = " within the budget of " + std::to_string(budget.total().count()) + " ms";
    if (channel && channel->GetState(false) == GRPC_CHANNEL_READY) return "no answer" + within;
    return "no connection" + within + " (the server accepted nothing or never answered the HTTP/2 handshake)";
  }

  // unary runs fn(ctx) once, or twice when the kubelet's rate limit
  // (RESOURCE_EXHAUSTED) rejected the first try and retry is set.
  template <typename Fn>
  grpc::Status unary(Fn&& fn, bool retry) const {
    preflight();
    grpc::Status s = attempt(fn);
    if (!retry || s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) return s;
    thread_local std::minstd_rand jitter(std::random_device{}());
    milliseconds wait = std::min(kRateLimitBackoff + milliseconds(jitter() % 20), budget.remaining() / 2);
    std::this_thread::sleep_for(wait);
    if (budget.expired()) return s;
    return attempt(fn);
  }

  template <typename Fn>
  grpc::Status attempt(Fn& fn) const {
    grpc::ClientContext ctx;
    deadline(ctx);
    return fn(ctx);
  }
};

void add_ids(std::vector<std::string>& to, const google::protobuf::RepeatedPtrField<std::string>& ids) {
  for (const auto& id : ids)
    if (std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
}

// The kubelet sends one ContainerDevices per device and NUMA node (1.21+),
// per resource and NUMA node (1.20) or per resource (older): group by
// resource and drop repeats in every case.
ResourceDevices from_proto(const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& devices) {
  ResourceDevices out;
  for (const auto& d : devices) add_ids(out[d.resource_name()], d.device_ids());
  return out;
}

// numa_nodes reads a TopologyInfo of either API (v1 or v1beta1).
template <typename TopologyInfo>
std::vector<std::int64_t> numa_nodes(const TopologyInfo& topology) {
  std::vector<std::int64_t> out;
  for (const auto& n : topology.nodes()) out.push_back(n.id());
  return out;
}

ClaimResource from_proto(const v1::ClaimResource& r) {
  ClaimResource out{r.driver_name(), r.pool_name(), r.device_name(), {}, std::nullopt};
  for (const auto& c : r.cdi_devices()) out.cdi_devices.push_back(c.name());
  if (r.has_share_id()) out.share_id = r.share_id();
  return out;
}

// assignment_of reads what a container holds besides devices: exclusive
// CPUs, pinned memory and DRA claims, all absent from older kubelets.
ContainerAssignment assignment_of(const v1::ContainerResources& c) {
  ContainerAssignment out;
  out.cpu_ids.assign(c.cpu_ids().begin(), c.cpu_ids().end());
  for (const auto& m : c.memory()) out.memory.push_back({m.memory_type(), m.size(), numa_nodes(m.topology())});
  for (const auto& d : c.dynamic_resources()) {
    DynamicResource& claim = out.dynamic_resources.emplace_back();
    claim.claim_name = d.claim_name();
    claim.claim_namespace = d.claim_namespace();
    for (const auto& r : d.claim_resources()) claim.claim_resources.push_back(from_proto(r));
  }
  return out;
}

PodResources from_proto(const v1::PodResources& pod) {
  PodResources out{pod.namespace_(), pod.name(), {}};
  for (const auto& c : pod.containers()) {
    ResourceDevices& rd = out.containers[c.name()];
    for (auto& [resource, ids] : from_proto(c.devices())) {
      auto& to = rd[resource];
      for (auto& id : ids)
        if (std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
    }
    if (auto assigned = assignment_of(c); !assigned.empty()) out.assignments[c.name()] = std::move(assigned);
  }
  return out;
}

AllocateResponse from_proto(const v1beta1::ContainerAllocateResponse& r) {
  AllocateResponse out;
  out.envs.insert(r.envs().begin(), r.envs().end());
  out.annotations.insert(r.annotations().begin(), r.annotations().end());
  for (const auto& m : r.mounts()) out.mounts.push_back({m.container_path(), m.host_path(), m.read_only()});
  for (const auto& d : r.devices()) out.devices.push_back({d.container_path(), d.host_path(), d.permissions()});
  for (const auto& c : r.cdi_devices()) out.cdi_devices.push_back(c.name());
  return out;
}

Device from_proto(const v1beta1::Device& d) {
  return {d.id(), d.health(), numa_nodes(d.topology())};
}

bool get_disabled(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNIMPLEMENTED ||
         (s.error_code() == grpc::StatusCode::UNKNOWN &&
          s.error_message().find("Get method disabled") != std::string::npos);
}

class GrpcClient final : public ClientBase {
 public:
  using ClientBase::ClientBase;

  PodResources pod_resources(const std::string& ns, const std::string& name, const Budget& budget) override {
    fs::path socket = pod_resources_socket(options().kubelet_root);
    std::string pod = "pod `" + ns + "/" + name + "`";
    if (!get_disabled_) {
      Call call{"Get", socket, budget, channel(socket)};
      v1::GetPodResourcesRequest req;
      req.set_pod_namespace(ns);
      req.set_pod_name(name);
      v1::GetPodResourcesResponse resp;
      auto stub = v1::PodResourcesLister::NewStub(call.channel);
      grpc::Status s = call.unary([&](grpc::ClientContext& ctx) { return stub->Get(&ctx, req, &resp); }, true);
      if (s.ok()) return from_proto(resp.pod_resources());
      if (!get_disabled(s)) {
        // The kubelet answers an unknown pod with a plain (UNKNOWN) error.
        if (s.error_code() == grpc::StatusCode::UNKNOWN && s.error_message().find("not found") != std::string::npos)
          throw NotFound(call.what() + ": " + pod + ": " + s.error_message());
        call.fail(s);
      }
      get_disabled_ = true;  // Get is gated off on 1.27-1.33: use List from now on
    }
    v1::ListPodResourcesResponse resp = list(socket, budget);
    for (const auto& p : resp.pod_resources())
      if (p.namespace_() == ns && p.name() == name) return from_proto(p);
    throw NotFound(on_socket("List", socket.string()) + ": " + pod + " is not in the answer (" +
                   std::to_string(resp.pod_resources_size()) + " pods)");
  }

  std::vector<PodResources> list_pods(const Budget& budget) override {
    v1::ListPodResourcesResponse resp = list(pod_resources_socket(options().kubelet_root), budget);
    std::vector<PodResources> out;
    for (const auto& p : resp.pod_resources()) out.push_back(from_proto(p));
    return out;
  }

  // list calls List: every pod of the node (converted by the caller, which
  // may need only one).
  v1::ListPodResourcesResponse list(const fs::path& socket, const Budget& budget) {
    Call call{"List", socket, budget, channel(socket)};
    v1::ListPodResourcesResponse resp;
    auto stub = v1::PodResourcesLister::NewStub(call.channel);
    grpc::Status s = call.unary(
        [&](grpc::ClientContext& ctx) { return stub->List(&ctx, v1::ListPodResourcesRequest(), &resp); }, true);
    if (!s.ok()) call.fail(s);
    return resp;
  }

  ResourceDevices allocatable(const Budget& budget) override {
    fs::path socket = pod_resources_socket(options().kubelet_root);
    Call call{"GetAllocatableResources", socket, budget, channel(socket)};
    v1::AllocatableResourcesResponse resp;
    auto stub = v1::PodResourcesLister::NewStub(call.channel);
    grpc::Status s = call.unary(
        [&](grpc::ClientContext& ctx) {
          return stub->GetAllocatableResources(&ctx, v1::AllocatableResourcesRequest(), &resp);
        },
        true);
    if (!s.ok()) call.fail(s);
    return from_proto(resp.devices());
  }

  PluginOptions plugin_options(const fs::path& socket, const Budget& budget) override {
    Call call{"GetDevicePluginOptions", socket, budget, channel(socket)};
    v1beta1::DevicePluginOptions resp;
    auto stub = v1beta1::DevicePlugin::NewStub(call.channel);
    grpc::Status s = call.unary(
        [&](grpc::ClientContext& ctx) { return stub->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &resp); }, false);
    if (!s.ok()) call.fail(s);
    return {resp.pre_start_required(), resp.get_preferred_allocation_available()};
  }

  AllocateResponse allocate(const fs::path& socket, const std::string& resource, const std::vector<std::string>& ids,
                            const Budget& budget) override {
    Call call{"Allocate", socket, budget, channel(socket)};
    v1beta1::AllocateRequest req;
    auto* creq = req.add_container_requests();
    for (const auto& id : ids) creq->add_devices_ids(id);
    v1beta1::AllocateResponse resp;
    auto stub = v1beta1::DevicePlugin::NewStub(call.channel);
    grpc::Status s = call.unary([&](grpc::ClientContext& ctx) { return stub->Allocate(&ctx, req, &resp); }, false);
    if (!s.ok()) call.fail(s);
    // Like the kubelet: one request in, exactly one container response out.
    if (resp.container_responses_size() != 1)
      throw Protocol(call.what() + ": " + std::to_string(resp.container_responses_size()) +
                     " container responses to 1 request for `" + resource + "`");
    return from_proto(resp.container_responses(0));
  }

  std::vector<PluginInfo> list_plugins(const Budget& budget) override {
    std::vector<fs::path> sockets = plugin_sockets(device_plugin_dir(options().kubelet_root));
    std::vector<PluginInfo> out(sockets.size());
    // Plugins are asked in parallel so one slow plugin costs one deadline,
    // not one per plugin.
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < sockets.size(); ++i)
      threads.emplace_back([&, i] { out[i] = first_device_list(sockets[i], budget); });
    for (auto& t : threads) t.join();
    for (auto& p : out)
      if (p.reachable()) p.resource = resource_of(p.devices);
    return out;
  }

 private:
  // first_device_list reads the first ListAndWatch message (the full device
  // list) and hangs up; errors are reported in the result, not thrown.
  PluginInfo first_device_list(const fs::path& socket, const Budget& budget) {
    PluginInfo info{socket, {}, {}, {}};
    Call call{"ListAndWatch", socket, budget, channel(socket)};
    try {
      call.preflight();
      auto stub = v1beta1::DevicePlugin::NewStub(call.channel);
      grpc::ClientContext ctx;
      call.deadline(ctx);
      auto reader = stub->ListAndWatch(&ctx, v1beta1::Empty());
      v1beta1::ListAndWatchResponse first;
      if (reader->Read(&first)) {
        for (const auto& d : first.devices()) info.devices.push_back(from_proto(d));
        ctx.TryCancel();
        reader->Finish();
        return info;
      }
      grpc::Status s = reader->Finish();
      if (s.ok()) throw Protocol(call.what() + ": stream ended before the first device list");
      call.fail(s);
    } catch (const Error& e) {
      info.error = e.what();
    }
    return info;
  }

  std::shared_ptr<grpc::Channel> channel(const fs::path& socket) {
    std::lock_guard lock(mu_);
    auto& ch = channels_[socket.string()];
    if (!ch) {
      grpc::ChannelArguments args;
      // Non-Go servers reject the path-derived authority (kubernetes#112597).
      args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
      args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
      args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
      ch = grpc::CreateCustomChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials(), args);
    }
    return ch;
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
  bool get_disabled_ = false;
};

}  // namespace

std::unique_ptr<KubeletClient> make_grpc_client(const ClientOptions& options) {
  return std::make_unique<GrpcClient>(options);
}

}  // namespace specshim::kubelet
