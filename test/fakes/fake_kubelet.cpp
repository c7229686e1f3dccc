// SPDX-License-Identifier: Apache-2.0
// The fakes' servers: generated gRPC services over plain test data.
#include "fake_kubelet.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"
#include "specshim/kubelet/client.h"

namespace specshim::test {

namespace fs = std::filesystem;

namespace {

std::unique_ptr<grpc::Server> serve(const fs::path& socket, std::vector<grpc::Service*> services) {
  fs::create_directories(socket.parent_path());
  fs::remove(socket);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket.string(), grpc::InsecureServerCredentials());
  builder.SetMaxSendMessageSize(256 << 20);
  for (auto* s : services) builder.RegisterService(s);
  auto server = builder.BuildAndStart();
  if (!server) throw std::runtime_error("fake: cannot listen on " + socket.string());
  return server;
}

// Counters is the call log every fake keeps.
struct Counters {
  mutable std::mutex mu;
  std::map<std::string, int, std::less<>> calls;
  std::string authority;

  void hit(const char* method, const grpc::ServerContext* ctx) {
    std::lock_guard lock(mu);
    ++calls[method];
    auto a = ctx->ExperimentalGetAuthority();
    authority.assign(a.data(), a.size());
  }
  int count(std::string_view method) const {
    std::lock_guard lock(mu);
    auto it = calls.find(method);
    return it == calls.end() ? 0 : it->second;
  }
};

void add_devices(v1::ContainerResources* c, const kubelet::ResourceDevices& devices, bool per_numa) {
  for (const auto& [resource, ids] : devices) {
    if (!per_numa) {
      auto* d = c->add_devices();
      d->set_resource_name(resource);
      for (const auto& id : ids) d->add_device_ids(id);
      continue;
    }
    for (const auto& id : ids)
      for (int node : {0, 1}) {
        auto* d = c->add_devices();
        d->set_resource_name(resource);
        d->add_device_ids(id);
        d->mutable_topology()->add_nodes()->set_id(node);
      }
  }
}

void add_claim(v1::DynamicResource* out, const kubelet::DynamicResource& claim) {
  out->set_claim_name(claim.claim_name);
  out->set_claim_namespace(claim.claim_namespace);
  for (const auto& r : claim.claim_resources) {
    auto* cr = out->add_claim_resources();
    for (const auto& cdi : r.cdi_devices) cr->add_cdi_devices()->set_name(cdi);
    cr->set_driver_name(r.driver_name);
    cr->set_pool_name(r.pool_name);
    cr->set_device_name(r.device_name);
    if (r.share_id) cr->set_share_id(*r.share_id);
  }
}

void add_assignment(v1::ContainerResources* c, const kubelet::ContainerAssignment& a) {
  for (auto cpu : a.cpu_ids) c->add_cpu_ids(cpu);
  for (const auto& m : a.memory) {
    auto* cm = c->add_memory();
    cm->set_memory_type(m.memory_type);
    cm->set_size(m.size);
    for (auto node : m.numa_nodes) cm->mutable_topology()->add_nodes()->set_id(node);
  }
  for (const auto& claim : a.dynamic_resources) add_claim(c->add_dynamic_resources(), claim);
}

}  // namespace

// ---- FakeKubelet ---------------------------------------------------------

struct FakeKubelet::Impl final : v1::PodResourcesLister::Service, v1beta1::Registration::Service {
  fs::path root;
  Counters counters;
  struct FakePod {
    std::string ns, name, uid;
    std::map<std::string, kubelet::ResourceDevices> containers;
    std::map<std::string, kubelet::ContainerAssignment> assignments;
  };
  std::vector<FakePod> pod_list;
  grpc::Status get_status = grpc::Status::OK;
  int rate_limited = 0;
  bool per_numa = false;
  kubelet::ResourceDevices allocatable;
  std::vector<Registration> registrations;
  std::unique_ptr<grpc::Server> pr_server, reg_server;

  // rejected counts a call and applies the rate limit.
  bool rejected(const char* method, grpc::ServerContext* ctx) {
    counters.hit(method, ctx);
    std::lock_guard lock(counters.mu);
    if (rate_limited == 0) return false;
    --rate_limited;
    return true;
  }

  void fill(v1::PodResources* out, const FakePod& p) {
    out->set_name(p.name);
    out->set_namespace_(p.ns);
    for (const auto& [name, devices] : p.containers) {
      auto* c = out->add_containers();
      c->set_name(name);
      add_devices(c, devices, per_numa);
      if (auto it = p.assignments.find(name); it != p.assignments.end()) add_assignment(c, it->second);
    }
  }

  grpc::Status List(grpc::ServerContext* ctx, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    if (rejected("List", ctx)) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit"};
    std::lock_guard lock(counters.mu);
    for (const auto& p : pod_list) fill(resp->add_pod_resources(), p);
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetPodResourcesRequest* req,
                   v1::GetPodResourcesResponse* resp) override {
    if (rejected("Get", ctx)) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit"};
    std::lock_guard lock(counters.mu);
    if (!get_status.ok()) return get_status;
    for (const auto& p : pod_list)
      if (p.ns == req->pod_namespace() && p.name == req->pod_name()) {
        fill(resp->mutable_pod_resources(), p);
        return grpc::Status::OK;
      }
    return {grpc::StatusCode::UNKNOWN,
            "pod " + req->pod_name() + " in namespace " + req->pod_namespace() + " not found"};
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext* ctx, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* resp) override {
    if (rejected("GetAllocatableResources", ctx))
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit"};
    std::lock_guard lock(counters.mu);
    for (const auto& [resource, ids] : allocatable) {
      auto* d = resp->add_devices();
      d->set_resource_name(resource);
      for (const auto& id : ids) d->add_device_ids(id);
    }
    return grpc::Status::OK;
  }

  grpc::Status Register(grpc::ServerContext* ctx, const v1beta1::RegisterRequest* req, v1beta1::Empty*) override {
    counters.hit("Register", ctx);
    std::lock_guard lock(counters.mu);
    registrations.push_back({req->version(), req->endpoint(), req->resource_name()});
    return grpc::Status::OK;
  }
};

FakeKubelet::FakeKubelet(fs::path kubelet_root) : impl_(std::make_unique<Impl>()) {
  impl_->root = std::move(kubelet_root);
  impl_->pr_server =
      serve(kubelet::pod_resources_socket(impl_->root), {static_cast<v1::PodResourcesLister::Service*>(impl_.get())});
  impl_->reg_server = serve(kubelet::device_plugin_dir(impl_->root) / "kubelet.sock",
                            {static_cast<v1beta1::Registration::Service*>(impl_.get())});
}

FakeKubelet::~FakeKubelet() {
  impl_->pr_server->Shutdown();
  impl_->reg_server->Shutdown();
}

void FakeKubelet::add_pod(std::string ns, std::string name, std::string uid,
                          std::map<std::string, kubelet::ResourceDevices> containers) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->pod_list.push_back({std::move(ns), std::move(name), std::move(uid), std::move(containers), {}});
}
void FakeKubelet::assign(const std::string& ns, const std::string& name, const std::string& container,
                         kubelet::ContainerAssignment assignment) {
  std::lock_guard lock(impl_->counters.mu);
  for (auto& p : impl_->pod_list)
    if (p.ns == ns && p.name == name) {
      p.containers[container];
      p.assignments[container] = std::move(assignment);
      return;
    }
  throw std::invalid_argument("fake: assign to unknown pod " + ns + "/" + name);
}
void FakeKubelet::disable_get() {
  std::lock_guard lock(impl_->counters.mu);
  impl_->get_status = {grpc::StatusCode::UNKNOWN, "PodResources API Get method disabled"};
}
void FakeKubelet::unimplement_get() {
  std::lock_guard lock(impl_->counters.mu);
  impl_->get_status = {grpc::StatusCode::UNIMPLEMENTED, "unknown method Get for service v1.PodResourcesLister"};
}
void FakeKubelet::rate_limit_next(int n) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->rate_limited = n;
}
void FakeKubelet::per_numa_entries(bool on) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->per_numa = on;
}
void FakeKubelet::set_allocatable(kubelet::ResourceDevices devices) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->allocatable = std::move(devices);
}
int FakeKubelet::calls(std::string_view method) const {
  return impl_->counters.count(method);
}
std::string FakeKubelet::authority() const {
  std::lock_guard lock(impl_->counters.mu);
  return impl_->counters.authority;
}
std::vector<Registration> FakeKubelet::registrations() const {
  std::lock_guard lock(impl_->counters.mu);
  return impl_->registrations;
}
fs::path FakeKubelet::socket() const {
  return kubelet::pod_resources_socket(impl_->root);
}

// ---- FakeDevicePlugin ----------------------------------------------------

struct FakeDevicePlugin::Impl final : v1beta1::DevicePlugin::Service {
  fs::path socket;
  Counters counters;
  std::vector<std::string> devices;
  kubelet::AllocateResponse response;
  int responses = 1;
  kubelet::PluginOptions options;
  std::chrono::milliseconds delay{0};
  grpc::Status failure = grpc::Status::OK;
  std::vector<std::vector<std::string>> allocations;
  std::condition_variable stopping_cv;
  bool stopping = false;
  std::unique_ptr<grpc::Server> server;

  // hold waits out the configured delay; destruction cuts it short.
  void hold() {
    std::unique_lock lock(counters.mu);
    stopping_cv.wait_for(lock, delay, [&] { return stopping; });
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* ctx, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* resp) override {
    counters.hit("GetDevicePluginOptions", ctx);
    hold();
    std::lock_guard lock(counters.mu);
    resp->set_pre_start_required(options.pre_start_required);
    resp->set_get_preferred_allocation_available(options.get_preferred_allocation_available);
    return failure;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    counters.hit("ListAndWatch", ctx);
    hold();
    v1beta1::ListAndWatchResponse list;
    {
      std::lock_guard lock(counters.mu);
      if (!failure.ok()) return failure;
      for (const auto& id : devices) {
        auto* d = list.add_devices();
        d->set_id(id);
        d->set_health("Healthy");
      }
    }
    writer->Write(list);
    // Like a real plugin, keep the stream open until the client hangs up.
    std::unique_lock lock(counters.mu);
    while (!stopping && !ctx->IsCancelled()) stopping_cv.wait_for(lock, std::chrono::milliseconds(20));
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*, const v1beta1::PreferredAllocationRequest*,
                                      v1beta1::PreferredAllocationResponse*) override {
    return {grpc::StatusCode::UNIMPLEMENTED, "fake: no preferred allocation"};
  }

  grpc::Status Allocate(grpc::ServerContext* ctx, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* resp) override {
    counters.hit("Allocate", ctx);
    hold();
    std::lock_guard lock(counters.mu);
    for (const auto& creq : req->container_requests())
      allocations.emplace_back(creq.devices_ids().begin(), creq.devices_ids().end());
    if (!failure.ok()) return failure;
    std::string bytes = encode_allocate_response(response);
    for (int i = 0; i < responses; ++i) resp->add_container_responses()->ParseFromString(bytes);
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }
};

FakeDevicePlugin::FakeDevicePlugin(fs::path socket, std::vector<std::string> devices)
    : impl_(std::make_unique<Impl>()) {
  impl_->socket = std::move(socket);
  impl_->devices = std::move(devices);
  impl_->server = serve(impl_->socket, {impl_.get()});
}

FakeDevicePlugin::~FakeDevicePlugin() {
  {
    std::lock_guard lock(impl_->counters.mu);
    impl_->stopping = true;
  }
  impl_->stopping_cv.notify_all();
  impl_->server->Shutdown();
  fs::remove(impl_->socket);
}

void FakeDevicePlugin::respond(kubelet::AllocateResponse response) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->response = std::move(response);
}
void FakeDevicePlugin::container_responses(int n) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->responses = n;
}
void FakeDevicePlugin::set_options(kubelet::PluginOptions options) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->options = options;
}
void FakeDevicePlugin::delay(std::chrono::milliseconds d) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->delay = d;
}
void FakeDevicePlugin::fail(Code code, std::string message) {
  std::lock_guard lock(impl_->counters.mu);
  impl_->failure = grpc::Status(static_cast<grpc::StatusCode>(code), std::move(message));
}
void FakeDevicePlugin::register_with(const fs::path& kubelet_socket, const std::string& resource) {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateCustomChannel("unix:" + kubelet_socket.string(), grpc::InsecureChannelCredentials(), args));
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(impl_->socket.filename().string());
  req.set_resource_name(resource);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto status = stub->Register(&ctx, req, &resp);
  if (!status.ok()) throw std::runtime_error("fake: Register: " + status.error_message());
}
std::vector<std::vector<std::string>> FakeDevicePlugin::allocations() const {
  std::lock_guard lock(impl_->counters.mu);
  return impl_->allocations;
}
int FakeDevicePlugin::calls(std::string_view method) const {
  return impl_->counters.count(method);
}
std::string FakeDevicePlugin::authority() const {
  std::lock_guard lock(impl_->counters.mu);
  return impl_->counters.authority;
}
const fs::path& FakeDevicePlugin::socket() const {
  return impl_->socket;
}

// ---- checkpoint ----------------------------------------------------------

std::string encode_allocate_response(const kubelet::AllocateResponse& r) {
  v1beta1::ContainerAllocateResponse out;
  out.mutable_envs()->insert(r.envs.begin(), r.envs.end());
  out.mutable_annotations()->insert(r.annotations.begin(), r.annotations.end());
  for (const auto& m : r.mounts) {
    auto* pm = out.add_mounts();
    pm->set_container_path(m.container_path);
    pm->set_host_path(m.host_path);
    pm->set_read_only(m.read_only);
  }
  for (const auto& d : r.devices) {
    auto* pd = out.add_devices();
    pd->set_container_path(d.container_path);
    pd->set_host_path(d.host_path);
    pd->set_permissions(d.permissions);
  }
  for (const auto& c : r.cdi_devices) out.add_cdi_devices()->set_name(c);
  return out.SerializeAsString();
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    unsigned v = (unsigned char)bytes[i] << 16 | (unsigned char)bytes[i + 1] << 8 | (unsigned char)bytes[i + 2];
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(v >> s) & 63];
  }
  if (std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned v = (unsigned char)bytes[i] << 16 | (rest == 2 ? (unsigned char)bytes[i + 1] << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string checkpoint_json(const std::vector<FakeCheckpointEntry>& entries, const kubelet::ResourceDevices& registered,
                            CheckpointLayout layout) {
  using nlohmann::json;
  json list = json::array();
  for (const auto& e : entries) {
    json ids;
    if (layout == CheckpointLayout::flat) {
      ids = json::array();
      for (const auto& [numa, v] : e.devices_by_numa)
        for (const auto& id : v) ids.push_back(id);
    } else {
      ids = json::object();
      for (const auto& [numa, v] : e.devices_by_numa) ids[numa] = v;
    }
    json entry = {
        {"PodUID", e.pod_uid}, {"ContainerName", e.container}, {"ResourceName", e.resource}, {"DeviceIDs", ids}};
    if (e.alloc) entry["AllocResp"] = base64_encode(encode_allocate_response(*e.alloc));
    list.push_back(std::move(entry));
  }
  json reg = registered.empty() ? json(nullptr) : json(registered);
  json doc = {{"Data", {{"PodDeviceEntries", list}, {"RegisteredDevices", reg}}}, {"Checksum", 3371215478u}};
  return doc.dump();
}

void write_checkpoint(const fs::path& kubelet_root, const std::vector<FakeCheckpointEntry>& entries,
                      const kubelet::ResourceDevices& registered, CheckpointLayout layout) {
  fs::path file = kubelet::checkpoint_file(kubelet_root);
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary | std::ios::trunc) << checkpoint_json(entries, registered, layout);
}

}  // namespace specshim::test
