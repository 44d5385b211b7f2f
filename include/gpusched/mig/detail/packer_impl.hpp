// gpusched/mig/detail/packer_impl.hpp — the definitions behind gpusched/mig/packer.hpp (the placers, demand weights, explanations).
//
// Included at the end of packer.hpp, so a consumer compiles the MIG family with its own code and links no
// gpusched library; or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp
// (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/mig/packer.hpp"

#include <utility>

namespace gpusched::mig {

GPUSCHED_CTOR_DECL FragAwarePlacer::FragAwarePlacer(MigMode mode, MigDemand demand) : mode_(mode), demand_(std::move(demand)) {}
GPUSCHED_CTOR_DECL FirstFitPlacer::FirstFitPlacer(MigMode mode) : mode_(mode) {}
GPUSCHED_CTOR_DECL FragAwareMigPicker::FragAwareMigPicker(MigDemand demand) : demand_(std::move(demand)) {}

GPUSCHED_DECL MigDemand MigDemand::uniform(const MigCatalog& catalog) {
  MigDemand d;
  for (std::size_t m = 0; m < catalog.size(); ++m) {
    const MigGpuSpec& spec = catalog.spec(static_cast<MigModelId>(m));
    for (std::size_t p = 0; p < spec.profiles.size(); ++p)
      d.set(static_cast<MigModelId>(m), static_cast<int>(p), spec.profiles[p].media_extensions ? 0 : 1);
  }
  return d;
}

GPUSCHED_DECL MigDemand MigDemand::from_requests(const MigCatalog& catalog, std::span<const MigRequest> requests,
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

GPUSCHED_DECL void MigDemand::set(MigModelId model, int profile, std::int64_t weight) {
  if (profile < 0 || profile >= kMaxProfiles) return;
  if (w_.size() <= model) w_.resize(model + 1U, std::array<std::int64_t, kMaxProfiles>{});
  w_[model][static_cast<std::size_t>(profile)] = weight < 0 ? 0 : weight;
}

GPUSCHED_DECL std::int64_t MigDemand::weight(MigModelId model, int profile) const {
  if (model >= w_.size() || profile < 0 || profile >= kMaxProfiles) return 0;
  return w_[model][static_cast<std::size_t>(profile)];
}

GPUSCHED_DECL std::span<const std::int64_t> MigDemand::weights(MigModelId model) const {
  static const std::array<std::int64_t, kMaxProfiles> kZero{};  // function-local: one per program
  if (model >= w_.size()) return kZero;
  return w_[model];
}

GPUSCHED_DECL std::int64_t fragmentation(const MigGpuSpec& spec, const Occupancy& occ, std::span<const std::int64_t> weights,
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

GPUSCHED_DECL std::string mig_profile_label(const ClusterState& state, const MigRequest& r) {
  for (std::size_t m = 0; m < state.mig().table().catalog().size(); ++m)
    if (r.profile[m] >= 0)
      return state.mig().table().catalog().spec(static_cast<MigModelId>(m)).profiles[static_cast<std::size_t>(r.profile[m])].name;
  return "the profile";
}


}  // namespace detail

GPUSCHED_DECL Outcome unplaceable_outcome(const ClusterState& state, const MigRequest& request, MigMode mode) {
  const MigGpuTable& mig = state.mig().table();
  std::uint64_t no_profile = 0, no_idle = 0, no_room = 0, fits = 0;
  for (MigClassId c : mig.live_classes()) {
    const MigGpuId g = mig.class_first(c);
    const std::size_t n = mig.class_gpus(c).size();
    const int p = request.profile[mig.class_model(c)];
    if (p < 0) {
      no_profile += n;
    } else if (mig.idle_start(g, p) >= 0) {
      fits += n;
    } else if (mode == MigMode::kStatic || mig.layout_fixed(g)) {
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

GPUSCHED_DECL std::string explain(const ClusterState& state, const MigRequest& request, const MigDecision& decision) {
  std::uint64_t failed = 0;
  for (const Reason& r : decision.reasons) failed += r.count;
  const std::uint64_t total = state.mig().table().gpu_count();
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

GPUSCHED_DECL std::string to_string(const MigDecision& decision) {
  return to_string(Outcome{decision.placed() ? Verdict::kPlaced : decision.verdict, decision.reasons});
}

GPUSCHED_DECL MigTask mig_task(const ClusterState& state, const MigDecision& decision) {
  MigTask task;
  if (!decision.placed() || decision.gpu >= state.mig().table().gpu_count()) return task;
  const MigGpuTable& mig = state.mig().table();
  task.request.mig.profile[mig.model_of(decision.gpu)] = static_cast<std::int8_t>(decision.profile);
  task.assignment.node = mig.node_of(decision.gpu);
  task.assignment.gpus = {mig.local_index(decision.gpu)};
  task.assignment.mig_profile = static_cast<std::int8_t>(decision.profile);
  task.assignment.mig_start = static_cast<std::int8_t>(decision.start);
  task.assignment.mig_create = decision.action == MigAction::kCreate;
  return task;
}

GPUSCHED_DECL TaskAssignment mig_instance_assignment(const ClusterState& state, MigGpuId g, int start, bool destroy) {
  TaskAssignment a;
  if (g >= state.mig().table().gpu_count()) return a;
  a.node = state.mig().table().node_of(g);
  a.gpus = {state.mig().table().local_index(g)};
  a.mig_start = static_cast<std::int8_t>(start);
  a.mig_create = destroy;
  for (const MigSlot& s : state.mig().table().instances(g))
    if (s.start == start) a.mig_profile = static_cast<std::int8_t>(s.profile);
  return a;
}

GPUSCHED_DECL Status apply_decision(ClusterState& state, const MigDecision& decision) {
  if (!decision.placed())
    return gpusched::detail::input_error("decision: nothing to apply (not placed)", "decision", ErrorCode::kState);
  if (decision.gpu >= state.mig().table().gpu_count())
    return gpusched::detail::input_error(gpusched::detail::concat_text("decision.gpu: MIG id ", decision.gpu, " out of range"), "decision.gpu",
                             ErrorCode::kState);
  const MigTask task = mig_task(state, decision);
  return state.reserve(task.request, task.assignment);
}

namespace detail {
// Sets the verdict of a decision the placers made, with the reasons when nothing was placed.
GPUSCHED_DECL void mig_finish_decision(const ClusterState& state, const MigRequest& request, MigMode mode,
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

GPUSCHED_DECL const FragAwarePlacer::Memo& FragAwarePlacer::memo(const ClusterState& state, MigClassId c, int p) const {
  const Memo& m = memo_[c];
  // The hit (almost every class of almost every decision) stays inline in decide's loop; the
  // evaluation (cold) is out of line.
  if (m.key == state.mig().table().class_key(c) && ((m.done >> p) & 1U)) return m;
  return evaluate_memo(state, c, p);
}

GPUSCHED_DECL detail::MigMove detail::frag_aware_take(const MigGpuTable& mig, MigGpuId g, int p,
                                                     std::span<const std::int64_t> w) {
  const MigGpuSpec& spec = mig.spec_of(g);
  const LayoutRules rules = mig.rules();
  const Occupancy& all = mig.occupancy(g);
  const Occupancy& busy = mig.busy_occupancy(g);
  MigMove take;
  const std::int64_t f_busy = fragmentation(spec, busy, w, rules);
  for (const MigSlot& s : mig.instances(g)) {
    if (s.busy || s.profile != p) continue;
    Occupancy after = busy;
    add_instance(spec, after, p, s.start);
    const std::int64_t delta = fragmentation(spec, after, w, rules) - f_busy;
    const int left = std::popcount(static_cast<unsigned>(all.used & ~after.used));
    if (take.start < 0 || std::tie(delta, left) < std::tie(take.delta, take.left))
      take = MigMove{static_cast<std::int8_t>(s.start), delta, left};
  }
  return take;
}

GPUSCHED_DECL detail::MigMove detail::frag_aware_create(const MigGpuTable& mig, MigGpuId g, int p,
                                                       std::span<const std::int64_t> w) {
  MigMove create;
  // A fixed layout's instances are the MIG manager's to create (GpuInfo::mig_layout_fixed).
  if (mig.layout_fixed(g)) return create;
  const MigGpuSpec& spec = mig.spec_of(g);
  const LayoutRules rules = mig.rules();
  const Occupancy& all = mig.occupancy(g);
  const SlotMask starts = feasible_starts(spec, all, p, rules);
  if (!starts) return create;
  const std::int64_t f_all = fragmentation(spec, all, w, rules);
  for (SlotMask s = starts; s; s = static_cast<SlotMask>(s & (s - 1))) {
    const int start = std::countr_zero(static_cast<unsigned>(s));
    Occupancy after = all;
    add_instance(spec, after, p, start);
    const std::int64_t delta = fragmentation(spec, after, w, rules) - f_all;
    const int left = std::popcount(static_cast<unsigned>(spec.all_slots() & ~after.used));
    if (create.start < 0 || std::tie(delta, left) < std::tie(create.delta, create.left))
      create = MigMove{static_cast<std::int8_t>(start), delta, left};
  }
  return create;
}

GPUSCHED_DECL const FragAwarePlacer::Memo& FragAwarePlacer::evaluate_memo(const ClusterState& state, MigClassId c, int p) const {
  Memo& m = memo_[c];
  if (m.key != state.mig().table().class_key(c)) {
    m.key = state.mig().table().class_key(c);
    m.done = 0;
  }
  m.done = static_cast<std::uint16_t>(m.done | (1U << p));
  const MigGpuId g = state.mig().table().class_first(c);
  const auto w = demand_.weights(state.mig().table().class_model(c));
  m.take[static_cast<std::size_t>(p)] = detail::frag_aware_take(state.mig().table(), g, p, w);
  m.create[static_cast<std::size_t>(p)] = detail::frag_aware_create(state.mig().table(), g, p, w);
  return m;
}

GPUSCHED_DECL bool FragAwareMigPicker::pick(const ClusterState& state, NodeId node, const TaskRequest& request,
                                           TaskAssignment& out) const {
  out = make_assignment(node, request);
  if (!request.mig.any() || node >= state.node_count()) return false;
  const MigGpuTable& mig = state.mig().table();
  // Take before create, as the placer: an idle instance anywhere on the node needs no re-partition.
  for (const bool take : {true, false}) {
    GpuIndex best_gpu = 0;
    detail::MigMove best;
    for (GpuIndex gi = 0; gi < state.gpu_count(node); ++gi) {
      const MigGpuId id = state.mig().gpu(node, gi);
      if (id == kNoGpu || !mig.available(id) || !(request.models & model_bit(state.gpu_model(node, gi)))) continue;
      const int p = request.mig.profile[mig.model_of(id)];
      if (p < 0) continue;
      const auto w = demand_.weights(mig.model_of(id));
      const detail::MigMove mv = take ? detail::frag_aware_take(mig, id, p, w) : detail::frag_aware_create(mig, id, p, w);
      if (mv.start < 0) continue;
      if (best.start < 0 || std::tie(mv.delta, mv.left) < std::tie(best.delta, best.left)) {
        best = mv;
        best_gpu = gi;
      }
    }
    if (best.start < 0) continue;
    const MigGpuId id = state.mig().gpu(node, best_gpu);
    out.gpus = {best_gpu};
    out.mig_profile = static_cast<std::int8_t>(request.mig.profile[mig.model_of(id)]);
    out.mig_start = best.start;
    out.mig_create = !take;
    return true;
  }
  return false;
}

GPUSCHED_DECL MigDecision FragAwarePlacer::decide(const ClusterState& state, const MigRequest& request) const {
  MigDecision best;
  if (memo_.size() < state.mig().table().class_count()) memo_.resize(state.mig().table().class_count());
  auto consider = [&](bool take) {
    std::int32_t best_left = 0;
    for (MigClassId c : state.mig().table().live_classes()) {
      const int p = request.profile[state.mig().table().class_model(c)];
      if (p < 0) continue;
      const Memo& m = memo(state, c, p);
      const Move& mv = take ? m.take[static_cast<std::size_t>(p)] : m.create[static_cast<std::size_t>(p)];
      if (mv.start < 0) continue;
      // The class's GPU (a std::set lookup) is read only when (delta, left) does not already decide.
      if (best.placed() && std::tie(mv.delta, mv.left) > std::tie(best.score, best_left)) continue;
      const MigGpuId g = state.mig().table().class_first(c);
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

GPUSCHED_DECL MigDecision FirstFitPlacer::decide(const ClusterState& state, const MigRequest& request) const {
  MigDecision best;
  // Two passes, as the frag-aware placer: an idle instance anywhere first, then a creation.
  for (const bool take : {true, false}) {
    if (!take && mode_ == MigMode::kStatic) break;
    for (MigClassId c : state.mig().table().live_classes()) {
      const int p = request.profile[state.mig().table().class_model(c)];
      if (p < 0) continue;
      const MigGpuId g = state.mig().table().class_first(c);
      if (best.placed() && g >= best.gpu) continue;
      int start = -1;
      if (take) {
        start = state.mig().table().idle_start(g, p);
      } else if (!state.mig().table().layout_fixed(g)) {
        const SlotMask starts = feasible_starts(state.mig().table().spec_of(g), state.mig().table().occupancy(g), p, state.mig().table().rules());
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
