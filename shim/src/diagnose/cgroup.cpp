// SPDX-License-Identifier: Apache-2.0
// The cgroup layer: would the container's cgroups let open(2) through for
// the device? cgroup v1 from the container's own devices.list; cgroup v2
// by running the device programs in effect on the request, as the kernel
// runs them;
// systemd's DeviceAllow= when systemd owns the container's unit.
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <charconv>
#include <sstream>

#include "diagnose/diagnose.h"
#include "specshim/base/command.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/live/device_rules.h"

namespace specshim::shim::diagnose {
namespace {

using namespace std::chrono_literals;

// allows decides the whole request at once, as the kernel decides an
// open(O_RDWR): one exception must hold every letter of it. That is the
// program compile_program makes of the rules, run on the request; a list
// runc would refuse is decided letter by letter by the reference instead.
bool allows(const std::vector<live::DeviceRule>& rules, const Device& d) {
  try {
    live::ProgramRun run = live::run_device_program(live::compile_program(rules), d.type, d.major, d.minor, d.access);
    if (run.allow) return *run.allow;
  } catch (const Error&) {
  }
  for (char a : d.access)
    if (!live::reference_decision(rules, live::Access{d.type, d.major, d.minor, a})) return false;
  return true;
}

std::optional<std::int64_t> number_or_any(std::string_view s) {
  if (s == "*") return std::nullopt;
  std::int64_t v = -1;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

constexpr const char* kRuleHint =
    "the spec needs a linux.resources.devices allow rule for it (CDI and device plugins add one with the node); "
    "for a running container: `specshim attach`";

void check_v1(const Container& c, const Device& d, Report& r, std::string_view layer) {
  auto file = *c.cgroups.v1_devices / "devices.list";
  std::vector<live::DeviceRule> rules;
  try {
    std::istringstream lines(fs::read_regular_file(file, 1 << 20));
    for (std::string line; std::getline(lines, line);) {
      // "c 195:0 rwm", "a *:* rwm": the exceptions (or "a" when everything is allowed)
      std::istringstream f(line);
      std::string type, nums, access;
      if (!(f >> type >> nums >> access) || type.size() != 1) continue;
      auto colon = nums.find(':');
      if (colon == std::string::npos) continue;
      rules.push_back(live::DeviceRule{true, type[0], number_or_any(nums.substr(0, colon)),
                                       number_or_any(nums.substr(colon + 1)), access});
    }
  } catch (const Error& e) {
    r.add(layer, d.path, Severity::warn, std::string("cgroup v1: ") + e.what(), "");
    return;
  }
  std::string request = numbers(d) + " " + d.access;
  if (allows(rules, d))
    r.add(layer, d.path, Severity::ok, "devices.list of " + c.cgroups.v1_devices->string() + " allows " + request);
  else
    r.add(layer, d.path, Severity::fail,
          "devices.list of " + c.cgroups.v1_devices->string() + " does not allow " + request, kRuleHint);
}

// check_v2 runs every device program in effect on the container's cgroup2
// directory on the request, as the kernel would run them all; a program
// this process cannot run (helper calls, maps) is judged by the rules runc
// and attach installed instead, and says so.
void check_v2(const Container& c, const Device& d, Report& r, std::string_view layer) {
  const auto& dir = *c.cgroups.unified;
  std::vector<std::uint32_t> programs;
  try {
    programs = live::effective_device_programs(dir);
  } catch (const Error& e) {
    r.add(layer, d.path, Severity::warn, std::string("cgroup v2: ") + e.what(), "");
    return;
  }
  if (programs.empty()) {
    // On a hybrid host runc filters with the v1 controller alone; on a pure v2 host this is worth saying.
    if (!c.cgroups.v1_devices)
      r.add(layer, d.path, Severity::info,
            "no device program on " + dir.string() + ": cgroup v2 filters no device here");
    return;
  }
  std::vector<std::string> denied_by, unknown;  // program ids; unknown with why
  std::string first_unknown;
  for (auto id : programs) {
    live::ProgramRun run;
    try {
      run = live::run_device_program(live::device_program_instructions(id), d.type, d.major, d.minor, d.access);
    } catch (const Error& e) {
      run.error = e.what();
    }
    if (!run.allow) {
      if (unknown.empty()) first_unknown = std::to_string(id);
      unknown.push_back(std::to_string(id) + " (" + run.error + ")");
    } else if (!*run.allow)
      denied_by.push_back(std::to_string(id));
  }
  std::string in_effect = std::to_string(programs.size()) + " device program" + (programs.size() == 1 ? "" : "s") +
                          " in effect on " + dir.string();
  std::string request = numbers(d) + " " + d.access;
  if (denied_by.empty() && unknown.empty()) {
    r.add(layer, d.path, Severity::ok, "the " + in_effect + (programs.size() == 1 ? " allows " : " allow ") + request);
    return;
  }
  // What runc (spec) and attach (record) installed: it tells their program
  // from another agent's, and judges a program that cannot be run.
  std::optional<bool> ours;
  std::string rules_error;
  try {
    live::attach::Record none;
    const live::attach::Record& rec = c.record ? *c.record : none;
    ours = allows(live::attach::enforced_rules(c.spec, rec.create_rules, rec.devices), d);
  } catch (const Error& e) {
    rules_error = e.what();
  }
  if (!denied_by.empty()) {
    std::string ids = join(denied_by, ", ");
    r.add(layer, d.path, Severity::fail, "device program " + ids + " (of " + in_effect + ") denies " + request,
          ours.value_or(false)
              ? "the container's own rules allow it, so another agent attached that program: `bpftool prog show id " +
                    denied_by.front() + "` and `bpftool cgroup tree` show it and where it is attached"
              : std::string(kRuleHint) + "; `bpftool prog dump xlated id " + denied_by.front() + "` shows the program");
    return;
  }
  // What cannot be run is judged by those rules.
  std::string cannot = "cannot run device program " + join(unknown, ", ") + " here";
  if (!ours) {
    r.add(layer, d.path, Severity::warn, cannot + ", nor read the spec's rules: " + rules_error, "");
    return;
  }
  r.add(layer, d.path, *ours ? Severity::warn : Severity::fail,
        cannot + "; the rules runc and attach installed " + (*ours ? "allow " : "deny ") + request,
        *ours ? "`bpftool prog dump xlated id " + first_unknown + "` shows what the program does" : kRuleHint);
}

void check_systemd(const Container& c, const Device& d, Report& r, std::string_view layer) {
  const std::string& unit = c.cgroups.systemd_unit;
  CommandResult out;
  try {
    out = run_command({"systemctl", "show", "--property=DeviceAllow", "--value", unit}, 5s);
  } catch (const Error& e) {
    r.add(layer, d.path, Severity::warn, "systemd unit " + q(unit) + ": " + e.what(), "");
    return;
  }
  if (out.exit_code != 0) {
    r.add(layer, d.path, Severity::warn, "systemctl show " + q(unit) + " failed: " + out.err, "");
    return;
  }
  std::string proc_devices;
  try {
    proc_devices = fs::read_regular_file("/proc/devices", 1 << 16);
  } catch (const Error&) {
  }
  std::string no;
  for (char a : d.access)
    if (!systemd_allows(out.out, proc_devices, d.type, d.major, d.minor, a)) no += a;
  if (no.empty())
    r.add(layer, d.path, Severity::ok, "DeviceAllow= of " + q(unit) + " allows " + numbers(d) + " " + d.access);
  else
    r.add(layer, d.path, Severity::fail, "DeviceAllow= of " + q(unit) + " does not allow " + numbers(d) + " " + no,
          "the next `systemctl daemon-reload` rebuilds the unit's device program from DeviceAllow= without it; "
          "`specshim attach` sets DeviceAllow=, a rule systemd cannot say (`c *:MIN`, a major missing from "
          "/proc/devices) never reaches it");
}

}  // namespace

bool systemd_allows(std::string_view device_allow, std::string_view proc_devices, char type, std::int64_t major,
                    std::int64_t minor, char access) {
  // The majors /proc/devices gives a driver name ("195 nvidia-frontend"), per type.
  auto majors_of = [&](std::string_view name, char t) {
    std::vector<std::int64_t> out;
    std::istringstream lines{std::string(proc_devices)};
    char section = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line == "Character devices:") section = 'c';
      if (line == "Block devices:") section = 'b';
      std::istringstream f(line);
      std::int64_t m;
      std::string n;
      if (section == t && f >> m >> n && ::fnmatch(std::string(name).c_str(), n.c_str(), 0) == 0) out.push_back(m);
    }
    return out;
  };
  std::istringstream entries{std::string(device_allow)};
  for (std::string entry; std::getline(entries, entry);) {
    // "/dev/char/195:0 rw", "char-nvidia-frontend rw", "/dev/nvidia0 rwm"; several may share a line
    std::istringstream f(entry);
    std::string spec, perms;
    while (f >> spec >> perms) {
      if (spec.rfind("DeviceAllow=", 0) == 0) spec = spec.substr(12);
      if (perms.find(access) == std::string::npos) continue;
      for (auto [prefix, t] : {std::pair{std::string("/dev/char/"), 'c'}, std::pair{std::string("/dev/block/"), 'b'}})
        if (spec.rfind(prefix, 0) == 0 && t == type) {
          std::string nums = spec.substr(prefix.size());
          auto colon = nums.find(':');
          if (colon == std::string::npos) continue;
          auto M = number_or_any(nums.substr(0, colon)), m = number_or_any(nums.substr(colon + 1));
          if ((!M || *M == major) && (!m || *m == minor)) return true;
        }
      for (auto [prefix, t] : {std::pair{std::string("char-"), 'c'}, std::pair{std::string("block-"), 'b'}})
        if (spec.rfind(prefix, 0) == 0 && t == type) {
          std::string name = spec.substr(prefix.size());
          if (name == "*") return true;
          std::int64_t n = -1;
          auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
          if (ec == std::errc() && end == name.data() + name.size() && n == major) return true;
          for (auto M : majors_of(name, t))
            if (M == major) return true;
        }
      if (spec.rfind("/dev/", 0) == 0 && spec.rfind("/dev/char/", 0) != 0 && spec.rfind("/dev/block/", 0) != 0) {
        struct stat st {};
        if (::stat(spec.c_str(), &st) == 0 && (S_ISBLK(st.st_mode) ? 'b' : 'c') == type &&
            (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && static_cast<std::int64_t>(::major(st.st_rdev)) == major &&
            static_cast<std::int64_t>(::minor(st.st_rdev)) == minor)
          return true;
      }
    }
  }
  return false;
}

void check_cgroup(const Container& c, const Device& d, Report& r, std::string_view layer) {
  if (!d.numbers_known) return;  // the node layer said why
  if (c.cgroups.v1_devices) check_v1(c, d, r, layer);
  if (c.cgroups.unified) check_v2(c, d, r, layer);
  if (!c.cgroups.systemd_unit.empty() && live::systemd_is_pid1()) check_systemd(c, d, r, layer);
  if (!c.cgroups.v1_devices && !c.cgroups.unified)
    r.add(layer, d.path, Severity::warn,
          "found neither a v1 devices cgroup nor a cgroup2 directory for the container's process",
          "is /sys/fs/cgroup mounted in this mount namespace?");
}

}  // namespace specshim::shim::diagnose
