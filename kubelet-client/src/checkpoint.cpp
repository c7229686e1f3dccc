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
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "checkpoint_reader.h"
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

using checkpoint_json::Reader;
using checkpoint_json::SyntaxError;

// Parser reads the checkpoint's layout from a Reader, naming the exact key
// on failure. A key given twice counts once, the last time (encoding/json).
// Strings are kept as views (Reader::view): reading a node's checkpoint
// allocates per entry only when the entries vector grows.
class Parser {
 public:
  Parser(Reader& r, const std::string& name, std::deque<std::string>& store) : r_(r), name_(name), store_(store) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Protocol("read checkpoint `" + name_ + "`: " + where + ": " + why);
  }

  // ids reads a list of device IDs (or null), appending to out those not in
  // out from `from` on; where() spells its path for a message.
  template <typename Where>
  void ids(const Where& where, std::vector<std::string_view>& out, std::size_t from) {
    char c = r_.next();
    if (c == 'n') return r_.null();
    if (c != '[') fail(where(), "not a list");
    Unique unique(out, from);
    r_.array([&] {
      if (r_.next() != '"') fail(where(), "has a non-string device ID");
      unique.add(r_.view(store_));
    });
  }

  // device_ids reads both layouts into out from its end on: a flat list
  // (<= 1.19) or NUMA node -> list, taken in key order (encoding/json writes
  // map keys sorted).
  template <typename Where>
  void device_ids(const Where& where, std::vector<std::string_view>& out) {
    std::size_t from = out.size();
    char c = r_.next();
    if (c == 'n') {
      r_.null();
    } else if (c == '[') {
      ids(where, out, from);
    } else if (c == '{') {
      std::size_t used = 0;  // numa_[0, used): this entry's nodes; the rest keep their capacity
      if (!numa_index_.empty()) numa_index_.clear();
      r_.object([&](std::string_view numa) {
        Numa& same = numa_node(numa, used);
        same.ids.clear();
        ids([&] { return where() + "[\"" + same.key + "\"]"; }, same.ids, 0);
      });
      std::sort(numa_.begin(), numa_.begin() + static_cast<std::ptrdiff_t>(used),
                [](const Numa& a, const Numa& b) { return a.key < b.key; });
      Unique unique(out, from);
      for (std::size_t k = 0; k < used; ++k)
        for (auto id : numa_[k].ids) unique.add(id);
    } else {
      fail(where(), "neither a list nor a NUMA map");
    }
  }

  // entry reads PodDeviceEntries[index], its device IDs appended to ids.
  // Its path is spelled only for a message: a create reads hundreds of
  // entries.
  Checkpoint::RawEntry entry(std::size_t index, std::vector<std::string_view>& ids) {
    auto where = [&](std::string_view field = {}) {
      return "Data.PodDeviceEntries[" + std::to_string(index) + "]" + std::string(field);
    };
    if (r_.next() != '{') fail(where(), "not an object");
    std::optional<std::string_view> uid, container, resource, alloc;
    std::size_t first = ids.size();
    auto text = [&](std::string_view field, const char* what = "not a string") -> std::optional<std::string_view> {
      char c = r_.next();
      if (c == 'n') {
        r_.null();
        return std::nullopt;
      }
      if (c != '"') fail(where(field), what);
      return r_.view(store_);
    };
    r_.object([&](std::string_view key) {
      if (key == "PodUID") {
        uid = text(".PodUID");
      } else if (key == "ContainerName") {
        container = text(".ContainerName");
      } else if (key == "ResourceName") {
        resource = text(".ResourceName");
      } else if (key == "DeviceIDs") {
        ids.resize(first);
        device_ids([&] { return where(".DeviceIDs"); }, ids);
      } else if (key == "AllocResp") {
        alloc = text(".AllocResp", "not a base64 string");
      } else {
        r_.skip();
      }
    });
    auto required = [&](const std::optional<std::string_view>& v, const char* key) {
      if (!v) fail(where(), "missing `" + std::string(key) + "`");
      return *v;
    };
    Checkpoint::RawEntry raw;
    raw.pod_uid = required(uid, "PodUID");
    raw.container = required(container, "ContainerName");
    raw.resource = required(resource, "ResourceName");
    raw.first_id = first;
    raw.id_count = ids.size() - first;
    raw.alloc_resp = alloc;
    return raw;
  }

  void data(std::vector<Checkpoint::RawEntry>& entries, std::vector<std::string_view>& entry_ids,
            ResourceDevices& registered) {
    if (r_.next() != '{') fail("Data", "not an object");
    r_.object([&](std::string_view key) {
      if (key == "PodDeviceEntries") {
        entries.clear();
        entry_ids.clear();
        char c = r_.next();
        if (c == 'n') return r_.null();
        if (c != '[') fail("Data.PodDeviceEntries", "not a list");
        r_.array([&] { entries.push_back(entry(entries.size(), entry_ids)); });
      } else if (key == "RegisteredDevices") {
        registered.clear();
        char c = r_.next();
        if (c == 'n') return r_.null();
        if (c != '{') fail("Data.RegisteredDevices", "not an object");
        r_.object([&](std::string_view resource) {
          std::string name(resource);
          std::vector<std::string_view> list;
          ids([&] { return "Data.RegisteredDevices[\"" + name + "\"]"; }, list, 0);
          registered[name].assign(list.begin(), list.end());
        });
      } else {
        r_.skip();
      }
    });
  }

  void document(std::vector<Checkpoint::RawEntry>& entries, std::vector<std::string_view>& ids,
                ResourceDevices& registered) {
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
      data(entries, ids, registered);
    });
    r_.end();
    if (!has_data) fail("top level", "missing `Data`");
  }

 private:
  // A list of a few items is scanned for a repeat; past kScan, Unique and
  // numa_node find it through a hash set, so a list of n costs O(n), not O(n²).
  static constexpr std::size_t kScan = 16;

  // Unique appends IDs to out from `from` on, each once, in the order first
  // given. The views point into the document or store_, both kept as long as
  // the Checkpoint, so the set holds views, not copies.
  class Unique {
   public:
    Unique(std::vector<std::string_view>& out, std::size_t from) : out_(out), from_(from) {}
    void add(std::string_view id) {
      auto first = out_.begin() + static_cast<std::ptrdiff_t>(from_);
      if (seen_.empty() && out_.size() - from_ < kScan) {
        if (std::find(first, out_.end(), id) != out_.end()) return;
      } else {
        if (seen_.empty()) seen_.insert(first, out_.end());
        if (!seen_.insert(id).second) return;
      }
      out_.push_back(id);
    }

   private:
    std::vector<std::string_view>& out_;
    std::size_t from_;
    std::unordered_set<std::string_view> seen_;
  };

  struct Numa {
    std::string key;
    std::vector<std::string_view> ids;
  };

  // numa_node is this entry's node for key: numa_[0, used) are the nodes it
  // has named, numa_index_ (once there are kScan) their positions by key. A
  // key not named yet takes the next place.
  Numa& numa_node(std::string_view key, std::size_t& used) {
    std::size_t at = used;
    if (used < kScan) {
      auto end = numa_.begin() + static_cast<std::ptrdiff_t>(used);
      at = static_cast<std::size_t>(std::find_if(numa_.begin(), end, [&](const Numa& n) { return n.key == key; }) -
                                    numa_.begin());
    } else {
      if (numa_index_.empty())
        for (std::size_t k = 0; k < used; ++k) numa_index_.emplace(numa_[k].key, k);
      auto [it, fresh] = numa_index_.emplace(key, used);
      if (!fresh) at = it->second;
    }
    if (at == used) {
      if (used == numa_.size()) numa_.emplace_back();
      numa_[used++].key = key;
    }
    return numa_[at];
  }

  Reader& r_;
  const std::string& name_;
  std::deque<std::string>& store_;
  std::vector<Numa> numa_;  // one entry's NUMA nodes, reused from entry to entry
  std::unordered_map<std::string, std::size_t> numa_index_;
};

}  // namespace

std::optional<Checkpoint> Checkpoint::read(const std::filesystem::path& file) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  return parse(std::move(*text), file.string());
}

Checkpoint Checkpoint::parse(std::string text, std::string name) {
  Checkpoint cp;
  cp.name_ = std::move(name);
  auto owned = std::make_shared<Text>();
  owned->bytes = std::move(text);
  const std::string& bytes = owned->bytes;
  Reader reader(bytes);
  Parser p(reader, cp.name_, owned->decoded);
  try {
    p.document(cp.raw_, cp.ids_, cp.registered_);
  } catch (const SyntaxError& e) {
    if (e.range)
      p.fail("top level", "not valid JSON: the number at byte " + std::to_string(e.byte) + " is out of range");
    p.fail("byte " + std::to_string(e.byte + 1), bytes.empty() ? "empty file" : "not valid JSON (truncated?)");
  }
  cp.text_ = std::move(owned);
  return cp;
}

std::vector<std::string> Checkpoint::ids_of(const RawEntry& raw) const {
  auto first = ids_.begin() + static_cast<std::ptrdiff_t>(raw.first_id);
  return {first, first + static_cast<std::ptrdiff_t>(raw.id_count)};
}

CheckpointEntry Checkpoint::decoded(const RawEntry& raw) const {
  CheckpointEntry e{std::string(raw.pod_uid), std::string(raw.container), std::string(raw.resource), ids_of(raw),
                    std::nullopt};
  if (raw.alloc_resp) {
    try {
      e.alloc = decode_allocate_response(base64_decode(*raw.alloc_resp));
    } catch (const Protocol& ex) {
      throw Protocol("read checkpoint `" + name_ + "`: AllocResp of pod `" + e.pod_uid + "` container `" + e.container +
                     "` resource `" + e.resource + "`: " + ex.what());
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
    if (raw.resource != resource || raw.id_count != want.size()) continue;
    std::vector<std::string> have = ids_of(raw);  // unique already
    std::sort(have.begin(), have.end());
    if (have == want) out.push_back(decoded(raw));
  }
  return out;
}

ResourceDevices Checkpoint::allocated_devices() const {
  ResourceDevices out;
  std::map<std::string_view, std::unordered_set<std::string_view>> seen;  // per resource: a set, not a scan
  for (const auto& raw : raw_) {
    auto& ids = out[std::string(raw.resource)];
    auto& known = seen[raw.resource];
    for (std::size_t k = raw.first_id; k < raw.first_id + raw.id_count; ++k)
      if (known.insert(ids_[k]).second) ids.emplace_back(ids_[k]);
  }
  return out;
}

}  // namespace specshim::kubelet
