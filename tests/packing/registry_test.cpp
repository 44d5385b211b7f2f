// Policies by name (packing/registry.hpp) and policies from a score function (score_function.hpp):
// the name rules, the refusals, a user's best-fit that makes the built-in's decisions on random
// clusters, the seeded tie rule, the memo, and user code that fails.
#include <doctest/doctest.h>

#include "gpusched/packing/registry.hpp"
#include "gpusched/packing/score_function.hpp"
#include "test_util.hpp"

using namespace gpusched;
using gpusched::testing::make_node;
using gpusched::testing::Rng;

namespace {

ClusterState registry_build(const Cluster& c) {
  auto s = ClusterState::build(c, GpuModelRegistry::builtin());
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return std::move(s).value();
}

Cluster registry_random_cluster(Rng& rng) {
  const char* models[] = {"T4", "A100-80GB"};
  Cluster c;
  const int n = static_cast<int>(rng.uniform(1, 20));
  for (int i = 0; i < n; ++i) {
    NodeSpec node;
    node.name = fmt::format("n{}", i);
    node.cpu = rng.uniform(1, 16) * 4000;
    node.memory = rng.uniform(1, 16) * 8 * kGiB;
    node.cpu_used = rng.uniform(0, node.cpu / 1000) * 1000 / 2;
    const int gpus = static_cast<int>(rng.uniform(0, 4)) * 2;
    for (int g = 0; g < gpus; ++g) {
      GpuSpec spec{models[rng.uniform(0, 1)]};
      const int r = static_cast<int>(rng.uniform(0, 9));
      spec.used_milli = r < 5 ? 0 : r < 7 ? 1000 : rng.uniform(1, 9) * 100;
      node.gpus.push_back(spec);
    }
    node.schedulable = !rng.chance(10);
    c.nodes().push_back(std::move(node));
  }
  return c;
}

TaskRequest registry_random_request(const ClusterState& s, Rng& rng) {
  TaskShape shape{rng.uniform(0, 8) * 1000, rng.uniform(0, 4) * kGiB, 0, 0, 0};
  const int kind = static_cast<int>(rng.uniform(0, 2));
  if (kind == 1) shape.gpus = static_cast<GpuCount>(rng.uniform(1, 4)), shape.gpu_milli = 1000;
  if (kind == 2) shape.gpus = 1, shape.gpu_milli = rng.uniform(1, 9) * 100;
  std::vector<std::string_view> models;
  if (rng.chance(20)) models.push_back("T4");
  return s.compile(shape, models).value();
}

}  // namespace

TEST_CASE("registry: every built-in by its name, canonical names prefer the caller's set") {
  const PolicyRegistry r = PolicyRegistry::with_builtins();
  CHECK(r.names(PolicySet::kPlacement).size() == policy_names().size());
  for (auto n : policy_names()) CHECK(r.find(n)->name == n);
  for (auto n : trace_policy_names()) CHECK(r.find(n, PolicySet::kTrace)->name == n);
  // Exact names are themselves everywhere; canonical ones go to the caller's set first.
  CHECK(r.find("best-fit", PolicySet::kTrace)->name == "best-fit");
  CHECK(r.find("BestFit")->name == "BestFit");
  CHECK(r.find("bestfit", PolicySet::kTrace)->name == "BestFit");
  CHECK(r.find("bestfit", PolicySet::kPlacement)->name == "best-fit");
  CHECK(r.find("fgd_oc")->name == "FGD-OC");
  CHECK(r.find("spread")->name == "worst-fit");
  CHECK(r.find("tetris")->name == "dot-product");
  CHECK(r.find("no-such") == nullptr);

  auto unknown = r.make("no-such");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kUnknownName);
  CHECK(unknown.error().message.find("FGD-OC") != std::string::npos);  // the known names are listed
  auto fgd = r.make("FGD");  // FGD needs the workload it packs for
  REQUIRE_FALSE(fgd.ok());
  CHECK(fgd.error().code == ErrorCode::kMissingField);
  const TargetWorkload w;
  auto made = r.make("FGD", {7, &w});
  REQUIRE(made.ok());
  CHECK((*made)->name() == "FGD");
}

TEST_CASE("registry: a user's policy by name; names of built-ins and empty ones are refused") {
  PolicyRegistry r = PolicyRegistry::with_builtins();
  PolicyEntry e;
  e.name = "mine";
  e.make = [](const PolicyArgs& a) { return std::make_unique<RandomPolicy>(a.seed); };
  REQUIRE(r.add(e).ok());
  CHECK(r.find("MINE")->set == PolicySet::kUser);
  CHECK(r.add(e).error().code == ErrorCode::kDuplicate);
  e.name = "Best_Fit";  // canonically best-fit
  CHECK(r.add(e).error().code == ErrorCode::kDuplicate);
  e.name = "--";
  CHECK(r.add(e).error().code == ErrorCode::kInvalidValue);
  e.name = "other";
  e.aliases = {"spread"};
  CHECK(r.add(e).error().code == ErrorCode::kDuplicate);
  e.aliases.clear();
  e.make = nullptr;
  CHECK(r.add(e).error().code == ErrorCode::kInvalidValue);
  CHECK(r.names().size() == PolicyRegistry::with_builtins().names().size() + 1);
}

TEST_CASE("score function: best-fit's key as a user score makes best-fit's decisions (random clusters)") {
  // The user code sees only nodes that fit and returns best-fit's rank; Filter and Select are the
  // library's. Every decision must be the built-in's (the index walk it takes is another code path).
  const BestFitPolicy builtin;
  const auto user = make_score_function_policy(
      "user-best-fit", {[&](const ClusterState& s, NodeId n, const TaskRequest& r) -> std::optional<std::int64_t> {
                          return builtin.rank(s, n, r);
                        },
                        {}});
  Rng rng(20261204);
  int placed = 0;
  for (int i = 0; i < testing::trials(400); ++i) {
    ClusterState s = registry_build(registry_random_cluster(rng));
    for (int t = 0; t < 6; ++t) {
      const TaskRequest r = registry_random_request(s, rng);
      const NodeId expected = builtin.select(s, r);
      REQUIRE(user->select(s, r) == expected);
      std::vector<NodeId> all(s.node_count());
      for (NodeId n = 0; n < s.node_count(); ++n) all[n] = n;
      REQUIRE(user->select_among(s, r, all) == expected);
      if (expected == kNoNode) continue;
      TaskAssignment a;
      REQUIRE(user->gpu_picker().pick(s, expected, r, a));
      REQUIRE(s.reserve(r, a).ok());
      ++placed;
    }
  }
  CHECK(placed > 100);
  CHECK(user->failure().empty());
}

TEST_CASE("score function: seeded ties take the first fitting node of the seeded order; memo gives the same answers") {
  Cluster c;
  for (int i = 0; i < 12; ++i) c.nodes().push_back(make_node(fmt::format("n{}", i), 8000, 64 * kGiB, 4, "T4"));
  ClusterState s = registry_build(c);
  int calls = 0;
  ScoreFunctions flat{[&](const ClusterState&, NodeId, const TaskRequest&) -> std::optional<std::int64_t> {
                        ++calls;
                        return 0;
                      },
                      {}};
  ScoreFunctionTraits seeded{TieRule::kSeededOrder, false, false};
  const auto p = make_score_function_policy("flat", flat, 5, seeded);
  TieBreak order(5);
  order.reset(s.node_count());
  const TaskRequest one = s.compile({1000, kGiB, 1, 1000, 0}).value();
  CHECK(p->select(s, one) == order.node_at(0));
  CHECK(calls == 12);
  // Twelve equal nodes are one node state: memoised, the score runs once per (state, shape).
  calls = 0;
  seeded.memoize = true;
  const auto m = make_score_function_policy("flat", flat, 5, seeded);
  CHECK(m->select(s, one) == order.node_at(0));
  CHECK(m->select(s, one) == order.node_at(0));
  CHECK(calls == 1);
  // A reservation changes one node's state: that node is scored again, the others are not.
  TaskAssignment a;
  REQUIRE(m->gpu_picker().pick(s, order.node_at(0), one, a));
  REQUIRE(s.reserve(one, a).ok());
  CHECK(m->select(s, one) == order.node_at(0));
  CHECK(calls == 2);
}

TEST_CASE("score function: user code that fails ends the decision and says why") {
  Cluster c;
  for (int i = 0; i < 4; ++i) c.nodes().push_back(make_node(fmt::format("n{}", i), 8000, 64 * kGiB, 4, "T4"));
  ClusterState s = registry_build(c);
  const TaskRequest one = s.compile({1000, kGiB, 1, 1000, 0}).value();
  class Failing final : public ScoreFunctionPolicy {
   public:
    Failing() : ScoreFunctionPolicy("failing", 1, {}) {}
    std::optional<std::int64_t> score(const ClusterState&, NodeId n, const TaskRequest&) const override {
      if (n == 2) fail("node 2 is cursed");
      return 1;
    }
  };
  const Failing f;
  CHECK(f.select(s, one) == kNoNode);  // not node 0 or 1: a failed policy decides nothing
  CHECK(f.failure() == "node 2 is cursed");
  TaskAssignment a;

  // A GPU choice the state refuses (a GPU that is taken) is a failure, not a placement.
  ScoreFunctions bad_gpus{[](const ClusterState&, NodeId, const TaskRequest&) -> std::optional<std::int64_t> { return 0; },
                          [](const ClusterState&, NodeId, const TaskRequest&, std::vector<GpuIndex>& gpus) {
                            gpus = {7};
                            return true;
                          }};
  const auto p = make_score_function_policy("bad-gpus", bad_gpus, 1, {TieRule::kLowestId, false, true});
  const NodeId n = p->select(s, one);
  REQUIRE(n == 0);
  CHECK_FALSE(p->gpu_picker().pick(s, n, one, a));
  CHECK(p->failure().find("pick_gpus on node n0") != std::string::npos);
  CHECK(p->select(s, one) == kNoNode);
}
