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
//   auto spec = make_gang_spec(state, compiled_job, constraints);      // Result<GangSpec>
//   GangResult r = place_gang(state, *spec);                           // reserves on success
//   if (r.verdict == GangVerdict::kFeasible) state.commit(); else log(r.reason);
//
//   QueueResult q = place_gangs(state, specs);   // a queue: each gang whole or not at all
//
// The answer has three values, as the issue asks: feasible (with the placement), infeasible
// (proved: the reason names the bound that fails), or undecided (the search ran out of its effort
// budget before finding a placement or exhausting the space). How it decides, cheapest first:
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
// module's ClusterTopology when GangOptions::topology is given (then a rack is a rack within its
// block: the same rack name under two blocks is two domains).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/domains.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"

namespace gpusched {
namespace topology {
class ClusterTopology;
}

// kNodeLevel ("node"), LevelMode and the domain rule (a domain is the path of label values from the
// top level down; levels answer to their short names) are the cluster layer's, shared with the
// topology module: gpusched/cluster/domains.hpp.

struct TopologyConstraint {
  std::string level;  // kNodeLevel or a node label key; empty = no topology constraint
  LevelMode mode = LevelMode::kRequired;
};

struct SpreadConstraint {
  std::string level;                  // kNodeLevel or a node label key (a failure domain)
  std::vector<std::uint32_t> groups;  // the groups counted together; empty = every group
  std::int32_t max_per_domain = 0;    // 0 = no cap
  std::int32_t min_domains = 0;       // 0 = no minimum
};

struct AntiAffinity {
  std::uint32_t group_a = 0;
  std::uint32_t group_b = 0;  // == group_a: the group's replicas repel each other
  std::string level = std::string(kNodeLevel);
};

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

// Constraints by group name, as a reader finds them next to a job (see make_gang_spec).
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

// Builds a gang from a job compiled by the foundation (replicas and min_replicas per group come from
// the core model) and constraints naming groups. Fails naming the field and value: an unknown group
// name, a negative cap, min_domains above the tasks that could be spread, ...
Result<GangSpec> make_gang_spec(const CompiledJob& job, const GangConstraints& constraints = {});

// Checks a spec's own consistency (group indices, min <= max, non-negative numbers). Levels naming
// a label no node has are not errors: they make a gang infeasible, with that reason.
Status validate_gang(const GangSpec& spec);

enum class GangVerdict : std::uint8_t {
  kFeasible,    // placed (or, with dry_run, placeable): `tasks` holds the placement
  kInfeasible,  // proved: no placement exists on this state; `reason` names the failing bound
  kUndecided,   // the effort budget ran out before a placement or a proof was found
  kInvalid,     // the spec itself is inconsistent (validate_gang's message in `reason`)
};
std::string_view verdict_name(GangVerdict verdict);

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
  const PlacementPolicy* policy = nullptr;  // nullptr = best-fit
  // Work limit of the exact search, in candidate nodes examined; counted, never timed, so the
  // answer is the same on every machine.
  std::uint64_t effort = 2'000'000;
  bool dry_run = false;  // decide and report the placement, but leave the state unchanged
  // Domains of the levels from the topology module (hierarchical Kueue TAS levels, built for this
  // state) instead of bare node labels; a level it does not know falls back to the labels.
  const topology::ClusterTopology* topology = nullptr;
};

// A necessary condition, with its numbers: "group worker: 64 tasks needed, 57 fit".
struct GangBound {
  std::string what;
  std::int64_t needed = 0;
  std::int64_t available = 0;
};

struct GangResult {
  GangVerdict verdict = GangVerdict::kUndecided;
  GangMethod method = GangMethod::kNone;
  std::vector<TaskPlacement> tasks;  // the placement when feasible (group, replica, assignment)
  std::vector<std::int32_t> placed;  // tasks placed per group (between min_replicas and replicas)
  std::string domain;                // the topology domain used (label value or node name), if one
  std::size_t domains_used = 0;      // distinct domains of the topology level used (0 without one)
  std::string reason;                // one line for people, with numbers
  std::vector<GangBound> bounds;     // the failing bounds (infeasible) or the tightest checked
  std::uint64_t effort_used = 0;
};

// Decides and places one gang. On kFeasible every task is reserved on `state` (not committed: the
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

// One line per gang result, e.g. "llm: feasible (greedy): 65 tasks on 9 nodes in rack rack-3".
std::string describe(const GangSpec& spec, const GangResult& result, const ClusterState& state);

}  // namespace gpusched
