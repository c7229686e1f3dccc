// SPDX-License-Identifier: Apache-2.0
// Applying [[patches]] to a spec. A patch is applied to a copy of the
// document and the copy replaces the spec only when every operation and
// mount succeeded, so a failing patch leaves nothing half done. The record
// annotation makes each patch apply once: in later passes of the chain and in
// a later create or dry-run of a spec that was already patched.
#include "patches/modifier.h"

#include <algorithm>
#include <exception>

#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/base/text.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/patches.h"

namespace specshim {
namespace patches {
namespace {

using Pointer = Json::json_pointer;

// array_index reports whether t is an RFC 6901 array index of at most max:
// digits without a leading zero.
bool array_index(const std::string& t, std::size_t max) {
  if (t.empty() || t.size() > 19 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      (t.size() > 1 && t[0] == '0'))
    return false;
  return std::stoull(t) <= max;
}

// check_target throws when an add, move or copy has nowhere to put its
// value: RFC 6902 requires the parent to exist and hold values.
void check_target(const Json& doc, const Pointer& path) {
  if (path.empty()) return;
  Pointer parent = path.parent_pointer();
  if (!doc.contains(parent)) throw Error("parent `" + parent.to_string() + "` not found");
  const Json& p = doc.at(parent);
  if (!p.is_structured() && !p.is_null())
    throw Error("parent `" + parent.to_string() + "` is a " + p.type_name() + ", not an object or array");
  if (p.is_array() && path.back() != "-" && !array_index(path.back(), p.size()))
    throw Error("`" + path.back() + "` is not an index of `" + parent.to_string() + "` (0 to " +
                std::to_string(p.size()) + ", or - for the end)");
}

// create_parents makes the missing objects on the way to path's parent, as
// `mkdir -p` would; a null on the way becomes an object. It never creates an
// array element: a missing index stays an error.
void create_parents(Json& doc, const Pointer& path) {
  std::vector<std::string> reversed;
  for (Pointer p = path.parent_pointer(); !p.empty(); p.pop_back()) reversed.push_back(p.back());
  Pointer cur;
  for (auto t = reversed.rbegin(); t != reversed.rend(); ++t) {
    bool in_object = doc.at(cur).is_object();
    cur.push_back(*t);
    if (in_object && (!doc.contains(cur) || doc.at(cur).is_null())) doc[cur] = Json::object();
    if (!doc.contains(cur)) return;  // check_target names it
  }
}

// apply_op applies one operation to doc. The checks give the failures an
// admin meets their own words; nlohmann::json::patch does the edit.
void apply_op(Json& doc, const Op& o) {
  const Json& op = o.op;
  const auto& kind = op["op"].get_ref<const std::string&>();
  Pointer path(op["path"].get<std::string>());
  try {
    if (o.create_parents && !path.empty()) create_parents(doc, path);
    if (kind == "move" || kind == "copy") {
      if (!doc.contains(Pointer(op["from"].get<std::string>()))) throw Error("`from` path not found");
      check_target(doc, path);
    } else if (kind == "add") {
      check_target(doc, path);
    } else if (!doc.contains(path)) {
      throw Error("path not found");
    } else if (kind == "test" && doc.at(path) != op["value"]) {
      throw Error("test failed: the value is " + shown_json(doc.at(path), 80) + ", not " + shown_json(op["value"], 80));
    }
    doc.patch_inplace(Json::array({op}));
  } catch (const Json::exception& e) {
    // An index too large for size_t, say: nlohmann's words, without its prefix.
    throw Error(json_cause(e));
  }
}

// set_mount puts mount in place of the first mount at its destination and
// drops any later one there (the last mount at a destination is the one a
// process sees), or appends it when no mount has that destination.
void set_mount(Json& doc, const Json& mount) {
  auto destination = normal_destination(mount["destination"].get_ref<const std::string&>());
  auto mounts = doc.find("mounts");
  if (mounts == doc.end() || mounts->is_null()) {
    doc["mounts"] = Json::array({mount});
    return;
  }
  if (!mounts->is_array()) throw Error("spec field `mounts` is not an array");
  Json out = Json::array();
  bool placed = false;
  for (const auto& m : *mounts) {
    auto d = m.is_object() ? m.find("destination") : m.end();
    bool same = m.is_object() && d != m.end() && d->is_string() &&
                normal_destination(d->get_ref<const std::string&>()) == destination;
    if (!same)
      out.push_back(m);
    else if (!placed)
      out.push_back(mount), placed = true;
  }
  if (!placed) out.push_back(mount);
  *mounts = std::move(out);
}

// patched returns the spec document with p applied.
Json patched(const Json& spec, const Patch& p) {
  Json doc = spec;
  for (const auto& op : p.ops) {
    try {
      apply_op(doc, op);
    } catch (...) {
      std::throw_with_nested(Error("patch `" + p.name + "` " + op.label));
    }
  }
  for (std::size_t i = 0; i < p.set_mounts.size(); ++i) {
    try {
      set_mount(doc, p.set_mounts[i]);
    } catch (...) {
      std::throw_with_nested(Error("patch `" + p.name + "` set-mounts[" + std::to_string(i) + "] (" +
                                   p.set_mounts[i]["destination"].get<std::string>() + ")"));
    }
  }
  return doc;
}

}  // namespace

std::vector<std::string> recorded(const Spec& spec) {
  std::vector<std::string> names;
  std::string value = spec.annotation(kRecordAnnotation).value_or("");
  for (auto name : split_list(value, " ")) names.emplace_back(name);
  return names;
}

void Patches::apply(Spec& spec, Context&) {
  last_change_.clear();
  std::vector<std::string> done = recorded(spec);
  std::vector<std::string> applied;
  for (const auto& p : patches_) {
    if (std::find(done.begin(), done.end(), p.name) != done.end() || !p.match.holds(spec)) continue;
    spec.json() = patched(spec.json(), p);
    log::debug("patches: applied {}", p.name);
    applied.push_back(p.name);
    done.push_back(p.name);
  }
  if (applied.empty()) return;
  // Written after the patches, so an operation on the annotations cannot drop the record.
  spec.object_at({"annotations"})[std::string(kRecordAnnotation)] = join(done, ",");
  last_change_ = "applied " + join(applied, ",");
}

}  // namespace patches

std::unique_ptr<Modifier> make_patches(config::Section& s, const ChainPlan& plan) {
  if (!s.lists("patches", "patch")) return nullptr;
  auto list = patches::read_patches(s, plan.opt_out);
  if (list.empty()) return nullptr;
  return std::make_unique<patches::Patches>(std::move(list));
}

}  // namespace specshim
