// SPDX-License-Identifier: Apache-2.0
// The installer engine's byte-exact edits (shim/src/containerd/edit.cpp): a
// line replaced, inserted or deleted keeps every other byte, a missing final
// newline and CRs included; the marked block comes out whole.
#include <catch2/catch.hpp>

#include "containerd/install.h"

using namespace specshim::shim::containerd;

TEST_CASE("containerd install: replace a line, final newline or not") {
  CHECK(replace_line("a\nb\nc\n", 2, "B") == "a\nB\nc\n");
  CHECK(replace_line("a\nb\nc", 3, "C") == "a\nb\nC");
  CHECK(replace_line("a\r\nb\r\n", 1, "A\r") == "A\r\nb\r\n");
  CHECK(replace_line("only", 1, "x") == "x");
}

TEST_CASE("containerd install: insert after a line, final newline or not") {
  CHECK(insert_after("a\nb\n", 1, "x") == "a\nx\nb\n");
  CHECK(insert_after("a\nb\n", 2, "x") == "a\nb\nx\n");
  CHECK(insert_after("a\nb", 2, "x") == "a\nb\nx");
  CHECK(insert_after("[o]\r\nk = 1\r\n", 1, "  B = 1\r") == "[o]\r\n  B = 1\r\nk = 1\r\n");
}

TEST_CASE("containerd install: delete a line, final newline or not") {
  CHECK(delete_line("a\nb\nc\n", 2) == "a\nc\n");
  CHECK(delete_line("a\nb\nc", 3) == "a\nb");
  CHECK(delete_line("a\r\nb\r\n", 1) == "b\r\n");
  CHECK(delete_line("a", 1).empty());
}

TEST_CASE("containerd install: each edit undoes the other byte for byte") {
  for (std::string text : {"x\ny\n", "x\r\ny", "x\ny"}) {
    CHECK(delete_line(insert_after(text, 1, "new"), 2) == text);
    auto old = line_at(text, 2);
    CHECK(replace_line(replace_line(text, 2, "new"), 2, old) == text);
  }
}

TEST_CASE("containerd install: the marked block, split and removed") {
  Run run;
  run.opt.host_root = "/host";
  std::string block = std::string(kBeginMark) + "\nk = 1\n" + kEndMark + "\n";
  std::string text = "a = 1\n" + block + "b = 2";
  auto b = split_block(text);
  CHECK(b.inside == block);
  CHECK(b.outside == "a = 1\nb = 2");
  CHECK(remove_block(run, "/host/c.toml", text) == "a = 1\nb = 2");
  CHECK(remove_block(run, "/host/c.toml", "x\n" + std::string(kBeginMark) + "\n" + kEndMark) == "x\n");
  CHECK_THROWS_WITH(remove_block(run, "/host/c.toml", "x\n" + std::string(kBeginMark) + "\n"),
                    "/c.toml: specshim's markers are damaged; remove the block by hand");
  CHECK(has_line(text, kBeginMark));
  CHECK_FALSE(has_line("a\r\n" + std::string(kBeginMark) + "\r\n", kBeginMark));
}

TEST_CASE("containerd install: the state file's base64 is base64 -w0") {
  CHECK(b64("").empty());
  CHECK(b64("f") == "Zg==");
  CHECK(b64("fo") == "Zm8=");
  CHECK(b64("foo") == "Zm9v");
  std::string line = "        BinaryName = \"/usr/bin/nvidia-container-runtime\"   # x\r";
  CHECK(unb64(b64(line)) == line);
}
