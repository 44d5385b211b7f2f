// `gpusched topo`: read `nvidia-smi topo -m`, pick GPUs on a node, pick nodes on a cluster.
//
//   gpusched topo parse FILE [--format json]            devices, affinities, every GPU pair's link
//   gpusched topo pick FILE --gpus K [--free 0,2-5]     the best K free GPUs and their score
//   gpusched topo nodes CLUSTER.json (--level KEY... | --topology FABRIC.json) --tasks N --gpus-per-task G
//                       [--required LEVEL | --preferred LEVEL] [--message-size 64Mi] [--node-bus-gbps B]
//                                                       the best nodes for a multi-node job, and the
//                                                       estimated all-reduce over them
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/topology/cluster_graph.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "gpusched/topology/graph.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"
#include "gpusched/io/topology_json.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_topo {

using namespace gpusched::topology;
using namespace gpusched::io;

struct TopoOptions {
  std::string file;
  std::string format = "table";
  int nvlink_gen = 0;
  int pcie_gen = 0;
  int upi_links = 2;
  int gpus = 0;
  std::string free;
  std::string message = "64Mi";
  // nodes
  std::vector<std::string> levels;
  std::string topology;  // fabric JSON (alternative to levels)
  double node_bus_gbps = 0;
  std::string link = "ib-ndr";
  int links_per_node = 1;
  int tasks = 0;
  int gpus_per_task = 1;
  std::string required, preferred;
};

void check_format(const std::string& f) {
  if (f != "table" && f != "json") throw InputError(fmt::format("--format: expected table or json, got \"{}\"", f));
}

NodeTopology load_node(const TopoOptions& o) {
  NodeTopologyOptions opt;
  opt.nvlink_generation = o.nvlink_gen;
  opt.pcie_generation = o.pcie_gen;
  opt.upi_links = o.upi_links;
  auto t = parse_nvidia_smi_topo(read_file(o.file), opt);
  if (!t) throw InputError(fmt::format("{}: {}", o.file, t.error().message));
  return std::move(t).value();
}

// "0,2-5,7" -> {0,2,3,4,5,7}; errors name the item.
std::vector<std::uint16_t> parse_gpu_list(const std::string& text, std::size_t gpu_count) {
  std::vector<std::uint16_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    auto num = [&](const std::string& s) -> long {
      std::size_t used = 0;
      long v = -1;
      try {
        v = std::stol(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (s.empty() || used != s.size() || v < 0 || v >= static_cast<long>(gpu_count))
        throw InputError(fmt::format("--free: expected GPU indices 0..{} like 0,2-5, got \"{}\"", gpu_count - 1, item));
      return v;
    };
    const long a = num(dash == std::string::npos ? item : item.substr(0, dash));
    const long b = dash == std::string::npos ? a : num(item.substr(dash + 1));
    if (a > b) throw InputError(fmt::format("--free: empty range \"{}\"", item));
    for (long g = a; g <= b; ++g) {
      if (std::find(out.begin(), out.end(), static_cast<std::uint16_t>(g)) != out.end())
        throw InputError(fmt::format("--free: GPU {} listed twice", g));
      out.push_back(static_cast<std::uint16_t>(g));
    }
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return out;
}

double message_bytes(const std::string& text) {
  auto b = parse_quantity(text, QuantityUnit::kBytes);
  if (!b) throw InputError(fmt::format("--message-size: {}", b.error().message));
  return static_cast<double>(*b);
}

// JSON numbers cannot be infinite: a single GPU's bandwidth is reported as null.
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json score_json(const SetScore& s) {
  return {{"gpus", s.gpus},
          {"bus_bandwidth_gbps", number_or_null(s.bus_bandwidth_gbps)},
          {"latency_us", s.latency_us},
          {"ring_us", number_or_null(s.ring_us)},
          {"tree_us", number_or_null(s.tree_us)},
          {"allreduce_us", number_or_null(s.allreduce_us)},
          {"span", pair_link_name(s.span)}};
}

int run_parse(const TopoOptions& o) {
  check_format(o.format);
  const NodeTopology t = load_node(o);
  const std::size_t n = t.device_count();
  if (o.format == "json") {
    nlohmann::json gpus = nlohmann::json::array(), nics = nlohmann::json::array(), pairs = nlohmann::json::array();
    for (std::size_t d = 0; d < n; ++d) {
      const Device& dev = t.device(d);
      nlohmann::json j = {{"index", dev.kind == DeviceKind::kGpu ? d : d - t.gpu_count()}, {"name", dev.name}};
      if (dev.kind == DeviceKind::kNic) j["nic_name"] = dev.nic_name;
      j["cpu_affinity"] = dev.cpu_affinity;
      j["numa_affinity"] = dev.numa_affinity;
      j["numa_node"] = dev.numa_node >= 0 ? nlohmann::json(dev.numa_node) : nlohmann::json(nullptr);
      if (dev.kind == DeviceKind::kGpu)
        j["gpu_numa_id"] = dev.gpu_numa_id >= 0 ? nlohmann::json(dev.gpu_numa_id) : nlohmann::json(nullptr);
      (dev.kind == DeviceKind::kGpu ? gpus : nics).push_back(std::move(j));
    }
    for (std::size_t a = 0; a < t.gpu_count(); ++a)
      for (std::size_t b = a + 1; b < t.gpu_count(); ++b)
        pairs.push_back({{"a", a},
                         {"b", b},
                         {"link", pair_link_name(t.link(a, b))},
                         {"path_bandwidth_gbps", t.path_bandwidth_gbps(a, b)},
                         {"bus_bandwidth_gbps", t.pair_bus_bandwidth_gbps(a, b)},
                         {"latency_us", t.path_latency_us(a, b)}});
    nlohmann::json out = {{"gpus", gpus},
                          {"nics", nics},
                          {"nvlink", link_spec(t.nvlink_kind()).name},
                          {"pcie", link_spec(t.pcie_kind()).name},
                          {"nvswitch", t.has_nvswitch()},
                          {"graph", {{"vertices", t.graph().vertex_count()}, {"edges", t.graph().edge_count()}}},
                          {"pairs", pairs}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::string s = fmt::format("{} GPUs, {} NICs; {}, {}{}; graph {} vertices, {} edges\n", t.gpu_count(), t.nic_count(),
                              link_spec(t.nvlink_kind()).name, link_spec(t.pcie_kind()).name,
                              t.has_nvswitch() ? ", NVSwitch" : "", t.graph().vertex_count(), t.graph().edge_count());
  s += fmt::format("\n{:<8} {:<10} {:<16} {:<6}\n", "device", "nic", "cpu affinity", "numa");
  for (std::size_t d = 0; d < n; ++d) {
    const Device& dev = t.device(d);
    s += fmt::format("{:<8} {:<10} {:<16} {:<6}\n", dev.name, dev.kind == DeviceKind::kNic ? dev.nic_name : "-",
                     dev.cpu_affinity.empty() ? "-" : dev.cpu_affinity,
                     dev.numa_affinity.empty() ? "-" : dev.numa_affinity);
  }
  s += fmt::format("\n{:<6} {:<6} {:<6} {:>12} {:>12} {:>10}\n", "gpu", "gpu", "link", "path GB/s", "bus GB/s", "lat us");
  for (std::size_t a = 0; a < t.gpu_count(); ++a)
    for (std::size_t b = a + 1; b < t.gpu_count(); ++b)
      s += fmt::format("{:<6} {:<6} {:<6} {:>12.2f} {:>12.2f} {:>10.2f}\n", a, b, pair_link_name(t.link(a, b)),
                       t.path_bandwidth_gbps(a, b), t.pair_bus_bandwidth_gbps(a, b), t.path_latency_us(a, b));
  std::fputs(s.c_str(), stdout);
  return 0;
}

int run_pick(const TopoOptions& o) {
  check_format(o.format);
  const NodeTopology t = load_node(o);
  if (o.gpus < 1) throw InputError(fmt::format("--gpus: expected a positive count, got {}", o.gpus));
  std::vector<std::uint16_t> free;
  if (o.free.empty()) {
    for (std::size_t g = 0; g < t.gpu_count(); ++g) free.push_back(static_cast<std::uint16_t>(g));
  } else {
    free = parse_gpu_list(o.free, t.gpu_count());
  }
  PickOptions po;
  po.message_bytes = message_bytes(o.message);
  const GpuPick p = t.best_gpus(free, static_cast<std::size_t>(o.gpus), po);
  if (o.format == "json") {
    nlohmann::json out = {{"found", p.found()}};
    if (p.found()) {
      out["gpus"] = p.gpus;
      out["score"] = score_json(p.score);
      out["exact"] = p.exact;
      out["message_bytes"] = po.message_bytes;
    } else {
      out["reason"] = p.reason;
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (p.found()) {
    std::string list;
    for (std::size_t i = 0; i < p.gpus.size(); ++i) list += fmt::format("{}{}", i ? "," : "", p.gpus[i]);
    std::printf("gpus %s: span %s, bus bandwidth %.2f GB/s, latency %.2f us, all-reduce of %.0f bytes %.2f us "
                "(ring %.2f, tree %.2f)%s\n",
                list.c_str(), pair_link_name(p.score.span).c_str(), p.score.bus_bandwidth_gbps, p.score.latency_us,
                po.message_bytes, p.score.allreduce_us, p.score.ring_us, p.score.tree_us,
                p.exact ? "" : " [hierarchical]");
  } else {
    std::printf("no pick: %s\n", p.reason.c_str());
  }
  return p.found() ? 0 : 1;
}

// The fabric `topo nodes` picks on: a fabric JSON file (--topology), or label levels (--level) of
// one link kind.
Result<ClusterTopology> nodes_topology(const TopoOptions& o, const ClusterState& state) {
  if (!o.topology.empty()) {
    auto t = read_cluster_topology_json(read_file(o.topology), state);
    if (!t) throw InputError(fmt::format("{}: {}", o.topology, t.error().message));
    return t;
  }
  auto link = find_link_kind(o.link);
  if (!link) throw InputError(fmt::format("--link: unknown link \"{}\"", o.link));
  if (o.links_per_node < 1)
    throw InputError(fmt::format("--links-per-node: expected >= 1, got {}", o.links_per_node));
  std::vector<TopologyLevel> levels;
  for (const std::string& key : o.levels) levels.push_back({key, *link, o.links_per_node});
  auto t = ClusterTopology::from_labels(state, levels);
  if (!t) throw InputError(fmt::format("--level: {}", t.error().message));
  return t;
}

int run_nodes(const TopoOptions& o) {
  check_format(o.format);
  auto doc = io::read_cluster_json(read_file(o.file), o.file);
  if (!doc) throw_input_error(o.file, doc.error().message);
  auto state = ClusterState::build(doc->cluster, doc->registry);
  if (!state) throw InputError(fmt::format("{}: {}", o.file, state.error().message));
  if (o.levels.empty() == o.topology.empty())
    throw InputError("--level, --topology: give label keys (--level, outermost first) or a fabric JSON file, not both");
  if (!(o.node_bus_gbps >= 0) || !std::isfinite(o.node_bus_gbps))
    throw InputError(fmt::format("--node-bus-gbps: expected a bandwidth >= 0, got {}", o.node_bus_gbps));
  auto topo = nodes_topology(o, *state);
  const double bytes = message_bytes(o.message);
  if (o.tasks < 1) throw InputError(fmt::format("--tasks: expected a positive count, got {}", o.tasks));
  if (o.gpus_per_task < 0) throw InputError(fmt::format("--gpus-per-task: expected >= 0, got {}", o.gpus_per_task));
  if (!o.required.empty() && !o.preferred.empty()) throw InputError("--required and --preferred: give one");
  LevelConstraint c;
  if (!o.required.empty() || !o.preferred.empty()) {
    auto r = topo->constraint(o.required.empty() ? LevelMode::kPreferred : LevelMode::kRequired,
                              o.required.empty() ? o.preferred : o.required);
    if (!r) throw InputError(fmt::format("--{}: {}", o.required.empty() ? "preferred" : "required", r.error().message));
    c = *r;
  }
  TaskShape shape;
  shape.gpus = o.gpus_per_task;
  shape.gpu_milli = o.gpus_per_task > 0 ? kMilliPerGpu : 0;
  auto request = state->compile(shape);
  if (!request) throw InputError(request.error().message);
  const NodeSetPick p = topo->pick_nodes(*state, *request, o.tasks, c);
  // The estimate over the fabric graph: ranks per node = the most GPUs the pick puts on one node.
  NodeSetEstimate est;
  std::int32_t per_node = 1;
  if (p.found()) {
    for (std::int32_t k : p.tasks_per_node) per_node = std::max(per_node, k * std::max(o.gpus_per_task, 1));
    est = ClusterGraph::build(*topo, &*state).allreduce(p.nodes, per_node, bytes, o.node_bus_gbps);
  }
  auto level_name = [&](const NodeSpan& s) -> std::string {
    if (s.level == NodeSpan::kSingleNode) return "node";
    if (s.level == NodeSpan::kClusterWide) return "cluster";
    return fmt::format("{} {}", topo->level_short_name(s.level), topo->domain_name(s.level, s.domain));
  };
  if (o.format == "json") {
    nlohmann::json out = {{"found", p.found()}};
    if (p.found()) {
      nlohmann::json nodes = nlohmann::json::array();
      for (std::size_t i = 0; i < p.nodes.size(); ++i)
        nodes.push_back({{"node", std::string(state->node_name(p.nodes[i]))}, {"tasks", p.tasks_per_node[i]}});
      out["nodes"] = nodes;
      out["span"] = level_name(p.span);
      out["preference_met"] = p.preference_met;
      out["allreduce"] = {{"message_bytes", bytes},
                          {"ranks_per_node", per_node},
                          {"bus_bandwidth_gbps", number_or_null(est.bus_bandwidth_gbps)},
                          {"latency_us", est.latency_us},
                          {"allreduce_us", number_or_null(est.allreduce_us)},
                          {"bottleneck", est.bottleneck}};
    } else {
      out["reason"] = p.reason;
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (p.found()) {
    std::string s = fmt::format("{} tasks on {} nodes within {}{}\n", o.tasks, p.nodes.size(), level_name(p.span),
                                p.preference_met ? "" : " (preferred level not met)");
    for (std::size_t i = 0; i < p.nodes.size(); ++i)
      s += fmt::format("  {} x{}\n", state->node_name(p.nodes[i]), p.tasks_per_node[i]);
    s += fmt::format("all-reduce of {:.0f} bytes, {} ranks per node: {:.2f} us (bus bandwidth {:.2f} GB/s, latency "
                     "{:.2f} us; bottleneck: {})\n",
                     bytes, per_node, est.allreduce_us, est.bus_bandwidth_gbps, est.latency_us, est.bottleneck);
    std::fputs(s.c_str(), stdout);
  } else {
    std::printf("no pick: %s\n", p.reason.c_str());
  }
  return p.found() ? 0 : 1;
}

void add_node_options(CLI::App* sub, TopoOptions& o) {
  sub->add_option("--nvlink-gen", o.nvlink_gen, "NVLink generation 1..5 (default: guessed from NV#)");
  sub->add_option("--pcie-gen", o.pcie_gen, "PCIe generation 3..5 (default: follows NVLink)");
  sub->add_option("--upi-links", o.upi_links, "UPI links between sockets (default 2)");
}

void setup(CLI::App& app) {
  auto* topo = app.add_subcommand("topo", "Topology: parse nvidia-smi topo -m, pick GPUs or nodes by all-reduce cost");
  topo->require_subcommand(1);
  auto opts = std::make_shared<TopoOptions>();

  auto* parse = topo->add_subcommand("parse", "Read `nvidia-smi topo -m` output: devices, affinities, GPU pair links");
  parse->add_option("FILE", opts->file, "nvidia-smi topo -m output")->required();
  parse->add_option("--format", opts->format, "table or json");
  add_node_options(parse, *opts);
  parse->callback([opts] { set_exit_status(run_parse(*opts)); });

  auto* pick = topo->add_subcommand("pick", "The best K free GPUs of a node (lowest estimated all-reduce time)");
  pick->add_option("FILE", opts->file, "nvidia-smi topo -m output")->required();
  pick->add_option("--gpus", opts->gpus, "how many GPUs")->required();
  pick->add_option("--free", opts->free, "free GPU indices, e.g. 0,2-5 (default: all)");
  pick->add_option("--message-size", opts->message, "all-reduce size to optimise for (default 64Mi)");
  pick->add_option("--format", opts->format, "table or json");
  add_node_options(pick, *opts);
  pick->callback([opts] { set_exit_status(run_pick(*opts)); });

  auto* nodes = topo->add_subcommand("nodes", "The best nodes of a cluster for a multi-node job (Kueue TAS levels or a fabric JSON)");
  nodes->add_option("CLUSTER", opts->file, "cluster JSON (docs/formats.md)")->required();
  nodes->add_option("--level", opts->levels, "a node label key per level, outermost first (repeat)");
  nodes->add_option("--topology", opts->topology, "fabric JSON (levels + domains or fat_tree; docs/topology.md)");
  nodes->add_option("--message-size", opts->message, "all-reduce size for the estimate (default 64Mi)");
  nodes->add_option("--node-bus-gbps", opts->node_bus_gbps, "intra-node bus bandwidth, GB/s (default: unlimited)");
  nodes->add_option("--tasks", opts->tasks, "number of tasks (pods)")->required();
  nodes->add_option("--gpus-per-task", opts->gpus_per_task, "whole GPUs per task (default 1)");
  nodes->add_option("--required", opts->required, "all tasks inside one domain of this level");
  nodes->add_option("--preferred", opts->preferred,
                    "one domain of this level if possible (with neither option: topology-unaware best fit)");
  nodes->add_option("--link", opts->link, "link between nodes for estimates (default ib-ndr)");
  nodes->add_option("--links-per-node", opts->links_per_node, "network rails per node (default 1)");
  nodes->add_option("--format", opts->format, "table or json");
  nodes->callback([opts] { set_exit_status(run_nodes(*opts)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace cmd_topo
}  // namespace gpusched::cli
