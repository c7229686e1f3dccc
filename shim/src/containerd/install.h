// SPDX-License-Identifier: Apache-2.0
// The installer engine of `specshim containerd configure|unconfigure|check`:
// specshim registered with the node's containerd, as the new handler
// "specshim" or as the BinaryName of an existing handler (--handler NAME),
// and taken back byte for byte. Every message keeps the words of
// packaging/install-on-host.sh, whose logic this is, and the state file is
// the one that script writes (a node installed by either uninstalls with
// either).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/node/containerd_config.h"

namespace specshim::shim::containerd {

namespace cc = node::containerd_config;

inline constexpr const char* kStateRel = "/var/lib/specshim/install-state";
inline constexpr const char* kConfigRel = "/etc/specshim/config.toml";
inline constexpr const char* kDropinRel = "/etc/containerd/conf.d/specshim.toml";
inline constexpr const char* kBeginMark =
    "# >>> specshim runtime handler (added by install-on-host.sh; remove with --uninstall) >>>";
inline constexpr const char* kEndMark = "# <<< specshim runtime handler <<<";
inline constexpr const char* kDefaultRestart =
    "nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart containerd";
// containerd's PATH under systemd, where a relative BinaryName is looked up.
inline constexpr const char* kNodePath = "/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin";

// Timeouts of the external commands (generous: a node under load is slow).
inline constexpr int kRestartSeconds = 120;
inline constexpr int kCheckSeconds = 60;
inline constexpr int kVersionSeconds = 30;

// Options are the run's command line.
struct Options {
  std::string host_root = "/host";
  std::string source_root = "/";
  std::string binary_path = "/usr/local/bin/specshim";
  std::string containerd_config = "/etc/containerd/config.toml";
  std::string config_version;                 // "" unless given
  std::string restart_cmd = kDefaultRestart;  // "" = --no-restart
  std::string handler = "specshim";
  bool chain = false;
  std::string check_cmd;    // "" = chroot HOST_ROOT containerd
  std::string version_cmd;  // "" = chroot HOST_ROOT containerd --version
  std::string config_file;  // --config: the site's specshim config, to install over the node's ("" = none)
};

// Run is one configure, unconfigure or check: its options, whether it only
// plans (check), and what it changed or would change.
struct Run {
  Options opt;
  bool dry = false;
  bool changed = false;              // the containerd configuration changed
  std::vector<std::string> planned;  // check: every change configure would make
  std::vector<std::string> backups;  // the backups this run made (gone on a rollback)

  std::string host(const std::string& p) const { return opt.host_root + p; }
  std::string strip_root(const std::string& p) const;
  // log prints "specshim-install: MSG" on stdout.
  void log(const std::string& msg) const;
  // change: configure logs msg; check records it and prints "would: MSG".
  void change(const std::string& msg);
};

// ---- state file (state.cpp) -----------------------------------------------------
// state_get is the last value of KEY in the state file ("" when none).
std::string state_get(const Run& run, const std::string& key);
bool state_exists(const Run& run);
void state_write(Run& run, const std::vector<std::string>& lines);
std::string b64(const std::string& s);
std::string unb64(const std::string& s);

// ---- files and byte-exact edits (edit.cpp) ---------------------------------------
std::optional<std::string> read_file(const std::string& path);
bool is_file(const std::string& path);
bool exists(const std::string& path);
bool is_dir(const std::string& path);
bool is_executable(const std::string& path);
mode_t mode_of(const std::string& path);
void mkdirs(const std::string& dir);
// replace_file writes content to target through a temp file in its directory and a rename.
void replace_file(const std::string& target, const std::string& content, mode_t mode);
// rewrite replaces an existing file, keeping its mode (chmod --reference).
void rewrite(const std::string& target, const std::string& content);
// backup copies file to FILE.specshim-backup.YYYYMMDDTHHMMSSZ (UTC) and says so.
void backup(Run& run, const std::string& file);
bool ends_with_newline(const std::string& content);
bool has_line(const std::string& content, const std::string& line);
// line_at is line n (1-based) without its \n ("" past the end).
std::string line_at(const std::string& content, int n);
// The line edits keep every other byte, a missing final newline included.
std::string replace_line(const std::string& content, int n, const std::string& text);
std::string insert_after(const std::string& content, int n, const std::string& text);
std::string delete_line(const std::string& content, int n);
// Block is a file split at specshim's marked lines (sed's /BEGIN/,/END/ range).
struct Block {
  std::string inside;
  std::string outside;
};
Block split_block(const std::string& content);
// remove_block deletes the marked lines byte-exactly; throws when the markers are damaged.
std::string remove_block(const Run& run, const std::string& cfg, const std::string& content);

// ---- imports and versions (imports.cpp) -----------------------------------------------
bool covers(const Run& run, const std::string& entry);
std::string covering_entry(const Run& run, const std::string& text);
std::vector<std::string> import_order(const Run& run, const std::string& cfg);
std::vector<std::string> import_files(const Run& run, const std::string& cfg);
std::string config_version(Run& run, const std::string& cfg);
void check_versions(const Run& run, const std::string& cfg, const std::string& root);

// Install is what the state file records of the containerd edits, carried
// from the last install into this one.
struct Install {
  std::string version;
  std::string v2_newline, v2_created, imports_edit, dropin_dir_created, imported_by;
};

// ---- the new handler "specshim" (block.cpp, dropin.cpp) ------------------------------------
bool uses_systemd_cgroup(const std::string& cfg);
std::string render_snippet(const Run& run, const std::string& src, const std::string& cfg);
void install_v2(Run& run, const std::string& cfg, Install& st);
void install_block(Run& run, const std::string& cfg, const std::string& block, const std::string& what, Install& st);
void install_v3(Run& run, const std::string& cfg, Install& st);
void install_dropin(Run& run, const std::string& cfg, const std::string& rendered, Install& st);
void uninstall_v2(Run& run, const std::string& cfg);
void uninstall_v3(Run& run, const std::string& cfg, const std::string& version);

// ---- --handler NAME (handler_scan.cpp, handler_v2.cpp, handler_v3.cpp, chain.cpp) ----------
struct HandlerScan {
  bool exists = false;
  int options = 0;   // line of the [<handler>.options] header
  int bin_line = 0;  // the BinaryName line under it
  std::string bin, type, default_runtime;
  bool cri = false;
};
// Plan is the edit of a --handler install, decided before anything changes.
struct Plan {
  cc::HandlerPaths paths;
  std::string version;
  std::string edit, prev_edit;
  int edit_line = 0;
  std::string new_line, old_line, old_binary, chain_path;
  bool block_handler = false;
  bool import_defines = false;
};
HandlerScan scan_handler(const Run& run, const Plan& plan, const std::string& text, const std::string& shown);
void check_type(const Run& run, const std::string& type_raw, const std::string& where);
void note_default(const Run& run, const std::string& raw);
struct Imported {
  std::string bin, default_runtime, type;
  bool defines = false;
};
Imported check_imports(const Run& run, const Plan& plan, const std::string& cfg, const std::string& version);
std::string binary_line(const Run& run, const Plan& plan, const std::string& line, bool inserted,
                        const std::string& more = "");
void plan_handler_v2(Run& run, Plan& plan, const std::string& cfg);
void apply_handler_v2(Run& run, Plan& plan, const std::string& cfg, Install& st);
void uninstall_handler_line(Run& run, const std::string& cfg);
void plan_handler_v3(Run& run, Plan& plan, const std::string& cfg);
void apply_handler_v3(Run& run, Plan& plan, const std::string& cfg, Install& st);
void log_takeover(const Run& run, const Plan& plan, const std::string& where);
void plan_chain(Run& run, Plan& plan);
// config_runtime_path is [runtime] path of a specshim config; nullopt when unreadable.
std::optional<std::string> config_runtime_path(const std::string& text);
std::string render_config(const Run& run, const std::string& chain_path);

// ---- check before restart (check.cpp) ------------------------------------------------------
struct Snapshot {
  std::vector<std::string> files;
  std::vector<std::optional<std::string>> bytes;
  std::vector<mode_t> modes;
  std::vector<std::string> new_dirs;
};
Snapshot snapshot_config(const Run& run);
void restore_config(const Run& run, const Snapshot& snap);
void check_config(Run& run, const Snapshot& snap);
void restart_containerd(Run& run);
// version_output is what `containerd --version` of the node prints; nullopt when it fails.
std::optional<std::string> version_output(const Run& run);

// ---- the package's files (payload.cpp) -----------------------------------------------------
struct Payload {
  bool package_binary = false;
  std::string binary_installed, helper_installed, config_installed, config_chain_path;
};
std::string elf_machine(const std::string& file);
void preflight(Run& run);
// check_new_config refuses, before anything changes, a specshim config that
// this package's specshim cannot load: the one --config gives, else the
// node's, else the package's (rendered with chain_path).
void check_new_config(const Run& run, const std::string& chain_path);
void install_binary(Run& run, Payload& p);
void install_helper(Run& run, Payload& p);
void install_config(Run& run, Payload& p, const std::string& chain_path);
void uninstall_payload(Run& run);

// ---- the steps in order (configure.cpp) -------------------------------------------------
// validate refuses a bad command line with install-on-host.sh's messages.
void validate(Options& opt);
void configure(Run& run);
void unconfigure(Run& run);

}  // namespace specshim::shim::containerd
