// SPDX-License-Identifier: Apache-2.0
// The parse cache's entry format: a parsed spec file, or the error parsing it
// ended in, written with the bytes and build it is for, and read back.
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "specshim/node/cdi_cache.h"

namespace specshim::cdi {
namespace {

// Bump when the encoding changes in a way a build ID would not tell (it
// always does today: the format is code of this binary).
constexpr std::string_view kMagic = "specshim cdi parse cache 1\n";
constexpr std::string_view kEnd = "end\n";

// ---- the encoding ----
//
// magic, build, text, then 1 and the spec's fields in declaration order (or
// 0 and the error of a failed parse), then kEnd.
// Integers are 8 bytes in host order (an entry never leaves the host that
// wrote it), strings and lists a count and their items, optionals a 0/1 byte
// and the value. One field list per struct serves both directions.

class Writer {
 public:
  void raw(std::string_view s) { out_ += s; }
  void operator()(std::int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void operator()(const std::string& s) { text(s); }
  void text(std::string_view s) {
    (*this)(static_cast<std::int64_t>(s.size()));
    out_ += s;
  }
  void operator()(bool v) { out_ += v ? '\1' : '\0'; }
  template <typename Int>
  requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool> && !std::is_same_v<Int, std::int64_t>) void operator()(
      Int v) {
    (*this)(static_cast<std::int64_t>(v));
  }
  template <typename T>
  void operator()(const std::optional<T>& v) {
    (*this)(v.has_value());
    if (v) (*this)(*v);
  }
  template <typename T>
  void operator()(const std::vector<T>& v) {
    (*this)(static_cast<std::int64_t>(v.size()));
    for (const auto& item : v) (*this)(item);
  }
  void operator()(const std::map<std::string, std::string>& m) {
    (*this)(static_cast<std::int64_t>(m.size()));
    for (const auto& [k, v] : m) (*this)(k), (*this)(v);
  }
  template <typename T>
  requires requires(Writer& w, const T& t) { fields(w, t); }
  void operator()(const T& v) { fields(*this, v); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reader throws Bad for anything that is not what Writer wrote.
struct Bad {};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::string_view raw(std::size_t n) {
    if (n > in_.size() - at_) throw Bad{};
    std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  void operator()(std::int64_t& v) { std::memcpy(&v, raw(sizeof v).data(), sizeof v); }
  std::string_view text() { return raw(count()); }
  void operator()(std::string& s) { s = text(); }
  void operator()(bool& v) {
    char c = raw(1)[0];
    if (c != '\0' && c != '\1') throw Bad{};
    v = c == '\1';
  }
  template <typename Int>
  requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool> && !std::is_same_v<Int, std::int64_t>) void operator()(
      Int& v) {
    std::int64_t wide = 0;
    (*this)(wide);
    if (!std::in_range<Int>(wide)) throw Bad{};
    v = static_cast<Int>(wide);
  }
  template <typename T>
  void operator()(std::optional<T>& v) {
    bool has = false;
    (*this)(has);
    v.reset();
    if (has) (*this)(v.emplace());
  }
  template <typename T>
  void operator()(std::vector<T>& v) {
    // Items are decoded one by one, so memory grows only with the bytes
    // they take: a damaged count cannot ask for more than the entry holds.
    v.clear();
    for (std::size_t n = count(); n > 0; --n) (*this)(v.emplace_back());
  }
  void operator()(std::map<std::string, std::string>& m) {
    m.clear();
    for (std::size_t n = count(); n > 0; --n) {
      std::string k, v;
      (*this)(k), (*this)(v);
      if (!m.emplace(std::move(k), std::move(v)).second) throw Bad{};
    }
  }
  template <typename T>
  requires requires(Reader& r, T& t) { fields(r, t); }
  void operator()(T& v) { fields(*this, v); }
  bool done() const { return at_ == in_.size(); }

 private:
  // count is a length or a number of items; every item takes at least one
  // byte, so a count past what is left is a bad entry, not an allocation.
  std::size_t count() {
    std::int64_t n = 0;
    (*this)(n);
    if (n < 0 || static_cast<std::uint64_t>(n) > in_.size() - at_) throw Bad{};
    return static_cast<std::size_t>(n);
  }

  std::string_view in_;
  std::size_t at_ = 0;
};

// The field lists, for `T` and `const T` alike. SpecFile's path and priority
// belong to where the file was found, not to its bytes, and are not kept.
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, DeviceNode>
void fields(Io& io, T& d) {
  io(d.path), io(d.host_path), io(d.type), io(d.major), io(d.minor), io(d.file_mode), io(d.permissions), io(d.uid),
      io(d.gid), io(d.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, Mount>
void fields(Io& io, T& m) {
  io(m.host_path), io(m.container_path), io(m.options), io(m.type), io(m.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, Hook>
void fields(Io& io, T& h) {
  io(h.hook_name), io(h.path), io(h.args), io(h.env), io(h.timeout), io(h.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, IntelRdt>
void fields(Io& io, T& r) {
  io(r.clos_id), io(r.l3_cache_schema), io(r.mem_bw_schema), io(r.schemata), io(r.enable_monitoring), io(r.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, NetDevice>
void fields(Io& io, T& n) {
  io(n.host_interface_name), io(n.name), io(n.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, ContainerEdits>
void fields(Io& io, T& e) {
  io(e.env), io(e.device_nodes), io(e.net_devices), io(e.hooks), io(e.mounts), io(e.intel_rdt), io(e.additional_gids);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, Device>
void fields(Io& io, T& d) {
  io(d.name), io(d.annotations), io(d.edits), io(d.line);
}
template <typename Io, typename T>
requires std::is_same_v<std::remove_const_t<T>, SpecFile>
void fields(Io& io, T& s) {
  io(s.version), io(s.kind), io(s.annotations), io(s.edits), io(s.devices), io(s.version_line), io(s.kind_line);
}

}  // namespace

std::string entry_header(std::string_view text, std::string_view build) {
  Writer w;
  w.raw(kMagic);
  w.text(build);
  w.text(text);
  return w.take();
}

std::string encode_entry(std::string_view text, std::string_view build, const SpecFile& spec) {
  Writer w;
  w.raw(entry_header(text, build));
  w(true);
  w(spec);
  w.raw(kEnd);
  return w.take();
}

std::string encode_entry(std::string_view text, std::string_view build, const ParseFailure& failure) {
  Writer w;
  w.raw(entry_header(text, build));
  w(false);
  w(failure.error);
  w.raw(kEnd);
  return w.take();
}

std::optional<Parsed> decode_entry(std::string_view entry, std::string_view text, std::string_view build) {
  try {
    Reader r(entry);
    if (r.raw(kMagic.size()) != kMagic || r.text() != build || r.text() != text) return std::nullopt;
    bool parsed = false;
    r(parsed);
    Parsed out;
    if (parsed)
      r(out.emplace<SpecFile>());
    else
      r(out.emplace<ParseFailure>().error);
    if (r.raw(kEnd.size()) != kEnd || !r.done()) return std::nullopt;
    return out;
  } catch (...) {  // Bad, or what a damaged entry makes the allocator say
    return std::nullopt;
  }
}

}  // namespace specshim::cdi
