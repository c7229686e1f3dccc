// SPDX-License-Identifier: Apache-2.0
// The strict streaming JSON reader the checkpoint parser (checkpoint.cpp)
// runs over kubelet_internal_checkpoint: it checks the whole document and
// hands out views of the strings the parser keeps, copying none.
#pragma once

#include <cmath>
#include <cstdlib>
#include <deque>
#include <string>
#include <string_view>

#include "specshim/base/text.h"

namespace specshim::kubelet::checkpoint_json {

// SyntaxError is invalid JSON at a byte offset; range is a number no double holds.
struct SyntaxError {
  std::size_t byte;
  bool range = false;
};

// Reader reads RFC 8259 JSON strictly: UTF-8 checked, escapes decoded (lone
// surrogates refused), numbers by the grammar and finite as doubles, only
// whitespace after the value. Nesting is bounded (kMaxDepth).
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  // The checkpoint has one entry per (pod, container, resource) of the
  // node, each with a base64 AllocResp, and a create uses one or two: the
  // document is read as a stream, keeping only the strings it wants (a
  // general JSON DOM cost ~150 instructions a byte, most of them malloc).

  // next is the first byte of the next value: '{', '[', '"', 'n' (null), or
  // another for booleans and numbers (skip them).
  char next() {
    space();
    return peek();
  }
  // object reads {...}, calling member(key) for each member; member reads
  // the value. array reads [...], calling item() for each element.
  template <typename F>
  void object(F&& member) {
    enter();
    expect('{');
    if (next() == '}') {
      ++i_;
      return leave();
    }
    for (;;) {
      space();
      if (peek() != '"') bad();
      std::string_view key = text(key_);
      space();
      expect(':');
      member(key);
      if (next() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return leave();
    }
  }
  template <typename F>
  void array(F&& item) {
    enter();
    expect('[');
    if (next() == ']') {
      ++i_;
      return leave();
    }
    for (;;) {
      item();
      if (next() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return leave();
    }
  }
  // view reads a string value: a view into the document, or for a string
  // with escapes into its decoded copy, kept in store.
  std::string_view view(std::deque<std::string>& store) {
    space();
    std::string scratch;
    std::string_view v = text(scratch);
    if (v.data() != scratch.data()) return v;
    return store.emplace_back(std::move(scratch));
  }
  void null() { word("null"); }
  // skip reads any value, checking it, and keeps nothing.
  void skip() {
    switch (next()) {
      case '{':
        object([&](std::string_view) { skip(); });
        return;
      case '[':
        array([&] { skip(); });
        return;
      case '"':
        string();
        return;
      case 't':
        word("true");
        return;
      case 'f':
        word("false");
        return;
      case 'n':
        word("null");
        return;
      default:
        number();
    }
  }
  // end checks that only whitespace follows the document.
  void end() {
    space();
    if (i_ != s_.size()) bad();
  }

 private:
  static constexpr int kMaxDepth = 512;

  void enter() {
    if (++depth_ > kMaxDepth) bad();
  }
  void leave() { --depth_; }
  [[noreturn]] void bad() const { throw SyntaxError{i_}; }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    if (peek() != c) bad();
    ++i_;
  }
  void word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) bad();
    i_ += w.size();
  }

  void number() {
    std::size_t start = i_;
    auto digits = [&] {
      std::size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - from;
    };
    if (peek() == '-') ++i_;
    if (peek() == '0')
      ++i_;
    else if (digits() == 0)
      bad();
    bool integer = true;
    if (peek() == '.') {
      ++i_;
      integer = false;
      if (digits() == 0) bad();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      integer = false;
      if (peek() == '+' || peek() == '-') ++i_;
      if (digits() == 0) bad();
    }
    // A number no int64/uint64 holds is read as a double; one no double
    // holds is refused (encoding/json refuses it too).
    if (!integer || i_ - start > 19) {
      std::string text(s_.substr(start, i_ - start));
      if (std::isinf(std::strtod(text.c_str(), nullptr))) throw SyntaxError{start, true};
    }
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) bad();
    unsigned u = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      u <<= 4;
      if (c >= '0' && c <= '9')
        u |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        u |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        u |= static_cast<unsigned>(c - 'A' + 10);
      else
        bad();
    }
    return u;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // utf8 checks one multi-byte sequence at i_ (RFC 3629: no overlong forms,
  // no surrogates, nothing above U+10FFFF) and steps over it.
  void utf8() {
    auto b = [&](std::size_t k) { return i_ + k < s_.size() ? static_cast<unsigned char>(s_[i_ + k]) : 0u; };
    auto cont = [](unsigned c) { return (c & 0xC0) == 0x80; };
    unsigned c0 = b(0), c1 = b(1);
    std::size_t n = 0;
    if (c0 >= 0xC2 && c0 <= 0xDF)
      n = 2;
    else if (c0 >= 0xE0 && c0 <= 0xEF)
      n = 3;
    else if (c0 >= 0xF0 && c0 <= 0xF4)
      n = 4;
    else
      bad();
    for (std::size_t k = 1; k < n; ++k)
      if (!cont(b(k))) bad();
    if ((c0 == 0xE0 && c1 < 0xA0) || (c0 == 0xED && c1 > 0x9F) || (c0 == 0xF0 && c1 < 0x90) ||
        (c0 == 0xF4 && c1 > 0x8F))
      bad();
    i_ += n;
  }

  // plain_run is the offset where the plain bytes from `from` on end: the
  // base64 AllocResp strings are most of a checkpoint's bytes.
  std::size_t plain_run(std::size_t from) const { return from + json_plain_run(s_.substr(from)); }

  // text reads a string: a view into the document when it is plain ASCII
  // without escapes (every string Go writes for a checkpoint), else decoded
  // into scratch.
  std::string_view text(std::string& scratch) {
    std::size_t start = i_ + 1;
    std::size_t end = plain_run(start);
    if (peek() == '"' && end < s_.size() && s_[end] == '"') {
      i_ = end + 1;
      return s_.substr(start, end - start);
    }
    scratch = string();
    return scratch;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      std::size_t run = i_;  // a run of plain ASCII is copied at once
      i_ = plain_run(i_);
      out.append(s_.substr(run, i_ - run));
      if (i_ >= s_.size()) bad();
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) bad();
      if (c >= 0x80) {
        std::size_t from = i_;
        utf8();
        out.append(s_.substr(from, i_ - from));
        continue;
      }
      ++i_;  // a backslash
      char e = peek();
      ++i_;
      static constexpr std::string_view kEscaped = "\"\\/bfnrt", kMeant = "\"\\/\b\f\n\r\t";
      if (auto k = kEscaped.find(e); e != '\0' && k != std::string_view::npos) {
        out += kMeant[k];
        continue;
      }
      switch (e) {
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) bad();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (peek() != '\\') bad();
            ++i_;
            if (peek() != 'u') bad();
            ++i_;
            unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) bad();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default:
          --i_;
          bad();
      }
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;
  std::string key_;  // an escaped key, decoded (valid until the next key)
};

}  // namespace specshim::kubelet::checkpoint_json
