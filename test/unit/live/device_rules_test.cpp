// SPDX-License-Identifier: Apache-2.0
// live::device_rules: reading rules, runc's defaults, the v1 controller's
// decision, and the compiled cgroup v2 program run (live::run_device_program)
// against that decision.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/live/device_rules.h"

using namespace specshim;
using namespace specshim::live;
using specshim::test::error_of;

namespace {

constexpr auto kAny = std::nullopt;

DeviceRule allow(char type, std::optional<std::int64_t> major, std::optional<std::int64_t> minor,
                 std::string access = "rwm") {
  return {true, type, major, minor, std::move(access)};
}
DeviceRule deny(char type, std::optional<std::int64_t> major, std::optional<std::int64_t> minor,
                std::string access = "rwm") {
  return {false, type, major, minor, std::move(access)};
}

std::vector<std::string> strs(const std::vector<DeviceRule>& rules) {
  std::vector<std::string> out;
  for (const auto& r : rules) out.push_back((r.allow ? "allow " : "deny ") + str(r));
  return out;
}

std::string list_text(const std::vector<DeviceRule>& rules) {
  std::string out;
  for (const auto& s : strs(rules)) out += s + "; ";
  return out;
}

// decide runs the compiled program on one request ("rw": several bits).
bool decide(const std::vector<bpf_insn>& prog, char type, std::int64_t major, std::int64_t minor,
            const std::string& access) {
  ProgramRun run = run_device_program(prog, type, major, minor, access);
  INFO(run.error);
  REQUIRE(run.allow);
  return *run.allow;
}

const std::vector<std::int64_t> kNumbers = {0, 1, 3, 5, 10, 11, 136, 200, 4095, 0x80000005LL, 0xffffffffLL};

// check_all compares the program with reference_decision on every type,
// number pair from kNumbers and single access, and returns how many
// accesses it allowed (so callers can tell a list that allows nothing).
int check_all(const std::vector<DeviceRule>& rules) {
  INFO("rules: " << list_text(rules));
  std::vector<bpf_insn> prog = compile_program(rules);
  int allowed = 0;
  for (char type : {'c', 'b'})
    for (auto major : kNumbers)
      for (auto minor : kNumbers)
        for (char a : {'r', 'w', 'm'}) {
          bool want = reference_decision(rules, {type, major, minor, a});
          bool got = decide(prog, type, major, minor, std::string(1, a));
          if (want != got) {
            INFO(type << " " << major << ":" << minor << " " << a << ": reference " << want << ", program " << got);
            REQUIRE(want == got);
          }
          allowed += got;
        }
  return allowed;
}

Spec spec_with(const std::string& devices) {
  return Spec::parse(R"({"linux": {"resources": {"devices": )" + devices + "}}}");
}

}  // namespace

TEST_CASE("live rules: str prints devices.allow syntax") {
  CHECK(str(allow('c', 1, 11, "rw")) == "c 1:11 rw");
  CHECK(str(allow('a', kAny, kAny)) == "a *:* rwm");
  CHECK(str(deny('b', 8, kAny, "m")) == "b 8:* m");
  CHECK(str(allow('c', kAny, 3, "r")) == "c *:3 r");
}

TEST_CASE("live rules: runc's default rules, in runc's order") {
  CHECK(strs(runc_default_rules()) ==
        std::vector<std::string>{"allow c *:* m", "allow b *:* m", "allow c 1:3 rwm", "allow c 1:8 rwm",
                                 "allow c 1:7 rwm", "allow c 5:0 rwm", "allow c 1:5 rwm", "allow c 1:9 rwm",
                                 "allow c 136:* rwm", "allow c 5:2 rwm", "allow c 10:200 rwm"});
}

TEST_CASE("live rules: read_device_rules reads linux.resources.devices as runc does") {
  auto rules = read_device_rules(spec_with(R"([
    {"allow": false, "access": "rwm"},
    {"allow": true, "type": "c", "major": 1, "minor": 11, "access": "wr"},
    {"allow": true, "type": "b", "major": 8, "minor": null, "access": "mrr"},
    {"allow": false, "type": "", "access": "m"},
    {"allow": true, "type": "c", "major": 4294967295, "minor": 0, "access": "r"}
  ])"));
  CHECK(strs(rules) == std::vector<std::string>{"deny a *:* rwm", "allow c 1:11 rw", "allow b 8:* rm", "deny a *:* m",
                                                "allow c 4294967295:0 r"});
  CHECK(read_device_rules(Spec::parse("{}")).empty());
  CHECK(read_device_rules(Spec::parse(R"({"linux": {"resources": {}}})")).empty());
  CHECK(read_device_rules(spec_with("null")).empty());
}

TEST_CASE("live rules: read_device_rules names the index of a bad entry") {
  auto error = [](const std::string& devices) {
    return error_of<Error>([&] { read_device_rules(spec_with(devices)); });
  };
  CHECK(error(R"({"allow": true})") == "`linux.resources.devices`: want a list, got {\"allow\":true}");
  CHECK(error(R"([{"allow": true, "access": "r"}, 7])") == "`linux.resources.devices[1]`: want an object, got 7");
  CHECK(error(R"([{"access": "r"}])") == "`linux.resources.devices[0].allow`: missing, want true or false");
  CHECK(error(R"([{"allow": "yes", "access": "r"}])") ==
        "`linux.resources.devices[0].allow`: \"yes\", want true or false");
  CHECK(error(R"([{"allow": true, "type": "u", "access": "r"}])") ==
        "`linux.resources.devices[0].type`: \"u\" is not \"a\", \"b\" or \"c\"");
  CHECK(error(R"([{"allow": true, "type": "c", "major": -1, "access": "r"}])") ==
        "`linux.resources.devices[0].major`: -1 is not an integer 0..4294967295 or null");
  CHECK(error(R"([{"allow": true, "type": "c", "minor": 4294967296, "access": "r"}])") ==
        "`linux.resources.devices[0].minor`: 4294967296 is not an integer 0..4294967295 or null");
  CHECK(error(R"([{"allow": true, "type": "c", "minor": 1.5, "access": "r"}])") ==
        "`linux.resources.devices[0].minor`: 1.5 is not an integer 0..4294967295 or null");
  CHECK(error(R"([{"allow": true, "type": "c", "access": ""}])") ==
        "`linux.resources.devices[0].access`: \"\" is not a non-empty combination of r, w and m");
  CHECK(error(R"([{"allow": true, "type": "c", "access": "rx"}])") ==
        "`linux.resources.devices[0].access`: \"rx\" is not a non-empty combination of r, w and m");
  CHECK(error(R"([{"allow": true, "type": "c"}])") ==
        "`linux.resources.devices[0].access`: missing is not a non-empty combination of r, w and m");
}

TEST_CASE("live rules: container_rules are the spec's, then runc's defaults but those linux.devices replaces") {
  auto spec = Spec::parse(R"({"linux": {
    "devices": [{"path": "/dev/null", "type": "c", "major": 1, "minor": 3}, {"path": "/dev/nvidia0"}],
    "resources": {"devices": [{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 195,
                   "minor": 0, "access": "rw"}]}}})");
  auto rules = container_rules(spec);
  std::vector<std::string> want = {"deny a *:* rwm", "allow c 195:0 rw"};
  for (const auto& r : runc_default_rules())
    if (r != allow('c', 1, 3)) want.push_back("allow " + str(r));
  CHECK(strs(rules) == want);
  CHECK(container_rules(Spec::parse("{}")).size() == runc_default_rules().size());
}

TEST_CASE("live rules: reference_decision follows the v1 controller, not last-match-wins") {
  auto d = [](const std::vector<DeviceRule>& rules, char type, std::int64_t major, std::int64_t minor, char a) {
    return reference_decision(rules, {type, major, minor, a});
  };
  // Nothing: deny. A single allow: that device only.
  CHECK_FALSE(d({}, 'c', 1, 3, 'r'));
  CHECK(d({allow('c', 1, 3, "r")}, 'c', 1, 3, 'r'));
  CHECK_FALSE(d({allow('c', 1, 3, "r")}, 'c', 1, 3, 'w'));
  CHECK_FALSE(d({allow('c', 1, 3, "r")}, 'b', 1, 3, 'r'));
  // An "a" rule resets everything before it, wherever it is and whatever its access says.
  CHECK_FALSE(d({allow('c', 1, 3), deny('a', kAny, kAny, "m")}, 'c', 1, 3, 'r'));
  CHECK(d({deny('c', 1, 3), allow('a', 7, kAny, "r")}, 'c', 1, 3, 'w'));
  // A deny takes access from exactly its key: the wildcard deny leaves the
  // 1:3 exception alone (last-match-wins would deny it) ...
  CHECK(d({allow('c', 1, 3), deny('c', 1, kAny)}, 'c', 1, 3, 'r'));
  // ... and the specific deny leaves the wildcard (the kernel ignores it; compile_program refuses it).
  CHECK(d({allow('c', 1, kAny), deny('c', 1, 3)}, 'c', 1, 3, 'r'));
  // Allow-by-default: an allow cannot open a hole in a wider deny either.
  CHECK_FALSE(d({allow('a', kAny, kAny), deny('c', 1, kAny), allow('c', 1, 3)}, 'c', 1, 3, 'r'));
  CHECK(d({allow('a', kAny, kAny), deny('c', 1, 3, "w"), allow('c', 1, 3, "w")}, 'c', 1, 3, 'w'));
  // Access bits of one key: union and removal per bit.
  CHECK(d({allow('c', 1, 3, "r"), allow('c', 1, 3, "w")}, 'c', 1, 3, 'w'));
  CHECK(d({allow('c', 1, 3, "rw"), deny('c', 1, 3, "w")}, 'c', 1, 3, 'r'));
  CHECK_FALSE(d({allow('c', 1, 3, "rw"), deny('c', 1, 3, "w")}, 'c', 1, 3, 'w'));
}

TEST_CASE("live rules: the program decides as the reference on hand-picked lists") {
  const std::vector<std::vector<DeviceRule>> lists = {
      {},
      {allow('a', kAny, kAny)},
      {deny('a', kAny, kAny)},
      {allow('a', kAny, kAny), deny('c', 1, 11)},
      {allow('a', kAny, kAny), deny('c', 1, 11, "w"), deny('b', kAny, kAny, "m")},
      {deny('a', kAny, kAny), allow('c', 1, 11, "rw")},
      {allow('c', kAny, kAny, "m"), allow('c', 1, kAny, "r"), allow('b', kAny, 5, "w")},
      {allow('c', 1, 3), deny('c', 1, kAny)},
      {allow('c', 1, 3, "rw"), deny('c', 1, 3, "w"), allow('c', 1, 3, "m")},
      {allow('c', 0xffffffffLL, 0x80000005LL, "rw"), allow('b', 4095, kAny)},
      {allow('c', 1, 3), deny('a', kAny, kAny, "r"), allow('c', 136, kAny)},
      runc_default_rules(),
  };
  for (const auto& rules : lists) check_all(rules);
  // Empty list: nothing at all. Allow-all: everything.
  CHECK(check_all({}) == 0);
  CHECK(check_all({allow('a', kAny, kAny)}) == 2 * 11 * 11 * 3);
}

TEST_CASE("live rules: runc's defaults plus a container's spec rules and attached devices") {
  auto spec = spec_with(
      R"([{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 195, "minor": 255, "access": "rw"}])");
  auto rules = container_rules(spec);
  rules.push_back(allow('c', 1, 11, "rw"));
  check_all(rules);
  auto prog = compile_program(rules);
  CHECK(decide(prog, 'c', 1, 11, "w"));
  CHECK(decide(prog, 'c', 1, 3, "rw"));
  CHECK(decide(prog, 'c', 136, 4, "rw"));
  CHECK(decide(prog, 'b', 8, 0, "m"));
  CHECK_FALSE(decide(prog, 'b', 8, 0, "r"));
  CHECK_FALSE(decide(prog, 'c', 1, 12, "r"));
  CHECK(decide(prog, 'c', 195, 255, "rw"));
  CHECK_FALSE(decide(prog, 'c', 195, 254, "r"));
  // Small: 6 loads and shifts, at most 7 instructions per rule, 2 at the end.
  CHECK(prog.size() <= 6 + 7 * rules.size() + 2);
  INFO("program of " << rules.size() << " rules: " << prog.size() << " instructions");
  CHECK(prog.size() < 100);
}

TEST_CASE(
    "live rules: a request of several bits needs one exception holding all (deny by default) and is denied by "
    "any overlap (allow by default), as the v1 controller decides") {
  auto prog = compile_program({allow('c', 1, 3, "r"), allow('c', 1, 3, "w")});
  CHECK(decide(prog, 'c', 1, 3, "rw"));
  prog = compile_program({allow('c', 1, kAny, "r"), allow('c', 1, 3, "w")});
  CHECK(decide(prog, 'c', 1, 3, "r"));
  CHECK(decide(prog, 'c', 1, 3, "w"));
  CHECK_FALSE(decide(prog, 'c', 1, 3, "rw"));
  prog = compile_program({allow('a', kAny, kAny), deny('c', 1, 3, "w")});
  CHECK(decide(prog, 'c', 1, 3, "r"));
  CHECK_FALSE(decide(prog, 'c', 1, 3, "rw"));
  CHECK(decide(prog, 'c', 1, 4, "rw"));
}

TEST_CASE("live rules: a deny that would punch a hole into a wildcard rule is refused, as runc refuses it") {
  CHECK(error_of<Error>([] {
          compile_program({allow('c', 1, kAny), deny('c', 1, 3, "w")});
        }) ==
        "device rule `c 1:3 w` cannot take access from the wider rule `c 1:* rwm` before it (the cgroup v1 "
        "controller would ignore it; runc refuses it)");
  CHECK_THROWS_AS(compile_program({allow('a', kAny, kAny), deny('b', kAny, kAny, "m"), allow('b', 8, 0, "m")}), Error);
  // No overlap in access, or a narrower rule before the wider deny: fine.
  CHECK_NOTHROW(compile_program({allow('c', 1, kAny, "r"), deny('c', 1, 3, "w")}));
  CHECK_NOTHROW(compile_program({allow('c', 1, 3), deny('c', 1, kAny)}));
  CHECK_NOTHROW(compile_program({allow('c', 1, kAny), deny('a', kAny, kAny), deny('c', 1, 3)}));
}

TEST_CASE("live rules: randomized rule lists (seeded) decide as the reference") {
  std::mt19937 rng(12);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<std::int64_t> numbers = {0, 1, 3, 11, 136, 0xffffffffLL};
  const std::vector<std::string> accesses = {"r", "w", "m", "rw", "rm", "wm", "rwm"};
  int compiled = 0, refused = 0;
  for (int n = 0; n < 3000; ++n) {
    std::vector<DeviceRule> rules;
    std::size_t len = pick(9);
    for (std::size_t i = 0; i < len; ++i) {
      DeviceRule r;
      r.allow = pick(2);
      r.type = pick(8) == 0 ? 'a' : pick(2) ? 'c' : 'b';
      if (pick(3)) r.major = numbers[pick(numbers.size())];
      if (pick(3)) r.minor = numbers[pick(numbers.size())];
      r.access = accesses[pick(accesses.size())];
      rules.push_back(r);
    }
    try {
      compile_program(rules);
    } catch (const Error&) {
      ++refused;
      continue;
    }
    check_all(rules);
    ++compiled;
  }
  INFO(compiled << " compiled, " << refused << " refused");
  CHECK(compiled > 2000);
  CHECK(refused > 0);
}
