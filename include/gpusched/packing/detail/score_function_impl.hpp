// gpusched/packing/detail/score_function_impl.hpp — definitions of score_function.hpp (header-only).
//
// Included at the end of score_function.hpp, or, under GPUSCHED_SEPARATE_COMPILATION, once per
// program by gpusched/compiled.hpp (core/config.hpp); not a public header.
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/packing/score_function.hpp"

#include <functional>
#include <unordered_map>
#include <utility>

namespace gpusched {
namespace detail {

// FNV-1a over 64-bit words: the memo's keys are short vectors of integers.
struct WordsHash {
  std::size_t operator()(const std::vector<std::int64_t>& v) const {
    std::uint64_t h = 1469598103934665603ULL;
    for (std::int64_t x : v) {
      h ^= static_cast<std::uint64_t>(x);
      h *= 1099511628211ULL;
    }
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

}  // namespace detail

// Node states and task shapes interned to small ids; the scores by (state id, shape id). Bounded:
// past kMaxEntries (a few hundred MB at worst) everything is forgotten and refilled.
struct ScoreFunctionPolicy::Memo {
  static constexpr std::size_t kMaxEntries = std::size_t{1} << 22;
  std::uint64_t instance = 0;
  std::vector<std::uint64_t> node_version;  // per node: the version its class was computed at (0 none)
  std::vector<std::uint32_t> node_class;
  std::unordered_map<std::vector<std::int64_t>, std::uint32_t, detail::WordsHash> classes, shapes;
  std::unordered_map<std::uint64_t, std::optional<std::int64_t>> scores;
  std::unordered_map<std::uint64_t, std::vector<GpuIndex>> picks;  // pick_gpus's answers (empty: refused)
  std::vector<std::int64_t> key;  // scratch

  void reset(const ClusterState& state) {
    instance = state.instance_id();
    node_version.assign(state.node_count(), 0);
    node_class.assign(state.node_count(), 0);
    classes.clear();
    shapes.clear();
    scores.clear();
    picks.clear();
  }
  std::uint32_t intern(std::unordered_map<std::vector<std::int64_t>, std::uint32_t, detail::WordsHash>& m) {
    auto [it, fresh] = m.try_emplace(key, static_cast<std::uint32_t>(m.size()));
    (void)fresh;
    return it->second;
  }
  std::uint32_t class_of(const ClusterState& state, NodeId n) {
    if (node_version[n] == state.node_version(n) + 1) return node_class[n];
    key.assign({state.cpu_capacity(n), state.cpu_free(n), state.memory_capacity(n), state.memory_free(n)});
    for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      key.push_back(state.shares().free_milli_if_healthy(n, gi));
      key.push_back(state.shares().free_memory_if_healthy(n, gi));
      key.push_back(state.gpu_model(n, gi));
    }
    node_class[n] = intern(classes);
    node_version[n] = state.node_version(n) + 1;  // +1: version 0 is a real version
    return node_class[n];
  }
  std::uint32_t shape_of(const TaskRequest& r) {
    const TaskShape& s = r.shape;
    key.assign({s.cpu, s.memory, s.gpus, s.gpu_milli, s.gpu_memory, static_cast<std::int64_t>(r.models)});
    return intern(shapes);
  }
};

class ScoreFunctionPolicy::Picker final : public GpuPicker {
 public:
  explicit Picker(const ScoreFunctionPolicy& policy) : policy_(policy) {}
  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request, TaskAssignment& out) const override {
    if (policy_.failed()) return false;
    if (request.mig.any() || !request.shape.needs_gpu()) return LowestIndexGpuPicker{}.pick(state, node, request, out);
    std::vector<GpuIndex> gpus;
    if (!policy_.pick_gpus_of(state, node, request, gpus)) return false;
    out = make_assignment(node, request);
    out.gpus = std::move(gpus);
    if (const Status ok = state.validate(request, out); !ok) {
      std::string message = "pick_gpus on node ";
      message.append(state.node_name(node)).append(" chose GPUs the task cannot take: ").append(ok.error().message);
      policy_.fail(std::move(message));
      return false;
    }
    return true;
  }

 private:
  const ScoreFunctionPolicy& policy_;
};

GPUSCHED_CTOR_DECL ScoreFunctionPolicy::ScoreFunctionPolicy(std::string name, std::uint64_t seed,
                                                           ScoreFunctionTraits traits)
    : TracePolicy(seed), name_(std::move(name)), traits_(traits), picker_(std::make_unique<Picker>(*this)) {}

GPUSCHED_CTOR_DECL ScoreFunctionPolicy::~ScoreFunctionPolicy() = default;

GPUSCHED_DECL void ScoreFunctionPolicy::fail(std::string message) const {
  if (failure_.empty()) failure_ = message.empty() ? std::string("failed") : std::move(message);
}

GPUSCHED_DECL const GpuPicker& ScoreFunctionPolicy::gpu_picker() const {
  return traits_.picks_gpus ? static_cast<const GpuPicker&>(*picker_) : PlacementPolicy::gpu_picker();
}

GPUSCHED_DECL std::int64_t ScoreFunctionPolicy::memo_shape(const ClusterState& state, const TaskRequest& request) const {
  if (!traits_.memoize || request.mig.any()) return -1;
  if (!memo_) memo_ = std::make_unique<Memo>();
  Memo& m = *memo_;
  if (m.instance != state.instance_id() || m.node_version.size() != state.node_count() ||
      m.scores.size() > Memo::kMaxEntries)
    m.reset(state);
  return m.shape_of(request);
}

GPUSCHED_DECL std::optional<std::int64_t> ScoreFunctionPolicy::score_of(const ClusterState& state, NodeId node,
                                                                        const TaskRequest& request,
                                                                        std::int64_t shape) const {
  if (failed()) return std::nullopt;
  if (shape < 0) return score(state, node, request);
  Memo& m = *memo_;
  const std::uint64_t key = (std::uint64_t{m.class_of(state, node)} << 32) | static_cast<std::uint64_t>(shape);
  if (auto it = m.scores.find(key); it != m.scores.end()) return it->second;
  const std::optional<std::int64_t> s = score(state, node, request);
  if (!failed()) m.scores.emplace(key, s);  // a failure is not an answer to remember
  return s;
}

GPUSCHED_DECL bool ScoreFunctionPolicy::pick_gpus_of(const ClusterState& state, NodeId node, const TaskRequest& request,
                                                     std::vector<GpuIndex>& gpus) const {
  if (!traits_.memoize || request.mig.any() || !memo_ || memo_->instance != state.instance_id() ||
      memo_->node_version.size() != state.node_count())
    return pick_gpus(state, node, request, gpus);
  Memo& m = *memo_;
  const std::uint64_t key = (std::uint64_t{m.class_of(state, node)} << 32) | m.shape_of(request);
  if (auto it = m.picks.find(key); it != m.picks.end()) {
    gpus = it->second;
    return !gpus.empty();
  }
  const bool ok = pick_gpus(state, node, request, gpus);
  if (!failed()) m.picks.emplace(key, ok ? gpus : std::vector<GpuIndex>{});
  return ok;
}

GPUSCHED_DECL bool ScoreFunctionPolicy::better(const ClusterState& state, NodeId node, std::int64_t s, NodeId best,
                                               std::int64_t best_score) const {
  if (best == kNoNode || s > best_score) return true;
  if (s < best_score) return false;
  if (traits_.ties == TieRule::kLowestId) return node < best;
  const TieBreak& t = tie(state);
  return t.rank(node) < t.rank(best);
}

// The best of the nodes `for_each` yields (it calls its argument per node; false stops it), the
// ones that fit scored: select() over the state's index, select_among() over a caller's list.
template <class ForEach>
NodeId ScoreFunctionPolicy::best_of(const ClusterState& state, const TaskRequest& request, ForEach&& for_each) const {
  NodeId best = kNoNode;
  std::int64_t best_score = 0;
  const std::int64_t shape = memo_shape(state, request);
  for_each([&](NodeId n) {
    if (n >= state.node_count() || state.check_fit(n, request) != FitReason::kFits) return true;
    const std::optional<std::int64_t> s = score_of(state, n, request, shape);
    if (failed()) return false;
    if (s && better(state, n, *s, best, best_score)) {
      best = n;
      best_score = *s;
    }
    return true;
  });
  return failed() ? kNoNode : best;
}

GPUSCHED_DECL NodeId ScoreFunctionPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return best_of(state, request, [&](auto&& visit) { for_each_candidate(state, request, visit); });
}

GPUSCHED_DECL NodeId ScoreFunctionPolicy::select_among(const ClusterState& state, const TaskRequest& request,
                                                       std::span<const NodeId> candidates) const {
  return best_of(state, request, [&](auto&& visit) {
    for (NodeId n : candidates)
      if (!visit(n)) return;
  });
}

namespace detail {

class FunctionScorePolicy final : public ScoreFunctionPolicy {
 public:
  FunctionScorePolicy(std::string name, ScoreFunctions f, std::uint64_t seed, ScoreFunctionTraits traits)
      : ScoreFunctionPolicy(std::move(name), seed, traits), f_(std::move(f)) {}
  std::optional<std::int64_t> score(const ClusterState& state, NodeId node, const TaskRequest& request) const override {
    return f_.score(state, node, request);
  }
  bool pick_gpus(const ClusterState& state, NodeId node, const TaskRequest& request,
                 std::vector<GpuIndex>& gpus) const override {
    return f_.pick_gpus && f_.pick_gpus(state, node, request, gpus);
  }

 private:
  ScoreFunctions f_;
};

}  // namespace detail

GPUSCHED_DECL std::unique_ptr<ScoreFunctionPolicy> make_score_function_policy(std::string name, ScoreFunctions functions,
                                                                              std::uint64_t seed,
                                                                              ScoreFunctionTraits traits) {
  traits.picks_gpus = traits.picks_gpus && static_cast<bool>(functions.pick_gpus);
  return std::make_unique<detail::FunctionScorePolicy>(std::move(name), std::move(functions), seed, traits);
}

}  // namespace gpusched
