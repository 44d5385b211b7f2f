#include "gpusched/fairness/quota.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace gpusched::fairness {

std::string_view verdict_text(QuotaVerdict v) {
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

Result<QuotaBook> QuotaBook::build(std::size_t dimensions, std::vector<QueueQuota> queues) {
  QuotaBook book;
  book.dims_ = dimensions;
  const auto m = static_cast<Eigen::Index>(dimensions);
  std::set<std::string> names;
  std::map<std::string, int> cohorts;
  for (std::size_t q = 0; q < queues.size(); ++q) {
    auto& queue = queues[q];
    if (queue.name.empty()) return Error{fmt::format("queues[{}].name: must not be empty", q)};
    if (!names.insert(queue.name).second)
      return Error{fmt::format("queues[{}].name: duplicate queue name \"{}\"", q, queue.name)};
    if (queue.nominal.size() == 0) queue.nominal = Amounts::Constant(m, kNoLimit);
    if (queue.borrowing_limit.size() == 0) queue.borrowing_limit = Amounts::Constant(m, kNoLimit);
    if (queue.lending_limit.size() == 0) queue.lending_limit = Amounts::Constant(m, kNoLimit);
    for (auto [field, v] : {std::pair<const char*, const Amounts*>{"nominal", &queue.nominal},
                            {"borrowing_limit", &queue.borrowing_limit},
                            {"lending_limit", &queue.lending_limit}}) {
      if (v->size() != m)
        return Error{fmt::format("queues[{}] ({}).{}: expected {} dimensions, got {}", q, queue.name, field, m, v->size())};
      for (Eigen::Index r = 0; r < m; ++r)
        if ((*v)[r] < kNoLimit)
          return Error{fmt::format("queues[{}] ({}).{}[{}]: expected a non-negative amount, got {}", q, queue.name,
                                   field, r, (*v)[r])};
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
  for (std::size_t q = 0; q < book.queues_.size(); ++q)
    if (book.cohort_[q] >= 0)
      for (Eigen::Index r = 0; r < m; ++r) book.cohort_pool_[static_cast<std::size_t>(book.cohort_[q])][r] += book.lendable(q, r);
  return book;
}

std::int64_t QuotaBook::lendable(std::size_t q, Eigen::Index r) const {
  const auto& queue = queues_[q];
  if (queue.nominal[r] < 0) return 0;
  return queue.lending_limit[r] < 0 ? queue.nominal[r] : std::min(queue.lending_limit[r], queue.nominal[r]);
}
std::int64_t QuotaBook::guaranteed(std::size_t q, Eigen::Index r) const { return guaranteed_[q][r]; }
std::int64_t QuotaBook::over_guarantee(std::size_t q, Eigen::Index r, std::int64_t usage) const {
  return std::max<std::int64_t>(0, usage - guaranteed(q, r));
}

bool QuotaBook::within_nominal(std::size_t q, const Amounts& request) const {
  const auto& queue = queues_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r)
    if (request[r] > 0 && queue.nominal[r] >= 0 && usage_[q][r] + request[r] > queue.nominal[r]) return false;
  return true;
}

QuotaCheck QuotaBook::check(std::size_t q, const Amounts& request) const {
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
    if (c < 0) {
      if (used + req > nominal) {
        fail(QuotaVerdict::kOverNominal, nominal - used);
        return out;
      }
      continue;
    }
    const std::int64_t limit = queue.borrowing_limit[r];
    if (limit >= 0 && used + req > nominal + limit) {
      fail(QuotaVerdict::kOverBorrowingLimit, nominal + limit - used);
      return out;
    }
    const auto cu = static_cast<std::size_t>(c);
    const std::int64_t available = std::max<std::int64_t>(0, guaranteed(q, r) - used) + cohort_pool_[cu][r] - cohort_used_[cu][r];
    if (req > available) {
      if (used + req <= nominal) {
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
    if (used + req > nominal) out.borrows = true;
  }
  out.verdict = out.borrows ? QuotaVerdict::kFitsBorrowing : QuotaVerdict::kFits;
  return out;
}

void QuotaBook::admit(std::size_t q, const Amounts& request) {
  const int c = cohort_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r) {
    const std::int64_t before = usage_[q][r];
    usage_[q][r] += request[r];
    if (c >= 0 && queues_[q].nominal[r] >= 0)
      cohort_used_[static_cast<std::size_t>(c)][r] += over_guarantee(q, r, usage_[q][r]) - over_guarantee(q, r, before);
  }
}

void QuotaBook::release(std::size_t q, const Amounts& request) {
  const int c = cohort_[q];
  for (Eigen::Index r = 0; r < request.size(); ++r) {
    const std::int64_t before = usage_[q][r];
    usage_[q][r] -= request[r];
    if (c >= 0 && queues_[q].nominal[r] >= 0)
      cohort_used_[static_cast<std::size_t>(c)][r] += over_guarantee(q, r, usage_[q][r]) - over_guarantee(q, r, before);
  }
}

Amounts QuotaBook::borrowed(std::size_t q) const {
  Amounts out = Amounts::Zero(static_cast<Eigen::Index>(dims_));
  for (Eigen::Index r = 0; r < out.size(); ++r)
    if (queues_[q].nominal[r] >= 0) out[r] = std::max<std::int64_t>(0, usage_[q][r] - queues_[q].nominal[r]);
  return out;
}

std::int64_t QuotaBook::cohort_pool(std::size_t q, std::size_t dim) const {
  return cohort_[q] < 0 ? 0 : cohort_pool_[static_cast<std::size_t>(cohort_[q])][static_cast<Eigen::Index>(dim)];
}
std::int64_t QuotaBook::cohort_pool_used(std::size_t q, std::size_t dim) const {
  return cohort_[q] < 0 ? 0 : cohort_used_[static_cast<std::size_t>(cohort_[q])][static_cast<Eigen::Index>(dim)];
}

}  // namespace gpusched::fairness
