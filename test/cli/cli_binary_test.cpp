// SPDX-License-Identifier: Apache-2.0
// How the specshim binary under test is linked (SPECSHIM_LINK) and, with
// SPECSHIM_HOT_PATH_LAYOUT, how its hot path is laid out in .text.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

// What a command prints on stdout; it must exit 0.
static std::string output(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  REQUIRE(::pclose(p) == 0);
  return out;
}

TEST_CASE(
    "the specshim binary is linked as configured, constructs no streams at start-up, and unwinds through "
    "PT_GNU_EH_FRAME") {
  std::string link = SPECSHIM_LINK;
  std::string headers = output("readelf -hlW " SPECSHIM_BINARY);
  INFO("linked " << link);
  if (link == "dynamic") {  // sanitizer builds
    CHECK_THAT(headers, Catch::Contains("INTERP"));
    return;
  }
  CHECK_THAT(headers, !Catch::Contains("INTERP"));
  CHECK_THAT(headers, Catch::Contains("GNU_EH_FRAME"));
#ifdef SPECSHIM_NO_STATIC_IOSTREAM
  // No translation unit constructs the standard streams at start-up
  // (shim/startup/no_static_iostream.h): libstdc++'s per-TU object is __ioinit.
  CHECK_THAT(output("nm " SPECSHIM_BINARY), !Catch::Contains("__ioinit"));
#endif
  if (link == "static-pie") {
    CHECK_THAT(headers, Catch::Contains("DYN ("));
    return;
  }
  CHECK_THAT(headers, Catch::Contains("EXEC (Executable file)"));
#ifdef SPECSHIM_STATIC_UNWIND
  // crtbeginT's registration of .eh_frame lands in the no-op of
  // shim/startup/static_unwind.cpp; without it the first throw sorts every FDE.
  CHECK_THAT(output("nm " SPECSHIM_BINARY), Catch::Contains(" T __wrap___register_frame_info"));
#endif
}

#ifdef SPECSHIM_HOT_PATH_LAYOUT
TEST_CASE(
    "the hot path is laid out in one block of .text, in shim/startup/hot-path.order, apart from code it never runs") {
  // Link order alone puts the shim library (doctor included) before the
  // modifiers, and libc last. lld puts the ordered functions together: first
  // in .text on x86-64; on aarch64, whose branches need range-extension thunks
  // past 128 MiB, lld puts them after about half of the other code instead,
  // so that both ends stay in reach. Either way the hot path is one block of
  // about 0.5 MiB, and code it never runs (doctor) is outside it.
  std::map<std::string, unsigned long> address;
  std::istringstream nm(output("nm --defined-only " SPECSHIM_BINARY));
  for (std::string line; std::getline(nm, line);) {
    std::istringstream fields(line);
    std::string addr, type, name;
    if (fields >> addr >> type >> name && std::string("TtWw").find(type) != std::string::npos)
      address[name] = std::stoul(addr, nullptr, 16);
  }
  std::istringstream sections(output("readelf -SW " SPECSHIM_BINARY " | sed -n 's/.* \\.text *PROGBITS *//p'"));
  std::string text_start;
  REQUIRE(sections >> text_start);
  unsigned long text = std::stoul(text_start, nullptr, 16);
  const char* doctor =
      "_ZN8specshim4shim11doctor_mainERKSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS7_EE";
  REQUIRE(address.count(doctor));
  unsigned long first = ~0UL, last = 0;
  for (const char* hot : {"_ZN8specshim4shim16passthrough_mainERKNS0_8RuncArgsERKSt6vectorINSt7__cxx1112basic_"
                          "stringIcSt11char_traitsIcESaIcEEESaISA_EE",
                          "_ZN8specshim4Spec5parseESt17basic_string_viewIcSt11char_traitsIcEE", "execve"}) {
    INFO(hot);
    REQUIRE(address.count(hot));
    first = std::min(first, address[hot]);
    last = std::max(last, address[hot]);
  }
  CHECK(last - first < 1024 * 1024);  // the hot path is about 0.5 MiB of 4
  CHECK((address[doctor] < first || address[doctor] > last));
#if defined(__x86_64__)
  CHECK(address[doctor] > last);
  CHECK(first - text < 1024 * 1024);
#else
  (void)text;
#endif
}
#endif
