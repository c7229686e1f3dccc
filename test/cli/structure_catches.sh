#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check-structure.py fails on each rule it states: a tree that breaks
# one rule at a time, and the message that names the file.
set -euo pipefail
script=${1:?usage: structure_catches.sh CHECK_STRUCTURE_PY}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A tree that follows the rules: base under node, spec-modifiers and live
# side by side on node, shim on top.
good() {
  rm -rf "$tmp/tree"
  mkdir -p "$tmp/tree"/{base,kubelet-client,node,spec-modifiers,live,shim}/{include/specshim,src} "$tmp/tree/test"
  cd "$tmp/tree"
  printf '#pragma once\n' > base/include/specshim/error.h
  printf '#include "specshim/error.h"\n' > base/src/error.cpp
  printf '#pragma once\n' > base/src/private.h
  printf '#pragma once\n#include "specshim/error.h"\n' > node/include/specshim/grant.h
  printf '#pragma once\n#include "specshim/error.h"\n#include "specshim/grant.h"\n' > spec-modifiers/include/specshim/chain.h
  printf '#include "specshim/chain.h"\n' > spec-modifiers/src/chain.cpp
  printf '#pragma once\n#include "specshim/error.h"\n#include "specshim/grant.h"\n' > live/include/specshim/container.h
  printf '#include "specshim/container.h"\n#include "specshim/chain.h"\n' > shim/src/main.cpp
}

fails_with() {  # what the check must say
  local out
  if out=$(python3 "$script" "$tmp/tree" 2>&1); then
    echo "FAIL: check-structure passed a tree that should fail with: $1" >&2
    exit 1
  fi
  if [[ $out != *"$1"* ]]; then
    echo "FAIL: expected \`$1\` in:" >&2
    echo "$out" >&2
    exit 1
  fi
}

good
python3 "$script" "$tmp/tree" > /dev/null || { echo "FAIL: the good tree does not pass" >&2; exit 1; }

good  # another library's src/
printf '#include "../../base/src/private.h"\n' >> spec-modifiers/src/chain.cpp
fails_with 'spec-modifiers/src/chain.cpp: includes "../../base/src/private.h" from base/src/'

good  # upward: base includes a modifier header
printf '#include "specshim/chain.h"\n' >> base/src/error.cpp
fails_with 'base/src/error.cpp: includes "specshim/chain.h" of spec-modifiers, which base must not depend on'

good  # downward but against the order: spec-modifiers includes live (live stands on spec-modifiers)
printf '#include "specshim/container.h"\n' >> spec-modifiers/src/chain.cpp
fails_with 'spec-modifiers/src/chain.cpp: includes "specshim/container.h" of live, which spec-modifiers must not depend on'

good  # sideways: live includes a modifier header (both stand on node)
printf '#include "specshim/chain.h"\n' >> live/include/specshim/container.h
fails_with 'live/include/specshim/container.h: includes "specshim/chain.h" of spec-modifiers, which live must not depend on'

good  # down past its floor: node includes a modifier header
printf '#include "specshim/chain.h"\n' >> node/include/specshim/grant.h
fails_with 'node/include/specshim/grant.h: includes "specshim/chain.h" of spec-modifiers, which node must not depend on'

good  # a circle: a.cpp -> b.h, b.cpp -> a.h
printf '#pragma once\n' > base/src/a.h
printf '#pragma once\n' > base/src/b.h
printf '#include "a.h"\n#include "b.h"\n' > base/src/a.cpp
printf '#include "b.h"\n#include "a.h"\n' > base/src/b.cpp
fails_with 'include circle between modules: base/src/a <-> base/src/b'

good  # a long file
seq 1 601 | sed 's|^|// |' > test/long_test.cpp
fails_with 'test/long_test.cpp: 601 lines, more than 600'

echo "check-structure fails on each of its rules"
