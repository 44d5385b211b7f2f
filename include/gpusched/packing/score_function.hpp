// gpusched/packing/score_function.hpp — a placement policy whose node score comes from outside the
// library: C callbacks (a plugin or the C API), a Python callable, or any C++ function.
//
// The shape is the one every built-in policy has (policy.hpp): Filter -> Score -> Select, then the
// GPU step.
//
//   Filter   the nodes that fit the task now (ClusterState::check_fit), from the state's index of
//            nodes by idle GPUs (for_each_candidate): the user code never sees a node that cannot
//            take the task, and never decides capacity;
//   Score    `score(state, node, request)`: an integer, higher is better, or "refuse this node";
//   Select   the highest score; ties to the lowest node id, or (TieRule::kSeededOrder) to the first
//            node of the seeded node permutation the FGD paper's protocol uses (TracePolicy), so a
//            re-implementation of a paper's policy can give the built-in's decisions exactly;
//   GPUs     the default GPU step (lowest-index idle GPUs; a shared task on the tightest GPU), or
//            the user's `pick_gpus`, checked by the state (ClusterState::validate) before it is used.
//            MIG tasks always take the state's MIG instance step.
//
// Memoised scores (the one index acceleration a user policy may opt into). A score that depends only
// on the node's capacities and free resources (CPU, memory, and per GPU: free share, free memory,
// model, health) and the task's shape can say so (`memoize`). Nodes are then grouped by that state,
// and each (state, shape) pair is scored (and its GPUs chosen) once: on the Alibaba trace's 1,213 nodes a decision meets a
// few hundred distinct node states, and most (state, shape) pairs recur for thousands of decisions.
// The grouping is keyed to the state's instance and each node's version (cluster_state.hpp,
// "Generations"), so it never answers for a node that changed since. A policy that reads anything else
// (the node's name, id, labels, its own history) must not set it.
//
// Failures of user code. A score or GPU step that fails (a callback's error, a Python exception, a
// GPU choice the state refuses) calls `fail(message)`: the policy then refuses every node, so the
// operation in progress ends without placing anything more, and `failure()` returns the first message,
// which every path (the tool, the C API, Python) checks after deciding and reports naming the policy.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/packing/trace_policies.hpp"

namespace gpusched {

// How a score-function policy breaks ties between equal scores.
enum class TieRule : std::uint8_t {
  kLowestId,     // the lowest node id (the built-in policies of policy.hpp)
  kSeededOrder,  // the first node of a seeded node permutation (the paper's policies, TracePolicy)
};

struct ScoreFunctionTraits {
  TieRule ties = TieRule::kLowestId;
  bool memoize = false;     // the score depends only on the node's resources and the task's shape
  bool picks_gpus = false;  // pick_gpus chooses the GPUs (else the default GPU step)
};

class ScoreFunctionPolicy : public TracePolicy {
 public:
  ScoreFunctionPolicy(std::string name, std::uint64_t seed, ScoreFunctionTraits traits);
  ~ScoreFunctionPolicy() override;
  std::string_view name() const override { return name_; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  NodeId select_among(const ClusterState& state, const TaskRequest& request,
                      std::span<const NodeId> candidates) const override;
  const GpuPicker& gpu_picker() const override;
  std::string_view failure() const override { return failure_; }
  const ScoreFunctionTraits& traits() const { return traits_; }

  // The user's score of a node that fits (higher is better); nullopt refuses the node. On an error
  // of the user code: fail(message) and return nullopt.
  virtual std::optional<std::int64_t> score(const ClusterState& state, NodeId node, const TaskRequest& request) const = 0;
  // With traits().picks_gpus: the GPU indices on `node` for a task that needs GPUs (whole: request
  // gpus of them; shared: one). false: the user code refused or failed (then it called fail).
  virtual bool pick_gpus(const ClusterState& /*state*/, NodeId /*node*/, const TaskRequest& /*request*/,
                         std::vector<GpuIndex>& /*gpus*/) const {
    return false;
  }

 protected:
  // Records the first failure of user code; from then on every node is refused.
  void fail(std::string message) const;
  bool failed() const { return !failure_.empty(); }

 private:
  struct Memo;
  class Picker;
  // The score and the GPU choice through the memo when traits().memoize, else directly.
  // memo_shape: the request's id in the memo (the memo made current for `state`), or -1 when the
  // policy does not memoise this request.
  std::int64_t memo_shape(const ClusterState& state, const TaskRequest& request) const;
  std::optional<std::int64_t> score_of(const ClusterState& state, NodeId node, const TaskRequest& request,
                                       std::int64_t shape) const;
  bool pick_gpus_of(const ClusterState& state, NodeId node, const TaskRequest& request, std::vector<GpuIndex>& gpus) const;
  template <class ForEach>
  NodeId best_of(const ClusterState& state, const TaskRequest& request, ForEach&& for_each) const;
  // Whether candidate (node, score) beats the best so far under the tie rule.
  bool better(const ClusterState& state, NodeId node, std::int64_t s, NodeId best, std::int64_t best_score) const;

  std::string name_;
  ScoreFunctionTraits traits_;
  mutable std::string failure_;
  mutable std::unique_ptr<Memo> memo_;
  std::unique_ptr<Picker> picker_;
};

// A C++ function as a policy: the quickest way to try an idea (and what the C and Python adapters
// reduce to). `score` as ScoreFunctionPolicy::score; `pick_gpus` optional.
struct ScoreFunctions {
  std::function<std::optional<std::int64_t>(const ClusterState&, NodeId, const TaskRequest&)> score;
  std::function<bool(const ClusterState&, NodeId, const TaskRequest&, std::vector<GpuIndex>&)> pick_gpus;
};
std::unique_ptr<ScoreFunctionPolicy> make_score_function_policy(std::string name, ScoreFunctions functions,
                                                                std::uint64_t seed = 42,
                                                                ScoreFunctionTraits traits = {});

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/packing/detail/score_function_impl.hpp"
#endif
