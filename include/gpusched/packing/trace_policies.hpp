// gpusched/packing/trace_policies.hpp — the placement policies of the FGD paper's trace experiment.
//
// Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
// Descent" (USENIX ATC'23), compare six schedulers on the Alibaba GPU trace: Random, DotProd (Tetris),
// GpuClustering, GpuPacking, BestFit and FGD. Each is a Kubernetes score plugin in the paper's
// simulator (hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*_score.go); we read
// their definitions there and wrote our own code. All of them
//
//   * filter the nodes that fit the task now (ClusterState::check_fit: CPU, memory, GPU model mask,
//     enough idle GPUs or one GPU with enough free share);
//   * give each an INTEGER score in 0..100 (the Kubernetes framework's range — the truncation to an
//     integer is part of the algorithm: it creates ties);
//   * take the highest score; ties go to the first node of a seeded permutation of the nodes drawn
//     once per run (`TieBreak`), as a Kubernetes scheduler that samples nodes in a fixed shuffled
//     order would, and unlike a fresh random pick per task;
//   * choose the GPU(s) on the node with their own `GpuPicker`.
//
// The scores (MaxSpecCpu = 128 CPUs, MaxSpecGpu = 8 GPUs normalise, as in the paper's code):
//
//   Random         one uniformly random fitting node (seeded splitmix64) and a random fitting GPU.
//   DotProd        100 * (1 - (c/128k * Cfree/128k + g/8k * Gfree/8k) / 2): the SMALLEST dot product of
//                  request and free vector wins (the paper's variant "merge, max"); tightest GPU.
//   GpuClustering  prefers nodes already running GPU tasks of the same kind (shared, 1, 2, 4, 8 GPUs):
//                  75..100 only that kind, 50..75 that kind among others, 25..50 empty, 0..25 other
//                  kinds, each range graded by the node's used GPU share. CPU-only tasks: 0 everywhere.
//                  The kinds come from the tasks this policy placed (`observe`).
//   GpuPacking     shared GPUs first (100 - free% of the GPU used / 10), then idle GPUs of a used node
//                  (50 - GPUs taken), then idle nodes (33 - idle GPUs); tightest GPU.
//   BestFit        100 * (1 - (0.5 (Cfree - c)/128k + 0.5 (Gfree - g)/8k)), min-max normalised to 0..100
//                  over the fitting nodes (integer arithmetic, as Kubernetes' NormalizeScore); tightest GPU.
//   FGD            see gpusched/packing/fgd.hpp.
//
// A `TracePolicy` is a `PlacementPolicy` (so it also works in `gpusched place`) that uses the two
// per-run hooks every policy has (policy.hpp): `attach(state)` before a run, `observe(state, request,
// assignment)` after each reservation. Policies keep per-run state there (the tie-break permutation, GpuClustering's task
// kinds, FGD's cache of node classes). Used without the hooks they stay correct: the permutation is
// drawn lazily, GpuClustering sees no history, FGD computes every node directly.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/random.hpp"
#include "gpusched/packing/policy.hpp"

namespace gpusched {

// A seeded permutation of node ids: rank(n) is n's position. Ties between equal scores go to the
// lowest rank.
class TieBreak {
 public:
  explicit TieBreak(std::uint64_t seed = 42) : seed_(seed) {}
  void reset(std::size_t node_count);
  std::size_t size() const { return rank_.size(); }
  std::uint32_t rank(NodeId n) const { return rank_[n]; }
  NodeId node_at(std::uint32_t rank) const { return order_[rank]; }
  std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t seed_;
  std::vector<std::uint32_t> rank_;
  std::vector<NodeId> order_;
};

class TracePolicy : public PlacementPolicy {
 public:
  explicit TracePolicy(std::uint64_t seed) : tie_(seed) {}
  // Before a run on `state` (resets per-run state; the state may already hold allocations).
  void attach(const ClusterState& state) override { tie_.reset(state.node_count()); }
  std::uint64_t seed() const { return tie_.seed(); }

 protected:
  // The permutation for this state's node count (drawn on first use when attach was not called).
  const TieBreak& tie(const ClusterState& state) const {
    if (tie_.size() != state.node_count()) tie_.reset(state.node_count());
    return tie_;
  }
  // Highest integer score, ties to the lowest rank. `score(node)` returns < 0 to skip a node.
  template <class Score>
  NodeId select_max(const ClusterState& state, const TaskRequest& request, Score&& score) const {
    const TieBreak& t = tie(state);
    NodeId best = kNoNode;
    std::int64_t best_score = 0;
    std::uint32_t best_rank = 0;
    for_each_candidate(state, request, [&](NodeId n) {
      if (state.check_fit(n, request) != FitReason::kFits) return true;
      const std::int64_t s = score(n);
      if (s < 0) return true;
      const std::uint32_t r = t.rank(n);
      if (best == kNoNode || s > best_score || (s == best_score && r < best_rank)) {
        best = n;
        best_score = s;
        best_rank = r;
      }
      return true;
    });
    return best;
  }

 private:
  mutable TieBreak tie_;
};

// Random: a uniformly random fitting node and a uniformly random fitting GPU.
class PaperRandomPolicy final : public TracePolicy {
 public:
  explicit PaperRandomPolicy(std::uint64_t seed = 42);
  std::string_view name() const override { return "Random"; }
  void attach(const ClusterState& state) override;
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  const GpuPicker& gpu_picker() const override { return picker_; }

 private:
  class Picker final : public GpuPicker {
   public:
    explicit Picker(SplitMix64& rng) : rng_(rng) {}
    bool pick(const ClusterState& state, NodeId node, const TaskRequest& request,
              TaskAssignment& out) const override;

   private:
    SplitMix64& rng_;
  };
  mutable SplitMix64 rng_;
  Picker picker_{rng_};
};

class DotProdPolicy final : public TracePolicy {
 public:
  using TracePolicy::TracePolicy;
  std::string_view name() const override { return "DotProd"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
};

class GpuClusteringPolicy final : public TracePolicy {
 public:
  using TracePolicy::TracePolicy;
  std::string_view name() const override { return "GpuClustering"; }
  void attach(const ClusterState& state) override;
  void observe(const ClusterState& state, const TaskRequest& request, const TaskAssignment& a) override;
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  // The task kind bit: shared, 1, 2, 4, 8 or other whole GPUs; 0 for CPU-only.
  static std::uint8_t kind_bit(const TaskShape& shape);

 private:
  std::vector<std::uint8_t> kinds_;  // per node: bits of the kinds placed there
};

class GpuPackingPolicy final : public TracePolicy {
 public:
  using TracePolicy::TracePolicy;
  std::string_view name() const override { return "GpuPacking"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  // The score of one fitting node (exposed for tests).
  static std::int64_t score(const ClusterState& state, NodeId node, const TaskRequest& request);
};

class PaperBestFitPolicy final : public TracePolicy {
 public:
  using TracePolicy::TracePolicy;
  std::string_view name() const override { return "BestFit"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
};

struct TargetWorkload;  // gpusched/packing/fgd.hpp

// The paper's six in the paper's order, then ours: "Random", "DotProd", "GpuClustering",
// "GpuPacking", "BestFit", "FGD", "FGD-OC" (see fgd.hpp). make_trace_policy also accepts the
// variants "FGD-Pack", "FGD-BF" and "FGD-Bal" (measured, no better than FGD; docs/bench-packing.md).
std::vector<std::string_view> trace_policy_names();
// By name, case-insensitively; "-" and "_" are ignored ("gpu-packing" = "GpuPacking"). nullptr if
// unknown. FGD-family policies need the target workload.
std::unique_ptr<TracePolicy> make_trace_policy(std::string_view name, std::uint64_t seed,
                                               const TargetWorkload& workload);

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/packing/detail/trace_policies_impl.hpp"
#endif
// make_trace_policy constructs FGD: its definition comes with fgd.hpp (which includes this header;
// either order of inclusion works).
#include "gpusched/packing/fgd.hpp"
