// SPDX-License-Identifier: Apache-2.0
// Reading a modifier configured as a list of named rules ([[patches]],
// [[requirements]]): each rule's name, and that no name is given twice.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "specshim/base/config.h"

namespace specshim {

// read_rule_name reads the name of the rule table t, which must be a
// plain_name; noun says what needs it ("a patch needs a name of ...").
inline std::string read_rule_name(config::Section& t, std::string_view noun) {
  std::string name = t.string("name").value_or("");
  if (!config::plain_name(name))
    t.fail("name", "a " + std::string(noun) + " needs a name of letters, digits, '-', '_' or '.'");
  return name;
}

// read_rule_list reads every [[key]] table of s with read_rule, in file
// order. A name given twice is an error at its second table, naming noun.
template <class ReadRule, class Rule = std::invoke_result_t<ReadRule, config::Section&>>
std::vector<Rule> read_rule_list(config::Section& s, std::string_view key, std::string_view noun, ReadRule read_rule) {
  std::vector<Rule> rules;
  for (auto& t : s.tables(key)) {
    Rule r = read_rule(t);
    if (std::any_of(rules.begin(), rules.end(), [&](const Rule& o) { return o.name == r.name; }))
      t.fail("name", std::string(noun) + " `" + r.name + "` is defined twice");
    rules.push_back(std::move(r));
  }
  return rules;
}

}  // namespace specshim
