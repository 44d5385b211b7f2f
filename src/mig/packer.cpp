#include "gpusched/mig/packer.hpp"

#include <bit>
#include <tuple>

#include <fmt/format.h>

namespace gpusched::mig {

MigDemand MigDemand::uniform(const MigCatalog& catalog) {
  MigDemand d;
  for (std::size_t m = 0; m < catalog.size(); ++m) {
    const MigGpuSpec& spec = catalog.spec(static_cast<MigModelId>(m));
    for (std::size_t p = 0; p < spec.profiles.size(); ++p)
      d.set(static_cast<MigModelId>(m), static_cast<int>(p), spec.profiles[p].media_extensions ? 0 : 1);
  }
  return d;
}

MigDemand MigDemand::from_requests(const MigCatalog& catalog, std::span<const MigRequest> requests,
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

void MigDemand::set(MigModelId model, int profile, std::int64_t weight) {
  if (profile < 0 || profile >= kMaxProfiles) return;
  if (w_.size() <= model) w_.resize(model + 1U, std::array<std::int64_t, kMaxProfiles>{});
  w_[model][static_cast<std::size_t>(profile)] = weight < 0 ? 0 : weight;
}

std::int64_t MigDemand::weight(MigModelId model, int profile) const {
  if (model >= w_.size() || profile < 0 || profile >= kMaxProfiles) return 0;
  return w_[model][static_cast<std::size_t>(profile)];
}

std::span<const std::int64_t> MigDemand::weights(MigModelId model) const {
  static const std::array<std::int64_t, kMaxProfiles> kZero{};
  if (model >= w_.size()) return kZero;
  return w_[model];
}

std::int64_t fragmentation(const MigGpuSpec& spec, const Occupancy& occ, std::span<const std::int64_t> weights,
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

namespace {

std::string profile_label(const MigState& state, const MigRequest& r) {
  for (std::size_t m = 0; m < state.catalog().size(); ++m)
    if (r.profile[m] >= 0)
      return state.catalog().spec(static_cast<MigModelId>(m)).profiles[static_cast<std::size_t>(r.profile[m])].name;
  return "the profile";
}

bool has_idle(const MigState& state, MigGpuId g, int p) {
  for (const MigSlot& s : state.instances(g))
    if (!s.busy && s.profile == p) return true;
  return false;
}

}  // namespace

std::string explain_unplaceable(const MigState& state, const MigRequest& request, MigMode mode) {
  std::size_t no_profile = 0, no_idle = 0, no_room = 0, fits = 0;
  for (MigClassId c : state.live_classes()) {
    const MigGpuId g = state.class_first(c);
    const std::size_t n = state.class_gpus(c).size();
    const int p = request.profile[state.class_model(c)];
    if (p < 0) {
      no_profile += n;
    } else if (has_idle(state, g, p)) {
      fits += n;
    } else if (mode == MigMode::kStatic) {
      no_idle += n;
    } else if (feasible_starts(state.spec_of(g), state.occupancy(g), p, state.rules()) == 0) {
      no_room += n;
    } else {
      fits += n;
    }
  }
  std::string out = fmt::format("{}/{} GPUs can take {}", fits, state.gpu_count(), profile_label(state, request));
  std::string sep = ": ";
  auto part = [&](std::size_t n, std::string_view what) {
    if (!n) return;
    out += fmt::format("{}{} {}", sep, n, what);
    sep = ", ";
  };
  part(no_room, "no free placement (slices taken or limits reached)");
  part(no_idle, "no idle instance of the profile");
  part(no_profile, "GPU model without the profile");
  return out;
}

const FragAwarePlacer::Memo& FragAwarePlacer::memo(const MigState& state, MigClassId c, int p) const {
  if (memo_.size() < state.class_count()) memo_.resize(state.class_count());
  Memo& m = memo_[c];
  if (m.key != state.class_key(c)) {
    m.key = state.class_key(c);
    m.done = 0;
  }
  if ((m.done >> p) & 1U) return m;
  m.done = static_cast<std::uint16_t>(m.done | (1U << p));
  const MigGpuId g = state.class_first(c);
  const MigGpuSpec& spec = state.spec_of(g);
  const auto w = demand_.weights(state.class_model(c));
  const LayoutRules rules = state.rules();
  const Occupancy& all = state.occupancy(g);
  const Occupancy& busy = state.busy_occupancy(g);
  // Taking an idle instance: F over the busy instances.
  Move take;
  const std::int64_t f_busy = fragmentation(spec, busy, w, rules);
  for (const MigSlot& s : state.instances(g)) {
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

MigDecision FragAwarePlacer::decide(const MigState& state, const MigRequest& request) const {
  MigDecision best;
  auto consider = [&](bool take) {
    std::int32_t best_left = 0;
    for (MigClassId c : state.live_classes()) {
      const int p = request.profile[state.class_model(c)];
      if (p < 0) continue;
      const Memo& m = memo(state, c, p);
      const Move& mv = take ? m.take[static_cast<std::size_t>(p)] : m.create[static_cast<std::size_t>(p)];
      if (mv.start < 0) continue;
      const MigGpuId g = state.class_first(c);
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
  if (!best.placed()) best.reason = explain_unplaceable(state, request, mode_);
  return best;
}

MigDecision FirstFitPlacer::decide(const MigState& state, const MigRequest& request) const {
  MigDecision best;
  // Two passes, as the frag-aware placer: an idle instance anywhere first, then a creation.
  for (const bool take : {true, false}) {
    if (!take && mode_ == MigMode::kStatic) break;
    for (MigClassId c : state.live_classes()) {
      const int p = request.profile[state.class_model(c)];
      if (p < 0) continue;
      const MigGpuId g = state.class_first(c);
      if (best.placed() && g >= best.gpu) continue;
      int start = -1;
      if (take) {
        for (const MigSlot& s : state.instances(g))
          if (!s.busy && s.profile == p) {
            start = s.start;
            break;
          }
      } else {
        const SlotMask starts = feasible_starts(state.spec_of(g), state.occupancy(g), p, state.rules());
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
  if (!best.placed()) best.reason = explain_unplaceable(state, request, mode_);
  return best;
}

}  // namespace gpusched::mig
