// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/spec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "json_reader.h"
#include "specshim/base/error.h"
#include "specshim/base/text.h"

namespace specshim {

// SpecWriter writes the DOM in the style it was read in. Output goes to a
// buffer it grows itself (cap_ bytes, n_ of them written), so each token is a
// store, not a std::string append. The buffer is not zeroed and a new one
// copies only what is written: its pages are touched once, as they are
// written (a std::string resized to double filled 60 KiB of zeroes for a
// 17 KiB spec: 15 page faults of a create's 90).
class SpecWriter {
 public:
  explicit SpecWriter(const Spec& s) : s_(s) {}

  std::string write() {
    value(s_.doc_, 0);
    if (s_.trailing_newline_) put('\n');
    return std::string(out_.get(), n_);
  }

 private:
  char* room(std::size_t more) {
    if (cap_ - n_ < more) {
      std::size_t cap = std::max(cap_ == 0 ? std::size_t{16384} : cap_ * 2, n_ + more);
      std::unique_ptr<char[]> bigger(new char[cap]);
      if (n_) std::memcpy(bigger.get(), out_.get(), n_);
      out_ = std::move(bigger);
      cap_ = cap;
    }
    return out_.get() + n_;
  }
  void put(char c) {
    *room(1) = c;
    ++n_;
  }
  void put(std::string_view s) {
    std::memcpy(room(s.size()), s.data(), s.size());
    n_ += s.size();
  }
  void newline(int depth) {
    if (s_.indent_ < 0) return;
    auto n = static_cast<std::size_t>(depth * s_.indent_);
    char* p = room(n + 1);
    *p = '\n';
    std::memset(p + 1, s_.indent_char_, n);
    n_ += n + 1;
  }
  void value(const Json& j, int depth) {
    switch (j.type()) {
      case Json::value_t::object: {
        const auto& members = j.get_ref<const Json::object_t&>();
        if (members.empty()) {
          put("{}");
          return;
        }
        put('{');
        bool first = true;
        for (const auto& [key, member] : members) {
          if (!first) put(',');
          first = false;
          newline(depth + 1);
          string(key);
          put(s_.indent_ < 0 ? ":" : ": ");
          std::size_t mark = path_.size();
          if (track_) (path_ += '/') += detail::pointer_token(key);
          value(member, depth + 1);
          path_.resize(mark);
        }
        newline(depth);
        put('}');
        return;
      }
      case Json::value_t::array: {
        const auto& items = j.get_ref<const Json::array_t&>();
        if (items.empty()) {
          put("[]");
          return;
        }
        put('[');
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) put(',');
          newline(depth + 1);
          std::size_t mark = path_.size();
          if (track_) (path_ += '/') += std::to_string(i);
          value(items[i], depth + 1);
          path_.resize(mark);
        }
        newline(depth);
        put(']');
        return;
      }
      case Json::value_t::string:
        string(j.get_ref<const std::string&>());
        return;
      case Json::value_t::boolean:
        put(j.get<bool>() ? "true" : "false");
        return;
      case Json::value_t::null:
        put("null");
        return;
      case Json::value_t::number_integer:
        number(j.get<std::int64_t>());
        return;
      case Json::value_t::number_unsigned:
        number(j.get<std::uint64_t>());
        return;
      case Json::value_t::number_float:
        if (track_) {
          auto raw = s_.raw_numbers_.find(path_);
          if (raw != s_.raw_numbers_.end() && Json::parse(raw->second) == j) {
            put(raw->second);
            return;
          }
        }
        put(j.dump());
        return;
      default:
        try {
          put(j.dump());
        } catch (const nlohmann::json::exception& e) {
          throw Error(std::string("serialize spec: ") + e.what());
        }
        return;
    }
  }

  // string writes s as nlohmann's dump() does (ensure_ascii off): '"', '\\'
  // and control characters escaped, \u00xx in lower case. A string with a
  // byte past ASCII goes through dump(), which also refuses invalid UTF-8.
  // Runs of plain bytes are copied whole: nearly every string is one run.
  void string(std::string_view s) {
    std::size_t mark = n_;
    put('"');
    for (std::size_t i = 0;;) {
      std::size_t run = json_plain_run(s.substr(i));
      put(s.substr(i, run));
      i += run;
      if (i == s.size()) break;
      auto c = static_cast<unsigned char>(s[i++]);
      if (c >= 0x80) {
        n_ = mark;
        put(Json(std::string(s)).dump());
        return;
      }
      escape(c);
    }
    put('"');
  }
  void escape(unsigned char c) {
    switch (c) {
      case '"':
        return put("\\\"");
      case '\\':
        return put("\\\\");
      case '\b':
        return put("\\b");
      case '\t':
        return put("\\t");
      case '\n':
        return put("\\n");
      case '\f':
        return put("\\f");
      case '\r':
        return put("\\r");
      default: {
        static constexpr char hex[] = "0123456789abcdef";
        const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
        put(std::string_view(u, sizeof u));
      }
    }
  }
  template <typename Int>
  void number(Int v) {
    char* p = room(24);
    n_ = static_cast<std::size_t>(std::to_chars(p, p + 24, v).ptr - out_.get());
  }

  const Spec& s_;
  std::unique_ptr<char[]> out_;
  std::size_t cap_ = 0;
  std::size_t n_ = 0;
  std::string path_;
  bool track_ = !s_.raw_numbers_.empty();
};

Spec Spec::parse(std::string_view text) {
  Spec s;
  detail::read_json(text, s.doc_, s.raw_numbers_);
  if (!s.doc_.is_object()) throw Error("spec is not a JSON object");

  // Style: the whitespace before the first member tells the indentation.
  auto open = text.find('{');
  if (open != std::string_view::npos && open + 1 < text.size() && text[open + 1] == '\n') {
    std::size_t i = open + 2, n = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      s.indent_char_ = text[i];
      ++i, ++n;
    }
    s.indent_ = n > 0 ? static_cast<int>(n) : 0;
  }
  auto last = text.find_last_not_of(" \t\r");
  s.trailing_newline_ = last != std::string_view::npos && text[last] == '\n';
  return s;
}

std::string Spec::serialize() const {
  try {
    return SpecWriter(*this).write();
  } catch (const Json::exception& e) {
    // A string that is not UTF-8 got into the document (a modifier's input
    // let it through): refuse to write rather than write invalid JSON.
    throw Error(std::string("serialize the spec: ") + e.what());
  }
}

std::optional<std::string> Spec::env(std::string_view key, bool (*counts)(std::string_view value)) const {
  const Json* env = find({"process", "env"});
  if (!env || !env->is_array()) return std::nullopt;
  std::string prefix = std::string(key) + "=";
  for (auto it = env->rbegin(); it != env->rend(); ++it) {
    if (!it->is_string() || it->get_ref<const std::string&>().rfind(prefix, 0) != 0) continue;
    std::string_view value = std::string_view(it->get_ref<const std::string&>()).substr(prefix.size());
    if (!counts || counts(value)) return std::string(value);
  }
  return std::nullopt;
}

std::optional<std::string> Spec::annotation(std::string_view key) const {
  const Json* a = find({"annotations"});
  if (!a || !a->is_object()) return std::nullopt;
  auto it = a->find(key);
  if (it == a->end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

namespace {
std::string join_path(std::initializer_list<std::string_view> path) {
  std::string p;
  for (auto k : path) {
    if (!p.empty()) p += '.';
    p += k;
  }
  return p;
}

Json& walk_create(Json& doc, std::initializer_list<std::string_view> path, Json::value_t leaf) {
  Json* cur = &doc;
  std::size_t i = 0;
  for (auto k : path) {
    bool last = ++i == path.size();
    Json::value_t want = last ? leaf : Json::value_t::object;
    auto it = cur->find(k);
    if (it == cur->end() || it->is_null()) {
      cur = &((*cur)[std::string(k)] = Json(want));
    } else {
      cur = &*it;
      if (cur->type() != want)
        throw Error("spec field `" + join_path(path) + "` has an unexpected JSON type " + cur->type_name());
    }
  }
  return *cur;
}
}  // namespace

Json& Spec::object_at(std::initializer_list<std::string_view> path) {
  touch();
  return walk_create(doc_, path, Json::value_t::object);
}

Json& Spec::array_at(std::initializer_list<std::string_view> path) {
  touch();
  return walk_create(doc_, path, Json::value_t::array);
}

const Json* Spec::find(std::initializer_list<std::string_view> path) const {
  const Json* cur = &doc_;
  for (auto k : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

}  // namespace specshim
