// SPDX-License-Identifier: Apache-2.0
// JSON text read and JSON values shown within bounds (spec.h). nlohmann's
// parser builds a document of any depth without recursing, but its dump,
// comparison and copy recurse once per level: an annotation nested 60,000
// deep overflows the stack in the first of them. So the depth is checked on
// the text, before a DOM exists, and a value is shown by writing no more of
// it than the message keeps.
#include <string>

#include "specshim/base/spec.h"

namespace specshim {
namespace {

// put writes j's compact JSON text to out, but stops writing (and
// descending) once out holds more than max bytes: each level writes a
// bracket first, so the recursion is never deeper than max.
void put(const Json& j, std::string& out, std::size_t max) {
  if (out.size() > max) return;
  if (!j.is_structured()) {
    out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out += j.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = j.begin(); it != j.end() && out.size() <= max; ++it) {
    if (!first) out += ',';
    first = false;
    if (j.is_object()) out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace) + ":";
    put(it.value(), out, max);
  }
  out += j.is_array() ? ']' : '}';
}

std::string cut(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t keep = max > 3 ? max - 3 : 0;
  // Back up to the start of a character: continuation bytes are 10xxxxxx.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  text.resize(keep);
  return text + "...";
}

}  // namespace

void check_json_depth(std::string_view text, std::string_view what, int max) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, a quote or backslash included
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max)
        throw Error((what.empty() ? "" : std::string(what) + ": ") + "nested deeper than " + std::to_string(max) +
                    " levels");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;  // a stray closer is the parser's to refuse
    }
  }
}

Json parse_json(std::string_view text, std::string_view what, bool allow_exceptions) {
  check_json_depth(text, what);
  try {
    return Json::parse(text, nullptr, allow_exceptions);
  } catch (const Json::exception& e) {
    throw Error((what.empty() ? "" : std::string(what) + ": ") + json_cause(e));
  }
}

std::string shown_json(const Json& j, std::size_t max) {
  if (j.is_string()) return cut(shown(j.get_ref<const std::string&>()), max);
  std::string out;
  put(j, out, max);
  return cut(std::move(out), max);
}

}  // namespace specshim
