// SPDX-License-Identifier: Apache-2.0
// passwd modifier: the pure pieces (line parse/format, "present", names,
// fields, templates, the writable rule) and the modifier on temp rootfses for
// what golden cases cannot hold (file modes, owners, FIFOs, devices, sizes).
#include "specshim/modifiers/passwd.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/factories.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::passwd;
using specshim::test::TempDir;
namespace stdfs = std::filesystem;

TEST_CASE("passwd lines: only the canonical subset parses") {
  auto e = parse_passwd_line("app:x:10001:10002:App,,,:/home/app:/bin/sh");
  REQUIRE(e);
  CHECK(e->name == "app");
  CHECK(e->uid == 10001);
  CHECK(e->gid == 10002);
  CHECK(e->gecos == "App,,,");
  CHECK(e->home == "/home/app");
  CHECK(e->shell == "/bin/sh");
  CHECK(parse_passwd_line("crlf:x:1:1::/:/bin/sh\r")->shell == "/bin/sh");
  CHECK(parse_passwd_line("max:x:4294967294:0::/:")->uid == kMaxId);

  auto line = GENERATE(as<std::string>{},
                       "a:x:10001",                        // 3 fields
                       "six:x:10001:10001:six:/home/six",  // 6 fields (glibc reads it, musl does not)
                       "i:x:10001:10001:g:/h:/s:extra",    // 8 fields
                       "#old:x:10001:10001::/:/bin/sh",    // comment (musl reads it as a user)
                       "c:x: 10001:10001:g:/h:/s",         // blank in the uid
                       "d:x:10001 :10001:g:/h:/s",         //
                       "e:x:010001:10001:g:/h:/s",         // leading zero
                       "f:x:+10001:10001:g:/h:/s",         // sign
                       "g:x:0x2711:10001:g:/h:/s",         // hex
                       "h:x::10001:g:/h:/s",               // empty uid (musl: 0)
                       "l:x:4294977297:10001:g:/h:/s",     // wraps to 10001 in musl
                       "m:x:-1:10001:g:/h:/s",             //
                       "n:x:4294967295:1:g:/h:/s",         // (uid_t)-1
                       ":x:10001:10001:g:/h:/s",           // empty name
                       "  k:x:10001:10001:g:/h:/s",        // leading blanks
                       "+::::::",                          // NIS compat
                       "-bad:x:10001:10001:g:/h:/s",       //
                       "o:x:10001:abc:g:/h:/s",            // bad gid
                       "");
  INFO(line);
  CHECK_FALSE(parse_passwd_line(line));
}

TEST_CASE("group lines: only the canonical subset parses") {
  auto g = parse_group_line("video:x:44:alice,bob");
  REQUIRE(g);
  CHECK(g->name == "video");
  CHECK(g->gid == 44);
  CHECK(g->members == "alice,bob");
  CHECK(parse_group_line("empty:x:10001:")->members.empty());
  auto line =
      GENERATE(as<std::string>{}, "g1:x:10001", "#g6:x:10001:", "g7:x: 10001:", "g8:x:10001::", ":x:1:", "g9:x:01:");
  INFO(line);
  CHECK_FALSE(parse_group_line(line));
}

TEST_CASE("formatting writes exactly one line that parses back") {
  PasswdEntry e{"user10001", "x", 10001, 10001, "specshim runtime user", "/tmp", "/sbin/nologin"};
  std::string line = format_passwd_line(e);
  CHECK(line == "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin");
  auto back = parse_passwd_line(line);
  REQUIRE(back);
  CHECK(format_passwd_line(*back) == line);
  CHECK(format_group_line(GroupEntry{"group10001", "x", 10001, ""}) == "group10001:x:10001:");
}

TEST_CASE("present means a canonical line with that id") {
  std::string file =
      "root:x:0:0:root:/root:/bin/sh\n"
      "#old:x:10001:10001::/:/bin/sh\n"
      "six:x:10001:10001:six:/home/six\n"
      "e:x:010001:10001:g:/h:/s\n"
      "\n"
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin";  // no final newline
  CHECK_FALSE(has_uid(file, 10001));
  CHECK(has_uid(file, 65534));
  CHECK(has_uid(file, 0));
  CHECK(has_uid(file + "\napp:x:10001:10001:app:/home/app:/bin/sh\r\n", 10001));
  CHECK(has_gid("root:x:0:\nnogroup:x:65534:\n", 65534));
  CHECK_FALSE(has_gid("root:x:0:\n#g:x:10001:\ng1:x:10001\n", 10001));
  CHECK_FALSE(has_uid("", 1));
}

TEST_CASE("a name is taken by any line that starts with it") {
  CHECK(name_taken("user10001:x:777:777::/:/bin/sh\n", "user10001"));
  CHECK(name_taken("root:x:0:0::/:/bin/sh\nuser10001\n", "user10001"));  // malformed still counts
  CHECK(name_taken("user10001:broken\r\n", "user10001"));
  CHECK_FALSE(name_taken("user100011:x:1:1::/:/bin/sh\n", "user10001"));
  CHECK_FALSE(name_taken("xuser10001:x:1:1::/:/bin/sh\n", "user10001"));
}

TEST_CASE("append_line keeps the image's bytes and adds one newline only when needed") {
  CHECK(append_line("", "a:x:1:1::/:/s") == "a:x:1:1::/:/s\n");
  CHECK(append_line("r\n", "a") == "r\na\n");
  CHECK(append_line("r", "a") == "r\na\n");
  CHECK(append_line("r\r\n", "a") == "r\r\na\n");
  CHECK(append_line("r\n\n", "a") == "r\n\na\n");
}

TEST_CASE("names: [a-z_][a-z0-9_.-]{0,31}") {
  for (std::string ok : {std::string("user10001"), std::string("_a"), std::string("a.b-c_1"), std::string(32, 'a')}) {
    INFO(ok);
    CHECK_FALSE(name_problem(ok));
  }
  for (std::string bad : {std::string(""), std::string("A"), std::string("1abc"), std::string("12345"),
                          std::string("-x"), std::string("a:b"), std::string("a\nroot2:x:0:0::/:/bin/sh"),
                          std::string("a\rb"), std::string("a\0b", 3), std::string("a b"), std::string("a/b"),
                          std::string("a,b"), std::string(33, 'a'), std::string("\xc3\xbc"), std::string(".a")}) {
    INFO(printable(bad));
    CHECK(name_problem(bad));
  }
}

TEST_CASE("group names the admin gives may hold upper case, nothing else more") {
  for (std::string ok : {std::string("HwHiAiUser"), std::string("_Video"), std::string("render")}) {
    INFO(ok);
    CHECK_FALSE(group_name_problem(ok));
  }
  for (std::string bad : {std::string(""), std::string("1abc"), std::string("-x"), std::string("Hw Hi"),
                          std::string("a:b"), std::string("a\nb"), std::string(33, 'A')}) {
    INFO(printable(bad));
    CHECK(group_name_problem(bad));
  }
  CHECK(*group_name_problem("Hw Hi") == "may only hold a-z, A-Z, 0-9, '_', '.' and '-'");
}

TEST_CASE("uid_name: the name of the first canonical line with the uid") {
  std::string file =
      "root:x:0:0:root:/root:/bin/sh\n#x:x:7:7::/:/bin/sh\napp:x:7:7::/:/bin/sh\nother:x:7:7::/:/bin/sh\n";
  CHECK(uid_name(file, 7) == "app");
  CHECK(uid_name(file, 0) == "root");
  CHECK(uid_name(file, 8) == std::nullopt);
}

TEST_CASE("fields and paths refuse anything that could start a new field or line") {
  CHECK_FALSE(field_problem("specshim runtime user"));
  CHECK_FALSE(field_problem(""));
  CHECK(field_problem("a:b") == "contains ':'");
  CHECK(field_problem("a\nb") == "contains a control character");
  CHECK(field_problem("a\rb"));
  CHECK(field_problem(std::string("a\0b", 3)));
  CHECK(field_problem("a\x7f"));
  CHECK(field_problem(std::string(kMaxField + 1, 'a')));
  CHECK_FALSE(path_problem("/tmp"));
  CHECK(path_problem("tmp") == "must be an absolute path");
  CHECK(path_problem(""));
  CHECK(path_problem("/x\nevil:x:0:0::/:/bin/sh"));
}

TEST_CASE("templates are checked for every id they can be given") {
  CHECK_FALSE((Template{"user{uid}", "{uid}"}.problem()));
  CHECK_FALSE((Template{"app", "{uid}"}.problem()));
  CHECK((Template{"user{uid}", "{uid}"}.expand(10001)) == "user10001");
  CHECK((Template{"u{uid}-{uid}", "{uid}"}.expand(7)) == "u7-7");
  CHECK((Template{"{uid}", "{uid}"}.problem()) == "expands to `1`, which must start with a lowercase letter or '_'");
  auto problem = [](std::string text) { return Template{std::move(text), "{uid}"}.problem().value_or(""); };
  CHECK_THAT(problem("u{gid}"), Catch::Contains("unknown placeholder `{gid}`"));
  CHECK_THAT(problem("u{uid"), Catch::Contains("unknown placeholder"));
  CHECK_THAT(problem("user:{uid}"), Catch::Contains("may only hold"));
  CHECK_THAT(problem(std::string(23, 'a') + "{uid}"), Catch::Contains("4294967294`, which is longer than 32"));
  CHECK_FALSE((Template{std::string(22, 'a') + "{uid}", "{uid}"}.problem()));
}

TEST_CASE("writable_by follows the DAC order owner, group, other") {
  struct stat st {};
  st.st_uid = 0;
  st.st_gid = 0;
  st.st_mode = S_IFREG | 0644;
  CHECK_FALSE(writable_by(st, 10001, 10001, {}));
  st.st_mode = S_IFREG | 0664;
  CHECK_FALSE(writable_by(st, 10001, 10001, {}));  // group 0 is not the process's
  CHECK(writable_by(st, 10001, 0, {}));            // the OpenShift pattern: gid 0, g+w
  CHECK(writable_by(st, 10001, 10001, {5, 0}));    // a supplementary group
  st.st_mode = S_IFREG | 0646;
  CHECK(writable_by(st, 10001, 10001, {}));
  st.st_uid = 10001;
  st.st_mode = S_IFREG | 0644;
  CHECK(writable_by(st, 10001, 10001, {}));
  st.st_mode = S_IFREG | 0466;
  CHECK_FALSE(writable_by(st, 10001, 0, {}));  // the owner's bits decide for the owner
}

TEST_CASE("printable never lets a control byte through") {
  CHECK(printable("abc") == "abc");
  CHECK(printable("a\nroot2") == "<7 bytes holding control characters>");
  CHECK(printable(std::string(100, 'a')).size() == 64);
}

// ---- the modifier on a temp bundle ----------------------------------------

namespace {

constexpr const char* kPasswdF =
    "root:x:0:0:root:/root:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
constexpr const char* kGroupG = "root:x:0:\nnogroup:x:65534:\n";

// Bundle is a temp bundle with rootfs/etc/{passwd,group} and a spec for
// 10001:10001; run() applies the passwd modifier once.
struct Bundle {
  TempDir dir;
  stdfs::path rootfs = dir / "rootfs";
  Json spec = Json::parse(R"({"process":{"user":{"uid":10001,"gid":10001},"env":["PATH=/bin"]},
                              "root":{"path":"rootfs"},"mounts":[]})");
  Context ctx;

  Bundle() {
    test::write_file(rootfs / "etc/passwd", kPasswdF);
    test::write_file(rootfs / "etc/group", kGroupG);
    ctx.bundle = dir.path();
  }
  Spec run(const std::string& config = "") {
    auto doc = config::Document::parse("[passwd]\n" + config, "t.toml");
    auto section = doc.root().section("passwd");
    auto m = make_passwd(section, ChainPlan());
    section.finish();
    Spec s = Spec::parse(spec.dump());
    m->apply(s, ctx);
    return s;
  }
  std::vector<std::string> destinations(const Spec& s) const {
    std::vector<std::string> out;
    for (auto& m : s.json()["mounts"]) out.push_back(m["destination"]);
    return out;
  }
};

}  // namespace

TEST_CASE("modifier: adds both entries and mounts them read-only") {
  Bundle b;
  Spec s = b.run();
  REQUIRE(b.ctx.bundle_files.at("specshim-passwd").content ==
          std::string(kPasswdF) + "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin\n");
  REQUIRE(b.ctx.bundle_files.at("specshim-group").content == std::string(kGroupG) + "group10001:x:10001:\n");
  REQUIRE(b.ctx.bundle_files.at("specshim-passwd").mode == 0644);
  Json want = Json::parse(R"({"destination":"/etc/passwd","type":"bind","source":"","options":
                              ["rbind","ro","nosuid","nodev","noexec","rprivate"]})");
  want["source"] = (b.dir / "specshim-passwd").string();
  REQUIRE(s.json()["mounts"][0] == want);
  REQUIRE(s.json()["mounts"][1]["source"] == (b.dir / "specshim-group").string());
}

TEST_CASE("modifier: a second pass finds its own mounts and changes nothing") {
  Bundle b;
  Spec first = b.run();
  b.spec = first.json();
  b.ctx.bundle_files.clear();
  Spec second = b.run();
  REQUIRE(second.json() == first.json());
  REQUIRE(b.ctx.bundle_files.empty());
}

TEST_CASE("modifier: an image file the process can write is the image's business") {
  Bundle b;
  stdfs::path pw = b.rootfs / "etc/passwd";
  SECTION("group-writable, group 0, process gid 0 (OpenShift)") {
    ::chmod(pw.c_str(), 0664);
    b.spec["process"]["user"]["gid"] = 0;
    Spec s = b.run();
    REQUIRE(b.ctx.bundle_files.empty());
    REQUIRE(s.json()["mounts"].empty());
  }
  SECTION("owned by the uid with u+w") {
    REQUIRE(::chown(pw.c_str(), 10001, 0) == 0);
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 0);
    REQUIRE(b.ctx.bundle_files.count("specshim-group") == 1);  // each file is judged by its own mode
  }
  SECTION("world-writable") {
    ::chmod(pw.c_str(), 0666);
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 0);
  }
  SECTION("group-writable by a group the process is not in: it cannot write, so we add") {
    ::chmod(pw.c_str(), 0664);
    REQUIRE(::chown(pw.c_str(), 0, 5) == 0);
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 1);
  }
  SECTION("writable but root.readonly: the process cannot write it, so we add") {
    ::chmod(pw.c_str(), 0666);
    b.spec["root"]["readonly"] = true;
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 1);
  }
}

TEST_CASE("modifier: a mode-0600 image file still yields a 0644 copy") {
  Bundle b;
  ::chmod((b.rootfs / "etc/passwd").c_str(), 0600);
  b.run();
  REQUIRE(b.ctx.bundle_files.at("specshim-passwd").mode == 0644);
}

TEST_CASE("modifier: unusable image files are left alone") {
  Bundle b;
  stdfs::path pw = b.rootfs / "etc/passwd";
  stdfs::remove(pw);
  SECTION("FIFO") {
    REQUIRE(::mkfifo(pw.c_str(), 0644) == 0);
    ::alarm(10);
    b.run();
    ::alarm(0);
  }
  SECTION("device node") {
    REQUIRE(::mknod(pw.c_str(), S_IFCHR | 0644, makedev(1, 3)) == 0);
    b.run();
  }
  SECTION("directory") {
    stdfs::create_directories(pw);
    b.run();
  }
  SECTION("over 10 MiB") {
    test::write_file(pw, std::string(kPasswdF) + std::string(10 << 20, '#'));
    b.run();
  }
  SECTION("NUL bytes") {
    test::write_file(pw, std::string("root:x:0:0::/:/bin/sh\n\0\n", 24));
    b.run();
  }
  SECTION("a symlink loop") {
    stdfs::create_symlink("passwd", pw);
    b.run();
  }
  REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 0);
  REQUIRE(b.ctx.bundle_files.count("specshim-group") == 1);
}

TEST_CASE("modifier: exactly 10 MiB is still read") {
  Bundle b;
  std::string big = std::string(kPasswdF);
  big += std::string((10 << 20) - big.size() - 1, '#') + "\n";
  test::write_file(b.rootfs / "etc/passwd", big);
  b.run();
  REQUIRE(b.ctx.bundle_files.at("specshim-passwd").content ==
          big + "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin\n");
}

TEST_CASE("modifier: config values are checked at load and name their key") {
  auto load = [](const std::string& text) {
    auto doc = config::Document::parse("[passwd]\n" + text, "c.toml");
    auto section = doc.root().section("passwd");
    auto m = make_passwd(section, ChainPlan());
    section.finish();
    return m;
  };
  CHECK(load(""));
  CHECK_FALSE(load("enabled = false\ngecos = \"still read\"\n"));
  CHECK_THROWS_WITH(load("name-template = \"{uid}\""),
                    Catch::StartsWith("config `c.toml`: line 2: `passwd.name-template`:"));
  CHECK_THROWS_WITH(
      load("group-name-template = \"g{uid}\""),
      Catch::Contains("`passwd.group-name-template`: unknown placeholder `{uid}`; only {gid} is allowed"));
  CHECK_THROWS_WITH(load("home = \"tmp\""), Catch::Contains("`passwd.home`: `tmp` must be an absolute path"));
  CHECK_THROWS_WITH(load("shell = \"/bin/sh\\n\""), Catch::Contains("`passwd.shell`:"));
  CHECK_THROWS_WITH(load("gecos = \"a:b\""), Catch::Contains("`passwd.gecos`: `a:b` contains ':'"));
  CHECK_THROWS_WITH(load("allow-annotations = 1"),
                    Catch::Contains("`passwd.allow-annotations`: must be true or false"));
  CHECK_THROWS_WITH(load("colour = \"red\""), Catch::Contains("unknown key `passwd.colour`"));
}

// ---- user namespaces: the files judged through the mappings -----------------

namespace {

// UsernsBundle is Bundle with container ids 0-65535 mapped to host
// 100000-165535 (uids) and 200000-265535 (gids), as a hostUsers: false pod.
struct UsernsBundle : Bundle {
  UsernsBundle() {
    spec["linux"] = Json::parse(R"({"namespaces":[{"type":"mount"},{"type":"user"}],
      "uidMappings":[{"containerID":0,"hostID":100000,"size":65536}],
      "gidMappings":[{"containerID":0,"hostID":200000,"size":65536}]})");
  }
};

}  // namespace

TEST_CASE(
    "passwd in a user namespace: the entries name in-container ids and the copies belong to container root's host "
    "ids") {
  UsernsBundle b;
  Spec s = b.run();
  const BundleFile& pw = b.ctx.bundle_files.at("specshim-passwd");
  REQUIRE(pw.content == std::string(kPasswdF) + "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin\n");
  REQUIRE(pw.mode == 0644);
  REQUIRE(pw.owner == FileOwner{100000, 200000});
  REQUIRE(b.ctx.bundle_files.at("specshim-group").owner == FileOwner{100000, 200000});
  REQUIRE(b.destinations(s) == std::vector<std::string>{"/etc/passwd", "/etc/group"});
}

TEST_CASE("passwd in a user namespace: a second pass finds its own mounts and changes nothing") {
  UsernsBundle b;
  Spec first = b.run();
  b.spec = first.json();
  b.ctx.bundle_files.clear();
  REQUIRE(b.run().json() == first.json());
  REQUIRE(b.ctx.bundle_files.empty());
}

TEST_CASE("passwd in a user namespace: writable means writable by the host ids the process's ids map to") {
  UsernsBundle b;
  stdfs::path pw = b.rootfs / "etc/passwd";
  SECTION("owned by the mapped uid (host 110001) with u+w: the image manages it") {
    REQUIRE(::chown(pw.c_str(), 110001, 200000) == 0);
    ::chmod(pw.c_str(), 0644);
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 0);
  }
  SECTION("owned by host uid 10001, which is nobody inside: the process cannot write it") {
    REQUIRE(::chown(pw.c_str(), 10001, 10001) == 0);
    ::chmod(pw.c_str(), 0664);
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 1);
  }
  SECTION("group-writable by the mapped gid (host 210001): the image manages it") {
    REQUIRE(::chown(pw.c_str(), 100000, 210001) == 0);
    ::chmod(pw.c_str(), 0664);
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 0);
  }
  SECTION("group-writable by a mapped additional gid (5 → host 200005)") {
    REQUIRE(::chown(pw.c_str(), 100000, 200005) == 0);
    ::chmod(pw.c_str(), 0664);
    b.spec["process"]["user"]["additionalGids"] = {5};
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 0);
  }
  SECTION("group-writable by host gid 5, which is not the additional gid 5 inside") {
    REQUIRE(::chown(pw.c_str(), 100000, 5) == 0);
    ::chmod(pw.c_str(), 0664);
    b.spec["process"]["user"]["additionalGids"] = {5};
    b.run();
    REQUIRE(b.ctx.bundle_files.count("specshim-passwd") == 1);
  }
  REQUIRE(b.ctx.bundle_files.count("specshim-group") == 1);
}

TEST_CASE("passwd in a user namespace: an id outside the mappings is refused and nothing is written") {
  UsernsBundle b;
  SECTION("uid") {
    b.spec["process"]["user"]["uid"] = 70000;
    REQUIRE_THROWS_WITH(b.run(),
                        "process.user.uid 70000 is outside linux.uidMappings (0-65535 → 100000-165535): the "
                        "process cannot run as it in its user namespace, and no entry is written for it");
  }
  SECTION("gid") {
    b.spec["process"]["user"]["gid"] = 65536;
    REQUIRE_THROWS_WITH(b.run(), Catch::StartsWith("process.user.gid 65536 is outside linux.gidMappings"));
  }
  REQUIRE(b.ctx.bundle_files.empty());
}

TEST_CASE("passwd in a user namespace: container root unmapped leaves the copies root's, readable by all") {
  UsernsBundle b;
  b.spec["linux"]["uidMappings"] = Json::parse(R"([{"containerID":1000,"hostID":101000,"size":64536}])");
  b.run();
  REQUIRE(b.ctx.bundle_files.at("specshim-passwd").owner == std::nullopt);
  REQUIRE(b.ctx.bundle_files.at("specshim-passwd").mode == 0644);
}

TEST_CASE("passwd in a user namespace: a joined namespace whose mappings cannot be known is left alone") {
  UsernsBundle b;
  b.spec["linux"] = Json::parse(R"({"namespaces":[{"type":"user","path":"/run/userns/pod-a"}]})");
  Spec s = b.run();
  REQUIRE(b.ctx.bundle_files.empty());
  REQUIRE(s.json()["mounts"].empty());
}
