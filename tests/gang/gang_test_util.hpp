// Helpers of the gang tests: small clusters and gangs built in code, a seeded generator, and an
// independent checker of gang placements (it replays the tasks through ClusterState::reserve and
// re-checks every constraint from the node labels, sharing no code with the solver).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/gang/gang.hpp"

namespace gpusched::gang_testing {

inline const std::string kRack = "topology.kubernetes.io/rack";

// gpusched::SplitMix64's sequence with a reduction of its own (uniform), kept so the oracle's
// instances stay as they were.
struct Rng {
  SplitMix64 gen;
  explicit Rng(std::uint64_t seed) : gen(seed) {}
  std::uint64_t next() { return gen.next(); }
  // In [lo, hi]: multiply-shift reduction of the high 32 bits (ours, platform independent).
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo + 1);
    return lo + static_cast<std::int64_t>(((next() >> 32) * span) >> 32);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }
};

inline NodeSpec gpu_node(std::string name, int gpus, std::string model = "H100-80GB",
                         std::vector<std::pair<std::string, std::string>> labels = {}, int idle = -1,
                         MilliCpu cpu = 96000) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu = cpu;
  n.memory = 1024 * kGiB;
  for (int g = 0; g < gpus; ++g) {
    GpuSpec s{model};
    if (idle >= 0 && g >= idle) s.used_milli = kMilliPerGpu;
    n.gpus.push_back(s);
  }
  n.labels = std::move(labels);
  return n;
}

inline ClusterState build(const Cluster& c) { return ClusterState::build(c, GpuModelRegistry::builtin()).value(); }

inline TaskRequest whole(const ClusterState& s, int gpus, MilliCpu cpu = 1000) {
  TaskShape shape;
  shape.cpu = cpu;
  shape.gpus = gpus;
  shape.gpu_milli = kMilliPerGpu;
  return s.compile(shape).value();
}

inline TaskRequest cpu_only(const ClusterState& s, MilliCpu cpu) {
  TaskShape shape;
  shape.cpu = cpu;
  return s.compile(shape).value();
}

inline GangGroup group(std::string name, int replicas, TaskRequest r, int min = -1) {
  return GangGroup{std::move(name), replicas, min < 0 ? replicas : min, std::move(r)};
}

// One group "worker" of `tasks` tasks of `gpus` whole GPUs (min = all), gang named "g".
inline GangSpec one_group_of(const ClusterState& s, int tasks, int gpus) {
  GangSpec spec;
  spec.name = "g";
  spec.groups.push_back(group("worker", tasks, whole(s, gpus)));
  return spec;
}

// The nodes the tasks of group g landed on.
inline std::set<NodeId> nodes_of(const GangResult& r, std::uint32_t g) {
  std::set<NodeId> out;
  for (const auto& t : r.tasks)
    if (t.group == g) out.insert(t.assignment.node);
  return out;
}

// The value of a label (or of the node level) on a node, "" when absent.
inline std::string domain_of(const Cluster& c, NodeId n, const std::string& level, bool own_when_missing) {
  if (level == "node") return c.nodes()[n].name;
  for (const auto& [k, v] : c.nodes()[n].labels)
    if (k == level) return v;
  return own_when_missing ? fmt::format("\x01{}", c.nodes()[n].name) : std::string();
}

// Checks the constraints of `spec` on tasks given as (group, node). Levels must be full label keys
// (or "node"). Preferred topology is not checked (it is a preference).
inline std::string constraint_violation(const Cluster& c, const GangSpec& spec,
                                        const std::vector<std::pair<std::uint32_t, NodeId>>& tasks) {
  if (!spec.topology.level.empty() && spec.topology.mode == LevelMode::kRequired) {
    std::set<std::string> doms;
    for (auto [g, n] : tasks) {
      const std::string d = domain_of(c, n, spec.topology.level, false);
      if (d.empty()) return "topology: a task on an unlabelled node";
      doms.insert(d);
    }
    if (doms.size() > 1) return fmt::format("topology: {} domains", doms.size());
  }
  for (const auto& s : spec.spread) {
    std::map<std::string, int> count;
    for (auto [g, n] : tasks) {
      if (!s.groups.empty() && std::find(s.groups.begin(), s.groups.end(), g) == s.groups.end()) continue;
      const std::string d = domain_of(c, n, s.level, false);
      if (d.empty()) return "spread: a task on an unlabelled node";
      ++count[d];
    }
    for (const auto& [d, k] : count)
      if (s.max_per_domain > 0 && k > s.max_per_domain) return fmt::format("spread: {} tasks in {}", k, d);
    if (static_cast<int>(count.size()) < s.min_domains) return fmt::format("spread: {} domains", count.size());
  }
  for (const auto& a : spec.anti_affinity) {
    for (std::size_t i = 0; i < tasks.size(); ++i)
      for (std::size_t j = 0; j < tasks.size(); ++j) {
        if (i == j) continue;
        if (!(tasks[i].first == a.group_a && tasks[j].first == a.group_b)) continue;
        if (domain_of(c, tasks[i].second, a.level, true) == domain_of(c, tasks[j].second, a.level, true))
          return fmt::format("anti-affinity: groups {} and {} share a domain", a.group_a, a.group_b);
      }
  }
  return {};
}

// Replays a result on a fresh state; "" when the placement is valid (every reservation accepted,
// counts within min..max, replicas numbered 0..k-1, constraints held, and `after` equals the replay).
inline std::string placement_error(const Cluster& c, const GangSpec& spec, const GangResult& r,
                                   const ClusterState& after) {
  ClusterState replay = build(c);
  std::vector<std::int32_t> count(spec.groups.size(), 0);
  std::vector<std::pair<std::uint32_t, NodeId>> tasks;
  for (const auto& t : r.tasks) {
    if (t.group >= spec.groups.size()) return "bad group index";
    if (t.replica != static_cast<std::uint32_t>(count[t.group])) return "replicas not numbered in order";
    ++count[t.group];
    if (auto st = replay.reserve(spec.groups[t.group].request, t.assignment); !st)
      return "reserve refused: " + st.error().message;
    tasks.emplace_back(t.group, t.assignment.node);
  }
  for (std::size_t g = 0; g < spec.groups.size(); ++g) {
    if (count[g] < spec.groups[g].min_replicas || count[g] > spec.groups[g].replicas)
      return fmt::format("group {}: {} tasks outside {}..{}", g, count[g], spec.groups[g].min_replicas,
                         spec.groups[g].replicas);
    if (count[g] != r.placed_per_group[g]) return "placed counts disagree with tasks";
  }
  if (!replay.same_allocation_as(after)) return "state differs from the replayed placement";
  return constraint_violation(c, spec, tasks);
}

}  // namespace gpusched::gang_testing
