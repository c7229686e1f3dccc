// SPDX-License-Identifier: Apache-2.0
// CDI (Container Device Interface) names, spec files and the spec-dir scan.
// Semantics follow container-device-interface v1.1.0 (specs-go/config.go,
// pkg/parser/parser.go, pkg/cdi/spec.go, pkg/cdi/cache.go); the places where
// specshim deliberately differs are listed in docs/cdi.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/error.h"

namespace specshim {
class Spec;
}
namespace specshim::config {
class Section;
}

namespace specshim::cdi {

// Requests: every annotation whose key starts with kAnnotationPrefix, and
// kDevicesAnnotation, where other modifiers (device-plugin) hand over the CDI
// names they were given. Values are comma-separated qualified names.
inline constexpr const char* kAnnotationPrefix = "cdi.k8s.io/";
inline constexpr const char* kDevicesAnnotation = "specshim.io/cdi-devices";

// requested_devices lists the qualified names a spec asks for, without
// repeats: the cdi.k8s.io/* annotations in key order, then
// kDevicesAnnotation. Throws Error naming an annotation that is not a string
// or holds an invalid name.
std::vector<std::string> requested_devices(const Spec& spec);

// ---- names: VENDOR/CLASS=NAME ----

// quote renders s in double quotes with '"', '\\' and non-printable bytes
// escaped, so names from spec files and annotations print safely.
std::string quote(std::string_view s);
// quote_char renders one byte in single quotes, escaped like quote.
std::string quote_char(char c);

struct QualifiedName {
  std::string vendor;
  std::string cls;
  std::string name;

  std::string kind() const { return vendor + "/" + cls; }
  std::string str() const { return vendor + "/" + cls + "=" + name; }
};

// check_vendor, check_class and check_device_name return "" for a valid name
// and otherwise why it is invalid ("should start with a letter"). A vendor or
// class starts with a letter, continues with [A-Za-z0-9_.-] and ends with a
// letter or digit; a device name may also start with a digit and contain ':'.
std::string check_vendor(std::string_view vendor);
std::string check_class(std::string_view cls);
std::string check_device_name(std::string_view name);

// split_kind splits "VENDOR/CLASS" at the first '/'. Either part may be empty.
std::pair<std::string_view, std::string_view> split_kind(std::string_view kind);

// parse_qualified_name parses "VENDOR/CLASS=NAME" (split at the first '=',
// then at the first '/'). On failure returns nullopt and, when why is given,
// sets it to the reason ("missing class", "invalid vendor \"x\": ...").
std::optional<QualifiedName> parse_qualified_name(std::string_view s, std::string* why = nullptr);

// ---- spec file model (CDI spec 0.3.0 ... 1.1.0) ----

struct DeviceNode {
  std::string path;
  std::string host_path;
  std::string type;  // "", b, c, u, p
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::optional<std::uint32_t> file_mode;
  std::string permissions;  // subset of "rwm", "" = rwm
  std::optional<std::uint32_t> uid;
  std::optional<std::uint32_t> gid;
  int line = 0;

  bool operator==(const DeviceNode&) const = default;
};

struct Mount {
  std::string host_path;
  std::string container_path;
  std::vector<std::string> options;
  std::string type;
  int line = 0;

  bool operator==(const Mount&) const = default;
};

struct Hook {
  std::string hook_name;  // prestart, createRuntime, createContainer, startContainer, poststart, poststop
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<std::int64_t> timeout;
  int line = 0;

  bool operator==(const Hook&) const = default;
};

struct IntelRdt {
  std::string clos_id;
  std::string l3_cache_schema;
  std::string mem_bw_schema;
  std::optional<std::vector<std::string>> schemata;  // present (even empty) needs 1.1.0
  bool enable_monitoring = false;
  int line = 0;

  bool operator==(const IntelRdt&) const = default;
};

struct NetDevice {
  std::string host_interface_name;
  std::string name;
  int line = 0;

  bool operator==(const NetDevice&) const = default;
};

struct ContainerEdits {
  std::vector<std::string> env;
  std::vector<DeviceNode> device_nodes;
  std::vector<NetDevice> net_devices;
  std::vector<Hook> hooks;
  std::vector<Mount> mounts;
  std::optional<IntelRdt> intel_rdt;
  std::vector<std::uint32_t> additional_gids;

  bool empty() const;
  bool operator==(const ContainerEdits&) const = default;
};

struct Device {
  std::string name;
  std::map<std::string, std::string> annotations;
  ContainerEdits edits;
  int line = 0;

  bool operator==(const Device&) const = default;
};

struct SpecFile {
  std::string path;
  int priority = 0;  // index of its spec dir: a higher one overrides a lower one
  std::string version;
  std::string kind;
  std::map<std::string, std::string> annotations;
  ContainerEdits edits;  // spec-level edits, applied once before the file's first requested device
  std::vector<Device> devices;
  int version_line = 1;
  int kind_line = 1;

  bool operator==(const SpecFile&) const = default;
};

// parse_spec decodes and validates one spec file. text may be JSON or YAML
// (a document starting with '{' is read as JSON first). Throws Error whose
// message starts with "line N: " when the problem has a line. The whole file
// is rejected on the first problem, as upstream does.
SpecFile parse_spec(std::string_view text, const std::string& path);

// complete_node fills what a device node leaves to the host, as upstream's
// fillMissingInfo: the host node (hostPath, else path) is looked at with
// lstat; an unset fileMode takes the host's; a node with a type and a major
// (or type p) is otherwise used as written; else type, major and minor come
// from the host; an unset uid/gid takes the spec's process user (when not
// root). Unlike upstream, a missing host node is always an error. Throws
// Error naming the node.
DeviceNode complete_node(DeviceNode node, const Spec& spec);

// minimum_version is the lowest cdiVersion whose fields cover what spec uses
// ("0.3.0" at least), with the feature that needs it ("" for 0.3.0).
std::pair<std::string, std::string> minimum_version(const SpecFile& spec);

// ---- spec directories ----

// read_spec_dirs reads the [cdi] table: the spec dirs in priority order
// (default /etc/cdi, then /var/run/cdi), or nullopt when `enabled = false`.
// Throws config errors.
std::optional<std::vector<std::string>> read_spec_dirs(config::Section& s);
// read_cache_dir reads `cache-dir` of the [cdi] table: the parse cache's
// directory (default kDefaultCacheDir), or "" when it is set to "" (off).
std::string read_cache_dir(config::Section& s);

inline constexpr std::size_t kMaxSpecFileBytes = 4 << 20;

struct SpecFileResult {
  enum class Status { loaded, failed, skipped };
  std::string path;
  int priority = 0;
  Status status = Status::failed;
  std::shared_ptr<const SpecFile> spec;  // loaded only
  std::string error;                     // failed only: "line 3: unknown field \"x\"" or a read error
};

struct DeviceRef {
  std::shared_ptr<const SpecFile> spec;
  const Device* device = nullptr;
};

// Registry is the result of one scan: every spec file seen, in scan order,
// and the devices they define.
struct Registry {
  std::vector<std::string> dirs;
  std::vector<SpecFileResult> files;
  std::vector<std::string> dir_errors;  // "read spec dir `/etc/cdi`: Permission denied"
  std::map<std::string, DeviceRef> devices;
  // Names defined by two files of the same, highest priority: unusable, with
  // the files that define them.
  std::map<std::string, std::vector<std::string>> conflicts;

  const DeviceRef* find(const std::string& qualified_name) const;
};

// load_specs scans dirs in order (a later dir overrides an earlier one), each
// in byte order of file names, taking *.json and *.yaml files and skipping
// subdirectories; a missing dir is skipped. A file that fails to load is
// recorded, never fatal. With wanted (qualified device names; "kind=" for
// every file of a kind) given, a file
// whose bytes cannot define any of them is recorded as skipped, unparsed: it
// has no backslash escape and lacks the kind or the name as a whole value.
// Skipping such files changes no result for the wanted devices.
// With cache given, a file is parsed through it (specshim/node/cdi_cache.h).
class ParseCache;
Registry load_specs(const std::vector<std::string>& dirs, const std::set<std::string>* wanted = nullptr,
                    const ParseCache* cache = nullptr);

// present tells whether every node a device opens is here, in this
// runtime's /dev: a device node at its host path (not through a symlink),
// of the type and numbers the edits give when they give them. A device that
// opens no node is present. ([[env-devices]] scope = "visible", doctor.)
bool present(const DeviceRef& ref);

// unresolvable_error is the error for requested names reg does not define:
// it names them and everything that may explain why (the spec files that
// failed to load, conflicting definitions, unreadable spec dirs, the dirs
// searched); upstream reports only the names. origins says where a name
// came from when another modifier handed it over ("DRA claim `ns/c` of
// container `main`, driver `gpu.example.com`, ...").
Error unresolvable_error(const std::vector<std::string>& missing, const Registry& reg,
                         const std::map<std::string, std::string>& origins = {});

}  // namespace specshim::cdi
