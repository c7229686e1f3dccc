// SPDX-License-Identifier: Apache-2.0
// The kubelet as one create's modifiers see it (device-plugin, cpuset): the
// client made the first time it is needed, one budget for every call, and
// each pod's PodResources asked at most once, for every modifier that asks
// the same kubelet.
#pragma once

#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/kubelet/client.h"

namespace specshim {

// KubeletClientFactory makes the kubelet client the first time a modifier
// needs it (never on a create that does not ask the kubelet).
using KubeletClientFactory = std::function<std::unique_ptr<kubelet::KubeletClient>()>;

// KubeletSession serves one create (every pass of its chain). The budget
// starts when the client is made. pod_resources remembers its answer for the
// last pod asked, and a failure too: a kubelet that is down costs one call,
// not one per pass.
class KubeletSession {
 public:
  KubeletSession(KubeletClientFactory make_client, std::chrono::milliseconds budget)
      : make_client_(std::move(make_client)), budget_ms_(budget) {}

  kubelet::KubeletClient& client();
  const kubelet::Budget& budget();  // makes the client first
  // pod_resources throws kubelet::Error (the same one again for the same pod).
  const kubelet::PodResources& pod_resources(const std::string& ns, const std::string& name);
  // checkpoint is the checkpoint entries of one container (no RPC), read
  // once per create for device-plugin's provider and protect-env and for
  // env-devices; throws kubelet::Error, asking again next time.
  const std::vector<kubelet::CheckpointEntry>& checkpoint(const std::string& pod_uid, const std::string& container);
  bool client_made() const { return client_ != nullptr; }

 private:
  KubeletClientFactory make_client_;
  std::chrono::milliseconds budget_ms_;
  std::unique_ptr<kubelet::KubeletClient> client_;
  std::optional<kubelet::Budget> budget_;
  std::optional<std::pair<std::string, std::string>> pod_asked_;         // ns, name
  std::optional<kubelet::PodResources> pod_resources_;                   // of pod_asked_
  std::exception_ptr pod_failure_;                                       // of pod_asked_
  std::optional<std::pair<std::string, std::string>> checkpoint_asked_;  // pod UID, container
  std::vector<kubelet::CheckpointEntry> checkpoint_;                     // of checkpoint_asked_
};

// KubeletSessions are a chain's sessions: one per kubelet root and budget,
// shared by every modifier configured with both. device-plugin and cpuset on
// the same node then start one helper and ask a pod's PodResources once.
class KubeletSessions {
 public:
  // session returns the session for root and budget; make_client is kept
  // only by the call that makes it.
  std::shared_ptr<KubeletSession> session(const std::filesystem::path& root, std::chrono::milliseconds budget,
                                          KubeletClientFactory make_client);
  // helper_session is session with the client every modifier uses on a
  // node: the specshim-kubelet helper for root, started when first needed.
  std::shared_ptr<KubeletSession> helper_session(const std::filesystem::path& root, std::chrono::milliseconds budget);

 private:
  std::map<std::pair<std::string, std::chrono::milliseconds::rep>, std::shared_ptr<KubeletSession>> sessions_;
};

// KubeletKeys is the [kubelet] table: where the kubelet is (root, for
// k0s /var/lib/k0s/kubelet, for MicroK8s /var/snap/microk8s/common/var/lib/kubelet)
// and the budget of one create's kubelet calls. [device-plugin], [cpuset]
// and [[env-devices]] start from it; each may set its own kubelet-root
// (and, but for env-devices, budget-ms).
struct KubeletKeys {
  std::filesystem::path root = kubelet::kDefaultKubeletRoot;
  std::chrono::milliseconds budget{2000};
};

// read_kubelet_table reads [kubelet] strictly: root (an absolute path) and
// budget-ms (1-600000), each when set; any other key is an error.
KubeletKeys read_kubelet_table(config::Section& s);

// read_kubelet_keys reads the keys every kubelet-asking table has:
// kubelet-root (an absolute path) and budget-ms (1-600000), each when set,
// over the values already there ([kubelet]'s).
void read_kubelet_keys(config::Section& s, std::filesystem::path& kubelet_root, std::chrono::milliseconds& budget);

}  // namespace specshim
