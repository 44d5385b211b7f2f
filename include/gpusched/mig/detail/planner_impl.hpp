// gpusched/mig/detail/planner_impl.hpp — the definitions behind gpusched/mig/planner.hpp (the re-partition planner and mig-parted output).
//
// Included at the end of planner.hpp, so a consumer compiles the MIG family with its own code and links no
// gpusched library; or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp
// (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/mig/planner.hpp"

namespace gpusched::mig {

GPUSCHED_DECL std::int64_t MigPlan::total_served() const {
  std::int64_t t = 0;
  for (std::size_t i = 0; i < served_idle.size(); ++i) t += served_idle[i] + served_created[i];
  return t;
}

GPUSCHED_DECL std::int64_t MigPlan::total_unserved() const { return std::accumulate(unserved.begin(), unserved.end(), std::int64_t{0}); }

namespace detail {

struct MigFillValue {
  std::int64_t slices = 0, count = 0, destroyed = 0, frag = 0, left = 0;
  // Higher is better: more slices; then fewer, hence bigger, instances (small ones fit into the
  // remainders of other GPUs later, big ones do not: first-fit-decreasing's reason); fewer idle
  // instances destroyed; less fragmentation added; fewer free slices left (keep empty GPUs whole).
  bool better_than(const MigFillValue& o) const {
    return std::make_tuple(slices, -count, -destroyed, -frag, -left) >
           std::make_tuple(o.slices, -o.count, -o.destroyed, -o.frag, -o.left);
  }
};

struct MigFill {
  MigFillValue value;
  std::vector<std::pair<int, int>> created;  // (profile, start)
  std::vector<int> kept_idle;                // starts of idle instances kept
};

// Exhaustive search for the best fill of one GPU.
class MigFillSearch {
 public:
  MigFillSearch(const MigGpuSpec& spec, LayoutRules rules, std::span<const std::int64_t> weights,
             const std::array<std::int64_t, kMaxProfiles>& avail, std::vector<std::pair<int, int>> idle, bool destroy)
      : spec_(spec), rules_(rules), weights_(weights), avail_(avail), idle_(std::move(idle)), destroy_(destroy) {}

  MigFill run(const Occupancy& fixed) {
    // The fragmentation the GPU has now, so that fills compare by how much they add (as the
    // packer's moves do): filling a GPU that is already cut up costs less than cutting a whole one.
    Occupancy now = fixed;
    for (auto [p, s] : idle_) add_instance(spec_, now, p, s);
    base_frag_ = fragmentation(spec_, now, weights_, rules_);
    Occupancy occ = fixed;
    if (!destroy_)
      for (auto [p, s] : idle_) add_instance(spec_, occ, p, s);
    best_ = MigFill{};
    have_ = false;
    cur_.clear();
    rec(occ, 0);
    return best_;
  }

 private:
  void rec(Occupancy& occ, int pos) {
    while (pos < spec_.memory_slots && ((occ.used >> pos) & 1U)) ++pos;
    if (pos >= spec_.memory_slots) {
      leaf(occ);
      return;
    }
    for (std::size_t p = 0; p < spec_.profiles.size(); ++p) {
      if (avail_[p] <= 0 || !can_add(spec_, occ, static_cast<int>(p), pos, rules_)) continue;
      --avail_[p];
      add_instance(spec_, occ, static_cast<int>(p), pos);
      cur_.emplace_back(static_cast<int>(p), pos);
      rec(occ, pos + 1);
      cur_.pop_back();
      remove_instance(spec_, occ, static_cast<int>(p), pos);
      ++avail_[p];
    }
    rec(occ, pos + 1);  // leave the slice free
  }

  void leaf(const Occupancy& occ) {
    MigFill f;
    f.created = cur_;
    Occupancy after = occ;
    if (destroy_) {
      // Keep every idle instance that still fits, in start order.
      for (auto [p, s] : idle_)
        if (can_add(spec_, after, p, s, rules_)) {
          add_instance(spec_, after, p, s);
          f.kept_idle.push_back(s);
        }
      f.value.destroyed = static_cast<std::int64_t>(idle_.size() - f.kept_idle.size());
    } else {
      for (auto [p, s] : idle_) f.kept_idle.push_back(s);
    }
    for (auto [p, s] : cur_) {
      f.value.slices += spec_.profiles[static_cast<std::size_t>(p)].compute_slices;
      ++f.value.count;
    }
    if (f.value.count == 0) return;
    f.value.frag = fragmentation(spec_, after, weights_, rules_) - base_frag_;
    f.value.left = std::popcount(static_cast<unsigned>(spec_.all_slots() & ~after.used));
    if (!have_ || f.value.better_than(best_.value)) {
      best_ = std::move(f);
      have_ = true;
    }
  }

  const MigGpuSpec& spec_;
  LayoutRules rules_;
  std::span<const std::int64_t> weights_;
  std::array<std::int64_t, kMaxProfiles> avail_;
  std::vector<std::pair<int, int>> idle_;
  bool destroy_;
  std::vector<std::pair<int, int>> cur_;
  MigFill best_;
  bool have_ = false;
  std::int64_t base_frag_ = 0;
};

}  // namespace detail

// One function on purpose: three numbered steps (idle instances, GPU groups, greedy fills) over the same
// demand counters.
GPUSCHED_DECL MigPlan plan_repartition(const ClusterState& state, std::span<const MigDemandItem> demand, MigPlanOptions options) {
  const MigCatalog& catalog = state.mig().table().catalog();
  const std::size_t n_items = demand.size();
  MigPlan plan;
  plan.served_idle.assign(n_items, 0);
  plan.served_created.assign(n_items, 0);
  std::vector<std::int64_t> remaining(n_items);
  for (std::size_t i = 0; i < n_items; ++i) remaining[i] = std::max<std::int64_t>(demand[i].count, 0);

  // Items in priority order: most compute slices (on any model) first, then input order.
  auto item_slices = [&](std::size_t i) {
    int best = 0;
    for (std::size_t m = 0; m < catalog.size(); ++m)
      if (demand[i].request.profile[m] >= 0)
        best = std::max<int>(best, catalog.spec(static_cast<MigModelId>(m))
                                       .profiles[static_cast<std::size_t>(demand[i].request.profile[m])]
                                       .compute_slices);
    return best;
  };
  std::vector<std::size_t> order(n_items);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return item_slices(a) > item_slices(b); });

  // 1. Idle instances serve demand without any change.
  std::vector<std::uint8_t> reserved(state.mig().table().gpu_count(), 0);  // bit = start slice reserved
  for (std::size_t i : order) {
    for (MigGpuId g = 0; g < state.mig().table().gpu_count() && remaining[i] > 0; ++g) {
      if (!state.mig().table().available(g)) continue;  // parked: its node takes no work
      const int p = demand[i].request.profile[state.mig().table().model_of(g)];
      if (p < 0) continue;
      for (const MigSlot& s : state.mig().table().instances(g)) {
        if (remaining[i] == 0) break;
        if (s.busy || s.profile != p || ((reserved[g] >> s.start) & 1U)) continue;
        reserved[g] = static_cast<std::uint8_t>(reserved[g] | (1U << s.start));
        --remaining[i];
        ++plan.served_idle[i];
      }
    }
  }

  // 2. Group the GPUs by (model, fixed instances, other idle instances).
  struct Group {
    MigModelId model = 0;
    Occupancy fixed;
    std::vector<std::pair<int, int>> idle;  // destroyable (profile, start)
    std::vector<MigGpuId> gpus;             // ascending; consumed from the front
    std::size_t next = 0;
    // The last search: its demand (capped at what one GPU can hold) and its result. A fill
    // depends on the demand only through that cap, so under heavy demand most rounds reuse it.
    std::array<std::int64_t, kMaxProfiles> searched_for{};
    bool searched = false;
    detail::MigFill fill;
  };
  std::vector<Group> groups;
  std::map<std::tuple<MigModelId, std::uint64_t, std::uint64_t>, std::size_t> group_of;
  for (MigGpuId g = 0; g < state.mig().table().gpu_count(); ++g) {
    if (!state.mig().table().available(g)) continue;
    const MigGpuSpec& spec = state.mig().table().spec_of(g);
    Occupancy fixed;
    std::vector<std::pair<int, int>> idle;
    std::uint64_t fixed_key = 0, idle_key = 0;
    for (const MigSlot& s : state.mig().table().instances(g)) {
      const std::uint64_t nib = static_cast<std::uint64_t>(s.profile + 1U) << (4U * s.start);
      if (s.busy || ((reserved[g] >> s.start) & 1U)) {
        add_instance(spec, fixed, s.profile, s.start);
        fixed_key |= nib;
      } else {
        idle.emplace_back(s.profile, s.start);
        idle_key |= nib;
      }
    }
    auto [it, inserted] = group_of.try_emplace({state.mig().table().model_of(g), fixed_key, idle_key}, groups.size());
    if (inserted) {
      Group grp;
      grp.model = state.mig().table().model_of(g);
      grp.fixed = fixed;
      grp.idle = std::move(idle);
      groups.push_back(std::move(grp));
    }
    groups[it->second].gpus.push_back(g);
  }

  const MigDemand weights_all = [&] {
    std::vector<MigRequest> reqs;
    std::vector<std::int64_t> counts;
    for (std::size_t i = 0; i < n_items; ++i) {
      reqs.push_back(demand[i].request);
      counts.push_back(remaining[i]);
    }
    // The uniform baseline keeps every profile's placeability worth something, plus what is
    // still pending.
    MigDemand d = MigDemand::from_requests(catalog, reqs, counts);
    const MigDemand base = MigDemand::uniform(catalog);
    for (std::size_t m = 0; m < catalog.size(); ++m)
      for (int p = 0; p < kMaxProfiles; ++p)
        d.set(static_cast<MigModelId>(m), p, d.weight(static_cast<MigModelId>(m), p) + base.weight(static_cast<MigModelId>(m), p));
    return d;
  }();

  // 3. Greedy: the best fill per touched GPU first.
  for (;;) {
    // Remaining demand per model and profile.
    std::vector<std::array<std::int64_t, kMaxProfiles>> avail(catalog.size());
    for (std::size_t i = 0; i < n_items; ++i)
      for (std::size_t m = 0; m < catalog.size(); ++m)
        if (remaining[i] > 0 && demand[i].request.profile[m] >= 0)
          avail[m][static_cast<std::size_t>(demand[i].request.profile[m])] += remaining[i];
    std::size_t best_group = groups.size();
    detail::MigFill best_fill;
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      Group& grp = groups[gi];
      if (grp.next >= grp.gpus.size()) continue;
      const MigGpuSpec& spec = catalog.spec(grp.model);
      std::array<std::int64_t, kMaxProfiles> capped{};
      for (std::size_t p = 0; p < spec.profiles.size(); ++p)
        capped[p] = std::min<std::int64_t>(avail[grp.model][p], spec.profiles[p].max_instances);
      if (!grp.searched || capped != grp.searched_for) {
        detail::MigFillSearch search(spec, state.mig().table().rules(), weights_all.weights(grp.model), capped, grp.idle, options.destroy_idle);
        grp.fill = search.run(grp.fixed);
        grp.searched_for = capped;
        grp.searched = true;
      }
      const detail::MigFill& f = grp.fill;
      if (f.value.count == 0) continue;
      if (best_group == groups.size() || f.value.better_than(best_fill.value) ||
          (!best_fill.value.better_than(f.value) && grp.gpus[grp.next] < groups[best_group].gpus[groups[best_group].next])) {
        best_group = gi;
        best_fill = f;
      }
    }
    if (best_group == groups.size()) break;
    Group& grp = groups[best_group];
    const MigGpuSpec& spec = catalog.spec(grp.model);
    // How many GPUs of the group this fill can go to before the demand runs out.
    std::array<std::int64_t, kMaxProfiles> per_gpu{};
    for (auto [p, s] : best_fill.created) ++per_gpu[static_cast<std::size_t>(p)];
    std::int64_t k = static_cast<std::int64_t>(grp.gpus.size() - grp.next);
    for (std::size_t p = 0; p < spec.profiles.size(); ++p)
      if (per_gpu[p] > 0) k = std::min(k, avail[grp.model][p] / per_gpu[p]);
    k = std::max<std::int64_t>(k, 1);
    for (std::int64_t t = 0; t < k; ++t) {
      const MigGpuId g = grp.gpus[grp.next++];
      MigGpuChange ch;
      ch.gpu = g;
      ch.before = state.mig().table().layout(g);
      std::vector<std::pair<int, int>> after;  // (profile, start)
      for (const MigSlot& s : state.mig().table().instances(g))
        if (s.busy || ((reserved[g] >> s.start) & 1U)) after.emplace_back(s.profile, s.start);
      for (auto [p, s] : grp.idle) {
        if (std::find(best_fill.kept_idle.begin(), best_fill.kept_idle.end(), s) != best_fill.kept_idle.end())
          after.emplace_back(p, s);
        else
          ch.destroyed.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(s)});
      }
      for (auto [p, s] : best_fill.created) {
        after.emplace_back(p, s);
        ch.created.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(s)});
        // The first item in priority order that still wants this profile on this model.
        std::size_t served = n_items;
        for (std::size_t i : order)
          if (remaining[i] > 0 && demand[i].request.profile[grp.model] == p) {
            served = i;
            break;
          }
        ch.serves.push_back(served);
        if (served < n_items) {
          --remaining[served];
          ++plan.served_created[served];
        }
      }
      std::sort(after.begin(), after.end(), [](auto& a, auto& b) { return a.second < b.second; });
      for (auto [p, s] : after) ch.after.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(s)});
      plan.changes.push_back(std::move(ch));
    }
  }
  std::sort(plan.changes.begin(), plan.changes.end(), [](auto& a, auto& b) { return a.gpu < b.gpu; });
  plan.unserved = remaining;
  return plan;
}

GPUSCHED_DECL Status apply_plan(ClusterState& state, const MigPlan& plan) {
  for (const MigGpuChange& ch : plan.changes) {
    const MigGpuTable& mig = state.mig().table();
    if (ch.gpu >= mig.gpu_count())
      return gpusched::detail::input_error(gpusched::detail::concat_text("plan: MIG id ", ch.gpu, " out of range"), "changes", ErrorCode::kState);
    // Busy flags carried over by start slice (busy instances never move).
    std::vector<char> busy_at(kMaxSlots, 0);
    for (const MigSlot& s : mig.instances(ch.gpu)) busy_at[s.start] = s.busy ? 1 : 0;
    bool busy[kMaxInstances] = {};
    for (std::size_t i = 0; i < ch.after.size() && i < static_cast<std::size_t>(kMaxInstances); ++i)
      busy[i] = busy_at[ch.after[i].start] != 0;
    const std::size_t n = std::min<std::size_t>(ch.after.size(), kMaxInstances);
    if (auto st = state.apply_mig_layout(mig.node_of(ch.gpu), mig.local_index(ch.gpu), ch.after,
                                         std::span<const bool>(busy, n));
        !st)
      return st;
  }
  return {};
}

GPUSCHED_DECL std::vector<MigPartedNode> mig_parted_plan(const ClusterState& state, const MigPlan& plan) {
  std::vector<MigPartedNode> out;
  std::map<NodeId, std::size_t> node_pos;
  for (const MigGpuChange& ch : plan.changes) {
    const NodeId n = state.mig().table().node_of(ch.gpu);
    auto [it, inserted] = node_pos.try_emplace(n, out.size());
    if (inserted) out.push_back(MigPartedNode{std::string(state.node_name(n)), gpusched::detail::concat_text("gpusched-", state.node_name(n)), {}});
    MigPartedNode& node = out[it->second];
    const MigGpuSpec& spec = state.mig().table().spec_of(ch.gpu);
    std::vector<std::pair<std::string, int>> counts;
    for (const MigProfile& p : spec.profiles) {
      const auto c = std::count_if(ch.after.begin(), ch.after.end(), [&](const MigInstance& x) { return x.profile_id == p.id; });
      if (c > 0) counts.emplace_back(p.name, static_cast<int>(c));
    }
    auto e = std::find_if(node.entries.begin(), node.entries.end(), [&](const MigPartedEntry& x) { return x.mig_devices == counts; });
    if (e == node.entries.end()) {
      node.entries.push_back(MigPartedEntry{{}, counts});
      e = node.entries.end() - 1;
    }
    e->devices.push_back(state.mig().table().local_index(ch.gpu));
  }
  return out;
}

GPUSCHED_DECL std::string to_mig_parted_yaml(const std::vector<MigPartedNode>& nodes) {
  std::string y = "version: v1\nmig-configs:\n";
  for (const MigPartedNode& n : nodes) {
    // Names come from the cluster (node names) and profile tables: quoted, never raw.
    y += gpusched::detail::concat_text("  ", gpusched::detail::yaml_quoted(n.config), ":\n");
    for (const MigPartedEntry& e : n.entries) {
      std::string devices;
      for (std::uint32_t d : e.devices) devices += devices.empty() ? gpusched::detail::concat_text(d) : gpusched::detail::concat_text(", ", d);
      y += gpusched::detail::concat_text("    - devices: [", devices, "]\n      mig-enabled: true\n      mig-devices:\n");
      for (const auto& [name, c] : e.mig_devices) y += gpusched::detail::concat_text("        ", gpusched::detail::yaml_quoted(name), ": ", c, "\n");
    }
  }
  return y;
}

}  // namespace gpusched::mig
