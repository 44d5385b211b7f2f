// `gpusched mig ...`: MIG layouts, profile tables from nvidia-smi text, placement and re-partition
// plans on a described cluster. Formats: docs/mig.md.
#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "io/cluster_json_detail.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/mig_layout.hpp"
#include "gpusched/core/mig_profiles.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/mig_nvidia_smi.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/mig/planner.hpp"
#include "io/json_input.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_mig {

using nlohmann::json;
namespace mig = gpusched::mig;

const mig::MigCatalog& catalog() { return mig::MigCatalog::builtin(); }

std::string known_models() {
  std::string out;
  for (std::size_t m = 0; m < catalog().size(); ++m)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", catalog().spec(static_cast<mig::MigModelId>(m)).model);
  return out;
}

mig::MigModelId find_model(const std::string& name, const std::string& field) {
  auto m = catalog().find(name);
  if (!m) throw InputError(fmt::format("{}: unknown MIG GPU model {} (known: {})", field, io::detail::shown(name), known_models()));
  return *m;
}

// Through the one JSON entry point (io/json_input.hpp): depth and size bounds, 1e400 an error, no
// exception other than InputError.
json parse_json(const std::string& path) {
  auto doc = io::detail::parse_json(read_file(path), path);
  if (!doc) throw_input_error(path, doc.error().message);
  return std::move(*doc);
}

// The one rule for unknown fields (docs/formats.md): an error naming the field, never ignored.
void check_keys(const json& obj, const std::string& where, std::initializer_list<std::string_view> known) {
  if (!obj.is_object()) return;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    std::string list;
    for (auto k : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    throw InputError(fmt::format("{}{}{}: unknown field (known: {})", where, where.ends_with(':') ? " " : ".",
                                 io::detail::shown_key(it.key()), list));
  }
}

// Typed field access with errors naming the field path.
// `where` is a field path ("f.json: nodes[0]") or a file name followed by ':' for top-level keys.
const json& field(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw InputError(!where.empty() && where.back() == ':' ? fmt::format("{} {}: missing", where, key)
                                                           : fmt::format("{}.{}: missing", where, key));
  return obj.at(key);
}
std::string get_string(const json& v, const std::string& where) {
  if (!v.is_string()) throw InputError(fmt::format("{}: expected a string, got {}", where, io::detail::shown(v)));
  return v.get<std::string>();
}
std::int64_t get_int(const json& v, const std::string& where, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer()) throw InputError(fmt::format("{}: expected an integer, got {}", where, io::detail::shown(v)));
  const auto x = v.get<std::int64_t>();
  if (x < lo || x > hi) throw InputError(fmt::format("{}: {} is out of range {}..{}", where, x, lo, hi));
  return x;
}

// A profile reference on a known model: "profile": name (by geometry) or "profile_id": NVML ID.
int profile_on(const mig::MigGpuSpec& spec, const json& obj, const std::string& where) {
  if (obj.contains("profile_id")) {
    const auto id = get_int(obj.at("profile_id"), where + ".profile_id", 0, 1 << 20);
    const int p = spec.find_id(static_cast<std::uint32_t>(id));
    if (p < 0) throw InputError(fmt::format("{}.profile_id: {} is not a profile of {}", where, id, spec.model));
    return p;
  }
  const std::string name = get_string(field(obj, "profile", where), where + ".profile");
  auto g = mig::parse_profile_name(name);
  if (!g) throw InputError(fmt::format("{}.profile: {} is not a MIG profile name (<N>g.<M>gb[+me])", where, io::detail::shown(name)));
  const int p = mig::match_profile(spec, *g);
  if (p < 0) throw InputError(fmt::format("{}.profile: {} is not a profile of {}", where, io::detail::shown(name), spec.model));
  return p;
}

// A request/demand entry: "profile" (any model with that geometry) or "model" + "profile_id";
// optional "models" restricts the models.
mig::MigRequest request_of(const json& obj, const std::string& where) {
  if (!obj.is_object()) throw InputError(fmt::format("{}: expected an object", where));
  mig::MigRequest r;
  if (obj.contains("model")) {
    const auto m = find_model(get_string(obj.at("model"), where + ".model"), where + ".model");
    r.profile[m] = static_cast<std::int8_t>(profile_on(catalog().spec(m), obj, where));
    return r;
  }
  if (obj.contains("profile_id"))
    throw InputError(fmt::format("{}.profile_id: needs \"model\" (profile IDs differ between GPU models)", where));
  const std::string name = get_string(field(obj, "profile", where), where + ".profile");
  auto res = mig::MigRequest::from_name(catalog(), name);
  if (!res) throw InputError(fmt::format("{}.{}", where, res.error().message));
  r = *res;
  if (obj.contains("models")) {
    const json& ms = obj.at("models");
    if (!ms.is_array()) throw InputError(fmt::format("{}.models: expected an array of model names", where));
    std::vector<mig::MigModelId> allowed;
    for (std::size_t i = 0; i < ms.size(); ++i)
      allowed.push_back(find_model(get_string(ms[i], fmt::format("{}.models[{}]", where, i)), fmt::format("{}.models[{}]", where, i)));
    r = r.only(allowed);
    if (!r.any()) throw InputError(fmt::format("{}: profile {} exists on none of the listed models", where, io::detail::shown(name)));
  }
  return r;
}

// The legacy MIG cluster file (before the one cluster format): {"nodes": [{"name", "gpus": [{"model",
// "instances": [...]}]}]}, every GPU in MIG mode, no CPU or memory. Recognised by a GPU with
// "instances" or a node without "cpu"; converted to the cluster format (docs/formats.md, MIG), so
// both are read by one reader with one set of checks.
bool is_legacy_mig_cluster(const json& doc) {
  if (!doc.is_object() || !doc.contains("nodes") || !doc.at("nodes").is_array()) return false;
  for (const json& node : doc.at("nodes")) {
    if (!node.is_object()) return false;
    if (!node.contains("cpu")) return true;
    if (node.contains("gpus") && node.at("gpus").is_array())
      for (const json& gpu : node.at("gpus"))
        if (gpu.is_object() && gpu.contains("instances")) return true;
  }
  return false;
}

json from_legacy_mig_cluster(const json& doc) {
  json out = doc;
  for (json& node : out.at("nodes")) {
    if (!node.is_object()) continue;
    if (!node.contains("cpu")) node["cpu"] = 0;
    if (!node.contains("memory")) node["memory"] = 0;
    if (!node.contains("gpus") || !node.at("gpus").is_array()) continue;
    for (json& gpu : node.at("gpus")) {
      if (!gpu.is_object() || gpu.contains("mig")) continue;
      json mig = json::object();
      if (gpu.contains("instances")) {
        mig["instances"] = gpu.at("instances");
        gpu.erase("instances");
      }
      gpu["mig"] = mig;
    }
  }
  return out;
}

// The cluster: the one cluster format (GPUs with a "mig" object are in MIG mode), or the legacy
// MIG file.
ClusterState read_cluster(const std::string& path, bool pre_r510) {
  json doc = parse_json(path);
  if (is_legacy_mig_cluster(doc)) doc = from_legacy_mig_cluster(doc);
  auto parsed = io::detail::cluster_from_json(doc, path);
  if (!parsed) throw_input_error(path, parsed.error().message);
  auto state = ClusterState::build(parsed->cluster, parsed->registry, catalog(), mig::LayoutRules{.pre_r510 = pre_r510});
  if (!state) throw InputError(fmt::format("{}: {}", path, state.error().message));
  return std::move(*state);
}

json instance_json(const mig::MigGpuSpec& spec, const mig::MigInstance& inst) {
  const auto& p = spec.profiles[static_cast<std::size_t>(spec.find_id(inst.profile_id))];
  return json{{"profile", p.name}, {"profile_id", p.id}, {"start", inst.start}, {"memory_slices", p.memory_slices}};
}

json layout_json(const mig::MigGpuSpec& spec, const std::vector<mig::MigInstance>& l) {
  json a = json::array();
  for (const auto& inst : l) a.push_back(instance_json(spec, inst));
  return a;
}

// "4g.20gb@0 3g.20gb@4": profile name @ start slice.
std::string layout_text(const mig::MigGpuSpec& spec, const std::vector<mig::MigInstance>& l) {
  std::string out;
  for (const auto& inst : l) {
    const auto& p = spec.profiles[static_cast<std::size_t>(spec.find_id(inst.profile_id))];
    out += fmt::format("{}{}@{}", out.empty() ? "" : " ", p.name, inst.start);
  }
  return out.empty() ? "(empty)" : out;
}

// --- mig layouts ------------------------------------------------------------------------------

struct LayoutsOptions {
  std::string model;
  std::string format = "table";
  bool pre_r510 = false;
};

int run_layouts(const LayoutsOptions& opt) {
  const auto m = find_model(opt.model, "--model");
  const mig::MigGpuSpec& spec = catalog().spec(m);
  const auto layouts = mig::maximal_layouts(spec, mig::LayoutRules{.pre_r510 = opt.pre_r510});
  if (opt.format == "json") {
    json arr = json::array();
    for (const auto& l : layouts) {
      int compute = 0;
      for (const auto& inst : l) compute += spec.profiles[static_cast<std::size_t>(spec.find_id(inst.profile_id))].compute_slices;
      arr.push_back(json{{"instances", layout_json(spec, l)}, {"compute_slices", compute}});
    }
    std::printf("%s\n", json{{"model", spec.model}, {"count", layouts.size()}, {"layouts", arr}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%s: %zu valid maximal layouts (instances as profile@start slice)\n", spec.model.c_str(), layouts.size());
  for (std::size_t i = 0; i < layouts.size(); ++i)
    std::printf("%4zu  %s\n", i + 1, layout_text(spec, layouts[i]).c_str());
  return 0;
}

// --- mig table --------------------------------------------------------------------------------

struct TableOptions {
  std::string lgip, lgipp, model, format = "table";
  int gpu = -1;
};

json spec_json(const mig::MigGpuSpec& spec) {
  json profiles = json::array();
  for (const auto& p : spec.profiles) {
    json starts = json::array();
    for (int s = 0; s < mig::kMaxSlots; ++s)
      if ((p.starts >> s) & 1U) starts.push_back(s);
    json row = {{"id", p.id},
                {"name", p.name},
                {"compute_slices", p.compute_slices},
                {"memory_slices", p.memory_slices},
                {"placement_starts", starts},
                {"placement_size", p.memory_slices},
                {"max_instances", p.max_instances},
                {"media_extensions", p.media_extensions},
                {"memory_mib", p.memory_mib},
                {"sm", p.sm_count},
                {"ce", p.copy_engines},
                {"dec", p.decoders},
                {"jpeg", p.jpeg},
                {"ofa", p.ofa},
                {"source", p.source}};
    if (!p.notes.empty()) row["notes"] = p.notes;
    profiles.push_back(row);
  }
  return json{{"model", spec.model},
              {"memory_slices", spec.memory_slots},
              {"compute_slices", spec.compute_slices},
              {"max_instances", spec.max_instances},
              {"profiles", profiles}};
}

int run_table(const TableOptions& opt) {
  mig::MigGpuSpec spec;
  std::vector<io::SpecDifference> diff;
  bool compared = false;
  if (!opt.lgip.empty() || !opt.lgipp.empty()) {
    if (opt.lgip.empty() || opt.lgipp.empty()) throw InputError("--lgip and --lgipp: both are needed");
    auto lgip = io::parse_lgip(read_file(opt.lgip));
    if (!lgip) throw InputError(fmt::format("{}: {}", opt.lgip, lgip.error().message));
    auto lgipp = io::parse_lgipp(read_file(opt.lgipp));
    if (!lgipp) throw InputError(fmt::format("{}: {}", opt.lgipp, lgipp.error().message));
    auto s = io::spec_from_nvidia_smi(opt.model.empty() ? "nvidia-smi" : opt.model, *lgip, *lgipp, opt.gpu);
    if (!s) throw InputError(s.error().message);
    spec = std::move(*s);
    if (!opt.model.empty()) {
      const mig::MigGpuSpec& reference = catalog().spec(find_model(opt.model, "--model"));
      spec.model = reference.model;
      diff = io::compare_specs(reference, spec);
      compared = true;
    }
  } else if (!opt.model.empty()) {
    spec = catalog().spec(find_model(opt.model, "--model"));
  } else {
    throw InputError("--lgip/--lgipp or --model: give nvidia-smi output, a built-in model, or both (to compare)");
  }
  const bool geometry_differs = std::any_of(diff.begin(), diff.end(), [](const auto& d) { return d.geometry; });
  if (opt.format == "json") {
    json out = spec_json(spec);
    if (compared) {
      json d = json::array();
      for (const auto& x : diff) d.push_back(json{{"geometry", x.geometry}, {"text", x.text}});
      out["differences_from_builtin"] = d;
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s: %d memory slices, %d compute slices, at most %d GPU instances\n", spec.model.c_str(),
                spec.memory_slots, spec.compute_slices, spec.max_instances);
    std::printf("%4s  %-12s %7s %6s  %-18s %4s %5s %9s\n", "ID", "NAME", "COMPUTE", "MEMORY", "PLACEMENTS", "SIZE",
                "MAX", "MiB");
    for (const auto& p : spec.profiles)
      std::printf("%4u  %-12s %7d %6d  %-18s %4d %5d %9d\n", p.id, p.name.c_str(), p.compute_slices, p.memory_slices,
                  mig::format_starts(p.starts).c_str(), p.memory_slices, p.max_instances, p.memory_mib);
    if (compared) {
      if (diff.empty()) std::printf("matches the built-in %s table\n", spec.model.c_str());
      for (const auto& x : diff) std::printf("%s: %s\n", x.geometry ? "DIFFERS" : "note", x.text.c_str());
    }
  }
  return geometry_differs ? 1 : 0;
}

// --- mig place --------------------------------------------------------------------------------

struct PlaceOptions {
  std::string cluster, requests, profile, mode = "dynamic", policy = "frag-aware", format = "table";
  int count = 1;
  bool pre_r510 = false;
};

// A named MIG request of `mig place`.
struct NamedRequest {
  std::string name;
  mig::MigRequest request;
};

// The requests of --requests FILE, then --count of --profile.
std::vector<NamedRequest> read_requests(const PlaceOptions& opt) {
  std::vector<NamedRequest> reqs;
  if (!opt.requests.empty()) {
    const json doc = parse_json(opt.requests);
    check_keys(doc, opt.requests + ":", {"requests"});
    const json& arr = doc.is_array() ? doc : field(doc, "requests", opt.requests + ":");
    if (!arr.is_array()) throw InputError(fmt::format("{}: requests: expected an array", opt.requests));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string w = fmt::format("{}: requests[{}]", opt.requests, i);
      check_keys(arr[i], w, {"name", "profile", "profile_id", "model", "models"});
      NamedRequest r{arr[i].is_object() && arr[i].contains("name") ? get_string(arr[i].at("name"), w + ".name")
                                                         : fmt::format("request-{}", i),
            request_of(arr[i], w)};
      // The name is printed in the table: a control character would cut or forge a row.
      if (auto st = io::detail::check_name(r.name, w + ".name"); !st) throw InputError(st.error().message);
      reqs.push_back(std::move(r));
    }
  }
  if (!opt.profile.empty()) {
    auto r = mig::MigRequest::from_name(catalog(), opt.profile);
    if (!r) throw InputError(fmt::format("--{}", r.error().message));
    for (int i = 0; i < opt.count; ++i) reqs.push_back({fmt::format("{}-{}", opt.profile, i), *r});
  }
  if (reqs.empty()) throw InputError("--requests or --profile: nothing to place");
  return reqs;
}

// The layouts of the GPUs a run touched, as JSON and as text lines.
std::pair<json, std::string> touched_layouts(const ClusterState& state, const std::vector<char>& touched) {
  const mig::MigGpuTable& mig_gpus = state.mig().table();
  json layouts = json::array();
  std::string layout_lines;
  for (mig::MigGpuId g = 0; g < mig_gpus.gpu_count(); ++g) {
    if (!touched[g]) continue;
    const auto l = mig_gpus.layout(g);
    layouts.push_back(json{{"node", std::string(state.node_name(mig_gpus.node_of(g)))},
                           {"gpu", mig_gpus.local_index(g)},
                           {"instances", layout_json(mig_gpus.spec_of(g), l)}});
    layout_lines += fmt::format("  {} gpu {}: {}\n", state.node_name(mig_gpus.node_of(g)), mig_gpus.local_index(g),
                                layout_text(mig_gpus.spec_of(g), l));
  }
  return {layouts, layout_lines};
}

int run_place(const PlaceOptions& opt) {
  ClusterState state = read_cluster(opt.cluster, opt.pre_r510);
  const std::vector<NamedRequest> reqs = read_requests(opt);
  const mig::MigMode mode = opt.mode == "static" ? mig::MigMode::kStatic : mig::MigMode::kDynamic;
  std::unique_ptr<mig::MigPlacer> placer;
  if (opt.policy == "first-fit")
    placer = std::make_unique<mig::FirstFitPlacer>(mode);
  else
    placer = std::make_unique<mig::FragAwarePlacer>(mode, mig::MigDemand::uniform(catalog()));

  json decisions = json::array();
  std::string table;
  std::size_t placed = 0;
  const mig::MigGpuTable& mig_gpus = state.mig().table();
  std::vector<char> touched(mig_gpus.gpu_count(), 0);
  for (const NamedRequest& r : reqs) {
    const mig::MigDecision d = placer->decide(state, r.request);
    if (!d.placed()) {
      const std::string reason = mig::explain(state, r.request, d);
      json reasons = json::array();
      for (const Reason& why : d.reasons)
        reasons.push_back(json{{"kind", std::string(reason_name(why.kind))}, {"gpus", why.count}});
      decisions.push_back(json{{"request", r.name},
                               {"placed", false},
                               {"verdict", std::string(verdict_name(d.verdict))},
                               {"reason", reason},
                               {"reasons", reasons}});
      table += fmt::format("{:<20} UNSCHEDULABLE: {}\n", r.name, reason);
      continue;
    }
    const mig::MigGpuSpec& spec = mig_gpus.spec_of(d.gpu);
    const auto& prof = spec.profiles[static_cast<std::size_t>(d.profile)];
    const char* action = d.action == mig::MigAction::kCreate ? "create" : "use-idle";
    decisions.push_back(json{{"request", r.name},
                             {"placed", true},
                             {"node", std::string(state.node_name(mig_gpus.node_of(d.gpu)))},
                             {"gpu", mig_gpus.local_index(d.gpu)},
                             {"model", spec.model},
                             {"action", action},
                             {"profile", prof.name},
                             {"profile_id", prof.id},
                             {"start", d.start},
                             {"fragmentation_delta", d.score}});
    table += fmt::format("{:<20} {:<16} {:>3}  {:<14} {:<9} {:<11} {:>5}\n", r.name,
                         state.node_name(mig_gpus.node_of(d.gpu)), mig_gpus.local_index(d.gpu), spec.model, action,
                         prof.name, d.start);
    // A MIG reservation on the one state (cannot fail: decided on this state).
    if (auto st = mig::apply_decision(state, d); !st) throw InputError(st.error().message);
    touched[d.gpu] = 1;
    ++placed;
  }
  const auto [layouts, layout_lines] = touched_layouts(state, touched);
  if (opt.format == "json") {
    std::printf("%s\n", json{{"policy", std::string(placer->name())},
                             {"placed", placed},
                             {"unschedulable", reqs.size() - placed},
                             {"decisions", decisions},
                             {"layouts", layouts}}
                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  } else {
    std::printf("policy: %s\n%-20s %-16s %3s  %-14s %-9s %-11s %5s\n%s", std::string(placer->name()).c_str(), "REQUEST",
                "NODE", "GPU", "MODEL", "ACTION", "PROFILE", "START", table.c_str());
    std::printf("%zu placed, %zu unschedulable\nlayouts of the GPUs used:\n%s", placed, reqs.size() - placed,
                layout_lines.c_str());
  }
  return 0;
}

// --- mig plan ---------------------------------------------------------------------------------

struct PlanOptions {
  std::string cluster, demand, format = "table";
  bool keep_idle = false, pre_r510 = false;
};

// `mig plan --format json`: the demand served, the changes per GPU, the mig-parted configs.
void print_plan_json(const ClusterState& state, const std::vector<mig::MigDemandItem>& demand, const mig::MigPlan& plan,
                     const std::vector<mig::MigPartedNode>& parted) {
  json items = json::array();
  for (std::size_t i = 0; i < demand.size(); ++i)
    items.push_back(json{{"profile", demand[i].label},
                         {"count", demand[i].count},
                         {"served_by_idle", plan.served_idle[i]},
                         {"served_by_new", plan.served_created[i]},
                         {"unserved", plan.unserved[i]}});
  json changes = json::array();
  for (const auto& ch : plan.changes) {
    const auto& spec = state.mig().table().spec_of(ch.gpu);
    json serves = json::array();
    for (std::size_t k : ch.serves) serves.push_back(k < demand.size() ? demand[k].label : "");
    changes.push_back(json{{"node", std::string(state.node_name(state.mig().table().node_of(ch.gpu)))},
                           {"gpu", state.mig().table().local_index(ch.gpu)},
                           {"model", spec.model},
                           {"before", layout_json(spec, ch.before)},
                           {"after", layout_json(spec, ch.after)},
                           {"create", layout_json(spec, ch.created)},
                           {"destroy", layout_json(spec, ch.destroyed)},
                           {"serves", serves}});
  }
  json nodes = json::object();
  for (const auto& n : parted) {
    json entries = json::array();
    for (const auto& e : n.entries) {
      json devs = json::object();
      for (const auto& [name, c] : e.mig_devices) devs[name] = c;
      entries.push_back(json{{"devices", e.devices}, {"mig-enabled", true}, {"mig-devices", devs}});
    }
    nodes[n.node] = json{{"config", n.config}, {"mig-configs", json{{n.config, entries}}}};
  }
  std::printf("%s\n", json{{"served", plan.total_served()},
                           {"unserved", plan.total_unserved()},
                           {"gpus_touched", plan.changes.size()},
                           {"demand", items},
                           {"changes", changes},
                           {"mig_parted", nodes}}
                          .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                          .c_str());
}

int run_plan(const PlanOptions& opt) {
  ClusterState state = read_cluster(opt.cluster, opt.pre_r510);
  const json doc = parse_json(opt.demand);
  check_keys(doc, opt.demand + ":", {"demand"});
  const json& arr = doc.is_array() ? doc : field(doc, "demand", opt.demand + ":");
  if (!arr.is_array()) throw InputError(fmt::format("{}: demand: expected an array", opt.demand));
  std::vector<mig::MigDemandItem> demand;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string w = fmt::format("{}: demand[{}]", opt.demand, i);
    check_keys(arr[i], w, {"profile", "profile_id", "model", "models", "count"});
    mig::MigDemandItem item;
    item.request = request_of(arr[i], w);
    item.count = get_int(field(arr[i], "count", w), w + ".count", 0, 1'000'000'000);
    item.label = arr[i].contains("profile") ? get_string(arr[i].at("profile"), w + ".profile")
                                            : fmt::format("id {}", arr[i].at("profile_id").dump());
    demand.push_back(std::move(item));
  }
  const mig::MigPlan plan = mig::plan_repartition(state, demand, mig::MigPlanOptions{.destroy_idle = !opt.keep_idle});
  const auto parted = mig::mig_parted_plan(state, plan);
  if (opt.format == "yaml") {
    std::printf("%s", mig::to_mig_parted_yaml(parted).c_str());
    return 0;
  }
  if (opt.format == "json") {
    print_plan_json(state, demand, plan, parted);
    return 0;
  }
  std::printf("%-14s %6s %8s %8s %9s\n", "PROFILE", "COUNT", "IDLE", "NEW", "UNSERVED");
  for (std::size_t i = 0; i < demand.size(); ++i)
    std::printf("%-14s %6lld %8lld %8lld %9lld\n", demand[i].label.c_str(), static_cast<long long>(demand[i].count),
                static_cast<long long>(plan.served_idle[i]), static_cast<long long>(plan.served_created[i]),
                static_cast<long long>(plan.unserved[i]));
  std::printf("%lld served, %lld unserved, %zu GPUs re-partitioned\n", static_cast<long long>(plan.total_served()),
              static_cast<long long>(plan.total_unserved()), plan.changes.size());
  for (const auto& ch : plan.changes) {
    const auto& spec = state.mig().table().spec_of(ch.gpu);
    std::printf("  %s gpu %u (%s): %s  ->  %s\n", std::string(state.node_name(state.mig().table().node_of(ch.gpu))).c_str(),
                state.mig().table().local_index(ch.gpu), spec.model.c_str(), layout_text(spec, ch.before).c_str(),
                layout_text(spec, ch.after).c_str());
  }
  return 0;
}

void setup(CLI::App& app) {
  auto* mig_cmd = app.add_subcommand("mig", "MIG: valid layouts, nvidia-smi profile tables, placement, re-partition plans");
  mig_cmd->require_subcommand(1);

  auto lo = std::make_shared<LayoutsOptions>();
  auto* layouts = mig_cmd->add_subcommand("layouts", "Every valid maximal MIG layout of a GPU model");
  layouts->add_option("--model", lo->model, "GPU model, e.g. A100-SXM4-40GB, H100, A30")->required();
  layouts->add_option("--format", lo->format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  layouts->add_flag("--pre-r510", lo->pre_r510, "Drivers before R510: no 4g.20gb together with 3g.20gb");
  layouts->callback([lo] { set_exit_status(run_layouts(*lo)); });

  auto to = std::make_shared<TableOptions>();
  auto* table = mig_cmd->add_subcommand(
      "table", "The profile table from nvidia-smi mig -lgip/-lgipp text (exit 1 if it differs from --model's built-in table)");
  table->add_option("--lgip", to->lgip, "File with `nvidia-smi mig -lgip` output");
  table->add_option("--lgipp", to->lgipp, "File with `nvidia-smi mig -lgipp` output");
  table->add_option("--model", to->model, "Built-in model: print it, or compare the nvidia-smi table with it");
  table->add_option("--gpu", to->gpu, "GPU index in the nvidia-smi text (default: the first)");
  table->add_option("--format", to->format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  table->callback([to] { set_exit_status(run_table(*to)); });

  auto po = std::make_shared<PlaceOptions>();
  auto* place = mig_cmd->add_subcommand("place", "Place MIG requests on a described cluster, one after the other");
  place->add_option("--cluster", po->cluster, "Cluster JSON with MIG GPUs (docs/formats.md; the legacy MIG file is accepted too)")->required();
  place->add_option("--requests", po->requests, "Requests JSON (docs/mig.md)");
  place->add_option("--profile", po->profile, "Or: one profile name to place --count times");
  place->add_option("--count", po->count, "With --profile")->check(CLI::Range(1, 100000))->capture_default_str();
  place->add_option("--mode", po->mode, "static: take existing idle instances only; dynamic: may create")
      ->check(CLI::IsMember({"static", "dynamic"}))
      ->capture_default_str();
  place->add_option("--policy", po->policy, "frag-aware or first-fit")
      ->check(CLI::IsMember({"frag-aware", "first-fit"}))
      ->capture_default_str();
  place->add_option("--format", po->format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  place->add_flag("--pre-r510", po->pre_r510, "Drivers before R510: no 4g.20gb together with 3g.20gb");
  place->callback([po] { set_exit_status(run_place(*po)); });

  auto pl = std::make_shared<PlanOptions>();
  auto* plan = mig_cmd->add_subcommand("plan", "Re-partition plan for pending MIG demand (busy instances never move)");
  plan->add_option("--cluster", pl->cluster, "Cluster JSON with MIG GPUs (docs/formats.md; the legacy MIG file is accepted too)")->required();
  plan->add_option("--demand", pl->demand, "Demand JSON (docs/mig.md)")->required();
  plan->add_option("--format", pl->format, "table, json, or yaml (mig-parted configs only)")
      ->check(CLI::IsMember({"json", "table", "yaml"}))
      ->capture_default_str();
  plan->add_flag("--keep-idle", pl->keep_idle, "Never destroy idle instances");
  plan->add_flag("--pre-r510", pl->pre_r510, "Drivers before R510: no 4g.20gb together with 3g.20gb");
  plan->callback([pl] { set_exit_status(run_plan(*pl)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace cmd_mig
}  // namespace gpusched::cli
