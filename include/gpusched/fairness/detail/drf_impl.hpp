// gpusched/fairness/detail/drf_impl.hpp — the definitions behind gpusched/fairness/drf.hpp.
//
// Included at the end of drf.hpp, so a consumer compiles the fairness family with its own
// code and links no gpusched library (issue 11);
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/fairness/drf.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gpusched/fairness/detail/text.hpp"

#include "gpusched/fairness/detail/demand_check.hpp"

namespace gpusched::fairness {

GPUSCHED_DECL double dominant_share(const Amounts& allocation, const Amounts& capacity) {
  double best = 0.0;
  for (Eigen::Index r = 0; r < capacity.size(); ++r)
    if (capacity[r] > 0)
      best = std::max(best, static_cast<double>(allocation[r]) / static_cast<double>(capacity[r]));
  return best;
}

GPUSCHED_DECL double dominant_share(const Vector& allocation, const Vector& capacity) {
  double best = 0.0;
  for (Eigen::Index r = 0; r < capacity.size(); ++r)
    if (capacity[r] > 0) best = std::max(best, allocation[r] / capacity[r]);
  return best;
}

// --- progressive filling ------------------------------------------------------------------------------
//
// All active users share one "level" t, their weighted dominant share. User i then runs
// x_i = t·w_i/d_i tasks (d_i = its per-task dominant share), so resource r is consumed at
// F_r + t·rho_r, where F_r is what stopped users hold and rho_r = sum over active users of
// w_i·D_ir/d_i. The sweep jumps from event to event: the next user cap (users sorted by the level at
// which they reach max_tasks) or the next resource to saturate ((C_r - F_r)/rho_r). A saturation
// stops every active user that needs the resource. Each user stops once and each resource saturates
// once, so there are at most n + m events; rho is updated by subtraction when a user stops and
// recomputed exactly after each saturation to keep rounding from accumulating.

namespace detail {
// Each user's weight and demand checked and its d_i (one task's dominant share) found; a user that
// cannot be served or asks for no task is stopped at once, every other one is active.
GPUSCHED_DECL Status start_users(const Vector& capacity, std::span<const FractionalUser> users, std::vector<double>& per_task,
                                 std::vector<char>& active, FractionalAllocation& out) {
  for (std::size_t i = 0; i < users.size(); ++i) {
    const auto& u = users[i];
    if (!std::isfinite(u.weight) || u.weight <= 0)
      return fairness_error(ErrorCode::kInvalidValue, fairness_text("users[", i, "].weight: expected a positive finite number, got ", u.weight));
    auto check = check_demand(fairness_text("users[", i, "]"), u.demand, u.max_tasks, capacity);
    if (!check) return check.error();
    const auto [any, unservable, d_i] = *check;
    per_task[i] = d_i;
    if (!any) return fairness_error(ErrorCode::kInvalidValue, fairness_text("users[", i, "].demand: all zero (a task must need something)"));
    if (unservable) out.stop[i] = StopReason::kUnservable;
    else if (u.max_tasks == 0) out.stop[i] = StopReason::kDemandMet;
    else active[i] = 1;
  }
  return {};
}
}  // namespace detail

GPUSCHED_DECL Result<FractionalAllocation> progressive_filling(const Vector& capacity, std::span<const FractionalUser> users) {
  const Eigen::Index m = capacity.size();
  if (auto ok = detail::check_capacity(capacity); !ok) return ok.error();
  const std::size_t n = users.size();
  std::vector<double> per_task(n, 0.0);  // d_i
  FractionalAllocation out = detail::empty_allocation(n, m);

  std::vector<char> active(n, 0);
  if (Status st = detail::start_users(capacity, users, per_task, active, out); !st) return st.error();

  // Users in the order their caps are reached (level = max_tasks·d_i/w_i); ties by index.
  std::vector<std::size_t> by_cap;
  for (std::size_t i = 0; i < n; ++i)
    if (active[i] && std::isfinite(users[i].max_tasks)) by_cap.push_back(i);
  auto cap_level = [&](std::size_t i) { return users[i].max_tasks * per_task[i] / users[i].weight; };
  std::sort(by_cap.begin(), by_cap.end(), [&](std::size_t a, std::size_t b) {
    const double la = cap_level(a), lb = cap_level(b);
    return la < lb || (la == lb && a < b);
  });
  std::size_t next_cap = 0;

  Vector frozen = Vector::Zero(m);  // F
  Vector rho = Vector::Zero(m);
  auto recompute_rho = [&] {
    rho.setZero();
    for (std::size_t i = 0; i < n; ++i)
      if (active[i]) rho += users[i].demand * (users[i].weight / per_task[i]);
  };
  recompute_rho();
  std::size_t remaining = static_cast<std::size_t>(std::count(active.begin(), active.end(), 1));

  auto stop_user = [&](std::size_t i, double tasks, StopReason why, int bottleneck) {
    active[i] = 0;
    --remaining;
    detail::record_fairness_stop(out, i, tasks, why, bottleneck);
    frozen += users[i].demand * tasks;
    rho -= users[i].demand * (users[i].weight / per_task[i]);
  };

  while (remaining > 0) {
    while (next_cap < by_cap.size() && !active[by_cap[next_cap]]) ++next_cap;
    double t_next = kUnlimited;
    if (next_cap < by_cap.size()) t_next = cap_level(by_cap[next_cap]);
    int sat = -1;
    for (Eigen::Index r = 0; r < m; ++r) {
      if (out.saturated[static_cast<std::size_t>(r)] || rho[r] <= 0) continue;
      const double t_r = std::max(0.0, capacity[r] - frozen[r]) / rho[r];
      if (t_r < t_next) {
        t_next = t_r;
        sat = static_cast<int>(r);
      }
    }
    if (sat < 0 && next_cap >= by_cap.size()) break;  // unreachable: an active user needs a free resource
    if (sat < 0) {
      // A cap comes first (or at the same level as every saturation).
      const std::size_t i = by_cap[next_cap];
      stop_user(i, users[i].max_tasks, StopReason::kDemandMet, -1);
      continue;
    }
    // Resource `sat` saturates at t_next: stop every active user that needs it, at that level.
    out.saturated[static_cast<std::size_t>(sat)] = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (!active[i] || users[i].demand[sat] <= 0) continue;
      const double x = std::min(users[i].max_tasks, t_next * users[i].weight / per_task[i]);
      stop_user(i, x, StopReason::kResourceSaturated, sat);
    }
    recompute_rho();
  }

  for (std::size_t i = 0; i < n; ++i) {
    out.dominant_share[i] = out.tasks[i] * per_task[i];
    out.used += users[i].demand * out.tasks[i];
  }
  // Report as saturated any resource used up to rounding, including ones that filled at the same
  // level as another.
  for (Eigen::Index r = 0; r < m; ++r)
    if (capacity[r] > 0 && out.used[r] >= capacity[r] * (1 - 1e-9)) out.saturated[static_cast<std::size_t>(r)] = true;
  return out;
}

// --- DrfSorter ------------------------------------------------------------------------------------------

GPUSCHED_CTOR_DECL DrfSorter::DrfSorter(Amounts total) : total_(std::move(total)), heap_(Less{&share_, &exact_}) {}

GPUSCHED_CTOR_DECL DrfSorter::DrfSorter(const DrfSorter& o)
    : total_(o.total_), alloc_(o.alloc_), weight_(o.weight_), share_(o.share_), exact_(o.exact_), heap_(o.heap_) {
  heap_.less() = Less{&share_, &exact_};
}
GPUSCHED_CTOR_DECL DrfSorter::DrfSorter(DrfSorter&& o) noexcept
    : total_(std::move(o.total_)),
      alloc_(std::move(o.alloc_)),
      weight_(std::move(o.weight_)),
      share_(std::move(o.share_)),
      exact_(std::move(o.exact_)),
      heap_(std::move(o.heap_)) {
  heap_.less() = Less{&share_, &exact_};
}
GPUSCHED_DECL DrfSorter& DrfSorter::operator=(const DrfSorter& o) {
  if (this != &o) {
    DrfSorter copy(o);
    *this = std::move(copy);
  }
  return *this;
}
GPUSCHED_DECL DrfSorter& DrfSorter::operator=(DrfSorter&& o) noexcept {
  total_ = std::move(o.total_);
  alloc_ = std::move(o.alloc_);
  weight_ = std::move(o.weight_);
  share_ = std::move(o.share_);
  exact_ = std::move(o.exact_);
  heap_ = std::move(o.heap_);
  heap_.less() = Less{&share_, &exact_};
  return *this;
}

GPUSCHED_DECL DrfSorter::ClientId DrfSorter::add(double weight) {
  const auto id = static_cast<ClientId>(weight_.size());
  weight_.push_back(weight);
  share_.push_back(0.0);
  exact_.push_back(detail::fairness_zero_share(weight));
  alloc_.resize(alloc_.size() + resources(), 0);
  heap_.push(id);
  return id;
}

GPUSCHED_DECL void DrfSorter::refresh(ClientId c) {
  const std::int64_t* a = alloc_.data() + static_cast<std::size_t>(c) * resources();
  double best = 0.0;
  for (std::size_t r = 0; r < resources(); ++r)
    if (total_[static_cast<Eigen::Index>(r)] > 0)
      best = std::max(best, static_cast<double>(a[r]) / static_cast<double>(total_[static_cast<Eigen::Index>(r)]));
  share_[c] = best / weight_[c];
  detail::fairness_set_dominant_fraction(
      exact_[c], resources(), [a](std::size_t r) { return a[r]; },
      [this](std::size_t r) { return total_[static_cast<Eigen::Index>(r)]; });
  heap_.update(c);  // only this client moves (no-op when inactive)
}

GPUSCHED_DECL void DrfSorter::allocate(ClientId c, const Amounts& delta) {
  std::int64_t* a = alloc_.data() + static_cast<std::size_t>(c) * resources();
  for (std::size_t r = 0; r < resources(); ++r) a[r] += delta[static_cast<Eigen::Index>(r)];
  refresh(c);
}

GPUSCHED_DECL void DrfSorter::unallocate(ClientId c, const Amounts& delta) {
  std::int64_t* a = alloc_.data() + static_cast<std::size_t>(c) * resources();
  for (std::size_t r = 0; r < resources(); ++r) a[r] -= delta[static_cast<Eigen::Index>(r)];
  refresh(c);
}

GPUSCHED_DECL void DrfSorter::activate(ClientId c) { heap_.push(c); }
GPUSCHED_DECL void DrfSorter::deactivate(ClientId c) { heap_.erase(c); }

// --- whole tasks --------------------------------------------------------------------------------------

GPUSCHED_DECL Result<WholeTaskAllocation> drf_whole_tasks(const Amounts& capacity, std::span<const TaskUser> users) {
  const Eigen::Index m = capacity.size();
  for (Eigen::Index r = 0; r < m; ++r)
    if (capacity[r] < 0) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("capacity[", r, "]: expected a non-negative amount, got ", capacity[r]));
  for (std::size_t i = 0; i < users.size(); ++i) {
    const auto& u = users[i];
    if (u.demand.size() != m)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("users[", i, "].demand: expected ", m, " resources, got ", u.demand.size()));
    if (!std::isfinite(u.weight) || u.weight <= 0)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("users[", i, "].weight: expected a positive finite number, got ", u.weight));
    if (u.max_tasks < -1)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("users[", i, "].max_tasks: expected -1 (unbounded) or a count, got ", u.max_tasks));
    if ((u.demand.array() < 0).any())
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("users[", i, "].demand: negative amount"));
    if (u.max_tasks == -1 && (u.demand.array() == 0).all())
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("users[", i, "].demand: all zero with unbounded max_tasks (it would never stop)"));
  }
  WholeTaskAllocation out;
  out.tasks.assign(users.size(), 0);
  out.used = Amounts::Zero(m);
  out.set_aside_at.assign(users.size(), 0);
  std::vector<char> set_aside(users.size(), 0);
  DrfSorter sorter(capacity);
  for (const auto& u : users) sorter.add(u.weight);
  Amounts free = capacity;
  for (;;) {
    const std::int64_t f = sorter.front();
    if (f < 0) break;
    const auto i = static_cast<std::uint32_t>(f);
    const auto& u = users[i];
    if ((u.max_tasks >= 0 && out.tasks[i] >= u.max_tasks) || !(u.demand.array() <= free.array()).all()) {
      // Capped, or its task does not fit: free only shrinks, so it never will again.
      sorter.deactivate(i);
      set_aside[i] = 1;
      out.set_aside_at[i] = out.sequence.size();
      continue;
    }
    free -= u.demand;
    ++out.tasks[i];
    out.sequence.push_back(i);
    sorter.allocate(i, u.demand);
  }
  for (std::size_t i = 0; i < users.size(); ++i)
    if (!set_aside[i]) out.set_aside_at[i] = out.sequence.size();
  out.used = capacity - free;
  out.dominant_share.resize(users.size());
  for (std::size_t i = 0; i < users.size(); ++i)
    out.dominant_share[i] = dominant_share(Amounts(users[i].demand * out.tasks[i]), capacity);
  return out;
}

}  // namespace gpusched::fairness
