// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the CDI sources (names, spec files, injection).
#pragma once

#include <string>
#include <string_view>

namespace specshim::cdi {

// quote renders s in double quotes with '"', '\\' and non-printable bytes
// escaped, so names from spec files and annotations print safely.
std::string quote(std::string_view s);
// quote_char renders one byte in single quotes, escaped like quote.
std::string quote_char(char c);

}  // namespace specshim::cdi
