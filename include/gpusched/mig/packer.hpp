// gpusched/mig/packer.hpp — MIG-aware placement that keeps big and demanded profiles placeable.
//
// What it is for. A request for one GPU instance (a profile, e.g. 3g.40gb) must go to a GPU and,
// on that GPU, to a start slice its profile allows. Counting profiles as opaque resources (the
// device plugin's `nvidia.com/mig-<profile>`, KAI, Slurm) or choosing among whole-GPU templates
// ignores that where an instance starts decides what still fits: on an empty A100 a 1g.5gb at
// slice 0 still leaves room for a 3g.20gb at 4, but at slice 4 it rules out both halves' 3g and
// the 4g. This packer chooses the GPU and the start so that what stays free can still take the
// profiles that are wanted, largest and most demanded first.
//
// The measure (after FGD, Weng et al., USENIX ATC'23, "Beware of Fragmentation": the expected
// amount of free capacity that a task drawn from the workload cannot use). For a GPU whose
// occupied memory slices are O and a demand weight w_q per profile q (how much q is wanted:
// pending counts, or a popularity estimate; default 1 for every profile without media
// extensions):
//
//     unusable_q(O) = free slices of the GPU not covered by any start where q can be created now
//     F(O)          = sum over q of w_q * c_q * unusable_q(O),   c_q = q's compute slices
//
// Weighting by c_q measures demand in compute slices rather than in requests. With request counts
// alone (FGD's popularity), a rare 7g.40gb weighs little against popular 1g/2g profiles and the
// measure happily breaks whole GPUs: on a 800-GPU version of benchmarks/mig_place.cpp's stream it refused twice
// as many 7g requests as first-fit did. Weighted by size it keeps whole GPUs for them.
//
// "Can be created" applies every rule of gpusched/mig/layout.hpp (placements, overlap, compute,
// instance limits, media engines). A free slice a 7g or 4g can no longer use counts for every
// such profile, so breaking an empty GPU costs most and filling a hole that only a small profile
// can use costs least (it may even lower F, as FGD's score can).
//
// The rule, stated once.
//   Dynamic mode (instances may be created in free slices):
//     1. if some GPU has an idle instance of the profile, take one (no re-partition), chosen as
//        in static mode;
//     2. else create the instance at the (GPU, start) with the least increase of F(all
//        instances); ties: the fewest free slices left on the GPU (best fit), then the lowest GPU
//        id, then the lowest start.
//   Static mode (instances exist; a request takes a free one):
//     take the idle instance whose GPU's F over its *busy* instances grows least, i.e. keep
//     GPUs that could be re-partitioned cheaply (few busy instances, in the right places) for
//     later; ties: fewest idle slices left on the GPU, lowest GPU id, lowest start.
//   A request nothing can serve gets `kNone` with a reason counting GPUs by cause.
// Dynamic mode never refuses a request while some GPU has a valid placement for it (tested
// against exhaustive search).
//
// `FirstFitPlacer` is the baseline: the lowest GPU id that can serve the request, at its lowest
// start (idle instance first).
//
// Cost. GPUs of identical state form classes (gpusched/cluster/mig_gpus.hpp); a decision evaluates each
// live class once (memoised per class and profile) and takes the lowest GPU of the best class. The
// memo is a cache inside the placer (it never changes an answer), so one placer object must not be
// used from two threads at once; use one per thread.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/detail/text.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/packing/policy.hpp"

namespace gpusched::mig {

enum class MigMode : std::uint8_t { kStatic, kDynamic };

enum class MigAction : std::uint8_t {
  kNone = 0,   // not placeable now; see the decision's verdict and reasons
  kUseIdle,    // take an existing idle instance (no re-partition)
  kCreate,     // create a new instance in free memory slices (dynamic MIG)
};

// One decision, in the one answer vocabulary (gpusched/core/outcome.hpp):
//   kPlaced      `gpu` (a MIG id of state.mig().table()), `profile` (index in its model's table), `start`;
//   kNotNow      some MIG GPU of the cluster has a model offering the profile, but none can serve it
//                now (slices taken, no idle instance in static mode, its node cordoned or failed);
//   kInfeasible  no MIG GPU of the cluster has a model offering the profile.
// `reasons` count the MIG GPUs by cause (unit kGpus): kNoMigPlacement (no free placement: slices
// taken or limits reached), kNoIdleMigInstance (static mode), kNoMigProfile (model without the
// profile), kNodeUnschedulable (GPUs parked on nodes that take no work, or unhealthy). Text only on
// request: `to_string(decision)`, or `explain(state, request, decision)` for the CLI's wording.
struct MigDecision {
  Verdict verdict = Verdict::kNotNow;
  MigAction action = MigAction::kNone;
  MigGpuId gpu = kNoGpu;
  int profile = -1;  // index in the GPU model's table
  int start = -1;
  std::int64_t score = 0;  // the policy's cost (lower is better), for explanations
  std::vector<Reason> reasons;
  bool placed() const { return action != MigAction::kNone; }
};

// Demand weights per model and profile index (non-negative integers).
class MigDemand {
 public:
  MigDemand() = default;
  // Weight 1 for every profile without media extensions, 0 for `+me` ones, on every model.
  static MigDemand uniform(const MigCatalog& catalog);
  // Weights = how many of `requests` (with counts) each profile serves, per model. A request
  // counts for every model it can run on.
  static MigDemand from_requests(const MigCatalog& catalog, std::span<const MigRequest> requests,
                                 std::span<const std::int64_t> counts);

  void set(MigModelId model, int profile, std::int64_t weight);
  std::int64_t weight(MigModelId model, int profile) const;
  std::span<const std::int64_t> weights(MigModelId model) const;

 private:
  std::vector<std::array<std::int64_t, kMaxProfiles>> w_;
};

// F(O) above for one GPU.
std::int64_t fragmentation(const MigGpuSpec& spec, const Occupancy& occ, std::span<const std::int64_t> weights,
                           LayoutRules rules = {});

namespace detail {
// One GPU's best move for a profile under the frag-aware rule (start -1: none): the idle instance
// to take (F over the busy instances grows least) or the start to create at (F over all grows
// least); ties: fewest idle (take) or free (create) slices left, then the lowest start.
struct MigMove {
  std::int8_t start = -1;
  std::int64_t delta = 0;
  std::int32_t left = 0;
};
MigMove frag_aware_take(const MigGpuTable& mig, MigGpuId g, int profile, std::span<const std::int64_t> weights);
MigMove frag_aware_create(const MigGpuTable& mig, MigGpuId g, int profile, std::span<const std::int64_t> weights);
}  // namespace detail

class MigPlacer {
 public:
  virtual ~MigPlacer() = default;
  virtual std::string_view name() const = 0;
  // Where one instance of `request` should go on `state`, or why it cannot.
  virtual MigDecision decide(const ClusterState& state, const MigRequest& request) const = 0;
};

class FragAwarePlacer final : public MigPlacer {
 public:
  // Constructors are defined with the rest (detail/packer_impl.hpp): under separate compilation that
  // is where the vtable is emitted (clang emits it only where a constructor is).
  FragAwarePlacer(MigMode mode, MigDemand demand);
  std::string_view name() const override { return mode_ == MigMode::kDynamic ? "frag-aware" : "frag-aware-static"; }
  MigDecision decide(const ClusterState& state, const MigRequest& request) const override;
  const MigDemand& demand() const { return demand_; }

 private:
  using Move = detail::MigMove;
  struct Memo {
    std::uint64_t key = ~std::uint64_t{0};
    std::uint16_t done = 0;  // bit p: profile p evaluated
    std::array<Move, kMaxProfiles> take{}, create{};
  };
  // The class's memo with profile `profile` evaluated (memo_ must cover the class ids: decide
  // sizes it once per call). The evaluation is marked cold so that it stays out of decide's loop,
  // where the memo hit is inlined.
  const Memo& memo(const ClusterState& state, MigClassId c, int profile) const;
  [[gnu::cold]] const Memo& evaluate_memo(const ClusterState& state, MigClassId c, int profile) const;

  MigMode mode_;
  MigDemand demand_;
  mutable std::vector<Memo> memo_;  // by class id; checked against the class key
};

// The frag-aware rule on the node a placement policy chose, for every path that places jobs:
// place_job, place_gang and the scheduling cycle take it as `mig_picker` in their options
// (packing/placement.hpp, gang/gang.hpp), the tool as `--mig-placement frag-aware`. On the node's
// MIG GPUs it takes an idle instance of the profile if one exists, else creates one, each where
// FragAwarePlacer would (least growth of F, then fewest slices left, lowest GPU, lowest start): on
// a one-node cluster its choice is the placer's. Without it, a MIG task takes the first fit
// (ClusterState::Mig::pick_instance). Tasks without a MIG profile are not its to place.
class FragAwareMigPicker final : public GpuPicker {
 public:
  explicit FragAwareMigPicker(MigDemand demand);
  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request, TaskAssignment& out) const override;
  const MigDemand& demand() const { return demand_; }

 private:
  MigDemand demand_;
};

class FirstFitPlacer final : public MigPlacer {
 public:
  explicit FirstFitPlacer(MigMode mode);
  std::string_view name() const override { return mode_ == MigMode::kDynamic ? "first-fit" : "first-fit-static"; }
  MigDecision decide(const ClusterState& state, const MigRequest& request) const override;

 private:
  MigMode mode_;
};

// Why nothing can serve `request` now: the verdict (not now / infeasible) and the reasons counting
// the MIG GPUs by cause, as MigDecision documents. Shared by the placers.
Outcome unplaceable_outcome(const ClusterState& state, const MigRequest& request, MigMode mode);
// The CLI's wording of an unplaced decision: "0/12 GPUs can take 3g.20gb: 8 no free placement
// (slices taken or limits reached), 4 GPU model without the profile".
std::string explain(const ClusterState& state, const MigRequest& request, const MigDecision& decision);
// "not now: 8 no free MIG placement (...)", the generic form.
std::string to_string(const MigDecision& decision);

// Carrying a decision out on the one state: a MIG reservation through ClusterState::reserve (so
// the journal's rollback undoes it and release gives it back: the instance is destroyed if the
// decision created it, else it becomes idle again). `mig_task` makes the request and assignment
// (no CPU or memory: the MIG instance alone); `apply_decision` reserves it.
struct MigTask {
  TaskRequest request;
  TaskAssignment assignment;
};
MigTask mig_task(const ClusterState& state, const MigDecision& decision);
// The assignment holding the busy instance at `start` of MIG GPU g, for releasing work the state did
// not place itself (e.g. read busy from a cluster file): ClusterState::release frees the instance
// and destroys it when `destroy` (dynamic MIG), else leaves it idle.
TaskAssignment mig_instance_assignment(const ClusterState& state, MigGpuId g, int start, bool destroy);
Status apply_decision(ClusterState& state, const MigDecision& decision);

}  // namespace gpusched::mig

#if GPUSCHED_HEADER_ONLY
#include "gpusched/mig/detail/packer_impl.hpp"
#endif
