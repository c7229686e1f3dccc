// SPDX-License-Identifier: Apache-2.0
// Doctor's user-namespace check: what a pod with `hostUsers: false` needs
// from this node (the kernel's user namespaces and idmapped mounts, the
// runtime's idmap mounts) and what specshim does for it. Information only:
// a node without them still runs every other pod (docs/user-namespaces.md).
#include <sys/utsname.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "doctor/doctor.h"
#include "runtime.h"
#include "specshim/base/fs.h"

namespace specshim::shim::doctor {
namespace {

// Kernel is a release's major.minor ("6.1.0-18-amd64" is {6, 1}).
struct Kernel {
  int major = 0, minor = 0;
  bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
};

Kernel parse_release(std::string_view release) {
  Kernel k;
  auto [dot, ec] = std::from_chars(release.data(), release.data() + release.size(), k.major);
  if (ec == std::errc() && dot < release.data() + release.size() && *dot == '.')
    std::from_chars(dot + 1, release.data() + release.size(), k.minor);
  return k;
}

void check_kernel_support(const Host& host, Check& c) {
  std::filesystem::path max = host.path("/proc/sys/user/max_user_namespaces");
  try {
    std::string n = fs::read_regular_file(max, 64);
    while (!n.empty() && n.back() == '\n') n.pop_back();
    if (n == "0") {
      c.add(Severity::info,
            "user.max_user_namespaces is 0: no user namespace can be made, so no pod with hostUsers: "
            "false can run here");
      return;
    }
    c.add(Severity::info, "user namespaces: at most " + n + " (user.max_user_namespaces)");
  } catch (const std::exception& e) {
    c.add(Severity::info, "cannot read " + max.string() + ": " + e.what());
  }
  struct utsname u {};
  ::uname(&u);
  Kernel k = parse_release(u.release);
  std::string kernel = std::string("kernel ") + u.release + ": ";
  // Kubernetes asks 6.3 for idmapped tmpfs (projected volumes); containerd's
  // overlayfs snapshotter idmaps image layers from 5.19 and chowns a copy of
  // them before.
  if (k.at_least(6, 3))
    c.add(Severity::info, kernel + "idmapped mounts, of overlayfs layers and of tmpfs too (6.3+)");
  else if (k.at_least(5, 12))
    c.add(Severity::info, kernel +
                              "idmapped mounts, but not of tmpfs (6.3+), which Kubernetes needs for projected "
                              "volumes of user-namespaced pods");
  else
    c.add(Severity::info, kernel + "no idmapped mounts (5.12+): user-namespaced pods cannot mount volumes");
}

// check_runtime_features asks the runtime what `features` says of user
// namespaces and idmap mounts: containerd 2.x reports a handler able to run
// user-namespaced pods only when its runtime supports idmap mounts.
void check_runtime_features(const Loaded& loaded, Check& c) {
  std::string path;
  try {
    path = find_runtime(loaded.settings.runtime_path);
  } catch (const std::exception&) {
    return;  // the runtime check reports it
  }
  Output out = probe({path, "features"});
  nlohmann::json f = nlohmann::json::parse(out.text, nullptr, false);
  if (out.exit_code != 0 || !f.is_object()) {
    c.add(Severity::info, "`" + path +
                              " features` did not answer (runc before 1.1): containerd cannot tell whether it "
                              "supports user namespaces and idmap mounts");
    return;
  }
  const auto* linux_ = f.contains("linux") && f["linux"].is_object() ? &f["linux"] : nullptr;
  bool user = false, idmap = false;
  if (linux_ && linux_->contains("namespaces") && (*linux_)["namespaces"].is_array())
    for (const auto& n : (*linux_)["namespaces"]) user |= n == "user";
  if (linux_) {
    auto p = nlohmann::json::json_pointer("/mountExtensions/idmap/enabled");
    idmap = linux_->contains(p) && (*linux_)[p] == true;
  }
  c.add(Severity::info, "`" + path + " features`: user namespaces " + (user ? "yes" : "no") + ", idmap mounts " +
                            (idmap ? "yes" : "no (runc 1.2+ and crun 1.9+ have them)") +
                            (idmap ? "" : "; containerd 2.x then does not offer the handler to hostUsers: false pods"));
}

}  // namespace

Check check_user_namespaces(const Host& host, const Loaded& loaded) {
  Check c("user-namespaces");
  check_kernel_support(host, c);
  check_runtime_features(loaded, c);
  if (loaded.on("passwd"))
    c.add(Severity::info,
          "passwd: entries for user-namespaced containers too, judged through their id mappings and "
          "owned by their root's host ids");
  return c;
}

}  // namespace specshim::shim::doctor
