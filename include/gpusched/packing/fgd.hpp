// gpusched/packing/fgd.hpp — Fragmentation Gradient Descent (FGD) for GPU-sharing workloads.
//
// Source: Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
// Gradient Descent", USENIX ATC'23, §4 (and, for details the paper leaves open, its public simulator
// hkust-adsl/kubernetes-scheduler-simulator: utils.NodeGpuShareFragAmount, plugin/fgd_score.go).
//
// The idea. A node's free GPU share is only useful if tasks that will arrive can use it. Fix a
// *target workload* M: the most common task shapes m (CPU, number of GPUs, share per GPU, allowed
// GPU models) with their frequencies p_m, covering 95 % of the tasks (CPU-only shapes included). The
// fragmentation of a node is the free GPU share that the workload is expected to be unable to use:
//
//   F(node) = Σ_m p_m · F_m(node)
//   F_m     = all the node's free GPU share   if m needs no GPU, cannot use the node's GPU models,
//                                             or does not fit (too little CPU, or fewer than m.gpus
//                                             GPUs with at least m's share free);
//           = Σ free share of the GPUs whose free share is below m's share          otherwise.
//
// FGD places each task where F grows least: on the node, and for a shared task on the GPU, that
// minimise F(after) - F(before). Worked example (tests/packing/fgd_test.cpp): M = {(4 CPU, 0.5 GPU):
// 0.5, (8 CPU, 1 GPU): 0.3, (2 CPU, no GPU): 0.2}; a node with 32 CPUs free and GPUs free
// [1000 x6, 300, 0] has F = 0.5·300 + 0.3·300 + 0.2·6300 = 1500; a 0.2-GPU task on the 300 GPU
// lowers it to 0.5·100 + 0.3·100 + 0.2·6100 = 1300.
//
// The node score, as in the paper's simulator, is the integer int(100 · sigmoid((F_before -
// F_after) / 1000)): coarse, so many nodes tie; ties go to the first node of the seeded
// permutation (see trace_policies.hpp). The GPU on the chosen node is the one with the smallest
// F_after (ties: least free share, then lowest index).
//
// Speed. F depends only on a node's state (free CPU and memory, the multiset of (free share, model)
// of its GPUs), and thousands of nodes share a few hundred states. After `attach`, the policy keeps
// nodes grouped in classes of equal state, each with a memo of (task shape -> score), and a decision
// visits classes, not nodes; `observe` moves the one node that changed. The classes are a cache of
// the attached state keyed to its generation (cluster_state.hpp): reservations made without
// `observe` (place_job, place_gang) and cluster events are caught up before the next decision by
// revisiting the nodes whose version is newer, so the cache never answers for a state it has not
// seen. Without `attach` it evaluates every fitting node directly (same answers; tests compare).
//
// FGD-OC (ours: FGD with opportunity costs). FGD judges a placement by the node's own fragmentation.
// Three things it cannot see decide most of what it leaves unallocated on the Alibaba trace
// (docs/bench-packing.md has the measurements), and FGD-OC charges each placement, in the same unit
// as F (milli-GPU), for the future allocation it gives up:
//
//   1. Packing loss. Which shares end up together on a GPU decides the waste: a 470 beside a 320
//      leaves 210, where only the trace's rare 160s and smaller fit. The cutting-stock LP over the
//      workload's shares (Gilmore & Gomory; solved once, by `sim::cutting_stock_prices`) prices every
//      share size s at π(s), the fraction of a GPU it is worth in an optimal packing (dual
//      feasibility: no pattern is worth more than one GPU). With K(h) the most a free share h can
//      still be worth (a knapsack over π), putting s on a GPU with h free loses
//      K(h) − π(s) − K(h − s) ≥ 0: zero exactly when the GPU stays on an optimal pattern. The loss is
//      weighted 100 (kPackingLossWeight), so a GPU that loses nothing beats every GPU that does;
//      among those, FGD's measure decides as before.
//   2. CPU stranding. A node's free GPU share is usable only with CPU beside it; at the workload's
//      CPU per GPU milli c (its GPU shapes' average), share above free CPU / c is stranded. The cost is
//      the change of max(0, free share − free CPU / c). It sends CPU-only and CPU-heavy tasks to nodes
//      whose CPU would otherwise idle (on the trace: the 2-GPU T4 nodes with 104 CPUs, not the 8-GPU
//      G2 nodes with 96), which FGD spreads at random.
//   3. Model scarcity. Tasks restricted to some GPU models (the trace's gpu_spec) need those models'
//      GPUs; a task that could run elsewhere should not take them. κ(X) is the fraction of model X's
//      GPUs that the restricted tasks are expected to need by the time the arrivals reach the
//      cluster's capacity (each restricted task's demand split over its allowed models by supply);
//      taking g milli of model X costs κ(X)·g.
//
// The terms are added to F_after before the paper's integer score, so FGD's coarse score and its
// first-fit tie-break over the seeded node permutation stay as they are (finer scores and other node
// orders measured worse: both are part of why FGD works). Without share prices (an empty
// `share_prices`) the packing loss is zero and the other two terms still apply.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpusched/packing/trace_policies.hpp"

namespace gpusched {

struct TargetShape {
  MilliCpu cpu = 0;
  GpuCount gpus = 0;      // 0 = CPU-only
  MilliGpu gpu_milli = 0; // per GPU
  GpuModelMask models = kAnyGpuModel;
  double weight = 0;      // p_m; weights of a workload sum to 1
  std::int64_t count = 0; // tasks of this shape in the source list
};

// A shared GPU size and its price: the fraction of a GPU an item of that size is worth in an optimal
// packing of the workload's shares (a dual solution of the cutting-stock LP,
// `sim::cutting_stock_prices`).
struct SharePrice {
  MilliGpu size = 0;
  double price = 0;
};

struct TargetWorkload {
  std::vector<TargetShape> shapes;  // most frequent first
  // Over ALL the requests (not only the covered shapes): GPU demand in milli, in total and by the
  // requests' model masks (ascending mask). FGD-OC's model scarcity reads them.
  std::int64_t gpu_demand = 0;
  std::vector<std::pair<GpuModelMask, std::int64_t>> gpu_demand_by_mask;
  // Filled by sim::make_trace_workload; empty when no LP was solved (FGD-OC then has no packing loss).
  std::vector<SharePrice> share_prices;

  // The most frequent shapes covering `coverage` of the tasks (the shape that crosses the threshold
  // is included), renormalised. Shapes are (cpu, gpus, gpu_milli, models); memory is ignored, as in
  // the paper. Equal counts are ordered by (gpus, gpu_milli, cpu, models) ascending.
  static TargetWorkload from_requests(std::span<const TaskRequest> requests, double coverage = 0.95);
};

// F for explicit inputs: free CPU, and the free share and model of each GPU.
double fragmentation(MilliCpu cpu_free, std::span<const std::int32_t> gpu_free,
                     std::span<const GpuModelId> gpu_model, const TargetWorkload& workload);
// F of a node of a state.
double node_fragmentation(const ClusterState& state, NodeId node, const TargetWorkload& workload);
// The paper's integer score of a change of F: int(100 · sigmoid((before - after) / 1000)).
std::int64_t fgd_score(double before, double after);

struct FgdOptions {
  // false: score by the exact change of F (a double, scaled to an integer with 1e-6 resolution)
  // instead of the paper's truncated sigmoid (variant "FGD-BF").
  bool integer_sigmoid_score = true;
  // Tie-break between equal scores, before the seeded permutation: 0 = none (the paper), 1 = least
  // free GPU share left on the node after placing ("FGD-Pack"), 2 = free CPU closest to the
  // workload's CPU per GPU times the free GPU share ("FGD-Bal").
  //
  // These variants were measured and lost to FGD on the default trace (FGD 4.77 %: FGD-Pack 4.85,
  // FGD-BF 6.06, FGD-Bal 8.71). The coarse integer score with first-fit over a random permutation
  // spreads each kind of task over all node types, and a deterministic tie-break undoes that.
  // FGD-OC keeps both and changes what is scored instead.
  int tie_rule = 0;
  // FGD-OC's opportunity costs (see the essay at the top), each on its own for measurements.
  bool packing_loss = false;
  bool cpu_stranding = false;
  bool model_scarcity = false;
  std::string name = "FGD";
};

namespace detail {
struct FgdCosts;
struct FgdEvaluation;
}

class FgdPolicy : public TracePolicy {
 public:
  FgdPolicy(TargetWorkload workload, std::uint64_t seed = 42, FgdOptions options = {});
  ~FgdPolicy() override;
  std::string_view name() const override { return options_.name; }
  void attach(const ClusterState& state) override;
  void observe(const ClusterState& state, const TaskRequest& request, const TaskAssignment& a) override;
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  const GpuPicker& gpu_picker() const override;
  const TargetWorkload& workload() const { return workload_; }

  // The best choice on one node: fits, score, and the GPU (for a shared task) — for tests and the picker.
  struct NodeChoice {
    bool fits = false;
    std::int64_t score = 0;
    double frag_after = 0;
    double frag_before = 0;
    double cost = 0;  // FGD-OC's opportunity cost of the placement (0 for FGD)
    int gpu = -1;     // shared task: the GPU index
  };
  NodeChoice evaluate(const ClusterState& state, NodeId node, const TaskRequest& request) const;

  // Node classes currently in use (after attach), for tests and benchmarks.
  std::size_t active_classes() const;

  // FGD-OC's terms, exposed for tests (in GPU fractions for the first, milli-GPU for the others).
  // packing_loss: K(free) − π(share) − K(free − share); 0 without share prices.
  double packing_loss(MilliGpu free, MilliGpu share) const;
  // κ(model) for the cluster of the last attach (or evaluate); 0 for a model no restricted task names.
  double model_scarcity(GpuModelId model) const;
  // max(0, free GPU share − free CPU / c), c = the workload's CPU per GPU milli.
  double stranded_gpu_milli(MilliCpu cpu_free, MilliGpu gpu_free) const;

 private:
  NodeChoice evaluate_indexed(const ClusterState& state, NodeId node, const TaskRequest& request) const;
  NodeChoice choice_of(const detail::FgdEvaluation& e, std::int32_t gpu) const;
  struct Index;
  NodeId select_scan(const ClusterState& state, const TaskRequest& request) const;
  // The node score of a change of F (plus FGD-OC's cost): the paper's integer or the exact one.
  std::int64_t score_of(double before, double after) const;
  std::int64_t secondary_key(const ClusterState& state, NodeId n, const TaskRequest& request) const;
  std::int64_t secondary_of(MilliCpu cpu_free, MilliGpu gpu_free, const TaskRequest& request) const;
  double cpu_per_gpu_milli_ = 0;

  TargetWorkload workload_;
  FgdOptions options_;
  std::unique_ptr<detail::FgdCosts> costs_;  // null for plain FGD
  std::unique_ptr<GpuPicker> picker_;
  // The class index is a cache of the attached state, keyed to its instance and generation
  // (ClusterState::generation): changes the policy was not told about through `observe` (place_job,
  // place_gang, cluster events) are caught up before the next decision.
  void rebuild_index(const ClusterState& state) const;
  void refresh_node(const ClusterState& state, NodeId n, std::span<const GpuIndex> changed = {}) const;
  void catch_up(const ClusterState& state) const;
  mutable std::unique_ptr<Index> index_;
  std::uint64_t attached_instance_ = 0;
};

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/packing/detail/fgd_impl.hpp"
#endif
