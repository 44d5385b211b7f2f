// The cluster-topology JSON reader (format in topology_json.hpp and docs/topology.md). Every
// check names the JSON path of the offending value, so a 4,096-node description with one typo is
// fixed from the message alone.
#include "gpusched/io/topology_json.hpp"

#include <cmath>
#include <initializer_list>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/json_input.hpp"

namespace gpusched::io {
namespace {

using namespace gpusched::topology;

using json = nlohmann::json;

// Short rendering of a JSON value or a name for messages (cut, control characters escaped).
std::string show(const json& v) { return detail::shown(v, 60); }
std::string show(const std::string& v) { return detail::shown(v, 60); }

// Level and domain names appear in tables and all-reduce explanations: no control characters, and
// short enough for a message (a DNS name's 253).
Status checked_name(const std::string& name, const std::string& path) {
  if (auto st = detail::check_name(name, path); !st) return st;
  if (name.size() > 253)
    return Error{fmt::format("{}: name {} is longer than 253 characters", path, show(name)), ErrorCode::kLimit, path};
  return {};
}

Status only_keys(const json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::string list;
      for (std::string_view a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
      const std::string key = detail::shown_key(it.key());
      return Error{fmt::format("{}{}{}: unknown field (expected one of: {})", path, path.empty() ? "" : ".", key,
                               list), ErrorCode::kUnknownField, path.empty() ? key : path + "." + key};
    }
  }
  return {};
}

std::string link_names() {
  std::string s;
  for (const LinkSpec& row : link_table()) s += fmt::format("{}{}", s.empty() ? "" : ", ", row.name);
  return s;
}

Result<std::vector<TopologyLevel>> read_levels(const json& doc) {
  if (!doc.contains("levels") || !doc["levels"].is_array() || doc["levels"].empty())
    return Error{fmt::format("levels: expected a non-empty array, got {}",
                             doc.contains("levels") ? show(doc["levels"]) : std::string("nothing")), ErrorCode::kInvalidValue, "levels"};
  std::vector<TopologyLevel> levels;
  const json& arr = doc["levels"];
  if (arr.size() > kMaxTopologyLevels)
    return Error{fmt::format("levels: {} levels, more than the limit of {}", arr.size(), kMaxTopologyLevels),
                 ErrorCode::kLimit, "levels"};
  for (std::size_t l = 0; l < arr.size(); ++l) {
    const json& lv = arr[l];
    const std::string path = fmt::format("levels[{}]", l);
    if (!lv.is_object()) return Error{fmt::format("{}: expected an object, got {}", path, show(lv)), ErrorCode::kInvalidValue, path};
    if (auto st = only_keys(lv, path, {"name", "link", "links_per_node", "uplink_oversubscription"}); !st)
      return st.error();
    TopologyLevel out;
    if (!lv.contains("name") || !lv["name"].is_string() || lv["name"].get<std::string>().empty())
      return Error{fmt::format("{}.name: expected a non-empty string, got {}", path,
                               lv.contains("name") ? show(lv["name"]) : std::string("nothing")), ErrorCode::kInvalidValue, path + ".name"};
    out.label_key = lv["name"].get<std::string>();
    if (auto st = checked_name(out.label_key, path + ".name"); !st) return st.error();
    for (std::size_t m = 0; m < levels.size(); ++m)
      if (levels[m].label_key == out.label_key)
        return Error{fmt::format("{}.name: {} repeats levels[{}].name", path, show(out.label_key), m), ErrorCode::kDuplicate, path + ".name"};
    if (lv.contains("link")) {
      if (!lv["link"].is_string()) return Error{fmt::format("{}.link: expected a link name, got {}", path, show(lv["link"])), ErrorCode::kInvalidValue, path + ".link"};
      auto k = find_link_kind(lv["link"].get<std::string>());
      if (!k)
        return Error{fmt::format("{}.link: unknown link kind {} (known: {})", path, show(lv["link"]), link_names()), ErrorCode::kUnknownName, path + ".link"};
      out.link = *k;
    }
    if (lv.contains("links_per_node")) {
      const json& v = lv["links_per_node"];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1'000'000)
        return Error{fmt::format("{}.links_per_node: expected an integer >= 1, got {}", path, show(v)), ErrorCode::kInvalidValue, path + ".links_per_node"};
      out.links_per_node = static_cast<std::int32_t>(v.get<std::int64_t>());
    }
    if (lv.contains("uplink_oversubscription")) {
      const json& v = lv["uplink_oversubscription"];
      if (!v.is_number() || !(v.get<double>() >= 1.0) || !std::isfinite(v.get<double>()))
        return Error{fmt::format("{}.uplink_oversubscription: expected a ratio >= 1, got {}", path, show(v)), ErrorCode::kInvalidValue, path + ".uplink_oversubscription"};
      out.uplink_oversubscription = v.get<double>();
    }
    levels.push_back(std::move(out));
  }
  return levels;
}

struct Reader {
  const ClusterState& state;
  const std::vector<TopologyLevel>& levels;
  std::vector<std::vector<std::string>> paths;      // [node] -> domain names
  std::vector<std::string> node_where;              // [node] -> JSON path that placed it
  std::vector<std::unordered_map<std::string, std::string>> seen;  // [level] name -> JSON path

  Status domain(const json& d, const std::string& path, std::size_t l, std::vector<std::string>& prefix) {
    if (!d.is_object()) return Error{fmt::format("{}: expected a domain object, got {}", path, show(d)), ErrorCode::kInvalidValue, path};
    const bool last = l + 1 == levels.size();
    if (auto st = only_keys(d, path, {"name", last ? "nodes" : "children"}); !st) {
      if (!last && d.contains("nodes"))
        return Error{fmt::format("{}.nodes: a {} domain holds \"children\" ({} domains), not nodes", path,
                                 levels[l].label_key, levels[l + 1].label_key), ErrorCode::kInvalidValue, ""};
      if (last && d.contains("children"))
        return Error{fmt::format("{}.children: {} is the last level; its domains hold \"nodes\"", path,
                                 levels[l].label_key), ErrorCode::kInvalidValue, ""};
      return st;
    }
    if (!d.contains("name") || !d["name"].is_string() || d["name"].get<std::string>().empty())
      return Error{fmt::format("{}.name: expected a non-empty string, got {}", path,
                               d.contains("name") ? show(d["name"]) : std::string("nothing")), ErrorCode::kInvalidValue, path + ".name"};
    const std::string name = d["name"].get<std::string>();
    if (auto st = checked_name(name, path + ".name"); !st) return st;
    auto [it, fresh] = seen[l].try_emplace(name, path);
    if (!fresh)
      return Error{fmt::format("{}.name: duplicate {} id {} (also {})", path, levels[l].label_key, show(name), it->second), ErrorCode::kDuplicate, path + ".name"};
    prefix.push_back(name);
    const char* field = last ? "nodes" : "children";
    if (!d.contains(field) || !d[field].is_array())
      return Error{fmt::format("{}.{}: expected an array, got {}", path, field,
                               d.contains(field) ? show(d[field]) : std::string("nothing")), ErrorCode::kInvalidValue, path + "." + std::string(field)};
    const json& items = d[field];
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string ipath = fmt::format("{}.{}[{}]", path, field, i);
      if (!last) {
        if (auto st = domain(items[i], ipath, l + 1, prefix); !st) return st;
        continue;
      }
      if (!items[i].is_string()) return Error{fmt::format("{}: expected a node name, got {}", ipath, show(items[i])), ErrorCode::kInvalidValue, ipath};
      const std::string node = items[i].get<std::string>();
      const NodeId n = state.find_node(node);
      if (n == kNoNode || n >= state.node_count())
        return Error{fmt::format("{}: unknown node {} (not in the cluster)", ipath, show(node)), ErrorCode::kUnknownName, ipath};
      if (!node_where[n].empty())
        return Error{fmt::format("{}: node {} is in two domains (also {})", ipath, show(node), node_where[n]), ErrorCode::kDuplicate, ipath};
      node_where[n] = ipath;
      paths[n] = prefix;
    }
    prefix.pop_back();
    return {};
  }
};

Status generate(const json& g, const std::vector<TopologyLevel>& levels, const ClusterState& state,
                std::vector<std::vector<std::string>>& paths) {
  const std::string path = "fat_tree";
  if (!g.is_object()) return Error{fmt::format("{}: expected an object, got {}", path, show(g)), ErrorCode::kInvalidValue, path};
  if (auto st = only_keys(g, path, {"fanout", "nodes_per_domain"}); !st) return st;
  if (!g.contains("fanout") || !g["fanout"].is_array() || g["fanout"].size() != levels.size())
    return Error{fmt::format("{}.fanout: expected an array of {} counts (one per level), got {}", path, levels.size(),
                             g.contains("fanout") ? show(g["fanout"]) : std::string("nothing")), ErrorCode::kInvalidValue, path + ".fanout"};
  std::vector<std::int64_t> fan;
  std::int64_t domains = 1;
  for (std::size_t l = 0; l < levels.size(); ++l) {
    const json& v = g["fanout"][l];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1'000'000)
      return Error{fmt::format("{}.fanout[{}]: expected an integer >= 1, got {}", path, l, show(v)), ErrorCode::kInvalidValue, path + ".fanout"};
    fan.push_back(v.get<std::int64_t>());
    domains *= fan.back();
    if (domains > 100'000'000) return Error{fmt::format("{}.fanout: more than 10^8 domains", path), ErrorCode::kInvalidValue, path + ".fanout"};
  }
  if (!g.contains("nodes_per_domain") || !g["nodes_per_domain"].is_number_integer() ||
      g["nodes_per_domain"].get<std::int64_t>() < 1 || g["nodes_per_domain"].get<std::int64_t>() > 1'000'000'000)
    return Error{fmt::format("{}.nodes_per_domain: expected an integer from 1 to 10^9, got {}", path,
                             g.contains("nodes_per_domain") ? show(g["nodes_per_domain"]) : std::string("nothing")), ErrorCode::kInvalidValue, path + ".nodes_per_domain"};
  const std::int64_t per = g["nodes_per_domain"].get<std::int64_t>();
  const auto n_nodes = static_cast<std::int64_t>(state.node_count());
  if (n_nodes > domains * per)
    return Error{fmt::format("{}: {} domains x {} nodes_per_domain = {} slots, but the cluster has {} nodes", path,
                             domains, per, domains * per, n_nodes), ErrorCode::kInvalidValue, path};
  for (std::int64_t n = 0; n < n_nodes; ++n) {
    // Mixed-radix digits of the last-level domain index, innermost last; each level's index is the
    // global index within that level.
    std::int64_t leaf = n / per;
    std::vector<std::string> p(levels.size());
    for (std::size_t l = levels.size(); l-- > 0;) {
      p[l] = fmt::format("{}-{}", levels[l].label_key, leaf);
      leaf /= fan[l];
    }
    paths[static_cast<std::size_t>(n)] = std::move(p);
  }
  return {};
}

}  // namespace

Result<ClusterTopology> read_cluster_topology_json(std::string_view text, const ClusterState& state) {
  // The one JSON entry point (io/json_input.hpp): depth and size bounds, 1e400 an error.
  auto parsed = detail::parse_json(text, "topology JSON");
  if (!parsed) return parsed.error();
  const json& doc = *parsed;
  try {
    if (!doc.is_object()) return Error{fmt::format("topology JSON: expected an object, got {}", show(doc)), ErrorCode::kInvalidValue, "topology"};
    if (auto st = only_keys(doc, "", {"levels", "domains", "fat_tree"}); !st) return st.error();
    auto levels = read_levels(doc);
    if (!levels) return levels.error();
    const bool has_domains = doc.contains("domains"), has_tree = doc.contains("fat_tree");
    if (has_domains == has_tree) return Error{"domains, fat_tree: give exactly one of the two", ErrorCode::kInconsistent, "domains"};
    std::vector<std::vector<std::string>> paths(state.node_count());
    if (has_tree) {
      if (auto st = generate(doc["fat_tree"], *levels, state, paths); !st) return st.error();
    } else {
      if (!doc["domains"].is_array())
        return Error{fmt::format("domains: expected an array, got {}", show(doc["domains"])), ErrorCode::kInvalidValue, "domains"};
      Reader r{state, *levels, std::move(paths), std::vector<std::string>(state.node_count()),
               std::vector<std::unordered_map<std::string, std::string>>(levels->size())};
      std::vector<std::string> prefix;
      for (std::size_t i = 0; i < doc["domains"].size(); ++i)
        if (auto st = r.domain(doc["domains"][i], fmt::format("domains[{}]", i), 0, prefix); !st) return st.error();
      paths = std::move(r.paths);
    }
    return ClusterTopology::from_paths(state, std::move(*levels), paths);
  } catch (const json::exception& e) {
    // Type checks above should make this unreachable; keep the never-throws promise regardless.
    return Error{fmt::format("topology JSON: {}", detail::json_library_text(e.what())), ErrorCode::kInvalidValue, "topology"};
  } catch (const std::bad_alloc&) {
    return Error{"topology JSON: out of memory", ErrorCode::kLimit, "topology"};
  }
}

}  // namespace gpusched::io
