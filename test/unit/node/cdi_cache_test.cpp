// SPDX-License-Identifier: Apache-2.0
// The CDI parse cache: its encoding round-trips every spec the golden cases
// use and a failure's message, refuses anything that is not an entry for
// exactly these bytes and this build, remembers a file that failed until its
// bytes change, and ParseCache uses only a root-only directory of its own.
#include "specshim/node/cdi_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::cdi;
using specshim::test::read_file;
using specshim::test::TempDir;
using specshim::test::write_file;
namespace stdfs = std::filesystem;

namespace {

const std::string kText = R"(cdiVersion: 1.1.0
kind: vendor.com/gpu
annotations: {k: v}
containerEdits:
  env: [A=1]
  additionalGids: [5, 0]
  intelRdt: {closID: c, schemata: [], enableMonitoring: true}
  deviceNodes:
  - {path: /dev/ctl, hostPath: /dev/null, type: c, major: 1, minor: 3, fileMode: 438, permissions: rw, uid: 7, gid: 8}
devices:
- name: "0"
  annotations: {a: b}
  containerEdits:
    mounts:
    - {hostPath: /h, containerPath: /c, options: [ro, bind], type: bind}
    hooks:
    - {hookName: createContainer, path: /bin/hook, args: [hook, x], env: [E=1], timeout: 5}
    netDevices:
    - {hostInterfaceName: eth1, name: net1}
)";

// The specs of the golden cases that parse: every field the decoder knows.
std::vector<std::string> golden_spec_texts() {
  std::vector<std::string> texts;
  for (const auto& e : stdfs::recursive_directory_iterator(SPECSHIM_TEST_DATA_DIR "/golden/cdi")) {
    auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".yaml" && ext != ".json")) continue;
    std::string text = read_file(e.path());
    try {
      parse_spec(text, e.path());
      texts.push_back(text);
    } catch (const Error&) {
    }
  }
  return texts;
}

std::size_t entries(const stdfs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : stdfs::directory_iterator(dir)) n += e.path().extension() == ".cdi";
  return n;
}

}  // namespace

TEST_CASE("cdi cache: an entry decodes to what parse_spec returned, for every golden spec") {
  auto texts = golden_spec_texts();
  texts.push_back(kText);
  REQUIRE(texts.size() > 20);
  for (const auto& text : texts) {
    SpecFile parsed = parse_spec(text, "");
    auto decoded = decode_entry(encode_entry(text, "build-1", parsed), text, "build-1");
    REQUIRE(decoded);
    CHECK(*decoded == Parsed{parsed});
  }
}

TEST_CASE("cdi cache: an entry is refused for other bytes, another build, or any damage") {
  SpecFile parsed = parse_spec(kText, "");
  std::string entry = encode_entry(kText, "build-1", parsed);
  CHECK_FALSE(decode_entry(entry, kText + " ", "build-1"));
  std::string other = kText;
  other[other.find("eth1")] = 'f';
  CHECK_FALSE(decode_entry(entry, other, "build-1"));
  CHECK_FALSE(decode_entry(entry, kText, "build-2"));
  CHECK_FALSE(decode_entry(entry, kText, ""));
  CHECK_FALSE(decode_entry(entry + "x", kText, "build-1"));
  for (std::size_t n = 0; n < entry.size(); ++n) CHECK_FALSE(decode_entry(entry.substr(0, n), kText, "build-1"));
  // A flipped byte in the body decodes to something else or not at all, never
  // to a crash (the fuzzer covers arbitrary bytes).
  std::string header = encode_entry(kText, "build-1", SpecFile{});
  for (std::size_t i = header.size() - 40; i < entry.size(); ++i) {
    std::string bad = entry;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto decoded = decode_entry(bad, kText, "build-1");
    if (decoded) CHECK_FALSE(*decoded == Parsed{parsed});
  }
}

TEST_CASE("cdi cache: a failure's entry decodes to its message, and only for its bytes and build") {
  const std::string bad = kText + "bogus: 1\n";
  ParseFailure failure{"line 21: unknown field \"bogus\""};
  std::string entry = encode_entry(bad, "build-1", failure);
  auto decoded = decode_entry(entry, bad, "build-1");
  REQUIRE(decoded);
  CHECK(*decoded == Parsed{failure});
  CHECK_FALSE(decode_entry(entry, kText, "build-1"));
  CHECK_FALSE(decode_entry(entry, bad, "build-2"));
  CHECK_FALSE(decode_entry(entry + "x", bad, "build-1"));
  for (std::size_t n = 0; n < entry.size(); ++n) CHECK_FALSE(decode_entry(entry.substr(0, n), bad, "build-1"));
  // A spec's entry and a failure's for the same bytes differ.
  CHECK(entry != encode_entry(bad, "build-1", SpecFile{}));
}

TEST_CASE("cdi cache: names spread by bytes and build") {
  CHECK(entry_name(kText, "a") == entry_name(kText, "a"));
  CHECK(entry_name(kText, "a") != entry_name(kText, "b"));
  CHECK(entry_name(kText, "a") != entry_name(kText + "\n", "a"));
  CHECK(entry_name("", "a").size() == 20);
  CHECK(entry_name("", "a").ends_with(".cdi"));
}

TEST_CASE("cdi cache: this binary has a build ID") {
  // Linked with --build-id (GCC's default on Debian); without one nothing is cached.
  CHECK(build_id().size() >= 16);
  CHECK(build_id().find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("cdi cache: parse stores, then hits, and a damaged entry is parsed and replaced") {
  TempDir tmp;
  stdfs::path dir = tmp / "specshim/cdi-cache";  // neither exists yet
  ParseCache cache(dir);
  SpecFile first = cache.parse(kText, "/etc/cdi/a.yaml");
  CHECK(cache.last() == "stored");
  CHECK(first == parse_spec(kText, "/etc/cdi/a.yaml"));
  CHECK((stdfs::status(dir).permissions() & stdfs::perms::all) == stdfs::perms::owner_all);
  CHECK((stdfs::status(dir.parent_path()).permissions() & stdfs::perms::all) == stdfs::perms::owner_all);
  stdfs::path entry = dir / entry_name(kText, build_id());
  REQUIRE(stdfs::is_regular_file(entry));
  CHECK((stdfs::status(entry).permissions() & stdfs::perms::all) ==
        (stdfs::perms::owner_read | stdfs::perms::owner_write));

  ParseCache again(dir);
  SpecFile hit = again.parse(kText, "/var/run/cdi/b.yaml");
  CHECK(again.last() == "hit");
  CHECK(hit.path == "/var/run/cdi/b.yaml");
  hit.path = first.path;
  CHECK(hit == first);

  std::string bytes = read_file(entry);
  write_file(entry, bytes.substr(0, bytes.size() - 10), 0600);
  SpecFile reparsed = again.parse(kText, "/etc/cdi/a.yaml");
  CHECK(again.last() == "stored");
  CHECK(reparsed == first);
  CHECK(read_file(entry) == bytes);
  CHECK(entries(dir) == 1);
}

namespace {

// kBad fails to parse: its error has a line, as a real parse gives it.
const std::string kBad = "cdiVersion: 0.5.0\nkind: vendor.com/gpu\ndevices:\n- name: x\n  bogus: 1\n";

std::string parse_error(const std::string& text) {
  try {
    parse_spec(text, "/etc/cdi/bad.yaml");
  } catch (const Error& e) {
    return describe(e);
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("cdi cache: a spec that fails to parse throws as parse_spec does, and is not parsed again until it changes") {
  TempDir tmp;
  stdfs::path dir = tmp / "cache";
  const std::string expected = parse_error(kBad);
  REQUIRE_THAT(expected, Catch::StartsWith("line 5: "));
  ParseCache cache(dir);
  REQUIRE_THROWS_WITH(cache.parse(kBad, "/etc/cdi/bad.yaml"), expected);
  CHECK(cache.last() == "stored");
  stdfs::path entry = dir / entry_name(kBad, build_id());
  CHECK(read_file(entry) == encode_entry(kBad, build_id(), ParseFailure{expected}));

  // The next create throws the same error from the entry.
  ParseCache next(dir);
  REQUIRE_THROWS_WITH(next.parse(kBad, "/etc/cdi/bad.yaml"), expected);
  CHECK(next.last() == "hit");
  // ... and does not parse the file: an entry saying something else is what it reports.
  write_file(entry, encode_entry(kBad, build_id(), ParseFailure{"line 1: what the entry says"}), 0600);
  REQUIRE_THROWS_WITH(ParseCache(dir).parse(kBad, "/etc/cdi/bad.yaml"), "line 1: what the entry says");

  // Changed bytes are parsed again: still failing (now at another line), then fixed.
  const std::string moved = "# a comment\n" + kBad;
  ParseCache changed(dir);
  REQUIRE_THROWS_WITH(changed.parse(moved, "/etc/cdi/bad.yaml"), parse_error(moved));
  CHECK(changed.last() == "stored");
  CHECK_THAT(parse_error(moved), Catch::StartsWith("line 6: "));
  CHECK(changed.parse(kText, "/etc/cdi/bad.yaml") == parse_spec(kText, "/etc/cdi/bad.yaml"));
  CHECK(changed.last() == "stored");
  CHECK(entries(dir) == 3);

  // dry-run reports it the same and stores nothing.
  ParseCache ro(tmp / "ro");
  ro.read_only(true);
  REQUIRE_THROWS_WITH(ro.parse(kBad, "/etc/cdi/bad.yaml"), expected);
  CHECK_FALSE(stdfs::exists(tmp / "ro"));
}

// Through a spec dir, as a create loads it: the failed file's result is the
// one a scan without the cache gives, and its bytes are parsed once.
TEST_CASE("cdi cache: a spec dir's broken file is reported the same from the cache, and parsed again once changed") {
  TempDir tmp;
  stdfs::path specs = tmp / "cdi", dir = tmp / "cache";
  stdfs::create_directory(specs);
  write_file(specs / "bad.yaml", kBad);
  const std::string path = (specs / "bad.yaml").string();
  auto load = [&](const ParseCache* cache) {
    Registry reg = load_specs({specs.string()}, nullptr, cache);
    REQUIRE(reg.files.size() == 1);
    return reg.files[0];
  };
  SpecFileResult uncached = load(nullptr);
  CHECK(uncached.status == SpecFileResult::Status::failed);
  CHECK_THAT(uncached.error, Catch::StartsWith("line 5: "));
  for (int create = 0; create < 3; ++create) {
    ParseCache cache(dir);
    SpecFileResult r = load(&cache);
    CHECK(r.status == uncached.status);
    CHECK(r.error == uncached.error);
    CHECK(r.path == path);
    CHECK_FALSE(r.spec);
    CHECK(cache.last() == (create == 0 ? "stored" : "hit"));
  }
  write_file(specs / "bad.yaml", kBad + "# edited\n");
  ParseCache cache(dir);
  CHECK(load(&cache).error == uncached.error);
  CHECK(cache.last() == "stored");
  write_file(specs / "bad.yaml", kText);
  CHECK(load(&cache).status == SpecFileResult::Status::loaded);
  CHECK(cache.last() == "stored");
}

TEST_CASE("cdi cache: a directory open to others, a symlink or a file is not used") {
  TempDir tmp;
  SpecFile expected = parse_spec(kText, "/etc/cdi/a.yaml");
  SECTION("group-readable") {
    stdfs::create_directory(tmp / "cache");
    ::chmod((tmp / "cache").c_str(), 0750);
    ParseCache cache(tmp / "cache");
    CHECK(cache.parse(kText, "/etc/cdi/a.yaml") == expected);
    CHECK_THAT(cache.last(), Catch::Contains("closed to group and others"));
    CHECK(entries(tmp / "cache") == 0);
  }
  SECTION("a symlink to a good directory") {
    stdfs::create_directory(tmp / "real");
    ::chmod((tmp / "real").c_str(), 0700);
    stdfs::create_directory_symlink(tmp / "real", tmp / "cache");
    ParseCache cache(tmp / "cache");
    CHECK(cache.parse(kText, "/etc/cdi/a.yaml") == expected);
    CHECK_THAT(cache.last(), Catch::StartsWith("parsed (cache: open"));
    CHECK(entries(tmp / "real") == 0);
  }
  SECTION("a regular file") {
    write_file(tmp / "cache", "x");
    ParseCache cache(tmp / "cache");
    CHECK(cache.parse(kText, "/etc/cdi/a.yaml") == expected);
    CHECK_THAT(cache.last(), Catch::StartsWith("parsed (cache: open"));
  }
}

TEST_CASE("cdi cache: an entry that is a symlink or not ours is parsed around") {
  TempDir tmp;
  stdfs::path dir = tmp / "cache";
  ParseCache cache(dir);
  cache.parse(kText, "a");  // creates dir and the entry
  stdfs::path entry = dir / entry_name(kText, build_id());
  std::string good = read_file(entry);
  SECTION("a symlink to a good entry") {
    write_file(tmp / "elsewhere", good, 0600);
    stdfs::remove(entry);
    stdfs::create_symlink(tmp / "elsewhere", entry);
    ParseCache c(dir);
    c.parse(kText, "a");
    CHECK(c.last() == "stored");  // the symlink was replaced by a real entry
    CHECK_FALSE(stdfs::is_symlink(entry));
  }
  if (::geteuid() == 0) {
    SECTION("owned by another user") {
      REQUIRE(::chown(entry.c_str(), 1, 1) == 0);
      ParseCache c(dir);
      c.parse(kText, "a");
      CHECK(c.last() == "stored");
      struct stat st {};
      REQUIRE(::stat(entry.c_str(), &st) == 0);
      CHECK(st.st_uid == 0);
    }
  }
}

TEST_CASE("cdi cache: a store that finds too many entries removes the oldest") {
  TempDir tmp;
  stdfs::path dir = tmp / "cache";
  ParseCache(dir).parse(kText, "a");
  stdfs::path mine = dir / entry_name(kText, build_id());
  stdfs::remove(mine);
  for (std::size_t i = 0; i < kMaxCacheEntries; ++i) {
    std::string name = entry_name(std::to_string(i), "old");
    write_file(dir / name, "stale", 0600);
    struct timespec times[2] = {{static_cast<time_t>(1000 + i), 0}, {static_cast<time_t>(1000 + i), 0}};
    REQUIRE(::utimensat(AT_FDCWD, (dir / name).c_str(), times, 0) == 0);
  }
  write_file(dir / "unrelated.txt", "kept", 0600);
  ParseCache cache(dir);
  cache.parse(kText, "a");
  CHECK(cache.last() == "stored");
  CHECK(entries(dir) == kMaxCacheEntries / 2);
  CHECK(stdfs::exists(mine));
  CHECK(stdfs::exists(dir / "unrelated.txt"));
  CHECK_FALSE(stdfs::exists(dir / entry_name("0", "old")));  // the oldest went first
  CHECK(stdfs::exists(dir / entry_name(std::to_string(kMaxCacheEntries - 1), "old")));
}

TEST_CASE("cdi cache: one create stores a bounded number of entries") {
  TempDir tmp;
  ParseCache cache(tmp / "cache");
  for (std::size_t i = 0; i < kMaxStoresPerCreate + 3; ++i) {
    std::string text = kText + "# " + std::to_string(i) + "\n";
    REQUIRE(cache.parse(text, "a") == parse_spec(text, "a"));
    CHECK(cache.last() ==
          (i < kMaxStoresPerCreate ? "stored" : "parsed (cache: 8 entries stored by this create already)"));
  }
  CHECK(entries(tmp / "cache") == kMaxStoresPerCreate);
  // What was stored is read back; hits do not count against the bound.
  ParseCache next(tmp / "cache");
  for (int round = 0; round < 2; ++round)
    for (std::size_t i = 0; i < kMaxStoresPerCreate; ++i) {
      next.parse(kText + "# " + std::to_string(i) + "\n", "a");
      CHECK(next.last() == "hit");
    }
}

TEST_CASE("cdi cache: read-only (dry-run) uses entries but stores none and creates no directory") {
  TempDir tmp;
  ParseCache ro(tmp / "cache");
  ro.read_only(true);
  CHECK(ro.parse(kText, "a") == parse_spec(kText, "a"));
  CHECK_THAT(ro.last(), Catch::StartsWith("parsed (cache: open"));
  CHECK_FALSE(stdfs::exists(tmp / "cache"));

  ParseCache(tmp / "cache").parse(kText, "a");  // a create stores it
  ParseCache reader(tmp / "cache");
  reader.read_only(true);
  reader.parse(kText, "a");
  CHECK(reader.last() == "hit");
  std::string other = kText + "# other\n";
  reader.parse(other, "a");
  CHECK_THAT(reader.last(), Catch::Contains("read-only: not stored"));
  CHECK(entries(tmp / "cache") == 1);
}

TEST_CASE("cdi cache: a cache-dir with a trailing slash is the same directory") {
  TempDir tmp;
  stdfs::create_directory(tmp / "real");
  ::chmod((tmp / "real").c_str(), 0700);
  stdfs::create_directory_symlink(tmp / "real", tmp / "link");
  ParseCache via_link((tmp / "link").string() + "/");  // the slash must not step through the symlink
  via_link.parse(kText, "a");
  CHECK_THAT(via_link.last(), Catch::StartsWith("parsed (cache: open"));
  ParseCache plain((tmp / "real").string() + "//");
  plain.parse(kText, "a");
  CHECK(plain.last() == "stored");
  CHECK(entries(tmp / "real") == 1);
}
