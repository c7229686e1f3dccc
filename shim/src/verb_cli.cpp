// SPDX-License-Identifier: Apache-2.0
#include "verb_cli.h"

#include <CLI/CLI.hpp>

namespace specshim::shim {

VerbCli::Option& VerbCli::Option::required() {
  o_->required();
  return *this;
}

VerbCli::Option& VerbCli::Option::show_default() {
  o_->capture_default_str();
  return *this;
}

VerbCli::Option& VerbCli::Option::one_of(std::vector<std::string> values) {
  o_->check(CLI::IsMember(std::move(values)));
  return *this;
}

VerbCli::Option& VerbCli::Option::existing_directory() {
  o_->check(CLI::ExistingDirectory);
  return *this;
}

VerbCli::Option& VerbCli::Option::one_value_each() {
  o_->allow_extra_args(false);
  return *this;
}

VerbCli::VerbCli(const std::string& description, const std::string& name)
    : app_(std::make_unique<CLI::App>(description, name)) {}

VerbCli::~VerbCli() = default;

VerbCli::Option VerbCli::option(const std::string& names, std::string& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

VerbCli::Option VerbCli::option(const std::string& names, std::vector<std::string>& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

void VerbCli::flag(const std::string& names, bool& into, const std::string& help) {
  app_->add_flag(names, into, help);
}

int VerbCli::parse(const std::vector<std::string>& argv) {
  try {
    std::vector<std::string> rest(argv.rbegin(), argv.rend() - 2);  // CLI11 wants them reversed
    app_->parse(rest);
  } catch (const CLI::ParseError& e) {
    return app_->exit(e);
  }
  return -1;
}

}  // namespace specshim::shim
