// `gpusched simulate` and `gpusched merge`: the time-based simulator over traces (docs/simulate.md).
//
//   gpusched simulate --trace itp:04 --policies fifo,easy,las --seeds 42-43 --out results/
//   gpusched simulate ... --shard 1/4 --out results/       # one slice of the sweep (runs with index % 4 == 1)
//   gpusched merge --out results/ results/shard-*.json     # the same report as the unsharded run, byte for byte
#include <charconv>
#include <cstdint>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "gpusched/sim/sim_report.hpp"
#include "gpusched/sim/simulator.hpp"
#include "gpusched/sim/sweep.hpp"
#include "io/text_input.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_simulate {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct SimOptions {
  std::vector<std::string> traces = {"itp:10"};
  std::string policies = "fifo,easy,conservative,drf,las,srtf";
  std::string seeds = "42";
  std::size_t nodes = 0;  // 0 = the trace's own cluster
  std::int32_t gpus_per_node = 8;
  std::string model = "V100M32";
  std::int64_t checkpoint_interval = 1800;
  std::int64_t restart_cost = 60;
  std::int32_t queues = 4;
  std::int32_t priorities = 1;
  double estimate_error = 1.0;
  double elastic = 0;
  double mtbf_hours = 0, mttr_hours = 2;
  std::string failures_file;
  std::int64_t cycle_period = 0;
  std::int64_t min_cycle_interval = 0;
  bool rebuild_cycles = false;
  double arrival_rate = 0;
  std::string queue_weights, queue_quotas;
  std::string shard;
  std::string out = "simulate-out";
  std::string format = "table";
  bool quiet = false;
  std::string placement;             // --placement ("" = best-fit)
  std::vector<std::string> plugins;  // --plugin
  std::string order, victim_order;   // --order, --victim-order ("" = the policy's own)
};

// CSV: a header line, then time,node,duration per line (seconds, node index, seconds), each an
// integer in the simulator's time range.
std::vector<sim::NodeFailure> read_failures(const std::string& path) {
  const std::string text = read_file(path);
  const auto lines = io::detail::text_lines(text);
  std::vector<sim::NodeFailure> out;
  for (std::size_t n = 1; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    if (line.empty()) continue;
    std::int64_t v[3] = {0, 0, 0};
    std::size_t field = 0, begin = 0;
    bool ok = true;
    for (; field < 3 && ok; ++field) {
      const std::size_t end = field < 2 ? line.find(',', begin) : line.size();
      if (end == std::string_view::npos) ok = false;
      else {
        const auto [p, ec] = std::from_chars(line.data() + begin, line.data() + end, v[field]);
        ok = ec == std::errc{} && p == line.data() + end;
        begin = end + 1;
      }
    }
    if (!ok || v[0] < 0 || v[0] > sim::kMaxSimSeconds || v[1] < 0 || v[1] > std::numeric_limits<std::uint32_t>::max() ||
        v[2] < 1 || v[2] > sim::kMaxSimSeconds)
      throw InputError(fmt::format("{}:{}: expected time,node,duration (time in [0, {}], a node index, duration in [1, {}]), got {}",
                                   path, n + 1, sim::kMaxSimSeconds, sim::kMaxSimSeconds, io::detail::shown(line)));
    out.push_back(sim::NodeFailure{.time = v[0], .node = static_cast<std::uint32_t>(v[1]), .duration = v[2]});
  }
  return out;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw InputError(p.string() + ": cannot write");
}

void write_report(const std::string& dir, const ordered_json& sweep, std::vector<ordered_json> records,
                  const std::string& format, bool quiet) {
  // Runs that ended with unfinished jobs, in run order, read from the records before the report
  // takes them (parsing the written report back was the same work twice).
  std::map<std::size_t, std::string> unfinished;
  for (const ordered_json& r : records) {
    const auto& m = r.at("metrics");
    if (const auto left = m.value("unfinished", std::size_t{0}); left > 0)
      unfinished[r.at("index").get<std::size_t>()] =
          fmt::format("gpusched: warning: {} {} seed {}: {} of {} jobs neither completed nor were rejected (docs/simulate.md, \"unfinished\")\n",
                      r.at("trace").get<std::string>(), r.at("policy").get<std::string>(), r.at("seed").dump(), left,
                      m.at("jobs").get<std::size_t>());
  }
  auto report = sim::sweep_report(sweep, std::move(records));
  if (!report) throw InputError(report.error().message);
  std::error_code ec;
  fs::create_directories(dir, ec);
  write_file(fs::path(dir) / "simulate.json", report->json);
  write_file(fs::path(dir) / "simulate.csv", report->csv);
  write_file(fs::path(dir) / "jct_cdf.svg", report->svg_jct_cdf);
  write_file(fs::path(dir) / "utilisation.svg", report->svg_utilisation);
  write_file(fs::path(dir) / "queue_length.svg", report->svg_queue);
  if (format == "json") std::fputs(report->json.c_str(), stdout);
  else std::fputs(report->table.c_str(), stdout);
  for (const auto& [index, line] : unfinished) std::fputs(line.c_str(), stderr);
  if (!quiet) std::fprintf(stderr, "wrote %s/{simulate.json,simulate.csv,jct_cdf.svg,utilisation.svg,queue_length.svg}\n",
                           dir.c_str());
}

// The sweep the options ask for (but its policies from plugins); a bad value is an InputError naming
// its option.
sim::SweepOptions read_sweep_options(const SimOptions& o) {
  sim::SweepOptions sw;
  sw.traces = o.traces;
  sw.policies.clear();
  for (std::size_t pos = 0; pos <= o.policies.size();) {
    const std::size_t c = o.policies.find(',', pos);
    sw.policies.push_back(o.policies.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  for (const auto& p : sw.policies)
    if (auto cfg = sim::parse_policy(p); !cfg) throw InputError("--policies: " + cfg.error().message);
  auto seeds = sim::parse_seed_list(o.seeds);
  if (!seeds) throw InputError("--" + seeds.error().message);
  sw.seeds = std::move(*seeds);
  if (!o.shard.empty()) {
    // i/n, each a whole number that fits (sscanf's %zu read 10^20 as 2^64 - 1 and the message then
    // quoted that instead of what was given).
    const char* const end = o.shard.data() + o.shard.size();
    const auto i = std::from_chars(o.shard.data(), end, sw.shard);
    const bool slash = i.ec == std::errc() && i.ptr != end && *i.ptr == '/';
    const auto n = slash ? std::from_chars(i.ptr + 1, end, sw.shards) : std::from_chars_result{end, std::errc::invalid_argument};
    if (!slash || n.ec != std::errc() || n.ptr != end || sw.shards == 0 || sw.shard >= sw.shards)
      throw InputError(fmt::format("--shard: expected i/n with 0 <= i < n, got {}", io::detail::shown(o.shard)));
  }
  if (!o.failures_file.empty()) {
    sw.failures = read_failures(o.failures_file);
    sw.failures_name = fs::path(o.failures_file).filename().string();
  }
  sw.nodes = o.nodes;
  sw.gpus_per_node = o.gpus_per_node;
  sw.model = o.model;
  sw.checkpoint_interval = o.checkpoint_interval;
  sw.restart_cost = o.restart_cost;
  sw.queues = o.queues;
  sw.priorities = o.priorities;
  sw.estimate_error = o.estimate_error;
  sw.elastic = o.elastic;
  sw.mtbf_hours = o.mtbf_hours;
  sw.mttr_hours = o.mttr_hours;
  sw.cycle_period = o.cycle_period;
  sw.min_cycle_interval = o.min_cycle_interval;
  sw.rebuild_cycles = o.rebuild_cycles;
  if (o.arrival_rate < 0 || !(o.arrival_rate <= 1e9))
    throw InputError(fmt::format("--arrival-rate: expected jobs per hour in (0, 1e9], got {}", o.arrival_rate));
  sw.arrival_rate = o.arrival_rate;
  auto weights = sim::parse_queue_values(o.queue_weights, "--queue-weights");
  if (!weights) throw InputError(weights.error().message);
  sw.queue_weights = std::move(*weights);
  auto quotas = sim::parse_queue_values(o.queue_quotas, "--queue-quotas", true);
  if (!quotas) throw InputError(quotas.error().message);
  for (const auto& [name, gpus] : *quotas) sw.queue_quota_gpus.emplace_back(name, static_cast<std::int64_t>(gpus));
  sw.data_dir = data_dir();
  return sw;
}

// Progress on stderr: a bar redrawn in place on a terminal; in a log (stderr not a terminal) at most
// one line per 10 % of each run. Either way a run's progress ends at 100 % (rejected jobs and a
// horizon end a run before all its jobs are done).
class SweepProgress {
 public:
  void update(std::size_t run, std::size_t total, const std::string& label, const std::string& policy, std::uint64_t seed,
              double f) {
    if (shown_run_ != run) {
      finish_run();
      shown_run_ = run;
      shown_tenths_ = -1;
      what_ = fmt::format("[{}/{}] {} {} seed {}", run + 1, total, label, policy, seed);
    }
    draw(f);
  }
  void finish_run() {
    if (shown_run_ == SIZE_MAX) return;
    draw(1.0);
    if (terminal_) std::fprintf(stderr, "\n");
    shown_run_ = SIZE_MAX;
  }

 private:
  void draw(double f) {
    if (terminal_) {
      const int w = 30, filled = static_cast<int>(f * w);
      std::fprintf(stderr, "\r%s [%s%s] %3.0f%%", what_.c_str(), std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   std::string(static_cast<std::size_t>(w - filled), ' ').c_str(), f * 100);
    } else {
      const int tenths = static_cast<int>(f * 10 + 1e-9);
      if (tenths <= shown_tenths_ || tenths == 0) return;
      shown_tenths_ = tenths;
      std::fprintf(stderr, "%s %d%%\n", what_.c_str(), tenths * 10);
    }
    std::fflush(stderr);
  }
  const bool terminal_ = isatty(fileno(stderr)) != 0;
  std::size_t shown_run_ = SIZE_MAX;  // the run being reported
  std::string what_;
  int shown_tenths_ = -1;
};

int run_simulate(const SimOptions& o) {
  sim::SweepOptions sw = read_sweep_options(o);
  const PluginRegistries registries = plugin_registries(o.plugins);
  const PolicyRegistry& registry = registries.policies;
  sw.placement = o.placement;
  sw.registry = &registry;
  if (!o.placement.empty() && !registry.find(o.placement))
    throw InputError(fmt::format("--placement: {}", registry.make(o.placement).error().message));
  (void)make_orders(registries.orders, o.order, o.victim_order);  // bad names: exit 2 before any run
  sw.order = o.order;
  sw.victim_order = o.victim_order;
  sw.orders = &registries.orders;
  SweepProgress progress;
  if (!o.quiet)
    sw.progress = [&](std::size_t run, std::size_t total, const std::string& label, const std::string& policy,
                      std::uint64_t seed, double f) { progress.update(run, total, label, policy, seed, f); };
  auto runs = sim::run_sweep(sw);
  progress.finish_run();
  if (!runs) throw InputError(runs.error().message);
  for (const auto& f : runs->conservation_failures)
    std::fprintf(stderr, "gpusched: conservation check FAILED for %s\n", f.c_str());
  const ordered_json sweep = sim::sweep_description(sw);
  if (!o.shard.empty()) {
    ordered_json doc;
    doc["sweep"] = sweep;
    doc["shard"] = {sw.shard, sw.shards};
    doc["records"] = runs->records;
    std::error_code ec;
    fs::create_directories(o.out, ec);
    const fs::path p = fs::path(o.out) / fmt::format("shard-{}-of-{}.json", sw.shard, sw.shards);
    write_file(p, doc.dump() + "\n");
    if (!o.quiet) std::fprintf(stderr, "wrote %s (%zu runs)\n", p.c_str(), runs->records.size());
    return 0;
  }
  write_report(o.out, sweep, std::move(runs->records), o.format, o.quiet);
  return 0;
}

int run_merge(const std::vector<std::string>& files, const std::string& out, const std::string& format, bool quiet) {
  if (files.empty()) throw InputError("merge: no shard files given");
  ordered_json sweep;
  std::size_t count = 0;
  std::map<std::size_t, std::string> seen;  // shard index -> its file
  std::vector<ordered_json> records;
  for (const auto& f : files) {
    auto shard = sim::read_shard(read_file(f), f);
    if (!shard) throw InputError(shard.error().message);
    if (sweep.is_null()) {
      sweep = shard->sweep;
      count = shard->count;
    } else if (sweep != shard->sweep) {
      throw InputError(fmt::format("{}: a shard of another sweep (its traces, their contents, policies, seeds or parameters differ from {}'s)",
                                   f, files.front()));
    } else if (shard->count != count) {
      throw InputError(fmt::format("{}: shard: a shard of {} where {} has shards of {}", f, shard->count, files.front(), count));
    }
    if (auto [it, fresh] = seen.emplace(shard->index, f); !fresh)
      throw InputError(fmt::format("{}: shard: shard {}/{} is also {}", f, shard->index, count, it->second));
    for (auto& r : shard->records) records.push_back(std::move(r));
  }
  write_report(out, sweep, std::move(records), format, quiet);
  return 0;
}

void setup(CLI::App& app) {
  auto opt = std::make_shared<SimOptions>();
  auto* sub = app.add_subcommand("simulate", "Replay job traces through time under scheduling policies (docs/simulate.md)");
  sub->add_option("--trace", opt->traces, "itp:01..itp:10, alibaba:NAME, synthetic:N, or a job file (.csv/.json); repeatable");
  sub->add_option("--policies", opt->policies, "comma list of fifo, greedy, easy, conservative, priority, drf, las, srtf "
                                               "with modifiers +ckpt +topo +energy +preempt")
      ->capture_default_str();
  sub->add_option("--seeds", opt->seeds, "N, A-B or a comma list")->capture_default_str();
  sub->add_option("--placement", opt->placement,
                  "Placement policy of every run (default best-fit): " + policy_help(PolicySet::kPlacement) +
                      "; the FGD paper's (" + policy_help(PolicySet::kTrace) + "); or a --plugin's (docs/policies.md)");
  add_order_options(sub, opt->order, opt->victim_order);
  add_plugin_option(sub, opt->plugins);
  sub->add_option("--nodes", opt->nodes, "cluster nodes (0 = the trace's own cluster)");
  sub->add_option("--gpus-per-node", opt->gpus_per_node)->capture_default_str();
  sub->add_option("--model", opt->model, "GPU model of the generated cluster")->capture_default_str();
  sub->add_option("--checkpoint-interval", opt->checkpoint_interval, "seconds (0 = none)")->capture_default_str();
  sub->add_option("--restart-cost", opt->restart_cost, "seconds")->capture_default_str();
  sub->add_option("--queues", opt->queues, "queues added to the trace")->capture_default_str();
  sub->add_option("--priorities", opt->priorities, "priority levels added to the trace")->capture_default_str();
  sub->add_option("--estimate-error", opt->estimate_error, "estimate = duration x U[1, 1+E]")->capture_default_str();
  sub->add_option("--elastic", opt->elastic, "share of multi-task jobs made elastic")->capture_default_str();
  sub->add_option("--mtbf-hours", opt->mtbf_hours, "per-node mean time between failures (0 = none)");
  sub->add_option("--mttr-hours", opt->mttr_hours, "mean time to repair")->capture_default_str();
  sub->add_option("--failures", opt->failures_file, "CSV time,node,duration of node failures");
  sub->add_option("--cycle-period", opt->cycle_period,
                  "seconds: also a cycle every period while jobs wait (0 = at wake-ups only; it changes no decision)")
      ->capture_default_str();
  sub->add_flag("--rebuild-cycles", opt->rebuild_cycles,
                "rebuild the scheduler from scratch at every cycle (the same results, slower: a check of the kept one)");
  sub->add_option("--arrival-rate", opt->arrival_rate, "synthetic traces: jobs per hour (default 60)");
  sub->add_option("--min-cycle-interval", opt->min_cycle_interval,
                  "seconds: at most one cycle per interval (0 = after every batch of events)")
      ->capture_default_str();
  sub->add_option("--queue-weights", opt->queue_weights, "drf: queue weights, e.g. q0=2,q1=1 (others 1)");
  sub->add_option("--queue-quotas", opt->queue_quotas, "drf: GPU quotas, e.g. q0=64,q1=32 (no borrowing; others uncapped)");
  sub->add_option("--shard", opt->shard, "i/n: run only the runs with index % n == i, write a shard file");
  sub->add_option("--out", opt->out, "output directory")->capture_default_str();
  sub->add_option("--format", opt->format, "stdout: table or json")->check(CLI::IsMember({"table", "json"}));
  sub->add_flag("--quiet", opt->quiet, "no progress bar");
  sub->callback([opt] { gpusched::cli::set_exit_status(run_simulate(*opt)); });

  auto files = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>("simulate-out");
  auto format = std::make_shared<std::string>("table");
  auto quiet = std::make_shared<bool>(false);
  auto* merge = app.add_subcommand("merge", "Combine `simulate --shard` files into the sweep's report");
  merge->add_option("shards", *files, "shard files")->required();
  merge->add_option("--out", *out, "output directory")->capture_default_str();
  merge->add_option("--format", *format)->check(CLI::IsMember({"table", "json"}));
  merge->add_flag("--quiet", *quiet);
  merge->callback([files, out, format, quiet] { gpusched::cli::set_exit_status(run_merge(*files, *out, *format, *quiet)); });
}

[[maybe_unused]] const bool registered = gpusched::cli::register_command(setup);

}  // namespace cmd_simulate
}  // namespace gpusched::cli
