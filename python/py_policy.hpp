// Placement policies written in Python (docs/policies.md): gpusched.Policy and its adapter, a
// ScoreFunctionPolicy (packing/score_function.hpp) that calls Python with read-only views of the
// node and the task. Every object here lives and dies with the GIL held.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "gpusched/packing/registry.hpp"
#include "gpusched/packing/score_function.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "gpusched/scheduler/orders.hpp"

namespace gpusched::python {

namespace py = pybind11;

// gpusched.Policy: what a Python policy is, before it is made for a run.
struct PyPolicySpec {
  std::string name;
  py::object score;      // score(node, task) -> int | None
  py::object pick_gpus;  // None, or pick_gpus(node, task) -> list[int] | int | None
  TieRule ties = TieRule::kLowestId;
  bool memoize = false;
};

// The views a policy's functions are called with: valid during the call only (afterwards their
// properties raise ValueError, so a kept view cannot read freed memory).
struct PyNodeView {
  const ClusterState* state = nullptr;
  NodeId node = 0;
};
struct PyTaskView {
  const ClusterState* state = nullptr;
  const TaskRequest* request = nullptr;
};

// A policy argument as a Policy: a gpusched.Policy; an object with a `score` method (and optionally
// `pick_gpus`, and attributes `name`, `ties`, `memoize`); or a plain score function. nullopt for a
// str (a built-in's name) or None; TypeError for anything else.
std::optional<PyPolicySpec> as_policy_spec(const py::handle& policy);

// The policy of one run (a call of place, a cycle, a bench-packing seed, a simulation). The first
// exception its Python code raises is also kept in `sink` when given (for runs whose policies are
// gone when the error reaches the caller: bench-packing, simulate).
std::unique_ptr<PlacementPolicy> make_python_policy(const PyPolicySpec& spec, std::uint64_t seed,
                                                    std::shared_ptr<py::object> sink = nullptr);

// Raises gpusched.PolicyError(message) with `cause` (an exception object, or None) as its __cause__.
[[noreturn]] void raise_policy_error(const std::string& message, const py::object& cause);

// After a decision with `policy`: a failure of its Python code raised as gpusched.PolicyError naming
// the policy (chained to the Python exception it raised, if any). No-op when it did not fail.
[[noreturn]] void raise_policy_failure_now(const PlacementPolicy& policy);
inline void raise_policy_failure(const PlacementPolicy& policy) {
  if (!policy.failure().empty()) raise_policy_failure_now(policy);
}

// A job order (`order=` of cycle, Session and simulate): a built-in's name (scheduler/orders.hpp), or
// a function order(job) -> int, lower first, over a read-only JobView. nullptr for None; TypeError
// for what is neither; ValueError for an unknown name. The first exception it raises is also kept in
// `sink` when given.
std::unique_ptr<scheduler::JobOrder> make_python_order(const py::handle& order, std::shared_ptr<py::object> sink = nullptr);
// A victim order (`victim_order=`): a built-in's name, or victim_order(victim) -> int >= 0 over a
// read-only VictimView, the cheapest set of victims evicted.
std::unique_ptr<scheduler::VictimOrder> make_python_victim_order(const py::handle& order,
                                                                 std::shared_ptr<py::object> sink = nullptr);
// After a cycle or a submit with these orders: a failure raised as gpusched.PolicyError (chained to
// the Python exception, if any). No-op otherwise.
void raise_order_failure(const scheduler::JobOrder* order, const scheduler::VictimOrder* victim_order = nullptr);

// Registers gpusched._core.Policy, NodeView, TaskView, JobView, VictimView and PolicyError in `m`.
void install_policies(py::module_& m);

// A registry of the built-ins plus the Python policies among `policies` (str or Policy); their names
// in `names`. The policies it makes keep their first exception in `sink`.
PolicyRegistry registry_with(const std::vector<py::object>& policies, std::vector<std::string>& names,
                             const std::shared_ptr<py::object>& sink);

}  // namespace gpusched::python
