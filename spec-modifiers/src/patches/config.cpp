// SPDX-License-Identifier: Apache-2.0
// Reading and validating [[patches]] tables. Everything that can be checked
// without a spec is checked here, at config load: operation names, JSON
// pointers, globs, mounts, and the paths a patch may not touch.
#include <algorithm>
#include <filesystem>

#include "rule_list.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/modifiers/patches.h"

namespace specshim::patches {
namespace {

constexpr const char* kOps[] = {"add", "remove", "replace", "move", "copy", "test"};

// Sensitive is a spec field a patch may change only with allow-sensitive =
// true: a typo there breaks (or silently re-owns) every matched container.
struct Sensitive {
  std::vector<std::string> tokens;
  const char* why;
};
const Sensitive kSensitive[] = {
    {{"root", "path"}, "the container's root filesystem"},
    {{"process", "user"}, "the user every matched container runs as"},
};

// valid_pointer checks RFC 6901 syntax: empty, or '/'-separated tokens in
// which '~' only starts ~0 or ~1.
bool valid_pointer(std::string_view p) {
  if (!p.empty() && p.front() != '/') return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] == '~' && (i + 1 == p.size() || (p[i + 1] != '0' && p[i + 1] != '1'))) return false;
  return !contains_control(p);
}

std::vector<std::string> tokens(std::string_view p) {
  std::vector<std::string> out;
  for (char c : p) {
    if (c == '/')
      out.emplace_back();
    else
      out.back() += c;
  }
  for (auto& t : out) {
    for (auto pos = t.find("~1"); pos != std::string::npos; pos = t.find("~1", pos + 1)) t.replace(pos, 2, "/");
    for (auto pos = t.find("~0"); pos != std::string::npos; pos = t.find("~0", pos + 1)) t.replace(pos, 2, "~");
  }
  return out;
}

// prefix_of reports whether a is b or one of its ancestors.
bool prefix_of(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// sensitive returns the field a write at p would change, or nullptr: p is
// the field, inside it, or one of its ancestors (replacing /process replaces
// /process/user too).
const Sensitive* sensitive(const std::vector<std::string>& p) {
  for (const auto& s : kSensitive)
    if (prefix_of(p, s.tokens) || prefix_of(s.tokens, p)) return &s;
  return nullptr;
}

std::string join_pointer(const std::vector<std::string>& t) {
  std::string out;
  for (const auto& s : t) out += "/" + s;
  return out;
}

std::string read_pointer(config::Section& o, const char* key, const std::string& what) {
  auto p = o.string(key);
  if (!p) o.fail("", what + ": needs " + key);
  if (!valid_pointer(*p))
    o.fail(key, what + ": `" + *p + "` is not a JSON pointer (empty, or /-separated with ~0 for ~ and ~1 for /)");
  return *p;
}

void check_sensitive(config::Section& o, const char* key, const std::string& pointer, const std::string& what) {
  if (const Sensitive* s = sensitive(tokens(pointer)))
    o.fail(key, what + ": changes `" + join_pointer(s->tokens) + "`, " + s->why +
                    "; set allow-sensitive = true on the patch if that is meant");
}

// read_value reads value (any TOML value) or value-json (JSON text, for
// what TOML cannot say: integers above 2^63-1 such as RLIM_INFINITY).
Json read_value(config::Section& o, const std::string& what) {
  if (o.has("value") && o.has("value-json")) o.fail("value-json", what + ": give value or value-json, not both");
  if (auto value = o.json("value")) return std::move(*value);
  auto text = o.string("value-json");
  if (!text) o.fail("", what + ": needs value");
  try {
    return parse_json(*text, what);
  } catch (const Error& e) {
    o.fail("value-json", e.what());
  }
}

Op read_op(config::Section& o, std::size_t index, const std::string& patch, bool allow_sensitive) {
  std::string what = "patch `" + patch + "` ops[" + std::to_string(index) + "]";
  auto op = o.string("op");
  if (!op) o.fail("", what + ": needs op (add, remove, replace, move, copy, test)");
  if (std::find(std::begin(kOps), std::end(kOps), *op) == std::end(kOps))
    o.fail("op", what + ": unknown op `" + *op + "` (add, remove, replace, move, copy, test)");
  what += " (" + *op;
  std::string path = read_pointer(o, "path", what + ")");
  Json j{{"op", *op}, {"path", path}};
  bool moves = *op == "move" || *op == "copy";
  if (moves) {
    j["from"] = read_pointer(o, "from", what + ")");
    what += " " + j["from"].get<std::string>() + " ->";
  } else if (o.has("from")) {
    o.fail("from", what + "): takes no from");
  }
  what += " " + (path.empty() ? std::string("\"\"") : path) + ")";
  bool valued = *op == "add" || *op == "replace" || *op == "test";
  if (valued) {
    j["value"] = read_value(o, what);
  } else {
    for (const char* key : {"value", "value-json"})
      if (o.has(key)) o.fail(key, what + ": takes no value");
  }
  bool create_parents = o.boolean("create-parents").value_or(false);
  if (create_parents && *op != "add") o.fail("create-parents", what + ": only add takes create-parents");
  o.finish();

  auto target = tokens(path);
  if (!target.empty() && target.back() == "-" && *op != "add" && !moves)
    o.fail("path", what + ": `-` (past the end of an array) is only a target for add, move and copy");
  if (target.empty() && *op == "remove") o.fail("path", what + ": cannot remove the whole spec");
  if (*op == "move" && prefix_of(tokens(j["from"].get<std::string>()), target) && j["from"] != j["path"])
    o.fail("path", what + ": cannot move a value into itself");
  if (!allow_sensitive && *op != "test") {
    check_sensitive(o, "path", path, what);
    if (*op == "move") check_sensitive(o, "from", j["from"].get<std::string>(), what);
  }
  return Op{std::move(j), what.substr(what.find("ops[")), create_parents};
}

Json read_mount(config::Section& m, const std::string& what) {
  auto destination = m.string("destination");
  if (!destination) m.fail("", what + ": needs destination");
  if (destination->empty() || destination->front() != '/' || contains_control(*destination))
    m.fail("destination", what + ": `" + *destination + "` is not an absolute path");
  Json mount{{"destination", *destination}};
  if (auto type = m.string("type")) mount["type"] = *type;
  auto source = m.string("source");
  if (!source || source->empty()) m.fail(source ? "source" : "", what + ": needs a source");
  mount["source"] = *source;
  if (auto options = m.strings("options")) mount["options"] = *options;
  m.finish();
  return mount;
}

Patch read_patch(config::Section& t, std::string_view opt_out) {
  Patch p;
  p.name = read_rule_name(t, "patch");
  bool allow_sensitive = t.boolean("allow-sensitive").value_or(false);
  p.match = read_container_match(t, "patch `" + p.name + "`", opt_out);
  auto ops = t.tables("ops");
  for (std::size_t i = 0; i < ops.size(); ++i) p.ops.push_back(read_op(ops[i], i, p.name, allow_sensitive));
  auto mounts = t.tables("set-mounts");
  for (std::size_t i = 0; i < mounts.size(); ++i) {
    std::string what = "patch `" + p.name + "` set-mounts[" + std::to_string(i) + "]";
    Json mount = read_mount(mounts[i], what);
    auto same = [&](const Json& o) {
      return normal_destination(o["destination"].get<std::string>()) ==
             normal_destination(mount["destination"].get<std::string>());
    };
    if (std::any_of(p.set_mounts.begin(), p.set_mounts.end(), same))
      mounts[i].fail("destination", what + ": destination set twice in this patch");
    p.set_mounts.push_back(std::move(mount));
  }
  t.finish();
  if (p.ops.empty() && p.set_mounts.empty()) t.fail("", "patch `" + p.name + "`: needs ops or set-mounts");
  return p;
}

}  // namespace

std::string normal_destination(std::string_view destination) {
  return fs::clean_path(destination);
}

std::vector<Patch> read_patches(config::Section& s, std::string_view opt_out) {
  return read_rule_list(s, "patches", "patch", [&](config::Section& t) { return read_patch(t, opt_out); });
}

}  // namespace specshim::patches
