// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/chain.h"

#include <catch2/catch.hpp>

#include "specshim/base/error.h"

using namespace specshim;

namespace {

// Follower sets /name to min(/source + 1, limit). It is idempotent, as every
// modifier must be, but two that follow each other take several passes.
class Follower : public Modifier {
 public:
  Follower(std::string name, std::string source, int limit, int* applied = nullptr, bool idempotent = true)
      : name_(std::move(name)), source_(std::move(source)), limit_(limit), applied_(applied), idempotent_(idempotent) {}
  std::string_view name() const override { return name_; }
  bool idempotent() const override { return idempotent_; }
  void apply(Spec& spec, Context&) override {
    if (applied_) ++*applied_;
    int n = std::min(spec.json().value(source_, 0) + 1, limit_);
    if (spec.json().value(name_, -1) != n) spec.json()[name_] = n;
  }

 private:
  std::string name_, source_;
  int limit_;
  int* applied_;
  bool idempotent_;
};

// Setter sets /x to its value: two of them never agree.
class Setter : public Modifier {
 public:
  Setter(std::string name, int value) : name_(std::move(name)), value_(value) {}
  std::string_view name() const override { return name_; }
  void apply(Spec& spec, Context&) override { spec.json()["x"] = value_; }

 private:
  std::string name_;
  int value_;
};

// Describer is a Setter that says what it changed last.
class Describer : public Setter {
 public:
  using Setter::Setter;
  std::string last_change() const override { return "set it to its number"; }
};

class Thrower : public Modifier {
 public:
  std::string_view name() const override { return "thrower"; }
  void apply(Spec&, Context&) override { throw Error("device `x` is missing"); }
};

std::vector<std::unique_ptr<Modifier>> mods(std::unique_ptr<Modifier> a, std::unique_ptr<Modifier> b = nullptr) {
  std::vector<std::unique_ptr<Modifier>> v;
  v.push_back(std::move(a));
  if (b) v.push_back(std::move(b));
  return v;
}

}  // namespace

TEST_CASE("chain runs until a whole pass changes nothing") {
  Chain chain(mods(std::make_unique<Follower>("a", "b", 3), std::make_unique<Follower>("b", "a", 3)));
  Spec spec = Spec::parse("{}");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  // {} -> a=1 b=2 -> a=3 b=3 -> quiet
  REQUIRE(spec.json() == Json::parse(R"({"a": 3, "b": 3})"));
  REQUIRE(r.passes == 3);
  REQUIRE(r.changed_by == std::vector<std::string>{"a", "b"});
  REQUIRE(r.original == Json::object());  // the spec as it came in, kept from before the first change
}

TEST_CASE("chain does not run an idempotent modifier again while nothing changed since it ran") {
  // `a` sets a=1 in pass 1; `quiet` never changes anything.
  struct Case {
    bool a_first, a_idempotent;
    int a_runs, quiet_runs;
  };
  auto k = GENERATE(values<Case>({
      {true, true, 1, 1},   // `a` changed last: pass 2 has nothing to run
      {false, true, 1, 2},  // `quiet` ran before the change: it runs again
      {true, false, 2, 1},  // a modifier that may react to its own output runs every pass
  }));
  int a_runs = 0, quiet_runs = 0;
  auto a = std::make_unique<Follower>("a", "x", 5, &a_runs, k.a_idempotent);
  auto quiet = std::make_unique<Follower>("quiet", "q", 0, &quiet_runs);
  Chain chain(k.a_first ? mods(std::move(a), std::move(quiet)) : mods(std::move(quiet), std::move(a)));
  Spec spec = Spec::parse(R"({"quiet": 0})");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  REQUIRE(spec.json()["a"] == 1);
  REQUIRE(r.passes == 2);
  REQUIRE(a_runs == k.a_runs);
  REQUIRE(quiet_runs == k.quiet_runs);
}

TEST_CASE("chain keeps the original from before the first change, even when a later modifier changes first") {
  Chain chain(mods(std::make_unique<Follower>("a", "a", 0), std::make_unique<Follower>("b", "c", 2)));
  Spec spec = Spec::parse(R"({"x": 1, "a": 0})");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  REQUIRE(r.original == Json::parse(R"({"x": 1, "a": 0})"));
  REQUIRE(spec.json() == Json::parse(R"({"x": 1, "a": 0, "b": 1})"));
}

TEST_CASE("chain that changes nothing reports one pass") {
  Chain chain(mods(std::make_unique<Follower>("a", "a", 0)));
  Spec spec = Spec::parse(R"({"a": 0})");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  REQUIRE(r.passes == 1);
  REQUIRE_FALSE(r.original);  // no copy kept when nothing changed
  REQUIRE(spec.json() == Json::parse(R"({"a": 0})"));
}

TEST_CASE("chain non-convergence names the modifiers still changing") {
  Chain chain(mods(std::make_unique<Setter>("one", 1), std::make_unique<Setter>("two", 2)), 5);
  Spec spec = Spec::parse("{}");
  Context ctx;
  REQUIRE_THROWS_WITH(chain.run(spec, ctx), "spec did not converge after 5 passes; still changing it: one, two");
}

TEST_CASE("chain non-convergence quotes what a modifier says it changed") {
  Chain chain(mods(std::make_unique<Describer>("spot", 1), std::make_unique<Setter>("more", 2)), 2);
  Spec spec = Spec::parse("{}");
  Context ctx;
  REQUIRE_THROWS_WITH(chain.run(spec, ctx),
                      "spec did not converge after 2 passes; still changing it: spot (set it to its number), more");
}

TEST_CASE("chain errors carry the modifier's name") {
  Chain chain(mods(std::make_unique<Thrower>()));
  Spec spec = Spec::parse("{}");
  Context ctx;
  try {
    chain.run(spec, ctx);
    FAIL("no error");
  } catch (const std::exception& e) {
    REQUIRE(describe(e) == "thrower: device `x` is missing");
  }
}
