// SPDX-License-Identifier: Apache-2.0
#include "cri_client.h"

namespace specshim::e2e {
namespace {

// Generous for a loaded 2-core CI machine; a hung call still ends the test.
constexpr std::chrono::seconds kCallDeadline{60};

// call runs one unary RPC with a deadline and throws RpcError on failure.
template <class Stub, class Req, class Resp>
Resp call(const char* method, Stub* stub, grpc::Status (Stub::*fn)(grpc::ClientContext*, const Req&, Resp*),
          const Req& req, std::chrono::milliseconds deadline = kCallDeadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  Resp resp;
  grpc::Status s = (stub->*fn)(&ctx, req, &resp);
  if (!s.ok()) throw RpcError(method, s);
  return resp;
}

}  // namespace

CriClient::CriClient(const std::string& socket)
    : channel_(grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials())),
      runtime_(cri::RuntimeService::NewStub(channel_)),
      images_(cri::ImageService::NewStub(channel_)) {}

cri::VersionResponse CriClient::version(std::chrono::milliseconds deadline) {
  cri::VersionRequest req;
  req.set_version("v1");
  return call("Version", runtime_.get(), &cri::RuntimeService::Stub::Version, req, deadline);
}

std::string CriClient::run_pod_sandbox(const cri::PodSandboxConfig& config, const std::string& handler) {
  cri::RunPodSandboxRequest req;
  *req.mutable_config() = config;
  req.set_runtime_handler(handler);
  return call("RunPodSandbox", runtime_.get(), &cri::RuntimeService::Stub::RunPodSandbox, req).pod_sandbox_id();
}

void CriClient::stop_pod_sandbox(const std::string& id) {
  cri::StopPodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  call("StopPodSandbox", runtime_.get(), &cri::RuntimeService::Stub::StopPodSandbox, req);
}

void CriClient::remove_pod_sandbox(const std::string& id) {
  cri::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  call("RemovePodSandbox", runtime_.get(), &cri::RuntimeService::Stub::RemovePodSandbox, req);
}

std::vector<cri::PodSandbox> CriClient::list_pod_sandboxes() {
  auto resp =
      call("ListPodSandbox", runtime_.get(), &cri::RuntimeService::Stub::ListPodSandbox, cri::ListPodSandboxRequest{});
  return {resp.items().begin(), resp.items().end()};
}

std::string CriClient::create_container(const std::string& pod_id, const cri::ContainerConfig& config,
                                        const cri::PodSandboxConfig& sandbox) {
  cri::CreateContainerRequest req;
  req.set_pod_sandbox_id(pod_id);
  *req.mutable_config() = config;
  *req.mutable_sandbox_config() = sandbox;
  return call("CreateContainer", runtime_.get(), &cri::RuntimeService::Stub::CreateContainer, req).container_id();
}

void CriClient::start_container(const std::string& id) {
  cri::StartContainerRequest req;
  req.set_container_id(id);
  call("StartContainer", runtime_.get(), &cri::RuntimeService::Stub::StartContainer, req);
}

void CriClient::stop_container(const std::string& id, std::int64_t timeout_s) {
  cri::StopContainerRequest req;
  req.set_container_id(id);
  req.set_timeout(timeout_s);
  call("StopContainer", runtime_.get(), &cri::RuntimeService::Stub::StopContainer, req);
}

void CriClient::remove_container(const std::string& id) {
  cri::RemoveContainerRequest req;
  req.set_container_id(id);
  call("RemoveContainer", runtime_.get(), &cri::RuntimeService::Stub::RemoveContainer, req);
}

std::vector<cri::Container> CriClient::list_containers(const std::string& pod_id) {
  cri::ListContainersRequest req;
  if (!pod_id.empty()) req.mutable_filter()->set_pod_sandbox_id(pod_id);
  auto resp = call("ListContainers", runtime_.get(), &cri::RuntimeService::Stub::ListContainers, req);
  return {resp.containers().begin(), resp.containers().end()};
}

cri::ContainerStatus CriClient::container_status(const std::string& id) {
  cri::ContainerStatusRequest req;
  req.set_container_id(id);
  return call("ContainerStatus", runtime_.get(), &cri::RuntimeService::Stub::ContainerStatus, req).status();
}

cri::ExecSyncResponse CriClient::exec_sync(const std::string& id, const std::vector<std::string>& cmd,
                                           std::chrono::seconds timeout) {
  cri::ExecSyncRequest req;
  req.set_container_id(id);
  for (const auto& arg : cmd) req.add_cmd(arg);
  req.set_timeout(timeout.count());
  return call("ExecSync", runtime_.get(), &cri::RuntimeService::Stub::ExecSync, req, timeout + kCallDeadline);
}

bool CriClient::image_present(const std::string& ref) {
  cri::ImageStatusRequest req;
  req.mutable_image()->set_image(ref);
  return call("ImageStatus", images_.get(), &cri::ImageService::Stub::ImageStatus, req).has_image();
}

}  // namespace specshim::e2e
