// SPDX-License-Identifier: Apache-2.0
// The pure pieces of the passwd modifier: reading and writing /etc/passwd and
// /etc/group lines, the "is this id present" rule, name and field validation
// and the name templates. No I/O here; passwd.cpp does the rest.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specshim::passwd {

// kMaxId is the largest usable uid/gid: (uid_t)-1 means "no id" to the kernel.
inline constexpr std::uint32_t kMaxId = 4294967294u;

// PasswdEntry is one /etc/passwd line, name:password:uid:gid:gecos:home:shell.
struct PasswdEntry {
  std::string name;
  std::string password;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string gecos;
  std::string home;
  std::string shell;
};

// GroupEntry is one /etc/group line, name:password:gid:members.
struct GroupEntry {
  std::string name;
  std::string password;
  std::uint32_t gid = 0;
  std::string members;  // comma-separated, kept as written
};

// parse_id reads an id the way glibc and musl both read it: 0 or a decimal
// without sign, spaces or leading zeros, at most kMaxId.
std::optional<std::uint32_t> parse_id(std::string_view s);

// parse_passwd_line and parse_group_line accept only the canonical subset of
// lines that glibc, musl and busybox all resolve the same way: exactly 7
// (resp. 4) fields, a name that does not start with '#', '+', '-' or a
// blank, and ids as parse_id reads them. A trailing '\r' is tolerated. Any
// other line returns nullopt: it never counts as present and is never
// rewritten (the image's bytes are kept as they are).
std::optional<PasswdEntry> parse_passwd_line(std::string_view line);
std::optional<GroupEntry> parse_group_line(std::string_view line);

// format_* write a line without the trailing newline. The fields must have
// passed field_problem (the modifier checks every field before it formats).
std::string format_passwd_line(const PasswdEntry& e);
std::string format_group_line(const GroupEntry& e);

// has_uid / has_gid report whether the file holds a canonical line with that id.
bool has_uid(std::string_view passwd_file, std::uint32_t uid);
// uid_name is the name of the first canonical line with that uid.
std::optional<std::string> uid_name(std::string_view passwd_file, std::uint32_t uid);
bool has_gid(std::string_view group_file, std::uint32_t gid);

// name_taken reports whether any line of the file, well-formed or not, starts
// with `name:` (or is exactly `name`), so a generated name never shadows or
// duplicates one the image has.
bool name_taken(std::string_view file, std::string_view name);

// append_line returns file + (a newline when file is not empty and does not
// end in one) + line + "\n". The original bytes are kept as they are.
std::string append_line(std::string_view file, std::string_view line);

// name_problem returns why name is not a valid user or group name, or nullopt.
// Valid: [a-z_][a-z0-9_.-]{0,31}, not all digits.
std::optional<std::string> name_problem(std::string_view name);

// group_name_problem is name_problem with A-Z allowed as well: the rule for
// the group names the node's admin gives ([passwd] group-names), such as
// Ascend's `HwHiAiUser`. glibc, musl and busybox resolve any such name.
std::optional<std::string> group_name_problem(std::string_view name);

// field_problem returns why s cannot be a passwd field (a ':', a control
// character, or more than kMaxField bytes), or nullopt.
inline constexpr std::size_t kMaxField = 4096;
std::optional<std::string> field_problem(std::string_view s);

// path_problem is field_problem plus: must be an absolute path.
std::optional<std::string> path_problem(std::string_view s);

// Template is a name template such as "user{uid}": literal text plus the one
// placeholder it is allowed to use ({uid} for users, {gid} for groups).
struct Template {
  std::string text;
  std::string placeholder;  // "{uid}" or "{gid}"

  std::string expand(std::uint32_t id) const;
  // problem returns why the template cannot produce a valid name for every
  // id from 1 to kMaxId (unknown placeholder, bad literal, too long, all
  // digits), or nullopt.
  std::optional<std::string> problem() const;
};

// writable_by reports whether a process with these credentials may write the
// file, by the classic DAC order: the owner bits decide for the owner, else
// the group bits for a member of the file's group, else the other bits.
bool writable_by(const struct stat& st, std::uint32_t uid, std::uint32_t gid,
                 const std::vector<std::uint32_t>& additional_gids);

// printable returns s for a log or error message: at most 64 bytes, with
// control bytes shown as \xNN so no input can start a new line.
std::string printable(std::string_view s);

}  // namespace specshim::passwd
