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
// Cost. GPUs of identical state form classes (gpusched/mig/state.hpp); a decision evaluates each
// live class once (memoised per class and profile) and takes the lowest GPU of the best class. The
// memo is a cache inside the placer (it never changes an answer), so one placer object must not be
// used from two threads at once; use one per thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gpusched/mig/state.hpp"

namespace gpusched::mig {

enum class MigMode : std::uint8_t { kStatic, kDynamic };

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

class MigPlacer {
 public:
  virtual ~MigPlacer() = default;
  virtual std::string_view name() const = 0;
  // Where one instance of `request` should go on `state`, or why it cannot.
  virtual MigDecision decide(const MigState& state, const MigRequest& request) const = 0;
};

class FragAwarePlacer final : public MigPlacer {
 public:
  FragAwarePlacer(MigMode mode, MigDemand demand) : mode_(mode), demand_(std::move(demand)) {}
  std::string_view name() const override { return mode_ == MigMode::kDynamic ? "frag-aware" : "frag-aware-static"; }
  MigDecision decide(const MigState& state, const MigRequest& request) const override;
  const MigDemand& demand() const { return demand_; }

 private:
  struct Move {
    std::int8_t start = -1;
    std::int64_t delta = 0;
    std::int32_t left = 0;  // tie-break: free (create) or idle (take) slices left
  };
  struct Memo {
    std::uint64_t key = ~std::uint64_t{0};
    std::uint16_t done = 0;  // bit p: profile p evaluated
    std::array<Move, kMaxProfiles> take{}, create{};
  };
  const Memo& memo(const MigState& state, MigClassId c, int profile) const;

  MigMode mode_;
  MigDemand demand_;
  mutable std::vector<Memo> memo_;  // by class id; checked against the class key
};

class FirstFitPlacer final : public MigPlacer {
 public:
  explicit FirstFitPlacer(MigMode mode) : mode_(mode) {}
  std::string_view name() const override { return mode_ == MigMode::kDynamic ? "first-fit" : "first-fit-static"; }
  MigDecision decide(const MigState& state, const MigRequest& request) const override;

 private:
  MigMode mode_;
};

// Why nothing could serve `request`: "0/12 GPUs: 8 no free placement for the profile, 4 model
// without the profile". Shared by the placers.
std::string explain_unplaceable(const MigState& state, const MigRequest& request, MigMode mode);

}  // namespace gpusched::mig
