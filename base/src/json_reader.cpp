// SPDX-License-Identifier: Apache-2.0
// A JSON reader for config.json. nlohmann's lexer copies every byte into a
// token buffer and its SAX parser calls back per token; for CRI's 3.4 KiB spec
// that was 410 K instructions of a 728 K create that changed nothing. This one
// scans strings in place, builds each object and array at its final size, and
// is held to nlohmann's results by the unit tests and the spec fuzzer.
#include "json_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/base/text.h"

namespace specshim::detail {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Reader {
  static constexpr std::size_t kObjectRoom = 4;

 public:
  Reader(std::string_view text, std::map<std::string, std::string>& raw)
      : begin_(text.data()), p_(begin_), end_(begin_ + text.size()), raw_(raw) {}

  Json read() {
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;
    skip_space();
    for (;;) {
      Json v;
      if (!value(v)) continue;  // a container opened: read its first value
      // v is whole: put it in its container, then read what follows it.
      for (;;) {
        if (frames_.empty()) {
          skip_space();
          if (p_ != end_) fail("expected the end of the document");
          return v;
        }
        values_.push_back(std::move(v));
        skip_space();
        const bool object = frames_.back().object;
        const char* expected = object ? "expected `,` or `}`" : "expected `,` or `]`";
        if (p_ == end_) fail(expected);
        if (*p_ == ',') {
          ++p_;
          skip_space();
          if (object) member_name();
          break;
        }
        if (*p_ != (object ? '}' : ']')) fail(expected);
        ++p_;
        v = object ? close_object() : close_array();
      }
    }
  }

 private:
  struct Frame {
    bool object;
    std::size_t values;  // index of its first value in values_
    std::size_t keys;    // index of its first key in keys_
  };

  // value reads the value at p_ into v and returns true, or opens an object
  // or array and returns false (an empty one is read whole).
  bool value(Json& v) {
    if (p_ == end_) fail("expected a value");
    switch (*p_) {
      case '{':
      case '[': {
        const bool object = *p_ == '{';
        if (frames_.size() >= kMaxJsonDepth) fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == (object ? '}' : ']')) {
          ++p_;
          v = Json(object ? Json::value_t::object : Json::value_t::array);
          return true;
        }
        frames_.push_back({object, values_.size(), keys_.size()});
        if (object) member_name();
        return false;
      }
      case '"':
        v = string();
        return true;
      case 't':
        literal("true");
        v = true;
        return true;
      case 'f':
        literal("false");
        v = false;
        return true;
      case 'n':
        literal("null");
        v = nullptr;
        return true;
      default:
        if (*p_ == '-' || is_digit(*p_)) {
          v = number();
          return true;
        }
        fail("expected a value");
    }
  }

  void member_name() {
    if (p_ == end_ || *p_ != '"') fail("expected a member name in double quotes");
    keys_.push_back(string());
    skip_space();
    if (p_ == end_ || *p_ != ':') fail("expected `:` after the member name");
    ++p_;
    skip_space();
  }

  Json close_object() {
    Frame f = frames_.back();
    frames_.pop_back();
    const std::size_t n = values_.size() - f.values;
    auto key = [&](std::size_t i) -> const std::string& { return keys_[f.keys + i]; };
    auto val = [&](std::size_t i) -> Json& { return values_[f.values + i]; };

    // A repeated key keeps its first place and takes the last value (as Go
    // and nlohmann): find repeats, move each last value to the first place.
    // The first equal key found is never itself a repeat, so it is the first place.
    std::vector<bool> dropped;
    std::size_t kept = n;
    auto repeat = [&](std::size_t first, std::size_t later) {
      if (dropped.empty()) dropped.resize(n);
      val(first) = std::move(val(later));
      dropped[later] = true;
      --kept;
    };
    if (n <= 16) {
      for (std::size_t i = 1; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (key(j) == key(i)) {
            repeat(j, i);
            break;
          }
    } else {
      // Sorted stably by key, each run of equal keys is in document order.
      std::vector<std::size_t> order(n);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
      for (std::size_t run = 0, i = 1; i < n; ++i) {
        if (key(order[i]) != key(order[run]))
          run = i;
        else
          repeat(order[run], order[i]);
      }
    }

    // Room for a few more members: ordered_map's elements are copied, not
    // moved, when its vector grows (their keys are const, so the pair's move
    // may throw), and a copy is deep. A modifier adding a member to a full
    // object would copy every sibling's whole subtree.
    Json v(Json::value_t::object);
    auto& members = v.get_ref<Json::object_t&>();
    members.reserve(kept + kObjectRoom);
    for (std::size_t i = 0; i < n; ++i)
      if (dropped.empty() || !dropped[i]) members.emplace_back(std::move(keys_[f.keys + i]), std::move(val(i)));
    keys_.erase(keys_.begin() + static_cast<std::ptrdiff_t>(f.keys), keys_.end());
    values_.erase(values_.begin() + static_cast<std::ptrdiff_t>(f.values), values_.end());
    return v;
  }

  Json close_array() {
    Frame f = frames_.back();
    frames_.pop_back();
    auto first = values_.begin() + static_cast<std::ptrdiff_t>(f.values);
    Json v(Json::value_t::array);
    auto& items = v.get_ref<Json::array_t&>();
    items.reserve(static_cast<std::size_t>(values_.end() - first));
    items.insert(items.end(), std::make_move_iterator(first), std::make_move_iterator(values_.end()));
    values_.erase(first, values_.end());
    return v;
  }

  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  void literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) {
      // Point at the first byte that differs.
      std::size_t i = 0;
      while (p_ + i != end_ && i < word.size() && p_[i] == word[i]) ++i;
      p_ += i;
      fail("expected `" + std::string(word) + "`");
    }
    p_ += word.size();
  }

  std::string string() {
    ++p_;  // the opening quote
    const char* start = p_;
    skip_plain();
    if (p_ != end_ && *p_ == '"') return std::string(start, p_++);
    std::string out(start, p_);
    for (;;) {
      if (p_ == end_) fail("expected `\"` to end the string");
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return out;
      }
      if (c == '\\')
        escape(out);
      else if (c < 0x20)
        fail("a control character must be escaped in a string");
      else
        utf8(out);
      const char* run = p_;
      skip_plain();
      out.append(run, p_);
    }
  }

  // skip_plain steps over the bytes a string holds as they are.
  void skip_plain() { p_ += json_plain_run(std::string_view(p_, static_cast<std::size_t>(end_ - p_))); }

  void escape(std::string& out) {
    ++p_;
    if (p_ == end_) fail("expected an escape after `\\`");
    char c = *p_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        std::uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a low surrogate \\uDC00..\\uDFFF must follow a high one");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end_ - p_ < 3 || p_[1] != '\\' || p_[2] != 'u')
            fail("a high surrogate \\uD800..\\uDBFF must be followed by a low one");
          p_ += 2;
          std::uint32_t low = hex4();
          if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate \\uD800..\\uDBFF must be followed by a low one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
        break;
      }
      default:
        fail("invalid escape in a string");
    }
    ++p_;
  }

  // hex4 reads the four hex digits after p_ (which is at the `u`) and leaves
  // p_ on the last of them.
  std::uint32_t hex4() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      ++p_;
      int h = p_ == end_ ? -1 : hex_value(*p_);
      if (h < 0) fail("expected four hex digits after `\\u`");
      v = v << 4 | static_cast<std::uint32_t>(h);
    }
    return v;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | cp >> 6);
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | cp >> 12);
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | cp >> 18);
      out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // utf8 copies one well-formed UTF-8 sequence (RFC 3629: no overlong forms,
  // surrogates or code points past U+10FFFF), or fails at its first bad byte.
  void utf8(std::string& out) {
    auto lead = static_cast<unsigned char>(*p_);
    int more;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      more = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      more = 2;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      more = 3;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      fail("invalid UTF-8 in a string");
    }
    const char* start = p_++;
    for (int i = 0; i < more; ++i, ++p_) {
      auto c = p_ == end_ ? 0 : static_cast<unsigned char>(*p_);
      if (c < (i == 0 ? lo : 0x80) || c > (i == 0 ? hi : 0xBF)) {
        // Point at the sequence, naming its bytes up to the bad one.
        std::string bytes = "bytes";
        for (const char* q = start; q != p_ + (p_ != end_); ++q) bytes += " " + byte_name(*q);
        p_ = start;
        fail("invalid UTF-8 in a string", bytes);
      }
    }
    out.append(start, p_);
  }

  Json number() {
    const char* start = p_;
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || !is_digit(*p_)) fail("expected a digit");
    if (*p_ == '0')
      ++p_;
    else
      while (p_ != end_ && is_digit(*p_)) ++p_;
    bool integral = true;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !is_digit(*p_)) fail("expected a digit after `.`");
      while (p_ != end_ && is_digit(*p_)) ++p_;
      integral = false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !is_digit(*p_)) fail("expected a digit in the exponent");
      while (p_ != end_ && is_digit(*p_)) ++p_;
      integral = false;
    }
    if (integral) {
      // Too large for 64 bits: a double, as nlohmann.
      if (negative) {
        std::int64_t v;
        if (std::from_chars(start, p_, v).ec == std::errc()) return Json(v);
      } else {
        std::uint64_t v;
        if (std::from_chars(start, p_, v).ec == std::errc()) return Json(v);
      }
    }
    // strtod, as nlohmann, so both round alike; no locale is ever set.
    std::string text(start, p_);
    double d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(d)) {
      p_ = start;
      fail("number out of range of a double");
    }
    Json j(d);
    if (j.dump() != text) raw_[pointer()] = std::move(text);
    return j;
  }

  // pointer is the JSON pointer of the value being read.
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const bool last = i + 1 == frames_.size();
      p += '/';
      if (frames_[i].object)
        p += pointer_token(keys_[(last ? keys_.size() : frames_[i + 1].keys) - 1]);
      else
        p += std::to_string((last ? values_.size() : frames_[i + 1].values) - frames_[i].values);
    }
    return p;
  }

  static std::string byte_name(char b) {
    static constexpr char hex[] = "0123456789ABCDEF";
    auto c = static_cast<unsigned char>(b);
    return std::string("0x") + hex[c >> 4] + hex[c & 0xF];
  }

  // fail throws what went wrong at p_, and what is there (found, or the byte).
  [[noreturn]] void fail(const std::string& what, std::string found = {}) const {
    std::size_t line = 1;
    const char* line_start = begin_;
    for (const char* q = begin_; q != p_; ++q)
      if (*q == '\n') ++line, line_start = q + 1;
    if (!found.empty()) {
    } else if (p_ == end_) {
      found = "the end of the document";
    } else if (*p_ >= 0x21 && *p_ < 0x7F) {
      found = std::string("`") + *p_ + "`";
    } else {
      found = "byte " + byte_name(*p_);
    }
    throw Error("line " + std::to_string(line) + ", column " + std::to_string(p_ - line_start + 1) + ": " + what +
                ", found " + found);
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::map<std::string, std::string>& raw_;
  std::vector<Frame> frames_;
  std::vector<Json> values_;
  std::vector<std::string> keys_;
};

}  // namespace

void read_json(std::string_view text, Json& root, std::map<std::string, std::string>& raw) {
  root = Reader(text, raw).read();
}

}  // namespace specshim::detail
