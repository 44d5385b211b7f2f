// Cluster events on ClusterState (issue 11 part 3): hand-worked cases, bad input, generations, and the
// property that an evolved state answers like one built from scratch from its view.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/state_view.hpp"
#include "gpusched/core/random.hpp"
#include "cluster_test_util.hpp"
#include "test_util.hpp"

using namespace gpusched;
using gpusched::testing::make_node;
using gpusched::cluster_test::build_state;

namespace {

TaskRequest compile_shape(const ClusterState& s, MilliCpu cpu, GpuCount gpus, MilliGpu milli) {
  TaskShape t;
  t.cpu = cpu;
  t.memory = kGiB;
  t.gpus = gpus;
  t.gpu_milli = milli;
  auto r = s.compile(t);
  REQUIRE(r.ok());
  return std::move(r).value();
}

// The lowest-index GPUs that fit (whole: idle; shared: the first with enough share). A picker of its
// own so that the cluster tests depend on nothing above the cluster layer.
bool pick_lowest(const ClusterState& s, NodeId n, const TaskRequest& r, TaskAssignment& out) {
  if (s.check_fit(n, r) != FitReason::kFits) return false;
  out = TaskAssignment{n, {}, r.shape.needs_gpu() ? r.shape.gpu_milli : 0, r.shape.gpu_memory, r.shape.cpu, r.shape.memory};
  if (!r.shape.needs_gpu()) return true;
  const MilliGpu need = r.shape.shares_gpu() ? r.shape.gpu_milli : kMilliPerGpu;
  for (std::size_t g = 0; g < s.gpu_count(n) && out.gpus.size() < static_cast<std::size_t>(r.shape.gpus); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (s.shares().free_milli(n, gi) >= need && (r.models & model_bit(s.gpu_model(n, gi))) &&
        s.shares().free_memory(n, gi) >= r.shape.gpu_memory)
      out.gpus.push_back(gi);
  }
  return out.gpus.size() == static_cast<std::size_t>(r.shape.gpus);
}

// "n12": std::string += (GCC 12 warns falsely about `"n" + std::to_string(i)` here, PR 105329).
std::string numbered(std::string_view prefix, long long i) {
  std::string out(prefix);
  out += std::to_string(i);
  return out;
}

ClusterState build_state_from(const ClusterState& s) {
  auto fresh = ClusterState::build(ClusterStateView(s), s.registry());
  REQUIRE_MESSAGE(fresh.ok(), (fresh.ok() ? "" : fresh.error().message));
  return std::move(fresh).value();
}

std::set<std::string> bucket_names(const ClusterState& s, const NodeBitset* b) {
  std::set<std::string> out;
  if (b) b->for_each([&](std::uint32_t n) { out.emplace(s.node_name(n)); });
  return out;
}

std::set<std::pair<std::string, std::string>> label_set(const ClusterState& s, NodeId n) {
  std::set<std::pair<std::string, std::string>> out;
  for (const LabelRequirement& l : s.labels().of(n)) out.emplace(s.labels().key(l.key), s.labels().value(l.value));
  return out;
}

const std::vector<std::string> kModels = {"T4", "A100-80GB", "V100-32GB"};
const std::vector<std::string> kLabelKeys = {"rack", "zone", "pool"};
const std::vector<std::string> kLabelValues = {"r1", "r2", "a", "b"};

// Every query of `evolved` answered by `fresh` (built from ClusterStateView(evolved)) the same way.
// Node ids differ (the fresh state has no tombstones): nodes are matched by name.
// The eligible totals recomputed by a scan of every node and GPU, padded to `models` ids.
ClusterState::EligibleTotals scan_eligible_totals(const ClusterState& s, std::size_t models) {
  ClusterState::EligibleTotals t;
  t.gpu_milli_capacity.assign(models, 0);
  t.gpu_milli_free.assign(models, 0);
  for (NodeId n = 0; n < s.node_count(); ++n) {
    if (!s.eligible(n)) continue;
    t.cpu_capacity += s.cpu_capacity(n);
    t.cpu_free += s.cpu_free(n);
    t.memory_capacity += s.memory_capacity(n);
    t.memory_free += s.memory_free(n);
    for (GpuIndex g = 0; g < static_cast<GpuIndex>(s.gpu_count(n)); ++g)
      if (s.gpu_healthy(n, g)) {
        t.gpu_milli_capacity[s.gpu_model(n, g)] += kMilliPerGpu;
        t.gpu_milli_free[s.gpu_model(n, g)] += s.shares().free_milli(n, g);
      }
  }
  return t;
}

ClusterState::EligibleTotals padded(ClusterState::EligibleTotals t, std::size_t models) {
  t.gpu_milli_capacity.resize(models, 0);
  t.gpu_milli_free.resize(models, 0);
  return t;
}

void require_same_answers(const ClusterState& evolved, const ClusterState& fresh, SplitMix64& rng) {
  REQUIRE(fresh.node_count() == evolved.live_node_count());
  // The sums kept through every event equal a scan, and the sums of the rebuilt state.
  const std::size_t models = evolved.registry().size();
  REQUIRE(padded(evolved.shares().eligible_totals(), models) == scan_eligible_totals(evolved, models));
  REQUIRE(padded(fresh.shares().eligible_totals(), models) == scan_eligible_totals(evolved, models));
  REQUIRE(fresh.shares().total_capacity() == evolved.shares().total_capacity());
  REQUIRE(fresh.shares().total_free() == evolved.shares().total_free());
  std::vector<NodeId> id_of(fresh.node_count());
  std::size_t i = 0;
  for (NodeId n = 0; n < evolved.node_count(); ++n) {
    if (evolved.removed(n)) {
      REQUIRE_FALSE(evolved.eligible(n));
      REQUIRE(evolved.find_node(evolved.node_name(n)) != n);
      continue;
    }
    const NodeId f = static_cast<NodeId>(i++);
    id_of[f] = n;
    REQUIRE(fresh.node_name(f) == evolved.node_name(n));
    REQUIRE(evolved.find_node(evolved.node_name(n)) == n);
    REQUIRE(fresh.find_node(evolved.node_name(n)) == f);
    REQUIRE(fresh.cpu_capacity(f) == evolved.cpu_capacity(n));
    REQUIRE(fresh.cpu_free(f) == evolved.cpu_free(n));
    REQUIRE(fresh.memory_capacity(f) == evolved.memory_capacity(n));
    REQUIRE(fresh.memory_free(f) == evolved.memory_free(n));
    REQUIRE(fresh.eligible(f) == evolved.eligible(n));
    REQUIRE(fresh.schedulable(f) == evolved.schedulable(n));
    REQUIRE(fresh.healthy(f) == evolved.healthy(n));
    REQUIRE(fresh.gpu_count(f) == evolved.gpu_count(n));
    REQUIRE(fresh.node_models(f) == evolved.node_models(n));
    REQUIRE(gpusched::detail::cluster_index(fresh).node_model_key(f) == gpusched::detail::cluster_index(evolved).node_model_key(n));
    REQUIRE(fresh.shares().idle_gpus(f) == evolved.shares().idle_gpus(n));
    REQUIRE(fresh.shares().node_free_milli(f) == evolved.shares().node_free_milli(n));
    REQUIRE(fresh.usage(f) == evolved.usage(n));
    for (std::size_t g = 0; g < fresh.gpu_count(f); ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      REQUIRE(fresh.shares().free_milli(f, gi) == evolved.shares().free_milli(n, gi));
      REQUIRE(fresh.shares().free_memory(f, gi) == evolved.shares().free_memory(n, gi));
      REQUIRE(fresh.shares().memory_capacity(f, gi) == evolved.shares().memory_capacity(n, gi));
      REQUIRE(fresh.gpu_model(f, gi) == evolved.gpu_model(n, gi));
      REQUIRE(fresh.gpu_healthy(f, gi) == evolved.gpu_healthy(n, gi));
      REQUIRE(fresh.shares().free_milli_if_healthy(f, gi) == evolved.shares().free_milli_if_healthy(n, gi));
      const mig::MigGpuId fm = fresh.mig().gpu(f, gi), em = evolved.mig().gpu(n, gi);
      REQUIRE((fm == mig::kNoGpu) == (em == mig::kNoGpu));
      if (fm != mig::kNoGpu) {
        REQUIRE(fresh.mig().table().layout(fm) == evolved.mig().table().layout(em));
        REQUIRE(fresh.mig().table().available(fm) == evolved.mig().table().available(em));
      }
    }
    REQUIRE(label_set(fresh, f) == label_set(evolved, n));
    for (const std::string& key : kLabelKeys) {
      const std::uint32_t a = fresh.labels().key_id(key), b = evolved.labels().key_id(key);
      const std::uint32_t va = a == ClusterState::kUnknownLabel ? a : fresh.labels().value_of(f, a);
      const std::uint32_t vb = b == ClusterState::kUnknownLabel ? b : evolved.labels().value_of(n, b);
      REQUIRE((va == ClusterState::kUnknownLabel) == (vb == ClusterState::kUnknownLabel));
      if (va != ClusterState::kUnknownLabel) REQUIRE(fresh.labels().value(va) == evolved.labels().value(vb));
    }
  }
  // The index: the same nodes in every bucket; buckets the evolved state kept beyond the fresh
  // one's keys and widths are empty.
  for (std::uint8_t key : gpusched::detail::cluster_index(evolved).model_keys())
    for (std::int32_t idle = 0; idle <= evolved.max_gpus_per_node(); ++idle)
      REQUIRE(bucket_names(evolved, gpusched::detail::cluster_index(evolved).idle_bucket(key, idle)) == bucket_names(fresh, gpusched::detail::cluster_index(fresh).idle_bucket(key, idle)));
  for (std::uint8_t key : gpusched::detail::cluster_index(fresh).model_keys())
    for (std::int32_t idle = 0; idle <= fresh.max_gpus_per_node(); ++idle)
      REQUIRE(bucket_names(evolved, gpusched::detail::cluster_index(evolved).idle_bucket(key, idle)) == bucket_names(fresh, gpusched::detail::cluster_index(fresh).idle_bucket(key, idle)));
  REQUIRE(bucket_names(evolved, &gpusched::detail::cluster_index(evolved).partial_nodes()) == bucket_names(fresh, &gpusched::detail::cluster_index(fresh).partial_nodes()));
  // check_fit on random requests, compiled in each state from the same strings.
  for (int q = 0; q < 12; ++q) {
    TaskShape t;
    t.cpu = static_cast<MilliCpu>(rng.uniform(0, 4) * 1000);
    t.memory = rng.uniform(0, 2) * kGiB;
    t.gpus = static_cast<GpuCount>(rng.uniform(0, 3));
    t.gpu_milli = t.gpus == 1 ? static_cast<MilliGpu>(rng.uniform(1, 10) * 100) : kMilliPerGpu;
    std::vector<std::string_view> models;
    if (rng.chance(30)) models.push_back(kModels[rng.below(kModels.size())]);
    std::vector<Label> selector;
    if (rng.chance(30)) selector.emplace_back(kLabelKeys[rng.below(kLabelKeys.size())], kLabelValues[rng.below(kLabelValues.size())]);
    auto rf = fresh.compile(t, models, selector);
    auto re = evolved.compile(t, models, selector);
    REQUIRE(rf.ok());
    REQUIRE(re.ok());
    for (NodeId f = 0; f < fresh.node_count(); ++f) REQUIRE(fresh.check_fit(f, *rf) == evolved.check_fit(id_of[f], *re));
  }
}

NodeSpec random_node(SplitMix64& rng, std::string name) {
  NodeSpec n = make_node(std::move(name), static_cast<MilliCpu>(rng.uniform(2, 16) * 1000), rng.uniform(4, 64) * kGiB,
                         static_cast<int>(rng.uniform(0, 4)), kModels[rng.below(kModels.size())]);
  if (!n.gpus.empty() && rng.chance(20)) n.gpus.back().model = kModels[rng.below(kModels.size())];  // mixed
  for (GpuSpec& g : n.gpus) {
    if (rng.chance(30)) g.used_milli = static_cast<MilliGpu>(rng.uniform(1, 10) * 100);
    if (rng.chance(10)) g.healthy = false;
  }
  n.cpu_used = rng.chance(30) ? n.cpu / 4 : 0;
  n.schedulable = !rng.chance(10);
  n.healthy = !rng.chance(10);
  for (const std::string& key : kLabelKeys)
    if (rng.chance(50)) n.labels.emplace_back(key, kLabelValues[rng.below(kLabelValues.size())]);
  return n;
}

}  // namespace

TEST_CASE("cordon and failure take a node out of the index and back; failure reports the node's work") {
  // Node a: 4 T4, one with 600 used, 8 CPUs with 2 used by a task reserved below.
  Cluster c({make_node("a", 8000, 16 * kGiB, 4, "T4", {0, 0, 0, 600}), make_node("b", 8000, 16 * kGiB, 2, "T4")});
  ClusterState s = build_state(c);
  const auto t4 = *s.registry().find("T4");
  TaskAssignment a;
  const TaskRequest two = compile_shape(s, 2000, 2, 1000);
  REQUIRE(pick_lowest(s, 0, two, a));
  REQUIRE(s.reserve(two, a).ok());
  s.commit();
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(t4, 1)->contains(0));  // GPUs 0,1 taken, 2 idle, 3 has 400 free
  CHECK(gpusched::detail::cluster_index(s).partial_nodes().contains(0));

  const std::uint64_t g0 = s.generation(), l0 = s.layout_generation(), c0 = s.capacity_generation();
  REQUIRE(s.cordon(0).ok());
  CHECK_FALSE(s.schedulable(0));
  CHECK_FALSE(gpusched::detail::cluster_index(s).idle_bucket(t4, 1)->contains(0));
  CHECK_FALSE(gpusched::detail::cluster_index(s).partial_nodes().contains(0));
  CHECK(s.check_fit(0, compile_shape(s, 0, 0, 0)) == FitReason::kNodeUnschedulable);
  CHECK(s.generation() == g0 + 1);
  CHECK(s.layout_generation() == l0 + 1);
  CHECK(s.capacity_generation() == c0);  // what the node holds when empty did not change
  CHECK(s.node_version(0) == s.generation());
  REQUIRE(s.cordon(0).ok());  // repeated: no change, no new generation
  CHECK(s.generation() == g0 + 1);
  REQUIRE(s.uncordon(0).ok());
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(t4, 1)->contains(0));
  CHECK(gpusched::detail::cluster_index(s).partial_nodes().contains(0));

  // Used on a: 2 CPUs, 1 GiB, GPUs 0 and 1 whole and 600 of GPU 3 = 2600 milli on 3 busy GPUs.
  auto usage = s.fail_node(0);
  REQUIRE(usage.ok());
  CHECK(*usage == NodeUsage{2000, kGiB, 2600, 3});
  CHECK_FALSE(s.healthy(0));
  CHECK(s.check_fit(0, compile_shape(s, 0, 0, 0)) == FitReason::kNodeUnhealthy);
  CHECK(s.shares().total_capacity() == 6000);  // a failed node's GPUs still count (ineligible alike)
  REQUIRE(s.release(a).ok());  // the caller releases the work of a failed node as usual
  REQUIRE(s.recover_node(0).ok());
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(t4, 3)->contains(0));
  REQUIRE(s.set_gpu_health(0, 1, false).ok());
  CHECK(s.capacity_generation() == c0);  // cordons, failures and GPU health: availability only
  REQUIRE(s.set_label(0, "rack", "r2").ok());
  CHECK(s.capacity_generation() == c0 + 1);  // a label changes the domains a gang counts
}

TEST_CASE("an unhealthy GPU reads 0 and gets back exactly what was free on it") {
  // 2 T4 on a node; a 300-milli task on GPU 1 (700 free); GPU 1 fails, the task ends, GPU 1 recovers.
  Cluster c({make_node("a", 8000, 16 * kGiB, 2, "T4")});
  ClusterState s = build_state(c);
  const TaskRequest shared = compile_shape(s, 1000, 1, 300);
  TaskAssignment a{0, {1}, 300, 0, 1000, kGiB};
  REQUIRE(s.reserve(shared, a).ok());
  CHECK(s.shares().total_free() == 1700);
  REQUIRE(s.set_gpu_health(0, 1, false).ok());
  CHECK(s.shares().free_milli(0, 1) == 0);
  CHECK(s.shares().free_milli_if_healthy(0, 1) == 700);
  CHECK(s.shares().total_capacity() == 1000);
  CHECK(s.shares().total_free() == 1000);
  CHECK(s.shares().idle_gpus(0) == 1);
  CHECK_FALSE(gpusched::detail::cluster_index(s).partial_nodes().contains(0));
  REQUIRE(s.release(a).ok());  // frees the withheld share, not the visible one
  CHECK(s.shares().free_milli(0, 1) == 0);
  CHECK(s.shares().free_milli_if_healthy(0, 1) == 1000);
  CHECK_FALSE(s.release(a).ok());  // would free more than is used
  REQUIRE(s.set_gpu_health(0, 1, true).ok());
  CHECK(s.shares().free_milli(0, 1) == 1000);
  CHECK(s.shares().idle_gpus(0) == 2);
  CHECK(s.shares().total_free() == 2000);
  CHECK(s.shares().total_capacity() == 2000);
}

TEST_CASE("add_node and remove_node: stable ids, tombstones, names free again, index grows") {
  Cluster c({make_node("a", 8000, 16 * kGiB, 2, "T4")});
  ClusterState s = build_state(c);
  const std::uint64_t l0 = s.layout_generation();
  // A node with more GPUs than any before and a model the state had not seen.
  Cluster more({make_node("b", 16000, 32 * kGiB, 8, "A100-80GB")});
  more.nodes()[0].labels = {{"rack", "r1"}};
  auto b = s.add_node(more);
  REQUIRE(b.ok());
  CHECK(*b == 1);
  CHECK(s.node_count() == 2);
  CHECK(s.max_gpus_per_node() == 8);
  const auto a100 = *s.registry().find("A100-80GB");
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(a100, 8)->contains(1));
  CHECK(s.shares().total_capacity() == 10000);
  CHECK(s.labels().value_of(1, s.labels().key_id("rack")) == s.labels().value_id("r1"));
  CHECK(s.layout_generation() == l0 + 1);
  CHECK(s.capacity_generation() == l0 + 1);

  // Work on b, then b leaves: its usage is reported, its resources leave the totals, its name is free.
  const TaskRequest four = compile_shape(s, 1000, 4, 1000);
  TaskAssignment on_b;
  REQUIRE(pick_lowest(s, 1, four, on_b));
  REQUIRE(s.reserve(four, on_b).ok());
  auto gone = s.remove_node(1);
  REQUIRE(gone.ok());
  CHECK(*gone == NodeUsage{1000, kGiB, 4000, 4});
  CHECK(s.node_count() == 2);
  CHECK(s.live_node_count() == 1);
  CHECK(s.removed(1));
  CHECK_FALSE(s.eligible(1));
  CHECK(s.find_node("b") == kNoNode);
  CHECK_FALSE(gpusched::detail::cluster_index(s).idle_bucket(a100, 4)->contains(1));
  CHECK(s.shares().total_capacity() == 2000);
  CHECK(s.shares().total_free() == 2000);
  CHECK(s.labels().of(1).empty());
  CHECK(s.release(on_b).ok());  // accepted, nothing changes: the resources left with the node
  CHECK(s.shares().total_free() == 2000);
  s.rollback(0);  // the journal still holds the reservation on b: undone as a no-op
  CHECK(s.shares().total_free() == 2000);

  auto again = s.add_node(more);
  REQUIRE(again.ok());
  CHECK(*again == 2);  // a new id; id 1 stays a tombstone
  CHECK(s.find_node("b") == 2);
  CHECK(s.cordon(1).error().code == ErrorCode::kState);
}

TEST_CASE("relabel sets, changes and removes labels in place") {
  Cluster c({make_node("a", 8000, 16 * kGiB, 0, ""), make_node("b", 8000, 16 * kGiB, 0, "")});
  c.nodes()[0].labels = {{"rack", "r1"}};
  ClusterState s = build_state(c);
  std::vector<Label> sel = {{"rack", "r2"}};
  CHECK(s.check_fit(0, s.compile(TaskShape{}, {}, sel).value()) == FitReason::kSelectorMismatch);
  REQUIRE(s.set_label(0, "rack", "r2").ok());
  CHECK(s.check_fit(0, s.compile(TaskShape{}, {}, sel).value()) == FitReason::kFits);
  REQUIRE(s.set_label(0, "zone", "a").ok());  // node a's run moves to the end (b's follows it)
  CHECK(label_set(s, 0) == std::set<std::pair<std::string, std::string>>{{"rack", "r2"}, {"zone", "a"}});
  REQUIRE(s.remove_label(0, "rack").ok());
  CHECK(label_set(s, 0) == std::set<std::pair<std::string, std::string>>{{"zone", "a"}});
  CHECK(s.check_fit(0, s.compile(TaskShape{}, {}, sel).value()) == FitReason::kSelectorMismatch);
  const std::uint64_t g = s.generation();
  REQUIRE(s.remove_label(0, "rack").ok());  // absent: nothing changes
  REQUIRE(s.set_label(0, "zone", "a").ok());  // same value: nothing changes
  CHECK(s.generation() == g);
  CHECK(s.labels().of(1).empty());
  // Many relabels of two nodes: the holes are compacted and every answer stays.
  for (int i = 0; i < 5000; ++i) {
    REQUIRE(s.set_label(static_cast<NodeId>(i % 2), numbered("k", i % 7), "v").ok());
    REQUIRE(s.remove_label(static_cast<NodeId>(i % 2), numbered("k", (i + 3) % 7)).ok());
  }
  CHECK(label_set(s, 0).size() + label_set(s, 1).size() <= 2 * 7 + 1);
  CHECK(s.memory_usage() < 64 * 1024);
}

TEST_CASE("events refuse bad input with a code and the field, and change nothing") {
  Cluster c({make_node("a", 8000, 16 * kGiB, 2, "T4")});
  ClusterState s = build_state(c);
  const std::uint64_t g = s.generation();
  auto unknown = s.cordon(7);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kUnknownName);
  CHECK(unknown.error().field == "node");
  CHECK(unknown.error().message == "cordon: no node 7 (1 node ids)");
  auto gpu = s.set_gpu_health(0, 2, false);
  REQUIRE_FALSE(gpu.ok());
  CHECK(gpu.error().code == ErrorCode::kInvalidValue);
  CHECK(gpu.error().field == "gpu");
  CHECK(gpu.error().message == "set_gpu_health on a: no GPU 2 (node has 2)");
  Cluster dup({make_node("a", 1000, kGiB, 0, "")});
  auto d = s.add_node(dup);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code == ErrorCode::kDuplicate);
  CHECK(d.error().field == "nodes[0].name");
  Cluster bad({make_node("z", 1000, kGiB, 1, "Z9000")});
  auto m = s.add_node(bad);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == ErrorCode::kUnknownName);
  CHECK(m.error().field == "nodes[0].gpus[0].model");
  CHECK(s.add_node(bad, 3).error().field == "index");
  auto label = s.set_label(0, "", "x");
  REQUIRE_FALSE(label.ok());
  CHECK(label.error().code == ErrorCode::kMissingField);
  CHECK(s.fail_node(9).error().code == ErrorCode::kUnknownName);
  CHECK(s.remove_node(9).error().field == "node");
  CHECK(s.generation() == g);
  CHECK(s.node_count() == 1);
}

TEST_CASE("build and reserve errors carry a code and the field path") {
  Cluster c({make_node("a", 1000, kGiB, 1, "Z9000")});
  auto s = ClusterState::build(c, GpuModelRegistry::builtin());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == ErrorCode::kUnknownName);
  CHECK(s.error().field == "nodes[0].gpus[0].model");
  Cluster d({make_node("a", 1000, kGiB, 0, ""), make_node("a", 1000, kGiB, 0, "")});
  auto dup = ClusterState::build(d, GpuModelRegistry::builtin());
  CHECK(dup.error().code == ErrorCode::kDuplicate);
  CHECK(dup.error().field == "nodes[1].name");
  ClusterState ok = build_state(Cluster({make_node("a", 1000, kGiB, 1, "T4")}));
  TaskShape bad;
  bad.gpus = 2;
  bad.gpu_milli = 500;
  CHECK(ok.compile(bad).error().code == ErrorCode::kInconsistent);
  CHECK(ok.compile(bad).error().field == "gpu_milli");
  const TaskRequest one = compile_shape(ok, 0, 1, 1000);
  auto twice = ok.reserve(one, TaskAssignment{0, {3}, 1000, 0, 0, kGiB});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().field == "assignment.gpus[0]");
  CHECK(twice.error().code == ErrorCode::kInvalidValue);
  CHECK(ok.reserve(one, TaskAssignment{5, {0}, 1000, 0, 0, kGiB}).error().code == ErrorCode::kUnknownName);
}

TEST_CASE("fit reasons map onto the outcome vocabulary, one name per concept") {
  CHECK(fit_reason_kind(FitReason::kInsufficientGpus) == ReasonKind::kInsufficientGpus);
  CHECK(fit_reason_kind(FitReason::kSelectorMismatch) == ReasonKind::kSelectorMismatch);
  for (std::size_t r = 1; r < kFitReasonCount; ++r) {
    const auto reason = static_cast<FitReason>(r);
    CHECK(fit_reason_text(reason) == reason_name(fit_reason_kind(reason)));
    CHECK(fit_reason_kind(reason) != ReasonKind::kOther);
  }
  CHECK(fit_reason_text(FitReason::kFits) == "fits");
  CHECK(fit_reason_text(FitReason::kInsufficientCpu) == "insufficient CPU");
}

TEST_CASE("a copy is another instance: caches keyed to (instance, generation) cannot confuse them") {
  ClusterState a = build_state(Cluster({make_node("a", 1000, kGiB, 1, "T4")}));
  ClusterState b = a;
  CHECK(a.instance_id() != b.instance_id());
  CHECK(a.generation() == b.generation());
  const std::uint64_t id = a.instance_id();
  REQUIRE(a.reserve(compile_shape(a, 0, 1, 1000), TaskAssignment{0, {0}, 1000, 0, 0, kGiB}).ok());
  CHECK(a.instance_id() == id);
  CHECK(a.generation() == b.generation() + 1);
  a.rollback(0);
  CHECK(a.generation() == b.generation() + 2);  // a rollback is a change too
  CHECK(a.same_allocation_as(b));
}

TEST_CASE("property: after random events and reservations the state answers like one built from its view") {
  // 300 seeded sequences of 60 steps on clusters of 4..10 nodes.
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    SplitMix64 rng(seed * 7919);
    std::vector<NodeSpec> nodes;
    const auto n0 = rng.uniform(4, 10);
    for (std::int64_t i = 0; i < n0; ++i) nodes.push_back(random_node(rng, numbered("n", i)));
    ClusterState s = build_state(Cluster(nodes));
    int next_name = static_cast<int>(n0);
    std::vector<TaskAssignment> running;
    std::vector<std::string> removed_names;
    bool in_transaction = false;
    ClusterState::Checkpoint mark = 0;
    std::size_t running_at_mark = 0;
    for (int step = 0; step < 60; ++step) {
      const NodeId n = static_cast<NodeId>(rng.below(s.node_count()));
      const auto op = rng.below(15);
      const std::uint64_t generation = s.generation();
      bool changed = true;
      switch (op) {
        case 0: case 1: case 2: case 3: {  // reserve
          const GpuCount gpus = static_cast<GpuCount>(rng.uniform(0, 2));
          const TaskRequest r = compile_shape(s, static_cast<MilliCpu>(rng.uniform(0, 3) * 1000), gpus,
                                              gpus == 1 ? static_cast<MilliGpu>(rng.uniform(1, 10) * 100) : kMilliPerGpu);
          TaskAssignment a;
          changed = pick_lowest(s, n, r, a);
          if (changed) {
            REQUIRE(s.reserve(r, a).ok());
            running.push_back(a);
          }
          break;
        }
        case 4: {  // release
          changed = !running.empty() && !in_transaction;
          if (changed) {
            const std::size_t i = rng.below(running.size());
            REQUIRE(s.release(running[i]).ok());
            changed = !s.removed(running[i].node);
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
          }
          break;
        }
        case 5: case 6: {  // cordon/uncordon or failure/recovery
          const bool cordon_event = op == 5;
          auto state_flag = [&] { return cordon_event ? s.schedulable(n) : s.healthy(n); };
          const bool before = state_flag();
          const bool take_out = rng.chance(50);
          if (cordon_event) (void)(take_out ? s.cordon(n) : s.uncordon(n));
          else if (take_out) (void)s.fail_node(n);
          else (void)s.recover_node(n);
          changed = !s.removed(n) && before != state_flag();
          break;
        }
        case 7: {
          changed = false;
          if (!s.removed(n) && s.gpu_count(n) > 0) {
            const auto g = static_cast<GpuIndex>(rng.below(s.gpu_count(n)));
            const bool before = s.gpu_healthy(n, g);
            REQUIRE(s.set_gpu_health(n, g, !before).ok());
            changed = true;
          }
          break;
        }
        case 8: {  // add a node, sometimes under the name of a removed one
          std::string name = numbered("n", next_name++);
          if (!removed_names.empty() && rng.chance(50)) {
            name = removed_names.back();
            removed_names.pop_back();
          }
          auto id = s.add_node(Cluster({random_node(rng, name)}));
          REQUIRE(id.ok());
          CHECK(*id == s.node_count() - 1);
          break;
        }
        case 9: {
          changed = !s.removed(n) && s.live_node_count() > 1;
          if (changed) {
            const NodeUsage u = s.usage(n);
            REQUIRE(s.remove_node(n).value() == u);
            removed_names.emplace_back(s.node_name(n));
          }
          break;
        }
        case 10: case 11: {
          const std::string& key = kLabelKeys[rng.below(kLabelKeys.size())];
          const std::uint64_t version = s.removed(n) ? 0 : s.node_version(n);
          if (op == 10) (void)s.set_label(n, key, kLabelValues[rng.below(kLabelValues.size())]);
          else (void)s.remove_label(n, key);
          changed = !s.removed(n) && s.node_version(n) != version;
          break;
        }
        case 12:  // a what-if transaction: checkpoint now, roll back a few steps later
          changed = false;
          if (!in_transaction) {
            s.commit();
            in_transaction = true;
            mark = s.checkpoint();
            running_at_mark = running.size();
          } else {
            s.rollback(mark);
            running.resize(running_at_mark);
            in_transaction = false;
            changed = true;
          }
          break;
        case 14: {  // MIG mode on or off (A100-80GB GPUs only have a MIG table): only on an idle GPU
          changed = false;
          if (!s.removed(n) && s.gpu_count(n) > 0) {
            const auto g = static_cast<GpuIndex>(rng.below(s.gpu_count(n)));
            const bool mig_before = s.mig().mode(n, g);
            const bool capable = s.registry().model(s.gpu_model(n, g)).name == "A100-80GB";
            const bool idle = mig_before || s.shares().free_milli_if_healthy(n, g) == kMilliPerGpu;
            const Status st = s.set_mig_mode(n, g, !mig_before);
            REQUIRE(st.ok() == (capable && idle));
            REQUIRE(s.mig().mode(n, g) == (st.ok() ? !mig_before : mig_before));
            REQUIRE((s.mig().gpu(n, g) != mig::kNoGpu) == s.mig().mode(n, g));
            changed = st.ok();
          }
          break;
        }
        default:
          changed = false;
          if (!in_transaction) s.commit();
          break;
      }
      // Every change moves the generation (a rollback of nothing may not); nothing else does.
      if (changed && op != 12) REQUIRE(s.generation() > generation);
      if (!changed && op != 12) REQUIRE(s.generation() == generation);
      if (step % 15 == 14 || step == 59) {
        const ClusterState fresh = build_state_from(s);
        require_same_answers(s, fresh, rng);
      }
    }
    // compact() drops the tombstones: the same answers, every live id mapped to its new id, and the
    // work that runs released on the new ids (so its allocations came along).
    s.commit();
    auto compacted = compact(s);
    REQUIRE(compacted.ok());
    require_same_answers(s, compacted->state, rng);
    REQUIRE(compacted->new_id.size() == s.node_count());
    for (NodeId n = 0; n < s.node_count(); ++n) {
      if (s.removed(n)) {
        REQUIRE(compacted->new_id[n] == kNoNode);
        continue;
      }
      REQUIRE(compacted->state.node_name(compacted->new_id[n]) == s.node_name(n));
    }
    for (TaskAssignment a : running) {
      if (s.removed(a.node)) continue;
      a.node = compacted->new_id[a.node];
      REQUIRE(compacted->state.release(a).ok());
    }
  }
}

TEST_CASE("compact refuses uncommitted reservations and drops tombstones otherwise") {
  Cluster c({make_node("a", 8000, 16 * kGiB, 2, "T4"), make_node("b", 8000, 16 * kGiB, 2, "T4"),
             make_node("c", 8000, 16 * kGiB, 2, "T4")});
  ClusterState s = build_state(c);
  const TaskRequest one = compile_shape(s, 1000, 1, kMilliPerGpu);
  TaskAssignment a;
  REQUIRE(pick_lowest(s, 2, one, a));
  REQUIRE(s.reserve(one, a).ok());
  auto refused = compact(s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kState);
  CHECK(refused.error().field == "state");
  s.commit();
  REQUIRE(s.remove_node(1).ok());
  auto done = compact(s);
  REQUIRE(done.ok());
  CHECK(done->state.node_count() == 2);
  CHECK(done->new_id == std::vector<NodeId>{0, kNoNode, 1});
  CHECK(done->state.shares().idle_gpus(1) == 1);  // c's reservation came along
  CHECK(done->state.find_node("b") == kNoNode);
  CHECK(done->state.instance_id() != s.instance_id());
}
