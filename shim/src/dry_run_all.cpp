// SPDX-License-Identifier: Apache-2.0
#include "dry_run_all.h"

#include <algorithm>

#include "specshim/base/error.h"
#include "specshim/live/runtime_state.h"
#include "specshim/modifiers/create.h"
#include "specshim/node/pod_identity.h"

namespace specshim::shim {
namespace {

// identify fills the row's pod, container and kind from the spec; a spec
// whose identity keys disagree is left unnamed (its create fails on them).
void identify(Preview& row, const Spec& spec) {
  try {
    auto cri = pod_identity::read_cri(spec);
    if (!cri.engine) return;
    row.kind = cri.kind == ContainerKind::sandbox ? "sandbox" : "container";
    if (!cri.pod.empty()) row.pod = cri.pod.str();
    row.container = cri.container;
  } catch (const std::exception&) {
  }
}

Preview preview_one(const Chain& chain, const live::ContainerState& state, bool allow_allocate) {
  Preview row;
  row.id = state.id;
  row.status = state.status;
  try {
    // Read once: the row's identity and the chain's input. The chain runs on
    // it in memory, with the bundle as its directory, and nothing is stored.
    Spec spec = create::BundleDir(state.bundle).read();
    identify(row, spec);
    create::SpecInMemory bundle(std::move(spec), state.bundle);
    Context ctx;
    ctx.dry_run = true;
    ctx.allow_allocate = allow_allocate;
    ctx.container_id = state.id;
    create::Outcome out = create::modify(bundle, chain, std::move(ctx));
    row.changed_by = out.result.changed_by;
    if (out.spec_changed()) row.patch = Json::diff(out.original(), out.spec.json());
    for (const auto& [name, file] : out.ctx.bundle_files) row.files.push_back((state.bundle / name).string());
  } catch (const std::exception& e) {
    row.error = describe(e);
  }
  return row;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s + "  ";
}

std::string outcome(const Preview& row) {
  if (!row.error.empty()) return "FAILS: " + row.error;
  if (!row.changes()) return "unchanged";
  std::string text = "changes";
  if (!row.changed_by.empty()) text += " (" + join(row.changed_by, ", ") + ")";
  if (!row.patch.empty()) text += ": " + std::to_string(row.patch.size()) + " op" + (row.patch.size() == 1 ? "" : "s");
  if (!row.files.empty()) text += "; writes " + join(row.files, ", ");
  return text;
}

}  // namespace

std::vector<Preview> preview_all(const Chain& chain, const std::string& runtime, const std::string& root,
                                 bool allow_allocate, std::size_t& stopped) {
  std::vector<Preview> rows;
  stopped = 0;
  for (const auto& state : live::runtime_list(runtime, root)) {
    if (state.status == "stopped") {
      ++stopped;
      continue;
    }
    rows.push_back(preview_one(chain, state, allow_allocate));
  }
  return rows;
}

std::string render_previews_text(const std::vector<Preview>& rows, std::size_t stopped) {
  std::size_t id = 9, pod = 3, container = 9;
  for (const auto& r : rows) {
    id = std::max(id, std::min<std::size_t>(r.id.size(), 64));
    pod = std::max(pod, r.pod.size());
    container = std::max(container, (r.kind == "sandbox" ? std::string("(sandbox)") : r.container).size());
  }
  std::string out =
      pad("CONTAINER", id) + pad("STATUS", 7) + pad("POD", pod) + pad("CONTAINER", container) + "AT ITS NEXT CREATE\n";
  std::size_t changes = 0, fails = 0;
  for (const auto& r : rows) {
    std::string name = r.kind == "sandbox" ? "(sandbox)" : r.container.empty() ? "-" : r.container;
    out += pad(r.id, id) + pad(r.status, 7) + pad(r.pod.empty() ? "-" : r.pod, pod) + pad(name, container) +
           outcome(r) + "\n";
    changes += r.error.empty() && r.changes();
    fails += !r.error.empty();
  }
  out += "\n" + std::to_string(rows.size()) + " live container" + (rows.size() == 1 ? "" : "s") + ": " +
         std::to_string(changes) + " would change, " + std::to_string(fails) + " would fail, " +
         std::to_string(rows.size() - changes - fails) + " unchanged";
  if (stopped) out += " (" + std::to_string(stopped) + " stopped, not previewed)";
  return out + "\n";
}

std::string render_previews_json(const std::vector<Preview>& rows) {
  Json all = Json::array();
  for (const auto& r : rows) {
    Json j;
    j["id"] = r.id;
    j["status"] = r.status;
    j["kind"] = r.kind.empty() ? Json(nullptr) : Json(r.kind);
    j["pod"] = r.pod.empty() ? Json(nullptr) : Json(r.pod);
    j["container"] = r.container.empty() ? Json(nullptr) : Json(r.container);
    j["result"] = !r.error.empty() ? "fails" : r.changes() ? "changes" : "unchanged";
    j["changed_by"] = r.changed_by;
    j["patch"] = r.patch;
    j["files"] = r.files;
    j["error"] = r.error.empty() ? Json(nullptr) : Json(r.error);
    all.push_back(std::move(j));
  }
  return all.dump(2) + "\n";
}

}  // namespace specshim::shim
