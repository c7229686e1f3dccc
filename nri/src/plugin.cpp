// SPDX-License-Identifier: Apache-2.0
#include "specshim/nri/plugin.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

#include "passwd_hook.h"
#include "specshim/base/deadline.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/create.h"
#include "specshim/node/nri_status.h"

namespace specshim::nri {
namespace {

// kDefaultRequestTimeout is containerd's plugin_request_timeout, for a
// runtime whose Configure does not say its own (NRI before v0.7).
constexpr std::chrono::milliseconds kDefaultRequestTimeout{2000};

// kMinimumAnswer: the least time a create is given, whatever the margin.
constexpr std::chrono::milliseconds kMinimumAnswer{100};

}  // namespace

std::int32_t Plugin::configure(const api::ConfigureRequest& req) {
  level_ = level_of(req);
  log::info("nri: configured by {} (NRI v0.{}{}); request timeout {} ms", level_.runtime, level_.nri_minor,
            req.nri_version().empty() ? ", from the runtime's version" : "", req.request_timeout());
  request_timeout_ =
      req.request_timeout() > 0 ? std::chrono::milliseconds(req.request_timeout()) : kDefaultRequestTimeout;
  log::info(
      "nri: each create is answered within {} ms (the request timeout less [nri] answer-margin-ms): the "
      "kubelet's calls, the helper and file locks end by then",
      answer_within(settings_).count());
  try {
    nri_status::write(
        settings_, nri_status::Registration{::getpid(), settings_.index + "-" + name_, level_.runtime, level_.nri_minor,
                                            static_cast<std::int64_t>(::time(nullptr))});
  } catch (const std::exception& e) {
    log::warn("nri: {} (doctor will not see the plugin registered)", describe(e));
  }
  return kSubscribed;
}

std::chrono::milliseconds Plugin::answer_within(const NriSettings& nri) const {
  return std::max(request_timeout_ - nri.answer_margin, kMinimumAnswer);
}

void Plugin::disconnected() {
  nri_status::remove(settings_);
}

void Plugin::synchronized(const std::vector<std::string>& ids) {
  std::set<std::string> live(ids.begin(), ids.end());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(settings_.state_dir, ec)) {
    std::string name = entry.path().filename();
    if (live.count(name) || name[0] == '.') continue;  // a dot name is the plugin's own (.registered)
    std::filesystem::remove_all(entry.path(), ec);
    log::info("nri: removed `{}`, left by container {} that the runtime no longer has", entry.path().string(), name);
  }
}

api::CreateContainerResponse Plugin::create_container(const api::CreateContainerRequest& req) {
  const api::Container& c = req.container();
  std::string what = "container `" + c.name() + "` of pod `" + req.pod().namespace_() + "/" + req.pod().name() + "`";
  try {
    ConfigFile config = read_config_file(config_file_);
    const auto& handlers = config.nri.shim_handlers;
    if (std::find(handlers.begin(), handlers.end(), req.pod().runtime_handler()) != handlers.end()) {
      log::debug("nri: {}: its handler `{}` runs specshim, which runs the chain", what, req.pod().runtime_handler());
      return {};
    }
    // Every wait below ends before the runtime stops waiting for the answer.
    deadline::Scope due(deadline::Clock::now() + answer_within(config.nri));
    Spec view = spec_view(req.pod(), c, config.nri.pod_annotations);
    create::SpecInMemory bundle(std::move(view), settings_.container_dir(c.id()));
    Context ctx;
    ctx.container_id = c.id();
    create::Outcome out = create::modify(bundle, config.chain, std::move(ctx));
    api::CreateContainerResponse resp;
    if (out.changed())
      *resp.mutable_adjust() = adjustment(out.original(), out.spec.json(), level_, join(out.result.changed_by, ", "));
    create::commit(bundle, out);  // the generated files, once the adjustment is known to be expressible
    if (config.nri.passwd_hook) {
      api::ContainerAdjustment copies;
      if (add_passwd_copies(out.spec, bundle.dir(), config.nri, config_file_.string(), copies))
        resp.mutable_adjust()->MergeFrom(copies);
      else
        log::debug("nri: {}: the pod mounts over /etc/passwd or /etc/group: no passwd copies", what);
    }
    if (resp.has_adjust()) {
      (*resp.mutable_adjust()->mutable_annotations())[kMark] = settings_.index + "-" + name_;
      log::debug("nri: {}: {}", what, resp.adjust().ShortDebugString());
    }
    return resp;
  } catch (const std::exception& e) {
    std::string msg = cap_message("specshim: " + what + ": " + describe(e));
    log::warn("nri: {}", msg);
    throw RpcStatus{kFailedPrecondition, msg};
  }
}

void Plugin::removed(const api::Container& c) {
  if (!NriSettings::is_container_id(c.id())) return;
  std::error_code ec;
  if (std::filesystem::remove_all(settings_.container_dir(c.id()), ec) > 0)
    log::debug("nri: removed the files of container {}", c.id());
}

}  // namespace specshim::nri
