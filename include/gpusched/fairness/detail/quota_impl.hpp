// gpusched/fairness/detail/quota_impl.hpp — the definitions behind gpusched/fairness/quota.hpp.
//
// Included at the end of quota.hpp, so a consumer compiles the fairness family with its own
// code and links no gpusched library (issue 11);
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/fairness/quota.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "gpusched/fairness/detail/text.hpp"

namespace gpusched::fairness {

GPUSCHED_DECL std::string_view verdict_text(QuotaVerdict v) {
  switch (v) {
    case QuotaVerdict::kFits: return "fits within nominal quota";
    case QuotaVerdict::kFitsBorrowing: return "fits by borrowing from the cohort";
    case QuotaVerdict::kOverNominal: return "exceeds nominal quota (no cohort to borrow from)";
    case QuotaVerdict::kOverBorrowingLimit: return "exceeds the borrowing limit";
    case QuotaVerdict::kCohortExhausted: return "the cohort has no unused quota to lend";
    case QuotaVerdict::kReclaimable: return "within nominal quota, but lent to borrowing queues (reclaimable)";
  }
  return "?";
}

GPUSCHED_DECL ReasonKind reason_kind(QuotaVerdict v) {
  switch (v) {
    case QuotaVerdict::kFits:
    case QuotaVerdict::kFitsBorrowing: return ReasonKind::kOther;  // not a refusal
    case QuotaVerdict::kOverNominal: return ReasonKind::kOverNominalQuota;
    case QuotaVerdict::kOverBorrowingLimit: return ReasonKind::kOverBorrowingLimit;
    case QuotaVerdict::kCohortExhausted: return ReasonKind::kCohortExhausted;
    case QuotaVerdict::kReclaimable: return ReasonKind::kReclaimable;
  }
  return ReasonKind::kOther;
}

GPUSCHED_DECL Result<QuotaBook> QuotaBook::build(std::size_t dimensions, std::vector<QueueQuota> queues) {
  QuotaBook book;
  book.dims_ = dimensions;
  const auto m = static_cast<Eigen::Index>(dimensions);
  std::set<std::string> names;
  std::map<std::string, int> cohorts;
  for (std::size_t q = 0; q < queues.size(); ++q) {
    auto& queue = queues[q];
    if (queue.name.empty()) return detail::fairness_error(ErrorCode::kMissingField, detail::fairness_text("queues[", q, "].name: must not be empty"));
    if (!names.insert(queue.name).second)
      return detail::fairness_error(ErrorCode::kDuplicate, detail::fairness_text("queues[", q, "].name: duplicate queue name \"", queue.name, "\""));
    if (queue.nominal.size() == 0) queue.nominal = Amounts::Constant(m, kNoLimit);
    if (queue.borrowing_limit.size() == 0) queue.borrowing_limit = Amounts::Constant(m, kNoLimit);
    if (queue.lending_limit.size() == 0) queue.lending_limit = Amounts::Constant(m, kNoLimit);
    for (auto [field, v] : {std::pair<const char*, const Amounts*>{"nominal", &queue.nominal},
                            {"borrowing_limit", &queue.borrowing_limit},
                            {"lending_limit", &queue.lending_limit}}) {
      if (v->size() != m)
        return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("queues[", q, "] (", queue.name, ").", field, ": expected ", m, " dimensions, got ", v->size()));
      for (Eigen::Index r = 0; r < m; ++r)
        if ((*v)[r] < kNoLimit)
          return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("queues[", q, "] (", queue.name, ").", field, "[", r, "]: expected a non-negative amount, got ", (*v)[r]));
    }
    int c = -1;
    if (!queue.cohort.empty()) {
      auto [it, fresh] = cohorts.emplace(queue.cohort, static_cast<int>(cohorts.size()));
      if (fresh) {
        book.cohort_pool_.push_back(Amounts::Zero(m));
        book.cohort_used_.push_back(Amounts::Zero(m));
      }
      c = it->second;
    }
    book.cohort_.push_back(c);
    book.usage_.push_back(Amounts::Zero(m));
  }
  book.queues_ = std::move(queues);
  // guaranteed() is on every check and admit: computed once here rather than per call.
  for (std::size_t q = 0; q < book.queues_.size(); ++q) {
    Amounts g(m);
    for (Eigen::Index r = 0; r < m; ++r)
      g[r] = book.queues_[q].nominal[r] < 0 ? 0 : book.queues_[q].nominal[r] - book.lendable(q, r);
    book.guaranteed_.push_back(std::move(g));
  }
  // The cohort pools are sums of members' lendable quota: checked, so that quotas near INT64_MAX are
  // an error naming the queue that overflows its cohort's pool rather than a pool that wraps negative.
  for (std::size_t q = 0; q < book.queues_.size(); ++q)
    if (book.cohort_[q] >= 0)
      for (Eigen::Index r = 0; r < m; ++r) {
        std::int64_t& pool = book.cohort_pool_[static_cast<std::size_t>(book.cohort_[q])][r];
        if (__builtin_add_overflow(pool, book.lendable(q, r), &pool))
          return detail::fairness_error(
              ErrorCode::kOverflow,
              detail::fairness_text("queues[", q, "] (", book.queues_[q].name, ").nominal[", r, "]: cohort \"",
                                    book.queues_[q].cohort, "\" pools more than ", std::numeric_limits<std::int64_t>::max(),
                                    " on this dimension (overflow)"));
      }
  return book;
}

GPUSCHED_DECL std::int64_t QuotaBook::lendable(std::size_t q, Eigen::Index r) const {
  const auto& queue = queues_[q];
  if (queue.nominal[r] < 0) return 0;
  return queue.lending_limit[r] < 0 ? queue.nominal[r] : std::min(queue.lending_limit[r], queue.nominal[r]);
}
GPUSCHED_DECL std::int64_t QuotaBook::guaranteed(std::size_t q, Eigen::Index r) const { return guaranteed_[q][r]; }
GPUSCHED_DECL std::int64_t QuotaBook::over_guarantee(std::size_t q, Eigen::Index r, std::int64_t usage) const {
  return std::max<std::int64_t>(0, usage - guaranteed(q, r));
}

GPUSCHED_DECL bool QuotaBook::within_nominal(std::size_t q, const Amounts& request) const {
  const auto& queue = queues_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r)
    if (request[r] > 0 && queue.nominal[r] >= 0 && request[r] > queue.nominal[r] - usage_[q][r]) return false;
  return true;
}

GPUSCHED_DECL QuotaCheck QuotaBook::check(std::size_t q, const Amounts& request) const {
  QuotaCheck out;
  const auto& queue = queues_[q];
  const int c = cohort_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r) {
    const std::int64_t req = request[r];
    if (req <= 0 || queue.nominal[r] < 0) continue;
    const std::int64_t nominal = queue.nominal[r];
    const std::int64_t used = usage_[q][r];
    auto fail = [&](QuotaVerdict v, std::int64_t available) {
      out.verdict = v;
      out.dimension = static_cast<int>(r);
      out.requested = req;
      out.available = std::max<std::int64_t>(0, available);
    };
    // Usage, quotas and limits are each at most INT64_MAX, so their sums are not formed: every test
    // is rearranged to a difference of non-negative amounts (used + req > nominal becomes
    // req > nominal - used), which cannot overflow, and nominal + limit saturates.
    const bool over_nominal = req > nominal - used;
    if (c < 0) {
      if (over_nominal) {
        fail(QuotaVerdict::kOverNominal, nominal - used);
        return out;
      }
      continue;
    }
    const std::int64_t limit = queue.borrowing_limit[r];
    std::int64_t ceiling = 0;
    if (limit >= 0 && __builtin_add_overflow(nominal, limit, &ceiling)) ceiling = std::numeric_limits<std::int64_t>::max();
    if (limit >= 0 && req > ceiling - used) {
      fail(QuotaVerdict::kOverBorrowingLimit, ceiling - used);
      return out;
    }
    const auto cu = static_cast<std::size_t>(c);
    std::int64_t available = 0;  // saturating: a guarantee near INT64_MAX plus a large pool
    if (__builtin_add_overflow(std::max<std::int64_t>(0, guaranteed(q, r) - used), cohort_pool_[cu][r] - cohort_used_[cu][r],
                               &available))
      available = std::numeric_limits<std::int64_t>::max();
    if (req > available) {
      if (!over_nominal) {
        fail(QuotaVerdict::kReclaimable, available);
        for (std::size_t o = 0; o < queues_.size(); ++o) {
          if (o == q || cohort_[o] != c || queues_[o].nominal[r] < 0) continue;
          const std::int64_t b = usage_[o][r] - queues_[o].nominal[r];
          if (b > 0) out.borrowers.push_back({o, b});
        }
      } else {
        fail(QuotaVerdict::kCohortExhausted, available);
      }
      return out;
    }
    if (over_nominal) out.borrows = true;
  }
  out.verdict = out.borrows ? QuotaVerdict::kFitsBorrowing : QuotaVerdict::kFits;
  return out;
}

GPUSCHED_DECL void QuotaBook::admit(std::size_t q, const Amounts& request) {
  const int c = cohort_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r) {
    const std::int64_t before = usage_[q][r];
    usage_[q][r] += request[r];
    if (c >= 0 && queues_[q].nominal[r] >= 0)
      cohort_used_[static_cast<std::size_t>(c)][r] += over_guarantee(q, r, usage_[q][r]) - over_guarantee(q, r, before);
  }
}

GPUSCHED_DECL void QuotaBook::release(std::size_t q, const Amounts& request) {
  const int c = cohort_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r) {
    const std::int64_t before = usage_[q][r];
    usage_[q][r] -= request[r];
    if (c >= 0 && queues_[q].nominal[r] >= 0)
      cohort_used_[static_cast<std::size_t>(c)][r] += over_guarantee(q, r, usage_[q][r]) - over_guarantee(q, r, before);
  }
}

GPUSCHED_DECL Amounts QuotaBook::borrowed(std::size_t q) const {
  Amounts out = Amounts::Zero(static_cast<Eigen::Index>(dims_));
  for (Eigen::Index r = 0; r < out.size(); ++r)
    if (queues_[q].nominal[r] >= 0) out[r] = std::max<std::int64_t>(0, usage_[q][r] - queues_[q].nominal[r]);
  return out;
}

GPUSCHED_DECL std::int64_t QuotaBook::cohort_pool(std::size_t q, std::size_t dim) const {
  return cohort_[q] < 0 ? 0 : cohort_pool_[static_cast<std::size_t>(cohort_[q])][static_cast<Eigen::Index>(dim)];
}
GPUSCHED_DECL std::int64_t QuotaBook::cohort_pool_used(std::size_t q, std::size_t dim) const {
  return cohort_[q] < 0 ? 0 : cohort_used_[static_cast<std::size_t>(cohort_[q])][static_cast<Eigen::Index>(dim)];
}

GPUSCHED_DECL std::int64_t QuotaBook::ceiling(std::size_t q, std::size_t dim) const {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto r = static_cast<Eigen::Index>(dim);
  const auto& queue = queues_[q];
  if (queue.nominal[r] < 0) return kMax;
  if (cohort_[q] < 0) return queue.nominal[r];
  std::int64_t by_limit = kMax, by_pool = kMax;
  if (queue.borrowing_limit[r] >= 0 && __builtin_add_overflow(queue.nominal[r], queue.borrowing_limit[r], &by_limit)) by_limit = kMax;
  if (__builtin_add_overflow(guaranteed(q, r), cohort_pool_[static_cast<std::size_t>(cohort_[q])][r], &by_pool)) by_pool = kMax;
  return std::min(by_limit, by_pool);
}

}  // namespace gpusched::fairness
