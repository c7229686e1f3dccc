// SPDX-License-Identifier: Apache-2.0
// The low-level runtimes specshim hands a container to, one row per kind
// (runc, crun): what tells them apart where specshim meets them. The name
// looked for on PATH, the state root each uses without --root, where its
// --log value writes, and the flags of its global options and of create,
// run and restore. Both answer `state ID` and `list --format json` with the
// same JSON (id, pid, status, bundle; an empty list is runc's `null`,
// crun's `[]`), which specshim/live/runtime_state.h reads for either.
#pragma once

#include <span>
#include <string_view>

namespace specshim::runtime {

// Flag is one command-line flag, its name without dashes. refused, when
// set, says why a create that gives the flag cannot be completed.
struct Flag {
  std::string_view name;
  bool takes_value = false;
  std::string_view refused = {};
};

struct Kind {
  std::string_view name;          // "runc"
  std::string_view binary;        // looked for on PATH when [runtime] path is unset
  std::string_view default_root;  // its state root without --root, run as root
  // --log VALUE: a file is VALUE, or VALUE after file_prefix ("file:");
  // after one of other_prefixes ("journald:") it names no file.
  std::string_view file_prefix;
  std::span<const std::string_view> other_prefixes;
  std::span<const Flag> global;
  std::span<const Flag> create;    // create's, which run takes too
  std::span<const Flag> run_only;  // what run adds
  std::span<const Flag> restore;
};

// kinds lists every kind, in the order find_runtime looks for them.
std::span<const Kind> kinds();

// kind_of tells the kind of a runtime binary by its file name: crun, and
// crun-<handler> (crun picks a handler by argv[0]), is crun; anything else
// is runc, whose grammar every caller speaks.
const Kind& kind_of(std::string_view path);

// global_flag and command_flag look a flag up in every kind's table, first
// kind first: a caller speaks the grammar of the runtime it thinks it
// runs, and specshim must find the bundle and the id in either. verb is
// create, run or restore.
const Flag* global_flag(std::string_view name);
const Flag* command_flag(std::string_view verb, std::string_view name);

// log_file is the file a --log value names ("" when it names none, such as
// crun's journald:ID).
std::string_view log_file(std::string_view value);

}  // namespace specshim::runtime
