// SPDX-License-Identifier: Apache-2.0
#include "argv.h"

#include <string_view>

#include "specshim/base/error.h"
#include "specshim/base/runtime_kind.h"

namespace specshim::shim {
namespace {

// The flags of every runtime kind (specshim/base/runtime_kind.h): runc 1.1–1.5
// and crun.
using runtime::Flag;

// split_flag turns "-x", "--x", "-x=v", "--x=v" into name and optional value.
// Returns false for anything that is not a flag ("-", "x", "---x").
bool split_flag(std::string_view arg, std::string_view& name, std::optional<std::string_view>& value) {
  if (arg.size() < 2 || arg[0] != '-') return false;
  std::string_view rest = arg.substr(arg[1] == '-' ? 2 : 1);
  if (rest.empty() || rest[0] == '-' || rest[0] == '=') return false;
  value.reset();
  if (auto eq = rest.find('='); eq != std::string_view::npos) {
    value = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  name = rest;
  return true;
}

bool bool_value_true(std::optional<std::string_view> v) {
  // Go's strconv.ParseBool; anything else makes runc fail, which is malformed.
  return !v || *v == "1" || *v == "t" || *v == "T" || *v == "true" || *v == "TRUE" || *v == "True";
}

bool is_version(std::string_view name) {
  return name == "version" || name == "v" || name == "V";
}
bool is_help(std::string_view name) {
  return name == "help" || name == "h" || name == "usage";
}

// take_global records what specshim needs of a global flag, wherever it stands.
void take_global(std::string_view name, std::optional<std::string_view> value, RuncArgs& out) {
  if (name == "log")
    out.log = std::string(*value);
  else if (name == "log-format")
    out.log_format = std::string(*value);
  else if (name == "debug")
    out.debug = bool_value_true(value);
  else if (is_version(name))
    out.version = bool_value_true(value);
  else if (is_help(name))
    out.help = bool_value_true(value);
}

// global_after_verb finds a global flag given after create/run/restore. runc
// main's urfave/cli v3 makes the root flags persistent (`runc create --root R
// ...` is legal there); help and version keep their meaning of the verb's own
// help, so only the flags that configure runc count.
const Flag* global_after_verb(std::string_view name) {
  if (is_help(name) || is_version(name)) return nullptr;
  return runtime::global_flag(name);
}

void parse_command_args(const std::vector<std::string>& argv, std::size_t from, RuncArgs& out) {
  std::vector<std::string> positionals;
  for (std::size_t i = from; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      positionals.insert(positionals.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    std::string_view name;
    std::optional<std::string_view> value;
    if (!split_flag(arg, name, value)) {
      positionals.push_back(arg);
      continue;
    }
    const Flag* f = runtime::command_flag(out.subcommand, name);
    const Flag* global = f ? nullptr : global_after_verb(name);
    if (global) f = global;
    if (!f) {
      out.unknown_flags.push_back(arg);
      continue;
    }
    if (!f->refused.empty() && out.refused.empty())
      out.refused = "flag `" + arg + "` of `" + out.subcommand + "`: " + std::string(f->refused);
    if (f->takes_value && !value) {
      if (i + 1 >= argv.size()) {
        out.malformed = true;  // runc: "flag needs an argument"
        return;
      }
      value = argv[++i];
    }
    if (global)
      take_global(name, value, out);
    else if (name == "bundle" || name == "b")
      out.bundle = std::string(*value);
  }
  if (positionals.size() == 1)
    out.container_id = positionals[0];
  else
    out.malformed = true;  // runc: "create" requires exactly 1 argument(s)
}

}  // namespace

RuncArgs parse_runc_args(const std::vector<std::string>& argv) {
  RuncArgs out;
  std::size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    std::string_view name;
    std::optional<std::string_view> value;
    if (!split_flag(arg, name, value)) break;
    const Flag* f = runtime::global_flag(name);
    if (!f) {
      out.malformed = true;  // runc: "flag provided but not defined"
      return out;
    }
    if (f->takes_value && !value) {
      if (i + 1 >= argv.size()) {
        out.malformed = true;
        return out;
      }
      value = argv[++i];
    }
    take_global(name, value, out);
  }
  if (i < argv.size()) {
    out.subcommand = argv[i];
    out.subcommand_index = i;
  }
  // urfave/cli shows help or the version before looking at the command.
  if (out.help || out.version) return out;
  if (out.subcommand == "create" || out.subcommand == "run" || out.subcommand == "restore")
    parse_command_args(argv, i + 1, out);
  return out;
}

std::filesystem::path absolute_bundle(const std::optional<std::string>& bundle) {
  std::error_code ec;
  std::filesystem::path p = bundle ? std::filesystem::path(*bundle) : std::filesystem::current_path(ec);
  if (ec) throw Error("find bundle: cannot read the current directory: " + ec.message());
  if (p.empty()) throw Error("find bundle: empty --bundle");
  return std::filesystem::absolute(p, ec).lexically_normal();
}

}  // namespace specshim::shim
