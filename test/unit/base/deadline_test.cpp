// SPDX-License-Identifier: Apache-2.0
// specshim/base/deadline.h: a create's answer deadline caps every wait on its
// path: the kubelet budget and file locks (specshim-nri answers within the
// runtime's plugin request timeout).
#include "specshim/base/deadline.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/kubelet/budget.h"
#include "tempdir.h"

using namespace specshim;
using namespace std::chrono_literals;
using Catch::Contains;
using test::error_of;

TEST_CASE("deadline: none by default, a scope sets it, an inner scope only ever moves it earlier") {
  CHECK_FALSE(deadline::current());
  auto now = deadline::Clock::now();
  CHECK(deadline::cap(now + 5s) == now + 5s);
  {
    deadline::Scope outer(now + 2s);
    CHECK(deadline::current() == now + 2s);
    CHECK(deadline::cap(now + 5s) == now + 2s);
    CHECK(deadline::cap(now + 1s) == now + 1s);
    {
      deadline::Scope later(now + 10s);
      CHECK(deadline::current() == now + 2s);
      deadline::Scope earlier(now + 1s);
      CHECK(deadline::current() == now + 1s);
    }
    CHECK(deadline::current() == now + 2s);
  }
  CHECK_FALSE(deadline::current());
}

TEST_CASE("deadline: a kubelet budget ends by the deadline, whatever budget-ms says") {
  kubelet::Budget uncapped(2000ms);
  CHECK(uncapped.remaining() > 1500ms);
  deadline::Scope due(deadline::Clock::now() + 300ms);
  kubelet::Budget capped(2000ms);
  CHECK(capped.remaining() <= 300ms);
  CHECK(capped.total() == 2000ms);  // what was configured, for messages
}

TEST_CASE("deadline: a lock held by another waits only until the deadline, and says why it gave up") {
  test::TempDir dir;
  std::string path = (dir / "desired.lock").string();
  fs::Fd holder(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  REQUIRE(::flock(holder.get(), LOCK_EX) == 0);
  fs::Fd waiter(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  auto start = deadline::Clock::now();
  deadline::Scope due(start + 200ms);
  CHECK_THAT(
      error_of<Error>([&] { fs::lock_within(waiter.get(), LOCK_SH, 10s, path, "a writer"); }),
      Contains("lock `" + path + "`: a writer has held it for ") && Contains(" ms, and the create's answer is due"));
  // It gave up at the deadline, not after the 10 s its caller allows.
  CHECK(deadline::Clock::now() - start < 5s);
}
