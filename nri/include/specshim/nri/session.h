// SPDX-License-Identifier: Apache-2.0
// One connection to a runtime's NRI socket: register, then answer the
// runtime's calls until it hangs up. The wire is frames.h's; the calls are
// NRI's Plugin service (ttRPC, unary). A Service decides what to answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "api.pb.h"

namespace specshim::nri {

namespace api = ::nri::pkg::api::v1alpha1;

// Event bits of ConfigureResponse.events: 1 << (event - 1).
constexpr std::int32_t event_bit(api::Event e) {
  return std::int32_t{1} << (static_cast<int>(e) - 1);
}

// RpcStatus is a call's failure as ttRPC carries it: a gRPC code and a message.
// A Service throws it (or Error, sent as FailedPrecondition; anything else is
// Unknown) to fail a call: the call fails, the connection stays.
struct RpcStatus {
  int code;
  std::string message;
};
inline constexpr int kFailedPrecondition = 9;
inline constexpr int kResourceExhausted = 8;
inline constexpr int kUnimplemented = 12;
inline constexpr int kUnknown = 2;

// Service answers the runtime's calls. Its answers must come within the
// runtime's request timeout (2 s by default): a late answer makes the
// runtime drop the plugin and create containers without it.
class Service {
 public:
  virtual ~Service() = default;
  // configure returns the events to subscribe to.
  virtual std::int32_t configure(const api::ConfigureRequest& req) = 0;
  // synchronized gets the ids of every container the runtime has, once the
  // last Synchronize message came.
  virtual void synchronized(const std::vector<std::string>& container_ids) = 0;
  virtual api::CreateContainerResponse create_container(const api::CreateContainerRequest& req) = 0;
  // removed: the runtime removed the container (or undid its creation).
  virtual void removed(const api::Container& container) = 0;
};

struct Registration {
  std::string name = "specshim";
  std::string index = "10";
  std::chrono::milliseconds timeout{5000};  // for the RegisterPlugin reply, and each write
};

// serve registers on the connected socket fd and answers calls until the
// runtime closes the connection; returns why it ended. Throws Error when the
// runtime refuses the registration, does not answer it in time, or breaks
// the framing. Does not close fd.
std::string serve(int fd, const Registration& reg, Service& service);

// connect_unix connects to the socket at path; -1 and errno on failure.
int connect_unix(const std::string& path);

}  // namespace specshim::nri
