// SPDX-License-Identifier: Apache-2.0
// read_json: specshim's own JSON reader for config.json, into the same DOM
// nlohmann's parser builds.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "specshim/base/spec.h"

namespace specshim::detail {

// read_json parses one JSON document (RFC 8259; a leading UTF-8 BOM is
// skipped) into root, nested at most kMaxJsonDepth (spec.h) deep. It accepts
// and rejects what nlohmann's strict parser does, and builds the same values of the same types: a number without a
// fraction or exponent is unsigned when non-negative, signed when negative,
// floating point when it does not fit 64 bits; a repeated key keeps its first
// place and its last value. Arrays are allocated at their final size, objects with room for four more members. raw
// receives, by JSON pointer, the input text of every floating-point number that would not print back the same. Throws
// Error naming line and column (both from 1, columns in bytes) and what was found there.
void read_json(std::string_view text, Json& root, std::map<std::string, std::string>& raw);

// pointer_token escapes an object key for a JSON pointer (RFC 6901).
std::string pointer_token(std::string_view key);

}  // namespace specshim::detail
