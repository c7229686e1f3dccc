// SPDX-License-Identifier: Apache-2.0
#include "client_base.h"

#include <sys/stat.h>

#include <algorithm>
#include <system_error>

namespace specshim::kubelet {

namespace fs = std::filesystem;

fs::path pod_resources_socket(const fs::path& kubelet_root) {
  return kubelet_root / "pod-resources" / "kubelet.sock";
}
fs::path device_plugin_dir(const fs::path& kubelet_root) {
  return kubelet_root / "device-plugins";
}
fs::path checkpoint_file(const fs::path& kubelet_root) {
  return device_plugin_dir(kubelet_root) / "kubelet_internal_checkpoint";
}

std::vector<fs::path> plugin_sockets(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw Unavailable("list device plugins in `" + dir.string() + "`: " + ec.message());
  std::vector<fs::path> out;
  for (const auto& entry : it) {
    const fs::path& p = entry.path();
    // kubelet.sock here is the kubelet's Registration server, not a plugin.
    if (p.extension() != ".sock" || p.filename() == "kubelet.sock") continue;
    if (!entry.is_socket(ec)) continue;
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<CheckpointEntry> KubeletClient::checkpoint_entry(const std::string& pod_uid, const std::string& container,
                                                               const std::string& resource) {
  for (auto& e : checkpoint(pod_uid, container))
    if (e.resource == resource) return std::move(e);
  return std::nullopt;
}

const Checkpoint* ClientBase::loaded_checkpoint() {
  if (!checkpoint_) checkpoint_ = Checkpoint::read(checkpoint_file(options_.kubelet_root));
  return *checkpoint_ ? &**checkpoint_ : nullptr;
}

std::vector<CheckpointEntry> ClientBase::checkpoint(const std::string& pod_uid, const std::string& container) {
  const Checkpoint* cp = loaded_checkpoint();
  return cp ? cp->entries(pod_uid, container) : std::vector<CheckpointEntry>{};
}

std::vector<CheckpointEntry> ClientBase::checkpoint_for_devices(const std::string& resource,
                                                                const std::vector<std::string>& device_ids) {
  const Checkpoint* cp = loaded_checkpoint();
  return cp ? cp->entries_for_devices(resource, device_ids) : std::vector<CheckpointEntry>{};
}

std::string ClientBase::resource_of(const std::vector<Device>& devices) {
  const Checkpoint* cp = nullptr;
  try {
    cp = loaded_checkpoint();
  } catch (const Error&) {
    return {};  // only a hint; the checkpoint's own reader reports its errors
  }
  if (!cp) return {};
  std::string best;
  std::size_t best_overlap = 0;
  for (const auto& registered : cp->registered_devices()) {
    const std::vector<std::string>& ids = registered.second;
    auto overlap = static_cast<std::size_t>(std::count_if(devices.begin(), devices.end(), [&](const Device& d) {
      return std::find(ids.begin(), ids.end(), d.id) != ids.end();
    }));
    if (overlap > best_overlap) best = registered.first, best_overlap = overlap;
  }
  return best;
}

namespace {

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

bool serves_all(const PluginInfo& plugin, const std::vector<std::string>& ids) {
  return plugin.reachable() && std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
           return std::any_of(plugin.devices.begin(), plugin.devices.end(),
                              [&](const Device& d) { return d.id == id; });
         });
}

}  // namespace

fs::path ClientBase::plugin_for_resource(const std::string& resource, const std::string& configured,
                                         const std::vector<std::string>& device_ids, const Budget& budget) {
  fs::path dir = device_plugin_dir(options_.kubelet_root);
  if (!configured.empty()) {
    fs::path socket = fs::path(configured).is_absolute() ? fs::path(configured) : dir / configured;
    struct stat st {};
    if (::stat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
      throw Unavailable("device plugin for `" + resource + "`: socket `" + socket.string() +
                        "` does not exist (is the plugin running?)");
    return socket;
  }

  std::vector<std::string> want = device_ids;
  if (want.empty()) {
    if (const Checkpoint* cp = loaded_checkpoint())
      if (auto it = cp->registered_devices().find(resource); it != cp->registered_devices().end()) want = it->second;
  }
  std::string what = "find device plugin for `" + resource + "` in `" + dir.string() + "`";
  if (want.empty()) throw NotFound(what + ": no device IDs to match (none given, none registered in the checkpoint)");

  // Probes get a quarter of what is left, so one hung plugin cannot eat the
  // time the Allocate that follows needs.
  Budget probe(budget.remaining() / 4);
  std::vector<PluginInfo> plugins = list_plugins(probe);
  std::vector<std::string> matches, checked;
  for (const auto& p : plugins) {
    if (serves_all(p, want)) matches.push_back(p.socket.filename().string());
    checked.push_back(p.socket.filename().string() + ": " +
                      (p.reachable() ? std::to_string(p.devices.size()) + " devices" : p.error));
  }
  if (matches.size() == 1) return dir / matches.front();
  if (matches.size() > 1)
    throw NotFound(what + ": several plugins list devices " + join(want) + ": " + join(matches) +
                   "; set the socket in [[device-plugin.resources]]");
  // A probe that ran out of time may have been the plugin asked for.
  if (probe.expired())
    throw DeadlineExceeded(what + ": not every plugin answered within " + std::to_string(probe.total().count()) +
                           " ms, and none that did lists devices " + join(want) + " (" + join(checked, "; ") + ")");
  throw NotFound(what + ": no plugin lists devices " + join(want) +
                 (checked.empty() ? " (no plugin sockets)" : " (" + join(checked, "; ") + ")"));
}

}  // namespace specshim::kubelet
