// gpusched/fairness/admission_rule.hpp — the one admission rule: which queue is served next, and on
// which flavor its head job is charged. FairSharePlanner::plan (admission.hpp) and the scheduling
// cycle (scheduler/cycle.hpp) both admit through these pieces; they differ only in what "the job
// fits" means (the cluster's aggregate free amounts for the planner, a placement of the whole gang on
// concrete nodes for the cycle) and in what they report.
//
//   * QueueTree: the queues as a validated tree (unique non-empty names, positive finite weights,
//     flavors the cluster has, known parents, no cycle, quotas only on leaves), parents listed before
//     children. Jobs go to leaf queues.
//   * QueueOrder: which queue is served next. Hierarchical DRF (hdrf.hpp) over the tree with every
//     leaf's usage allocated; a queue whose head job fits its own nominal quota (tier 0) goes before
//     one whose head would borrow (tier 1), as Kueue admits non-borrowing workloads first; within a
//     tier the lowest weighted dominant share, ties to the queue listed first. What the cluster has
//     in use that no queue accounts for sits in a blocked leaf under the root, so shares and
//     saturation see the cluster as it is.
//   * choose_flavor: the flavors a job may be charged on, in the queue's flavor order (else the
//     resource space's); the first whose quota check admits the job without borrowing and on which
//     it fits, else the first that admits it by borrowing and on which it fits. Borrowing on one
//     flavor therefore never pushes a job that fits another flavor's nominal quota behind borrowers
//     (kueue issue #9406). A flavor is tried for fit only in its own pass, so a caller whose fit test
//     reserves (the cycle's placement) never holds a borrowing placement while a nominal one exists.
//   * head_tier: the tier of a queue's head job, from the same candidates.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/preemption_policy.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/fairness/drf.hpp"
#include "gpusched/fairness/hdrf.hpp"
#include "gpusched/fairness/quota.hpp"

namespace gpusched::fairness {

// The dimensions fairness works in: cpu (milli-CPU), memory (bytes), then one per GPU model
// (milli-GPU), named "gpu:<model>".
struct ResourceSpace {
  static constexpr Eigen::Index kCpu = 0;
  static constexpr Eigen::Index kMemory = 1;
  std::vector<std::string> gpu_models;

  Eigen::Index size() const { return 2 + static_cast<Eigen::Index>(gpu_models.size()); }
  std::string name(Eigen::Index dim) const;
  std::optional<Eigen::Index> gpu_dim(std::string_view model) const;
  // An amount in the dimension's natural spelling: "4.5" cores, "64Gi", "2.5" GPUs.
  std::string format(Eigen::Index dim, std::int64_t amount) const;
};

// A queue's amounts per dimension of the resource space (cpu milli-cores, memory bytes, then milli-GPU
// per model), as plain integers: a queue is configured without Eigen, which stays inside the family.
using QueueAmounts = std::vector<std::int64_t>;
// The family's vector of the same amounts (empty stays empty), and back.
inline Amounts amounts_of(const QueueAmounts& a) {
  return Eigen::Map<const Amounts>(a.data(), static_cast<Eigen::Index>(a.size()));
}
inline QueueAmounts queue_amounts(const Amounts& a) { return QueueAmounts(a.data(), a.data() + a.size()); }

struct QueueConfig {
  std::string name;
  std::string parent;                     // empty: directly under the root
  double weight = 1.0;
  std::string cohort;
  QueueAmounts nominal;                   // empty or per dimension; kNoLimit = unconstrained
  QueueAmounts borrowing_limit;           // empty = unbounded
  QueueAmounts lending_limit;             // empty = all of nominal
  std::vector<std::string> flavor_order;  // GPU models in preference order; empty = space order
  bool strict_fifo = false;
  QueueAmounts usage;                     // already admitted (FairSharePlanner; the cycle sums its running
                                          // jobs instead); empty = none
  // The queue's own preemption policies (Kueue's ClusterQueue spec.preemption), for its pending
  // jobs in the scheduling cycle; unset: the cycle's options (scheduler::CycleOptions) decide.
  std::optional<WithinQueue> within_queue;
  std::optional<CohortReclaim> reclaim_within_cohort;
  BorrowWithinCohort borrow_within_cohort;  // Never unless set (no cycle-wide default)
};

// The names that some queue of `queues` gives as its parent (a range of QueueConfig, or of any record
// with a `parent` string: the readers' own queue records): those queues divide by weight and take no
// jobs and no usage of their own — jobs run in leaf queues. The views point into `queues`.
template <class Queues>
std::set<std::string_view, std::less<>> parent_queue_names(const Queues& queues) {
  std::set<std::string_view, std::less<>> out;
  for (const auto& q : queues)
    if (!q.parent.empty()) out.insert(q.parent);
  return out;
}

// The flavors (GPU dimensions) a queue offers, in the order they are tried: its flavor order, else
// the resource space's (the queue validated by QueueTree::build: every model it names is in the space).
std::vector<Eigen::Index> flavor_dims(const ResourceSpace& space, const QueueConfig& queue);

// The fairness dimension of each GPU model id of `registry` (2 + the model's index in the space, by
// name: two ids of one name share it), -1 for a model the space does not have.
std::vector<Eigen::Index> gpu_dims_by_model(const ResourceSpace& space, const GpuModelRegistry& registry);

// The quota part of a queue, for QuotaBook (quota.hpp).
inline QueueQuota queue_quota(const QueueConfig& q) {
  return QueueQuota{q.name, q.cohort, amounts_of(q.nominal), amounts_of(q.borrowing_limit), amounts_of(q.lending_limit)};
}

class QueueTree {
 public:
  // Validates the queues against the resource space (errors name the queue and the field, as
  // FairSharePlanner::build reports them). A queue's `usage` is not read (the planner's input).
  static Result<QueueTree> build(const ResourceSpace& space, std::span<const QueueConfig> queues);

  std::size_t size() const { return parent_.size(); }
  std::int64_t parent(std::size_t q) const { return parent_[q]; }  // -1: under the root
  std::span<const std::int64_t> parents() const { return parent_; }
  bool leaf(std::size_t q) const { return leaf_[q] != 0; }
  // Every queue, parents before children.
  std::span<const std::size_t> parents_first() const { return topo_; }
  std::optional<std::size_t> find(std::string_view name) const;

 private:
  std::vector<std::int64_t> parent_;
  std::vector<char> leaf_;
  std::vector<std::size_t> topo_;
  // Queue index by name, looked up by string_view without allocating (a lookup per job of a plan).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> index_;
};

class QueueOrder {
 public:
  // `usage[q]` is what leaf q holds (entries of internal queues are ignored); capacity and free are
  // the cluster's aggregate amounts. A dimension counts as saturated once its free amount is below
  // `saturation_threshold` (HdrfScheduler; empty: below one unit).
  QueueOrder(const QueueTree& tree, std::span<const QueueConfig> queues, const Amounts& capacity, const Amounts& free,
             std::span<const Amounts> usage, Amounts saturation_threshold = {});

  // The queue to serve next, or nothing when every queue is blocked.
  std::optional<std::size_t> pick() const;
  // After queue q's head was served: what it was charged (null: nothing), and the tier of its new
  // head, or no head (the queue is blocked): one update of the tree for both.
  void update(std::size_t q, const Amounts* charged, std::optional<std::uint8_t> head_tier);
  void block(std::size_t q);
  // Usage that changes outside a head's admission (a preemption's victims, an elastic grow).
  void allocate(std::size_t q, const Amounts& a);
  void release(std::size_t q, const Amounts& a);
  // H-DRF's weighted dominant share of queue q as its parent sees it.
  double share(std::size_t q) const;

 private:
  HdrfScheduler hdrf_;
  std::vector<HdrfScheduler::NodeId> node_of_queue_;
  std::vector<std::size_t> queue_of_node_;  // SIZE_MAX: the root and the blocked leaf of other usage
};

// What choose_flavor found: the flavor (a GPU dimension of the space, -1 for a job without GPUs) and
// whether it borrows; `found` false when no candidate both passed its quota check and fit.
struct FlavorChoice {
  bool found = false;
  Eigen::Index gpu_dim = -1;
  bool borrows = false;
};

// The flavor rule (above). `candidates` are the flavors the job may be charged on, in order (-1 alone
// for a job without GPUs): any range of Eigen::Index that can be walked twice. `check(d)` is the
// quota's answer for the job charged on d (a QuotaCheck); `refused(d, check)` is told, once per
// candidate and in order, each check that does not admit (an rvalue: it may keep it); `fits(d,
// borrows)` answers whether the job can have flavor d now (it may reserve what it found when it says
// yes: it is asked again for no other candidate after a yes).
template <class Candidates, class Check, class Refused, class Fits>
FlavorChoice choose_flavor(const Candidates& candidates, Check&& check, Refused&& refused, Fits&& fits) {
  // The first pass remembers which of the first 64 candidates would borrow: the second asks the
  // quota again only for those (the check may set up what `fits` reads) and skips the rest.
  std::uint64_t borrowing = 0;
  std::size_t k = 0;
  for (const Eigen::Index d : candidates) {
    QuotaCheck c = check(d);
    if (!c.admitted()) {
      refused(d, std::move(c));
    } else if (c.borrows) {
      if (k < 64) borrowing |= std::uint64_t{1} << k;
    } else if (fits(d, false)) {
      return {true, d, false};
    }
    ++k;
  }
  k = 0;
  for (const Eigen::Index d : candidates) {
    const bool skip = k < 64 && !((borrowing >> k) & 1);
    ++k;
    if (skip) continue;
    const QuotaCheck c = check(d);
    if (c.admitted() && c.borrows && fits(d, true)) return {true, d, true};
  }
  return {};
}

// The tier of a queue whose head job has these candidates: 0 when some candidate lies within the
// queue's own nominal quota (`within_nominal(d)`), else 1.
template <class Candidates, class WithinNominal>
std::uint8_t head_tier(const Candidates& candidates, WithinNominal&& within_nominal) {
  for (const Eigen::Index d : candidates)
    if (within_nominal(d)) return 0;
  return 1;
}

}  // namespace gpusched::fairness

#if GPUSCHED_HEADER_ONLY
#include "gpusched/fairness/detail/admission_rule_impl.hpp"
#endif
