// SPDX-License-Identifier: Apache-2.0
// VerbCli: the command line of one of specshim's own verbs (dry-run, doctor,
// attach, detach, attached), parsed by CLI11.
//
// Only verb_cli.cpp includes CLI11. Its header defines eight validator
// objects (ExistingFile, PositiveNumber, ...) in every file that includes it,
// and their constructors run at every exec of specshim, the passthrough path
// included: ~4.4 K instructions and ~25 heap allocations per file.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace specshim::shim {

class VerbCli {
 public:
  // An option, to refine as CLI::Option is; each returns *this.
  class Option {
   public:
    Option& required();
    Option& show_default();  // in --help
    Option& one_of(std::vector<std::string> values);
    Option& existing_directory();
    Option& one_value_each();  // --device a --device b, not --device a b

   private:
    friend class VerbCli;
    explicit Option(CLI::Option* o) : o_(o) {}
    CLI::Option* o_;
  };

  VerbCli(const std::string& description, const std::string& name);
  ~VerbCli();

  Option option(const std::string& names, std::string& into, const std::string& help);
  Option option(const std::string& names, std::vector<std::string>& into, const std::string& help);
  void flag(const std::string& names, bool& into, const std::string& help);

  // parse reads argv after "specshim VERB". It returns -1 when the verb goes
  // on, else the exit code: 0 after --help, non-zero after a bad command line
  // (its message printed to stderr, as CLI11 words it).
  int parse(const std::vector<std::string>& argv);

 private:
  std::unique_ptr<CLI::App> app_;
};

}  // namespace specshim::shim
