// SPDX-License-Identifier: Apache-2.0
// The passwd modifier: when the container's uid (gid) has no entry in the
// image's /etc/passwd (/etc/group), it writes a copy of the image's file plus
// one entry into the bundle and bind-mounts that copy read-only over the
// file, so getpwuid()/getgrgid() resolve the platform-assigned ids without
// changing the image. The rules and their reasons: docs/passwd.md.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/passwd.h"
#include "specshim/modifiers/passwd_copies.h"
#include "specshim/node/container_match.h"
#include "specshim/node/userns.h"

namespace specshim {
namespace {

using namespace passwd;

constexpr std::size_t kMaxFileBytes = 10 << 20;  // as containerd's user-file reader
constexpr std::string_view kNameAnnotation = "specshim.io/passwd-name";
constexpr std::string_view kHomeAnnotation = "specshim.io/passwd-home";

struct Options {
  Template user_name{"user{uid}", "{uid}"};
  Template group_name{"group{gid}", "{gid}"};
  std::vector<std::pair<std::uint32_t, std::string>> group_names;  // [passwd] group-names, gid → name
  std::string gecos = "specshim runtime user";
  std::optional<std::string> home;  // unset: the spec's HOME, else /tmp
  std::string shell = "/sbin/nologin";
  bool allow_annotations = false;
  PasswdScope scope;
};

// DbFile is one of the two files the modifier manages (passwd_copies.h).
using DbFile = passwd::Copy;
constexpr DbFile kPasswdFile = passwd::kPasswdCopy;
constexpr DbFile kGroupFile = passwd::kGroupCopy;

// Identity is the container process's credentials from process.user: the
// ids it has inside the container, which its entries name.
struct Identity {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> additional_gids;
};

// HostView is how the kernel sees the process next to the image's files and
// how the copies are written: without a user namespace the ids are the
// process's own; with one they are the host ids its ids map to (the kernel
// checks a file's owner against those, and an image file owned by an
// unmapped host id is nobody's inside), and the copies belong to the host
// ids of container root, so the container sees them as root's.
struct HostView {
  Identity dac;
  std::optional<FileOwner> owner;  // of the copies; unset: root's
};

// Overrides are the tenant's annotations, already validated.
struct Overrides {
  std::optional<std::string> name;
  std::optional<std::string> home;
};

// skip and skip_all say why nothing is needed: the entry is there, or the
// process is root.
void skip(const DbFile& f, std::string_view why) {
  log::debug("passwd: leave {} alone: {}", f.path, why);
}
void skip_all(std::string_view why) {
  log::debug("passwd: leave the container alone: {}", why);
}

// Unensured is thrown where an entry is needed but cannot be ensured: it is
// a debug line, or with [passwd] required the create's error. file is
// nullptr when the whole container is left alone.
struct Unensured {
  const DbFile* file;
  std::string why;
};
[[noreturn]] void cannot(const DbFile& f, std::string why) {
  throw Unensured{&f, std::move(why)};
}
[[noreturn]] void cannot_all(std::string why) {
  throw Unensured{nullptr, std::move(why)};
}

std::optional<std::uint32_t> json_id(const Json* v) {
  if (!v || !v->is_number_unsigned()) return std::nullopt;
  auto n = v->get<std::uint64_t>();
  if (n > kMaxId) return std::nullopt;
  return static_cast<std::uint32_t>(n);
}

// identity reads process.user. A missing uid or gid is 0, as runc reads it.
std::optional<Identity> identity(const Spec& spec) {
  const Json* user = spec.find({"process", "user"});
  if (!user) {
    skip_all("the spec has no process.user");
    return std::nullopt;
  }
  Identity id;
  for (auto [key, out] : {std::pair{"uid", &id.uid}, std::pair{"gid", &id.gid}}) {
    const Json* v = user->is_object() && user->contains(key) ? &(*user)[key] : nullptr;
    if (!v) continue;
    auto n = json_id(v);
    if (!n) cannot_all(fmt::format("process.user.{} {} is not a usable id (0 to {})", key, v->dump(), kMaxId));
    *out = *n;
  }
  if (const Json* extra = spec.find({"process", "user", "additionalGids"}); extra && extra->is_array())
    for (const auto& g : *extra)
      if (auto n = json_id(&g)) id.additional_gids.push_back(*n);
  return id;
}

std::optional<std::string> tenant_annotation(const Spec& spec, std::string_view key, bool allowed) {
  auto v = spec.annotation(key);
  if (v && !allowed) {
    log::debug("passwd: ignore annotation {}: [passwd] allow-annotations is false", key);
    return std::nullopt;
  }
  return v;
}

// overrides validates the tenant's annotations. A bad one fails the create,
// whatever else the modifier would decide: it is an explicit request that
// cannot be honoured.
Overrides overrides(const Spec& spec, bool allowed) {
  Overrides o;
  if ((o.name = tenant_annotation(spec, kNameAnnotation, allowed)))
    if (auto why = name_problem(*o.name))
      throw Error(fmt::format("annotation `{}`: `{}` is not a valid user name: it {}", kNameAnnotation,
                              printable(*o.name), *why));
  if ((o.home = tenant_annotation(spec, kHomeAnnotation, allowed)))
    if (auto why = path_problem(*o.home))
      throw Error(fmt::format("annotation `{}`: `{}` is not a valid home directory: it {}", kHomeAnnotation,
                              printable(*o.home), *why));
  return o;
}

// mapped returns the host id container id `id` maps to, or throws: runc
// could not switch to an unmapped id, and no entry is ever written for one.
std::uint32_t mapped(const userns::IdMap& map, std::uint32_t id, std::string_view field, std::string_view mappings) {
  if (auto host = map.to_host(id)) return *host;
  throw Error(
      fmt::format("process.user.{} {} is outside linux.{} ({}): the process cannot run as it in its user "
                  "namespace, and no entry is written for it",
                  field, id, mappings, map.describe()));
}

// host_view says how the image's files are judged and the copies owned; it
// throws Unensured when the spec joins a user namespace whose mappings
// specshim cannot know.
HostView host_view(const Spec& spec, const Identity& id) {
  auto ns = userns::read(spec);
  if (!ns) return HostView{id, std::nullopt};
  if (!ns->known())
    cannot_all(fmt::format("the spec joins the user namespace `{}` without giving its uid and gid mappings", ns->path));
  HostView v;
  v.dac.uid = mapped(ns->uids, id.uid, "uid", "uidMappings");
  v.dac.gid = mapped(ns->gids, id.gid, "gid", "gidMappings");
  for (auto g : id.additional_gids)  // an unmapped one is no membership the kernel checks
    if (auto host = ns->gids.to_host(g)) v.dac.additional_gids.push_back(*host);
  auto root_uid = ns->uids.to_host(0), root_gid = ns->gids.to_host(0);
  if (root_uid && root_gid)
    v.owner = FileOwner{*root_uid, *root_gid};
  else
    log::debug("passwd: container root is not mapped ({} / {}): the copies stay host root's, mode 0644",
               ns->uids.describe(), ns->gids.describe());
  return v;
}

class PasswdModifier : public Modifier {
 public:
  explicit PasswdModifier(Options o) : opt_(std::move(o)) {}
  std::string_view name() const override { return "passwd"; }
  bool idempotent() const override { return true; }

  void apply(Spec& spec, Context& ctx) override {
    if (opt_.scope.match.opted_out(spec))
      return skip_all("opted out (annotation `" + opt_.scope.match.opt_out +
                      "` is \"true\"): no entry, required or not");
    if (!opt_.scope.match.holds(spec)) return skip_all("outside [passwd] match (" + opt_.scope.match.describe() + ")");
    Overrides over = overrides(spec, opt_.allow_annotations);
    ensure(nullptr, [&] {
      auto id = identity(spec);
      if (!id) return;
      if (id->uid == 0) return skip_all("uid 0 is root, which every image resolves; root is never synthesised");
      HostView view = host_view(spec, *id);
      std::filesystem::path rootfs = ctx.rootfs(spec);
      if (rootfs.empty()) cannot_all("the spec has no root.path");

      std::optional<std::string> user;
      ensure(&*id, [&] { user = add_user(spec, ctx, rootfs, *id, view, over); });
      ensure(&*id, [&] { add_groups(spec, ctx, rootfs, *id, view, user); });
    });
  }

 private:
  // add_user ensures the uid's entry and returns its name (nullopt when
  // specshim's copy from an earlier create is mounted already).
  std::optional<std::string> add_user(Spec& spec, Context& ctx, const std::filesystem::path& rootfs, const Identity& id,
                                      const HostView& view, const Overrides& over) const {
    auto file = base_file(spec, ctx, rootfs, kPasswdFile, view.dac);
    if (!file) return std::nullopt;
    if (auto name = uid_name(file->content, id.uid)) {
      skip(kPasswdFile,
           fmt::format("uid {} has an entry {}", id.uid, file->ours ? "in specshim's copy" : "in the image"));
      return name;
    }
    std::string user = over.name ? *over.name : opt_.user_name.expand(id.uid);
    if (name_taken(file->content, user))
      cannot(kPasswdFile, fmt::format("the name `{}` is already used in the image's file", user));
    PasswdEntry e{user, "x", id.uid, id.gid, opt_.gecos, home(spec, over), opt_.shell};
    add(spec, ctx, kPasswdFile, file->ours, append_line(file->content, format_passwd_line(e)), view.owner);
    return user;
  }

  // add_groups ensures a line for the gid (unless it is 0, root's group)
  // and for each additional gid that [passwd] group-names names, with the
  // user as its member: those are the node groups a device needs (Ascend's
  // HwHiAiUser), which tools inside look up by name. Other additional gids
  // get no line (KEP-3619: the kernel already has them).
  void add_groups(Spec& spec, Context& ctx, const std::filesystem::path& rootfs, const Identity& id,
                  const HostView& view, const std::optional<std::string>& user) const {
    std::vector<GroupEntry> wanted;
    if (id.gid == 0)
      skip(kGroupFile, "gid 0 is root's group; it is never synthesised");
    else
      wanted.push_back({named(id.gid).value_or(opt_.group_name.expand(id.gid)), "x", id.gid, ""});
    for (auto gid : id.additional_gids) {
      auto name = named(gid);
      if (!name || gid == id.gid) continue;
      if (std::any_of(wanted.begin(), wanted.end(), [&](const GroupEntry& g) { return g.gid == gid; })) continue;
      wanted.push_back({*name, "x", gid, user.value_or("")});
    }
    if (wanted.empty()) return;
    auto file = base_file(spec, ctx, rootfs, kGroupFile, view.dac);
    if (!file) return;
    std::string text = file->content;
    bool added = false;
    for (const auto& g : wanted) {
      if (has_gid(text, g.gid)) {
        skip(kGroupFile,
             fmt::format("gid {} has an entry {}", g.gid, file->ours ? "in specshim's copy" : "in the image"));
        continue;
      }
      if (name_taken(text, g.name))
        cannot(kGroupFile, fmt::format("the name `{}` is already used in the image's file", g.name));
      text = append_line(text, format_group_line(g));
      added = true;
    }
    if (added) add(spec, ctx, kGroupFile, file->ours, std::move(text), view.owner);
  }

  std::optional<std::string> named(std::uint32_t gid) const {
    for (const auto& [g, name] : opt_.group_names)
      if (g == gid) return name;
    return std::nullopt;
  }

  // BaseFile is the text the modifier adds lines to: the image's file ("" when
  // the image has none), or specshim's copy of this create when an earlier
  // pass of the chain wrote it (ours; its mount is in the spec already).
  struct BaseFile {
    std::string content;
    bool ours = false;
  };

  // base_file returns the file to patch, or nullopt when specshim's copy from
  // an earlier create is mounted already; it throws Unensured when f cannot
  // be patched. dac holds the ids the kernel checks the file's owner and
  // group against.
  std::optional<BaseFile> base_file(const Spec& spec, const Context& ctx, const std::filesystem::path& rootfs,
                                    const DbFile& f, const Identity& dac) const {
    if (const Json* m = passwd::mount_over(spec, f)) {
      std::string source = m->value("source", "");
      if (source == (ctx.bundle / f.bundle_name).string()) {
        auto copy = ctx.bundle_files.find(std::string(f.bundle_name));
        if (copy != ctx.bundle_files.end()) return BaseFile{copy->second.content, true};
        skip(f, "specshim already mounts its copy there");
        return std::nullopt;
      }
      cannot(f, fmt::format("the spec already mounts `{}` at `{}`", printable(source),
                            printable((*m)["destination"].get<std::string>())));
    }
    std::optional<fs::RootFile> file;
    try {
      file = fs::read_file_in_root(rootfs, f.path, kMaxFileBytes);
    } catch (const Error& e) {
      cannot(f, describe(e));
    }
    if (!file) return BaseFile{};
    if (file->content.find('\0') != std::string::npos)
      cannot(f, "the image's file holds NUL bytes, so it is not a text database");
    const Json* readonly = spec.find({"root", "readonly"});
    bool root_ro = readonly && readonly->is_boolean() && readonly->get<bool>();
    if (!root_ro && writable_by(file->st, dac.uid, dac.gid, dac.additional_gids))
      cannot(f,
             fmt::format("the image's file (mode {:04o}, host owner {}:{}) is writable by the process (host uid {}), "
                         "so the image manages it",
                         file->st.st_mode & 07777, file->st.st_uid, file->st.st_gid, dac.uid));
    return BaseFile{std::move(file->content), false};
  }

  // home picks the entry's home: the annotation, the config, the spec's HOME,
  // else /tmp. HOME is tenant input, so it passes the same check as the rest.
  std::string home(const Spec& spec, const Overrides& over) const {
    if (over.home) return *over.home;
    if (opt_.home) return *opt_.home;
    const Json* env = spec.find({"process", "env"});
    std::string value;
    if (env && env->is_array())
      for (const auto& e : *env)
        if (e.is_string() && e.get_ref<const std::string&>().rfind("HOME=", 0) == 0) {
          value = e.get<std::string>().substr(5);  // the first one wins, as getenv reads it
          break;
        }
    if (value.empty()) return "/tmp";
    if (auto why = path_problem(value))
      throw Error(fmt::format("process.env `HOME`: `{}` cannot be the home of the passwd entry: it {}",
                              printable(value), *why));
    return value;
  }

  // add writes content as specshim's copy of f, and mounts the copy over f
  // unless an earlier pass did (mounted).
  static void add(Spec& spec, Context& ctx, const DbFile& f, bool mounted, std::string content,
                  const std::optional<FileOwner>& owner) {
    std::filesystem::path source = ctx.bundle / f.bundle_name;
    ctx.bundle_files[std::string(f.bundle_name)] = BundleFile{std::move(content), 0644, owner};
    if (mounted) return;
    log::debug("passwd: mount {} over {}", source.string(), f.path);
    Json mount = Json::object();
    mount["destination"] = f.path;
    mount["type"] = "bind";
    mount["source"] = source.string();
    mount["options"] = Json::array();
    for (const char* o : passwd::kCopyMountOptions) mount["options"].push_back(o);
    spec.array_at({"mounts"}).push_back(std::move(mount));
  }

  // ensure runs step; an entry it cannot ensure is a debug line, or with
  // [passwd] required the create's error (an Error, which passes through an
  // enclosing ensure).
  template <typename Step>
  void ensure(const Identity* id, Step step) const {
    try {
      step();
    } catch (const Unensured& u) {
      if (!opt_.scope.required) {
        if (u.file)
          skip(*u.file, u.why);
        else
          skip_all(u.why);
        return;
      }
      std::string whose = id ? fmt::format("uid {} (gid {})", id->uid, id->gid) : std::string("the process");
      std::string where = u.file ? fmt::format("the container's {}", u.file->path) : std::string("the container");
      throw Error(
          fmt::format("no entry for {} can be ensured in {} ([passwd] required = true): {}", whose, where, u.why));
    }
  }

  Options opt_;
};

void read_text(config::Section& s, std::string_view key, std::string& out,
               std::optional<std::string> (*check)(std::string_view)) {
  if (auto v = s.string(key)) {
    if (auto why = check(*v)) s.fail(key, fmt::format("`{}` {}", printable(*v), *why));
    out = *v;
  }
}

void read_template(config::Section& s, std::string_view key, Template& t) {
  if (auto v = s.string(key)) t.text = *v;
  if (auto why = t.problem()) s.fail(key, *why);
}

}  // namespace

PasswdScope read_passwd_scope(config::Section& s, std::string_view opt_out) {
  return {read_container_match(s, "", opt_out), s.boolean("required").value_or(false)};
}

std::unique_ptr<Modifier> make_passwd(config::Section& s, const ChainPlan& plan) {
  Options o;
  bool enabled = s.boolean("enabled").value_or(true);
  read_template(s, "name-template", o.user_name);
  read_template(s, "group-name-template", o.group_name);
  if (auto names = s.table("group-names")) {
    for (const auto& key : names->keys()) {
      auto gid = parse_id(key);
      if (!gid || *gid == 0) names->fail(key, "a key is a gid, 1 to 4294967294");
      auto name = names->string(key);
      if (!name) names->fail(key, "wants the group's name, such as \"HwHiAiUser\"");
      if (auto why = group_name_problem(*name)) names->fail(key, fmt::format("`{}` {}", printable(*name), *why));
      for (const auto& [other, taken] : o.group_names)
        if (taken == *name) names->fail(key, fmt::format("`{}` already names gid {}", *name, other));
      o.group_names.emplace_back(*gid, *name);
    }
    names->finish();
  }
  read_text(s, "gecos", o.gecos, field_problem);
  std::string home;
  read_text(s, "home", home, path_problem);
  if (!home.empty()) o.home = home;
  read_text(s, "shell", o.shell, path_problem);
  o.allow_annotations = s.boolean("allow-annotations").value_or(false);
  o.scope = read_passwd_scope(s, plan.opt_out);
  if (!enabled) return nullptr;
  return std::make_unique<PasswdModifier>(std::move(o));
}

}  // namespace specshim
