// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/kubelet_session.h"

#include "specshim/base/error.h"

namespace specshim {

kubelet::KubeletClient& KubeletSession::client() {
  if (!client_) {
    client_ = make_client_();
    budget_.emplace(budget_ms_);
  }
  return *client_;
}

const kubelet::Budget& KubeletSession::budget() {
  client();
  return *budget_;
}

const std::vector<kubelet::CheckpointEntry>& KubeletSession::checkpoint(const std::string& pod_uid,
                                                                        const std::string& container) {
  if (checkpoint_asked_ != std::pair(pod_uid, container)) {
    checkpoint_asked_.reset();
    checkpoint_ = client().checkpoint(pod_uid, container);
    checkpoint_asked_.emplace(pod_uid, container);
  }
  return checkpoint_;
}

const kubelet::PodResources& KubeletSession::pod_resources(const std::string& ns, const std::string& name) {
  if (pod_asked_ != std::pair(ns, name)) {
    pod_asked_.emplace(ns, name);
    pod_resources_.reset();
    pod_failure_ = nullptr;
    try {
      pod_resources_ = client().pod_resources(ns, name, *budget_);
    } catch (const kubelet::Error&) {
      pod_failure_ = std::current_exception();
    }
  }
  if (pod_failure_) std::rethrow_exception(pod_failure_);
  return *pod_resources_;
}

std::shared_ptr<KubeletSession> KubeletSessions::session(const std::filesystem::path& root,
                                                         std::chrono::milliseconds budget,
                                                         KubeletClientFactory make_client) {
  auto& s = sessions_[{root.lexically_normal().string(), budget.count()}];
  if (!s) s = std::make_shared<KubeletSession>(std::move(make_client), budget);
  return s;
}

std::shared_ptr<KubeletSession> KubeletSessions::helper_session(const std::filesystem::path& root,
                                                                std::chrono::milliseconds budget) {
  kubelet::ClientOptions options{root};
  return session(root, budget, [options] { return kubelet::make_helper_client(options); });
}

namespace {

void read_root(config::Section& s, std::string_view key, std::filesystem::path& kubelet_root) {
  if (auto root = s.string(key)) {
    if (root->empty() || (*root)[0] != '/' || contains_control(*root)) s.fail(key, "must be an absolute path");
    kubelet_root = *root;
  }
}

void read_budget(config::Section& s, std::chrono::milliseconds& budget) {
  if (auto ms = s.integer("budget-ms", 1, 600000)) budget = std::chrono::milliseconds(*ms);
}

}  // namespace

KubeletKeys read_kubelet_table(config::Section& s) {
  KubeletKeys k;
  read_root(s, "root", k.root);
  read_budget(s, k.budget);
  s.finish();
  return k;
}

void read_kubelet_keys(config::Section& s, std::filesystem::path& kubelet_root, std::chrono::milliseconds& budget) {
  read_root(s, "kubelet-root", kubelet_root);
  read_budget(s, budget);
}

}  // namespace specshim
