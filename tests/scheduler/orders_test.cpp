// Job orders and victim orders by name (scheduler/orders.hpp): the built-ins decide in a cycle as
// their definitions say, user entries join the name space, bad names are refused with the known ones.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cycle_util.hpp"
#include "gpusched/scheduler/orders.hpp"

using namespace cycle_test;

namespace {

ClusterState orders_cluster(std::size_t nodes) {
  return ClusterState::build(make_cluster(nodes, 8), GpuModelRegistry::builtin()).value();
}

std::vector<std::string> started_names(const CycleDecisions& d) {
  std::vector<std::string> out;
  for (const auto& s : d.starts) out.push_back(s.job);
  return out;
}

}  // namespace

TEST_CASE("job orders by name: shortest-first, smallest-first and submit-order start the job their key puts first") {
  // One node of 8 GPUs; three pending jobs, each of which fills what the others leave: only the
  // first in order starts when it takes the node.
  //   long8:  8 GPUs, estimate 3,600 s, priority 0, submitted 0
  //   short8: 8 GPUs, estimate 60 s, priority 0, submitted 10
  //   late8:  8 GPUs, no estimate, priority 5, submitted 20
  const OrderRegistry orders = OrderRegistry::with_builtins();
  auto state = orders_cluster(1);
  std::vector<PendingJob> pending{job(state, "long8", "", 1, 8, 0, 0), job(state, "short8", "", 1, 8, 0, 10),
                                  job(state, "late8", "", 1, 8, 5, 20)};
  pending[0].runtime_estimate = 3600;
  pending[1].runtime_estimate = 60;
  auto first_started = [&](const char* name) {
    CycleOptions o;
    o.dry_run = true;
    o.preempt = false;
    o.backfill.mode = BackfillMode::kNone;
    std::unique_ptr<JobOrder> order;
    if (name != nullptr) {
      auto made = orders.make_job_order(name);
      REQUIRE(made.ok());
      order = std::move(*made);
      o.order = order.get();
    }
    auto d = run_cycle(state, {}, pending, {}, 100, o);
    REQUIRE(d.ok());
    const auto names = started_names(*d);
    REQUIRE(names.size() == 1);
    return names[0];
  };
  CHECK(first_started(nullptr) == "late8");          // the default: priority first
  CHECK(first_started("priority") == "late8");       // the default by name
  CHECK(first_started("shortest-first") == "short8");  // 60 s < 3,600 s < unknown
  CHECK(first_started("submit-order") == "long8");     // submitted first, priority ignored
  CHECK(first_started("Submit_Order") == "long8");     // canonical names
  // smallest-first: a 4-GPU job goes first; with 4 GPUs taken no 8-GPU job fits after it.
  pending.push_back(job(state, "small4", "", 1, 4, 0, 30));
  CHECK(first_started("smallest-first") == "small4");
}

TEST_CASE("victim orders by name: the built-ins price candidates as documented") {
  const OrderRegistry orders = OrderRegistry::with_builtins();
  RunningJob r;
  r.start_time = 400;
  const VictimCandidate c{&r, 0, 2, true, 1'000, 300, 2'000, 1'000};
  CHECK(orders.make_victim_order("checkpoint-cost").value()->cost(c) == 1'300);
  CHECK(orders.make_victim_order("fewest-gpus").value()->cost(c) == 2'000);
  CHECK(orders.make_victim_order("newest-first").value()->cost(c) == 600);
  // Job orders are not victim orders and the other way round; unknown names list the known ones.
  auto wrong_kind = orders.make_victim_order("shortest-first");
  REQUIRE_FALSE(wrong_kind.ok());
  CHECK(wrong_kind.error().code == ErrorCode::kUnknownName);
  CHECK(wrong_kind.error().message.find("checkpoint-cost, fewest-gpus, newest-first") != std::string::npos);
  auto unknown = orders.make_job_order("deadline");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().field == "order");
  CHECK(unknown.error().message.find("priority, shortest-first, smallest-first, submit-order") != std::string::npos);
}

TEST_CASE("order registry: a user's order joins by name; built-in names, empty names and empty entries are refused") {
  struct Deadline final : JobOrder {
    std::string_view name() const override { return "deadline"; }
    std::int64_t key(const PendingJob& j) const override { return j.job.submit_time + j.runtime_estimate; }
  };
  OrderRegistry orders = OrderRegistry::with_builtins();
  CHECK(orders.add({"deadline", "submit + estimate", [] { return std::make_unique<Deadline>(); }, {}}).ok());
  REQUIRE(orders.make_job_order("DEADLINE").ok());
  CHECK(orders.make_job_order("deadline").value()->name() == "deadline");
  CHECK_FALSE(orders.make_victim_order("deadline").ok());
  CHECK(orders.add({"Shortest_First", "", [] { return std::make_unique<Deadline>(); }, {}}).error().code ==
        ErrorCode::kDuplicate);
  CHECK(orders.add({"", "", [] { return std::make_unique<Deadline>(); }, {}}).error().code == ErrorCode::kInvalidValue);
  CHECK(orders.add({"nothing", "", {}, {}}).error().code == ErrorCode::kInvalidValue);
  CHECK(orders.job_order_names().back() == "deadline");
}
