// SPDX-License-Identifier: Apache-2.0
#include "device_plugin/resolver.h"

#include <algorithm>
#include <iterator>

#include "specshim/base/error.h"
#include "specshim/base/log.h"

namespace specshim::device_plugin {
namespace {

std::string memo_key(const std::string& resource, std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  return resource + "\n" + join(ids, "\n");
}

// stored_answer finds the kubelet's answer for exactly these devices:
// this pod's entry first, then the holder's, then any (if they agree).
std::optional<kubelet::AllocateResponse> stored_answer(const Target& t, const Request& req) {
  if (req.stored) return req.stored;
  auto entries = t.kubelet().checkpoint_for_devices(req.resource->name, req.ids);
  std::erase_if(entries, [](auto& e) { return !e.alloc; });
  auto narrow = [&](auto keep) {
    std::vector<kubelet::CheckpointEntry> kept;
    std::copy_if(entries.begin(), entries.end(), std::back_inserter(kept), keep);
    if (!kept.empty()) entries = std::move(kept);
  };
  if (!t.id.uid.empty()) narrow([&](auto& e) { return e.pod_uid == t.id.uid; });
  if (!req.holder.empty()) narrow([&](auto& e) { return e.container == req.holder; });
  if (entries.empty()) return std::nullopt;
  bool agree = std::all_of(entries.begin(), entries.end(), [&](auto& e) { return e.alloc == entries.front().alloc; });
  if (!agree) {
    log::debug("device-plugin: {} entries of the checkpoint differ for {}; not using them", entries.size(),
               label(req.resource->name, req.ids));
    return std::nullopt;
  }
  return entries.front().alloc;
}

std::string how(const Request& req) {
  std::string s(to_string(req.provider));
  if (!req.via.labels.empty()) s += ", named by the answer for " + req.via.labels.back();
  return s;
}

// require_env fails the create when the answer lacks a key its resource's
// require-env lists, on-error notwithstanding: skipping the answer would
// not take back the devices containerd already gave a CRI container.
void require_env(const Target& t, const Resolution& res) {
  const Resource& r = *res.resource;
  auto missing = missing_env(r.require_env, res.answer->envs);
  if (missing.empty()) return;
  std::vector<std::string> quoted, keys;
  for (const auto& glob : missing) quoted.push_back("`" + glob + "`");
  for (const auto& [k, v] : res.answer->envs) keys.push_back(k);
  throw Error(res.label + " for " + t.who + ": the answer from " + res.source + " (" + res.how + ") has no env " +
              join(quoted, ", ") + " (require-env of `" + r.name + "`; the answer sets " +
              (keys.empty() ? std::string("no env") : join_some(keys, ", ")) + "): another device plugin registered `" +
              r.name +
              "` may have answered instead of the one that sets it; `specshim doctor` names the plugins "
              "serving each resource");
}

}  // namespace

const Resolution* Resolver::resolve(const Target& t, const Request& req, bool allow_allocate) {
  std::string key = memo_key(req.resource->name, req.ids);
  if (auto it = memo_.find(key); it != memo_.end()) return &resolved_[it->second];
  const Resource& r = *req.resource;
  Resolution res{
      .resource = &r, .label = label(r.name, req.ids), .source = "the checkpoint", .how = how(req), .via = req.via};
  res.via.labels.push_back(res.label);
  res.via.resources.push_back(r.name);
  std::string socket = t.socket_of(r);
  try {
    auto answer = stored_answer(t, req);
    bool may_allocate = r.allocate && allow_allocate;
    if (!answer && !req.parts.empty() && !may_allocate) return nullptr;
    if (!answer && !r.allocate)
      throw kubelet::NotFound("the kubelet checkpoint has no answer for these devices, and allocate = false");
    if (!answer && !may_allocate) {
      log::debug("device-plugin: dry-run: would call Allocate for {} (pass --allow-allocate)", res.label);
      return remember(key, std::move(res));
    }
    if (!answer) {
      socket = t.kubelet().plugin_for_resource(r.name, r.socket, req.ids, t.budget()).string();
      answer = t.kubelet().allocate(socket, r.name, req.ids, t.budget());
      res.source = "Allocate";
    }
    res.answer = prepare_answer(*answer, lookup_);
    res.grant = granted(*answer, r.name, res.source);
  } catch (const kubelet::Error& e) {
    t.settle({&r}, "resolve " + res.label, socket, e.what());
  } catch (const Error& e) {
    t.settle({&r}, "resolve " + res.label, socket, std::string("answer: ") + e.what());
  }
  log::debug("device-plugin: {} for {}: {} ({})", res.label, t.who,
             res.answer ? "answer from " + res.source : std::string("skipped"), res.how);
  if (res.answer && !res.resource->require_env.empty()) require_env(t, res);
  return remember(key, std::move(res));
}

const Via* Resolver::vouching(const std::string& key, const std::string& value) const {
  for (const auto& r : resolved_)
    if (r.answer)
      for (const auto& [k, v] : r.answer->annotations)
        if (k == key && v == value) return &r.via;
  return nullptr;
}

const Resolution* Resolver::remember(const std::string& key, Resolution res) {
  memo_[key] = resolved_.size();
  resolved_.push_back(std::move(res));
  return &resolved_.back();
}

}  // namespace specshim::device_plugin
