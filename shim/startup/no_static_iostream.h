// SPDX-License-Identifier: Apache-2.0
// <iostream> without its static initializer, force-included into the own
// verbs' sources (shim/CMakeLists.txt), which use CLI11 and std::cout.
//
// With GCC 12's libstdc++ every translation unit that includes <iostream>
// gets a static std::ios_base::Init, constructed at start-up: the standard
// streams and the whole classic locale, ~44 K instructions and ~9 page faults
// of every exec of specshim, passthrough included, for streams only the own
// verbs use. This header makes a later #include <iostream> a no-op (its
// include guard is defined) and declares the streams; main() constructs one
// std::ios_base::Init before it runs an own verb. (libstdc++ 13 and later
// construct the streams inside the library and need none of this.)
#pragma once

#include <istream>
#include <ostream>

// The namespace macros confuse clang-format.
// clang-format off
#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1
namespace std _GLIBCXX_VISIBILITY(default) {
_GLIBCXX_BEGIN_NAMESPACE_VERSION
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
extern wistream wcin;
extern wostream wcout;
extern wostream wcerr;
extern wostream wclog;
_GLIBCXX_END_NAMESPACE_VERSION
}  // namespace std
#endif
// clang-format on
