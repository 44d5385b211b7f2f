#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/random.hpp"
#include "cluster_test_util.hpp"
#include "test_util.hpp"

using namespace gpusched;
using gpusched::testing::make_node;

namespace {

ClusterState build(const Cluster& c) { return cluster_test::build_state(c); }

TaskRequest request(const ClusterState& s, TaskShape shape) {
  auto r = s.compile(shape);
  REQUIRE(r.ok());
  return std::move(r).value();
}

}  // namespace

TEST_CASE("build reads the view: free amounts, idle GPUs, index buckets") {
  Cluster c({make_node("a", 32000, 64 * kGiB, 8, "A100-80GB", {1000, 500, 0}),
             make_node("b", 16000, 32 * kGiB, 4, "T4"), make_node("c", 8000, 8 * kGiB, 0, "")});
  c.nodes()[0].cpu_used = 2000;
  const ClusterState s = build(c);
  CHECK(s.node_count() == 3);
  CHECK(s.total_gpu_count() == 12);
  CHECK(s.cpu_free(0) == 30000);
  CHECK(s.shares().idle_gpus(0) == 6);
  CHECK(s.shares().node_free_milli(0) == 6500);
  CHECK(s.shares().free_milli(0, 1) == 500);
  CHECK(s.shares().free_memory(0, 0) == 80 * kGiB);
  CHECK(gpusched::detail::cluster_index(s).partial_nodes().contains(0));
  CHECK_FALSE(gpusched::detail::cluster_index(s).partial_nodes().contains(1));
  const auto a100 = *s.registry().find("A100-80GB");
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(a100, 6)->contains(0));
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(*s.registry().find("T4"), 4)->contains(1));
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(ClusterState::kNoGpuKey, 0)->contains(2));
  CHECK(s.shares().total_capacity() == 12000);
  CHECK(s.shares().total_free() == 10500);
  CHECK(s.find_node("b") == 1);
  CHECK(s.find_node("zzz") == kNoNode);
}

TEST_CASE("build rejects bad views with the node and field named") {
  SUBCASE("unknown model") {
    Cluster c({make_node("a", 1000, kGiB, 1, "Z9000")});
    auto s = ClusterState::build(c, GpuModelRegistry::builtin());
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == "nodes[0] (a).gpus[0].model: unknown GPU model \"Z9000\"");
  }
  SUBCASE("duplicate names") {
    Cluster c({make_node("a", 1000, kGiB, 0, ""), make_node("a", 1000, kGiB, 0, "")});
    auto s = ClusterState::build(c, GpuModelRegistry::builtin());
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find("duplicate node name \"a\"") != std::string::npos);
  }
  SUBCASE("negative and over-used amounts") {
    Cluster c({make_node("a", -5, kGiB, 0, "")});
    CHECK_FALSE(ClusterState::build(c, GpuModelRegistry::builtin()).ok());
    Cluster d({make_node("a", 1000, kGiB, 1, "T4", {1200})});
    auto s = ClusterState::build(d, GpuModelRegistry::builtin());
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find("free share must be in 0..1000, got -200") != std::string::npos);
  }
}

TEST_CASE("check_fit reports the first failing reason in the documented order") {
  Cluster c({make_node("a", 8000, 16 * kGiB, 2, "T4", {0, 600})});
  c.nodes()[0].labels = {{"rack", "r1"}};
  ClusterState s = build(c);
  CHECK(s.check_fit(0, request(s, {4000, kGiB, 1, 1000, 0})) == FitReason::kFits);
  CHECK(s.check_fit(0, request(s, {4000, kGiB, 2, 1000, 0})) == FitReason::kInsufficientGpus);
  CHECK(s.check_fit(0, request(s, {9000, kGiB, 1, 1000, 0})) == FitReason::kInsufficientCpu);
  CHECK(s.check_fit(0, request(s, {1000, 17 * kGiB, 0, 0, 0})) == FitReason::kInsufficientMemory);
  CHECK(s.check_fit(0, request(s, {1000, kGiB, 1, 500, 0})) == FitReason::kFits);
  // GPU 0 is idle, GPU 1 has 400 free: a 500 share fits GPU 0 only; take GPU 0's share first.
  auto half = request(s, {1000, kGiB, 1, 500, 0});
  TaskAssignment a{0, {0}, 500, 0, 1000, kGiB};
  REQUIRE(s.reserve(half, a).ok());
  CHECK(s.check_fit(0, request(s, {1000, kGiB, 1, 600, 0})) == FitReason::kInsufficientGpuShare);
  CHECK(s.check_fit(0, request(s, {1000, kGiB, 1, 400, 0})) == FitReason::kFits);
  CHECK(s.check_fit(0, request(s, {1000, kGiB, 1, 400, 20 * kGiB})) == FitReason::kInsufficientGpuMemory);

  const std::string_view a100[] = {"A100-80GB"};
  CHECK(s.check_fit(0, *s.compile(TaskShape{1000, kGiB, 1, 1000, 0}, a100)) == FitReason::kGpuModelNotAllowed);
  const Label rack2[] = {{"rack", "r2"}};
  CHECK(s.check_fit(0, *s.compile(TaskShape{1000, kGiB, 0, 0, 0}, {}, rack2)) == FitReason::kSelectorMismatch);
  const Label rack1[] = {{"rack", "r1"}};
  CHECK(s.check_fit(0, *s.compile(TaskShape{1000, kGiB, 0, 0, 0}, {}, rack1)) == FitReason::kFits);
}

TEST_CASE("a copied state stands alone (its name lookup does not point into the original)") {
  auto original = std::make_unique<ClusterState>(build(Cluster({make_node("alpha", 1000, kGiB, 0, ""),
                                                                make_node("beta", 1000, kGiB, 0, "")})));
  const ClusterState copy = *original;
  ClusterState assigned = build(Cluster({make_node("x", 1000, kGiB, 0, "")}));
  assigned = *original;
  original.reset();
  CHECK(copy.find_node("beta") == 1);
  CHECK(assigned.find_node("alpha") == 0);
  CHECK(copy.node_name(1) == "beta");
}

TEST_CASE("cordoned and failed nodes take nothing and are not indexed") {
  Cluster c({make_node("a", 8000, kGiB, 1, "T4"), make_node("b", 8000, kGiB, 1, "T4")});
  c.nodes()[0].schedulable = false;
  c.nodes()[1].healthy = false;
  ClusterState s = build(c);
  auto r = request(s, {0, 0, 0, 0, 0});
  CHECK(s.check_fit(0, r) == FitReason::kNodeUnschedulable);
  CHECK(s.check_fit(1, r) == FitReason::kNodeUnhealthy);
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(*s.registry().find("T4"), 1)->empty());
}

TEST_CASE("an unhealthy GPU is never free") {
  Cluster c({make_node("a", 8000, kGiB, 2, "T4")});
  c.nodes()[0].gpus[1].healthy = false;
  ClusterState s = build(c);
  CHECK(s.shares().idle_gpus(0) == 1);
  CHECK(s.shares().total_capacity() == 1000);
  CHECK(s.check_fit(0, request(s, {0, 0, 2, 1000, 0})) == FitReason::kInsufficientGpus);
}

TEST_CASE("compile rejects invalid shapes and unknown models") {
  Cluster c({make_node("a", 8000, kGiB, 1, "T4")});
  ClusterState s = build(c);
  CHECK_FALSE(s.compile(TaskShape{-1, 0, 0, 0, 0}).ok());
  CHECK_FALSE(s.compile(TaskShape{0, 0, 2, 500, 0}).ok());
  CHECK_FALSE(s.compile(TaskShape{0, 0, 1, 1001, 0}).ok());
  CHECK_FALSE(s.compile(TaskShape{0, 0, -3, 1000, 0}).ok());
  const std::string_view unknown[] = {"Z9000"};
  auto r = s.compile(TaskShape{0, 0, 1, 1000, 0}, unknown);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "gpu_models[0]: unknown GPU model \"Z9000\"");
}

TEST_CASE("reserve refuses invalid assignments and changes nothing; rollback restores exactly") {
  Cluster c({make_node("a", 8000, 8 * kGiB, 4, "A100-80GB", {0, 0, 700}),
             make_node("b", 8000, 8 * kGiB, 4, "A100-80GB")});
  ClusterState s = build(c);
  const ClusterState before = s;
  auto two = request(s, {1000, kGiB, 2, 1000, 0});
  CHECK_FALSE(s.reserve(two, TaskAssignment{0, {0, 0}, 1000, 0, 1000, kGiB}).ok());  // same GPU twice
  CHECK_FALSE(s.reserve(two, TaskAssignment{0, {0, 2}, 1000, 0, 1000, kGiB}).ok());  // GPU 2 partly used
  CHECK_FALSE(s.reserve(two, TaskAssignment{0, {0, 9}, 1000, 0, 1000, kGiB}).ok());  // no GPU 9
  CHECK_FALSE(s.reserve(two, TaskAssignment{0, {0}, 1000, 0, 1000, kGiB}).ok());     // too few
  CHECK_FALSE(s.reserve(two, TaskAssignment{7, {0, 1}, 1000, 0, 1000, kGiB}).ok());  // no node 7
  CHECK(s.same_allocation_as(before));
  CHECK(s.journal_size() == 0);

  const auto mark = s.checkpoint();
  REQUIRE(s.reserve(two, TaskAssignment{0, {0, 1}, 1000, 0, 1000, kGiB}).ok());
  REQUIRE(s.reserve(two, TaskAssignment{1, {2, 3}, 1000, 0, 1000, kGiB}).ok());
  CHECK(s.shares().idle_gpus(0) == 1);
  CHECK(s.cpu_free(1) == 7000);
  CHECK_FALSE(s.same_allocation_as(before));
  s.rollback(mark);
  CHECK(s.same_allocation_as(before));

  REQUIRE(s.reserve(two, TaskAssignment{1, {0, 1}, 1000, 0, 1000, kGiB}).ok());
  s.commit();
  CHECK(s.journal_size() == 0);
  s.rollback(0);  // nothing to undo after a commit
  CHECK(s.shares().idle_gpus(1) == 2);
  // release gives it back; releasing twice is refused.
  REQUIRE(s.release(TaskAssignment{1, {0, 1}, 1000, 0, 1000, kGiB}).ok());
  CHECK(s.same_allocation_as(before));
  CHECK_FALSE(s.release(TaskAssignment{1, {0, 1}, 1000, 0, 1000, kGiB}).ok());
}

TEST_CASE("try_reserve accepts exactly what reserve accepts, over random assignments") {
  // Two models, partly used and unhealthy GPUs, a cordoned node, a node with a label; requests of
  // whole GPUs, shares and GPU memory, some restricted to one model or to the label; assignments
  // right, wrong in one field, or anywhere (duplicates, out of range). reserve and try_reserve run on
  // two copies and must agree, and leave the copies equal.
  NodeSpec labelled = make_node("d", 16000, 64 * kGiB, 4, "H100-80GB");
  labelled.labels = {{"pool", "x"}};
  Cluster c({make_node("a", 8000, 8 * kGiB, 4, "A100-80GB", {0, 300, 1000}),
             make_node("b", 8000, 16 * kGiB, 8, "H100-80GB", {500}), make_node("c", 4000, 8 * kGiB, 2, "A100-80GB"),
             labelled});
  ClusterState base = build(c);
  REQUIRE(base.cordon(2).ok());
  REQUIRE(base.set_gpu_health(1, 3, false).ok());
  SplitMix64 rng(2026);
  ClusterState quiet = base, loud = base;
  int accepted = 0, refused = 0;
  for (int step = 0; step < 4000; ++step) {
    TaskShape shape;
    shape.cpu = static_cast<MilliCpu>(rng.below(3) * 1000);
    shape.memory = static_cast<Bytes>(rng.below(3)) * kGiB;
    shape.gpus = static_cast<GpuCount>(rng.below(4));
    shape.gpu_milli = shape.gpus == 1 && rng.below(2) ? static_cast<MilliGpu>(100 * (1 + rng.below(9))) : kMilliPerGpu;
    shape.gpu_memory = rng.below(4) == 0 ? static_cast<Bytes>(10 + rng.below(80)) * kGiB : 0;
    if (shape.gpus == 0) shape.gpu_milli = shape.gpu_memory = 0;
    std::vector<std::string_view> models;
    if (rng.below(4) == 0) models.push_back(rng.below(2) ? "A100-80GB" : "H100-80GB");
    std::vector<Label> selector;
    if (rng.below(6) == 0) selector.push_back({"pool", "x"});
    auto compiled = quiet.compile(shape, models, selector);
    REQUIRE(compiled.ok());
    const TaskRequest& r = compiled.value();
    TaskAssignment a;
    a.node = static_cast<NodeId>(rng.below(5));  // node 4 does not exist
    const std::size_t n_gpus = rng.below(5) == 0 ? rng.below(4) : static_cast<std::size_t>(shape.gpus);
    for (std::size_t i = 0; i < n_gpus; ++i) a.gpus.push_back(static_cast<GpuIndex>(rng.below(9)));
    a.gpu_milli = rng.below(10) == 0 ? 700 : shape.gpu_milli;
    a.gpu_memory = shape.gpu_memory;
    a.cpu = rng.below(10) == 0 ? 1 : shape.cpu;
    a.memory = shape.memory;
    const bool loud_ok = loud.reserve(r, a).ok();
    CAPTURE(step);
    CHECK(quiet.try_reserve(r, a) == loud_ok);
    (loud_ok ? accepted : refused) += 1;
    if (rng.below(8) == 0) {  // undo a few, so that the cluster does not just fill up
      quiet.rollback(quiet.checkpoint() > 3 ? quiet.checkpoint() - 3 : 0);
      loud.rollback(loud.checkpoint() > 3 ? loud.checkpoint() - 3 : 0);
    }
    REQUIRE(quiet.same_allocation_as(loud));
  }
  CHECK(accepted > 200);  // both kinds were exercised
  CHECK(refused > 200);
}

TEST_CASE("NodeBitset iterates members in order across word and summary boundaries") {
  NodeBitset b(100000);
  for (std::uint32_t id : {5u, 63u, 64u, 4095u, 4096u, 70000u, 99999u}) b.insert(id);
  std::vector<std::uint32_t> seen;
  b.for_each([&](std::uint32_t id) { seen.push_back(id); });
  CHECK(seen == std::vector<std::uint32_t>{5, 63, 64, 4095, 4096, 70000, 99999});
  CHECK(b.next(65) == 4095);
  CHECK(b.next(70001) == 99999);
  b.erase(99999);
  CHECK(b.next(70001) == NodeBitset::kEnd);
  CHECK(b.count() == 6);
  b.erase(4096);
  b.erase(4096);
  CHECK(b.count() == 5);
  CHECK(b.next(4096) == 70000);
}

TEST_CASE("NodeBitset takes storage on the first insert; trim gives a big empty set's storage back") {
  NodeBitset big(100000);
  CHECK(big.storage_bytes() == 0);  // the id range alone
  CHECK(big.next(0) == NodeBitset::kEnd);
  CHECK(big.prev(99999) == NodeBitset::kEnd);
  CHECK_FALSE(big.contains(12345));
  big.erase(12345);  // absent, no storage: nothing happens
  CHECK(big.empty());
  big.grow(200000);  // no storage to grow
  CHECK(big.storage_bytes() == 0);
  big.insert(150000);
  CHECK(big.storage_bytes() >= 200000 / 8);
  CHECK(big.first() == 150000);
  CHECK(big.prev(199999) == 150000);
  big.erase(150000);
  CHECK(big.storage_bytes() > 0);  // erase alone keeps it (sets that empty and refill often)
  big.trim();
  CHECK(big.storage_bytes() == 0);  // more than kKeptWords words: given back
  CHECK(big == NodeBitset(200000));
  big.insert(7);  // taken again, zeroed: nothing of the old member is left
  CHECK(big.count() == 1);
  CHECK(big.next(8) == NodeBitset::kEnd);
  CHECK_FALSE(big.contains(150000));

  // A small set keeps its words; an emptied one equals a never-used one of the same range.
  NodeBitset small(1000);
  small.insert(999);
  small.erase(999);
  small.trim();
  CHECK(small.storage_bytes() > 0);
  CHECK(small.next(0) == NodeBitset::kEnd);
  CHECK(small.prev(999) == NodeBitset::kEnd);
  CHECK(small == NodeBitset(1000));
  CHECK_FALSE(small == NodeBitset(1001));
}

// Issue 15, part 8: the index keeps one node set per (GPU model, idle count) over every node id. One
// node of 8,192 GPUs among 20,000 8-GPU nodes made 8,193 sets of 20,000 bits each (about 20 MB,
// almost all empty); only the buckets in use take storage now, also after the big node has passed
// through every idle count.
TEST_CASE("the index of many nodes and one huge node costs the buckets in use, not nodes x GPUs") {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 20000; ++i) nodes.push_back(make_node("n" + std::to_string(i), 64000, 512 * kGiB, 8, "H100-80GB"));
  const std::size_t without = build(Cluster(nodes)).memory_usage();
  NodeSpec huge = make_node("huge", 8192 * 1000, Bytes{8192} * kGiB, 0, "");
  huge.gpus.assign(8192, GpuSpec{"H100-80GB"});
  nodes.push_back(huge);
  ClusterState s = build(Cluster(nodes));
  const NodeId h = s.find_node("huge");
  REQUIRE(h != kNoNode);
  const std::size_t per_gpu = s.memory_usage() - without;
  // The huge node's own arrays (a few dozen bytes a GPU) and 8,193 empty bucket objects; the dense
  // index took 8,193 x 2.5 KB.
  CHECK(per_gpu < std::size_t{8192} * 200);
  const TaskRequest one = request(s, TaskShape{1000, kGiB, 1, 1000, 0});  // 1 core, 1 GiB, 1 GPU
  std::vector<TaskAssignment> held;
  for (GpuIndex g = 0; g < 8192; ++g) {
    TaskAssignment a{h, {g}, 1000, 0, 1000, kGiB};
    REQUIRE(s.reserve(one, a).ok());
    held.push_back(a);
  }
  CHECK(s.shares().idle_gpus(h) == 0);
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(*s.registry().find("H100-80GB"), 0)->contains(h));
  CHECK(s.memory_usage() - without < std::size_t{8192} * 200);
  for (const TaskAssignment& a : held) REQUIRE(s.release(a).ok());
  CHECK(gpusched::detail::cluster_index(s).idle_bucket(*s.registry().find("H100-80GB"), 8192)->contains(h));
  CHECK(s.memory_usage() - without < std::size_t{8192} * 200);
}
