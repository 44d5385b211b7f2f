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

namespace gpusched::mig {

enum class MigMode : std::uint8_t { kStatic, kDynamic };

enum class MigAction : std::uint8_t {
  kNone = 0,   // not placeable now; see the decision's verdict and reasons
  kUseIdle,    // take an existing idle instance (no re-partition)
  kCreate,     // create a new instance in free memory slices (dynamic MIG)
};

// One decision, in the one answer vocabulary (gpusched/core/outcome.hpp):
//   kPlaced      `gpu` (a MIG id of state.mig()), `profile` (index in its model's table), `start`;
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

class MigPlacer {
 public:
  virtual ~MigPlacer() = default;
  virtual std::string_view name() const = 0;
  // Where one instance of `request` should go on `state`, or why it cannot.
  virtual MigDecision decide(const ClusterState& state, const MigRequest& request) const = 0;
};

class FragAwarePlacer final : public MigPlacer {
 public:
  FragAwarePlacer(MigMode mode, MigDemand demand) : mode_(mode), demand_(std::move(demand)) {}
  std::string_view name() const override { return mode_ == MigMode::kDynamic ? "frag-aware" : "frag-aware-static"; }
  MigDecision decide(const ClusterState& state, const MigRequest& request) const override;
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
  // The class's memo with profile `profile` evaluated (memo_ must cover the class ids: decide
  // sizes it once per call).
  const Memo& memo(const ClusterState& state, MigClassId c, int profile) const;
  [[gnu::noinline]] const Memo& evaluate_memo(const ClusterState& state, MigClassId c, int profile) const;

  MigMode mode_;
  MigDemand demand_;
  mutable std::vector<Memo> memo_;  // by class id; checked against the class key
};

class FirstFitPlacer final : public MigPlacer {
 public:
  explicit FirstFitPlacer(MigMode mode) : mode_(mode) {}
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


// --- definitions --------------------------------------------------------------------------------


inline MigDemand MigDemand::uniform(const MigCatalog& catalog) {
  MigDemand d;
  for (std::size_t m = 0; m < catalog.size(); ++m) {
    const MigGpuSpec& spec = catalog.spec(static_cast<MigModelId>(m));
    for (std::size_t p = 0; p < spec.profiles.size(); ++p)
      d.set(static_cast<MigModelId>(m), static_cast<int>(p), spec.profiles[p].media_extensions ? 0 : 1);
  }
  return d;
}

inline MigDemand MigDemand::from_requests(const MigCatalog& catalog, std::span<const MigRequest> requests,
                                   std::span<const std::int64_t> counts) {
  MigDemand d;
  d.w_.resize(catalog.size(), std::array<std::int64_t, kMaxProfiles>{});
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::int64_t c = i < counts.size() ? counts[i] : 1;
    if (c <= 0) continue;
    for (std::size_t m = 0; m < catalog.size(); ++m)
      if (requests[i].profile[m] >= 0)
        d.set(static_cast<MigModelId>(m), requests[i].profile[m],
              d.weight(static_cast<MigModelId>(m), requests[i].profile[m]) + c);
  }
  return d;
}

inline void MigDemand::set(MigModelId model, int profile, std::int64_t weight) {
  if (profile < 0 || profile >= kMaxProfiles) return;
  if (w_.size() <= model) w_.resize(model + 1U, std::array<std::int64_t, kMaxProfiles>{});
  w_[model][static_cast<std::size_t>(profile)] = weight < 0 ? 0 : weight;
}

inline std::int64_t MigDemand::weight(MigModelId model, int profile) const {
  if (model >= w_.size() || profile < 0 || profile >= kMaxProfiles) return 0;
  return w_[model][static_cast<std::size_t>(profile)];
}

inline std::span<const std::int64_t> MigDemand::weights(MigModelId model) const {
  static const std::array<std::int64_t, kMaxProfiles> kZero{};  // function-local: one per program
  if (model >= w_.size()) return kZero;
  return w_[model];
}

inline std::int64_t fragmentation(const MigGpuSpec& spec, const Occupancy& occ, std::span<const std::int64_t> weights,
                           LayoutRules rules) {
  const SlotMask free = static_cast<SlotMask>(spec.all_slots() & ~occ.used);
  if (!free) return 0;
  const int nfree = std::popcount(static_cast<unsigned>(free));
  std::int64_t f = 0;
  const std::size_t n = std::min(spec.profiles.size(), weights.size());
  for (std::size_t q = 0; q < n; ++q) {
    // Demand in compute slices: a 7g wanted once weighs as much as seven 1g wanted once, so rare
    // big profiles are not sacrificed to popular small ones.
    const std::int64_t w = weights[q] * spec.profiles[q].compute_slices;
    if (w == 0) continue;
    const SlotMask starts = feasible_starts(spec, occ, static_cast<int>(q), rules);
    SlotMask usable = 0;
    for (SlotMask s = starts; s; s = static_cast<SlotMask>(s & (s - 1)))
      usable = static_cast<SlotMask>(usable | spec.profiles[q].window(std::countr_zero(static_cast<unsigned>(s))));
    const int unusable = starts ? std::popcount(static_cast<unsigned>(free & ~usable)) : nfree;
    f += w * unusable;
  }
  return f;
}

namespace detail {

inline std::string mig_profile_label(const ClusterState& state, const MigRequest& r) {
  for (std::size_t m = 0; m < state.mig().catalog().size(); ++m)
    if (r.profile[m] >= 0)
      return state.mig().catalog().spec(static_cast<MigModelId>(m)).profiles[static_cast<std::size_t>(r.profile[m])].name;
  return "the profile";
}


}  // namespace detail

inline Outcome unplaceable_outcome(const ClusterState& state, const MigRequest& request, MigMode mode) {
  const MigGpuTable& mig = state.mig();
  std::uint64_t no_profile = 0, no_idle = 0, no_room = 0, fits = 0;
  for (MigClassId c : mig.live_classes()) {
    const MigGpuId g = mig.class_first(c);
    const std::size_t n = mig.class_gpus(c).size();
    const int p = request.profile[mig.class_model(c)];
    if (p < 0) {
      no_profile += n;
    } else if (mig.idle_start(g, p) >= 0) {
      fits += n;
    } else if (mode == MigMode::kStatic) {
      no_idle += n;
    } else if (feasible_starts(mig.spec_of(g), mig.occupancy(g), p, mig.rules()) == 0) {
      no_room += n;
    } else {
      fits += n;
    }
  }
  const std::uint64_t parked = mig.gpu_count() - (no_profile + no_idle + no_room + fits);
  bool offered = false;  // by the model of some MIG GPU, parked or not
  for (std::size_t m = 0; m < mig.catalog().size(); ++m)
    offered |= request.profile[m] >= 0 && mig.model_gpu_count(static_cast<MigModelId>(m)) > 0;
  Outcome out;
  out.verdict = offered ? Verdict::kNotNow : Verdict::kInfeasible;
  auto add = [&](ReasonKind kind, std::uint64_t n) {
    if (n) out.reasons.push_back(Reason{kind, Unit::kGpus, -1, -1, n, -1});
  };
  add(ReasonKind::kNoMigPlacement, no_room);
  add(ReasonKind::kNoIdleMigInstance, no_idle);
  add(ReasonKind::kNoMigProfile, no_profile);
  add(ReasonKind::kNodeUnschedulable, parked);
  return out;
}

inline std::string explain(const ClusterState& state, const MigRequest& request, const MigDecision& decision) {
  std::uint64_t failed = 0;
  for (const Reason& r : decision.reasons) failed += r.count;
  const std::uint64_t total = state.mig().gpu_count();
  std::string out = gpusched::detail::concat_text(total - std::min(failed, total), "/", total, " GPUs can take ",
                                    detail::mig_profile_label(state, request));
  std::string sep = ": ";
  for (const Reason& r : decision.reasons) {
    std::string_view what = reason_name(r.kind);
    switch (r.kind) {
      case ReasonKind::kNoMigPlacement: what = "no free placement (slices taken or limits reached)"; break;
      case ReasonKind::kNoIdleMigInstance: what = "no idle instance of the profile"; break;
      case ReasonKind::kNoMigProfile: what = "GPU model without the profile"; break;
      case ReasonKind::kNodeUnschedulable: what = "on nodes that take no work or unhealthy"; break;
      default: break;
    }
    out += gpusched::detail::concat_text(sep, r.count, " ", what);
    sep = ", ";
  }
  return out;
}

inline std::string to_string(const MigDecision& decision) {
  return to_string(Outcome{decision.placed() ? Verdict::kPlaced : decision.verdict, decision.reasons});
}

inline MigTask mig_task(const ClusterState& state, const MigDecision& decision) {
  MigTask task;
  if (!decision.placed() || decision.gpu >= state.mig().gpu_count()) return task;
  const MigGpuTable& mig = state.mig();
  task.request.mig.profile[mig.model_of(decision.gpu)] = static_cast<std::int8_t>(decision.profile);
  task.assignment.node = mig.node_of(decision.gpu);
  task.assignment.gpus = {mig.local_index(decision.gpu)};
  task.assignment.mig_profile = static_cast<std::int8_t>(decision.profile);
  task.assignment.mig_start = static_cast<std::int8_t>(decision.start);
  task.assignment.mig_create = decision.action == MigAction::kCreate;
  return task;
}

inline TaskAssignment mig_instance_assignment(const ClusterState& state, MigGpuId g, int start, bool destroy) {
  TaskAssignment a;
  if (g >= state.mig().gpu_count()) return a;
  a.node = state.mig().node_of(g);
  a.gpus = {state.mig().local_index(g)};
  a.mig_start = static_cast<std::int8_t>(start);
  a.mig_create = destroy;
  for (const MigSlot& s : state.mig().instances(g))
    if (s.start == start) a.mig_profile = static_cast<std::int8_t>(s.profile);
  return a;
}

inline Status apply_decision(ClusterState& state, const MigDecision& decision) {
  if (!decision.placed())
    return gpusched::detail::input_error("decision: nothing to apply (not placed)", "decision", ErrorCode::kState);
  if (decision.gpu >= state.mig().gpu_count())
    return gpusched::detail::input_error(gpusched::detail::concat_text("decision.gpu: MIG id ", decision.gpu, " out of range"), "decision.gpu",
                             ErrorCode::kState);
  const MigTask task = mig_task(state, decision);
  return state.reserve(task.request, task.assignment);
}

namespace detail {
// Sets the verdict of a decision the placers made, with the reasons when nothing was placed.
inline void mig_finish_decision(const ClusterState& state, const MigRequest& request, MigMode mode,
                                MigDecision& decision) {
  if (decision.placed()) {
    decision.verdict = Verdict::kPlaced;
    return;
  }
  Outcome why = unplaceable_outcome(state, request, mode);
  decision.verdict = why.verdict;
  decision.reasons = std::move(why.reasons);
}
}  // namespace detail

inline const FragAwarePlacer::Memo& FragAwarePlacer::memo(const ClusterState& state, MigClassId c, int p) const {
  const Memo& m = memo_[c];
  // The hit (almost every class of almost every decision) stays inline in decide's loop; the
  // evaluation is out of line.
  if (m.key == state.mig().class_key(c) && ((m.done >> p) & 1U)) return m;
  return evaluate_memo(state, c, p);
}

inline const FragAwarePlacer::Memo& FragAwarePlacer::evaluate_memo(const ClusterState& state, MigClassId c, int p) const {
  Memo& m = memo_[c];
  if (m.key != state.mig().class_key(c)) {
    m.key = state.mig().class_key(c);
    m.done = 0;
  }
  m.done = static_cast<std::uint16_t>(m.done | (1U << p));
  const MigGpuId g = state.mig().class_first(c);
  const MigGpuSpec& spec = state.mig().spec_of(g);
  const auto w = demand_.weights(state.mig().class_model(c));
  const LayoutRules rules = state.mig().rules();
  const Occupancy& all = state.mig().occupancy(g);
  const Occupancy& busy = state.mig().busy_occupancy(g);
  // Taking an idle instance: F over the busy instances.
  Move take;
  const std::int64_t f_busy = fragmentation(spec, busy, w, rules);
  for (const MigSlot& s : state.mig().instances(g)) {
    if (s.busy || s.profile != p) continue;
    Occupancy after = busy;
    add_instance(spec, after, p, s.start);
    const std::int64_t delta = fragmentation(spec, after, w, rules) - f_busy;
    const int left = std::popcount(static_cast<unsigned>(all.used & ~after.used));
    if (take.start < 0 || std::tie(delta, left) < std::tie(take.delta, take.left)) {
      take = Move{static_cast<std::int8_t>(s.start), delta, left};
    }
  }
  m.take[static_cast<std::size_t>(p)] = take;
  // Creating: F over all instances.
  Move create;
  const SlotMask starts = feasible_starts(spec, all, p, rules);
  if (starts) {
    const std::int64_t f_all = fragmentation(spec, all, w, rules);
    for (SlotMask s = starts; s; s = static_cast<SlotMask>(s & (s - 1))) {
      const int start = std::countr_zero(static_cast<unsigned>(s));
      Occupancy after = all;
      add_instance(spec, after, p, start);
      const std::int64_t delta = fragmentation(spec, after, w, rules) - f_all;
      const int left = std::popcount(static_cast<unsigned>(spec.all_slots() & ~after.used));
      if (create.start < 0 || std::tie(delta, left) < std::tie(create.delta, create.left))
        create = Move{static_cast<std::int8_t>(start), delta, left};
    }
  }
  m.create[static_cast<std::size_t>(p)] = create;
  return m;
}

inline MigDecision FragAwarePlacer::decide(const ClusterState& state, const MigRequest& request) const {
  MigDecision best;
  if (memo_.size() < state.mig().class_count()) memo_.resize(state.mig().class_count());
  auto consider = [&](bool take) {
    std::int32_t best_left = 0;
    for (MigClassId c : state.mig().live_classes()) {
      const int p = request.profile[state.mig().class_model(c)];
      if (p < 0) continue;
      const Memo& m = memo(state, c, p);
      const Move& mv = take ? m.take[static_cast<std::size_t>(p)] : m.create[static_cast<std::size_t>(p)];
      if (mv.start < 0) continue;
      // The class's GPU (a std::set lookup) is read only when (delta, left) does not already decide.
      if (best.placed() && std::tie(mv.delta, mv.left) > std::tie(best.score, best_left)) continue;
      const MigGpuId g = state.mig().class_first(c);
      if (best.placed() && std::tie(mv.delta, mv.left, g) >= std::tie(best.score, best_left, best.gpu)) continue;
      best.action = take ? MigAction::kUseIdle : MigAction::kCreate;
      best.gpu = g;
      best.profile = p;
      best.start = mv.start;
      best.score = mv.delta;
      best_left = mv.left;
    }
  };
  consider(true);
  if (!best.placed() && mode_ == MigMode::kDynamic) consider(false);
  detail::mig_finish_decision(state, request, mode_, best);
  return best;
}

inline MigDecision FirstFitPlacer::decide(const ClusterState& state, const MigRequest& request) const {
  MigDecision best;
  // Two passes, as the frag-aware placer: an idle instance anywhere first, then a creation.
  for (const bool take : {true, false}) {
    if (!take && mode_ == MigMode::kStatic) break;
    for (MigClassId c : state.mig().live_classes()) {
      const int p = request.profile[state.mig().class_model(c)];
      if (p < 0) continue;
      const MigGpuId g = state.mig().class_first(c);
      if (best.placed() && g >= best.gpu) continue;
      int start = -1;
      if (take) {
        start = state.mig().idle_start(g, p);
      } else {
        const SlotMask starts = feasible_starts(state.mig().spec_of(g), state.mig().occupancy(g), p, state.mig().rules());
        if (starts) start = std::countr_zero(static_cast<unsigned>(starts));
      }
      if (start < 0) continue;
      best.action = take ? MigAction::kUseIdle : MigAction::kCreate;
      best.gpu = g;
      best.profile = p;
      best.start = start;
    }
    if (best.placed()) break;
  }
  detail::mig_finish_decision(state, request, mode_, best);
  return best;
}

}  // namespace gpusched::mig
