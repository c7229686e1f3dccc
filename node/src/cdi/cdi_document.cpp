// SPDX-License-Identifier: Apache-2.0
// Reading a spec file's bytes into a Node tree. JSON goes through nlohmann's
// SAX parser (iterative, so deep nesting cannot overflow the stack); YAML
// through libyaml's event parser, which keeps its own stacks (no recursion).
#include "cdi_document.h"

#include <yaml.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "specshim/base/error.h"
#include "specshim/node/cdi.h"

namespace specshim::cdi {
namespace {

[[noreturn]] void fail_at(int line, const std::string& what) {
  throw Error("line " + std::to_string(line) + ": " + what);
}

// TreeBuilder assembles Nodes from start/end/value events; both readers feed
// it. It owns the limits (depth, node count) and duplicate-key detection.
class TreeBuilder {
 public:
  // begin adds a collection and makes it the current container.
  void begin(Node n) {
    if (static_cast<int>(stack_.size()) >= kMaxDepth)
      fail_at(n.line, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    Node* added = place(std::move(n));
    stack_.push_back(Open{added, {}});
  }
  Node* end() {
    Node* done = stack_.back().node;
    stack_.pop_back();
    return done;
  }
  void value(Node n) { place(std::move(n)); }
  // key sets the key for the next value of the current mapping. A repeat is
  // found by scanning a small mapping's keys and, from kScan keys on, through
  // a hash index of them: a mapping of n keys costs O(n), not O(n²) (60,000
  // keys took 3.5 s to scan key by key).
  void key(std::string k, int line) {
    Open& top = stack_.back();
    const std::vector<std::string>& keys = top.node->keys;
    std::size_t earlier = keys.size();
    if (keys.size() < kScan) {
      earlier = static_cast<std::size_t>(std::find(keys.begin(), keys.end(), k) - keys.begin());
    } else {
      if (top.index.empty())
        for (std::size_t i = 0; i < keys.size(); ++i) top.index.emplace(keys[i], i);
      auto [it, fresh] = top.index.emplace(k, keys.size());  // where place() puts it
      if (!fresh) earlier = it->second;
    }
    if (earlier != keys.size())
      fail_at(line, "key " + quote(k) + " already set on line " + std::to_string(top.node->key_lines[earlier]));
    pending_key_ = std::move(k);
    pending_line_ = line;
    has_key_ = true;
  }
  bool expecting_key() const { return !stack_.empty() && stack_.back().node->type == Node::Type::mapping && !has_key_; }
  void count(std::size_t n, int line) {
    nodes_ += n;
    if (nodes_ > kMaxNodes) fail_at(line, "more than " + std::to_string(kMaxNodes) + " values");
  }
  Node take_root() { return std::move(root_); }
  bool has_root() const { return has_root_; }

 private:
  Node* place(Node n) {
    count(1, n.line);
    if (stack_.empty()) {
      root_ = std::move(n);
      has_root_ = true;
      return &root_;
    }
    Node& top = *stack_.back().node;
    if (top.type == Node::Type::sequence) {
      top.items.push_back(std::move(n));
      return &top.items.back();
    }
    top.keys.push_back(std::move(pending_key_));
    top.key_lines.push_back(pending_line_);
    top.values.push_back(std::move(n));
    has_key_ = false;
    return &top.values.back();
  }

  // Open is a collection still being filled; index (a mapping's, once it
  // has kScan keys) finds the position of each of its keys.
  struct Open {
    Node* node;
    std::unordered_map<std::string, std::size_t> index;
  };
  static constexpr std::size_t kScan = 16;

  Node root_;
  bool has_root_ = false;
  std::vector<Open> stack_;
  std::string pending_key_;
  int pending_line_ = 0;
  bool has_key_ = false;
  std::size_t nodes_ = 0;
};

Node scalar(Node::Type t, std::string text, int line) {
  Node n;
  n.type = t;
  n.text = std::move(text);
  n.line = line;
  return n;
}

Node collection(Node::Type t, int line) {
  Node n;
  n.type = t;
  n.line = line;
  return n;
}

// ---- JSON ----

// LineCounter follows the bytes nlohmann consumes, so each SAX event knows its
// line. Numbers are only known to end after one more byte was read, hence
// `last`.
struct LineCounter {
  int line = 1;
  char last = 0;
};

class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, LineCounter* c) : p_(p), c_(c) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    c_->last = *p_;
    if (*p_ == '\n') ++c_->line;
    ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  LineCounter* c_;
};

struct JsonSyntaxError : Error {
  using Error::Error;
};

class JsonReader {
 public:
  explicit JsonReader(const LineCounter& c) : c_(c) {}

  bool null() { return put(Node::Type::null, ""); }
  bool boolean(bool v) { return put(Node::Type::boolean, v ? "true" : "false"); }
  bool number_integer(std::int64_t v) { return put_number(Node::Type::integer, std::to_string(v)); }
  bool number_unsigned(std::uint64_t v) { return put_number(Node::Type::integer, std::to_string(v)); }
  bool number_float(double, const std::string& text) { return put_number(Node::Type::floating, text); }
  bool string(std::string& v) { return put(Node::Type::string, std::move(v)); }
  bool binary(nlohmann::json::binary_t&) { return false; }
  bool start_object(std::size_t) {
    tree_.begin(collection(Node::Type::mapping, c_.line));
    return true;
  }
  bool key(std::string& k) {
    tree_.key(std::move(k), c_.line);
    return true;
  }
  bool end_object() {
    tree_.end();
    return true;
  }
  bool start_array(std::size_t) {
    tree_.begin(collection(Node::Type::sequence, c_.line));
    return true;
  }
  bool end_array() {
    tree_.end();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    std::string msg = ex.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg.erase(0, p + 2);
    if (msg.rfind("parse error at ", 0) == 0) msg.erase(0, 15);
    throw JsonSyntaxError(msg);
  }

  Node take_root() { return tree_.take_root(); }

 private:
  bool put(Node::Type t, std::string text) {
    tree_.value(scalar(t, std::move(text), c_.line));
    return true;
  }
  bool put_number(Node::Type t, std::string text) {
    tree_.value(scalar(t, std::move(text), c_.line - (c_.last == '\n' ? 1 : 0)));
    return true;
  }

  const LineCounter& c_;
  TreeBuilder tree_;
};

Node read_json(std::string_view text) {
  LineCounter counter;
  JsonReader reader(counter);
  CountingIterator first(text.data(), &counter), last(text.data() + text.size(), &counter);
  nlohmann::json::sax_parse(first, last, &reader, nlohmann::detail::input_format_t::json, true, false);
  return reader.take_root();
}

// ---- YAML ----

int line(const yaml_mark_t& m) {
  return static_cast<int>(m.line) + 1;
}

std::string text_of(const yaml_char_t* s) {
  return s ? reinterpret_cast<const char*>(s) : "";
}

// YamlParser owns a libyaml event parser over text. libyaml is the C parser
// that upstream's go-yaml v2 was ported from, so both read the same YAML 1.1
// syntax; it keeps its own stacks (no recursion) and needs no copy of the text.
class YamlParser {
 public:
  explicit YamlParser(std::string_view text) : text_(text) {
    if (!yaml_parser_initialize(&parser_)) throw std::bad_alloc();
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~YamlParser() {
    if (has_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  YamlParser(const YamlParser&) = delete;
  YamlParser& operator=(const YamlParser&) = delete;

  const yaml_event_t& next() {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = yaml_parser_parse(&parser_, &event_) != 0;
    if (!has_event_) fail();
    return event_;
  }

 private:
  [[noreturn]] void fail() const {
    if (parser_.error == YAML_MEMORY_ERROR) throw std::bad_alloc();
    std::string what = parser_.problem ? parser_.problem : "invalid YAML";
    if (parser_.error == YAML_READER_ERROR) {  // no mark: the offset of the bad byte
      std::size_t offset = std::min(parser_.problem_offset, text_.size());
      fail_at(1 + static_cast<int>(std::count(text_.begin(), text_.begin() + offset, '\n')), what);
    }
    if (parser_.context)
      what += " (" + std::string(parser_.context) + " on line " + std::to_string(parser_.context_mark.line + 1) + ")";
    fail_at(line(parser_.problem_mark), "column " + std::to_string(parser_.problem_mark.column + 1) + ": " + what);
  }

  std::string_view text_;
  yaml_parser_t parser_{};
  yaml_event_t event_{};
  bool has_event_ = false;
};

// YamlReader turns events into the tree. An untagged plain scalar is `plain`
// (null for "", ~ and null), typed later by the field that receives it; an
// untagged quoted one is a string; the YAML 1.1 core tags are accepted, any
// other tag is refused. Aliases are expanded, counted against kMaxNodes.
class YamlReader {
 public:
  void event(const yaml_event_t& e) {
    int at = line(e.start_mark);
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        const auto& s = e.data.scalar;
        add(scalar(scalar_type(s.tag, s.style, s.value, s.length, at),
                   std::string(reinterpret_cast<const char*>(s.value), s.length), at),
            e.data.scalar.anchor);
        break;
      }
      case YAML_ALIAS_EVENT: {
        std::string name = text_of(e.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) fail_at(at, "unknown alias " + quote("*" + name));
        tree_.count(size(it->second), at);
        add(it->second, nullptr);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
        begin(collection(Node::Type::sequence, at), e.data.sequence_start.anchor);
        break;
      case YAML_MAPPING_START_EVENT:
        begin(collection(Node::Type::mapping, at), e.data.mapping_start.anchor);
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        end();
        break;
      default:
        break;
    }
  }
  bool has_root() const { return tree_.has_root(); }
  Node take_root() { return tree_.take_root(); }

  static bool is_null(const yaml_event_t& e) {
    const auto& s = e.data.scalar;
    return e.type == YAML_SCALAR_EVENT && !s.tag && s.style == YAML_PLAIN_SCALAR_STYLE &&
           null_text(std::string_view(reinterpret_cast<const char*>(s.value), s.length));
  }

 private:
  static bool null_text(std::string_view v) {
    return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL";
  }
  static Node::Type scalar_type(const yaml_char_t* tag_text, yaml_scalar_style_t style, const yaml_char_t* value,
                                std::size_t length, int line) {
    if (!tag_text) {
      if (style != YAML_PLAIN_SCALAR_STYLE) return Node::Type::string;
      return null_text(std::string_view(reinterpret_cast<const char*>(value), length)) ? Node::Type::null
                                                                                       : Node::Type::plain;
    }
    std::string tag = text_of(tag_text);
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return Node::Type::string;
    for (const char* t : {"int", "bool", "float", "null"})
      if (tag == std::string("tag:yaml.org,2002:") + t) return Node::Type::plain;
    fail_at(line, "unsupported YAML tag " + quote(tag));
  }
  static std::size_t size(const Node& n) {
    std::size_t total = 1;
    for (const auto& i : n.items) total += size(i);
    for (const auto& v : n.values) total += size(v);
    return total;
  }
  void add(Node n, const yaml_char_t* anchor) {
    if (tree_.expecting_key()) {
      if (n.type != Node::Type::plain && n.type != Node::Type::string)
        fail_at(n.line, "a mapping key must be a string");
      tree_.key(std::move(n.text), n.line);
      return;
    }
    if (anchor) anchors_[text_of(anchor)] = n;
    tree_.value(std::move(n));
  }
  void begin(Node n, const yaml_char_t* anchor) {
    if (tree_.expecting_key()) fail_at(n.line, "a mapping key must be a string");
    tree_.begin(std::move(n));
    open_anchors_.push_back(text_of(anchor));
  }
  void end() {
    Node* done = tree_.end();
    if (!open_anchors_.back().empty()) anchors_[open_anchors_.back()] = *done;
    open_anchors_.pop_back();
  }

  TreeBuilder tree_;
  std::map<std::string, Node, std::less<>> anchors_;
  std::vector<std::string> open_anchors_;
};

// read_yaml reads the first document into the tree. A later document may only
// be empty (or null): anything else in it is an error.
Node read_yaml(std::string_view text) {
  YamlParser parser(text);
  YamlReader reader;
  int documents = 0;
  for (;;) {
    const yaml_event_t& e = parser.next();
    if (e.type == YAML_STREAM_END_EVENT) break;
    if (e.type == YAML_DOCUMENT_START_EVENT) ++documents;
    if (documents <= 1)
      reader.event(e);
    else if (e.type != YAML_DOCUMENT_START_EVENT && e.type != YAML_DOCUMENT_END_EVENT && !YamlReader::is_null(e))
      throw Error("more than one YAML document");
  }
  if (!reader.has_root()) return Node{};
  return reader.take_root();
}

}  // namespace

Node read_document(std::string_view text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    try {
      return read_json(text);
    } catch (const JsonSyntaxError& json_error) {
      try {
        return read_yaml(text);
      } catch (const Error&) {
        throw Error(json_error.what());
      }
    }
  }
  return read_yaml(text);
}

}  // namespace specshim::cdi
