// gpusched/scheduler/detail/orders_impl.hpp — definitions of orders.hpp (header-only).
//
// Included at the end of orders.hpp, or, under GPUSCHED_SEPARATE_COMPILATION, once per program by
// gpusched/compiled.hpp (core/config.hpp); not a public header.
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/packing/registry.hpp"  // PolicyRegistry::canonical: one rule for every name
#include "gpusched/scheduler/orders.hpp"

#include <limits>
#include <utility>

namespace gpusched::scheduler {
namespace detail {

template <class Order>
OrderEntry builtin_job_order(std::string summary) {
  OrderEntry e;
  e.name = std::string(Order{}.name());
  e.summary = std::move(summary);
  e.job_order = [] { return std::make_unique<Order>(); };
  e.builtin = true;
  return e;
}

template <class Order>
OrderEntry builtin_victim_order(std::string summary) {
  OrderEntry e;
  e.name = std::string(Order{}.name());
  e.summary = std::move(summary);
  e.victim_order = [] { return std::make_unique<Order>(); };
  e.builtin = true;
  return e;
}

GPUSCHED_DECL std::string known_names(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) out.append(out.empty() ? "" : ", ").append(n);
  return out;
}

}  // namespace detail

GPUSCHED_DECL std::int64_t ShortestFirstOrder::key(const PendingJob& job) const {
  return job.runtime_estimate > 0 ? job.runtime_estimate : std::numeric_limits<std::int64_t>::max();
}

GPUSCHED_DECL std::int64_t SmallestFirstOrder::key(const PendingJob& job) const {
  std::int64_t total = 0;
  for (const CompiledGroup& g : job.job.groups)
    total = detail::saturating_add(total, detail::saturating_mul(g.replicas, g.request.shape.total_gpu_milli()));
  return total;
}

GPUSCHED_DECL std::int64_t NewestFirstVictimOrder::cost(const VictimCandidate& c) const {
  return c.now > c.job->start_time ? c.now - c.job->start_time : 0;
}

GPUSCHED_DECL OrderRegistry OrderRegistry::with_builtins() {
  OrderRegistry r;
  r.entries_.push_back(detail::builtin_job_order<PriorityOrder>("priority, then submit time (the default)"));
  r.entries_.push_back(detail::builtin_job_order<ShortestFirstOrder>(
      "shortest runtime estimate first (SJF); jobs without one last"));
  r.entries_.push_back(detail::builtin_job_order<SmallestFirstOrder>("fewest GPUs first"));
  r.entries_.push_back(detail::builtin_job_order<SubmitOrder>("submit time only (FIFO), priority breaking ties"));
  r.entries_.push_back(detail::builtin_victim_order<CheckpointCostOrder>(
      "least work lost since the last checkpoint plus restart cost (the default)"));
  r.entries_.push_back(detail::builtin_victim_order<FewestGpusVictimOrder>("fewest GPUs freed first"));
  r.entries_.push_back(detail::builtin_victim_order<NewestFirstVictimOrder>(
      "most recently started first, checkpoints ignored"));
  return r;
}

GPUSCHED_DECL Status OrderRegistry::add(OrderEntry entry) {
  if (entry.name.empty()) return Error{"order: empty name", ErrorCode::kInvalidValue, "name"};
  const std::string shown = entry.name.substr(0, 100);
  if (!entry.job_order && !entry.victim_order)
    return Error{"order '" + shown + "': neither a job order nor a victim order", ErrorCode::kInvalidValue, "order"};
  const std::string c = PolicyRegistry::canonical(entry.name);
  if (c.empty()) return Error{"order '" + shown + "': a name of only '-' and '_'", ErrorCode::kInvalidValue, "name"};
  for (const OrderEntry& e : entries_)
    if (PolicyRegistry::canonical(e.name) == c)
      return Error{"order '" + shown + "': the name of an existing order ('" + e.name + "')", ErrorCode::kDuplicate, "name"};
  entries_.push_back(std::move(entry));
  return {};
}

GPUSCHED_DECL const OrderEntry* OrderRegistry::find(std::string_view name) const {
  for (const OrderEntry& e : entries_)
    if (e.name == name) return &e;
  const std::string c = PolicyRegistry::canonical(name);
  for (const OrderEntry& e : entries_)
    if (PolicyRegistry::canonical(e.name) == c) return &e;
  return nullptr;
}

GPUSCHED_DECL Result<std::unique_ptr<JobOrder>> OrderRegistry::make_job_order(std::string_view name) const {
  const OrderEntry* e = find(name);
  if (!e || !e->job_order)
    return Error{"unknown job order \"" + std::string(name.substr(0, 100)) + "\" (known: " +
                     detail::known_names(job_order_names()) + ")",
                 ErrorCode::kUnknownName, "order"};
  std::unique_ptr<JobOrder> o = e->job_order();
  if (!o) return Error{"job order \"" + e->name + "\": its factory made no order", ErrorCode::kInvalidValue, "order"};
  return o;
}

GPUSCHED_DECL Result<std::unique_ptr<VictimOrder>> OrderRegistry::make_victim_order(std::string_view name) const {
  const OrderEntry* e = find(name);
  if (!e || !e->victim_order)
    return Error{"unknown victim order \"" + std::string(name.substr(0, 100)) + "\" (known: " +
                     detail::known_names(victim_order_names()) + ")",
                 ErrorCode::kUnknownName, "victim_order"};
  std::unique_ptr<VictimOrder> o = e->victim_order();
  if (!o)
    return Error{"victim order \"" + e->name + "\": its factory made no order", ErrorCode::kInvalidValue, "victim_order"};
  return o;
}

GPUSCHED_DECL Result<Orders> OrderRegistry::make_orders(std::string_view order, std::string_view victim_order) const {
  Orders out;
  if (!order.empty()) {
    auto o = make_job_order(order);
    if (!o) return o.error();
    out.order = std::move(*o);
  }
  if (!victim_order.empty()) {
    auto o = make_victim_order(victim_order);
    if (!o) return o.error();
    out.victim_order = std::move(*o);
  }
  return out;
}

GPUSCHED_DECL std::vector<std::string_view> OrderRegistry::job_order_names() const {
  std::vector<std::string_view> out;
  for (const OrderEntry& e : entries_)
    if (e.job_order) out.push_back(e.name);
  return out;
}

GPUSCHED_DECL std::vector<std::string_view> OrderRegistry::victim_order_names() const {
  std::vector<std::string_view> out;
  for (const OrderEntry& e : entries_)
    if (e.victim_order) out.push_back(e.name);
  return out;
}

}  // namespace gpusched::scheduler
