// SPDX-License-Identifier: Apache-2.0
// Fuzzes the device-list grammar of env-devices (a variable's value is tenant
// input: images and pod specs set it). A parsed list holds only trimmed,
// non-empty names, each once, none `void`, `all` or `none` (those decide the
// whole list); joining its names and parsing again gives the same list; and
// every name either qualifies to a valid CDI name or is refused with a reason.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specshim/cdi.h"
#include "specshim/env_devices.h"
#include "specshim/error.h"

using namespace specshim;
using namespace specshim::env_devices;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  DeviceList list;
  try {
    list = parse_device_list(text);
  } catch (const Error&) {
    return 0;
  }
  if (list.what != DeviceList::What::names && !list.names.empty()) std::abort();
  if (list.what == DeviceList::What::names && list.names.empty()) std::abort();
  std::string joined;
  for (std::size_t i = 0; i < list.names.size(); ++i) {
    const std::string& n = list.names[i];
    if (n.empty() || n == "void" || n == "all" || n == "none" || n.find(',') != std::string::npos) std::abort();
    if (n.front() == ' ' || n.back() == ' ' || n.front() == '\t' || n.back() == '\t') std::abort();
    if (std::count(list.names.begin(), list.names.end(), n) != 1) std::abort();
    joined += (i ? "," : "") + n;
    std::string why;
    std::string q = qualify("nvidia.com/gpu", n, &why);
    if (q.empty() == why.empty()) std::abort();
    if (!q.empty() && !cdi::parse_qualified_name(q)) std::abort();
  }
  if (list.what == DeviceList::What::names && !(parse_device_list(joined) == list)) std::abort();
  return 0;
}
