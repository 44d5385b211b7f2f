// gpusched/fairness/quota.hpp — nominal quotas, cohorts, borrowing and lending (Kueue semantics).
//
// Kueue (kubernetes-sigs/kueue, "ClusterQueue" and "Cohort" concepts) gives each queue a *nominal
// quota* per resource and flavor (here: one dimension per resource, with every GPU model its own
// dimension, "gpu:H100-80GB"). Queues in the same *cohort* pool what they do not use:
//
//   * lendable(q)   = min(lendingLimit, nominal)      (all of nominal without a lending limit)
//   * guaranteed(q) = nominal - lendable(q)            (only q may ever use it)
//   * the cohort's pool      = sum of lendable(q) over members
//   * the cohort's pool used = sum of max(0, usage(q) - guaranteed(q)) over members
//
// A request fits queue q when, on every dimension it asks for,
//   usage(q) + request <= nominal(q) + borrowingLimit(q)            (no limit = unbounded), and
//   request <= max(0, guaranteed(q) - usage(q)) + pool - pool used  (Kueue's "available").
// Without a cohort, usage(q) + request <= nominal(q). A queue *borrows* when its usage would exceed
// its nominal quota on some dimension. A dimension with no quota (nominal < 0) is unconstrained.
//
// Nominal quota is always the owner's: when a request is within its queue's nominal quota but the
// cohort pool is used up by borrowers, the verdict is `kReclaimable`, naming the borrowing queues
// and amounts (in Kueue this is where reclaimWithinCohort preempts them). `check` answers "would this
// be admitted now, and if not, why" without changing anything; `admit`/`release` change usage.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "gpusched/core/outcome.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/fairness/drf.hpp"

namespace gpusched::fairness {

inline constexpr std::int64_t kNoLimit = -1;

struct QueueQuota {
  std::string name;
  std::string cohort;        // empty: no cohort (cannot borrow or lend)
  Amounts nominal;           // per dimension; kNoLimit = unconstrained
  Amounts borrowing_limit;   // per dimension; kNoLimit = unbounded (empty vector = all kNoLimit)
  Amounts lending_limit;     // per dimension; kNoLimit = all of nominal (empty vector = all kNoLimit)
};

enum class QuotaVerdict : std::uint8_t {
  kFits,                 // within nominal quota
  kFitsBorrowing,        // fits by borrowing from the cohort
  kOverNominal,          // no cohort, and over nominal quota
  kOverBorrowingLimit,   // would borrow more than borrowingLimit
  kCohortExhausted,      // the cohort has not enough unused quota to lend
  kReclaimable,          // within nominal quota, but lent out: reclaiming from borrowers would admit it
};
std::string_view verdict_text(QuotaVerdict v);
// The one vocabulary (core/outcome.hpp): kFits and kFitsBorrowing are kPlaced; every refusal names
// its ReasonKind (kOverNominalQuota, kOverBorrowingLimit, kCohortExhausted, kReclaimable).
// Whether a refusal is kNotNow or kInfeasible depends on the amounts (FairSharePlanner::outcome).
ReasonKind reason_kind(QuotaVerdict v);

struct QuotaCheck {
  QuotaVerdict verdict = QuotaVerdict::kFits;
  bool admitted() const { return verdict == QuotaVerdict::kFits || verdict == QuotaVerdict::kFitsBorrowing; }
  bool borrows = false;
  int dimension = -1;          // the first dimension that fails (when not admitted)
  std::int64_t requested = 0;  // on that dimension
  std::int64_t available = 0;  // what the queue could get there now
  struct Borrower {
    std::size_t queue;
    std::int64_t amount;
  };
  std::vector<Borrower> borrowers;  // for kReclaimable: who holds lent quota on that dimension
};

class QuotaBook {
 public:
  // Validates the queues (every vector of `dimensions` entries or empty for limits; nominal >= -1;
  // limits >= -1; unique non-empty names). Errors name the queue and the field.
  static Result<QuotaBook> build(std::size_t dimensions, std::vector<QueueQuota> queues);

  QuotaCheck check(std::size_t queue, const Amounts& request) const;
  // Within nominal quota on every dimension the request asks for (own usage only, cohort ignored):
  // the ordering rule "a queue below its nominal quota goes before borrowers" uses this.
  bool within_nominal(std::size_t queue, const Amounts& request) const;
  void admit(std::size_t queue, const Amounts& request);
  void release(std::size_t queue, const Amounts& request);

  std::size_t size() const { return queues_.size(); }
  std::size_t dimensions() const { return dims_; }
  const QueueQuota& queue(std::size_t q) const { return queues_[q]; }
  const Amounts& usage(std::size_t q) const { return usage_[q]; }
  // max(0, usage - nominal) per dimension (0 where unconstrained).
  Amounts borrowed(std::size_t q) const;
  std::int64_t cohort_pool(std::size_t q, std::size_t dim) const;
  std::int64_t cohort_pool_used(std::size_t q, std::size_t dim) const;
  // The most queue q could ever hold on a dimension, with every other queue's usage gone: its
  // nominal quota without a cohort; with one, min(nominal + borrowing limit, guaranteed + the
  // cohort's pool) (saturating at INT64_MAX); INT64_MAX where unconstrained.
  std::int64_t ceiling(std::size_t q, std::size_t dim) const;

 private:
  std::int64_t guaranteed(std::size_t q, Eigen::Index r) const;
  std::int64_t lendable(std::size_t q, Eigen::Index r) const;
  std::int64_t over_guarantee(std::size_t q, Eigen::Index r, std::int64_t usage) const;

  std::size_t dims_ = 0;
  std::vector<QueueQuota> queues_;
  std::vector<Amounts> usage_;
  std::vector<Amounts> guaranteed_;  // nominal - lendable per queue and dimension (0 where unconstrained)
  std::vector<int> cohort_;  // index into cohort_pool_ / cohort_used_, -1 = none
  std::vector<Amounts> cohort_pool_;
  std::vector<Amounts> cohort_used_;
};

}  // namespace gpusched::fairness

#if GPUSCHED_HEADER_ONLY
#include "gpusched/fairness/detail/quota_impl.hpp"
#endif
