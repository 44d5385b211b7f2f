// gpusched/scheduler/orders.hpp — job orders and victim orders by name: the built-in ones and the
// user's (docs/policies.md, "Job order" and "Victim order").
//
// The scheduling cycle has two ordering decisions a user may replace (cycle.hpp's JobOrder: which
// pending job of a queue goes first; preemption.hpp's VictimOrder: which running jobs are evicted
// first). Every path that takes them by name — `cycle`/`explain --order/--victim-order`, `simulate`,
// the C API's cycle options, Python — resolves the name in an `OrderRegistry`: a value (no global
// table), made with the built-ins, to which the tool adds the orders of its `--plugin` libraries
// (io/policy_plugin.hpp) and a C++ program its own. Names match like placement policies' (exactly,
// else canonically: case, '-' and '_' ignored); one entry may give a job order, a victim order or both.
//
//   scheduler::OrderRegistry orders = scheduler::OrderRegistry::with_builtins();
//   orders.add({.name = "deadline", .summary = "...", .job_order = [] { return std::make_unique<Mine>(); }});
//   auto order = orders.make_job_order("deadline");   // Result<std::unique_ptr<JobOrder>>
#pragma once

#include "gpusched/core/config.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "gpusched/scheduler/preemption.hpp"

namespace gpusched::scheduler {

// Built-in job orders (keys lower first; the default order breaks ties).
// The default order itself, by name: every key equal, so priority (higher first), then submit time,
// then submission decide — what CycleOptions::order = nullptr does.
class PriorityOrder final : public JobOrder {
 public:
  std::string_view name() const override { return "priority"; }
  std::int64_t key(const PendingJob&) const override { return 0; }
};
// Shortest expected run time first (SJF); jobs without an estimate last.
class ShortestFirstOrder final : public JobOrder {
 public:
  std::string_view name() const override { return "shortest-first"; }
  std::int64_t key(const PendingJob& job) const override;
};
// The fewest GPUs (milli-GPUs over all tasks) first: small jobs fill holes before large ones wait.
class SmallestFirstOrder final : public JobOrder {
 public:
  std::string_view name() const override { return "smallest-first"; }
  std::int64_t key(const PendingJob& job) const override;
};
// Submit time only, priority breaking ties: plain FIFO within a queue.
class SubmitOrder final : public JobOrder {
 public:
  std::string_view name() const override { return "submit-order"; }
  std::int64_t key(const PendingJob& job) const override { return job.job.submit_time; }
};

// Built-in victim orders besides the default (CheckpointCostOrder, "checkpoint-cost").
// The fewest GPUs freed: small victims before large ones (cost: the milli-GPUs it holds).
class FewestGpusVictimOrder final : public VictimOrder {
 public:
  std::string_view name() const override { return "fewest-gpus"; }
  std::int64_t cost(const VictimCandidate& c) const override { return c.freed_milli_gpu; }
};
// The most recently started first, ignoring checkpoints (cost: seconds it has run).
class NewestFirstVictimOrder final : public VictimOrder {
 public:
  std::string_view name() const override { return "newest-first"; }
  std::int64_t cost(const VictimCandidate& c) const override;
};

// The orders a path names, made fresh: null for the default of each.
struct Orders {
  std::unique_ptr<JobOrder> order;
  std::unique_ptr<VictimOrder> victim_order;
};

struct OrderEntry {
  std::string name;
  std::string summary;                                     // one line, for --help and docs
  std::function<std::unique_ptr<JobOrder>()> job_order;    // empty: not a job order
  std::function<std::unique_ptr<VictimOrder>()> victim_order;  // empty: not a victim order
  bool builtin = false;
};

class OrderRegistry {
 public:
  static OrderRegistry with_builtins();

  // Refused (changing nothing): an empty name or neither factory (kInvalidValue); a name an entry
  // already has, canonically (kDuplicate).
  Status add(OrderEntry entry);
  // The entry `name` denotes (exactly, else canonically), or nullptr.
  const OrderEntry* find(std::string_view name) const;
  // A fresh order: kUnknownName naming the known ones of that kind.
  Result<std::unique_ptr<JobOrder>> make_job_order(std::string_view name) const;
  Result<std::unique_ptr<VictimOrder>> make_victim_order(std::string_view name) const;
  // Both, by the names a path was given ("" = the default); the error's field says which name
  // failed ("order" or "victim_order").
  Result<Orders> make_orders(std::string_view order, std::string_view victim_order) const;
  // Names of the job orders / victim orders, in registration order (built-ins first).
  std::vector<std::string_view> job_order_names() const;
  std::vector<std::string_view> victim_order_names() const;
  const std::vector<OrderEntry>& entries() const { return entries_; }

 private:
  std::vector<OrderEntry> entries_;
};

}  // namespace gpusched::scheduler

#if GPUSCHED_HEADER_ONLY
#include "gpusched/scheduler/detail/orders_impl.hpp"
#endif
