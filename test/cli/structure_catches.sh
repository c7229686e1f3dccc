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
  mkdir -p "$tmp/tree"/{base,kubelet-client,node,spec-modifiers,live,shim}/src "$tmp/tree/test"
  mkdir -p "$tmp/tree"/base/include/specshim/base "$tmp/tree"/node/include/specshim/node \
    "$tmp/tree"/spec-modifiers/include/specshim/modifiers "$tmp/tree"/live/include/specshim/live
  cd "$tmp/tree"
  printf '#pragma once\n' > base/include/specshim/base/error.h
  printf '#include "specshim/base/error.h"\n' > base/src/error.cpp
  printf '#pragma once\n' > base/src/private.h
  printf '#pragma once\n#include "specshim/base/error.h"\n' > node/include/specshim/node/grant.h
  printf '#pragma once\n#include "specshim/base/error.h"\n#include "specshim/node/grant.h"\n' > spec-modifiers/include/specshim/modifiers/chain.h
  printf '#include "specshim/modifiers/chain.h"\n' > spec-modifiers/src/chain.cpp
  printf '#pragma once\n#include "specshim/base/error.h"\n#include "specshim/node/grant.h"\n' > live/include/specshim/live/container.h
  printf '#include "specshim/live/container.h"\n#include "specshim/modifiers/chain.h"\n' > shim/src/main.cpp
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
printf '#include "specshim/modifiers/chain.h"\n' >> base/src/error.cpp
fails_with 'base/src/error.cpp: includes "specshim/modifiers/chain.h" of spec-modifiers, which base must not depend on'

good  # downward but against the order: spec-modifiers includes live (live stands on spec-modifiers)
printf '#include "specshim/live/container.h"\n' >> spec-modifiers/src/chain.cpp
fails_with 'spec-modifiers/src/chain.cpp: includes "specshim/live/container.h" of live, which spec-modifiers must not depend on'

good  # sideways: live includes a modifier header (both stand on node)
printf '#include "specshim/modifiers/chain.h"\n' >> live/include/specshim/live/container.h
fails_with 'live/include/specshim/live/container.h: includes "specshim/modifiers/chain.h" of spec-modifiers, which live must not depend on'

good  # down past its floor: node includes a modifier header
printf '#include "specshim/modifiers/chain.h"\n' >> node/include/specshim/node/grant.h
fails_with 'node/include/specshim/node/grant.h: includes "specshim/modifiers/chain.h" of spec-modifiers, which node must not depend on'

good  # a circle: a.cpp -> b.h, b.cpp -> a.h
printf '#pragma once\n' > base/src/a.h
printf '#pragma once\n' > base/src/b.h
printf '#include "a.h"\n#include "b.h"\n' > base/src/a.cpp
printf '#include "b.h"\n#include "a.h"\n' > base/src/b.cpp
fails_with 'include circle between modules: base/src/a <-> base/src/b'

good  # a long file
seq 1 601 | sed 's|^|// |' > test/long_test.cpp
fails_with 'test/long_test.cpp: 601 lines, more than 600'

good  # a long library file: 450 is the limit outside tests
seq 1 451 | sed 's|^|// |' > base/src/long.cpp
fails_with 'base/src/long.cpp: 451 lines, more than 450'

good  # a header outside its library's prefix
printf '#pragma once\n' > spec-modifiers/include/specshim/loose.h
fails_with "spec-modifiers/include/specshim/loose.h: spec-modifiers's headers live in spec-modifiers/include/specshim/modifiers/"

echo "check-structure fails on each of its rules"
