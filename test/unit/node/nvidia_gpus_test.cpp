// SPDX-License-Identifier: Apache-2.0
// specshim/node/nvidia_gpus.h: the driver's information files, a /proc tree of
// them, and a UUID looked up (or refused, naming the GPUs there are).
#include "specshim/node/nvidia_gpus.h"

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using Catch::Contains;
using specshim::test::error_of;
using specshim::test::TempDir;

namespace {

// What the 535 driver writes, tabs and all.
std::string information(const std::string& uuid, int minor, const std::string& address) {
  return "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 182\nGPU UUID: \t " + uuid +
         "\nVideo BIOS: \t 92.00.36.00.10\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n"
         "Bus Location: \t " +
         address + "\nDevice Minor: \t " + std::to_string(minor) + "\nGPU Excluded:\t No\n";
}

void add_gpu(const TempDir& proc, const std::string& uuid, int minor, const std::string& address) {
  specshim::test::write_file(proc / "driver/nvidia/gpus" / address / "information", information(uuid, minor, address));
}

}  // namespace

TEST_CASE("nvidia gpus: an information file gives the UUID and the minor") {
  auto g = nvidia::parse_information(information("GPU-8f3c5d2e-1111-2222-3333-444455556666", 3, "0000:3b:00.0"), "f");
  CHECK(g.uuid == "GPU-8f3c5d2e-1111-2222-3333-444455556666");
  CHECK(g.minor == 3);
  CHECK(g.node() == "/dev/nvidia3");
}

TEST_CASE("nvidia gpus: a file without a UUID or a minor is refused, naming it") {
  CHECK_THAT(error_of<Error>([] { nvidia::parse_information("Device Minor: \t 0\n", "/p/information"); }),
             Contains("/p/information: no `GPU UUID:` line"));
  CHECK_THAT(error_of<Error>([] { nvidia::parse_information("GPU UUID: \t GPU-1\n", "f"); }),
             Contains("`Device Minor:`  is not a minor number"));
  CHECK_THAT(error_of<Error>([] { nvidia::parse_information("GPU UUID: \t GPU-1\nDevice Minor: \t 256\n", "f"); }),
             Contains("256 is not a minor number"));
  CHECK_THAT(error_of<Error>([] { nvidia::parse_information("GPU UUID: \t GPU/1\nDevice Minor: \t 0\n", "f"); }),
             Contains("is not a UUID"));
}

TEST_CASE("nvidia gpus: a /proc tree lists its GPUs by minor, a UUID is found whatever its case") {
  TempDir proc;
  add_gpu(proc, "GPU-bbbb", 1, "0000:af:00.0");
  add_gpu(proc, "GPU-aaaa", 0, "0000:3b:00.0");
  auto gpus = nvidia::read_gpus(proc.path());
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].uuid == "GPU-aaaa");
  CHECK(gpus[0].address == "0000:3b:00.0");
  CHECK(gpus[1].node() == "/dev/nvidia1");
  CHECK(nvidia::find_gpu(gpus, "gpu-BBBB", proc.path()).minor == 1);
  CHECK_THAT(error_of<Error>([&] { nvidia::find_gpu(gpus, "GPU-cccc", proc.path()); }),
             Contains("GPU `GPU-cccc`: no such GPU in " + (proc / "driver/nvidia/gpus").string() +
                      "; it has GPU-aaaa (/dev/nvidia0), GPU-bbbb (/dev/nvidia1)"));
}

TEST_CASE("nvidia gpus: no driver is no GPU, and a lookup says so") {
  TempDir proc;
  auto gpus = nvidia::read_gpus(proc.path());
  CHECK(gpus.empty());
  CHECK_THAT(error_of<Error>([&] { nvidia::find_gpu(gpus, "GPU-aaaa", proc.path()); }),
             Contains("no NVIDIA driver loaded, or no GPU"));
}
