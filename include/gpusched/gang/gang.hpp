// gpusched/gang/gang.hpp — gang scheduling: a distributed job placed all or nothing.
//
// A 64-rank training job that gets 60 GPUs does not run slower, it hangs, while holding the 60 GPUs
// that another job needs. Schedulers that place pod by pod hold such partial allocations and
// deadlock each other (kubernetes#16845, ray#28160, volcano#13 and #748). Here the gang is one
// decision: every task gets a node, or the cluster state is left exactly as it was, and the answer
// says why with numbers:
//
//   gang llm: infeasible: group worker needs 64 tasks x 8 GPUs; 57 nodes have 8 free GPUs (57 tasks
//   fit); the largest topology.kubernetes.io/rack offers 30
//
// A `GangSpec` is a list of task groups (1 launcher + 64 workers, or prefill + decode), each with a
// compiled `TaskRequest`, `replicas` (the most) and `min_replicas` (the least: an elastic group gets
// as many as fit up to `replicas`, never fewer than `min_replicas`), plus placement constraints:
//
//   topology       all tasks in one domain of a level: one node (level "node"), or one value of a
//                  node label such as "topology.kubernetes.io/rack"; `required` (else infeasible) or
//                  `preferred` (one domain if any can hold the gang, else as few domains as
//                  possible, largest first) — Kueue's topology-aware scheduling levels;
//   spread         over failure domains of a level: at most `max_per_domain` tasks in any domain
//                  and/or at least `min_domains` distinct domains (nodes without the label are not
//                  used by the spread groups, as with Kubernetes topologySpreadConstraints);
//   anti_affinity  two groups (or a group with itself) never share a domain of a level (a node by
//                  default; a node without the level's label is a domain of its own).
//
// Use:
//
//   auto job = compile_job(state, my_job_view);          // the JobView says the constraints once
//   auto spec = make_gang_spec(*job);                    // Result<GangSpec>
//   GangResult r = place_gang(state, *spec);             // reserves on success
//   if (r.placed()) state.commit(); else log(describe(*spec, r, state));
//
//   QueueResult q = place_gangs(state, specs);   // a queue: each gang whole or not at all
//
// The answer is in the one vocabulary (core/outcome.hpp): `verdict` and structured `reasons`
// (kind, unit, needed, available; `subject` = a group index, or -1 for the whole gang):
//
//   kPlaced      placed (or, with dry_run, placeable): `tasks` holds the placement;
//   kNotNow      it does not fit the free resources now (a bound fails, or the exact search proved
//                no placement on this state), and no capacity bound rules it out on the empty
//                cluster: freeing resources may admit it;
//   kNotNow + a kSearchBudget reason (`undecided()`): the search ran out of its effort budget before
//                finding a placement or exhausting the space — never a guess either way;
//   kInfeasible  proved impossible even on the empty cluster: a capacity bound fails (a task larger
//                than every node, a group with more tasks than all nodes, or every domain of a
//                required level, could hold at capacity; more GPUs than the cluster has);
//   kInvalid     the spec itself is inconsistent (validate_gang's message in `explanation`).
//
// The capacity bounds are checked only when a gang does not fit now: the O(1) ones (GPUs per task
// against the largest node, GPU share against the cluster's total), then per group and per domain
// of a required level at capacity. After a node scan (steps 2-4) these are counted node by node; on
// the index-only path (step 1) they come from the cluster's capacity at empty per domain, summarised
// once per capacity generation (GangCapacityCache), so a gang no rack could ever hold is infeasible
// there too.
// How it decides, cheapest first:
//
//   1. aggregate bounds from the state's idle-GPU index only, no node scan (<= 100 us on 10,000
//      nodes): free GPUs in total, and for whole-GPU tasks sum over buckets of
//      nodes x floor(idle / gpus);
//   2. exact per-node counts: how many tasks of each group fit on each node alone (k_g(n), exact for
//      identical tasks), summed per node set and per topology domain, with spread caps applied per
//      domain; for one group, or several groups with one request and no anti-affinity, this count
//      is exact: the gang fits iff the count reaches the minimum;
//   3. a greedy placement with the foundation's placement policy (best-fit by default), largest
//      tasks first — any success is a proof of feasibility;
//   4. for heterogeneous gangs the greedy can miss: a bounded exact depth-first search over (node,
//      GPU choice) with the symmetries of identical tasks and identical untouched nodes removed.
//      Running out of the budget gives `undecided`, never a guess.
//
// With a topology level the domains are tried in Kueue TAS "best fit" order: among domains whose
// counts can hold the gang, the one with the fewest free GPUs first (ties by label value), so big
// domains stay free for big gangs; inside a domain the placement policy packs tasks onto few nodes,
// so ranks that talk sit close.
//
// Domains come from node labels (Kueue TAS style: a level is a node label key), or from the topology
// module's ClusterTopology when GangOptions::domains is given (then a rack is a rack within its
// block: the same rack name under two blocks is two domains).
// Threads: make_gang_spec and the feasibility checks read only; place_gang reserves on success and
// searches by reserving and rolling back: one thread per state (copy the state per thread).
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/domains.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/gang/detail/gang_capacity.hpp"

namespace gpusched {
namespace detail {
class GangSolver;
}

// kNodeLevel and LevelMode are in cluster/views.hpp (the job model), the domain rule (a domain is the
// path of label values from the top level down; levels answer to their short names) in
// cluster/domains.hpp; TopologyConstraint, SpreadConstraint and AntiAffinity in packing/placement.hpp
// (the compiled job).

struct GangGroup {
  std::string name;
  std::int32_t replicas = 1;      // the most tasks placed
  std::int32_t min_replicas = 1;  // the fewest; the gang is infeasible below this
  TaskRequest request;
};

struct GangSpec {
  std::string name;
  std::vector<GangGroup> groups;
  TopologyConstraint topology;  // level empty = none
  std::vector<SpreadConstraint> spread;
  std::vector<AntiAffinity> anti_affinity;
};

// Constraints by group name, as a reader finds them next to a job (io/gang_json.hpp). A JobView
// says the same by group index (cluster/views.hpp); make_gang_spec adds these to the job's own.
struct GangConstraints {
  TopologyConstraint topology;
  struct Spread {
    std::string level;
    std::vector<std::string> groups;  // empty = every group
    std::int32_t max_per_domain = 0;
    std::int32_t min_domains = 0;
  };
  std::vector<Spread> spread;
  struct Anti {
    std::string group_a, group_b;
    std::string level = std::string(kNodeLevel);
  };
  std::vector<Anti> anti_affinity;
};

// Builds a gang from a compiled job: its groups (replicas, min_replicas) and its own gang
// constraints, plus `constraints` naming groups (a topology given there replaces the job's). Fails
// naming the field and value: an unknown group name, a negative cap, min_domains above the tasks
// that could be spread, ...
Result<GangSpec> make_gang_spec(const CompiledJob& job, const GangConstraints& constraints = {});

// Checks a spec's own consistency (group indices, min <= max, non-negative numbers). Levels naming
// a label no node has are not errors: they make a gang infeasible, with that reason.
Status validate_gang(const GangSpec& spec);

// The cluster's capacity as if empty, per domain of each level asked (what tells "infeasible" from
// "not now"), kept between calls. It is rebuilt when the state's capacity generation moves (an event
// that changes what nodes hold when empty: relabel, node added or removed, MIG re-partition...;
// not a cordon or a failure), never by allocations, so a scheduler
// that keeps one beside its state pays the O(nodes) summary once per event, not once per gang.
// Not thread-safe: one per scheduling thread. place_gangs uses one for its queue when none is given.
class GangCapacityCache {
 public:
  GangCapacityCache() = default;

 private:
  friend class detail::GangSolver;
  detail::GangEmptyCapacity impl_;
};

// How a verdict was reached (for explanations and tests).
enum class GangMethod : std::uint8_t {
  kNone,
  kAggregateBound,  // step 1: index-only bounds
  kCountBound,      // step 2: per-node counts (per domain)
  kGreedy,          // step 3
  kSearch,          // step 4: exact search (found, or exhausted)
};
std::string_view method_name(GangMethod method);

struct GangOptions {
  // Chooses each task's node, inside a topology domain too (through its select_among/rank hooks:
  // any policy, FGD included); nullptr = best-fit.
  const PlacementPolicy* policy = nullptr;
  // Chooses the GPUs on the chosen node in the greedy steps; nullptr = the policy's gpu_picker().
  // (The exact search enumerates the distinct GPU choices itself.)
  const GpuPicker* gpu_picker = nullptr;
  // Which MIG instance a task with a MIG profile takes on the chosen node; nullptr = the first fit
  // (as JobPlacementOptions::mig_picker; the exact search enumerates the choices itself).
  const GpuPicker* mig_picker = nullptr;
  // Work limit of the exact search, in candidate nodes examined; counted, never timed, so the
  // answer is the same on every machine.
  std::uint64_t effort = 2'000'000;
  bool dry_run = false;  // decide and report the placement, but leave the state unchanged
  // Domains of the levels as a DomainTree built for this state (cluster/domains.hpp: hierarchical
  // Kueue TAS levels; the topology module's ClusterTopology::domains() is one) instead of bare node
  // labels; a level it does not know falls back to the labels. The gang family needs no topology
  // module (nor Boost) for it.
  const DomainTree* domains = nullptr;
  // Capacity at empty kept between calls (see GangCapacityCache); nullptr = computed for this call.
  GangCapacityCache* capacity_cache = nullptr;
};

// A necessary condition, with its numbers: "group worker: 64 tasks needed, 57 fit". `reason()` is
// the same bound in the one vocabulary.
struct GangBound {
  std::string what;
  std::int64_t needed = 0;
  std::int64_t available = 0;
  ReasonKind kind = ReasonKind::kOther;
  Unit unit = Unit::kNone;
  std::int32_t subject = -1;  // the group, -1 = the whole gang
  Reason reason() const { return {kind, unit, needed, available, 0, subject}; }
};

struct GangResult {
  Verdict verdict = Verdict::kNotNow;
  GangMethod method = GangMethod::kNone;
  std::vector<TaskPlacement> tasks;  // the placement when placed (group, replica, assignment)
  std::vector<std::int32_t> placed_per_group;  // tasks placed per group (min_replicas..replicas)
  std::string domain;                // the topology domain used (label value or node name), if one
  std::size_t domains_used = 0;      // distinct domains of the topology level used (0 without one)
  std::string domain_level;          // the level's resolved label key ("node" for the node level)
  std::size_t nodes_used = 0;        // distinct nodes of the placement
  std::vector<Reason> reasons;       // why not placed, structured (empty when placed)
  std::vector<GangBound> bounds;     // the failing bounds, with their wording
  // One line for people, with numbers, written only when the gang is not placed (describe()
  // words a placement on request).
  std::string explanation;
  std::uint64_t effort_used = 0;

  bool placed() const { return verdict == Verdict::kPlaced; }
  // The effort budget ran out before a placement or a proof (verdict kNotNow).
  bool undecided() const {
    for (const Reason& r : reasons)
      if (r.kind == ReasonKind::kSearchBudget) return true;
    return false;
  }
};

// Decides and places one gang. On kPlaced every task is reserved on `state` (not committed: the
// caller may still roll back to an earlier checkpoint), unless options.dry_run; on any other verdict
// `state` is exactly as before.
GangResult place_gang(ClusterState& state, const GangSpec& spec, const GangOptions& options = {});

// A queue of gangs, in the given order (sort by priority first if that is the rule). Each gang is
// placed whole or not at all; a gang that cannot be placed holds nothing and the next is tried.
// Placed gangs stay reserved on `state` (commit or roll back as a whole afterwards).
struct QueueResult {
  std::vector<GangResult> results;  // one per gang, in queue order
  std::size_t placed = 0;
};
QueueResult place_gangs(ClusterState& state, std::span<const GangSpec> gangs, const GangOptions& options = {});

// One line per gang result, e.g. "llm: placed (greedy): 65 tasks (worker 64/64, launcher 1/1) on 9
// nodes in topology.kubernetes.io/rack=rack-3", or "llm: not now (per-node count): group worker ...".
std::string describe(const GangSpec& spec, const GangResult& result, const ClusterState& state);
// The message alone (describe without the "name: verdict (method): " prefix).
std::string gang_message(const GangSpec& spec, const GangResult& result, const ClusterState& state);

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/gang/detail/gang_spec.hpp"
#include "gpusched/gang/detail/gang_solver.hpp"
#endif
