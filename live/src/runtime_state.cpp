// SPDX-License-Identifier: Apache-2.0
// The runtime's `state` and `list`, run as commands and read as JSON (the
// same for every runtime kind: specshim/base/runtime_kind.h); its own error
// message is quoted without logrus's decoration.
#include "specshim/live/runtime_state.h"

#include <initializer_list>

#include "specshim/base/command.h"
#include "specshim/base/error.h"
#include "specshim/base/runtime_kind.h"
#include "specshim/base/spec.h"
#include "specshim/base/text.h"

namespace specshim::live {
namespace {

using namespace std::chrono_literals;

// runtime_message is the runtime's error without logrus decoration: runc
// prints `time="..." level=error msg="container does not exist"`.
std::string runtime_message(const std::string& err) {
  std::string text(trim_end(err, "\n \r"));
  auto nl = text.rfind('\n');
  std::string last = nl == std::string::npos ? text : text.substr(nl + 1);
  auto msg = last.find("msg=\"");
  if (msg != std::string::npos) {
    std::string out;
    for (std::size_t i = msg + 5; i < last.size() && last[i] != '"'; ++i) {
      if (last[i] == '\\' && i + 1 < last.size()) ++i;
      out += last[i];
    }
    return out;
  }
  return last.empty() ? std::string("(no message)") : last;
}

// default_root says, when no --root was given, which root the runtime
// looked in: a container of containerd's is not there.
std::string default_root(const std::filesystem::path& runtime, const std::string& root) {
  if (!root.empty()) return "";
  const runtime::Kind& kind = runtime::kind_of(runtime.string());
  return " (no --root: " + std::string(kind.name) + "'s default root " + std::string(kind.default_root) +
         "; containerd's containers are under /run/containerd/runc/<namespace>)";
}

// run_runtime runs `RUNTIME [--root ROOT] ARGS...` (no --root when root is empty).
CommandResult run_runtime(const std::filesystem::path& runtime, const std::string& root,
                          std::initializer_list<std::string> args) {
  std::vector<std::string> argv = {runtime.string()};
  if (!root.empty()) argv.insert(argv.end(), {"--root", root});
  argv.insert(argv.end(), args);
  return run_command(argv, 10s);
}

// state_of reads the fields `state` and each `list` entry share; id when the JSON has none.
ContainerState state_of(const Json& j, const std::string& id) {
  ContainerState s;
  s.id = j.value("id", id);
  s.status = j.at("status").get<std::string>();
  s.pid = j.value("pid", 0);
  s.bundle = j.at("bundle").get<std::string>();
  return s;
}

}  // namespace

ContainerState runtime_state(const std::filesystem::path& runtime, const std::string& root, const std::string& id) {
  std::string what = "container " + q(id);
  CommandResult r = run_runtime(runtime, root, {"state", id});
  if (r.timed_out) throw Error(what + ": " + q(runtime.string() + " state") + " did not answer within 10 s");
  if (r.exit_code != 0)
    throw Error(what + ": " + runtime.filename().string() + " state: " + runtime_message(r.err) +
                default_root(runtime, root));
  try {
    ContainerState s = state_of(Json::parse(r.out), id);
    if (s.bundle.empty() || !s.bundle.is_absolute()) throw Error("bundle " + q(s.bundle.string()) + " is not absolute");
    return s;
  } catch (const Error& e) {
    throw Error(what + ": " + runtime.filename().string() + " state: " + e.what());
  } catch (const std::exception& e) {
    throw Error(what + ": " + runtime.filename().string() + " state printed no state: " + json_cause(e));
  }
}

std::vector<ContainerState> runtime_list(const std::filesystem::path& runtime, const std::string& root) {
  std::string what = q(runtime.filename().string() + " list");
  CommandResult r = run_runtime(runtime, root, {"list", "--format", "json"});
  if (r.timed_out) throw Error(what + " did not answer within 10 s");
  if (r.exit_code != 0) throw Error(what + ": " + runtime_message(r.err) + default_root(runtime, root));
  std::vector<ContainerState> out;
  try {
    Json j = Json::parse(r.out);
    if (j.is_null()) return out;  // runc prints null when it knows no container
    for (const auto& c : j) out.push_back(state_of(c, c.at("id").get<std::string>()));
  } catch (const std::exception& e) {
    throw Error(what + " printed no container list: " + json_cause(e));
  }
  return out;
}

void require_live(const ContainerState& state) {
  if (state.status != "created" && state.status != "running")
    throw Error("container " + q(state.id) + " is " + state.status + ", not created or running");
  if (state.pid <= 0) throw Error("container " + q(state.id) + " has no process");
}

}  // namespace specshim::live
