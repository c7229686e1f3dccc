// SPDX-License-Identifier: Apache-2.0
// Reading a spec file's bytes into a Node tree. JSON goes through nlohmann's
// SAX parser (iterative, so deep nesting cannot overflow the stack); YAML
// through yaml-cpp's event parser, which has its own recursion guard.
#include "cdi_document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cdi_internal.h"
#include "specshim/error.h"

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
    stack_.push_back(place(std::move(n)));
  }
  Node* end() {
    Node* done = stack_.back();
    stack_.pop_back();
    return done;
  }
  void value(Node n) { place(std::move(n)); }
  // key sets the key for the next value of the current mapping.
  void key(std::string k, int line) {
    Node& map = *stack_.back();
    for (std::size_t i = 0; i < map.keys.size(); ++i)
      if (map.keys[i] == k)
        fail_at(line, "key " + quote(k) + " already set on line " + std::to_string(map.key_lines[i]));
    pending_key_ = std::move(k);
    pending_line_ = line;
    has_key_ = true;
  }
  bool expecting_key() const { return !stack_.empty() && stack_.back()->type == Node::Type::mapping && !has_key_; }
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
    Node& top = *stack_.back();
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

  Node root_;
  bool has_root_ = false;
  std::vector<Node*> stack_;
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

class YamlReader : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    add(scalar(Node::Type::null, "", m.line + 1), anchor);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) fail_at(m.line + 1, "unknown alias");
    tree_.count(size(it->second), m.line + 1);
    add(it->second, 0);
  }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    add(scalar(scalar_type(tag, m.line + 1), value, m.line + 1), anchor);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    begin(collection(Node::Type::sequence, m.line + 1), anchor);
  }
  void OnSequenceEnd() override { end(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    begin(collection(Node::Type::mapping, m.line + 1), anchor);
  }
  void OnMapEnd() override { end(); }

  bool has_root() const { return tree_.has_root(); }
  Node take_root() { return tree_.take_root(); }

 private:
  static Node::Type scalar_type(const std::string& tag, int line) {
    if (tag == "?") return Node::Type::plain;
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
  void add(Node n, YAML::anchor_t anchor) {
    if (tree_.expecting_key()) {
      if (n.type != Node::Type::plain && n.type != Node::Type::string)
        fail_at(n.line, "a mapping key must be a string");
      tree_.key(std::move(n.text), n.line);
      return;
    }
    if (anchor) anchors_[anchor] = n;
    tree_.value(std::move(n));
  }
  void begin(Node n, YAML::anchor_t anchor) {
    if (tree_.expecting_key()) fail_at(n.line, "a mapping key must be a string");
    tree_.begin(std::move(n));
    open_anchors_.push_back(anchor);
  }
  void end() {
    Node* done = tree_.end();
    if (YAML::anchor_t a = open_anchors_.back()) anchors_[a] = *done;
    open_anchors_.pop_back();
  }

  TreeBuilder tree_;
  std::map<YAML::anchor_t, Node> anchors_;
  std::vector<YAML::anchor_t> open_anchors_;
};

class NoopHandler : public YAML::EventHandler {
 public:
  bool saw_content = false;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { saw_content = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {
    saw_content = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    saw_content = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    saw_content = true;
  }
  void OnMapEnd() override {}
};

Node read_yaml(std::string_view text) {
  std::istringstream in{std::string(text)};
  YamlReader reader;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(reader);
    // One look past the first document: yaml-cpp can report empty documents
    // forever on some malformed input, so this is not a loop.
    NoopHandler rest;
    if (parser.HandleNextDocument(rest) && rest.saw_content) throw Error("more than one YAML document");
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) throw Error(e.msg);
    fail_at(e.mark.line + 1, "column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
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
