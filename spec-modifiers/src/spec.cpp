// SPDX-License-Identifier: Apache-2.0
#include "specshim/spec.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <string>

#include "json_reader.h"
#include "specshim/error.h"

namespace specshim {

class SpecWriter {
 public:
  explicit SpecWriter(const Spec& s) : s_(s) {}

  std::string write() {
    out_.reserve(4096);
    value(s_.doc_, 0);
    if (s_.trailing_newline_) out_ += '\n';
    return std::move(out_);
  }

 private:
  void newline(int depth) {
    if (s_.indent_ < 0) return;
    out_ += '\n';
    out_.append(static_cast<std::size_t>(depth * s_.indent_), s_.indent_char_);
  }
  void value(const Json& j, int depth) {
    switch (j.type()) {
      case Json::value_t::object: {
        if (j.empty()) {
          out_ += "{}";
          return;
        }
        out_ += '{';
        bool first = true;
        for (auto it = j.begin(); it != j.end(); ++it) {
          if (!first) out_ += ',';
          first = false;
          newline(depth + 1);
          string(it.key());
          out_ += s_.indent_ < 0 ? ":" : ": ";
          std::size_t mark = path_.size();
          if (track_) (path_ += '/') += detail::pointer_token(it.key());
          value(it.value(), depth + 1);
          path_.resize(mark);
        }
        newline(depth);
        out_ += '}';
        return;
      }
      case Json::value_t::array: {
        if (j.empty()) {
          out_ += "[]";
          return;
        }
        out_ += '[';
        for (std::size_t i = 0; i < j.size(); ++i) {
          if (i) out_ += ',';
          newline(depth + 1);
          std::size_t mark = path_.size();
          if (track_) (path_ += '/') += std::to_string(i);
          value(j[i], depth + 1);
          path_.resize(mark);
        }
        newline(depth);
        out_ += ']';
        return;
      }
      case Json::value_t::string:
        string(j.get_ref<const std::string&>());
        return;
      case Json::value_t::boolean:
        out_ += j.get<bool>() ? "true" : "false";
        return;
      case Json::value_t::null:
        out_ += "null";
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
            out_ += raw->second;
            return;
          }
        }
        out_ += j.dump();
        return;
      default:
        try {
          out_ += j.dump();
        } catch (const nlohmann::json::exception& e) {
          throw Error(std::string("serialize spec: ") + e.what());
        }
        return;
    }
  }

  // string writes s as nlohmann's dump() does (ensure_ascii off): '"', '\\'
  // and control characters escaped, \u00xx in lower case. A string with a
  // byte past ASCII goes through dump(), which also refuses invalid UTF-8.
  // Building a serializer per value cost ~100 instructions per output byte;
  // this is one pass and a table lookup per byte.
  void string(const std::string& s) {
    static constexpr auto plain = [] {
      std::array<bool, 256> t{};
      for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
      return t;
    }();
    std::size_t mark = out_.size();
    out_ += '"';
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      if (plain[c]) continue;
      if (c >= 0x80) {
        out_.resize(mark);
        out_ += Json(s).dump();
        return;
      }
      out_.append(s, run, i - run);
      run = i + 1;
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\b':
          out_ += "\\b";
          break;
        case '\t':
          out_ += "\\t";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\f':
          out_ += "\\f";
          break;
        case '\r':
          out_ += "\\r";
          break;
        default: {
          static constexpr char hex[] = "0123456789abcdef";
          out_ += "\\u00";
          out_ += hex[c >> 4];
          out_ += hex[c & 0xF];
        }
      }
    }
    out_.append(s, run, std::string::npos);
    out_ += '"';
  }
  template <typename Int>
  void number(Int v) {
    char buf[24];
    out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  }

  const Spec& s_;
  std::string out_;
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
