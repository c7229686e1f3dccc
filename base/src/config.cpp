// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "toml_prescan.h"

namespace specshim::config {
namespace {

constexpr std::size_t kMaxConfigBytes = 1 << 20;

const toml::table& tbl(const void* p) {
  return *static_cast<const toml::table*>(p);
}

std::string line_of(const toml::node& n) {
  auto line = n.source().begin.line;
  return line ? "line " + std::to_string(line) + ": " : "";
}

// to_json converts a TOML value, or returns the reason it has no JSON form.
std::optional<std::string> to_json(const toml::node& n, nlohmann::ordered_json& out) {
  if (auto* t = n.as_table()) {
    // toml::table is sorted by key; JSON keeps the order the file wrote.
    std::vector<std::pair<toml::source_position, std::string>> keys;
    for (auto&& [k, v] : *t) keys.emplace_back(v.source().begin, std::string(k.str()));
    std::stable_sort(keys.begin(), keys.end(), [](auto& a, auto& b) { return a.first < b.first; });
    // A table's keys are unique: each member is appended, not looked up by
    // key first (ordered_json's operator[] scans its members).
    out = nlohmann::ordered_json::object();
    auto& members = out.get_ref<nlohmann::ordered_json::object_t&>();
    members.reserve(keys.size());
    for (auto& [pos, k] : keys) {
      const toml::node* v = t->get(k);
      auto& member = members.emplace_back(std::move(k), nullptr);
      if (auto why = to_json(*v, member.second)) return why;
    }
    return std::nullopt;
  }
  if (auto* a = n.as_array()) {
    out = nlohmann::ordered_json::array();
    for (auto& e : *a)
      if (auto why = to_json(e, out.emplace_back())) return why;
    return std::nullopt;
  }
  if (auto v = n.value_exact<std::string>()) {
    out = *v;
  } else if (auto i = n.value_exact<std::int64_t>()) {
    if (*i >= 0)
      out = static_cast<std::uint64_t>(*i);
    else
      out = *i;
  } else if (auto f = n.value_exact<double>()) {
    if (!std::isfinite(*f)) return "inf and nan have no JSON form";
    out = *f;
  } else if (auto b = n.value_exact<bool>()) {
    out = *b;
  } else {
    return "dates and times have no JSON form; write them as strings";
  }
  return std::nullopt;
}

}  // namespace

Section::Section(std::shared_ptr<const void> doc, const void* table, std::string file, std::string prefix)
    : doc_(std::move(doc)),
      table_(table),
      file_(std::move(file)),
      prefix_(std::move(prefix)),
      used_(std::make_shared<std::vector<std::string>>()) {}

const void* Section::node(std::string_view key) const {
  if (!only_.empty() && key != only_) return nullptr;
  return tbl(table_).get(key);
}

void Section::mark(std::string_view key) {
  if (std::find(used_->begin(), used_->end(), key) == used_->end()) used_->emplace_back(key);
}

Kind Section::kind(std::string_view key) const {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return Kind::none;
  switch (n->type()) {
    case toml::node_type::string:
      return Kind::string;
    case toml::node_type::integer:
      return Kind::integer;
    case toml::node_type::floating_point:
      return Kind::floating;
    case toml::node_type::boolean:
      return Kind::boolean;
    case toml::node_type::array:
      return Kind::array;
    case toml::node_type::table:
      return Kind::table;
    default:
      return Kind::other;
  }
}

std::string Section::dotted(std::string_view key) const {
  if (key.empty()) return prefix_;
  return prefix_ + (prefix_.empty() ? "" : ".") + std::string(key);
}

std::string Section::where(std::string_view key) const {
  std::string name = "`" + dotted(key) + "`";
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n || !n->source().begin.line) return name;
  return name + " (line " + std::to_string(n->source().begin.line) + ")";
}

void Section::fail(std::string_view key, std::string_view message) const {
  std::string where = "config `" + file_ + "`: ";
  if (key.empty())
    where += line_of(tbl(table_));
  else if (auto* n = static_cast<const toml::node*>(node(key)))
    where += line_of(*n);
  throw Error(where + "`" + dotted(key) + "`: " + std::string(message));
}

std::optional<std::string> Section::string(std::string_view key) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  auto v = n->value<std::string>();
  if (!n->is_string() || !v) fail(key, "must be a string");
  return *v;
}

std::optional<bool> Section::boolean(std::string_view key) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  if (!n->is_boolean()) fail(key, "must be true or false");
  return *n->value<bool>();
}

std::optional<std::int64_t> Section::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  if (!n->is_integer()) fail(key, "must be an integer");
  auto v = *n->value<std::int64_t>();
  if (v < min || v > max) fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return v;
}

std::optional<std::vector<std::string>> Section::strings(std::string_view key) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  auto* arr = n->as_array();
  if (!arr) fail(key, "must be an array of strings");
  std::vector<std::string> out;
  for (auto& e : *arr) {
    if (!e.is_string()) fail(key, "must be an array of strings");
    out.push_back(*e.value<std::string>());
  }
  return out;
}

std::optional<std::vector<std::int64_t>> Section::integers(std::string_view key, std::int64_t min, std::int64_t max) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  auto* arr = n->as_array();
  if (!arr) fail(key, "must be an array of integers");
  std::vector<std::int64_t> out;
  for (auto& e : *arr) {
    if (!e.is_integer()) fail(key, "must be an array of integers");
    auto v = *e.value<std::int64_t>();
    if (v < min || v > max) fail(key, "values must be between " + std::to_string(min) + " and " + std::to_string(max));
    out.push_back(v);
  }
  return out;
}

std::optional<Section> Section::table(std::string_view key) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  if (!n->is_table()) fail(key, "must be a table");
  return Section(doc_, n->as_table(), file_, prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key));
}

std::optional<nlohmann::ordered_json> Section::json(std::string_view key) {
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return std::nullopt;
  mark(key);
  nlohmann::ordered_json out;
  if (auto why = to_json(*n, out)) fail(key, *why);
  return out;
}

Section Section::section(std::string_view key) {
  if (auto t = table(key)) return *t;
  static const toml::table empty;
  return Section(doc_, &empty, file_, prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key));
}

Section Section::only(std::string_view key) {
  if (node(key)) mark(key);
  Section view(doc_, table_, file_, prefix_);
  view.only_ = key;
  return view;
}

bool Section::lists(std::string_view key, std::string_view noun) {
  if (kind(key) == Kind::array) return true;
  if (!keys().empty()) fail("", "write each " + std::string(noun) + " as an array table, [[" + std::string(key) + "]]");
  return false;
}

std::vector<Section> Section::tables(std::string_view key) {
  std::vector<Section> out;
  auto* n = static_cast<const toml::node*>(node(key));
  if (!n) return out;
  mark(key);
  auto* arr = n->as_array();
  if (!arr) fail(key, "must be an array of tables ([[" + std::string(key) + "]])");
  std::string base = prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
  for (std::size_t i = 0; i < arr->size(); ++i) {
    auto* t = (*arr)[i].as_table();
    if (!t) fail(key, "must be an array of tables ([[" + std::string(key) + "]])");
    out.push_back(Section(doc_, t, file_, base + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<std::string> Section::keys() const {
  std::vector<std::pair<std::uint32_t, std::string>> ordered;
  for (auto&& [k, v] : tbl(table_))
    if (only_.empty() || k.str() == only_) ordered.emplace_back(v.source().begin.line, std::string(k.str()));
  std::stable_sort(ordered.begin(), ordered.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [line, k] : ordered) out.push_back(k);
  return out;
}

void Section::finish() const {
  for (auto&& [k, v] : tbl(table_)) {
    std::string key(k.str());
    if (!only_.empty() && key != only_) continue;
    if (std::find(used_->begin(), used_->end(), key) == used_->end()) {
      std::string name = prefix_.empty() ? key : prefix_ + "." + key;
      throw Error("config `" + file_ + "`: " + line_of(v) + "unknown key `" + name + "`");
    }
  }
}

Document Document::parse(std::string_view text, std::string file_name) {
  Document d;
  d.file_ = std::move(file_name);
  d.exists_ = true;
  auto pre = detail::prescan_toml(text);
  if (pre.bare_non_ascii_line)
    throw Error("config `" + d.file_ + "`: line " + std::to_string(pre.bare_non_ascii_line) +
                ": non-ASCII character outside a string or comment");
  std::shared_ptr<toml::table> table;
  try {
    table = std::make_shared<toml::table>(toml::parse(pre.text, d.file_));
  } catch (const toml::parse_error&) {
    try {  // the whole file, so the error is the one toml++ finds there
      table = std::make_shared<toml::table>(toml::parse(text, d.file_));
    } catch (const toml::parse_error& e) {
      std::ostringstream msg;
      msg << "config `" << d.file_ << "`: line " << e.source().begin.line << ": " << e.description();
      throw Error(msg.str());
    }
  }
  d.table_ = std::static_pointer_cast<const void>(std::shared_ptr<const toml::table>(std::move(table)));
  return d;
}

Document Document::load(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    Document d;
    d.file_ = file.string();
    d.table_ = std::make_shared<const toml::table>();
    return d;
  }
  return parse(fs::read_regular_file(file, kMaxConfigBytes), file.string());
}

Section Document::root() const {
  return Section(table_, table_.get(), file_, "");
}

bool plain_name(std::string_view s) {
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  };
  return !s.empty() && std::isalnum(static_cast<unsigned char>(s.front())) &&
         std::all_of(s.begin(), s.end(), name_char);
}

std::filesystem::path path_from_env() {
  const char* env = std::getenv("SPECSHIM_CONFIG");
  return env && *env ? std::filesystem::path(env) : std::filesystem::path(kDefaultPath);
}

}  // namespace specshim::config
