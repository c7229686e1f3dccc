// SPDX-License-Identifier: Apache-2.0
// The one translation unit that compiles toml++ (used header-only elsewhere).
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
