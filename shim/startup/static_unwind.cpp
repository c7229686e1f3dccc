// SPDX-License-Identifier: Apache-2.0
// Linked into the -static specshim binary only (shim/CMakeLists.txt).
//
// crtbeginT.o, the start-up file of a static non-PIE link, registers the
// binary's .eh_frame with libgcc's unwinder; the first exception thrown then
// sorts every FDE of the whole binary (~26 M instructions, measured with
// callgrind). The link wraps that registration (and its undo at exit) into
// these no-ops, so the unwinder finds FDEs as in a dynamic or PIE program:
// dl_iterate_phdr, then PT_GNU_EH_FRAME (--eh-frame-hdr), then a binary
// search. See docs/BENCHMARKS.md, "How the binary is linked, and why".
extern "C" {

struct object;

void __wrap___register_frame_info(const void*, object*) {}

void* __wrap___deregister_frame_info(const void*) {
  return nullptr;
}
}
