// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the e2e tests: runtime-call filtering, CRI log files,
// kubelet-like container configs, and specshim's own error text.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "containerd_harness.h"

namespace specshim::e2e {

// calls_for keeps the runtime calls that name container `id` as an argument.
std::vector<std::string> calls_for(const std::vector<std::string>& calls, const std::string& id);
// in_order: `expected` appears in `calls` as a subsequence.
bool in_order(const std::vector<std::string>& calls, const std::vector<std::string>& expected);
std::string join(const std::vector<std::string>& lines);

// specshim_config_error is the message specshim reports for the current
// config (`specshim doctor` describes a config error with the same text a
// create writes to --log), prefixed "specshim: " as in --log.
std::string specshim_config_error(const Containerd& c);

// A CRI container log line: "<time> <stream> <P|F> <text>"; P(artial) lines are joined.
struct LogLine {
  std::string stream;  // stdout or stderr
  std::string text;
};
std::vector<LogLine> read_cri_log(const std::string& path);
// log_text is the log's lines, "<stream>: <text>\n" each, for matching and messages.
std::string log_text(const std::vector<LogLine>& lines);

// container_config is a kubelet-like container: busybox image, `sh -c script`,
// its own pid namespace, log file <name>.log in the pod's log directory.
cri::ContainerConfig container_config(const std::string& name, const std::string& script);

// wait_exited polls ContainerStatus until the container has exited.
cri::ContainerStatus wait_exited(CriClient& cri, const std::string& id,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(30));

// bundle_config reads config.json of a running task in containerd's k8s.io namespace.
std::string bundle_config(const Containerd& c, const std::string& id);

}  // namespace specshim::e2e
