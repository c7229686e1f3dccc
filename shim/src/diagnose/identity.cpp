// SPDX-License-Identifier: Apache-2.0
// The identity layer: the process's uid and gid have entries in the
// container's /etc/passwd and /etc/group (programs that call getpwuid, such
// as HCCL, ssh and whoami, fail without one).
#include <sstream>

#include "diagnose/diagnose.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/passwd.h"

namespace specshim::shim::diagnose {
namespace {

constexpr std::size_t kMaxFile = 16 << 20;

std::optional<std::uint32_t> process_id(const Spec& spec, std::string_view field) {
  const Json* v = spec.find({"process", "user", field});
  if (!v) return 0;  // absent: root, as runc runs it
  if (!v->is_number_unsigned() || v->get<std::uint64_t>() > passwd::kMaxId) return std::nullopt;
  return v->get<std::uint32_t>();
}

// name_of is the name on the first canonical line with id, or "".
template <typename Parse>
std::string name_of(const std::string& file, std::uint32_t id, Parse parse) {
  std::istringstream lines(file);
  for (std::string line; std::getline(lines, line);)
    if (auto e = parse(line); e && e->id == id) return e->name;
  return "";
}

struct Named {
  std::string name;
  std::uint32_t id;
};

void check_id(const Container& c, Report& r, std::string_view field, const std::string& file, Severity missing) {
  std::string kind = field == "uid" ? "uid" : "gid";
  auto id = process_id(c.spec, field);
  if (!id) {
    r.add(kIdentity, kind, Severity::warn, "process.user." + kind + " is not an id", "");
    return;
  }
  std::string subject = kind + " " + std::to_string(*id);
  std::optional<std::string> text;
  try {
    text = live::read_in_root(c.root, file, kMaxFile);
  } catch (const Error& e) {
    r.add(kIdentity, subject, missing, "cannot read the container's " + file + ": " + e.what(),
          "the image's " + file + " must be a regular file");
    return;
  }
  if (!text) {
    r.add(kIdentity, subject, missing, "the container has no " + file,
          "the passwd modifier gives the process an entry at create: [passwd] enabled = true and passwd in [chain] "
          "order");
    return;
  }
  std::string name = kind == "uid" ? name_of(*text, *id,
                                             [](const std::string& l) -> std::optional<Named> {
                                               auto e = passwd::parse_passwd_line(l);
                                               if (!e) return std::nullopt;
                                               return Named{e->name, e->uid};
                                             })
                                   : name_of(*text, *id, [](const std::string& l) -> std::optional<Named> {
                                       auto e = passwd::parse_group_line(l);
                                       if (!e) return std::nullopt;
                                       return Named{e->name, e->gid};
                                     });
  if (name.empty())
    r.add(kIdentity, subject, missing,
          "the container's " + file + " has no entry for " + kind + " " + std::to_string(*id) +
              (kind == "uid" ? ": getpwuid() fails (whoami, ssh, HCCL, NCCL's user lookup)" : ": getgrgid() fails"),
          "the passwd modifier adds the entry at create: [passwd] enabled = true and passwd in [chain] order");
  else
    r.add(kIdentity, subject, Severity::ok, "is `" + name + "` in the container's " + file);
}

}  // namespace

void check_identity(const Container& c, Report& r) {
  check_id(c, r, "uid", "/etc/passwd", Severity::fail);
  check_id(c, r, "gid", "/etc/group", Severity::warn);
}

}  // namespace specshim::shim::diagnose
