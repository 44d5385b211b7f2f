// The admission planner against a deliberately simple reference implementation of the same rules
// (docs/fairness.md, "Admission order"), on seeded random instances: hierarchical queues with weights,
// cohorts with borrowing and lending limits, flavors, StrictFIFO, aging, partial admission and jobs
// naming unknown or internal queues. The planner is incremental and tuned (indexed heaps, compact
// sort keys, one H-DRF propagation per admission); the reference recomputes every H-DRF share from
// scratch before each pick, sorts with std::stable_sort and searches partial admission linearly. Both
// must produce the same admitted jobs in the same order (with flavor, borrowing, priority and replicas)
// and the same pending jobs with the same kinds, in the same order.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/quota.hpp"

using namespace gpusched::fairness;
using gpusched::CompiledGroup;
using gpusched::CompiledJob;
using gpusched::GpuModelMask;
using gpusched::fairness::testing::SplitMix;

namespace {

struct RefAdmitted {
  std::size_t job, queue;
  int gpu_dim;
  bool borrowed;
  std::int64_t priority;
  bool partial;
  std::vector<std::int32_t> replicas;
  bool operator==(const RefAdmitted&) const = default;
};
struct RefPending {
  std::size_t job, queue;
  PendingKind kind;
  std::int64_t priority;
  std::size_t behind;
  bool operator==(const RefPending&) const = default;
};
struct RefPlan {
  std::vector<RefAdmitted> admitted;
  std::vector<RefPending> pending;
};

// H-DRF keys of every node computed from scratch (hdrf.hpp's definition): a leaf's share is its
// allocation's weighted dominant share; an internal node's consumption is the sum over non-blocked
// children of V_c / s_c (s_c > 0), times M = the smallest non-blocked child share, plus the other
// children's V_c as they are; its share ignores saturated resources. Children are summed in id order.
struct RefTree {
  std::vector<std::int64_t> parent;  // node ids; 0 = root
  std::vector<double> weight;
  std::vector<std::vector<std::size_t>> children;
  std::vector<std::vector<double>> alloc;  // leaves
  std::vector<char> leaf_blocked;
  std::vector<std::uint8_t> leaf_tier;

  struct Keys {
    std::vector<double> share;
    std::vector<std::uint8_t> tier;
    std::vector<char> blocked;
  };

  Keys compute(const Amounts& cap, const std::vector<char>& saturated) const {
    const std::size_t n = parent.size();
    const auto m = static_cast<std::size_t>(cap.size());
    Keys k{std::vector<double>(n, 0.0), std::vector<std::uint8_t>(n, 0), std::vector<char>(n, 0)};
    std::vector<std::vector<double>> v(n, std::vector<double>(m, 0.0));
    auto share_of = [&](const std::vector<double>& x, double w, bool skip) {
      double best = 0.0;
      for (std::size_t r = 0; r < m; ++r) {
        if (cap[static_cast<Eigen::Index>(r)] <= 0 || (skip && saturated[r])) continue;
        best = std::max(best, x[r] / static_cast<double>(cap[static_cast<Eigen::Index>(r)]));
      }
      return best / w;
    };
    for (std::size_t id = n; id-- > 0;) {
      if (children[id].empty()) {
        v[id] = alloc[id];
        k.share[id] = share_of(v[id], weight[id], false);
        k.blocked[id] = leaf_blocked[id];
        k.tier[id] = leaf_tier[id];
        continue;
      }
      std::vector<double> scaled(m, 0.0), rest(m, 0.0);
      bool any = false;
      double M = 0;
      std::uint8_t tier = 255;
      for (std::size_t c : children[id]) {
        if (!k.blocked[c]) {
          M = any ? std::min(M, k.share[c]) : k.share[c];
          tier = std::min(tier, k.tier[c]);
          any = true;
        }
        if (!k.blocked[c] && k.share[c] > 0)
          for (std::size_t r = 0; r < m; ++r) scaled[r] += v[c][r] / k.share[c];
        else
          for (std::size_t r = 0; r < m; ++r) rest[r] += v[c][r];
      }
      k.blocked[id] = !any;
      k.tier[id] = any ? tier : 0;
      for (std::size_t r = 0; r < m; ++r) v[id][r] = any ? scaled[r] * M + rest[r] : rest[r];
      k.share[id] = share_of(v[id], weight[id], true);
    }
    return k;
  }

  // Walks from the root to the lowest (tier, share, id) non-blocked child at every level. Shares
  // within rounding of each other (relative 1e-12) are a tie, decided by id: hdrf.hpp's tie rule
  // (equal rational shares whose doubles differ in the last bits go to the node created first).
  std::optional<std::size_t> pick(const Keys& k) const {
    const auto less = [](double a, double b) { return b - a > 1e-12 * std::max(a, b); };
    const auto tied = [&](double a, double b) { return !less(a, b) && !less(b, a); };
    if (children[0].empty() || k.blocked[0]) return std::nullopt;
    std::size_t at = 0;
    while (!children[at].empty()) {
      std::size_t best = SIZE_MAX;
      for (std::size_t c : children[at]) {
        if (k.blocked[c]) continue;
        if (best == SIZE_MAX || k.tier[c] < k.tier[best] ||
            (k.tier[c] == k.tier[best] && (less(k.share[c], k.share[best]) || (tied(k.share[c], k.share[best]) && c < best))))
          best = c;
      }
      at = best;
    }
    return at;
  }
};

// The reference's own job record: groups of per-replica requests and the allowed models by name,
// with the totals they add up to. The planner gets the same job in the one job model (compiled()).
struct RefGroup {
  std::int32_t replicas = 1;
  std::int32_t min_replicas = -1;  // -1: all (rigid)
  std::int64_t cpu = 0, memory = 0, gpu_milli = 0;
};
struct RefJob {
  std::string name, queue;
  std::int32_t priority = 0;
  std::int64_t submit_time = 0;
  std::vector<RefGroup> groups;
  std::vector<std::string> gpu_models;  // empty = any
  Amounts base;                         // cpu and memory over all groups (GPU dimensions zero)
  std::int64_t gpu_milli = 0;           // GPU share over all groups
};

std::int32_t gmax(const RefGroup& g) { return std::max<std::int32_t>(0, g.replicas); }
std::int32_t gmin(const RefGroup& g) { return g.min_replicas < 0 ? gmax(g) : std::min(g.min_replicas, gmax(g)); }

// The job as the planner reads it: each group's per-task request, the models as ids of `space`
// (the planner is built without a registry: model id k is the space's k-th GPU model).
CompiledJob compiled(const RefJob& job, const ResourceSpace& space) {
  CompiledJob out = testing::job_of(job.name, job.queue, 0, 0, 0, space, job.gpu_models, job.priority, job.submit_time);
  const GpuModelMask models = out.groups[0].request.models;
  out.groups.clear();
  for (const RefGroup& g : job.groups) {
    CompiledGroup& c = out.groups.emplace_back(testing::group_of(g.replicas, g.min_replicas, g.cpu, g.memory, g.gpu_milli));
    if (c.request.shape.needs_gpu()) c.request.models = models;
  }
  return out;
}

RefPlan reference_plan(const ResourceSpace& space, const Amounts& cap, const Amounts& free0,
                       const std::vector<QueueConfig>& queues, const std::vector<RefJob>& jobs,
                       const AgingPolicy& aging) {
  const Eigen::Index m = space.size();
  const std::size_t nq = queues.size();
  RefPlan out;
  auto find = [&](const std::string& name) -> std::size_t {
    for (std::size_t q = 0; q < nq; ++q)
      if (queues[q].name == name) return q;
    return SIZE_MAX;
  };
  std::vector<std::size_t> parent(nq, SIZE_MAX);
  std::vector<char> leaf(nq, 1);
  for (std::size_t q = 0; q < nq; ++q)
    if (!queues[q].parent.empty()) {
      parent[q] = find(queues[q].parent);
      leaf[parent[q]] = 0;
    }
  // Node ids in the order the planner creates them: by depth, and at one depth in input order (so
  // siblings, which alone are compared by id, go in the order listed: ties to the queue listed first).
  std::vector<std::size_t> depth(nq, 0);
  for (std::size_t q = 0; q < nq; ++q)
    for (std::size_t at = parent[q]; at != SIZE_MAX; at = parent[at]) ++depth[q];
  std::vector<std::size_t> by_depth(nq);
  for (std::size_t q = 0; q < nq; ++q) by_depth[q] = q;
  std::stable_sort(by_depth.begin(), by_depth.end(), [&](std::size_t a, std::size_t b) { return depth[a] < depth[b]; });
  std::vector<std::size_t> node(nq, SIZE_MAX);
  RefTree tree;
  auto add_node = [&](std::size_t p, double w) {
    tree.parent.push_back(static_cast<std::int64_t>(p));
    tree.weight.push_back(w);
    tree.children.emplace_back();
    tree.alloc.emplace_back(static_cast<std::size_t>(m), 0.0);
    tree.leaf_blocked.push_back(0);
    tree.leaf_tier.push_back(0);
    const std::size_t id = tree.parent.size() - 1;
    if (id > 0) tree.children[p].push_back(id);
    return id;
  };
  add_node(0, 1.0);
  for (const std::size_t q : by_depth) node[q] = add_node(parent[q] == SIZE_MAX ? 0 : node[parent[q]], queues[q].weight);
  std::vector<QueueQuota> quotas;
  for (const auto& q : queues) quotas.push_back(queue_quota(q));
  QuotaBook book = QuotaBook::build(static_cast<std::size_t>(m), quotas).value();
  Amounts sched_free = cap;
  Amounts attributed = Amounts::Zero(m);
  for (std::size_t q = 0; q < nq; ++q)
    if (queues[q].usage.size() == static_cast<std::size_t>(m)) {
      book.admit(q, amounts_of(queues[q].usage));
      attributed += amounts_of(queues[q].usage);
    }
  const std::size_t hidden = add_node(0, 1.0);
  tree.leaf_blocked[hidden] = 1;
  const Amounts other = (cap - free0 - attributed).cwiseMax(0);
  for (Eigen::Index r = 0; r < m; ++r) tree.alloc[hidden][static_cast<std::size_t>(r)] = static_cast<double>(other[r]);
  sched_free -= other;
  for (std::size_t q = 0; q < nq; ++q)
    if (leaf[q] && queues[q].usage.size() == static_cast<std::size_t>(m)) {
      for (Eigen::Index r = 0; r < m; ++r)
        tree.alloc[node[q]][static_cast<std::size_t>(r)] += static_cast<double>(queues[q].usage[static_cast<std::size_t>(r)]);
      sched_free -= amounts_of(queues[q].usage);
    }
  Amounts threshold = Amounts::Ones(m);
  std::vector<char> seen(static_cast<std::size_t>(m), 0);
  auto note = [&](Eigen::Index d, std::int64_t v) {
    if (v <= 0) return;
    threshold[d] = seen[static_cast<std::size_t>(d)] ? std::min(threshold[d], v) : v;
    seen[static_cast<std::size_t>(d)] = 1;
  };
  for (const auto& j : jobs) {
    note(0, j.base[0]);
    note(1, j.base[1]);
    for (Eigen::Index d = 2; d < m; ++d) note(d, j.gpu_milli);
  }

  std::vector<std::int64_t> prio(jobs.size());
  std::vector<std::vector<std::size_t>> per_queue(nq);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    prio[j] = effective_priority(compiled(jobs[j], space), aging);
    const std::size_t q = find(jobs[j].queue);
    if (q == SIZE_MAX || !leaf[q]) {
      out.pending.push_back({j, SIZE_MAX, q == SIZE_MAX ? PendingKind::kNoSuchQueue : PendingKind::kNotLeaf, prio[j], SIZE_MAX});
      continue;
    }
    per_queue[q].push_back(j);
  }
  for (auto& list : per_queue)
    std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
      return prio[a] != prio[b] ? prio[a] > prio[b] : jobs[a].submit_time < jobs[b].submit_time;
    });

  // Candidate requests of a job (base with cpu/memory reduced to `step`): one per allowed flavor of
  // the queue in its order, or the base alone for a CPU-only job.
  auto candidates = [&](std::size_t q, const RefJob& job, std::int64_t step, std::int64_t steps) {
    Amounts base = job.base;
    std::int64_t gpu = job.gpu_milli;
    if (step > 0) {
      for (const auto& g : job.groups) {
        const std::int64_t keep = gmax(g) - (std::int64_t{gmax(g) - gmin(g)} * step) / steps;
        const std::int64_t dropped = gmax(g) - keep;
        base[0] -= dropped * g.cpu;
        base[1] -= dropped * g.memory;
        gpu -= dropped * g.gpu_milli;
      }
      base = base.cwiseMax(0);
      gpu = std::max<std::int64_t>(0, gpu);
    }
    std::vector<std::pair<int, Amounts>> out_c;
    if (gpu <= 0) {
      out_c.emplace_back(-1, base);
      return out_c;
    }
    std::vector<Eigen::Index> flavors;
    if (!queues[q].flavor_order.empty())
      for (const auto& f : queues[q].flavor_order) flavors.push_back(*space.gpu_dim(f));
    else
      for (Eigen::Index d = 2; d < m; ++d) flavors.push_back(d);
    for (Eigen::Index d : flavors) {
      const std::string& model = space.gpu_models[static_cast<std::size_t>(d - 2)];
      if (!job.gpu_models.empty() && std::find(job.gpu_models.begin(), job.gpu_models.end(), model) == job.gpu_models.end())
        continue;
      Amounts r = base;
      r[d] += gpu;
      out_c.emplace_back(static_cast<int>(d), r);
    }
    return out_c;
  };
  struct Choice {
    bool admitted = false, borrows = false, none = false;
    int dim = -1;
    Amounts request;
  };
  Amounts free = free0;
  auto choose = [&](std::size_t q, const RefJob& job, std::int64_t step, std::int64_t steps) {
    Choice c;
    const auto cands = candidates(q, job, step, steps);
    c.none = cands.empty();
    for (const auto& [d, req] : cands) {
      const QuotaCheck check = book.check(q, req);
      if (!check.admitted() || (req.array() > free.array()).any()) continue;
      if (!check.borrows) return Choice{true, false, false, d, req};
      if (!c.admitted) c = Choice{true, true, false, d, req};
    }
    return c;
  };
  std::vector<std::size_t> head(nq, 0);
  auto refresh_leaf = [&](std::size_t q) {
    const std::size_t id = node[q];
    if (head[q] >= per_queue[q].size()) {
      tree.leaf_blocked[id] = 1;
      return;
    }
    const RefJob& job = jobs[per_queue[q][head[q]]];
    std::uint8_t tier = 1;
    for (const auto& c : candidates(q, job, 0, 0))
      if (book.within_nominal(q, c.second)) tier = 0;
    tree.leaf_tier[id] = tier;
  };
  for (std::size_t q = 0; q < nq; ++q)
    if (leaf[q]) refresh_leaf(q);
  std::vector<std::size_t> queue_of_node(tree.parent.size(), SIZE_MAX);
  for (std::size_t q = 0; q < nq; ++q) queue_of_node[node[q]] = q;
  for (;;) {
    std::vector<char> saturated(static_cast<std::size_t>(m), 0);
    for (Eigen::Index r = 0; r < m; ++r) saturated[static_cast<std::size_t>(r)] = cap[r] > 0 && sched_free[r] < threshold[r];
    const auto id = tree.pick(tree.compute(cap, saturated));
    if (!id) break;
    const std::size_t q = queue_of_node[*id];
    const std::size_t j = per_queue[q][head[q]];
    const RefJob& job = jobs[j];
    Choice c = choose(q, job, 0, 0);
    std::int64_t step = 0;
    std::int64_t steps = 0;
    for (const auto& g : job.groups) steps = std::max<std::int64_t>(steps, gmax(g) - gmin(g));
    if (!c.admitted && !c.none && steps > 0) {
      for (std::int64_t s = 1; s <= steps && !c.admitted; ++s) {
        c = choose(q, job, s, steps);
        step = s;
      }
      if (!c.admitted) step = 0;
    }
    if (c.admitted) {
      book.admit(q, c.request);
      free -= c.request;
      sched_free -= c.request;
      for (Eigen::Index r = 0; r < m; ++r) tree.alloc[*id][static_cast<std::size_t>(r)] += static_cast<double>(c.request[r]);
      std::vector<std::int32_t> replicas;
      for (const auto& g : job.groups)
        replicas.push_back(step > 0 ? static_cast<std::int32_t>(gmax(g) - (std::int64_t{gmax(g) - gmin(g)} * step) / steps) : gmax(g));
      out.admitted.push_back({j, q, c.dim, c.borrows, prio[j], step > 0, replicas});
    } else {
      const PendingKind kind = !c.none ? PendingKind::kDoesNotFit
                               : job.gpu_models.empty() ? PendingKind::kNoFlavorOffered
                                                        : PendingKind::kNoAllowedFlavor;
      out.pending.push_back({j, q, kind, prio[j], SIZE_MAX});
      if (queues[q].strict_fifo)
        for (++head[q]; head[q] < per_queue[q].size(); ++head[q]) {
          const std::size_t k = per_queue[q][head[q]];
          out.pending.push_back({k, q, PendingKind::kBehindStrictHead, prio[k], j});
        }
      else
        ++head[q];
      refresh_leaf(q);
      continue;
    }
    ++head[q];
    refresh_leaf(q);
  }
  return out;
}

struct Instance {
  ResourceSpace space;
  Amounts cap, free;
  std::vector<QueueConfig> queues;
  std::vector<RefJob> jobs;
  std::vector<CompiledJob> compiled;  // jobs[k] in the one job model
  AgingPolicy aging;
};

Instance random_instance(SplitMix& rng) {
  Instance in;
  const std::size_t g = 1 + rng.below(3);
  for (std::size_t k = 0; k < g; ++k) in.space.gpu_models.push_back(fmt::format("G{}", k));
  const Eigen::Index m = in.space.size();
  in.cap = Amounts(m);
  in.cap[0] = 1000 * static_cast<std::int64_t>(8 + rng.below(64));
  in.cap[1] = 1024 * static_cast<std::int64_t>(8 + rng.below(256));
  for (Eigen::Index d = 2; d < m; ++d) in.cap[d] = 1000 * static_cast<std::int64_t>(rng.below(24));
  in.free = in.cap;
  if (rng.below(3) == 0)
    for (Eigen::Index r = 0; r < m; ++r) in.free[r] = in.cap[r] - static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(in.cap[r] / 4 + 1)));
  // Queues: some internal nodes, leaves under them or the root.
  const std::size_t internal = rng.below(4);
  const std::size_t leaves = 1 + rng.below(10);
  const std::size_t cohorts = rng.below(3);
  for (std::size_t i = 0; i < internal; ++i) {
    QueueConfig q;
    q.name = fmt::format("org{}", i);
    q.weight = 1.0 + static_cast<double>(rng.below(3));
    if (i > 0 && rng.below(2) == 0) q.parent = fmt::format("org{}", rng.below(i));
    in.queues.push_back(std::move(q));
  }
  for (std::size_t i = 0; i < leaves; ++i) {
    QueueConfig q;
    q.name = fmt::format("q{}", i);
    q.weight = rng.below(4) == 0 ? 0.5 : 1.0 + static_cast<double>(rng.below(3));
    if (internal > 0 && rng.below(3) != 0) q.parent = fmt::format("org{}", rng.below(internal));
    if (cohorts > 0 && rng.below(3) != 0) q.cohort = fmt::format("c{}", rng.below(cohorts));
    if (rng.below(4) != 0) {
      q.nominal.assign(static_cast<std::size_t>(m), kNoLimit);
      for (Eigen::Index r = 0; r < m; ++r)
        if (rng.below(3) != 0) q.nominal[static_cast<std::size_t>(r)] = in.cap[r] / static_cast<std::int64_t>(1 + rng.below(6));
      if (!q.cohort.empty() && rng.below(2) == 0) {
        q.borrowing_limit.assign(static_cast<std::size_t>(m), kNoLimit);
        for (Eigen::Index r = 0; r < m; ++r)
          if (rng.below(2) == 0) q.borrowing_limit[static_cast<std::size_t>(r)] = in.cap[r] / static_cast<std::int64_t>(2 + rng.below(6));
      }
      if (!q.cohort.empty() && rng.below(2) == 0) {
        q.lending_limit.assign(static_cast<std::size_t>(m), kNoLimit);
        for (Eigen::Index r = 0; r < m; ++r)
          if (rng.below(2) == 0) q.lending_limit[static_cast<std::size_t>(r)] = in.cap[r] / static_cast<std::int64_t>(2 + rng.below(6));
      }
    }
    if (rng.below(2) == 0)
      for (const auto& model : in.space.gpu_models)
        if (rng.below(3) != 0) q.flavor_order.insert(q.flavor_order.begin() + static_cast<std::ptrdiff_t>(rng.below(q.flavor_order.size() + 1)), model);
    q.strict_fifo = rng.below(5) == 0;
    if (rng.below(4) == 0) {
      q.usage.assign(static_cast<std::size_t>(m), 0);
      q.usage[0] = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(in.free[0] / 8 + 1)));
    }
    in.queues.push_back(std::move(q));
  }
  // Shuffle so parents do not always come before children in the input.
  for (std::size_t i = in.queues.size(); i > 1; --i) std::swap(in.queues[i - 1], in.queues[rng.below(i)]);
  const std::size_t n_jobs = 1 + rng.below(80);
  for (std::size_t k = 0; k < n_jobs; ++k) {
    RefJob j;
    j.name = fmt::format("j{}", k);
    const auto pick = rng.below(20);
    j.queue = pick == 0 ? "nowhere" : pick == 1 && internal > 0 ? "org0" : fmt::format("q{}", rng.below(leaves));
    j.priority = static_cast<std::int32_t>(rng.below(4));
    j.submit_time = static_cast<std::int64_t>(rng.below(6));
    j.base = Amounts::Zero(m);
    if (rng.below(3) == 0) {
      // Elastic: groups add up to the request.
      const std::size_t ng = 1 + rng.below(2);
      for (std::size_t gi = 0; gi < ng; ++gi) {
        RefGroup grp;
        grp.replicas = static_cast<std::int32_t>(1 + rng.below(6));
        grp.min_replicas = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(grp.replicas) + 1));
        grp.cpu = 1000 * static_cast<std::int64_t>(rng.below(3));
        grp.memory = 256 * static_cast<std::int64_t>(rng.below(3));
        grp.gpu_milli = 500 * static_cast<std::int64_t>(rng.below(3));
        j.base[0] += grp.replicas * grp.cpu;
        j.base[1] += grp.replicas * grp.memory;
        j.gpu_milli += grp.replicas * grp.gpu_milli;
        j.groups.push_back(grp);
      }
    } else {
      j.base[0] = 1000 * static_cast<std::int64_t>(rng.below(8));
      j.base[1] = 512 * static_cast<std::int64_t>(rng.below(8));
      j.gpu_milli = 500 * static_cast<std::int64_t>(rng.below(6));
      j.groups.push_back(RefGroup{1, -1, j.base[0], j.base[1], j.gpu_milli});  // one rigid task
    }
    if (rng.below(2) == 0)
      for (const auto& model : in.space.gpu_models)
        if (rng.below(2) == 0) j.gpu_models.push_back(model);
    in.jobs.push_back(std::move(j));
  }
  if (rng.below(8) == 0) {
    // Priorities and submit times spread over most of the int64 range: the planner cannot pack its
    // sort keys into 64 bits and compares the fields instead.
    for (auto& j : in.jobs) {
      j.priority = (static_cast<std::int32_t>(rng.below(5)) - 2) * (std::int32_t{1} << 29);
      j.submit_time = (static_cast<std::int64_t>(rng.below(5)) - 2) * (std::int64_t{1} << 60);
    }
  } else if (rng.below(2) == 0) {
    in.aging = AgingPolicy{2, 1, static_cast<std::int64_t>(rng.below(4)), 6};
  }
  for (const RefJob& j : in.jobs) in.compiled.push_back(compiled(j, in.space));
  return in;
}

}  // namespace

TEST_CASE("the planner admits exactly what a from-scratch reference admits, in the same order") {
  SplitMix rng(2013);
  std::size_t admitted = 0, pending = 0, borrowed = 0, partial = 0, strict = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    Instance in = random_instance(rng);
    auto planner = FairSharePlanner::build(in.space, in.cap, in.free, in.queues);
    REQUIRE_MESSAGE(planner.ok(), planner.error().message);
    const AdmissionPlan plan = planner->plan(in.compiled, in.aging);
    const RefPlan ref = reference_plan(in.space, in.cap, in.free, in.queues, in.jobs, in.aging);
    std::vector<RefAdmitted> got_a;
    for (const auto& a : plan.admitted) got_a.push_back({a.job, a.queue, a.gpu_dim, a.borrowed, a.priority, a.partial, a.replicas});
    std::vector<RefPending> got_p;
    for (const auto& p : plan.pending) got_p.push_back({p.job, p.queue, p.kind, p.priority, p.behind});
    INFO("instance ", iter);
    REQUIRE(got_a.size() == ref.admitted.size());
    for (std::size_t k = 0; k < got_a.size(); ++k) {
      INFO("admitted #", k);
      CHECK(got_a[k] == ref.admitted[k]);
    }
    REQUIRE(got_p.size() == ref.pending.size());
    for (std::size_t k = 0; k < got_p.size(); ++k) {
      INFO("pending #", k);
      CHECK(got_p[k] == ref.pending[k]);
    }
    admitted += got_a.size();
    pending += got_p.size();
    for (const auto& a : got_a) {
      borrowed += a.borrowed;
      partial += a.partial;
    }
    for (const auto& p : got_p) strict += p.kind == PendingKind::kBehindStrictHead;
  }
  // The instances exercise every path (not only trivial plans).
  CHECK(admitted > 5000);
  CHECK(pending > 5000);
  CHECK(borrowed > 100);
  CHECK(partial > 100);
  CHECK(strict > 100);
}
