// gpusched/io/topology_json.hpp — a cluster's fat tree / NVLink domains from JSON.
//
// What it is for. Node labels (ClusterTopology::from_labels) are how Kubernetes clusters describe
// racks; an operator who knows the fabric (a two-level InfiniBand fat tree, GB200 NVL72 racks under
// leaf switches) can instead write it down once, with the links and the leaf oversubscription that
// labels cannot carry. This reads that description into a ClusterTopology (via from_paths), so the
// same node-set picks and all-reduce estimates apply.
//
// The format (docs/topology.md has the full reference), outermost level first:
//
//   {"levels": [{"name": "spine", "link": "ib-ndr", "links_per_node": 8},
//               {"name": "leaf",  "link": "ib-ndr", "links_per_node": 8, "uplink_oversubscription": 2},
//               {"name": "nvl",   "link": "nvlink5", "links_per_node": 72}],
//    "domains": [{"name": "s0", "children": [
//                  {"name": "leaf0", "children": [{"name": "nvl0", "nodes": ["gb200-00", "gb200-01"]}]}]}]}
//
// A level's "link" (a link-table name, links.hpp) joins two children of one of its domains;
// "links_per_node" (default 1) is how many such ports each host has; "uplink_oversubscription"
// (default 1) is the ratio of the bandwidth below a domain of that level to the bandwidth it has up
// to its parent. Domains nest: a domain of a non-last level has "children" (domains of the next
// level), one of the last level has "nodes" (node names of the cluster). Because the description
// is a tree written as nesting, it cannot have cycles; what can go wrong is a repeated domain name
// in one level, a node named twice, an unknown node or link — each an error naming the JSON path
// and the value. Nodes of the cluster that no domain names are unplaced (as with missing labels).
//
// Or, for a regular fabric, a generator instead of "domains":
//
//   {"levels": [...], "fat_tree": {"fanout": [4, 16], "nodes_per_domain": 32}}
//
// which makes fanout[0] domains at level 0, fanout[l] children under each domain of level l - 1,
// and fills the last level's domains with nodes_per_domain nodes each, in cluster order; domains
// are named "<level name>-<index within the level>" ("leaf-17"). The cluster must not have more
// nodes than slots (fewer leave the last domains short or absent).
//
// How to use it (no file I/O here: the caller reads the text):
//
//   auto topo = gpusched::io::read_cluster_topology_json(text, state);   // compiled: link gpusched::io
//   if (!topo) report(topo.error().message);   // "domains[0].children[1].nodes[3]: unknown node 'n-99'"
// Threads: the readers keep no state between calls and may run concurrently (a reader taking a
// ClusterState only reads it). Rules for every reader (limits, unknown fields, names, line endings,
// errors as values): docs/formats.md, "Every reader".
#pragma once

#include <string_view>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/topology/cluster_topology.hpp"

namespace gpusched::io {

// Reads the JSON text above for the nodes of `state`. Never throws.
Result<topology::ClusterTopology> read_cluster_topology_json(std::string_view text, const ClusterState& state);

}  // namespace gpusched::io
