#include "gpusched/gang/internal/domains.hpp"

#include "gpusched/topology/cluster_topology.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

namespace gpusched::gang_internal {

bool is_node_level(std::string_view level) { return level == "node" || level == "kubernetes.io/hostname"; }

namespace {

// The key's last component after '/' or '-' ("topology.kubernetes.io/rack" -> "rack",
// "cloud.provider.com/topology-block" -> "block").
bool ends_with_component(std::string_view key, std::string_view level) {
  if (key.size() <= level.size() || key.substr(key.size() - level.size()) != level) return false;
  const char sep = key[key.size() - level.size() - 1];
  return sep == '/' || sep == '-';
}

}  // namespace

std::string resolve_level(const ClusterState& state, std::string_view level) {
  if (level.empty()) return {};
  if (state.label_key_id(level) != ClusterState::kUnknownLabel) return std::string(level);
  std::string found;
  int matches = 0;
  // Walk the labels of the nodes (each key once): the state keeps them as dictionary ids.
  std::vector<bool> seen;
  for (NodeId n = 0; n < state.node_count(); ++n) {
    for (const auto& l : state.node_labels(n)) {
      if (l.key >= seen.size()) seen.resize(l.key + 1, false);
      if (seen[l.key]) continue;
      seen[l.key] = true;
      const std::string_view key = state.label_key(l.key);
      if (ends_with_component(key, level)) {
        ++matches;
        found = std::string(key);
      }
    }
  }
  return matches == 1 ? found : std::string{};
}

DomainMap build_domains(const ClusterState& state, std::string_view level, Unlabelled unlabelled) {
  DomainMap m;
  m.level = std::string(level);
  const std::size_t n_nodes = state.node_count();
  m.node_domain.assign(n_nodes, DomainMap::kNone);
  std::vector<std::pair<std::string, NodeId>> keyed;  // (domain name, node)
  keyed.reserve(n_nodes);
  if (is_node_level(level)) {
    m.per_node = true;
    m.resolved = true;
    for (NodeId n = 0; n < n_nodes; ++n) keyed.emplace_back(std::string(state.node_name(n)), n);
  } else {
    m.key = resolve_level(state, level);
    m.resolved = !m.key.empty();
    const std::uint32_t key_id = m.resolved ? state.label_key_id(m.key) : ClusterState::kUnknownLabel;
    for (NodeId n = 0; n < n_nodes; ++n) {
      const std::uint32_t v =
          key_id == ClusterState::kUnknownLabel ? ClusterState::kUnknownLabel : state.node_label_value(n, key_id);
      if (v != ClusterState::kUnknownLabel) {
        keyed.emplace_back(std::string(state.label_value(v)), n);
      } else if (unlabelled == Unlabelled::kOwnDomain) {
        // A '\x01' prefix keeps an unlabelled node's own domain apart from any label value equal to
        // its name; it sorts such domains first, which only matters for ties.
        keyed.emplace_back(fmt::format("\x01{}", state.node_name(n)), n);
      }
    }
  }
  // Domain ids in name order; members in node order.
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      std::string name = keyed[i].first;
      if (!name.empty() && name[0] == '\x01') name.erase(0, 1);
      m.names.push_back(std::move(name));
      m.members.emplace_back();
    }
    const auto d = static_cast<std::uint32_t>(m.names.size() - 1);
    m.node_domain[keyed[i].second] = d;
    m.members.back().push_back(keyed[i].second);
  }
  for (auto& members : m.members) std::sort(members.begin(), members.end());
  return m;
}

DomainMap build_domains(const topology::ClusterTopology& topo, const ClusterState& state, std::string_view level,
                        Unlabelled unlabelled) {
  DomainMap m;
  m.level = std::string(level);
  const auto l = topo.find_level(level);
  if (!l || topo.node_count() != state.node_count()) return m;
  m.resolved = true;
  m.key = topo.level(*l).label_key;
  const std::size_t n_nodes = state.node_count();
  m.node_domain.assign(n_nodes, DomainMap::kNone);
  const std::size_t count = topo.domain_count(*l);
  for (topology::DomainId d = 0; d < count; ++d) {
    // The path from the top level down, so equal names under different parents stay apart.
    std::string name(topo.domain_name(*l, d));
    topology::DomainId up = d;
    for (std::size_t k = *l; k > 0; --k) {
      up = topo.domain_parent(k, up);
      name = fmt::format("{}/{}", topo.domain_name(k - 1, up), name);
    }
    m.names.push_back(std::move(name));
    const auto nodes = topo.domain_nodes(*l, d);
    m.members.emplace_back(nodes.begin(), nodes.end());
    for (NodeId n : nodes) m.node_domain[n] = static_cast<std::uint32_t>(d);
  }
  if (unlabelled == Unlabelled::kOwnDomain)
    for (NodeId n = 0; n < n_nodes; ++n)
      if (m.node_domain[n] == DomainMap::kNone) {
        m.node_domain[n] = static_cast<std::uint32_t>(m.names.size());
        m.names.emplace_back(state.node_name(n));
        m.members.push_back({n});
      }
  return m;
}

}  // namespace gpusched::gang_internal
