#include "io/gang_json.hpp"
#include "io/json_input.hpp"

#include <new>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpusched::io::detail {
namespace {

using json = nlohmann::json;

struct GangParseError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw GangParseError{std::move(message)}; }


const json* find(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

void only_keys(const json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
  if (!obj.is_object()) fail(fmt::format("{}: expected an object, got {}", path, shown(obj)));
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (auto k : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    fail(fmt::format("{}.{}: unknown field (known: {})", path, detail::shown_key(key), list));
  }
}

std::string text(const json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty())
    fail(fmt::format("{}: expected a non-empty string, got {}", path, shown(v)));
  // Level and group names are printed in explanations and tables.
  if (auto st = detail::check_name(v.get_ref<const std::string&>(), path); !st) fail(st.error().message);
  return v.get<std::string>();
}

std::int32_t count(const json& v, const std::string& path) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1'000'000)
    fail(fmt::format("{}: expected an integer in 0..1000000, got {}", path, shown(v)));
  return static_cast<std::int32_t>(v.get<std::int64_t>());
}

TopologyConstraint read_topology(const json& v, const std::string& path) {
  TopologyConstraint t;
  if (v.is_string()) {
    t.level = text(v, path);
    return t;
  }
  only_keys(v, path, {"level", "mode"});
  const json* level = find(v, "level");
  if (!level) fail(fmt::format("{}.level: missing", path));
  t.level = text(*level, path + ".level");
  if (const json* mode = find(v, "mode")) {
    const std::string m = text(*mode, path + ".mode");
    if (m == "required") t.mode = LevelMode::kRequired;
    else if (m == "preferred") t.mode = LevelMode::kPreferred;
    else fail(fmt::format("{}.mode: expected \"required\" or \"preferred\", got {}", path, detail::shown(m, 40)));
  }
  return t;
}

GangConstraints::Spread read_spread(const json& v, const std::string& path, bool with_groups) {
  if (with_groups) only_keys(v, path, {"level", "max_per_domain", "min_domains", "groups"});
  else only_keys(v, path, {"level", "max_per_domain", "min_domains"});
  GangConstraints::Spread s;
  const json* level = find(v, "level");
  if (!level) fail(fmt::format("{}.level: missing", path));
  s.level = text(*level, path + ".level");
  if (const json* m = find(v, "max_per_domain")) s.max_per_domain = count(*m, path + ".max_per_domain");
  if (const json* m = find(v, "min_domains")) s.min_domains = count(*m, path + ".min_domains");
  if (s.max_per_domain == 0 && s.min_domains == 0)
    fail(fmt::format("{}: give max_per_domain or min_domains (or both)", path));
  if (const json* g = find(v, "groups")) {
    if (!g->is_array()) fail(fmt::format("{}.groups: expected an array of group names, got {}", path, shown(*g)));
    for (std::size_t i = 0; i < g->size(); ++i) s.groups.push_back(text((*g)[i], fmt::format("{}.groups[{}]", path, i)));
  }
  return s;
}

void read_spreads(const json& v, const std::string& path, bool with_groups, const std::string& group,
                  GangConstraints& out) {
  auto one = [&](const json& item, const std::string& p) {
    auto s = read_spread(item, p, with_groups);
    if (!group.empty()) s.groups = {group};
    out.spread.push_back(std::move(s));
  };
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) one(v[i], fmt::format("{}[{}]", path, i));
  } else {
    one(v, path);
  }
}

}  // namespace

Result<GangConstraints> read_gang_constraints(const json& job, std::string_view path_view) {
  const std::string path(path_view);
  try {
    GangConstraints out;
    if (const json* t = find(job, "topology")) out.topology = read_topology(*t, path + ".topology");
    if (const json* s = find(job, "spread")) read_spreads(*s, path + ".spread", true, {}, out);
    if (const json* a = find(job, "anti_affinity")) {
      const std::string p = path + ".anti_affinity";
      if (!a->is_array()) fail(fmt::format("{}: expected an array, got {}", p, shown(*a)));
      for (std::size_t i = 0; i < a->size(); ++i) {
        const std::string pi = fmt::format("{}[{}]", p, i);
        const json& item = (*a)[i];
        GangConstraints::Anti anti;
        const json* groups = &item;
        if (item.is_object()) {
          only_keys(item, pi, {"groups", "level"});
          groups = find(item, "groups");
          if (!groups) fail(fmt::format("{}.groups: missing", pi));
          if (const json* l = find(item, "level")) anti.level = text(*l, pi + ".level");
        }
        if (!groups->is_array() || groups->empty() || groups->size() > 2)
          fail(fmt::format("{}.groups: expected one or two group names, got {}", pi, shown(*groups)));
        anti.group_a = text((*groups)[0], pi + ".groups[0]");
        anti.group_b = groups->size() == 2 ? text((*groups)[1], pi + ".groups[1]") : anti.group_a;
        out.anti_affinity.push_back(std::move(anti));
      }
    }
    if (const json* groups = find(job, "groups"); groups && groups->is_array()) {
      for (std::size_t g = 0; g < groups->size(); ++g) {
        const json& gv = (*groups)[g];
        const std::string p = fmt::format("{}.groups[{}]", path, g);
        std::string name = fmt::format("group-{}", g);  // the jobs reader's default name
        if (const json* n = find(gv, "name"); n && n->is_string()) name = n->get<std::string>();
        if (find(gv, "topology"))
          fail(fmt::format("{}.topology: a topology level applies to the whole gang; write it on the job", p));
        if (find(gv, "affinity_group"))
          fail(fmt::format("{}.affinity_group: not supported; use topology (together) or anti_affinity (apart)", p));
        if (const json* s = find(gv, "spread")) read_spreads(*s, p + ".spread", false, name, out);
        if (const json* a = find(gv, "anti_affinity")) {
          const std::string pa = p + ".anti_affinity";
          if (!a->is_array()) fail(fmt::format("{}: expected an array, got {}", pa, shown(*a)));
          for (std::size_t i = 0; i < a->size(); ++i) {
            const std::string pi = fmt::format("{}[{}]", pa, i);
            GangConstraints::Anti anti;
            anti.group_a = name;
            const json& item = (*a)[i];
            if (item.is_object()) {
              only_keys(item, pi, {"group", "level"});
              const json* other = find(item, "group");
              if (!other) fail(fmt::format("{}.group: missing", pi));
              anti.group_b = text(*other, pi + ".group");
              if (const json* l = find(item, "level")) anti.level = text(*l, pi + ".level");
            } else {
              anti.group_b = text(item, pi);
            }
            out.anti_affinity.push_back(std::move(anti));
          }
        }
      }
    } else if (find(job, "affinity_group")) {
      fail(fmt::format("{}.affinity_group: not supported; use topology or anti_affinity", path));
    }
    return out;
  } catch (const GangParseError& e) {
    return Error{e.message};
  } catch (const json::exception& e) {
    // The checks above make this unreachable; the reader still never throws.
    return Error{fmt::format("{}: {}", path, detail::json_library_text(e.what()))};
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory", path), ErrorCode::kLimit};
  }
}

bool has_gang_fields(const json& job) {
  for (auto key : {"topology", "spread", "anti_affinity"})
    if (find(job, key)) return true;
  if (const json* groups = find(job, "groups"); groups && groups->is_array())
    for (const json& g : *groups)
      for (auto key : {"spread", "anti_affinity"})
        if (find(g, key)) return true;
  return false;
}

}  // namespace gpusched::io::detail
