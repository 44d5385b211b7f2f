// The gang solver against an exhaustive search on small seeded random instances.
//
// The oracle shares no code with the solver: it enumerates, task by task, every node and every
// subset of GPUs (whole-GPU tasks) or every single GPU (shared tasks), lets ClusterState::reserve
// judge each step, and checks the gang's constraints on complete placements from the node labels.
// Claims checked on every instance:
//   * never "infeasible" where the oracle finds a placement, never "feasible" where it finds none;
//   * every placement replays through reserve, respects min..max and every constraint;
//   * a failed gang leaves the state exactly as it was (no partial gang), a placed one leaves just
//     its reservations;
//   * one-group gangs get the largest count the oracle can place, up to replicas (elastic);
//   * the same input gives the same placement.
#include <doctest/doctest.h>

#include "gang_test_util.hpp"
#include "test_util.hpp"

using namespace gpusched;
using namespace gpusched::gang_testing;

namespace {

struct Instance {
  Cluster cluster;
  GangSpec spec;
};

Instance random_instance(Rng& rng) {
  Instance in;
  const int n_nodes = static_cast<int>(rng.uniform(1, 4));
  for (int i = 0; i < n_nodes; ++i) {
    NodeSpec n;
    n.name = fmt::format("n{}", i);
    n.cpu = rng.uniform(2, 8) * 2000;
    n.cpu_used = rng.uniform(0, 2) * 1000;
    n.memory = 64 * kGiB;
    const int gpus = static_cast<int>(rng.uniform(0, 4));
    const char* model = rng.chance(80) ? "H100-80GB" : "T4";
    for (int g = 0; g < gpus; ++g) {
      GpuSpec s{rng.chance(10) ? "T4" : model};
      const auto k = rng.uniform(0, 99);
      s.used_milli = k < 60 ? 0 : k < 75 ? 1000 : rng.uniform(1, 3) * 250;
      n.gpus.push_back(s);
    }
    if (rng.chance(85)) n.labels.push_back({"rack", fmt::format("r{}", rng.uniform(0, 1))});
    if (rng.chance(85)) n.labels.push_back({"zone", fmt::format("z{}", rng.uniform(0, 2))});
    n.schedulable = !rng.chance(5);
    in.cluster.nodes().push_back(std::move(n));
  }
  const ClusterState st = build(in.cluster);
  int total_min = 0;
  const int n_groups = static_cast<int>(rng.uniform(1, 3));
  for (int g = 0; g < n_groups; ++g) {
    GangGroup group;
    group.name = fmt::format("g{}", g);
    group.replicas = static_cast<std::int32_t>(rng.uniform(1, 3));
    group.min_replicas = rng.chance(70) ? group.replicas : static_cast<std::int32_t>(rng.uniform(0, group.replicas));
    if (total_min + group.min_replicas > 5) group.min_replicas = group.replicas = std::max(0, 5 - total_min);
    total_min += group.min_replicas;
    TaskShape shape;
    shape.cpu = rng.uniform(0, 4) * 1000;
    const auto kind = rng.uniform(0, 3);
    if (kind <= 1) {
      shape.gpus = static_cast<GpuCount>(rng.uniform(1, 2));
      shape.gpu_milli = kMilliPerGpu;
    } else if (kind == 2) {
      shape.gpus = 1;
      shape.gpu_milli = rng.uniform(1, 2) * 250;
    }
    std::vector<std::string_view> models;
    if (shape.gpus > 0 && rng.chance(20)) models.push_back("T4");
    group.request = st.compile(shape, models).value();
    in.spec.groups.push_back(std::move(group));
  }
  static const std::string kName = "r";
  in.spec.name = kName;
  const auto topo = rng.uniform(0, 9);
  if (topo >= 5) in.spec.topology = {topo >= 8 ? "node" : "rack", topo == 7 ? LevelMode::kPreferred : LevelMode::kRequired};
  if (rng.chance(25)) {
    SpreadConstraint s;
    s.level = "zone";
    if (rng.chance(50)) s.groups.push_back(0);
    s.max_per_domain = static_cast<std::int32_t>(rng.uniform(0, 2));
    s.min_domains = static_cast<std::int32_t>(rng.uniform(0, 2));
    std::int32_t covered = 0;
    for (std::uint32_t g = 0; g < in.spec.groups.size(); ++g)
      if (s.groups.empty() || g == 0) covered += in.spec.groups[g].min_replicas;
    if (s.min_domains > covered) s.min_domains = 0;
    in.spec.spread.push_back(s);
  }
  if (rng.chance(30)) {
    AntiAffinity a;
    a.group_a = 0;
    a.group_b = n_groups > 1 && rng.chance(70) ? 1 : 0;
    a.level = rng.chance(70) ? "node" : "rack";
    in.spec.anti_affinity.push_back(a);
  }
  return in;
}

// The instance in words, for failure messages.
std::string dump(const Instance& in) {
  std::string out;
  for (const auto& n : in.cluster.nodes()) {
    out += fmt::format("{}{}: cpu {}/{} gpus [", n.name, n.schedulable ? "" : " (cordoned)", n.cpu - n.cpu_used, n.cpu);
    for (const auto& g : n.gpus) out += fmt::format("{}:{} ", g.model, 1000 - g.used_milli);
    out += "] ";
    for (const auto& [k, v] : n.labels) out += fmt::format("{}={} ", k, v);
    out += "\n";
  }
  for (const auto& g : in.spec.groups)
    out += fmt::format("group {}: {}..{} x cpu {} gpus {} milli {} models {:x}\n", g.name, g.min_replicas, g.replicas,
                       g.request.shape.cpu, g.request.shape.gpus, g.request.shape.gpu_milli, g.request.models);
  if (!in.spec.topology.level.empty())
    out += fmt::format("topology {} {}\n", in.spec.topology.level,
                       in.spec.topology.mode == LevelMode::kRequired ? "required" : "preferred");
  for (const auto& sp : in.spec.spread)
    out += fmt::format("spread {} groups {} max {} min_domains {}\n", sp.level, sp.groups.size(), sp.max_per_domain,
                       sp.min_domains);
  for (const auto& a : in.spec.anti_affinity) out += fmt::format("anti {} {} {}\n", a.group_a, a.group_b, a.level);
  return out;
}

// Every way one task can sit on one node.
std::vector<TaskAssignment> all_options(const ClusterState& st, const TaskRequest& r) {
  std::vector<TaskAssignment> out;
  for (NodeId n = 0; n < st.node_count(); ++n) {
    TaskAssignment base = make_assignment(n, r);
    const auto gpus = static_cast<int>(st.gpu_count(n));
    if (!r.shape.needs_gpu()) {
      out.push_back(base);
    } else if (r.shape.shares_gpu()) {
      for (int g = 0; g < gpus; ++g) {
        TaskAssignment a = base;
        a.gpus = {static_cast<GpuIndex>(g)};
        out.push_back(a);
      }
    } else {
      for (int mask = 0; mask < (1 << gpus); ++mask) {
        if (__builtin_popcount(static_cast<unsigned>(mask)) != r.shape.gpus) continue;
        TaskAssignment a = base;
        for (int g = 0; g < gpus; ++g)
          if (mask & (1 << g)) a.gpus.push_back(static_cast<GpuIndex>(g));
        out.push_back(a);
      }
    }
  }
  return out;
}

// Can `counts[g]` tasks of each group be placed together with every constraint held?
bool oracle(const Cluster& c, const GangSpec& spec, const std::vector<std::int32_t>& counts) {
  ClusterState st = build(c);
  std::vector<std::uint32_t> tasks;
  for (std::uint32_t g = 0; g < spec.groups.size(); ++g)
    for (int i = 0; i < counts[g]; ++i) tasks.push_back(g);
  std::vector<std::vector<TaskAssignment>> options;
  for (const auto& g : spec.groups) options.push_back(all_options(st, g.request));
  std::vector<std::pair<std::uint32_t, NodeId>> placed;
  std::vector<std::size_t> chosen;
  auto rec = [&](auto&& self, std::size_t t) -> bool {
    if (t == tasks.size()) return constraint_violation(c, spec, placed).empty();
    const std::uint32_t g = tasks[t];
    // Identical tasks in non-decreasing option order (any placement can be so ordered).
    const std::size_t from = (t > 0 && tasks[t - 1] == g) ? chosen.back() : 0;
    for (std::size_t o = from; o < options[g].size(); ++o) {
      const auto mark = st.checkpoint();
      if (!st.reserve(spec.groups[g].request, options[g][o]).ok()) continue;
      placed.emplace_back(g, options[g][o].node);
      chosen.push_back(o);
      const bool found = self(self, t + 1);
      placed.pop_back();
      chosen.pop_back();
      st.rollback(mark);
      if (found) return true;
    }
    return false;
  };
  return rec(rec, 0);
}

std::vector<std::int32_t> mins(const GangSpec& spec) {
  std::vector<std::int32_t> out;
  for (const auto& g : spec.groups) out.push_back(g.min_replicas);
  return out;
}

}  // namespace

TEST_CASE("gang solver agrees with exhaustive search on 4,000 random small instances") {
  Rng rng(20240607);  // fixed seed: failures reproduce
  const int sample = testing::trials(4000);
  int feasible = 0, infeasible = 0, by_search = 0, by_bounds = 0;
  for (int i = 0; i < sample; ++i) {
    const Instance in = random_instance(rng);
    CAPTURE(i);
    ClusterState st = build(in.cluster);
    const ClusterState before = build(in.cluster);
    const GangResult r = place_gang(st, in.spec);
    const bool truth = oracle(in.cluster, in.spec, mins(in.spec));
    CAPTURE(r.explanation);
    CAPTURE(truth);
    const std::string text = dump(in);
    CAPTURE(text);
    REQUIRE(r.verdict != Verdict::kInvalid);
    REQUIRE(!r.undecided());
    CHECK((r.verdict == Verdict::kPlaced) == truth);
    if (r.verdict == Verdict::kPlaced) {
      ++feasible;
      CHECK(placement_error(in.cluster, in.spec, r, st) == "");
      // Elastic, one group: the most the oracle can place, up to replicas.
      if (in.spec.groups.size() == 1 && in.spec.topology.mode == LevelMode::kRequired) {
        std::int32_t most = in.spec.groups[0].min_replicas;
        while (most < in.spec.groups[0].replicas && oracle(in.cluster, in.spec, {most + 1})) ++most;
        CHECK(r.placed_per_group[0] == most);
      }
      // Deterministic.
      ClusterState again = build(in.cluster);
      const GangResult r2 = place_gang(again, in.spec);
      CHECK(again.same_allocation_as(st));
      REQUIRE(r2.tasks.size() == r.tasks.size());
      for (std::size_t t = 0; t < r.tasks.size(); ++t) {
        CHECK(r2.tasks[t].assignment.node == r.tasks[t].assignment.node);
        CHECK(r2.tasks[t].assignment.gpus == r.tasks[t].assignment.gpus);
      }
    } else {
      ++infeasible;
      CHECK(st.same_allocation_as(before));
      CHECK(st.journal_size() == 0);
      CHECK(r.tasks.empty());
    }
    by_search += r.method == GangMethod::kSearch;
    by_bounds += r.method == GangMethod::kAggregateBound || r.method == GangMethod::kCountBound;
  }
  MESSAGE(fmt::format("{} feasible, {} infeasible; {} decided by bounds, {} by exact search", feasible, infeasible,
                      by_bounds, by_search));
  // The sample exercises both answers and every path (300, 300 and 10 of the full 4,000).
  CHECK(feasible > sample * 3 / 40);
  CHECK(infeasible > sample * 3 / 40);
  CHECK(by_search > sample / 400);
}

TEST_CASE("queues of random gangs: each gang whole or absent, the state is the sum of the placed ones") {
  Rng rng(77);
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    Instance base = random_instance(rng);
    std::vector<GangSpec> queue;
    const ClusterState st0 = build(base.cluster);
    for (int k = 0; k < 3; ++k) {
      Instance other = random_instance(rng);
      // Recompile the other gang's groups against this cluster's state (same registry).
      GangSpec spec = other.spec;
      for (auto& g : spec.groups) g.request = st0.compile(g.request.shape).value();
      spec.name = fmt::format("q{}", k);
      queue.push_back(std::move(spec));
    }
    ClusterState st = build(base.cluster);
    const QueueResult out = place_gangs(st, queue);
    ClusterState replay = build(base.cluster);
    std::size_t placed = 0;
    for (std::size_t k = 0; k < queue.size(); ++k) {
      const GangResult& r = out.results[k];
      REQUIRE(!r.undecided());
      if (r.verdict != Verdict::kPlaced) {
        CHECK(r.tasks.empty());
        CHECK(!r.explanation.empty());
        continue;
      }
      ++placed;
      for (const auto& t : r.tasks) CHECK(replay.reserve(queue[k].groups[t.group].request, t.assignment).ok());
    }
    CHECK(placed == out.placed);
    CHECK(replay.same_allocation_as(st));
  }
}
