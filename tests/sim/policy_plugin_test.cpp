// Placement policies and orders written in C (gpusched/c/policy.h, io/policy_plugin.hpp): the example
// plugins (examples/policies/best_fit_plugin.c, orders_plugin.c) against the built-in best-fit on the
// Alibaba trace and the built-in orders in a contended simulation, decision for decision; bad plugins
// and callbacks that fail.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpusched/io/policy_plugin.hpp"
#include "gpusched/sim/packing_experiment.hpp"
#include "gpusched/sim/simulator.hpp"
#include "gpusched/sim/traces.hpp"
#include "test_util.hpp"

using namespace gpusched;

namespace {

const sim::TraceWorkload& plugin_trace() {
  static const sim::TraceWorkload w = [] {
    const std::string dir = std::string(GPUSCHED_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";
    auto nodes = io::read_alibaba_nodes(dir + "openb_node_list_gpu_node.csv");
    auto pods = io::read_alibaba_pods(dir + "openb_pod_list_default.csv");
    REQUIRE(nodes.ok());
    REQUIRE(pods.ok());
    return sim::make_trace_workload(*nodes, *pods, "default").value();
  }();
  return w;
}

// Fails on node 3, or on the node whose id `user` points to.
int failing_score(void* user, const gpusched_node_view* node, const gpusched_task_view*, std::int64_t* score,
                  const char** message) {
  if (node->id == (user ? *static_cast<const std::uint32_t*>(user) : 3U)) {
    *message = "no score for this node";
    return -7;
  }
  *score = node->id;
  return GPUSCHED_SCORE_OK;
}

}  // namespace

#ifdef GPUSCHED_BEST_FIT_PLUGIN
TEST_CASE("the C plugin's best-fit makes the built-in best-fit's decisions on the Alibaba trace") {
  // Decisions, not memory: the sanitized build leaves it to the Release run (the trace and its LP
  // take a quarter of a minute under ASan; the plugin's calls run in the other tests here).
  if (testing::sanitized) return;
  PolicyRegistry registry = PolicyRegistry::with_builtins();
  REQUIRE(io::load_policy_plugin(registry, GPUSCHED_BEST_FIT_PLUGIN).ok());
  const sim::TraceWorkload& w = plugin_trace();
  auto c_policy = std::move(registry.make("c-best-fit").value());
  const BestFitPolicy builtin;
  ClusterState a = w.initial, b = w.initial;
  const auto order = sim::arrival_order(w, 42, 1.3);
  // Every arrival up to full (10,825 for seed 42).
  const std::size_t n = order.size();
  std::size_t placed = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const TaskRequest& r = w.pods[order[k]];
    const NodeId na = builtin.select(a, r), nb = c_policy->select(b, r);
    REQUIRE(na == nb);
    if (na == kNoNode) continue;
    TaskAssignment ta, tb;
    REQUIRE(builtin.gpu_picker().pick(a, na, r, ta));
    REQUIRE(c_policy->gpu_picker().pick(b, nb, r, tb));
    REQUIRE(ta.gpus == tb.gpus);
    REQUIRE(a.reserve(r, ta).ok());
    REQUIRE(b.reserve(r, tb).ok());
    ++placed;
  }
  CHECK(placed > n / 2);
  CHECK(c_policy->failure().empty());
  // Loading it again would register the same name twice: refused, the registry unchanged.
  const auto before = registry.names().size();
  const Status again = io::load_policy_plugin(registry, GPUSCHED_BEST_FIT_PLUGIN);
  CHECK(again.error().code == ErrorCode::kDuplicate);
  CHECK(registry.names().size() == before);
}
#endif

TEST_CASE("bad plugins and bad definitions are errors naming them") {
  PolicyRegistry registry = PolicyRegistry::with_builtins();
  const Status missing = io::load_policy_plugin(registry, "/no/such/plugin.so");
  CHECK(missing.error().code == ErrorCode::kIo);
  CHECK(missing.error().message.find("/no/such/plugin.so") != std::string::npos);
  // A name without a slash is a file of the current directory, never looked for in the library path
  // (which would load the C library here).
  const Status searched = io::load_policy_plugin(registry, "libc.so.6");
  CHECK(searched.error().code == ErrorCode::kIo);
  CHECK(searched.error().message.find("./libc.so.6") != std::string::npos);

  gpusched_policy_def def{GPUSCHED_POLICY_ABI, "fails", nullptr, 0, failing_score, nullptr, nullptr};
  gpusched_policy_def no_score = def;
  no_score.score = nullptr;
  CHECK(io::add_c_policy(registry, no_score).error().code == ErrorCode::kMissingField);
  gpusched_policy_def old_abi = def;
  old_abi.abi = 99;
  CHECK(io::add_c_policy(registry, old_abi).error().code == ErrorCode::kInvalidValue);
  gpusched_policy_def flags = def;
  flags.flags = 64;
  CHECK(io::add_c_policy(registry, flags).error().code == ErrorCode::kInvalidValue);
  gpusched_policy_def builtin_name = def;
  builtin_name.name = "FGD";
  CHECK(io::add_c_policy(registry, builtin_name).error().code == ErrorCode::kDuplicate);

  // A callback's error ends the decision; the message names the node, the value and its words.
  REQUIRE(io::add_c_policy(registry, def).ok());
  Cluster c;
  for (int i = 0; i < 5; ++i) c.nodes().push_back(testing::make_node(fmt::format("n{}", i), 8000, 64 * kGiB, 2, "T4"));
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  auto p = std::move(registry.make("fails").value());
  CHECK(p->select(s, s.compile({1000, kGiB, 1, 1000, 0}).value()) == kNoNode);
  CHECK(p->failure() == "score returned -7 on node \"n3\": \"no score for this node\"");
}

#ifdef GPUSCHED_BEST_FIT_PLUGIN
TEST_CASE("bench-packing runs a plugin's policy beside the built-ins; a failing policy is an error") {
  // The experiment's wiring on a small trace (tests/fixtures/sim: one node, pairs of shares); the
  // decisions on the Alibaba trace are compared one by one above.
  const std::string fixtures = std::string(GPUSCHED_FIXTURES_DIR) + "/sim/";
  auto nodes = io::read_alibaba_nodes(fixtures + "one_node.csv");
  auto pods = io::read_alibaba_pods(fixtures + "pairs_pods.csv");
  REQUIRE(nodes.ok());
  REQUIRE(pods.ok());
  const sim::TraceWorkload small = sim::make_trace_workload(*nodes, *pods, "pairs").value();
  PolicyRegistry registry = PolicyRegistry::with_builtins();
  REQUIRE(io::load_policy_plugin(registry, GPUSCHED_BEST_FIT_PLUGIN).ok());
  std::uint32_t the_node = 0;
  gpusched_policy_def def{GPUSCHED_POLICY_ABI, "fails", nullptr, 0, failing_score, nullptr, &the_node};
  REQUIRE(io::add_c_policy(registry, def).ok());
  sim::ExperimentConfig cfg;
  cfg.registry = &registry;
  cfg.policies = {"best-fit", "c-best-fit"};
  cfg.seeds = {42};
  cfg.lower_bound = false;
  auto rep = sim::run_experiment(small, cfg);
  REQUIRE(rep.ok());
  CHECK(rep->policies[0].mean_at_100 == rep->policies[1].mean_at_100);
  CHECK(rep->runs[0].pods_placed == rep->runs[1].pods_placed);
  cfg.policies = {"fails"};
  auto failed = sim::run_experiment(small, cfg);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message.find("policy \"fails\" failed (seed 42): score returned -7") != std::string::npos);
}
#endif

#ifdef GPUSCHED_ORDERS_PLUGIN
TEST_CASE("the C plugin's orders make the built-in orders' decisions in a contended simulation; a failing order ends it") {
  // A contended synthetic trace (8 nodes, priorities, elastic jobs, restart costs) under LAS with
  // checkpoint-aware preemption: the job order decides who starts, the victim order who is evicted.
  PolicyRegistry policies = PolicyRegistry::with_builtins();
  scheduler::OrderRegistry orders = scheduler::OrderRegistry::with_builtins();
  REQUIRE(io::load_policy_plugin(policies, GPUSCHED_ORDERS_PLUGIN, &orders).ok());
  CHECK(policies.names().size() == PolicyRegistry::with_builtins().names().size());  // orders only
  sim::SyntheticSpec spec;
  spec.jobs = testing::sanitized ? 60 : 200;
  spec.seed = 11;
  spec.arrivals_per_hour = 60;
  spec.duration_median = 1800;
  spec.extra = sim::Augment{11, 3, 3, 600, 30, 1.0, 0.5};
  const auto jobs = sim::synthetic_jobs(spec);
  const sim::SimCluster cluster = sim::make_uniform_cluster(8, 8, "V100M32", 4);
  auto simulate = [&](const std::string& policy, const std::string& order, const std::string& victim_order) {
    sim::SimConfig cfg;
    cfg.policy = *sim::parse_policy(policy);
    cfg.order = order;
    cfg.victim_order = victim_order;
    cfg.orders = &orders;
    auto r = sim::simulate(cluster, jobs, cfg);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    CHECK(r->conservation.holds());
    return std::move(*r);
  };
  // (The sanitized run checks one policy on fewer jobs for memory errors; whether the orders change
  // the schedule is the Release run's question.)
  std::size_t preempted = 0;
  const std::vector<std::string> sim_policies =
      testing::sanitized ? std::vector<std::string>{"las+ckpt"} : std::vector<std::string>{"priority", "las+ckpt"};
  for (const std::string& policy : sim_policies) {
    const sim::SimResult builtin = simulate(policy, "shortest-first", "newest-first");
    const sim::SimResult plugin = simulate(policy, "c-shortest-first", "c-newest-first");
    const sim::SimResult plain = simulate(policy, "", "");
    bool differs = false;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      CAPTURE(j);
      CHECK(plugin.jobs[j].first_start == builtin.jobs[j].first_start);
      CHECK(plugin.jobs[j].end == builtin.jobs[j].end);
      CHECK(plugin.jobs[j].preemptions == builtin.jobs[j].preemptions);
      preempted += static_cast<std::size_t>(builtin.jobs[j].preemptions);
      differs = differs || plain.jobs[j].first_start != builtin.jobs[j].first_start;
    }
    if (!testing::sanitized) CHECK(differs);  // the orders decide something: not the policy's own schedule
    // The victim order alone (the plugin's and the built-in's) chooses other victims than the default.
    const sim::SimResult victims_plugin = simulate(policy, "", "c-newest-first");
    const sim::SimResult victims_builtin = simulate(policy, "", "newest-first");
    bool victims_differ = false;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      CHECK(victims_plugin.jobs[j].end == victims_builtin.jobs[j].end);
      victims_differ = victims_differ || victims_builtin.jobs[j].end != plain.jobs[j].end;
    }
    if (!testing::sanitized && policy == "las+ckpt") CHECK(victims_differ);
  }
  if (!testing::sanitized) CHECK(preempted > 0);  // the victim order was asked

  // A failing order: the run ends with an error naming it.
  gpusched_order_def failing{GPUSCHED_POLICY_ABI, "fails", nullptr, 0,
                             [](void*, const gpusched_job_view* job, std::int64_t*, const char** message) {
                               *message = "no key";
                               return job->submit_time > 3600 ? 5 : GPUSCHED_SCORE_OK;
                             },
                             nullptr, nullptr};
  REQUIRE(io::add_c_order(orders, failing).ok());
  sim::SimConfig cfg;
  cfg.policy = *sim::parse_policy("priority");
  cfg.order = "fails";
  cfg.orders = &orders;
  auto r = sim::simulate(cluster, jobs, cfg);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("job order \"fails\" failed: key returned 5 for job") != std::string::npos);
  CHECK(r.error().message.find("\"no key\"") != std::string::npos);
  // Unknown names are refused before the run.
  cfg.order = "no-such-order";
  CHECK(sim::simulate(cluster, jobs, cfg).error().code == ErrorCode::kUnknownName);
}
#endif
