// SPDX-License-Identifier: Apache-2.0
// Fuzzes the kubelet checkpoint reader and the AllocResp wire decoder: any
// input must give entries or a kubelet::Error, never a crash. The same bytes
// are also decoded as a bare ContainerAllocateResponse. The checkpoint's own
// JSON reader must accept nothing a general JSON parser (nlohmann's) refuses.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "specshim/kubelet/checkpoint.h"
#include "specshim/kubelet/errors.h"
#include "specshim/kubelet/wire.h"

using namespace specshim::kubelet;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    decode_allocate_response(bytes);
  } catch (const Error&) {
  }
  try {
    // The entries are views into the parsed text: a copy outlives the
    // checkpoint it was made from (and ASan sees a view that does not).
    std::optional<Checkpoint> parsed = Checkpoint::parse(std::string(bytes), "fuzz");
    if (!nlohmann::json::accept(bytes)) std::abort();
    Checkpoint cp = *parsed;
    parsed.reset();
    // Look up the UIDs/containers a real lookup would ask for.
    for (const std::string uid : {"uid-1", "u"})
      for (const std::string container : {"main", "c"}) {
        try {
          cp.entries(uid, container);
        } catch (const Error&) {
        }
      }
    for (const auto& [resource, ids] : cp.allocated_devices()) {
      try {
        cp.entries_for_devices(resource, ids);
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
