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
    r_.array([&] {
      if (r_.next() != '"') fail(where(), "has a non-string device ID");
      add(out, from, r_.view(store_));
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
      r_.object([&](std::string_view numa) {
        auto same = std::find_if(numa_.begin(), numa_.begin() + static_cast<std::ptrdiff_t>(used),
                                 [&](const Numa& n) { return n.key == numa; });
        if (same == numa_.begin() + static_cast<std::ptrdiff_t>(used)) {
          if (used == numa_.size()) numa_.emplace_back();
          same = numa_.begin() + static_cast<std::ptrdiff_t>(used++);
          same->key = numa;
        }
        same->ids.clear();
        ids([&] { return where() + "[\"" + same->key + "\"]"; }, same->ids, 0);
      });
      std::sort(numa_.begin(), numa_.begin() + static_cast<std::ptrdiff_t>(used),
                [](const Numa& a, const Numa& b) { return a.key < b.key; });
      for (std::size_t k = 0; k < used; ++k)
        for (auto id : numa_[k].ids) add(out, from, id);
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
  // add appends id to out unless out holds it from `from` on.
  static void add(std::vector<std::string_view>& out, std::size_t from, std::string_view id) {
    if (std::find(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(), id) == out.end()) out.push_back(id);
  }

  struct Numa {
    std::string key;
    std::vector<std::string_view> ids;
  };

  Reader& r_;
  const std::string& name_;
  std::deque<std::string>& store_;
  std::vector<Numa> numa_;  // one entry's NUMA nodes, reused from entry to entry
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
  for (const auto& raw : raw_) {
    auto& ids = out[std::string(raw.resource)];
    for (std::size_t k = raw.first_id; k < raw.first_id + raw.id_count; ++k)
      if (std::find(ids.begin(), ids.end(), ids_[k]) == ids.end()) ids.emplace_back(ids_[k]);
  }
  return out;
}

}  // namespace specshim::kubelet
