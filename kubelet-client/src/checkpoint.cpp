// SPDX-License-Identifier: Apache-2.0
// Parsing of kubelet_internal_checkpoint (Go encoding/json of the device
// manager's checkpoint). Layout, newest first:
//   {"Data": {"PodDeviceEntries": [{"PodUID", "ContainerName", "ResourceName",
//             "DeviceIDs": {"<numa>": [ids]} | [ids], "AllocResp": "<base64>"}],
//             "RegisteredDevices": {"<resource>": [ids]}},
//    "Checksum": <uint64>}
// Go writes nil slices and maps as null; both are read as empty.
#include "specshim/kubelet/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "specshim/kubelet/errors.h"
#include "specshim/kubelet/wire.h"

namespace specshim::kubelet {

namespace {

constexpr std::size_t kMaxCheckpointBytes = 64u << 20;

// read_file reads a regular file of bounded size; nullopt when missing.
std::optional<std::string> read_file(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Error("read checkpoint `" + file.string() + "`: " + std::strerror(errno));
  }
  auto fail = [&](const std::string& why) -> std::string {
    ::close(fd);
    throw Error("read checkpoint `" + file.string() + "`: " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("not a regular file");
  if (static_cast<std::size_t>(st.st_size) > kMaxCheckpointBytes) fail("larger than 64 MiB");
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxCheckpointBytes) fail("larger than 64 MiB");
  }
  ::close(fd);
  return out;
}

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
  std::string string_value() {
    space();
    std::string scratch;
    return std::string(text(scratch));
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

  // text reads a string: a view into the document when it is plain ASCII
  // without escapes (every string Go writes for a checkpoint), else decoded
  // into scratch.
  std::string_view text(std::string& scratch) {
    std::size_t start = i_ + 1;
    std::size_t end = start;
    while (end < s_.size() && s_[end] != '"' && s_[end] != '\\' && static_cast<unsigned char>(s_[end]) >= 0x20 &&
           static_cast<unsigned char>(s_[end]) < 0x80)
      ++end;
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
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\' && static_cast<unsigned char>(s_[i_]) >= 0x20 &&
             static_cast<unsigned char>(s_[i_]) < 0x80)
        ++i_;
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

// Parser reads the checkpoint's layout from a Reader, naming the exact key
// on failure. A key given twice counts once, the last time (encoding/json).
class Parser {
 public:
  Parser(Reader& r, const std::string& name) : r_(r), name_(name) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Protocol("read checkpoint `" + name_ + "`: " + where + ": " + why);
  }

  // ids reads a list of device IDs (or null) into out, each once; where()
  // spells its path for a message.
  template <typename Where>
  void ids(const Where& where, std::vector<std::string>& out) {
    char c = r_.next();
    if (c == 'n') return r_.null();
    if (c != '[') fail(where(), "not a list");
    r_.array([&] {
      if (r_.next() != '"') fail(where(), "has a non-string device ID");
      std::string id = r_.string_value();
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(std::move(id));
    });
  }

  // device_ids reads both layouts: a flat list (<= 1.19) or NUMA node ->
  // list, taken in key order (encoding/json writes map keys sorted).
  template <typename Where>
  std::vector<std::string> device_ids(const Where& where) {
    std::vector<std::string> out;
    char c = r_.next();
    if (c == 'n') {
      r_.null();
    } else if (c == '[') {
      ids(where, out);
    } else if (c == '{') {
      std::map<std::string, std::vector<std::string>> by_numa;
      r_.object([&](std::string_view numa) {
        auto& list = by_numa[std::string(numa)];
        list.clear();
        ids([&] { return where() + "[\"" + std::string(numa) + "\"]"; }, list);
      });
      for (const auto& [numa, list] : by_numa)
        for (const auto& id : list)
          if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    } else {
      fail(where(), "neither a list nor a NUMA map");
    }
    return out;
  }

  // entry reads PodDeviceEntries[index]. Its path is spelled only for a
  // message: a create reads hundreds of entries.
  Checkpoint::RawEntry entry(std::size_t index) {
    auto where = [&](std::string_view field = {}) {
      return "Data.PodDeviceEntries[" + std::to_string(index) + "]" + std::string(field);
    };
    if (r_.next() != '{') fail(where(), "not an object");
    std::optional<std::string> uid, container, resource, alloc;
    std::vector<std::string> devices;
    auto text = [&](std::string_view field, const char* what = "not a string") -> std::optional<std::string> {
      char c = r_.next();
      if (c == 'n') {
        r_.null();
        return std::nullopt;
      }
      if (c != '"') fail(where(field), what);
      return r_.string_value();
    };
    r_.object([&](std::string_view key) {
      if (key == "PodUID") {
        uid = text(".PodUID");
      } else if (key == "ContainerName") {
        container = text(".ContainerName");
      } else if (key == "ResourceName") {
        resource = text(".ResourceName");
      } else if (key == "DeviceIDs") {
        devices = device_ids([&] { return where(".DeviceIDs"); });
      } else if (key == "AllocResp") {
        alloc = text(".AllocResp", "not a base64 string");
      } else {
        r_.skip();
      }
    });
    auto required = [&](std::optional<std::string>& v, const char* key) {
      if (!v) fail(where(), "missing `" + std::string(key) + "`");
      return std::move(*v);
    };
    Checkpoint::RawEntry raw;
    raw.pod_uid = required(uid, "PodUID");
    raw.container = required(container, "ContainerName");
    raw.resource = required(resource, "ResourceName");
    raw.device_ids = std::move(devices);
    raw.alloc_resp = std::move(alloc);
    return raw;
  }

  void data(std::vector<Checkpoint::RawEntry>& entries, ResourceDevices& registered) {
    if (r_.next() != '{') fail("Data", "not an object");
    r_.object([&](std::string_view key) {
      if (key == "PodDeviceEntries") {
        entries.clear();
        char c = r_.next();
        if (c == 'n') return r_.null();
        if (c != '[') fail("Data.PodDeviceEntries", "not a list");
        r_.array([&] { entries.push_back(entry(entries.size())); });
      } else if (key == "RegisteredDevices") {
        registered.clear();
        char c = r_.next();
        if (c == 'n') return r_.null();
        if (c != '{') fail("Data.RegisteredDevices", "not an object");
        r_.object([&](std::string_view resource) {
          auto& list = registered[std::string(resource)];
          list.clear();
          ids([&] { return "Data.RegisteredDevices[\"" + std::string(resource) + "\"]"; }, list);
        });
      } else {
        r_.skip();
      }
    });
  }

  void document(std::vector<Checkpoint::RawEntry>& entries, ResourceDevices& registered) {
    if (r_.next() != '{') {
      r_.skip();  // a syntax error first, as a whole-document parse would report it
      r_.end();
      fail("top level", "not an object");
    }
    bool has_data = false;
    r_.object([&](std::string_view key) {
      if (key != "Data") return r_.skip();
      if (r_.next() == 'n') {
        r_.null();
        has_data = false;
        return;
      }
      has_data = true;
      data(entries, registered);
    });
    r_.end();
    if (!has_data) fail("top level", "missing `Data`");
  }

 private:
  Reader& r_;
  const std::string& name_;
};

}  // namespace

std::optional<Checkpoint> Checkpoint::read(const std::filesystem::path& file) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  return parse(*text, file.string());
}

Checkpoint Checkpoint::parse(std::string_view text, std::string name) {
  Checkpoint cp;
  cp.name_ = std::move(name);
  Reader reader(text);
  Parser p(reader, cp.name_);
  try {
    p.document(cp.raw_, cp.registered_);
  } catch (const SyntaxError& e) {
    if (e.range)
      p.fail("top level", "not valid JSON: the number at byte " + std::to_string(e.byte) + " is out of range");
    p.fail("byte " + std::to_string(e.byte + 1), text.empty() ? "empty file" : "not valid JSON (truncated?)");
  }
  return cp;
}

CheckpointEntry Checkpoint::decoded(const RawEntry& raw) const {
  CheckpointEntry e{raw.pod_uid, raw.container, raw.resource, raw.device_ids, std::nullopt};
  if (raw.alloc_resp) {
    try {
      e.alloc = decode_allocate_response(base64_decode(*raw.alloc_resp));
    } catch (const Protocol& ex) {
      throw Protocol("read checkpoint `" + name_ + "`: AllocResp of pod `" + raw.pod_uid + "` container `" +
                     raw.container + "` resource `" + raw.resource + "`: " + ex.what());
    }
  }
  return e;
}

std::vector<CheckpointEntry> Checkpoint::entries(std::string_view pod_uid, std::string_view container) const {
  std::vector<CheckpointEntry> out;
  for (const auto& raw : raw_)
    if (raw.pod_uid == pod_uid && raw.container == container) out.push_back(decoded(raw));
  return out;
}

std::vector<CheckpointEntry> Checkpoint::entries_of_pod(std::string_view pod_uid) const {
  std::vector<CheckpointEntry> out;
  for (const auto& raw : raw_)
    if (raw.pod_uid == pod_uid) out.push_back(decoded(raw));
  return out;
}

std::vector<CheckpointEntry> Checkpoint::entries_of_resources(const std::function<bool(std::string_view)>& keep) const {
  std::vector<CheckpointEntry> out;
  for (const auto& raw : raw_)
    if (keep(raw.resource)) out.push_back(decoded(raw));
  return out;
}

std::vector<CheckpointEntry> Checkpoint::entries_for_devices(std::string_view resource,
                                                             const std::vector<std::string>& device_ids) const {
  std::vector<std::string> want = device_ids;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  std::vector<CheckpointEntry> out;
  for (const auto& raw : raw_) {
    if (raw.resource != resource || raw.device_ids.size() != want.size()) continue;
    std::vector<std::string> have = raw.device_ids;  // unique already
    std::sort(have.begin(), have.end());
    if (have == want) out.push_back(decoded(raw));
  }
  return out;
}

ResourceDevices Checkpoint::allocated_devices() const {
  ResourceDevices out;
  for (const auto& raw : raw_) {
    auto& ids = out[raw.resource];
    for (const auto& id : raw.device_ids)
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return out;
}

}  // namespace specshim::kubelet
