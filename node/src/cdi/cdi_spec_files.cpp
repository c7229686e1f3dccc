// SPDX-License-Identifier: Apache-2.0
// CDI spec files: decoding a Node tree into SpecFile strictly and validating
// it as container-device-interface v1.1.0 does (pkg/cdi/spec.go,
// container-edits.go, specs-go/version.go).
#include <algorithm>
#include <array>
#include <climits>

#include "cdi_document.h"
#include "document_fields.h"
#include "specshim/base/error.h"
#include "specshim/node/cdi.h"

namespace specshim::cdi {
namespace {

DeviceNode decode_device_node(const Node& n, const std::string& where) {
  DeviceNode d;
  d.line = n.line;
  for_fields(n, where, {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"},
             [&](std::string_view f, const Node& v, const std::string& at) {
               if (f == "path")
                 d.path = get_string(v, at).value_or("");
               else if (f == "hostPath")
                 d.host_path = get_string(v, at).value_or("");
               else if (f == "type")
                 d.type = get_string(v, at).value_or("");
               else if (f == "major")
                 d.major = get_int(v, at, INT64_MIN, INT64_MAX).value_or(0);
               else if (f == "minor")
                 d.minor = get_int(v, at, INT64_MIN, INT64_MAX).value_or(0);
               else if (f == "fileMode")
                 d.file_mode = get_u32(v, at);
               else if (f == "permissions")
                 d.permissions = get_string(v, at).value_or("");
               else if (f == "uid")
                 d.uid = get_u32(v, at);
               else if (f == "gid")
                 d.gid = get_u32(v, at);
             });
  return d;
}

Mount decode_mount(const Node& n, const std::string& where) {
  Mount m;
  m.line = n.line;
  for_fields(n, where, {"hostPath", "containerPath", "options", "type"},
             [&](std::string_view f, const Node& v, const std::string& at) {
               if (f == "hostPath")
                 m.host_path = get_string(v, at).value_or("");
               else if (f == "containerPath")
                 m.container_path = get_string(v, at).value_or("");
               else if (f == "options")
                 m.options = get_strings(v, at);
               else if (f == "type")
                 m.type = get_string(v, at).value_or("");
             });
  return m;
}

Hook decode_hook(const Node& n, const std::string& where) {
  Hook h;
  h.line = n.line;
  for_fields(n, where, {"hookName", "path", "args", "env", "timeout"},
             [&](std::string_view f, const Node& v, const std::string& at) {
               if (f == "hookName")
                 h.hook_name = get_string(v, at).value_or("");
               else if (f == "path")
                 h.path = get_string(v, at).value_or("");
               else if (f == "args")
                 h.args = get_strings(v, at);
               else if (f == "env")
                 h.env = get_strings(v, at);
               else if (f == "timeout")
                 h.timeout = get_int(v, at, INT64_MIN, INT64_MAX);
             });
  return h;
}

IntelRdt decode_intel_rdt(const Node& n, const std::string& where) {
  IntelRdt r;
  r.line = n.line;
  for_fields(n, where, {"closID", "l3CacheSchema", "memBwSchema", "schemata", "enableMonitoring"},
             [&](std::string_view f, const Node& v, const std::string& at) {
               if (f == "closID")
                 r.clos_id = get_string(v, at).value_or("");
               else if (f == "l3CacheSchema")
                 r.l3_cache_schema = get_string(v, at).value_or("");
               else if (f == "memBwSchema")
                 r.mem_bw_schema = get_string(v, at).value_or("");
               else if (f == "schemata")
                 r.schemata = v.type == Node::Type::null ? std::nullopt : std::optional(get_strings(v, at));
               else if (f == "enableMonitoring")
                 r.enable_monitoring = get_bool(v, at);
             });
  return r;
}

NetDevice decode_net_device(const Node& n, const std::string& where) {
  NetDevice d;
  d.line = n.line;
  for_fields(n, where, {"hostInterfaceName", "name"}, [&](std::string_view f, const Node& v, const std::string& at) {
    if (f == "hostInterfaceName")
      d.host_interface_name = get_string(v, at).value_or("");
    else if (f == "name")
      d.name = get_string(v, at).value_or("");
  });
  return d;
}

ContainerEdits decode_edits(const Node& n, const std::string& where) {
  ContainerEdits e;
  for_fields(
      n, where, {"env", "deviceNodes", "netDevices", "hooks", "mounts", "intelRdt", "additionalGids"},
      [&](std::string_view f, const Node& v, const std::string& at) {
        if (f == "env")
          e.env = get_strings(v, at);
        else if (f == "deviceNodes")
          for_objects(v, at,
                      [&](const Node& i, const std::string& p) { e.device_nodes.push_back(decode_device_node(i, p)); });
        else if (f == "netDevices")
          for_objects(v, at,
                      [&](const Node& i, const std::string& p) { e.net_devices.push_back(decode_net_device(i, p)); });
        else if (f == "hooks")
          for_objects(v, at, [&](const Node& i, const std::string& p) { e.hooks.push_back(decode_hook(i, p)); });
        else if (f == "mounts")
          for_objects(v, at, [&](const Node& i, const std::string& p) { e.mounts.push_back(decode_mount(i, p)); });
        else if (f == "intelRdt") {
          if (v.type != Node::Type::null) e.intel_rdt = decode_intel_rdt(v, at);
        } else if (f == "additionalGids")
          for_items(v, at, [&](const Node& i, const std::string& p) {
            auto gid = get_u32(i, p);
            if (!gid) fail(i.line, p, "want an integer, got null");
            e.additional_gids.push_back(*gid);
          });
      });
  return e;
}

Device decode_device(const Node& n, const std::string& where) {
  Device d;
  d.line = n.line;
  for_fields(n, where, {"name", "annotations", "containerEdits"},
             [&](std::string_view f, const Node& v, const std::string& at) {
               if (f == "name")
                 d.name = get_string(v, at).value_or("");
               else if (f == "annotations")
                 d.annotations = get_string_map(v, at);
               else if (f == "containerEdits")
                 d.edits = decode_edits(v, at);
             });
  return d;
}

SpecFile decode_spec(const Node& root) {
  if (root.type == Node::Type::null) throw Error("empty spec file");
  SpecFile s;
  for_fields(root, "", {"cdiVersion", "kind", "annotations", "devices", "containerEdits"},
             [&](std::string_view f, const Node& v, const std::string& at) {
               if (f == "cdiVersion") {
                 s.version = get_string(v, at).value_or("");
                 s.version_line = v.line;
               } else if (f == "kind") {
                 s.kind = get_string(v, at).value_or("");
                 s.kind_line = v.line;
               } else if (f == "annotations") {
                 s.annotations = get_string_map(v, at);
               } else if (f == "devices") {
                 for_objects(v, at,
                             [&](const Node& i, const std::string& p) { s.devices.push_back(decode_device(i, p)); });
               } else if (f == "containerEdits") {
                 s.edits = decode_edits(v, at);
               }
             });
  return s;
}

// ---- validation ----

constexpr std::array<std::string_view, 10> kVersions = {"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0",
                                                        "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

int version_index(std::string_view v) {
  if (!v.empty() && v.front() == 'v') v.remove_prefix(1);
  auto it = std::find(kVersions.begin(), kVersions.end(), v);
  return it == kVersions.end() ? -1 : static_cast<int>(it - kVersions.begin());
}

void validate_env(const std::vector<std::string>& env, int line, const std::string& where) {
  for (std::size_t i = 0; i < env.size(); ++i) {
    auto eq = env[i].find('=');
    if (eq == std::string::npos || eq == 0)
      fail(line, item_path(where, i), "invalid environment variable " + quote(env[i]) + " (want NAME=VALUE)");
  }
}

bool is_hook_name(std::string_view n) {
  for (std::string_view h : {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"})
    if (n == h) return true;
  return false;
}

void validate_edits(const ContainerEdits& e, int line, const std::string& where) {
  validate_env(e.env, line, field_path(where, "env"));
  for (std::size_t i = 0; i < e.device_nodes.size(); ++i) {
    const DeviceNode& d = e.device_nodes[i];
    std::string at = item_path(field_path(where, "deviceNodes"), i);
    if (d.path.empty()) fail(d.line, at, "invalid (empty) device path");
    if (!d.type.empty() && d.type != "b" && d.type != "c" && d.type != "u" && d.type != "p")
      fail(d.line, at, "device " + quote(d.path) + ": invalid type " + quote(d.type) + " (want b, c, u or p)");
    if (d.permissions.find_first_not_of("rwm") != std::string::npos)
      fail(d.line, at, "device " + quote(d.path) + ": invalid permissions " + quote(d.permissions) + " (want r, w, m)");
  }
  for (std::size_t i = 0; i < e.hooks.size(); ++i) {
    const Hook& h = e.hooks[i];
    std::string at = item_path(field_path(where, "hooks"), i);
    if (!is_hook_name(h.hook_name)) fail(h.line, at, "invalid hook name " + quote(h.hook_name));
    if (h.path.empty()) fail(h.line, at, "invalid hook " + quote(h.hook_name) + " with empty path");
    validate_env(h.env, h.line, field_path(at, "env"));
  }
  for (std::size_t i = 0; i < e.mounts.size(); ++i) {
    const Mount& m = e.mounts[i];
    std::string at = item_path(field_path(where, "mounts"), i);
    if (m.host_path.empty()) fail(m.line, at, "invalid mount, empty host path");
    if (m.container_path.empty()) fail(m.line, at, "invalid mount, empty container path");
  }
  if (e.intel_rdt) {
    const std::string& id = e.intel_rdt->clos_id;
    if (id != "/" && (id.size() >= 4096 || id == "." || id == ".." || id.find_first_of("/\n") != std::string::npos))
      fail(e.intel_rdt->line, field_path(where, "intelRdt"), "invalid closID " + quote(id));
  }
  for (std::size_t i = 0; i < e.net_devices.size(); ++i) {
    const NetDevice& n = e.net_devices[i];
    std::string at = item_path(field_path(where, "netDevices"), i);
    if (n.host_interface_name.empty()) fail(n.line, at, "invalid linux net device, empty hostInterfaceName");
    if (n.name.empty()) fail(n.line, at, "invalid linux net device, empty name");
    for (std::size_t j = 0; j < i; ++j) {
      const NetDevice& o = e.net_devices[j];
      if (o.host_interface_name == n.host_interface_name)
        fail(n.line, at,
             "invalid linux net device, duplicate hostInterfaceName " + quote(n.host_interface_name) + " with names " +
                 quote(o.name) + " and " + quote(n.name));
      if (o.name == n.name)
        fail(n.line, at,
             "invalid linux net device, duplicate name " + quote(n.name) + " with hostInterfaceName " +
                 quote(o.host_interface_name) + " and " + quote(n.host_interface_name));
    }
  }
}

void validate_spec(const SpecFile& s) {
  int declared = version_index(s.version);
  if (declared < 0) fail(s.version_line, "cdiVersion", "invalid version " + quote(s.version));
  auto [minimum, why] = minimum_version(s);
  if (version_index(minimum) > declared)
    fail(s.version_line, "cdiVersion",
         "the spec version must be at least v" + minimum + (why.empty() ? "" : " (" + why + " needs it)") +
             ", it declares " + quote(s.version));

  auto [vendor, cls] = split_kind(s.kind);
  if (auto e = check_vendor(vendor); !e.empty()) fail(s.kind_line, "kind " + quote(s.kind), "invalid vendor: " + e);
  if (auto e = check_class(cls); !e.empty()) fail(s.kind_line, "kind " + quote(s.kind), "invalid class: " + e);

  validate_edits(s.edits, 1, "containerEdits");
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    const Device& d = s.devices[i];
    std::string at = item_path("devices", i);
    if (auto e = check_device_name(d.name); !e.empty()) fail(d.line, at, "invalid device name: " + e);
    at += " " + quote(d.name);
    if (d.edits.empty()) fail(d.line, at, "invalid device, empty device edits");
    validate_edits(d.edits, d.line, field_path(at, "containerEdits"));
    for (std::size_t j = 0; j < i; ++j)
      if (s.devices[j].name == d.name)
        fail(d.line, at,
             "device " + quote(d.name) + " defined twice (also on line " + std::to_string(s.devices[j].line) + ")");
  }
  if (s.devices.empty()) fail(1, "", "invalid spec, no devices");
}

}  // namespace

bool ContainerEdits::empty() const {
  return env.empty() && device_nodes.empty() && net_devices.empty() && hooks.empty() && mounts.empty() && !intel_rdt &&
         additional_gids.empty();
}

std::pair<std::string, std::string> minimum_version(const SpecFile& s) {
  struct Edits {
    const ContainerEdits* e;
    std::string where;
  };
  std::vector<Edits> all{{&s.edits, "containerEdits"}};
  for (std::size_t i = 0; i < s.devices.size(); ++i)
    all.push_back({&s.devices[i].edits, "devices[" + std::to_string(i) + "].containerEdits"});

  for (const auto& [e, where] : all) {
    if (e->intel_rdt && (e->intel_rdt->schemata || e->intel_rdt->enable_monitoring))
      return {"1.1.0", where + ".intelRdt." + (e->intel_rdt->schemata ? "schemata" : "enableMonitoring")};
    if (!e->net_devices.empty()) return {"1.1.0", where + ".netDevices"};
  }
  for (const auto& [e, where] : all) {
    if (e->intel_rdt) return {"0.7.0", where + ".intelRdt"};
    if (!e->additional_gids.empty()) return {"0.7.0", where + ".additionalGids"};
  }
  if (!s.annotations.empty()) return {"0.6.0", "annotations"};
  for (std::size_t i = 0; i < s.devices.size(); ++i)
    if (!s.devices[i].annotations.empty()) return {"0.6.0", "devices[" + std::to_string(i) + "].annotations"};
  if (auto slash = s.kind.find('/'); slash != std::string::npos && s.kind.find('.', slash) != std::string::npos)
    return {"0.6.0", "a '.' in the class of kind " + quote(s.kind)};
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    const std::string& n = s.devices[i].name;
    if (!n.empty() && n[0] >= '0' && n[0] <= '9')
      return {"0.5.0", "device name " + quote(n) + " starting with a digit"};
  }
  for (const auto& [e, where] : all)
    for (std::size_t i = 0; i < e->device_nodes.size(); ++i)
      if (!e->device_nodes[i].host_path.empty())
        return {"0.5.0", where + ".deviceNodes[" + std::to_string(i) + "].hostPath"};
  for (const auto& [e, where] : all)
    for (std::size_t i = 0; i < e->mounts.size(); ++i)
      if (!e->mounts[i].type.empty()) return {"0.4.0", where + ".mounts[" + std::to_string(i) + "].type"};
  return {"0.3.0", ""};
}

namespace {

// first_invalid_utf8_line returns the 1-based line of the first byte that is
// not part of well-formed UTF-8 (overlongs, surrogates and code points past
// U+10FFFF included), or 0. Upstream's YAML reader refuses such a file;
// yaml-cpp would pass the bytes on into config.json, which must be UTF-8.
std::size_t first_invalid_utf8_line(std::string_view t) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < t.size(); ++i) {
    auto b = static_cast<unsigned char>(t[i]);
    if (b == '\n') ++line;
    if (b < 0x80) continue;
    std::size_t n = b >= 0xC2 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2 : b >= 0xF0 && b <= 0xF4 ? 3 : 0;
    if (n == 0) return line;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range, narrowed for overlongs and surrogates
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= t.size()) return line;
      auto c = static_cast<unsigned char>(t[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return line;
    }
    i += n;
  }
  return 0;
}

}  // namespace

SpecFile parse_spec(std::string_view text, const std::string& path) {
  if (auto line = first_invalid_utf8_line(text)) throw Error("line " + std::to_string(line) + ": not valid UTF-8");
  SpecFile s = decode_spec(read_document(text));
  s.path = path;
  validate_spec(s);
  return s;
}

}  // namespace specshim::cdi
