// `gpusched bench-packing`: the FGD paper's trace experiment (docs/bench-packing.md).
//
// With no arguments: the default Alibaba pod list on the 1,213-node GPU cluster, all policies,
// seeds 42-51; prints a table, writes bench-packing.csv and bench-packing.svg.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/sim/packing_experiment.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_bench_packing {

namespace fs = std::filesystem;

struct BenchOptions {
  std::string trace = "default";
  std::string nodes;
  std::string policies;
  std::string seeds = "42-51";
  std::string format = "table";
  std::string csv = "bench-packing.csv";
  std::string svg = "bench-packing.svg";
  double ratio = 1.3;
  unsigned threads = 0;
  bool no_bound = false;
  bool quiet = false;
  std::vector<std::string> plugins;  // --plugin: shared libraries of policies
};

std::string trace_dir() { return (fs::path(data_dir()) / "alibaba-gpu-v2023").string(); }

std::vector<std::string> known_traces() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(trace_dir(), ec)) {
    const std::string f = e.path().filename().string();
    const std::string prefix = "openb_pod_list_";
    if (f.rfind(prefix, 0) == 0 && e.path().extension() == ".csv")
      out.push_back(f.substr(prefix.size(), f.size() - prefix.size() - 4));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// NAME (part after openb_pod_list_) or a file path -> (display name, path).
std::pair<std::string, std::string> resolve_trace(const std::string& t) {
  if (t.find('/') != std::string::npos || (t.size() > 4 && t.substr(t.size() - 4) == ".csv")) {
    if (!fs::exists(t)) throw InputError(fmt::format("--trace: no such file \"{}\"", t));
    return {fs::path(t).stem().string(), t};
  }
  const std::string path = (fs::path(trace_dir()) / fmt::format("openb_pod_list_{}.csv", t)).string();
  if (!fs::exists(path)) {
    std::string names;
    for (const auto& n : known_traces()) names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    throw InputError(fmt::format("--trace: unknown trace \"{}\" (known: {}; or give a CSV path)", t,
                                 names.empty() ? std::string("none found in ") + trace_dir() : names));
  }
  return {t, path};
}

std::uint64_t parse_u64(const std::string& s, const std::string& whole) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    if (s.empty() || s[0] == '-' || s[0] == '+') throw std::invalid_argument(s);
    v = std::stoull(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != s.size())
    throw InputError(fmt::format("--seeds: expected A-B or a comma list of non-negative integers, got \"{}\"", whole));
  return v;
}

std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t dash = part.find('-', 1);
    if (dash != std::string::npos) {
      const std::uint64_t a = parse_u64(part.substr(0, dash), text), b = parse_u64(part.substr(dash + 1), text);
      if (b < a || b - a > 100000) throw InputError(fmt::format("--seeds: bad range \"{}\"", part));
      for (std::uint64_t s = a; s <= b; ++s) out.push_back(s);
    } else {
      out.push_back(parse_u64(part, text));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void write_text(const std::string& path, const std::string& text, const char* option) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text)) throw InputError(fmt::format("{}: cannot write \"{}\"", option, path));
}

std::string with_suffix(const std::string& path, const std::string& suffix, bool multi) {
  if (!multi) return path;
  fs::path p(path);
  return (p.parent_path() / (p.stem().string() + "-" + suffix + p.extension().string())).string();
}

int run_bench(const BenchOptions& opt) {
  if (opt.format != "table" && opt.format != "json")
    throw InputError(fmt::format("--format: expected json or table, got \"{}\"", opt.format));
  if (!(opt.ratio > 0.0 && opt.ratio <= 10.0))
    throw InputError(fmt::format("--ratio: expected a value in (0, 10], got {}", opt.ratio));
  const std::string nodes_path =
      opt.nodes.empty() ? (fs::path(trace_dir()) / "openb_node_list_gpu_node.csv").string() : opt.nodes;
  auto nodes = io::read_alibaba_nodes(nodes_path);
  if (!nodes) throw InputError(nodes.error().message);

  std::vector<std::string> traces;
  if (opt.trace == "all")
    traces = known_traces();
  else
    traces = split_list(opt.trace);
  if (traces.empty()) throw InputError(fmt::format("--trace: no trace in \"{}\"", opt.trace));
  const bool multi = traces.size() > 1;

  sim::ExperimentConfig cfg;
  cfg.policies = split_list(opt.policies);
  cfg.seeds = parse_seeds(opt.seeds);
  cfg.target_ratio = opt.ratio;
  cfg.threads = opt.threads;
  const PolicyRegistry registry = policy_registry(opt.plugins);
  cfg.registry = &registry;
  cfg.lower_bound = !opt.no_bound;
  const bool tty = isatty(fileno(stderr)) != 0;
  nlohmann::json all = nlohmann::json::array();
  for (std::size_t t = 0; t < traces.size(); ++t) {
    const auto [name, path] = resolve_trace(traces[t]);
    auto pods = io::read_alibaba_pods(path);
    if (!pods) throw InputError(pods.error().message);
    auto w = sim::make_trace_workload(*nodes, *pods, name);
    // Blame the file at fault: the node list (--nodes) or the trace's pod list.
    if (!w) throw InputError(fmt::format("{}: {}", w.error().field == "nodes" ? nodes_path : path, w.error().message));
    if (!opt.quiet)
      cfg.progress = [&, name = name](std::size_t done, std::size_t total, const std::string& what, std::uint64_t seed) {
        const std::string line = fmt::format("bench-packing: {}{} [{}/{}] {} seed {}", name,
                                             multi ? fmt::format(" ({}/{})", t + 1, traces.size()) : "", done, total,
                                             what, seed);
        if (tty)
          std::fprintf(stderr, "\r%-78s%s", line.c_str(), done == total ? "\n" : "");
        else if (done == total || done % 10 == 0)
          std::fprintf(stderr, "%s\n", line.c_str());
        std::fflush(stderr);
      };
    auto rep = sim::run_experiment(*w, cfg);
    if (!rep) throw InputError(rep.error().message);
    if (opt.format == "json")
      all.push_back(nlohmann::json::parse(sim::report_json(*rep)));
    else
      std::fputs((sim::report_table(*rep) + (multi ? "\n" : "")).c_str(), stdout);
    if (!opt.csv.empty()) write_text(with_suffix(opt.csv, name, multi), sim::report_csv(*rep), "--csv");
    if (!opt.svg.empty()) write_text(with_suffix(opt.svg, name, multi), sim::report_svg(*rep), "--svg");
  }
  if (opt.format == "json") std::fputs(((multi ? all : all[0]).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
  return 0;
}

void setup(CLI::App& app) {
  auto opt = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand(
      "bench-packing",
      "Replay the Alibaba GPU trace (FGD paper, ATC'23) against the placement policies: unallocated GPU % vs "
      "arrived workload, with an LP lower bound");
  sub->add_option("--trace", opt->trace,
                  "pod list: a name (default, cpu050, gpushare40, multigpu20, ...), a CSV path, a comma list, or "
                  "'all' for the 24 shipped lists")
      ->capture_default_str();
  sub->add_option("--nodes", opt->nodes, "node list CSV (default: the shipped 1,213 GPU nodes)");
  sub->add_option("--policies", opt->policies,
                  "comma list (default: Random,DotProd,GpuClustering,GpuPacking,BestFit,FGD,FGD-OC); also FGD-Pack, "
                  "FGD-BF, FGD-Bal, the placement policies (" + policy_help(PolicySet::kPlacement) +
                      ") and a --plugin's");
  add_plugin_option(sub, opt->plugins);
  sub->add_option("--seeds", opt->seeds, "seeds: A-B or a comma list")->capture_default_str();
  sub->add_option("--format", opt->format, "json or table")->capture_default_str();
  sub->add_option("--csv", opt->csv, "curve CSV to write ('' = none)")->capture_default_str();
  sub->add_option("--svg", opt->svg, "SVG plot to write ('' = none)")->capture_default_str();
  sub->add_option("--ratio", opt->ratio, "resample arrivals up to this multiple of GPU capacity")
      ->capture_default_str();
  sub->add_option("--threads", opt->threads, "worker threads (0 = all cores)")->capture_default_str();
  sub->add_flag("--no-bound", opt->no_bound, "skip the LP lower bound");
  sub->add_flag("--quiet", opt->quiet, "no progress on stderr");
  sub->callback([opt] { gpusched::cli::set_exit_status(run_bench(*opt)); });
}

[[maybe_unused]] const bool registered = gpusched::cli::register_command(setup);

}  // namespace cmd_bench_packing
}  // namespace gpusched::cli
