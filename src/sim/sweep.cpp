// Sweeps of gpusched/sim/sweep.hpp: trace specs to traces, and the runs of traces x policies x seeds
// (moved here from the `gpusched simulate` command for the Python module).
#include "gpusched/sim/sweep.hpp"

#include <charconv>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/sim/sim_report.hpp"
#include "gpusched/sim/traces.hpp"
#include "io/json_input.hpp"
#include "sim/numbers.hpp"

namespace gpusched::sim {

Result<std::vector<std::uint64_t>> parse_seed_list(const std::string& s) {
  std::vector<std::uint64_t> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    const std::string part = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      const std::size_t dash = part.find('-');
      std::size_t used = 0;
      if (dash == std::string::npos) {
        out.push_back(std::stoull(part, &used));
        if (used != part.size()) throw std::invalid_argument(part);
      } else {
        const std::uint64_t a = std::stoull(part.substr(0, dash)), b = std::stoull(part.substr(dash + 1));
        if (b < a || b - a > 10000) throw std::invalid_argument(part);
        for (std::uint64_t x = a; x <= b; ++x) out.push_back(x);
      }
    } catch (const std::exception&) {
      return Error(fmt::format("seeds: expected N, A-B or a comma list, got \"{}\"", s));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

namespace {

// A trace spec "kind:arg" ("itp:04", "synthetic:100"), or a file's path (kind "", arg the path).
struct TraceSpec {
  std::string kind, arg;
};
TraceSpec split_trace_spec(const std::string& spec) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return {"", spec};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

// What names a trace in the records: "itp04", "alibaba-default", "synthetic100", a document's name,
// a file's stem.
std::string trace_label(const std::string& spec, const SweepOptions& o) {
  namespace fs = std::filesystem;
  if (o.documents.contains(spec)) return spec;
  const auto [kind, arg] = split_trace_spec(spec);
  if (kind == "itp") {
    int number = 0;
    std::from_chars(arg.data(), arg.data() + arg.size(), number);
    return fmt::format("itp{:02}", number);
  }
  if (kind == "alibaba") return "alibaba-" + arg;
  if (kind == "synthetic") return "synthetic" + arg;
  return fs::path(spec).stem().string();
}

// FNV-1a (64 bits) of a job file's or a document's bytes, so that shards of two different traces
// of one name ("tr.csv" in two folders) are not merged as one sweep; "" for the built-in traces.
std::string trace_digest(const std::string& spec, const SweepOptions& o) {
  std::string text;
  if (auto doc = o.documents.find(spec); doc != o.documents.end()) {
    text = doc->second;
  } else {
    const std::string kind = split_trace_spec(spec).kind;
    if (kind == "itp" || kind == "alibaba" || kind == "synthetic") return "";
    auto read = io::detail::read_input_file(spec);
    if (!read) return "";  // reported when the trace is loaded
    text = std::move(*read);
  }
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return fmt::format("fnv1a64:{:016x}", h);
}

}  // namespace

Result<LoadedTrace> load_trace(const std::string& spec, const SweepOptions& o, std::uint64_t seed) {
  namespace fs = std::filesystem;
  LoadedTrace l;
  Augment aug;
  aug.seed = seed;
  aug.queues = o.queues;
  aug.priorities = o.priorities;
  aug.checkpoint_interval = o.checkpoint_interval;
  aug.restart_cost = o.restart_cost;
  aug.estimate_error = o.estimate_error;
  aug.elastic_fraction = o.elastic;
  const auto [kind, arg] = split_trace_spec(spec);
  std::size_t nodes = o.nodes;
  l.label = trace_label(spec, o);
  if (auto doc = o.documents.find(spec); doc != o.documents.end()) {
    auto jobs = parse_jobs_json(doc->second, spec);
    if (!jobs) return jobs.error();
    l.jobs = std::move(*jobs);
    if (nodes == 0) nodes = 16;
  } else if (kind == "itp") {
    int number = 0;
    try {
      number = std::stoi(arg);
    } catch (const std::exception&) {
    }
    if (itp_paper_nodes(number) == 0) return Error(fmt::format("trace {}: ITP clusters are itp:01 .. itp:10", spec));
    const std::string path = (fs::path(o.data_dir) / "itp-elasticflow" / fmt::format("cluster{:02}.csv", number)).string();
    auto jobs = read_itp_trace(path, o.gpus_per_node);
    if (!jobs) return jobs.error();
    l.jobs = std::move(*jobs);
    if (nodes == 0) nodes = itp_paper_nodes(number);
  } else if (kind == "alibaba") {
    const fs::path dir = fs::path(o.data_dir) / "alibaba-gpu-v2023";
    auto pods = io::read_alibaba_pods((dir / fmt::format("openb_pod_list_{}.csv", arg)).string());
    if (!pods) return pods.error();
    l.jobs = alibaba_jobs(*pods);
    if (nodes == 0) {
      auto node_list = io::read_alibaba_nodes((dir / "openb_node_list_gpu_node.csv").string());
      if (!node_list) return node_list.error();
      l.cluster.nodes = io::to_cluster(*node_list);
      for (const auto& n : *node_list) l.cluster.energy.push_back(default_energy(n.model, n.gpus));
      l.cluster.name = l.label;
    }
  } else if (kind == "synthetic") {
    SyntheticSpec s;
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), s.jobs);
    if (arg.empty() || ec != std::errc() || end != arg.data() + arg.size() || s.jobs < 1 || s.jobs > kMaxSimJobs)
      return Error(fmt::format("trace {}: expected synthetic:N with N jobs in 1..{}", io::detail::shown(spec), kMaxSimJobs),
                   ErrorCode::kInvalidValue, "trace");
    s.seed = seed;
    s.gpus_per_node = o.gpus_per_node;
    if (o.arrival_rate > 0) s.arrivals_per_hour = o.arrival_rate;
    s.extra = aug;
    l.jobs = synthetic_jobs(s);
    if (nodes == 0) nodes = 64;
  } else {
    auto jobs = read_jobs_file(spec);
    if (!jobs) return jobs.error();
    l.jobs = std::move(*jobs);
    if (nodes == 0) nodes = 16;
  }
  // What a trace lacks comes from the options (a file's columns are its own: SimJob::given).
  if (kind != "synthetic") augment(l.jobs, aug);
  l.applied = options_applied(l.jobs);
  if (l.cluster.nodes.node_count() == 0) {
    l.cluster = make_uniform_cluster(nodes, o.gpus_per_node, o.model);
    l.cluster.name = l.label;
  }
  return l;
}

nlohmann::ordered_json sweep_description(const SweepOptions& o) {
  nlohmann::ordered_json sweep;
  sweep["traces"] = o.traces;
  std::vector<std::string> labels, digests;
  for (const std::string& t : o.traces) {
    labels.push_back(trace_label(t, o));
    digests.push_back(trace_digest(t, o));
  }
  sweep["trace_labels"] = labels;
  sweep["trace_digests"] = digests;
  sweep["policies"] = o.policies;
  sweep["seeds"] = o.seeds;
  sweep["runs"] = o.traces.size() * o.policies.size() * o.seeds.size();
  sweep["parameters"] = {{"nodes", o.nodes}, {"gpus_per_node", o.gpus_per_node}, {"model", o.model},
                         {"checkpoint_interval_s", o.checkpoint_interval}, {"restart_cost_s", o.restart_cost},
                         {"queues", o.queues}, {"priorities", o.priorities}, {"estimate_error", o.estimate_error},
                         {"elastic_fraction", o.elastic}, {"mtbf_hours", o.mtbf_hours}, {"mttr_hours", o.mttr_hours},
                         {"failures_file", o.failures_name}, {"cycle_period_s", o.cycle_period},
                         {"min_cycle_interval_s", o.min_cycle_interval}};
  if (o.arrival_rate > 0) sweep["parameters"]["arrival_rate_per_hour"] = o.arrival_rate;
  if (!o.placement.empty()) sweep["parameters"]["placement"] = o.placement;
  if (!o.order.empty()) sweep["parameters"]["order"] = o.order;
  if (!o.victim_order.empty()) sweep["parameters"]["victim_order"] = o.victim_order;
  if (!o.queue_weights.empty()) sweep["parameters"]["queue_weights"] = o.queue_weights;
  if (!o.queue_quota_gpus.empty()) sweep["parameters"]["queue_quota_gpus"] = o.queue_quota_gpus;
  return sweep;
}

Result<std::vector<std::pair<std::string, double>>> parse_queue_values(std::string_view text, std::string_view field,
                                                                       bool integer) {
  std::vector<std::pair<std::string, double>> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view pair = text.substr(pos, comma - pos);
    const std::size_t eq = pair.find('=');
    const std::string name(pair.substr(0, eq == std::string_view::npos ? pair.size() : eq));
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    const std::optional<double> parsed = detail::parse_positive(value, 1e15);
    const double v = parsed.value_or(0);
    const bool ok = !name.empty() && parsed && (!integer || v == static_cast<double>(static_cast<std::int64_t>(v)));
    if (!ok)
      return Error(fmt::format("{}: expected queue={} pairs separated by commas, got {}", field,
                               integer ? "a positive integer" : "a positive number", io::detail::shown(pair)),
                   ErrorCode::kInvalidValue, std::string(field));
    if (std::any_of(out.begin(), out.end(), [&](const auto& q) { return q.first == name; }))
      return Error(fmt::format("{}: queue {} given twice", field, io::detail::shown(name)), ErrorCode::kDuplicate,
                   std::string(field));
    out.emplace_back(name, v);
    pos = comma + 1;
  }
  return out;
}

namespace {

// The options a sweep runs with, each in its range, or an error naming the option (its SweepOptions
// field and the tool's flag) and the value: never a meaningless run recorded as if it were one.
Status check_options(const SweepOptions& o) {
  const auto bad = [](std::string_view field, std::string_view flag, std::string_view expected, auto value) -> Status {
    return Error(fmt::format("{} (--{}): expected {}, got {}", field, flag, expected, value), ErrorCode::kInvalidValue,
                 std::string(field));
  };
  if (o.nodes > kMaxSimNodes) return bad("nodes", "nodes", fmt::format("at most {}", kMaxSimNodes), o.nodes);
  if (o.gpus_per_node < 1 || o.gpus_per_node > 64) return bad("gpus_per_node", "gpus-per-node", "1 to 64", o.gpus_per_node);
  if (o.nodes * static_cast<std::size_t>(o.gpus_per_node) > kMaxClusterGpus)
    return bad("nodes", "nodes", fmt::format("at most {} GPUs in the cluster (nodes x --gpus-per-node {})", kMaxClusterGpus, o.gpus_per_node),
               o.nodes);
  if (o.checkpoint_interval < 0) return bad("checkpoint_interval", "checkpoint-interval", "seconds >= 0", o.checkpoint_interval);
  if (o.restart_cost < 0 || o.restart_cost > kMaxSimSeconds)
    return bad("restart_cost", "restart-cost", fmt::format("seconds in [0, {}]", kMaxSimSeconds), o.restart_cost);
  if (o.queues < 1 || o.queues > 10'000) return bad("queues", "queues", "1 to 10000", o.queues);
  if (o.priorities < 1 || o.priorities > 10'000) return bad("priorities", "priorities", "1 to 10000", o.priorities);
  if (!(o.estimate_error >= 0 && o.estimate_error <= 1000))
    return bad("estimate_error", "estimate-error", "a number in [0, 1000]", o.estimate_error);
  if (!(o.elastic >= 0 && o.elastic <= 1)) return bad("elastic", "elastic", "a share in [0, 1]", o.elastic);
  if (!(o.mtbf_hours >= 0 && o.mtbf_hours <= 1e9)) return bad("mtbf_hours", "mtbf-hours", "hours in [0, 1e9] (0: none)", o.mtbf_hours);
  // A failure at least every 6 minutes per node leaves no job able to finish: the run would not end.
  if (o.mtbf_hours > 0 && o.mtbf_hours < 0.1) return bad("mtbf_hours", "mtbf-hours", "0 or at least 0.1 hours", o.mtbf_hours);
  if (!(o.mttr_hours > 0 && o.mttr_hours <= 1e6)) return bad("mttr_hours", "mttr-hours", "hours in (0, 1e6]", o.mttr_hours);
  if (o.cycle_period < 0) return bad("cycle_period", "cycle-period", "seconds >= 0", o.cycle_period);
  if (o.min_cycle_interval < 0) return bad("min_cycle_interval", "min-cycle-interval", "seconds >= 0", o.min_cycle_interval);
  if (!(o.arrival_rate >= 0 && o.arrival_rate <= 1e9))
    return bad("arrival_rate", "arrival-rate", "jobs per hour in (0, 1e9] (0: the default)", o.arrival_rate);
  if (o.shards == 0 || o.shard >= o.shards || o.shards > 1'000'000)
    return Error(fmt::format("shard (--shard): expected i/n with 0 <= i < n <= 1000000, got {}/{}", o.shard, o.shards),
                 ErrorCode::kInvalidValue, "shard");
  return {};
}

}  // namespace

Result<SweepRuns> run_sweep(const SweepOptions& o) {
  if (Status st = check_options(o); !st) return st.error();
  std::vector<PolicyConfig> configs;
  for (const auto& p : o.policies) {
    auto cfg = parse_policy(p);
    if (!cfg) return Error("policies: " + cfg.error().message, cfg.error().code);
    cfg->queue_weights = o.queue_weights;
    cfg->queue_quota_gpus = o.queue_quota_gpus;
    configs.push_back(*cfg);
  }
  SweepRuns out;
  const std::size_t total = o.traces.size() * o.policies.size() * o.seeds.size();
  for (std::size_t t = 0; t < o.traces.size(); ++t)
    for (std::size_t s = 0; s < o.seeds.size(); ++s) {
      // The trace (and what is added on top of it) depends on the seed, not on the policy.
      std::optional<LoadedTrace> l;
      for (std::size_t p = 0; p < configs.size(); ++p) {
        const std::size_t run = t * o.policies.size() * o.seeds.size() + p * o.seeds.size() + s;
        if (run % o.shards != o.shard) continue;
        if (!l) {
          auto loaded = load_trace(o.traces[t], o, o.seeds[s]);
          if (!loaded) return loaded.error();
          l.emplace(std::move(*loaded));
        }
        SimConfig cfg;
        cfg.policy = configs[p];
        cfg.seed = o.seeds[s];
        cfg.cycle_period = o.cycle_period;
        cfg.min_cycle_interval = o.min_cycle_interval;
        cfg.rebuild_cycles = o.rebuild_cycles;
        cfg.placement = o.placement;
        cfg.registry = o.registry;
        cfg.order = o.order;
        cfg.victim_order = o.victim_order;
        cfg.orders = o.orders;
        cfg.failures.list = o.failures;
        cfg.failures.mtbf_hours = o.mtbf_hours;
        cfg.failures.mttr_hours = o.mttr_hours;
        if (o.progress) {
          cfg.progress = [&o, run, total, &l, p, s](double f) { o.progress(run, total, l->label, o.policies[p], o.seeds[s], f); };
        }
        auto r = simulate(l->cluster, l->jobs, cfg);
        if (!r) return Error(fmt::format("{} ({}): {}", o.traces[t], o.policies[p], r.error().message), r.error().code);
        if (!r->conservation.holds())
          out.conservation_failures.push_back(fmt::format("{} {} seed {}", l->label, o.policies[p], o.seeds[s]));
        // Through text and back: the unsharded report is built exactly as `merge` builds it.
        out.records.push_back(nlohmann::ordered_json::parse(run_record(*r, run, l->label, l->applied).dump()));
      }
    }
  return out;
}

}  // namespace gpusched::sim
