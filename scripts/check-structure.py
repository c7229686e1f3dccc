#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The house rules the compiler does not check (README, "Layout").

  check-structure.py [--report] [SOURCE_DIR]

Fails (exit 1), naming each offending file, when:
  - a file includes a header from another library's src/ (each library
    exposes its include/ only);
  - a library includes a header of a library it must not depend on: the
    layers are base at the bottom, kubelet-client over it, node (what the
    node has and what was granted) over them, spec-modifiers and live (the
    hot-plug engine) side by side on node, the front-ends (shim, nri) on top
    (LAYERS below);
  - the includes form a circle between modules (a module is foo.h with
    foo.cpp beside it: checkpoint.cpp -> wire.h -> ... -> checkpoint.h);
  - a library's header is not under include/specshim/<its prefix>/ (PREFIX
    below: `specshim/base/fs.h`, `specshim/modifiers/chain.h`, ...);
  - a library source file is longer than MAX_LINES lines (a test file:
    MAX_TEST_LINES).
--report prints the library dependency graph and the longest files.
"""
import os
import re
import sys

MAX_LINES = 450  # a library's source file
MAX_TEST_LINES = 600
# PREFIX: the folder under include/specshim/ that holds each library's headers.
PREFIX = {"base": "base", "kubelet-client": "kubelet", "node": "node", "spec-modifiers": "modifiers",
          "live": "live", "nri": "nri"}

# LAYERS: each library folder and the libraries it may include from.
LAYERS = {
    "base": set(),
    "kubelet-client": {"base"},
    "node": {"base", "kubelet-client"},
    "spec-modifiers": {"base", "kubelet-client", "node"},
    "live": {"base", "kubelet-client", "node"},
    "shim": {"base", "kubelet-client", "node", "spec-modifiers", "live"},
    # The second front-end, beside the shim: the create core through NRI.
    "nri": {"base", "kubelet-client", "node", "spec-modifiers"},
}
TESTS = "test"
SOURCE = re.compile(r"\.(cpp|h|c)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root, folder):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
        dirnames.sort()
        for name in sorted(filenames):
            if SOURCE.search(name):
                yield os.path.relpath(os.path.join(dirpath, name), root)


def library_of(path):
    top = path.split(os.sep, 1)[0]
    return top if top in LAYERS else None


def resolve(root, path, name):
    """The file `#include "name"` in path lands on, or None."""
    here = os.path.join(os.path.dirname(path), name)
    if os.path.isfile(os.path.join(root, here)):
        return os.path.normpath(here)
    own = library_of(path)
    # A library's own src/ is on its private include path (shim, kubelet-client).
    if own and os.path.isfile(os.path.join(root, own, "src", name)):
        return os.path.join(own, "src", name)
    for lib in LAYERS:
        candidate = os.path.join(lib, "include", name)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def module(path):
    """foo.h and foo.cpp in one folder are one module."""
    return os.path.splitext(path)[0]


def circles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv):
    report = "--report" in argv
    args = [a for a in argv if not a.startswith("--")]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    graph = {}
    deps = {lib: set() for lib in LAYERS}
    lengths = []

    files = [f for lib in LAYERS for f in sources(root, lib)]
    tests = list(sources(root, TESTS))
    for path in files + tests:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        lengths.append((lines, path))
        own = library_of(path)
        limit = MAX_LINES if own else MAX_TEST_LINES
        if lines > limit:
            problems.append(f"{path}: {lines} lines, more than {limit}: split it by concern")
        parts = path.split(os.sep)
        if own in PREFIX and parts[1] == "include" and parts[2:4] != ["specshim", PREFIX[own]]:
            problems.append(f"{path}: {own}'s headers live in {own}/include/specshim/{PREFIX[own]}/")
        for name in INCLUDE.findall(text):
            target = resolve(root, path, name)
            if target is None:
                continue  # generated (protobuf, a build-tree header) or a system header in quotes
            to = library_of(target)
            if to is None:
                continue  # a test support header
            parts = target.split(os.sep)
            if own != to and parts[1] == "src":
                problems.append(f'{path}: includes "{name}" from {to}/src/: use {to}\'s include/')
            if own is None or own == to:
                if own is not None and module(target) != module(path):
                    graph.setdefault(module(path), set()).add(module(target))
                continue
            deps[own].add(to)
            if to not in LAYERS[own]:
                problems.append(f'{path}: includes "{name}" of {to}, which {own} must not depend on '
                                f"(it may use: {', '.join(sorted(LAYERS[own])) or 'nothing'})")
            graph.setdefault(module(path), set()).add(module(target))

    for component in circles(graph):
        problems.append("include circle between modules: " + " <-> ".join(component))

    if report:
        print("library dependencies (from the includes):")
        for lib in LAYERS:
            print(f"  {lib} -> {', '.join(sorted(deps[lib])) or '(none)'}")
        print("longest files:")
        for lines, path in sorted(lengths, reverse=True)[:10]:
            print(f"  {lines:5d} {path}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-structure: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-structure: {len(files)} library files and {len(tests)} test files follow the layout")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
