// SPDX-License-Identifier: Apache-2.0
#include "specshim/chain.h"

#include <catch2/catch.hpp>

#include "specshim/error.h"

using namespace specshim;

namespace {

// Counter sets /n to min(n+1, limit): it converges after `limit` passes.
class Counter : public Modifier {
 public:
  Counter(std::string name, int limit) : name_(std::move(name)), limit_(limit) {}
  std::string_view name() const override { return name_; }
  void apply(Spec& spec, Context&) override {
    int n = spec.json().value(name_, 0);
    if (n < limit_) spec.json()[name_] = n + 1;
  }

 private:
  std::string name_;
  int limit_;
};

// Describer is a Counter that says what it changed last.
class Describer : public Counter {
 public:
  using Counter::Counter;
  std::string last_change() const override { return "set it to the next number"; }
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
  Chain chain(mods(std::make_unique<Counter>("a", 3), std::make_unique<Counter>("b", 1)));
  Spec spec = Spec::parse("{}");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  REQUIRE(spec.json()["a"] == 3);
  REQUIRE(spec.json()["b"] == 1);
  REQUIRE(r.passes == 4);  // three changing passes, one quiet one
  REQUIRE(r.changed_by == std::vector<std::string>{"a", "b"});
  REQUIRE(r.original == Json::object());  // the spec as it came in, kept from before the first change
}

TEST_CASE("chain keeps the original from before the first change, even when a later modifier changes first") {
  Chain chain(mods(std::make_unique<Counter>("a", 0), std::make_unique<Counter>("b", 2)));
  Spec spec = Spec::parse(R"({"x": 1})");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  REQUIRE(r.original == Json::parse(R"({"x": 1})"));
  REQUIRE(spec.json() == Json::parse(R"({"x": 1, "b": 2})"));
}

TEST_CASE("chain that changes nothing reports one pass") {
  Chain chain(mods(std::make_unique<Counter>("a", 0)));
  Spec spec = Spec::parse("{}");
  Context ctx;
  ChainResult r = chain.run(spec, ctx);
  REQUIRE(r.passes == 1);
  REQUIRE_FALSE(r.original);  // no copy kept when nothing changed
  REQUIRE(spec.json() == Json::object());
}

TEST_CASE("chain non-convergence names the modifiers still changing") {
  Chain chain(mods(std::make_unique<Counter>("spot", 100), std::make_unique<Counter>("done", 1)), 5);
  Spec spec = Spec::parse("{}");
  Context ctx;
  REQUIRE_THROWS_WITH(chain.run(spec, ctx), "spec did not converge after 5 passes; still changing it: spot");
}

TEST_CASE("chain non-convergence quotes what a modifier says it changed") {
  Chain chain(mods(std::make_unique<Describer>("spot", 100), std::make_unique<Counter>("more", 100)), 2);
  Spec spec = Spec::parse("{}");
  Context ctx;
  REQUIRE_THROWS_WITH(
      chain.run(spec, ctx),
      "spec did not converge after 2 passes; still changing it: spot (set it to the next number), more");
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
