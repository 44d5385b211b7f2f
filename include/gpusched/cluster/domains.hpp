// gpusched/cluster/domains.hpp — topology levels and their domains: one rule for every family.
//
// What it is for. Gang placement ("all workers in one rack"), spread ("at most 2 replicas per
// zone"), anti-affinity and the topology module's node-set picks all ask the same question: which
// nodes form one domain of a level? Before this header, gang and topology answered it differently
// (rack "r1" under two blocks was one domain in gang and two in topology). Both now call this.
//
// Levels. A level is a node label key, outermost first, as in Kueue's Topology Aware Scheduling:
//
//   {"topology.kubernetes.io/block", "topology.kubernetes.io/rack", "kubernetes.io/hostname"}
//
// The level "node" (or "kubernetes.io/hostname") makes every node its own domain.
//
// The short-name rule. A level may be named by its whole key or by any suffix of the key that
// starts right after a '/' or a '-': "topology.kubernetes.io/rack" answers to "rack",
// "cloud.provider.com/topology-block" to "topology-block" and "block". The display name
// (`level_short_name`) is the shortest such suffix. A name that two keys answer to is ambiguous and
// resolves to nothing.
//
// The domain rule. A domain at level l is identified by the path of label values of levels
// 0..l, from the top level down: rack "r1" under block "b1" and rack "r1" under block "b2" are two
// domains, named "b1/r1" and "b2/r1". A node lacking the label of any level of the hierarchy is in
// no domain of it at all ("unplaced"; Kueue TAS leaves such nodes out the same way), so every
// family sees the same nodes in a block whether it asks for blocks or racks. The hierarchy is what
// the caller declares: the levels of a
// `DomainTree` (the topology module's ClusterTopology holds one), or the levels declared on the
// state (`ClusterState::set_topology_levels`). A level that is in no declared hierarchy is a
// hierarchy of one level: its domains are the distinct values of its label.
//
//   DomainTree t = DomainTree::from_labels(state, {"topology.kubernetes.io/block",
//                                                   "topology.kubernetes.io/rack"});
//   DomainId d = t.node_domain(n, 1);          // n's rack, kNoDomain when unplaced
//   std::string where = t.path_name(1, d);     // "b1/r1"
//
// Cost: O(nodes x levels) hash insertions to build; every accessor is O(1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched {

// kNodeLevel ("node") and the one LevelMode (kNone, kRequired, kPreferred) are the job model's:
// cluster/views.hpp.

constexpr bool is_node_level(std::string_view level) {
  return level == kNodeLevel || level == "kubernetes.io/hostname";
}

// Whether `name` names the label key `key` under the short-name rule (see the essay).
constexpr bool level_names_key(std::string_view key, std::string_view name) {
  if (name.empty()) return false;
  if (key == name) return true;
  if (key.size() <= name.size() || key.substr(key.size() - name.size()) != name) return false;
  const char sep = key[key.size() - name.size() - 1];
  return sep == '/' || sep == '-';
}

// The display name of a level: the shortest suffix of the key after a '/' or '-'
// ("topology.kubernetes.io/rack" -> "rack"), or the key itself.
constexpr std::string_view level_short_name(std::string_view key) {
  const auto sep = key.find_last_of("/-");
  if (sep == std::string_view::npos || sep + 1 == key.size()) return key;
  return key.substr(sep + 1);
}

// The one level among `keys` that `name` names (exact key first, then the short-name rule);
// nullopt when none does or several do.
inline std::optional<std::size_t> find_level_key(std::span<const std::string> keys, std::string_view name) {
  for (std::size_t l = 0; l < keys.size(); ++l)
    if (keys[l] == name) return l;
  std::optional<std::size_t> found;
  for (std::size_t l = 0; l < keys.size(); ++l) {
    if (!level_names_key(keys[l], name)) continue;
    if (found) return std::nullopt;  // ambiguous
    found = l;
  }
  return found;
}

// The label key a level names on this state ("" when none does): a key some node has, matched by
// the short-name rule; several matching keys are ambiguous and give "".
inline std::string resolve_level(const ClusterState& state, std::string_view level) {
  if (level.empty()) return {};
  if (state.labels().key_id(level) != ClusterState::kUnknownLabel) return std::string(level);
  std::vector<std::string> keys;  // each key some node has, once
  std::vector<bool> seen;
  for (NodeId n = 0; n < state.node_count(); ++n)
    for (const auto& l : state.labels().of(n)) {
      if (l.key >= seen.size()) seen.resize(l.key + 1, false);
      if (seen[l.key]) continue;
      seen[l.key] = true;
      keys.emplace_back(state.labels().key(l.key));
    }
  const auto l = find_level_key(keys, level);
  return l ? keys[*l] : std::string{};
}

using DomainId = std::uint32_t;
inline constexpr DomainId kNoDomain = ~DomainId{0};

// The domains of an ordered list of levels (outermost first) over a set of nodes, built by the
// domain rule above. Domain ids are per level, in order of first appearance in node order.
class DomainTree {
 public:
  DomainTree() = default;

  // `paths[n]` is node n's domain value at every level (size == level_keys.size()), or empty for an
  // unplaced node. The caller checks sizes (ClusterTopology::from_paths reports them as errors).
  static DomainTree from_paths(std::vector<std::string> level_keys, const std::vector<std::vector<std::string>>& paths);
  // Every node's path from its labels; a node lacking any level's label is unplaced.
  static DomainTree from_labels(const ClusterState& state, std::vector<std::string> level_keys);

  std::size_t level_count() const { return level_keys_.size(); }
  const std::string& level_key(std::size_t l) const { return level_keys_[l]; }
  std::span<const std::string> level_keys() const { return level_keys_; }
  // A level by its key or short name (see the essay).
  std::optional<std::size_t> find_level(std::string_view name) const { return find_level_key(level_keys_, name); }

  std::size_t node_count() const { return node_domain_.empty() ? 0 : node_domain_[0].size(); }
  std::size_t domain_count(std::size_t level) const { return name_[level].size(); }
  DomainId node_domain(NodeId n, std::size_t level) const { return node_domain_[level][n]; }
  // The domain's own label value ("r1") and its path from the top ("b1/r1").
  std::string_view domain_name(std::size_t level, DomainId d) const { return name_[level][d]; }
  std::string path_name(std::size_t level, DomainId d) const {
    // Collected bottom-up, appended top-down (prepending trips GCC 12's -Wstringop-overflow).
    std::vector<std::string_view> parts(level + 1);
    for (std::size_t k = level + 1; k-- > 0;) {
      parts[k] = name_[k][d];
      if (k > 0) d = parent_[k][d];
    }
    std::string path;
    for (std::size_t k = 0; k <= level; ++k) {
      if (k > 0) path += '/';
      path += parts[k];
    }
    return path;
  }
  DomainId domain_parent(std::size_t level, DomainId d) const { return parent_[level][d]; }
  std::span<const NodeId> domain_nodes(std::size_t level, DomainId d) const { return nodes_[level][d]; }
  std::span<const DomainId> top_domains() const { return top_; }
  std::span<const DomainId> domain_children(std::size_t level, DomainId d) const { return children_[level][d]; }
  std::size_t unplaced_nodes() const { return unplaced_; }

 private:
  std::vector<std::string> level_keys_;
  std::vector<std::vector<DomainId>> node_domain_;              // [level][node]
  std::vector<std::vector<std::string>> name_;                  // [level][domain]
  std::vector<std::vector<DomainId>> parent_;                   // [level][domain]
  std::vector<std::vector<std::vector<DomainId>>> children_;    // [level][domain] -> level + 1 ids
  std::vector<std::vector<std::vector<NodeId>>> nodes_;         // [level][domain] -> nodes, ascending
  std::vector<DomainId> top_;                                   // level-0 domains in order
  std::size_t unplaced_ = 0;
};

inline DomainTree DomainTree::from_paths(std::vector<std::string> level_keys,
                                         const std::vector<std::vector<std::string>>& paths) {
  DomainTree t;
  const std::size_t L = level_keys.size();
  t.level_keys_ = std::move(level_keys);
  t.node_domain_.assign(L, std::vector<DomainId>(paths.size(), kNoDomain));
  t.name_.resize(L);
  t.parent_.resize(L);
  t.children_.resize(L);
  t.nodes_.resize(L);
  // A domain is its parent plus its own value: (parent id, value) is unique per level.
  std::vector<std::unordered_map<std::string, DomainId>> ids(L);
  std::string key;
  for (std::size_t n = 0; n < paths.size(); ++n) {
    if (paths[n].size() != L || L == 0) {
      ++t.unplaced_;
      continue;
    }
    DomainId parent = kNoDomain;
    for (std::size_t l = 0; l < L; ++l) {
      key.assign(reinterpret_cast<const char*>(&parent), sizeof parent);
      key += paths[n][l];
      auto [it, inserted] = ids[l].try_emplace(key, static_cast<DomainId>(t.name_[l].size()));
      const DomainId d = it->second;
      if (inserted) {
        t.name_[l].push_back(paths[n][l]);
        t.parent_[l].push_back(parent);
        t.children_[l].emplace_back();
        t.nodes_[l].emplace_back();
        if (l == 0)
          t.top_.push_back(d);
        else
          t.children_[l - 1][parent].push_back(d);
      }
      t.node_domain_[l][n] = d;
      t.nodes_[l][d].push_back(static_cast<NodeId>(n));
      parent = d;
    }
  }
  return t;
}

inline DomainTree DomainTree::from_labels(const ClusterState& state, std::vector<std::string> level_keys) {
  std::vector<std::uint32_t> key_ids;
  for (const auto& k : level_keys) key_ids.push_back(state.labels().key_id(k));
  std::vector<std::vector<std::string>> paths(state.node_count());
  for (NodeId n = 0; n < state.node_count(); ++n) {
    std::vector<std::string> path;
    for (std::uint32_t key : key_ids) {
      const std::uint32_t v =
          key == ClusterState::kUnknownLabel ? ClusterState::kUnknownLabel : state.labels().value_of(n, key);
      if (v == ClusterState::kUnknownLabel) break;
      path.emplace_back(state.labels().value(v));
    }
    if (path.size() == key_ids.size()) paths[n] = std::move(path);
  }
  return from_paths(std::move(level_keys), paths);
}

// --- one level as a flat node -> domain map (what gang placement, spread and anti-affinity use) ---

// What a node outside every domain of the level is.
enum class Unlabelled : std::uint8_t {
  kExcluded,   // in no domain (topology and spread constraints never use it)
  kOwnDomain,  // a domain of its own (anti-affinity: it conflicts with nothing else)
};

struct DomainMap {
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::string level;      // as asked
  std::string key;        // the resolved label key; empty for the node level or when unresolved
  bool per_node = false;  // every node its own domain
  bool resolved = false;  // the level names the node level or a level key the nodes have
  std::vector<std::uint32_t> node_domain;    // per node: domain id or kNone
  std::vector<std::string> names;            // per domain: the path ("b1/r1"), or the node name
  std::vector<std::vector<NodeId>> members;  // per domain: node ids, ascending
  std::size_t domain_count() const { return names.size(); }
};

// Level `level` of `tree` as a map. Domain ids are in increasing order of the domain's name (its
// path, or the node name for a node that is its own domain), so "ties by name" and "ties by domain
// id" are the same rule. `resolved` is false when the tree has no such level or was built for
// another node count; the caller then falls back to the labels.
inline DomainMap build_domains(const DomainTree& tree, const ClusterState& state, std::string_view level,
                               Unlabelled unlabelled) {
  DomainMap m;
  m.level = std::string(level);
  const auto l = tree.find_level(level);
  if (!l || tree.node_count() != state.node_count()) return m;
  m.resolved = true;
  m.key = tree.level_key(*l);
  const std::size_t n_nodes = state.node_count();
  m.node_domain.assign(n_nodes, DomainMap::kNone);
  // (name, own-domain node or kNoNode, tree domain); own domains get a '\x01' prefix so that they
  // never merge with a label value equal to a node name, and sort first (which only matters for ties).
  struct Keyed {
    std::string name;
    NodeId own = kNoNode;
    DomainId tree_domain = kNoDomain;
  };
  std::vector<Keyed> keyed;
  for (DomainId d = 0; d < tree.domain_count(*l); ++d) keyed.push_back({tree.path_name(*l, d), kNoNode, d});
  if (unlabelled == Unlabelled::kOwnDomain)
    for (NodeId n = 0; n < n_nodes; ++n)
      if (tree.node_domain(n, *l) == kNoDomain) keyed.push_back({"\x01" + std::string(state.node_name(n)), n, kNoDomain});
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.name < b.name; });
  for (Keyed& k : keyed) {
    const auto id = static_cast<std::uint32_t>(m.names.size());
    if (k.own != kNoNode) {
      m.names.push_back(k.name.substr(1));
      m.members.push_back({k.own});
      m.node_domain[k.own] = id;
      continue;
    }
    m.names.push_back(std::move(k.name));
    const auto nodes = tree.domain_nodes(*l, k.tree_domain);
    m.members.emplace_back(nodes.begin(), nodes.end());
    for (NodeId n : nodes) m.node_domain[n] = id;
  }
  return m;
}

// Kueue TAS "BestFit" (kueue/pkg/cache/tas_flavor_snapshot.go), written once for the gang and
// topology families: among `count` candidates (domains, nodes), the one whose room holds `need` with
// the least room, so that bigger free domains stay whole for bigger jobs; ties to the first. `room(i)`
// is candidate i's room. count when none holds it.
template <class Room>
std::size_t best_fit(std::size_t count, std::int64_t need, Room&& room) {
  std::size_t best = count;
  std::int64_t best_room = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t r = room(i);
    if (r >= need && (best == count || r < best_room)) {
      best = i;
      best_room = r;
    }
  }
  return best;
}

// The candidates in the order a gang tries them: those whose room holds `need`, least room first
// (best_fit's choice first), then those that do not, most room first (where an elastic gang gets
// most); ties keep the given order.
inline void best_fit_order(std::vector<std::size_t>& candidates, std::span<const std::int64_t> room, std::int64_t need) {
  std::stable_sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    const bool fa = room[a] >= need, fb = room[b] >= need;
    if (fa != fb) return fa;
    return fa ? room[a] < room[b] : room[a] > room[b];
  });
}

namespace detail {
// Every node its own domain, ids in node-name order.
inline void one_domain_per_node(const ClusterState& state, DomainMap& m) {
  const std::size_t n_nodes = state.node_count();
  std::vector<NodeId> order(n_nodes);
  for (NodeId n = 0; n < n_nodes; ++n) order[n] = n;
  std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return state.node_name(a) < state.node_name(b); });
  m.node_domain.assign(n_nodes, DomainMap::kNone);
  for (NodeId n : order) {
    m.node_domain[n] = static_cast<std::uint32_t>(m.names.size());
    m.names.emplace_back(state.node_name(n));
    m.members.push_back({n});
  }
}
}  // namespace detail

// Level `level` from the nodes' labels. The node level makes every node its own domain. A label
// key is found by the short-name rule; its hierarchy is the state's declared topology levels when
// the key is one of them, else the key alone (see the essay).
inline DomainMap build_domains(const ClusterState& state, std::string_view level, Unlabelled unlabelled) {
  if (is_node_level(level)) {
    DomainMap m;
    m.level = std::string(level);
    m.per_node = m.resolved = true;
    detail::one_domain_per_node(state, m);
    return m;
  }
  const std::string key = resolve_level(state, level);
  if (key.empty()) {
    DomainMap m;
    m.level = std::string(level);
    if (unlabelled == Unlabelled::kOwnDomain)
      detail::one_domain_per_node(state, m);
    else
      m.node_domain.assign(state.node_count(), DomainMap::kNone);
    return m;
  }
  const auto declared = state.topology().levels();
  std::vector<std::string> hierarchy{key};
  if (const auto it = std::find(declared.begin(), declared.end(), key); it != declared.end())
    hierarchy.assign(declared.begin(), declared.end());
  DomainMap m = build_domains(DomainTree::from_labels(state, std::move(hierarchy)), state, key, unlabelled);
  m.level = std::string(level);
  return m;
}

}  // namespace gpusched
