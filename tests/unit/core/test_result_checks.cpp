// Result checks: Megatron's "unexpectedly large" rule (10x the largest of the first 100 finite values)
// and which values stop a run, with messages naming the iteration and the value.
#include "core/train/result_checks.h"

#include "error_text.h"

#include <catch2/catch.hpp>

#include <limits>

using namespace gptrain;
using gptrain::test::contains;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("result checks: a value is unexpectedly large at 10x the largest of the first 100 finite values") {
  UnexpectedlyLarge u(10.0, 100);
  // The first 100 finite values only set the reference, however large; NaN/inf are not counted.
  for (int i = 0; i < 99; ++i) REQUIRE_FALSE(u.rejects(i == 50 ? -4.0 : 1.0));
  REQUIRE_FALSE(u.rejects(kNaN));
  REQUIRE_FALSE(u.rejects(kInf));
  REQUIRE_FALSE(u.rejects(3.0));  // the 100th
  REQUIRE(u.reference() == 4.0);  // |-4|
  REQUIRE_FALSE(u.rejects(39.999));
  REQUIRE(u.rejects(40.0));  // >=, as Megatron
  REQUIRE(u.rejects(-41.0));
  REQUIRE_FALSE(u.rejects(kInf));
  REQUIRE(u.reference() == 4.0);  // later values never move it
}

TEST_CASE("result checks: NaN/inf loss and gradient norm stop the run unless switched off") {
  ResultChecks on({true, false, false});
  const std::string loss = test::error_text([&] { on.check_loss(7, kNaN, false); });
  REQUIRE(contains(loss, "iteration 7: the loss is nan"));
  REQUIRE(contains(test::error_text([&] { on.check_loss(3, kInf, false); }), "iteration 3: the loss is inf"));
  REQUIRE(
      contains(test::error_text([&] { on.check_grad_norm(9, kNaN, false); }), "iteration 9: the gradient norm is nan"));
  REQUIRE(
      contains(test::error_text([&] { on.check_grad_norm(9, kInf, false); }), "iteration 9: the gradient norm is inf"));
  // fp16 with a dynamic loss scale skips overflowing steps instead.
  REQUIRE(test::error_text([&] { on.check_loss(2, kInf, true); }).empty());
  REQUIRE(test::error_text([&] { on.check_grad_norm(2, kInf, true); }).empty());
  ResultChecks off({false, false, false});
  REQUIRE(test::error_text([&] {
            off.check_loss(7, kNaN, false);
            off.check_grad_norm(7, kNaN, false);
          }).empty());
}

TEST_CASE("result checks: spiky loss and large gradient norms stop the run only when asked") {
  ResultChecks spiky({true, true, false}), grads({true, false, true}), neither({true, false, false});
  for (int i = 1; i <= 100; ++i) {
    spiky.check_loss(i, 5.5, false);
    grads.check_grad_norm(i, 1.5, false);
    neither.check_loss(i, 5.5, false);
    neither.check_grad_norm(i, 1.5, false);
  }
  spiky.check_loss(101, 54.9, false);
  const std::string s = test::error_text([&] { spiky.check_loss(102, 55.0, false); });
  REQUIRE(contains(s, "iteration 102: spiky loss 5.500000E+01"));
  REQUIRE(contains(s, "(5.500000E+00)"));
  grads.check_grad_norm(101, 14.9, false);
  grads.check_grad_norm(102, 1e9, true);  // a skipped step is not checked
  const std::string g = test::error_text([&] { grads.check_grad_norm(103, 15.0, false); });
  REQUIRE(contains(g, "iteration 103: unexpectedly large gradient norm 1.500000E+01"));
  REQUIRE(test::error_text([&] {
            neither.check_loss(101, 1e28, false);
            neither.check_grad_norm(101, 1e28, false);
          }).empty());
}
