// gpusched/gang/internal/domains.hpp — nodes grouped into domains of a topology level.
//
// A level is a node label key (Kueue topology-aware scheduling: "topology.kubernetes.io/zone",
// "cloud.provider.com/topology-rack"); a domain is the set of nodes sharing one value of it. The
// level "node" (or "kubernetes.io/hostname") makes every node its own domain. A level given by its
// last component ("rack") resolves to the one label key that ends in "/rack" or "-rack", so jobs can
// name levels the way people say them.
//
// Everything the gang solver needs from a level is this map. It is built from node labels, or, when
// the caller passes the topology module's ClusterTopology (GangOptions::topology), from its levels.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched::topology {
class ClusterTopology;
}

namespace gpusched::gang_internal {

// What a node lacking the level's label is.
enum class Unlabelled : std::uint8_t {
  kExcluded,   // in no domain (topology and spread constraints never use it)
  kOwnDomain,  // a domain of its own (anti-affinity: it conflicts with nothing else)
};

struct DomainMap {
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::string level;      // as asked
  std::string key;        // the resolved label key; empty for the node level or when unresolved
  bool per_node = false;  // every node its own domain
  bool resolved = false;  // the level names the node level or a label key some node has
  std::vector<std::uint32_t> node_domain;    // per node: domain id or kNone
  std::vector<std::string> names;            // per domain: the label value, or the node name
  std::vector<std::vector<NodeId>> members;  // per domain: node ids, ascending
  std::size_t domain_count() const { return names.size(); }
};

// The label key a level names on this state ("" when none does). Exact key first; else the one key
// whose last '/'- or '-'-separated component equals the level; several such keys = ambiguous = "".
std::string resolve_level(const ClusterState& state, std::string_view level);

bool is_node_level(std::string_view level);

// Domain ids are assigned in increasing order of the domain's name (label value or node name), so
// "ties by name" and "ties by domain id" are the same rule.
DomainMap build_domains(const ClusterState& state, std::string_view level, Unlabelled unlabelled);

// The domains of a level of the topology module's ClusterTopology (Kueue TAS levels): a domain is a
// path of label values, so rack "r1" of block "b1" and rack "r1" of block "b2" are two domains,
// named "b1/r1" and "b2/r1". `resolved` is false when the topology has no such level (or was built
// for another state); the caller then falls back to the labels.
DomainMap build_domains(const topology::ClusterTopology& topology, const ClusterState& state, std::string_view level,
                        Unlabelled unlabelled);

}  // namespace gpusched::gang_internal
