// SPDX-License-Identifier: Apache-2.0
// pointer_token (json_reader.h): an object key escaped for a JSON pointer
// (RFC 6901), as the reader and the spec's writer name a value.
#include <string>
#include <string_view>

#include "json_reader.h"

namespace specshim::detail {

std::string pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace specshim::detail
