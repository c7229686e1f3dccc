// SPDX-License-Identifier: Apache-2.0
// A small CRI client for the e2e tests: the kubelet's RuntimeService and
// ImageService calls over containerd's socket, each with a deadline. A failed
// call throws RpcError carrying the gRPC status, which is what the kubelet
// sees (and shows in `kubectl describe pod`).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cri_api.grpc.pb.h"

namespace specshim::e2e {

namespace cri = runtime::v1;

struct RpcError : std::runtime_error {
  RpcError(const std::string& method, const grpc::Status& s)
      : std::runtime_error(method + " failed: " + std::to_string(s.error_code()) + ": " + s.error_message()),
        code(s.error_code()),
        message(s.error_message()) {}
  grpc::StatusCode code;
  std::string message;
};

class CriClient {
 public:
  // socket is containerd's grpc address (a unix socket path).
  explicit CriClient(const std::string& socket);

  cri::VersionResponse version(std::chrono::milliseconds deadline = std::chrono::seconds(5));
  std::string run_pod_sandbox(const cri::PodSandboxConfig& config, const std::string& handler);
  void stop_pod_sandbox(const std::string& id);
  void remove_pod_sandbox(const std::string& id);
  std::vector<cri::PodSandbox> list_pod_sandboxes();
  std::string create_container(const std::string& pod_id, const cri::ContainerConfig& config,
                               const cri::PodSandboxConfig& sandbox);
  void start_container(const std::string& id);
  void stop_container(const std::string& id, std::int64_t timeout_s);
  void remove_container(const std::string& id);
  std::vector<cri::Container> list_containers(const std::string& pod_id = "");
  cri::ContainerStatus container_status(const std::string& id);
  // exec_sync runs cmd in a running container (`kubectl exec`) and waits for it.
  cri::ExecSyncResponse exec_sync(const std::string& id, const std::vector<std::string>& cmd,
                                  std::chrono::seconds timeout = std::chrono::seconds(30));
  // image_present: ImageStatus found the image (CRI learns of imports asynchronously).
  bool image_present(const std::string& ref);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<cri::RuntimeService::Stub> runtime_;
  std::unique_ptr<cri::ImageService::Stub> images_;
};

}  // namespace specshim::e2e
