// gpusched/topology/cluster_topology.hpp — racks, blocks and NVLink domains over a ClusterState,
// and the best set of nodes for a multi-node job.
//
// What it is for. A multi-node training job wants its nodes close together: under one leaf switch,
// in one rack, inside one GB200 NVL72 NVLink domain. Kueue's Topology Aware Scheduling (TAS)
// describes that closeness with node labels naming levels, outermost first:
//
//   levels = {"topology.kubernetes.io/block",   // a spine block
//             "topology.kubernetes.io/rack",    // a leaf switch / rack
//             "kubernetes.io/hostname"}         // the node itself (optional as the last level)
//
// A *domain* at level l is the set of nodes sharing the label values of levels 0..l (so rack "r1"
// in block "b1" and rack "r1" in block "b2" are different domains, as in Kueue) — the one domain
// rule of gpusched/cluster/domains.hpp, which gang placement uses too. Nodes lacking any
// level's label are left out of topology-aware picks (reported in `unplaced_nodes`). Each level may
// carry the link that joins its children (an InfiniBand leaf, a spine, NVLink 5 inside an NVL72
// domain) for all-reduce estimates across nodes.
//
// How to use it.
//
//   auto topo = ClusterTopology::from_labels(state, {{"topology.kubernetes.io/block", LinkKind::kIbNdr},
//                                                     {"topology.kubernetes.io/rack", LinkKind::kIbNdr}});
//   auto need = topo->constraint(LevelMode::kRequired, "topology.kubernetes.io/rack").value();
//   NodeSetPick pick = topo->pick_nodes(state, request, /*tasks=*/16, need);
//   if (pick.found()) { for (i...) place pick.tasks_per_node[i] tasks on pick.nodes[i] } else pick.reason
//
// A fabric written down as JSON (levels with links and leaf oversubscription, nested domains or a
// fat-tree generator) is read by read_cluster_topology_json (topology_json.hpp); ClusterGraph
// (cluster_graph.hpp) turns either kind into a Boost graph and estimates a node set's all-reduce.
//
// `pick_nodes` never changes the state; the caller reserves the tasks (see gpusched/gang). A caller
// with its own notion of per-node capacity (several task groups, partial reservations) passes a
// capacity vector instead of a request.
//
// The algorithm (Kueue TAS "BestFit", extended to look below the requested level):
//   1. capacity of a node = how many tasks of the request fit on it now; capacities are summed up
//      the domain tree;
//   2. the level: the deepest level at which some single domain holds all tasks, searched from the
//      node level upwards; kRequired stops at the required level (no domain there holds the job ->
//      not found, with the largest domain's capacity in the reason), kPreferred goes on to the whole
//      cluster;
//   3. the domain: among those that fit at that level, the one with the LEAST capacity (best fit),
//      so that the large free domains stay intact for later large jobs; ties to the domain seen
//      first (cluster order);
//   4. descending: inside the chosen domain, children are taken largest-first until the remaining
//      tasks fit in one more child, and that last child is the smallest one that holds the
//      remainder (best fit again); recursively down to nodes.
// The result uses as few domains as possible at every level, and among equal choices leaves the
// better-connected free groups whole.
//
// kNone is deliberately different: it ignores the topology and packs as a plain best-fit
// scheduler does (kube-scheduler's MostAllocated scoring), task by task on the node with the least
// room that still holds one, ties to the lower node id. It may spread a job over more nodes and
// domains than needed; it is the baseline the topology-aware modes are measured against (compare
// the two with ClusterGraph::allreduce). kPreferred with level 0 is "as tight as possible, anywhere".
//
// Cost: O(nodes x levels) to aggregate plus a sort of each visited domain's children; 4,096 nodes
// take well under 5 ms (benchmarks/topology_bench.cpp; figures in benchmarks/README.md).
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/domains.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/topology/links.hpp"

namespace gpusched::topology {

// At most this many levels (checked by every constructor): the walks recurse once per level.
inline constexpr std::size_t kMaxTopologyLevels = 32;

// One level of the hierarchy, outermost first.
struct TopologyLevel {
  std::string label_key;                 // node label naming the domain at this level
  LinkKind link = LinkKind::kIbNdr;      // what joins two children of one domain of this level
  std::int32_t links_per_node = 1;       // ports (rails) per node on that link: 8 rails of NDR = 8
  // Oversubscription of the uplinks from each domain of THIS level to its parent (a leaf built 2:1
  // has half as much bandwidth up to the spine as down to its hosts). 1 = non-blocking. Used by
  // ClusterGraph (cluster_graph.hpp); ignored by pick_nodes.
  double uplink_oversubscription = 1.0;
};

// One domain rule and one LevelMode for every family: gpusched/cluster/domains.hpp.
using gpusched::DomainId;
using gpusched::DomainTree;
using gpusched::kNoDomain;
using gpusched::LevelMode;

struct LevelConstraint {
  LevelMode mode = LevelMode::kNone;
  std::size_t level = 0;  // index into the levels (ignored for kNone)
};

// How a set of nodes is spread: the deepest level whose single domain holds them all.
struct NodeSpan {
  // Level index, or kClusterWide when the nodes are in different top-level domains (or some are
  // unplaced), or kSingleNode when they are all one node.
  std::size_t level = kClusterWide;
  DomainId domain = kNoDomain;
  static constexpr std::size_t kClusterWide = ~std::size_t{0};
  static constexpr std::size_t kSingleNode = ~std::size_t{0} - 1;
};

struct NodeSetPick {
  std::vector<NodeId> nodes;                // distinct nodes, in the order they were chosen
  std::vector<std::int32_t> tasks_per_node; // parallel to `nodes`; sums to the requested tasks
  NodeSpan span;                            // where the chosen nodes live
  // For kPreferred: whether the nodes are inside one domain of the preferred level (or deeper).
  // For kRequired it is `found`; for kNone, true.
  bool preference_met = false;
  std::string reason;                       // when not found, one line with numbers
  // The same answer in the common vocabulary (core/outcome.hpp): kPlaced when found; kInvalid for
  // bad arguments; otherwise kNotNow or, from the state overload only, kInfeasible when the pick
  // fails even with every eligible node's resources free. Reasons: kNoDomainFits (unit tasks,
  // needed = tasks, available = the largest domain's room, count = domains at the level,
  // subject = the level index) or kTooFewTasksFit (available = tasks that fit in the cluster).
  // The capacity overload cannot know what is preemptible: it says kNotNow.
  Outcome outcome{Verdict::kNotNow, {}};  // until a pick is made
  // Whether the nodes were found: the outcome says it (one vocabulary, no second flag).
  bool found() const { return outcome.verdict == Verdict::kPlaced; }
};

class ClusterTopology {
 public:
  // Kueue TAS style: every node's domain path from its labels. Fails on no levels, an empty or
  // repeated label key. Nodes lacking a level's label are unplaced (not an error).
  static Result<ClusterTopology> from_labels(const ClusterState& state, std::vector<TopologyLevel> levels);

  // Explicit paths (from a JSON description of a fat tree or NVLink domains): `paths[n]` is node
  // n's domain name at each level (size == levels.size()), or empty for an unplaced node. Fails when
  // a path has the wrong length or an empty name, or when paths.size() != state.node_count().
  static Result<ClusterTopology> from_paths(const ClusterState& state, std::vector<TopologyLevel> levels,
                                            const std::vector<std::vector<std::string>>& paths);

  std::size_t level_count() const { return levels_.size(); }
  const TopologyLevel& level(std::size_t l) const { return levels_[l]; }
  // A level by its label key or a short name ("rack" for "topology.kubernetes.io/rack";
  // cluster/domains.hpp has the rule); nullopt when unknown or ambiguous.
  std::optional<std::size_t> find_level(std::string_view name) const { return tree_.find_level(name); }
  // A constraint naming a level; an error naming the level when it is unknown.
  Result<LevelConstraint> constraint(LevelMode mode, std::string_view level_name) const;

  // The domains, by the one domain rule (a domain is the path of label values from the top level
  // down); what gang placement uses inside a domain (gpusched::build_domains).
  const DomainTree& domains() const { return tree_; }
  std::size_t node_count() const { return tree_.node_count(); }
  std::size_t domain_count(std::size_t level) const { return tree_.domain_count(level); }
  // Node n's domain at `level`, or kNoDomain for an unplaced node.
  DomainId node_domain(NodeId n, std::size_t level) const { return tree_.node_domain(n, level); }
  std::string_view domain_name(std::size_t level, DomainId d) const { return tree_.domain_name(level, d); }
  // The parent domain (at level - 1) of a domain at level >= 1.
  DomainId domain_parent(std::size_t level, DomainId d) const { return tree_.domain_parent(level, d); }
  // Nodes of a domain, in increasing id order.
  std::span<const NodeId> domain_nodes(std::size_t level, DomainId d) const { return tree_.domain_nodes(level, d); }
  // Level-0 domains in cluster order, and the children (level + 1 domains) of a domain.
  std::span<const DomainId> top_domains() const { return tree_.top_domains(); }
  std::span<const DomainId> domain_children(std::size_t level, DomainId d) const {
    return tree_.domain_children(level, d);
  }
  std::size_t unplaced_nodes() const { return tree_.unplaced_nodes(); }

  // The deepest level one domain of which holds all `nodes`.
  NodeSpan span(std::span<const NodeId> nodes) const;

  // Inter-node bottleneck for a set of nodes: the link of the level at which they split (per
  // node, per direction, GB/s, x links_per_node), and its per-hop latency; 0/0 for one node.
  double span_bandwidth_gbps(const NodeSpan& span) const;
  double span_latency_us(const NodeSpan& span) const;
  // Estimated all-reduce time of `bytes` over `gpus_per_node` GPUs on each of the nodes, given
  // the intra-node bus bandwidth (GB/s, e.g. NodeTopology::score(...).bus_bandwidth_gbps):
  // a hierarchical ring whose bottleneck is min(intra, inter-node / gpus_per_node).
  double allreduce_us(std::span<const NodeId> nodes, std::int32_t gpus_per_node, double bytes,
                      double intra_node_gbps) const;

  // How many tasks of `request` fit on node n now (0 when the node does not fit one). Whole-GPU
  // tasks count idle allowed GPUs; shared tasks count free shares; CPU and memory also bound it.
  static std::int32_t task_capacity(const ClusterState& state, NodeId n, const TaskRequest& request);

  // The best set of nodes for `tasks` tasks of `request` (see the essay above). Never throws;
  // infeasibility is `found() == false` with a reason.
  NodeSetPick pick_nodes(const ClusterState& state, const TaskRequest& request, std::int32_t tasks,
                         const LevelConstraint& constraint) const;
  // Same, with the caller's per-node capacity (size node_count(); negative counts as 0).
  NodeSetPick pick_nodes(std::span<const std::int32_t> capacity, std::int32_t tasks,
                         const LevelConstraint& constraint) const;

  // A level's display name ("rack" for "topology.kubernetes.io/rack"): gpusched::level_short_name.
  std::string_view level_short_name(std::size_t l) const { return gpusched::level_short_name(levels_[l].label_key); }

 private:
  std::vector<TopologyLevel> levels_;
  DomainTree tree_;

  static Status check_levels(const std::vector<TopologyLevel>& levels);
  static Result<ClusterTopology> build(std::vector<TopologyLevel> levels,
                                       const std::vector<std::vector<std::string>>& paths);
};

}  // namespace gpusched::topology

#if GPUSCHED_HEADER_ONLY
#include "gpusched/topology/detail/cluster_topology_impl.hpp"
#endif
