// gpusched/fairness/detail/demand_check.hpp — what both progressive-filling solvers (flat DRF in
// drf.cpp, H-DRF in hdrf.cpp) share: the input checks and the empty result they fill.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>

#include "gpusched/fairness/detail/text.hpp"

#include "gpusched/core/result.hpp"
#include "gpusched/fairness/drf.hpp"

namespace gpusched::fairness::detail {

// Every capacity finite and non-negative, or an error naming the first that is not.
inline Status check_capacity(const Vector& capacity) {
  for (Eigen::Index r = 0; r < capacity.size(); ++r)
    if (!std::isfinite(capacity[r]) || capacity[r] < 0)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("capacity[", r, "]: expected a finite non-negative amount, got ", capacity[r]));
  return {};
}

// n users (or tree nodes) with nothing allocated over `resources` resources, all "demand met".
inline FractionalAllocation empty_allocation(std::size_t n, Eigen::Index resources) {
  FractionalAllocation out;
  out.tasks.assign(n, 0.0);
  out.dominant_share.assign(n, 0.0);
  out.stop.assign(n, StopReason::kDemandMet);
  out.bottleneck.assign(n, -1);
  out.used = Vector::Zero(resources);
  out.saturated.assign(static_cast<std::size_t>(resources), false);
  return out;
}

// User (or leaf) i stopped with `tasks`, for `why`, at saturated resource `bottleneck` (-1 none).
inline void record_fairness_stop(FractionalAllocation& out, std::size_t i, double tasks, StopReason why, int bottleneck) {
  out.tasks[i] = tasks;
  out.stop[i] = why;
  out.bottleneck[i] = bottleneck;
}

struct DemandCheck {
  bool any = false;         // the task needs some resource
  bool unservable = false;  // it needs a resource of zero capacity
  double per_task = 0;      // the dominant share of one task, max_r demand[r] / capacity[r]
};

// `label` names the user in errors ("users[3]", "nodes[5]"): a demand of the wrong length, a NaN or
// negative task cap, or a non-finite or negative amount.
inline Result<DemandCheck> check_demand(std::string_view label, const Vector& demand, double max_tasks,
                                        const Vector& capacity) {
  if (demand.size() != capacity.size())
    return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text(label, ".demand: expected ", capacity.size(), " resources, got ", demand.size()));
  if (std::isnan(max_tasks) || max_tasks < 0)
    return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text(label, ".max_tasks: expected a non-negative number, got ", max_tasks));
  DemandCheck c;
  for (Eigen::Index r = 0; r < demand.size(); ++r) {
    const double d = demand[r];
    if (!std::isfinite(d) || d < 0)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text(label, ".demand[", r, "]: expected a finite non-negative amount, got ", d));
    if (d <= 0) continue;
    c.any = true;
    if (capacity[r] <= 0)
      c.unservable = true;
    else
      c.per_task = std::max(c.per_task, d / capacity[r]);
  }
  return c;
}

}  // namespace gpusched::fairness::detail
