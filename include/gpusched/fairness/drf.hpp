// gpusched/fairness/drf.hpp — Dominant Resource Fairness over Eigen resource vectors.
//
// DRF (Ghodsi, Zaharia, Hindman, Konwinski, Shenker, Stoica, "Dominant Resource Fairness: Fair
// Allocation of Multiple Resource Types", NSDI 2011) generalises max-min fairness to several
// resources. A user's *dominant share* is the largest fraction of any one resource it holds; DRF
// equalises dominant shares (divided by the user's weight for weighted DRF), so a GPU-heavy team and
// a CPU-heavy team each get the same fraction of "their" bottleneck resource.
//
// This header has three pieces:
//
//   * `progressive_filling` — the fractional reference. Every user's tasks are divisible; all users'
//     weighted dominant shares rise together until a resource saturates (users needing it stop) or a
//     user's demand cap is met (it stops). It is exact (an event-driven sweep, not small steps), runs
//     in O(n log n + n·m) for n users and m resources, and has the paper's four properties: sharing
//     incentive, envy-freeness, Pareto efficiency and strategy-proofness (tests/fairness/ checks
//     each one on seeded random instances).
//
//   * `DrfSorter` — the incremental client order Mesos' allocator uses
//     (src/master/allocator/sorter/drf/): clients with weights and allocations, `front()` the one
//     with the lowest weighted dominant share. An allocation re-sorts only the client that changed
//     (an indexed binary heap, O(log n)), never the whole list.
//     Tie-break (stated, deterministic): lower weighted dominant share first, then the lower client
//     id (ids are handed out in registration order).
//
//   * `drf_whole_tasks` — the paper's whole-task algorithm (its Algorithm 1) on a `DrfSorter`: give
//     one task to the user with the lowest weighted dominant share; a user whose next task no longer
//     fits is set aside for good (free resources only shrink). What holds for it and is tested: no
//     remaining task of any user fits the leftover resources (it is non-wasteful), and no user envies
//     another by more than one task (EF1) *while both are served*: if user i was still being served
//     when user j got its last task, i prefers no bundle of j minus one task (scaled by w_i/w_j). A
//     user set aside earlier (its next task did not fit) can envy: the others keep growing on what
//     it cannot use, which the tests show on random instances. Strategy-proofness
//     and exact envy-freeness do not hold for whole tasks, and no test claims them.
//
// Units: `Amounts` are integers in the library's units (milli-CPU, bytes, milli-GPU) so fits are
// exact; shares are doubles computed by one correctly rounded division per resource, so equal
// rational shares (6/9 and 12/18) compare equal.
//
//   gpusched::fairness::Amounts cap(2); cap << 9, 18;
//   std::vector<gpusched::fairness::TaskUser> users(2);
//   users[0].demand = (Amounts(2) << 1, 4).finished();
//   users[1].demand = (Amounts(2) << 3, 1).finished();
//   auto alloc = gpusched::fairness::drf_whole_tasks(cap, users).value();   // tasks = {3, 2}
// Threads: a DrfSorter or HdrfScheduler changes as it allocates (its heap and usage): one object per
// thread; the free functions are pure, and those taking a const ClusterState (fairness_cluster,
// cluster_input.hpp) only read it.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "gpusched/core/result.hpp"
#include "gpusched/fairness/detail/exact_share.hpp"
#include "gpusched/fairness/detail/indexed_heap.hpp"

namespace gpusched::fairness {

using Amounts = Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1>;
using Vector = Eigen::VectorXd;

inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();

// max over resources with capacity > 0 of allocation / capacity. Resources of zero capacity are
// ignored (nothing of them can be held).
double dominant_share(const Amounts& allocation, const Amounts& capacity);
double dominant_share(const Vector& allocation, const Vector& capacity);

// --- the fractional reference ---------------------------------------------------------------------

struct FractionalUser {
  Vector demand;                 // per task; non-negative, not all zero
  double weight = 1.0;           // > 0
  double max_tasks = kUnlimited; // demand cap (>= 0)
};

enum class StopReason : std::uint8_t {
  kDemandMet,          // reached max_tasks
  kResourceSaturated,  // a resource it needs ran out (`bottleneck`)
  kUnservable,         // needs a resource of zero capacity
};

struct FractionalAllocation {
  std::vector<double> tasks;           // x_i, fractional
  std::vector<double> dominant_share;  // x_i * d_i (unweighted)
  std::vector<StopReason> stop;
  std::vector<int> bottleneck;         // the saturated resource that stopped user i, else -1
  Vector used;                         // sum of x_i * demand_i
  std::vector<bool> saturated;         // per resource
};

// Weighted DRF with demand caps by progressive filling. Fails (naming the user and field) on a
// dimension mismatch, negative or non-finite numbers, a weight <= 0 or an all-zero demand.
Result<FractionalAllocation> progressive_filling(const Vector& capacity, std::span<const FractionalUser> users);

// --- the incremental sorter -------------------------------------------------------------------------

class DrfSorter {
 public:
  using ClientId = std::uint32_t;

  // `total` is the pool the shares are fractions of (zero entries are ignored in shares).
  explicit DrfSorter(Amounts total);
  DrfSorter(const DrfSorter& other);
  DrfSorter(DrfSorter&& other) noexcept;
  DrfSorter& operator=(const DrfSorter& other);
  DrfSorter& operator=(DrfSorter&& other) noexcept;
  ~DrfSorter() = default;

  // Registers a client (active). Weight must be > 0 and finite; the caller validates.
  ClientId add(double weight = 1.0);
  std::size_t size() const { return weight_.size(); }
  std::size_t resources() const { return static_cast<std::size_t>(total_.size()); }

  void allocate(ClientId c, const Amounts& delta);
  void unallocate(ClientId c, const Amounts& delta);
  // Inactive clients keep their allocation but are not returned by front().
  void activate(ClientId c);
  void deactivate(ClientId c);
  bool active(ClientId c) const { return heap_.contains(c); }

  // The active client with the lowest weighted dominant share (ties: lower id); -1 when none.
  std::int64_t front() const { return heap_.empty() ? -1 : static_cast<std::int64_t>(heap_.top()); }

  // Weighted dominant share (dominant share / weight).
  double share(ClientId c) const { return share_[c]; }
  double weight(ClientId c) const { return weight_[c]; }
  Eigen::Map<const Amounts> allocation(ClientId c) const {
    return {alloc_.data() + static_cast<std::size_t>(c) * resources(), static_cast<Eigen::Index>(resources())};
  }
  const Amounts& total() const { return total_; }

 private:
  // Lower weighted dominant share first, compared exactly (detail/exact_share.hpp: the doubles
  // decide when clearly apart, the exact fractions otherwise), then the lower id.
  struct Less {
    const std::vector<double>* share;
    const std::vector<detail::ExactShare>* exact;
    bool operator()(std::uint32_t a, std::uint32_t b) const {
      const auto order = detail::fairness_share_order((*share)[a], (*exact)[a], (*share)[b], (*exact)[b]);
      return order < 0 || (order == 0 && a < b);
    }
  };
  void refresh(ClientId c);

  Amounts total_;
  std::vector<std::int64_t> alloc_;  // client-major, resources() per client
  std::vector<double> weight_;
  std::vector<double> share_;
  std::vector<detail::ExactShare> exact_;  // the same shares as exact fractions, for ties
  detail::IndexedHeap<Less> heap_;
};

// --- the whole-task scheduler -----------------------------------------------------------------------

struct TaskUser {
  Amounts demand;               // per task; non-negative
  double weight = 1.0;          // > 0
  std::int64_t max_tasks = -1;  // -1 = unbounded (then the demand must not be all zero)
};

struct WholeTaskAllocation {
  std::vector<std::int64_t> tasks;
  Amounts used;
  std::vector<std::uint32_t> sequence;  // user of each task, in the order given
  std::vector<double> dominant_share;   // unweighted, at the end
  // How many tasks (of all users) had been handed out when user i was set aside for good (its next
  // task no longer fit, or its cap was met); sequence.size() when it never was.
  std::vector<std::size_t> set_aside_at;
};

// DRF's whole-task progressive filling (NSDI'11, Algorithm 1, with weights and demand caps).
Result<WholeTaskAllocation> drf_whole_tasks(const Amounts& capacity, std::span<const TaskUser> users);

}  // namespace gpusched::fairness

#if GPUSCHED_HEADER_ONLY
#include "gpusched/fairness/detail/drf_impl.hpp"
#endif
