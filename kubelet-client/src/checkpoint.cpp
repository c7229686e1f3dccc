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
#include <cstring>
#include <nlohmann/json.hpp>

#include "specshim/kubelet/errors.h"

namespace specshim::kubelet {

using nlohmann::json;

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

// Parser turns the JSON DOM into entries, naming the exact key on failure.
class Parser {
 public:
  explicit Parser(const std::string& name) : name_(name) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Protocol("read checkpoint `" + name_ + "`: " + where + ": " + why);
  }

  const json* member(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

  std::string string(const json& obj, const char* key, const std::string& where) const {
    const json* v = member(obj, key);
    if (!v) fail(where, "missing `" + std::string(key) + "`");
    if (!v->is_string()) fail(where + "." + key, "not a string");
    return v->get<std::string>();
  }

  // ids appends the strings of a JSON list to out, skipping ones already there.
  void ids(const json& list, const std::string& where, std::vector<std::string>& out) const {
    if (list.is_null()) return;
    if (!list.is_array()) fail(where, "not a list");
    for (const auto& id : list) {
      if (!id.is_string()) fail(where, "has a non-string device ID");
      auto s = id.get<std::string>();
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    }
  }

  // device_ids reads both layouts: a flat list (<= 1.19) or NUMA node -> list.
  std::vector<std::string> device_ids(const json* v, const std::string& where) const {
    std::vector<std::string> out;
    if (!v) return out;
    if (v->is_array()) {
      ids(*v, where, out);
    } else if (v->is_object()) {
      for (const auto& [numa, list] : v->items()) ids(list, where + "[\"" + numa + "\"]", out);
    } else {
      fail(where, "neither a list nor a NUMA map");
    }
    return out;
  }

 private:
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
  Parser p(cp.name_);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    p.fail("byte " + std::to_string(e.byte), text.empty() ? "empty file" : "not valid JSON (truncated?)");
  } catch (const json::exception& e) {  // out_of_range: a number too large for its type
    p.fail("top level", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) p.fail("top level", "not an object");
  const json* data = p.member(doc, "Data");
  if (!data) p.fail("top level", "missing `Data`");
  if (!data->is_object()) p.fail("Data", "not an object");

  if (const json* entries = p.member(*data, "PodDeviceEntries")) {
    if (!entries->is_array()) p.fail("Data.PodDeviceEntries", "not a list");
    for (std::size_t i = 0; i < entries->size(); ++i) {
      const json& e = (*entries)[i];
      std::string where = "Data.PodDeviceEntries[" + std::to_string(i) + "]";
      if (!e.is_object()) p.fail(where, "not an object");
      RawEntry raw;
      raw.pod_uid = p.string(e, "PodUID", where);
      raw.container = p.string(e, "ContainerName", where);
      raw.resource = p.string(e, "ResourceName", where);
      raw.device_ids = p.device_ids(p.member(e, "DeviceIDs"), where + ".DeviceIDs");
      if (const json* alloc = p.member(e, "AllocResp")) {
        if (!alloc->is_string()) p.fail(where + ".AllocResp", "not a base64 string");
        raw.alloc_resp = alloc->get<std::string>();
      }
      cp.raw_.push_back(std::move(raw));
    }
  }
  if (const json* reg = p.member(*data, "RegisteredDevices")) {
    if (!reg->is_object()) p.fail("Data.RegisteredDevices", "not an object");
    for (const auto& [resource, list] : reg->items())
      p.ids(list, "Data.RegisteredDevices[\"" + resource + "\"]", cp.registered_[resource]);
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

}  // namespace specshim::kubelet
