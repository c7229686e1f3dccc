// SPDX-License-Identifier: Apache-2.0
// specshim-kubelet: runs the kubelet and device-plugin gRPC calls for the
// shim, which must not load gRPC itself (see docs/kubelet-client.md). It
// reads one JSON request per line on stdin and answers one JSON line on
// stdout (protocol: kubelet-client/src/helper_protocol.h) until end of input.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "helper_protocol.h"
#include "specshim/kubelet/client.h"
#include "specshim/kubelet/json.h"

namespace {

using nlohmann::json;
using namespace specshim::kubelet;

json serve(KubeletClient& client, const json& req) {
  auto total = std::chrono::milliseconds(req.at("total_ms").get<long long>());
  Budget::Clock::time_point deadline{std::chrono::nanoseconds(req.at("deadline_ns").get<long long>())};
  Budget budget(total, deadline);
  const std::string op = req.at("op").get<std::string>();
  if (op == "pod_resources")
    return client.pod_resources(req.at("namespace").get<std::string>(), req.at("name").get<std::string>(), budget);
  if (op == "list_pods") return client.list_pods(budget);
  if (op == "allocatable") return client.allocatable(budget);
  if (op == "plugin_options") return client.plugin_options(req.at("socket").get<std::string>(), budget);
  if (op == "allocate")
    return client.allocate(req.at("socket").get<std::string>(), req.at("resource").get<std::string>(),
                           req.at("device_ids").get<std::vector<std::string>>(), budget);
  if (op == "list_plugins") return client.list_plugins(budget);
  throw Protocol("helper: unknown operation `" + op + "`");
}

json answer(KubeletClient& client, const std::string& line) {
  try {
    json req = json::parse(line);
    return {{"ok", true}, {"result", serve(client, req)}};
  } catch (const Error& e) {
    return {{"ok", false}, {"kind", to_string(kind_of(e))}, {"message", e.what()}};
  } catch (const std::exception& e) {
    return {{"ok", false}, {"kind", "protocol"}, {"message", std::string("helper: bad request: ") + e.what()}};
  }
}

}  // namespace

int main(int argc, char** argv) {
  ClientOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--kubelet-root" && i + 1 < argc) {
      options.kubelet_root = argv[++i];
    } else {
      std::cerr << "usage: " << specshim::kubelet::helper::kHelperName
                << " [--kubelet-root DIR] < requests (one JSON object per line)\n";
      return 2;
    }
  }
  // gRPC logs to stderr; the shim discards the helper's stderr, but a human
  // running the helper by hand should not see transport chatter either.
  ::setenv("GRPC_VERBOSITY", "NONE", 0);
  auto client = make_grpc_client(options);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.size() > specshim::kubelet::helper::kMaxLineBytes) return 1;
    std::string out = answer(*client, line).dump() + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
  return 0;
}
