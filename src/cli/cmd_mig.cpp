// `gpusched mig ...`: MIG layouts, profile tables from nvidia-smi text, placement and re-partition
// plans on a described cluster. Formats: docs/mig.md.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "gpusched/mig/layout.hpp"
#include "gpusched/mig/nvidia_smi.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/mig/planner.hpp"
#include "gpusched/mig/profiles.hpp"
#include "gpusched/mig/state.hpp"

namespace gpusched::cli {
namespace {

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
  if (!m) throw InputError(fmt::format("{}: unknown MIG GPU model \"{}\" (known: {})", field, name, known_models()));
  return *m;
}

json parse_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: invalid JSON: {}", path, e.what()));
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
  if (!v.is_string()) throw InputError(fmt::format("{}: expected a string, got {}", where, v.dump()));
  return v.get<std::string>();
}
std::int64_t get_int(const json& v, const std::string& where, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer()) throw InputError(fmt::format("{}: expected an integer, got {}", where, v.dump()));
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
  if (!g) throw InputError(fmt::format("{}.profile: \"{}\" is not a MIG profile name (<N>g.<M>gb[+me])", where, name));
  const int p = mig::match_profile(spec, *g);
  if (p < 0) throw InputError(fmt::format("{}.profile: \"{}\" is not a profile of {}", where, name, spec.model));
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
    if (!r.any()) throw InputError(fmt::format("{}: profile \"{}\" exists on none of the listed models", where, name));
  }
  return r;
}

// The cluster file: {"nodes": [{"name", "gpus": [{"model", "instances": [{"profile"|"profile_id",
// "start", "busy"}]}]}]}.
mig::MigState read_cluster(const std::string& path, bool pre_r510) {
  const json doc = parse_json(path);
  mig::MigState state(catalog(), mig::LayoutRules{.pre_r510 = pre_r510});
  const json& nodes = field(doc, "nodes", path + ":");
  if (!nodes.is_array()) throw InputError(fmt::format("{}: nodes: expected an array", path));
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const std::string nw = fmt::format("{}: nodes[{}]", path, n);
    const std::string name = get_string(field(nodes[n], "name", nw), nw + ".name");
    auto node = state.add_node(name);
    if (!node) throw InputError(fmt::format("{}.name: {}", nw, node.error().message));
    const json& gpus = field(nodes[n], "gpus", nw);
    if (!gpus.is_array()) throw InputError(fmt::format("{}.gpus: expected an array", nw));
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const std::string gw = fmt::format("{}.gpus[{}]", nw, g);
      const auto model = find_model(get_string(field(gpus[g], "model", gw), gw + ".model"), gw + ".model");
      const mig::MigGpuSpec& spec = catalog().spec(model);
      std::vector<mig::MigInstance> instances;
      std::vector<char> busy;
      if (gpus[g].contains("instances")) {
        const json& insts = gpus[g].at("instances");
        if (!insts.is_array()) throw InputError(fmt::format("{}.instances: expected an array", gw));
        for (std::size_t i = 0; i < insts.size(); ++i) {
          const std::string iw = fmt::format("{}.instances[{}]", gw, i);
          if (!insts[i].is_object()) throw InputError(fmt::format("{}: expected an object", iw));
          const int p = profile_on(spec, insts[i], iw);
          const auto start = get_int(field(insts[i], "start", iw), iw + ".start", 0, mig::kMaxSlots - 1);
          bool b = false;
          if (insts[i].contains("busy")) {
            if (!insts[i].at("busy").is_boolean()) throw InputError(fmt::format("{}.busy: expected true or false", iw));
            b = insts[i].at("busy").get<bool>();
          }
          instances.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(start)});
          busy.push_back(b ? 1 : 0);
        }
      }
      bool flags[mig::kMaxInstances + 1] = {};
      if (instances.size() > mig::kMaxInstances)
        throw InputError(fmt::format("{}.instances: more than {} instances", gw, mig::kMaxInstances));
      for (std::size_t i = 0; i < busy.size(); ++i) flags[i] = busy[i] != 0;
      auto id = state.add_gpu(*node, model, instances, std::span<const bool>(flags, busy.size()));
      if (!id) throw InputError(fmt::format("{}: {}", gw, id.error().message));
    }
  }
  return state;
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
    std::printf("%s\n", json{{"model", spec.model}, {"count", layouts.size()}, {"layouts", arr}}.dump(2).c_str());
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
  std::vector<mig::SpecDifference> diff;
  bool compared = false;
  if (!opt.lgip.empty() || !opt.lgipp.empty()) {
    if (opt.lgip.empty() || opt.lgipp.empty()) throw InputError("--lgip and --lgipp: both are needed");
    auto lgip = mig::parse_lgip(read_file(opt.lgip));
    if (!lgip) throw InputError(fmt::format("{}: {}", opt.lgip, lgip.error().message));
    auto lgipp = mig::parse_lgipp(read_file(opt.lgipp));
    if (!lgipp) throw InputError(fmt::format("{}: {}", opt.lgipp, lgipp.error().message));
    auto s = mig::spec_from_nvidia_smi(opt.model.empty() ? "nvidia-smi" : opt.model, *lgip, *lgipp, opt.gpu);
    if (!s) throw InputError(s.error().message);
    spec = std::move(*s);
    if (!opt.model.empty()) {
      const mig::MigGpuSpec& reference = catalog().spec(find_model(opt.model, "--model"));
      spec.model = reference.model;
      diff = mig::compare_specs(reference, spec);
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
    std::printf("%s\n", out.dump(2).c_str());
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

int run_place(const PlaceOptions& opt) {
  mig::MigState state = read_cluster(opt.cluster, opt.pre_r510);
  struct Req {
    std::string name;
    mig::MigRequest request;
  };
  std::vector<Req> reqs;
  if (!opt.requests.empty()) {
    const json doc = parse_json(opt.requests);
    const json& arr = doc.is_array() ? doc : field(doc, "requests", opt.requests + ":");
    if (!arr.is_array()) throw InputError(fmt::format("{}: requests: expected an array", opt.requests));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string w = fmt::format("{}: requests[{}]", opt.requests, i);
      Req r{arr[i].is_object() && arr[i].contains("name") ? get_string(arr[i].at("name"), w + ".name")
                                                         : fmt::format("request-{}", i),
            request_of(arr[i], w)};
      reqs.push_back(std::move(r));
    }
  }
  if (!opt.profile.empty()) {
    auto r = mig::MigRequest::from_name(catalog(), opt.profile);
    if (!r) throw InputError(fmt::format("--{}", r.error().message));
    for (int i = 0; i < opt.count; ++i) reqs.push_back({fmt::format("{}-{}", opt.profile, i), *r});
  }
  if (reqs.empty()) throw InputError("--requests or --profile: nothing to place");
  const mig::MigMode mode = opt.mode == "static" ? mig::MigMode::kStatic : mig::MigMode::kDynamic;
  std::unique_ptr<mig::MigPlacer> placer;
  if (opt.policy == "first-fit")
    placer = std::make_unique<mig::FirstFitPlacer>(mode);
  else
    placer = std::make_unique<mig::FragAwarePlacer>(mode, mig::MigDemand::uniform(catalog()));

  json decisions = json::array();
  std::string table;
  std::size_t placed = 0;
  std::vector<char> touched(state.gpu_count(), 0);
  for (const Req& r : reqs) {
    const mig::MigDecision d = placer->decide(state, r.request);
    if (!d.placed()) {
      decisions.push_back(json{{"request", r.name}, {"placed", false}, {"reason", d.reason}});
      table += fmt::format("{:<20} UNSCHEDULABLE: {}\n", r.name, d.reason);
      continue;
    }
    const mig::MigGpuSpec& spec = state.spec_of(d.gpu);
    const auto& prof = spec.profiles[static_cast<std::size_t>(d.profile)];
    const char* action = d.action == mig::MigAction::kCreate ? "create" : "use-idle";
    decisions.push_back(json{{"request", r.name},
                             {"placed", true},
                             {"node", std::string(state.node_name(state.node_of(d.gpu)))},
                             {"gpu", state.local_index(d.gpu)},
                             {"model", spec.model},
                             {"action", action},
                             {"profile", prof.name},
                             {"profile_id", prof.id},
                             {"start", d.start},
                             {"fragmentation_delta", d.score}});
    table += fmt::format("{:<20} {:<16} {:>3}  {:<14} {:<9} {:<11} {:>5}\n", r.name,
                         state.node_name(state.node_of(d.gpu)), state.local_index(d.gpu), spec.model, action,
                         prof.name, d.start);
    if (auto st = state.apply(d); !st) throw InputError(st.error().message);  // cannot happen: decided on this state
    touched[d.gpu] = 1;
    ++placed;
  }
  json layouts = json::array();
  std::string layout_lines;
  for (mig::MigGpuId g = 0; g < state.gpu_count(); ++g) {
    if (!touched[g]) continue;
    const auto l = state.layout(g);
    layouts.push_back(json{{"node", std::string(state.node_name(state.node_of(g)))},
                           {"gpu", state.local_index(g)},
                           {"instances", layout_json(state.spec_of(g), l)}});
    layout_lines += fmt::format("  {} gpu {}: {}\n", state.node_name(state.node_of(g)), state.local_index(g),
                                layout_text(state.spec_of(g), l));
  }
  if (opt.format == "json") {
    std::printf("%s\n", json{{"policy", std::string(placer->name())},
                             {"placed", placed},
                             {"unschedulable", reqs.size() - placed},
                             {"decisions", decisions},
                             {"layouts", layouts}}
                            .dump(2)
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

int run_plan(const PlanOptions& opt) {
  mig::MigState state = read_cluster(opt.cluster, opt.pre_r510);
  const json doc = parse_json(opt.demand);
  const json& arr = doc.is_array() ? doc : field(doc, "demand", opt.demand + ":");
  if (!arr.is_array()) throw InputError(fmt::format("{}: demand: expected an array", opt.demand));
  std::vector<mig::MigDemandItem> demand;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string w = fmt::format("{}: demand[{}]", opt.demand, i);
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
    json items = json::array();
    for (std::size_t i = 0; i < demand.size(); ++i)
      items.push_back(json{{"profile", demand[i].label},
                           {"count", demand[i].count},
                           {"served_by_idle", plan.served_idle[i]},
                           {"served_by_new", plan.served_created[i]},
                           {"unserved", plan.unserved[i]}});
    json changes = json::array();
    for (const auto& ch : plan.changes) {
      const auto& spec = state.spec_of(ch.gpu);
      json serves = json::array();
      for (std::size_t k : ch.serves) serves.push_back(k < demand.size() ? demand[k].label : "");
      changes.push_back(json{{"node", std::string(state.node_name(state.node_of(ch.gpu)))},
                             {"gpu", state.local_index(ch.gpu)},
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
                            .dump(2)
                            .c_str());
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
    const auto& spec = state.spec_of(ch.gpu);
    std::printf("  %s gpu %u (%s): %s  ->  %s\n", std::string(state.node_name(state.node_of(ch.gpu))).c_str(),
                state.local_index(ch.gpu), spec.model.c_str(), layout_text(spec, ch.before).c_str(),
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
  place->add_option("--cluster", po->cluster, "MIG cluster JSON (docs/mig.md)")->required();
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
  plan->add_option("--cluster", pl->cluster, "MIG cluster JSON (docs/mig.md)")->required();
  plan->add_option("--demand", pl->demand, "Demand JSON (docs/mig.md)")->required();
  plan->add_option("--format", pl->format, "table, json, or yaml (mig-parted configs only)")
      ->check(CLI::IsMember({"json", "table", "yaml"}))
      ->capture_default_str();
  plan->add_flag("--keep-idle", pl->keep_idle, "Never destroy idle instances");
  plan->add_flag("--pre-r510", pl->pre_r510, "Drivers before R510: no 4g.20gb together with 3g.20gb");
  plan->callback([pl] { set_exit_status(run_plan(*pl)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace
}  // namespace gpusched::cli
