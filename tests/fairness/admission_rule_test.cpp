// The one admission rule's pieces (fairness/admission_rule.hpp): the validated queue tree and its
// order, the flavor rule (nominal flavors before borrowing ones, each tried for fit only in its own
// pass), the head's tier, and the queue order's tie rule (the queue listed first).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/admission_rule.hpp"

using namespace gpusched::fairness;
using gpusched::CompiledJob;
using gpusched::fairness::testing::amounts;

namespace {

QueueConfig tree_queue(std::string name, std::string parent = {}) {
  QueueConfig q;
  q.name = std::move(name);
  q.parent = std::move(parent);
  return q;
}

QuotaCheck quota_verdict(QuotaVerdict v) {
  QuotaCheck c;
  c.verdict = v;
  c.borrows = v == QuotaVerdict::kFitsBorrowing;
  return c;
}

}  // namespace

TEST_CASE("queue tree: parents before children, siblings in the order listed") {
  const ResourceSpace space{{"A100"}};
  // Children listed before their parents, and a parent between its children.
  const std::vector<QueueConfig> queues{tree_queue("a", "P2"), tree_queue("b", "P1"), tree_queue("P1"), tree_queue("P2"), tree_queue("c", "P1"),
                                        tree_queue("d", "a")};
  const QueueTree tree = QueueTree::build(space, queues).value();
  const std::vector<std::size_t> order(tree.parents_first().begin(), tree.parents_first().end());
  CHECK(order == std::vector<std::size_t>{2, 3, 0, 1, 4, 5});  // depth 0: P1, P2; depth 1: a, b, c; depth 2: d
  CHECK(tree.parent(0) == 3);
  CHECK(tree.parent(5) == 0);
  CHECK_FALSE(tree.leaf(0));
  CHECK(tree.leaf(1));
  CHECK(tree.find("c") == std::size_t{4});
  CHECK_FALSE(tree.find("e").has_value());
}

TEST_CASE("queue tree: errors name the queue and the field") {
  const ResourceSpace space{{"A100"}};
  auto cycle = QueueTree::build(space, std::vector<QueueConfig>{tree_queue("a", "b"), tree_queue("b", "a")});
  REQUIRE_FALSE(cycle.ok());
  CHECK(cycle.error().message == "queues[0] (a).parent: the queue tree has a cycle through \"a\"");
  auto unknown = QueueTree::build(space, std::vector<QueueConfig>{tree_queue("a", "nobody")});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message == "queues[0] (a).parent: no queue named \"nobody\"");
  QueueConfig flavored = tree_queue("f");
  flavored.flavor_order = {"H100"};
  auto flavor = QueueTree::build(space, std::vector<QueueConfig>{flavored});
  REQUIRE_FALSE(flavor.ok());
  CHECK(flavor.error().message == "queues[0] (f).flavors: unknown GPU model \"H100\" (not in the cluster)");
  QueueConfig internal = tree_queue("top");
  internal.cohort = "c";
  auto quota = QueueTree::build(space, std::vector<QueueConfig>{internal, tree_queue("leaf", "top")});
  REQUIRE_FALSE(quota.ok());
  CHECK(quota.error().message.find("queues[0] (top): a queue with child queues takes no quota") == 0);
}

TEST_CASE("flavor rule: nominal flavors before borrowing ones, each tried for fit only in its own pass") {
  // Flavor 2 is refused by its quota, 3 would borrow, 4 and 5 fit within nominal quota; 4 does not fit
  // the cluster, 5 does.
  const std::vector<Eigen::Index> candidates{2, 3, 4, 5};
  std::vector<Eigen::Index> refused, tried;
  const auto check = [](Eigen::Index d) {
    if (d == 2) return quota_verdict(QuotaVerdict::kOverNominal);
    return quota_verdict(d == 3 ? QuotaVerdict::kFitsBorrowing : QuotaVerdict::kFits);
  };
  const auto note_refused = [&](Eigen::Index d, const QuotaCheck&) { refused.push_back(d); };
  auto fits = [&](Eigen::Index d, bool) {
    tried.push_back(d);
    return d != 4;
  };
  FlavorChoice c = choose_flavor(candidates, check, note_refused, fits);
  CHECK(c.found);
  CHECK(c.gpu_dim == 5);
  CHECK_FALSE(c.borrows);
  CHECK(refused == std::vector<Eigen::Index>{2});
  CHECK(tried == std::vector<Eigen::Index>{4, 5});  // the borrowing flavor 3 is never tried

  // Nothing within nominal fits: the borrowing flavor, in the second pass; refusals told once.
  refused.clear();
  tried.clear();
  auto only_3 = [&](Eigen::Index d, bool) {
    tried.push_back(d);
    return d == 3;
  };
  c = choose_flavor(candidates, check, note_refused, only_3);
  CHECK(c.found);
  CHECK(c.gpu_dim == 3);
  CHECK(c.borrows);
  CHECK(refused == std::vector<Eigen::Index>{2});
  CHECK(tried == std::vector<Eigen::Index>{4, 5, 3});

  auto none = [](Eigen::Index, bool) { return false; };
  CHECK_FALSE(choose_flavor(candidates, check, note_refused, none).found);
  CHECK(head_tier(candidates, [](Eigen::Index d) { return d == 5; }) == 0);
  CHECK(head_tier(candidates, [](Eigen::Index) { return false; }) == 1);
}

TEST_CASE("queue order: equal shares go to the queue listed first, wherever its parent is listed") {
  // P1 and P2 are siblings with equal (zero) shares; P1 is listed first, so its child b is served
  // first although a is listed before b and P2's child. One GPU: only the first served is admitted.
  const ResourceSpace space{{"A100"}};
  const std::vector<QueueConfig> queues{tree_queue("a", "P2"), tree_queue("b", "P1"), tree_queue("P1"), tree_queue("P2")};
  const Amounts capacity = amounts({8000, 64LL << 30, 1000});
  auto planner = FairSharePlanner::build(space, capacity, capacity, queues).value();
  std::vector<CompiledJob> jobs{testing::job_of("ja", "a", 1000, 1LL << 30, 1000), testing::job_of("jb", "b", 1000, 1LL << 30, 1000)};
  const AdmissionPlan plan = planner.plan(jobs);
  REQUIRE(plan.admitted.size() == 1);
  CHECK(jobs[plan.admitted[0].job].name == "jb");

  QueueOrder order(QueueTree::build(space, queues).value(), queues, capacity, capacity,
                   std::vector<Amounts>(4, amounts({0, 0, 0})));
  for (std::size_t q : {0, 1}) order.update(q, nullptr, std::uint8_t{0});
  CHECK(order.pick() == std::size_t{1});
  order.update(1, nullptr, std::uint8_t{1});  // b's next head would borrow: a (tier 0) goes first
  CHECK(order.pick() == std::size_t{0});
  order.block(0);
  CHECK(order.pick() == std::size_t{1});
  order.update(1, nullptr, std::nullopt);  // b has no head left
  CHECK_FALSE(order.pick().has_value());
}
