// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "specshim/node/cdi.h"

using namespace specshim::cdi;

TEST_CASE("cdi qualified names that parse") {
  auto [text, vendor, cls, name] = GENERATE(table<const char*, const char*, const char*, const char*>({
      {"vendor.com/gpu=0", "vendor.com", "gpu", "0"},
      {"nvidia.com/gpu=all", "nvidia.com", "gpu", "all"},
      {"nvidia.com/mig=0:1", "nvidia.com", "mig", "0:1"},
      {"a/b=c", "a", "b", "c"},  // one-character names: upstream v1.1.0 panics here
      {"x/y=1", "x", "y", "1"},
      {"Vendor_1.COM/Class.x-2=Name_1.2:3", "Vendor_1.COM", "Class.x-2", "Name_1.2:3"},
  }));
  CAPTURE(text);
  auto q = parse_qualified_name(text);
  REQUIRE(q);
  CHECK(q->vendor == vendor);
  CHECK(q->cls == cls);
  CHECK(q->name == name);
  CHECK(q->str() == text);
  CHECK(q->kind() == std::string(vendor) + "/" + cls);
}

TEST_CASE("cdi malformed qualified names are refused with the reason, never a crash") {
  auto [text, why] = GENERATE(table<std::string, const char*>({
      {"", "missing \"=NAME\""},
      {"vendor.com/gpu", "missing \"=NAME\""},
      {"/dev/nvidia0", "missing \"=NAME\""},
      {"/gpu=0", "missing vendor"},
      {"=0", "missing vendor"},
      {"vendor.com=0", "missing class"},
      {"vendor.com/=0", "missing class"},
      {"vendor.com/gpu=", "missing device name"},
      {"1vendor/gpu=0", "invalid vendor: \"1vendor\" should start with a letter"},
      {"vendor-/gpu=0", "invalid vendor: \"vendor-\" should end with a letter or digit"},
      {"ven dor/gpu=0", "invalid vendor: invalid character ' ' in \"ven dor\""},
      {"vendor.com/gpu/x=0", "invalid class: invalid character '/' in \"gpu/x\""},
      {"vendor.com/-=0", "invalid class: \"-\" should start with a letter"},
      {"vendor.com/9=0", "invalid class: \"9\" should start with a letter"},
      {"vendor.com/gpu=a=b", "invalid device name: invalid character '=' in \"a=b\""},
      {"vendor.com/gpu=-a", "invalid device name: \"-a\" should start with a letter or digit"},
      {"vendor.com/gpu=a-", "invalid device name: \"a-\" should end with a letter or digit"},
      {"vendor.com/gpu=:", "invalid device name: \":\" should start with a letter or digit"},
      {std::string("v/c=a\x01z"), "invalid device name: invalid character '\\x01' in \"a\\x01z\""},
      {"v/c=a\xc3\xa9z", "invalid device name: invalid character '\\xc3' in \"a\\xc3\\xa9z\""},
  }));
  CAPTURE(text);
  std::string reason;
  REQUIRE_FALSE(parse_qualified_name(text, &reason));
  CHECK(reason == why);
  REQUIRE_FALSE(parse_qualified_name(text));  // without a reason pointer
}

TEST_CASE("cdi name checks follow upstream's character classes") {
  CHECK(check_vendor("a").empty());
  CHECK(check_class("a").empty());
  CHECK(check_device_name("0").empty());
  CHECK(check_device_name("a").empty());
  CHECK(check_vendor("").find("empty name") != std::string::npos);
  CHECK(check_device_name("").find("empty name") != std::string::npos);
  CHECK_FALSE(check_vendor("a:b").empty());  // ':' only in device names
  CHECK(check_device_name("a:b").empty());
  CHECK(check_class("a.b").empty());  // dots in the class (the spec needs 0.6.0 for it)
}

TEST_CASE("cdi kinds split at the first slash") {
  CHECK(split_kind("vendor.com/gpu") == std::pair<std::string_view, std::string_view>("vendor.com", "gpu"));
  CHECK(split_kind("a/b/c") == std::pair<std::string_view, std::string_view>("a", "b/c"));
  CHECK(split_kind("novendor") == std::pair<std::string_view, std::string_view>("", "novendor"));
}
