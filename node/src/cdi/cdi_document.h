// SPDX-License-Identifier: Apache-2.0
// A CDI spec file read into one small tree, whatever its syntax (JSON through
// nlohmann, YAML through libyaml), with the line of every value and key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace specshim::cdi {

struct Node {
  // plain: a YAML plain scalar, typed by the field that receives it (YAML 1.1
  // rules as go-yaml v2: 0666 is octal, yes is true). string: a JSON string or
  // a quoted YAML scalar. integer/floating/boolean: JSON values.
  enum class Type { null, plain, string, integer, floating, boolean, sequence, mapping };
  Type type = Type::null;
  std::string text;               // scalar text; for JSON integers their decimal form
  int line = 0;                   // 1-based
  std::vector<Node> items;        // sequence
  std::vector<std::string> keys;  // mapping, in document order
  std::vector<int> key_lines;     // mapping, line of each key
  std::vector<Node> values;       // mapping, parallel to keys
};

inline constexpr int kMaxDepth = 32;
inline constexpr std::size_t kMaxNodes = 1 << 20;

// read_document parses text: JSON when its first non-blank byte is '{' and it
// parses as JSON, YAML otherwise (JSON that fails as JSON gets a second chance
// as YAML, as upstream reads every file as YAML). Duplicate keys, nesting
// deeper than kMaxDepth, more than kMaxNodes values (alias bombs) and a second
// YAML document are errors. Throws Error("line N: ...").
Node read_document(std::string_view text);

}  // namespace specshim::cdi
