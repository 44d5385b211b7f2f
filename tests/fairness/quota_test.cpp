// Kueue quota semantics, worked by hand: nominal quota, cohorts, borrowing limit, lending limit,
// and nominal quota staying its owner's (reclaimable).
#include <doctest/doctest.h>

#include "gpusched/fairness/quota.hpp"

using namespace gpusched::fairness;

namespace {
Amounts one(std::int64_t v) { return Amounts::Constant(1, v); }
QueueQuota q(std::string name, std::string cohort, std::int64_t nominal, std::int64_t borrow = kNoLimit,
             std::int64_t lend = kNoLimit) {
  return QueueQuota{std::move(name), std::move(cohort), one(nominal), one(borrow), one(lend)};
}
}  // namespace

TEST_CASE("no cohort: nominal quota is a hard limit") {
  auto book = QuotaBook::build(1, {q("solo", "", 8)}).value();
  CHECK(book.check(0, one(8)).verdict == QuotaVerdict::kFits);
  book.admit(0, one(6));
  const auto c = book.check(0, one(3));
  CHECK(c.verdict == QuotaVerdict::kOverNominal);
  CHECK(c.available == 2);
  CHECK(c.requested == 3);
  book.release(0, one(6));
  CHECK(book.check(0, one(3)).admitted());
}

TEST_CASE("cohort: borrowing within the borrowing limit, lending limit honoured, nominal reclaimable") {
  // a: 10, no limits. b: 10, may borrow at most 5. c: 10, lends at most 4 (6 guaranteed to c).
  // The cohort pool is 10 + 10 + 4 = 24.
  auto book = QuotaBook::build(1, {q("a", "lab", 10), q("b", "lab", 10, 5), q("c", "lab", 10, kNoLimit, 4)}).value();
  CHECK(book.cohort_pool(0, 0) == 24);

  // b borrows 4 (within its limit of 5) ...
  auto c1 = book.check(1, one(14));
  CHECK(c1.verdict == QuotaVerdict::kFitsBorrowing);
  CHECK(c1.borrows);
  // ... but never 6.
  auto c2 = book.check(1, one(16));
  CHECK(c2.verdict == QuotaVerdict::kOverBorrowingLimit);
  CHECK(c2.available == 15);
  book.admit(1, one(14));
  CHECK(book.borrowed(1)[0] == 4);

  // a uses its 10: the lendable pool (24) is now all used (a 10 + b 14).
  book.admit(0, one(10));
  CHECK(book.cohort_pool_used(0, 0) == 24);
  // a cannot borrow more.
  CHECK(book.check(0, one(1)).verdict == QuotaVerdict::kCohortExhausted);
  // c's guaranteed 6 (nominal minus lending limit) is still all there.
  CHECK(book.check(2, one(6)).verdict == QuotaVerdict::kFits);
  book.admit(2, one(6));
  // c's 7th unit is within its nominal quota but was lent: reclaimable from b, which borrows 4.
  auto c3 = book.check(2, one(1));
  CHECK(c3.verdict == QuotaVerdict::kReclaimable);
  CHECK_FALSE(c3.admitted());
  REQUIRE(c3.borrowers.size() == 1);
  CHECK(c3.borrowers[0].queue == 1);
  CHECK(c3.borrowers[0].amount == 4);
  // When b gives back what it borrowed, c gets its quota.
  book.release(1, one(4));
  CHECK(book.check(2, one(4)).verdict == QuotaVerdict::kFits);
}

TEST_CASE("lending limit: a queue lends no more than its limit") {
  // x owns 10 but lends at most 4; y owns nothing and has no borrowing limit.
  auto book = QuotaBook::build(1, {q("x", "pool", 10, kNoLimit, 4), q("y", "pool", 0)}).value();
  CHECK(book.check(1, one(4)).verdict == QuotaVerdict::kFitsBorrowing);
  const auto c = book.check(1, one(5));
  CHECK(c.verdict == QuotaVerdict::kCohortExhausted);
  CHECK(c.available == 4);
  // Over several admissions too.
  book.admit(1, one(3));
  CHECK(book.check(1, one(1)).admitted());
  CHECK_FALSE(book.check(1, one(2)).admitted());
  // x's guaranteed 6 plus the unlent 1 are there now; the 3 lent to y are reclaimable.
  CHECK(book.check(0, one(7)).verdict == QuotaVerdict::kFits);
  const auto back = book.check(0, one(10));
  CHECK(back.verdict == QuotaVerdict::kReclaimable);
  REQUIRE(back.borrowers.size() == 1);
  CHECK(back.borrowers[0].amount == 3);
}

TEST_CASE("flavors are separate dimensions; an unconstrained dimension never limits") {
  // Dimensions: 0 = gpu:A100, 1 = gpu:H100, 2 = cpu without quota.
  Amounts nominal(3);
  nominal << 4, 4, kNoLimit;
  auto book = QuotaBook::build(3, {QueueQuota{"t", "lab", nominal, {}, {}}, QueueQuota{"u", "lab", nominal, {}, {}}}).value();
  Amounts a100(3), h100(3);
  a100 << 6, 0, 1000000;
  h100 << 0, 2, 1000000;
  CHECK(book.check(0, a100).verdict == QuotaVerdict::kFitsBorrowing);  // borrows 2 A100 from u
  book.admit(0, a100);
  // Borrowing A100 does not touch t's H100 quota (kueue #9406).
  CHECK(book.within_nominal(0, h100));
  CHECK(book.check(0, h100).verdict == QuotaVerdict::kFits);
  CHECK(book.borrowed(0)[0] == 2);
  CHECK(book.borrowed(0)[1] == 0);
}

TEST_CASE("QuotaBook::build rejects bad queues naming the field") {
  auto dup = QuotaBook::build(1, {q("a", "", 1), q("a", "", 1)});
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().message == "queues[1].name: duplicate queue name \"a\"");
  auto neg = QuotaBook::build(1, {q("a", "", -5)});
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.error().message == "queues[0] (a).nominal[0]: expected a non-negative amount, got -5");
  auto dims = QuotaBook::build(2, {q("a", "", 1)});
  REQUIRE_FALSE(dims.ok());
  CHECK(dims.error().message == "queues[0] (a).nominal: expected 2 dimensions, got 1");
}
