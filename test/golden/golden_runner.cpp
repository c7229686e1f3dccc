// SPDX-License-Identifier: Apache-2.0
// golden_runner CASE_DIR: runs the real create pipeline on a copy of a golden
// case and compares the result. A case directory holds
//   input.json            config.json before
//   config.toml           specshim config (optional; usually limits [chain] order)
//   rootfs/ ...           files the modifiers read (optional)
//   expected.json         config.json after, or
//   expected-error.txt    a text the error message must contain
//   expected-files/NAME   bundle files the modifiers must write (optional)
// "@BUNDLE@" in config.toml, input.json and the expected files stands for the
// bundle directory. Every passing case is also re-run on its own output, which
// must change nothing (idempotence). SPECSHIM_UPDATE_GOLDEN=1 rewrites
// expected.json and expected-files/ for review with git diff.
#include <cstdlib>
#include <iostream>

#include "bundle.h"
#include "specshim/base/error.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim;
using specshim::test::read_file;
using specshim::test::replace_all;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: golden_runner CASE_DIR\n";
    return 2;
  }
  fs::path case_dir = argv[1];
  test::TempDir tmp;
  fs::path bundle = tmp.path() / "bundle";
  fs::copy(case_dir, bundle, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  auto sub = [&](std::string s) { return replace_all(std::move(s), "@BUNDLE@", bundle.string()); };
  auto unsub = [&](std::string s) { return replace_all(std::move(s), bundle.string(), "@BUNDLE@"); };
  test::write_file(bundle / "config.json", sub(read_file(case_dir / "input.json")));
  std::string config = fs::exists(case_dir / "config.toml") ? sub(read_file(case_dir / "config.toml")) : "";
  bool update = std::getenv("SPECSHIM_UPDATE_GOLDEN") != nullptr;

  if (fs::exists(case_dir / "expected-error.txt")) {
    std::string want = read_file(case_dir / "expected-error.txt");
    while (!want.empty() && (want.back() == '\n' || want.back() == ' ')) want.pop_back();
    want = sub(want);
    try {
      test::run_pipeline(bundle, config);
    } catch (const std::exception& e) {
      std::string got = describe(e);
      if (got.find(want) != std::string::npos) return 0;
      std::cerr << "error text differs\n  want (substring): " << want << "\n  got: " << got << "\n";
      return 1;
    }
    std::cerr << "expected an error containing: " << want << "\n";
    return 1;
  }

  create::Outcome out = [&] {
    try {
      return test::run_pipeline(bundle, config);
    } catch (const std::exception& e) {
      std::cerr << "unexpected error: " << describe(e) << "\n";
      std::exit(1);
    }
  }();
  int failures = 0;
  Json actual = Json::parse(unsub(out.spec.serialize()));
  if (update) {
    test::write_file(case_dir / "expected.json", actual.dump(2) + "\n");
    fs::remove_all(case_dir / "expected-files");
    for (const auto& [name, f] : out.ctx.bundle_files)
      test::write_file(case_dir / "expected-files" / name, unsub(f.content));
  } else {
    Json expected = Json::parse(read_file(case_dir / "expected.json"));
    if (actual != expected) {
      std::cerr << "spec differs from expected.json; patch expected -> actual:\n"
                << Json::diff(expected, actual).dump(2) << "\n";
      ++failures;
    }
    std::size_t expected_files = 0;
    if (fs::exists(case_dir / "expected-files")) {
      for (const auto& e : fs::directory_iterator(case_dir / "expected-files")) {
        ++expected_files;
        std::string name = e.path().filename();
        auto it = out.ctx.bundle_files.find(name);
        if (it == out.ctx.bundle_files.end()) {
          std::cerr << "bundle file " << name << " was not written\n";
          ++failures;
        } else if (unsub(it->second.content) != read_file(e.path())) {
          std::cerr << "bundle file " << name << " differs:\n--- expected\n"
                    << read_file(e.path()) << "--- actual\n"
                    << unsub(it->second.content) << "\n";
          ++failures;
        }
      }
    }
    if (expected_files != out.ctx.bundle_files.size()) {
      std::cerr << "modifiers wrote " << out.ctx.bundle_files.size() << " bundle file(s), expected " << expected_files
                << "\n";
      ++failures;
    }
  }

  // Idempotence: the output, committed and run again, must not change.
  create::BundleDir dir(bundle);
  create::commit(dir, out);
  create::Outcome again = test::run_pipeline(bundle, config);
  if (again.changed()) {
    std::cerr << "not idempotent: a second run changed the spec by "
              << Json::diff(again.original(), again.spec.json()).dump(2) << " and wrote "
              << again.ctx.bundle_files.size() << " file(s)\n";
    ++failures;
  }
  return failures ? 1 : 0;
}
