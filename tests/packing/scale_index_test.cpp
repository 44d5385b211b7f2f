// Issue 15, scale: the index walks skip empty idle-count buckets and the GPU picker skips busy GPUs
// (detail::ClusterIndex::next_idle_level / prev_idle_level / next_idle_gpu), so filling one node of 65,535
// GPUs is no longer quadratic. These tests check that the decisions are still exactly the policies'
// definitions: every policy's choice against a scan of every node, and every pick against the
// lowest idle GPUs found by a scan, through reservations, releases, GPU failures and cordons.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/packing/policy.hpp"

namespace {

using namespace gpusched;

// Nodes of very different sizes (1 to 300 GPUs, one of 2,000) and two models, so the buckets are
// sparse over a wide range of idle counts.
// With `mixed`, node 7 (2,000 GPUs) and every node i with i % 6 == 0 (up to 300) also have A100s
// among their H100s (every third GPU, and a run of them when it has many: both layouts the index
// must order by model).
Cluster scale_index_cluster(SplitMix64& rng, bool mixed = false) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 40; ++i) {
    NodeSpec n;
    n.name = "n" + std::to_string(i);
    const std::size_t gpus = i == 7 ? 2000 : 1 + rng.below(i % 3 == 0 ? 300 : 16);
    n.cpu = static_cast<MilliCpu>(gpus) * 4000;
    n.memory = static_cast<Bytes>(gpus) * 8 * kGiB;
    n.gpus.assign(gpus, GpuSpec{i % 4 == 1 ? "A100-80GB" : "H100-80GB"});
    if (mixed && (i % 6 == 0 || i == 7))
      for (std::size_t g = 0; g < gpus; ++g)
        if (g % 3 == 1 || (g >= 100 && g < 180)) n.gpus[g] = GpuSpec{"A100-80GB"};
    nodes.push_back(std::move(n));
  }
  return Cluster(std::move(nodes));
}

// The definitions the policies implement, by scanning every node.
NodeId scan_select(const ClusterState& s, const TaskRequest& r, std::string_view policy) {
  NodeId best = kNoNode;
  std::int64_t best_key = 0;
  for (NodeId n = 0; n < s.node_count(); ++n) {
    if (s.check_fit(n, r) != FitReason::kFits) continue;
    std::int64_t key = 0;  // lower is preferred
    if (policy == "best-fit") key = s.shares().idle_gpus(n) - r.shape.gpus;
    if (policy == "worst-fit") key = -(s.shares().idle_gpus(n) - r.shape.gpus);
    if (best == kNoNode || key < best_key) {
      best = n;
      best_key = key;
    }
  }
  return best;
}

std::vector<GpuIndex> scan_lowest_idle(const ClusterState& s, NodeId n, const TaskRequest& r) {
  std::vector<GpuIndex> out;
  for (std::size_t g = 0; g < s.gpu_count(n) && out.size() < static_cast<std::size_t>(r.shape.gpus); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (s.shares().free_milli(n, gi) == kMilliPerGpu && (r.models & model_bit(s.gpu_model(n, gi)))) out.push_back(gi);
  }
  return out;
}

// next/prev_idle_level against the buckets themselves.
void check_levels(const ClusterState& s) {
  for (std::uint8_t key : gpusched::detail::cluster_index(s).model_keys()) {
    std::vector<std::int32_t> nonempty;
    for (std::int32_t k = 0; k <= s.max_gpus_per_node(); ++k)
      if (const NodeBitset* b = gpusched::detail::cluster_index(s).idle_bucket(key, k); b && !b->empty()) nonempty.push_back(k);
    std::vector<std::int32_t> walked;
    for (std::int32_t k = gpusched::detail::cluster_index(s).next_idle_level(key, 0); k >= 0; k = gpusched::detail::cluster_index(s).next_idle_level(key, k + 1)) walked.push_back(k);
    CHECK(walked == nonempty);
    std::vector<std::int32_t> down;
    for (std::int32_t k = gpusched::detail::cluster_index(s).prev_idle_level(key, s.max_gpus_per_node() + 5); k >= 0; k = k == 0 ? -1 : gpusched::detail::cluster_index(s).prev_idle_level(key, k - 1))
      down.push_back(k);
    std::reverse(down.begin(), down.end());
    CHECK(down == nonempty);
  }
}

}  // namespace

TEST_CASE("scale index: every policy's choice and every GPU pick equal a scan of all nodes and GPUs") {
  SplitMix64 rng(15);
  ClusterState s = *ClusterState::build(scale_index_cluster(rng), GpuModelRegistry::builtin());
  const std::vector<std::string_view> names{"first-fit", "best-fit", "worst-fit", "most-allocated", "dot-product"};
  std::vector<TaskRequest> requests;
  for (GpuCount g : {1, 2, 3, 5, 8, 64, 250})
    requests.push_back(*s.compile(TaskShape{g * 1000, g * kGiB, g, 1000, 0}));
  const std::string_view a100[] = {"A100-80GB"};
  requests.push_back(*s.compile(TaskShape{4000, 4 * kGiB, 4, 1000, 0}, a100));
  std::vector<TaskAssignment> held;
  std::size_t placed = 0, compared = 0;
  for (int step = 0; step < 3000; ++step) {
    const std::uint64_t action = rng.below(10);
    if (action < 6) {
      const TaskRequest& r = requests[rng.below(requests.size())];
      const std::string_view name = names[rng.below(names.size())];
      auto policy = make_policy(name);
      const NodeId n = policy->select(s, r);
      if (name == "first-fit" || name == "best-fit" || name == "worst-fit") {
        CHECK(n == scan_select(s, r, name));
        ++compared;
      } else {
        CHECK((n == kNoNode) == (scan_select(s, r, "first-fit") == kNoNode));
      }
      if (n == kNoNode) continue;
      TaskAssignment a;
      REQUIRE(policy->gpu_picker().pick(s, n, r, a));
      CHECK(a.gpus == scan_lowest_idle(s, n, r));
      REQUIRE(s.reserve(r, a).ok());
      held.push_back(a);
      ++placed;
    } else if (action < 9 && !held.empty()) {
      const std::size_t k = rng.below(held.size());
      REQUIRE(s.release(held[k]).ok());
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (action == 9) {
      // Events: a GPU fails or recovers, a node is cordoned or uncordoned.
      const auto n = static_cast<NodeId>(rng.below(s.node_count()));
      if (rng.below(2) == 0) {
        const std::size_t g = rng.below(s.gpu_count(n));
        REQUIRE(s.set_gpu_health(n, g, !s.gpu_healthy(n, static_cast<GpuIndex>(g))).ok());
      } else {
        REQUIRE((s.schedulable(n) ? s.cordon(n) : s.uncordon(n)).ok());
      }
    }
    if (step % 100 == 0) check_levels(s);
    s.commit();
  }
  check_levels(s);
  CHECK(placed > 500);
  CHECK(compared > 500);
  // Rolling back restores the index exactly (levels and idle GPUs included).
  const ClusterState before = s;
  const auto mark = s.checkpoint();
  for (const TaskAssignment& a : held) REQUIRE(s.release_journaled(a).ok());
  s.rollback(mark);
  CHECK(s.same_allocation_as(before));
  check_levels(s);
}

TEST_CASE("scale index: one node of 65,535 GPUs filled by jobs of 1 to 8 GPUs, released, filled again") {
  NodeSpec big;
  big.name = "big";
  big.cpu = 65535 * 2000;
  big.memory = Bytes{65535} * 2 * kGiB;
  big.gpus.assign(65535, GpuSpec{"H100-80GB"});
  ClusterState s = *ClusterState::build(Cluster({big}), GpuModelRegistry::builtin());
  std::vector<TaskRequest> requests;
  for (GpuCount g = 1; g <= 8; ++g) requests.push_back(*s.compile(TaskShape{g * 1000, g * kGiB, g, 1000, 0}));
  BestFitPolicy policy;
  std::vector<TaskAssignment> held;
  std::int64_t taken = 0;
  for (std::size_t i = 0;; ++i) {
    const TaskRequest& r = requests[i % requests.size()];
    const NodeId n = policy.select(s, r);
    if (n == kNoNode) break;
    TaskAssignment a;
    REQUIRE(policy.gpu_picker().pick(s, n, r, a));
    // The lowest idle GPUs: with nothing released yet, exactly the next ones in order.
    CHECK(a.gpus.front() == taken);
    CHECK(a.gpus.back() == taken + r.shape.gpus - 1);
    REQUIRE(s.reserve(r, a).ok());
    taken += r.shape.gpus;
    held.push_back(std::move(a));
  }
  // 1 + 2 + ... + 8 = 36 GPUs per round of eight jobs; the job that did not fit wanted more than was left.
  CHECK(held.size() == 14565);
  CHECK(s.shares().idle_gpus(0) == 65535 - taken);
  CHECK(s.shares().idle_gpus(0) < static_cast<std::int32_t>(requests[held.size() % 8].shape.gpus));
  // Release every other job: the next 1-GPU job takes the lowest freed GPU.
  for (std::size_t k = 0; k < held.size(); k += 2) REQUIRE(s.release(held[k]).ok());
  s.commit();
  TaskAssignment a;
  REQUIRE(policy.gpu_picker().pick(s, 0, requests[0], a));
  CHECK(a.gpus == std::vector<GpuIndex>{0});
  REQUIRE(policy.gpu_picker().pick(s, 0, requests[2], a));
  // Job 0 took GPU 0, job 2 GPUs 3-5: three lowest idle GPUs are 0, 3, 4.
  CHECK(a.gpus == std::vector<GpuIndex>{0, 3, 4});
}

TEST_CASE("scale index: a task of every GPU of a 65,535-GPU node is validated in one pass; a repeat is named") {
  NodeSpec big;
  big.name = "big";
  big.cpu = 1000000;
  big.memory = 1024 * kGiB;
  big.gpus.assign(65535, GpuSpec{"H100-80GB"});
  ClusterState s = *ClusterState::build(Cluster({big}), GpuModelRegistry::builtin());
  const TaskRequest all = *s.compile(TaskShape{1000, kGiB, 65535, 1000, 0});
  TaskAssignment a = make_assignment(0, all);
  for (std::size_t g = 0; g < 65535; ++g) a.gpus.push_back(static_cast<GpuIndex>(65534 - g));
  CHECK(s.validate(all, a).ok());
  // The GPU of index 100 given again at index 40,000 (and index 200's at 50,000): the first repeat
  // is reported.
  TaskAssignment twice = a;
  twice.gpus[40000] = a.gpus[100];
  twice.gpus[50000] = a.gpus[200];
  const Status st = s.validate(all, twice);
  REQUIRE(!st.ok());
  CHECK(st.error().code == ErrorCode::kDuplicate);
  CHECK(st.error().field == "assignment.gpus[40000]");
  // A few GPUs take the pairwise path and name the same index.
  const TaskRequest three = *s.compile(TaskShape{1000, kGiB, 3, 1000, 0});
  TaskAssignment small = make_assignment(0, three);
  small.gpus = {4, 9, 4};
  const Status st3 = s.validate(three, small);
  REQUIRE(!st3.ok());
  CHECK(st3.error().field == "assignment.gpus[2]");
  REQUIRE(s.reserve(all, a).ok());
  CHECK(s.shares().idle_gpus(0) == 0);
  CHECK(gpusched::detail::cluster_index(s).next_idle_gpu(0, 0) == -1);
}

namespace {

// What the share index answers, by scanning every GPU of the node: the least free share >= s (ties
// to the lowest index) among GPUs of an allowed model with the GPU memory asked, and the most free
// share of any GPU.
std::int32_t scan_least_share_gpu(const ClusterState& s, NodeId n, const TaskRequest& r) {
  std::int32_t best = -1;
  for (std::size_t g = 0; g < s.gpu_count(n); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    const std::int32_t f = s.shares().free_milli(n, gi);
    if (f < r.shape.gpu_milli || !(r.models & model_bit(s.gpu_model(n, gi))) || s.shares().free_memory(n, gi) < r.shape.gpu_memory)
      continue;
    if (best < 0 || f < s.shares().free_milli(n, static_cast<GpuIndex>(best))) best = static_cast<std::int32_t>(g);
  }
  return best;
}

// check_fit's host steps for these requests (no selector).
bool host_fits(const ClusterState& s, NodeId n, const TaskRequest& r) {
  return s.eligible(n) && s.gpu_count(n) > 0 && (s.node_models(n) & r.models) && s.cpu_free(n) >= r.shape.cpu &&
         s.memory_free(n) >= r.shape.memory;
}

std::int32_t scan_most_free_share(const ClusterState& s, NodeId n, GpuModelMask models = ~GpuModelMask{0}) {
  std::int32_t most = 0;
  for (std::size_t g = 0; g < s.gpu_count(n); ++g)
    if (models & model_bit(s.gpu_model(n, static_cast<GpuIndex>(g))))
      most = std::max(most, static_cast<std::int32_t>(s.shares().free_milli(n, static_cast<GpuIndex>(g))));
  return most;
}

}  // namespace

namespace {

void check_shared_index_against_scans(bool mixed) {
  SplitMix64 rng(16);
  ClusterState s = *ClusterState::build(scale_index_cluster(rng, mixed), GpuModelRegistry::builtin());
  std::vector<TaskRequest> requests;
  for (MilliGpu m : {100, 250, 300, 500, 700, 1000}) requests.push_back(*s.compile(TaskShape{500, kGiB, 1, m, 0}));
  const std::string_view a100[] = {"A100-80GB"};
  const std::string_view h100[] = {"H100-80GB"};
  requests.push_back(*s.compile(TaskShape{500, kGiB, 1, 400, 0}, a100));
  requests.push_back(*s.compile(TaskShape{500, kGiB, 1, 600, 0}, h100));
  // GPU memory asked: 30 and 50 GiB of a GPU's 80, so GPUs with share left run short of memory.
  requests.push_back(*s.compile(TaskShape{500, kGiB, 1, 300, 30 * kGiB}));
  requests.push_back(*s.compile(TaskShape{500, kGiB, 1, 200, 50 * kGiB}, h100));
  requests.push_back(*s.compile(TaskShape{2000, 2 * kGiB, 2, 1000, 0}));
  std::vector<std::pair<TaskRequest, TaskAssignment>> held;
  std::size_t indexed_checks = 0, mixed_checks = 0, memory_checks = 0, placed = 0;
  auto check_node = [&](NodeId n, const TaskRequest& r) {
    CHECK(gpusched::detail::cluster_index(s).most_free_share(n) == scan_most_free_share(s, n));
    CHECK(gpusched::detail::cluster_index(s).most_free_share(n, r.models) == scan_most_free_share(s, n, r.models));
    if (!r.shape.shares_gpu()) return;
    const std::int32_t want = scan_least_share_gpu(s, n, r);
    const std::int32_t tight = want < 0 ? kMilliPerGpu + 1
                                        : static_cast<std::int32_t>(s.shares().free_milli(n, static_cast<GpuIndex>(want)) - r.shape.gpu_milli);
    CHECK(tightest_share_left(s, n, r) == tight);
    const bool host = host_fits(s, n, r);
    CHECK((s.check_fit(n, r) == FitReason::kFits) == (host && want >= 0));
    if (host && want < 0)
      CHECK(s.check_fit(n, r) == (scan_most_free_share(s, n, r.models) >= r.shape.gpu_milli ? FitReason::kInsufficientGpuMemory
                                                                                                : FitReason::kInsufficientGpuShare));
    if (gpusched::detail::cluster_index(s).share_indexed(n)) {
      ++indexed_checks;
      CHECK(gpusched::detail::cluster_index(s).least_share_gpu(n, r.shape.gpu_milli, r.models, r.shape.gpu_memory) == want);
      if (r.shape.gpu_memory > 0) ++memory_checks;
      if (!std::has_single_bit(s.node_models(n))) ++mixed_checks;
    }
    if (host && want >= 0) {
      TaskAssignment a;
      REQUIRE(LowestIndexGpuPicker{}.pick(s, n, r, a));
      CHECK(a.gpus == std::vector<GpuIndex>{static_cast<GpuIndex>(want)});
    }
  };
  for (int step = 0; step < 4000; ++step) {
    const std::uint64_t action = rng.below(10);
    const TaskRequest& r = requests[rng.below(requests.size())];
    if (action < 6) {
      auto policy = make_policy(rng.below(2) == 0 ? "best-fit" : "worst-fit");
      const NodeId n = policy->select(s, r);
      if (n == kNoNode) continue;
      check_node(n, r);
      TaskAssignment a;
      REQUIRE(policy->gpu_picker().pick(s, n, r, a));
      REQUIRE(s.reserve(r, a).ok());
      held.emplace_back(r, a);
      ++placed;
    } else if (action < 9 && !held.empty()) {
      const std::size_t k = rng.below(held.size());
      REQUIRE(s.release(held[k].second).ok());
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (action == 9) {
      const auto n = static_cast<NodeId>(rng.below(s.node_count()));
      const std::size_t g = rng.below(s.gpu_count(n));
      REQUIRE(s.set_gpu_health(n, g, !s.gpu_healthy(n, static_cast<GpuIndex>(g))).ok());
    }
    if (step % 50 == 0)
      for (NodeId n = 0; n < s.node_count(); ++n) check_node(n, r);
    s.commit();
  }
  CHECK(placed > 1000);
  CHECK(indexed_checks > 1000);
  CHECK((mixed_checks > 300) == mixed);
  CHECK(memory_checks > 300);
  // Best-fit and spread choose as their definitions over every node's GPUs (a scan with the same keys).
  for (const TaskRequest& r : requests) {
    if (!r.shape.shares_gpu()) continue;
    NodeId best = kNoNode, worst = kNoNode;
    std::int64_t best_key = 0, worst_key = 0;
    for (NodeId n = 0; n < s.node_count(); ++n) {
      if (!host_fits(s, n, r) || scan_least_share_gpu(s, n, r) < 0) continue;
      const std::int32_t left = s.shares().free_milli(n, static_cast<GpuIndex>(scan_least_share_gpu(s, n, r))) -
                                static_cast<std::int32_t>(r.shape.gpu_milli);
      const std::int64_t bk = std::int64_t{left} * 100000 + s.shares().idle_gpus(n);
      const std::int64_t wk = std::int64_t{s.shares().idle_gpus(n)} * 100000 + scan_most_free_share(s, n);
      if (best == kNoNode || bk < best_key) {
        best = n;
        best_key = bk;
      }
      if (worst == kNoNode || wk > worst_key) {
        worst = n;
        worst_key = wk;
      }
    }
    CHECK(make_policy("best-fit")->select(s, r) == best);
    CHECK(make_policy("worst-fit")->select(s, r) == worst);
  }
  // Rolling back restores the share index exactly.
  const ClusterState before = s;
  const auto mark = s.checkpoint();
  for (const auto& held_task : held) REQUIRE(s.release_journaled(held_task.second).ok());
  s.rollback(mark);
  CHECK(s.same_allocation_as(before));
}

}  // namespace

TEST_CASE("scale index: shared tasks on nodes of many GPUs of one model: fit, tightest share, most free share and the "
          "shared pick equal a scan of the node's GPUs") {
  check_shared_index_against_scans(false);
}

// Mixed models used to fall back to a scan of every GPU (quadratic when filling such a node); the
// index now orders each model's GPUs apart, and a request allowing some of them asks each one.
TEST_CASE("scale index: the same on nodes of many GPUs of two models, with requests allowing one or both") {
  check_shared_index_against_scans(true);
}
