// Writers of gpusched/sim/sim_report.hpp.
#include "gpusched/sim/sim_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "io/json_input.hpp"

namespace gpusched::sim {

nlohmann::ordered_json run_record(const SimResult& r, std::size_t index, const std::string& trace_label,
                                  const OptionsApplied& applied) {
  nlohmann::ordered_json j;
  const SimMetrics& m = r.metrics;
  j["index"] = index;
  j["trace"] = trace_label;
  j["policy"] = r.policy;
  j["seed"] = r.seed;
  // Keys as sweep.parameters names the options: 0 where the trace gives its own on every job.
  j["options_applied"] = {{"queues", applied.queues},
                          {"priorities", applied.priorities},
                          {"estimate_error", applied.estimate_error},
                          {"checkpoint_interval_s", applied.checkpoint_interval},
                          {"restart_cost_s", applied.restart_cost},
                          {"elastic_fraction", applied.elastic_fraction}};
  j["metrics"] = {{"jobs", m.jobs},
                  {"completed", m.completed},
                  {"rejected", m.rejected},
                  {"unfinished", m.unfinished},
                  {"jct_mean_s", m.jct_mean},
                  {"jct_p50_s", m.jct_p50},
                  {"jct_p95_s", m.jct_p95},
                  {"jct_p99_s", m.jct_p99},
                  {"wait_mean_s", m.wait_mean},
                  {"wait_p50_s", m.wait_p50},
                  {"wait_p95_s", m.wait_p95},
                  {"wait_p99_s", m.wait_p99},
                  {"slowdown_mean", m.slowdown_mean},
                  {"slowdown_p50", m.slowdown_p50},
                  {"slowdown_p95", m.slowdown_p95},
                  {"makespan_s", m.makespan},
                  {"utilisation_mean", m.utilisation_mean},
                  {"fragmentation_mean", m.fragmentation_mean},
                  {"jain_fairness_queues", m.jain_fairness},
                  {"gpu_hours_delivered", m.gpu_hours_delivered},
                  {"gpu_hours_lost_preemption", m.gpu_hours_lost_preemption},
                  {"gpu_hours_lost_failure", m.gpu_hours_lost_failure},
                  {"gpu_hours_restart", m.gpu_hours_restart},
                  {"preemptions", m.preemptions},
                  {"preemptions_per_job", m.preemptions_per_job},
                  {"max_preemptions_of_a_job", m.max_preemptions_of_a_job},
                  {"failure_restarts", m.failure_restarts},
                  {"node_failures", m.node_failures},
                  {"energy_kwh", m.energy_kwh},
                  {"cost", m.cost},
                  {"cycles", m.cycles},
                  {"events", m.events},
                  {"simulated_seconds", m.simulated_seconds}};
  const Conservation& c = r.conservation;
  j["conservation"] = {{"holds", c.holds()},
                       {"delivered_milli_gpu_s", c.delivered},
                       {"demand_done", c.demand_done},
                       {"lost_preemption", c.lost_preemption},
                       {"lost_failure", c.lost_failure},
                       {"restart_overhead", c.restart_overhead},
                       {"rounding", c.rounding},
                       {"max_overcommit", c.max_overcommit},
                       {"instants_checked", c.checks}};
  nlohmann::ordered_json t = nlohmann::ordered_json::array(), u = nlohmann::ordered_json::array(),
                         q = nlohmann::ordered_json::array(), f = nlohmann::ordered_json::array();
  for (const Sample& s : r.samples) {
    t.push_back(s.time);
    u.push_back(s.utilisation);
    q.push_back(s.queue_length);
    f.push_back(s.fragmentation);
  }
  j["samples"] = {{"time_s", t}, {"utilisation", u}, {"queue_length", q}, {"fragmentation", f}};
  nlohmann::ordered_json cdf = nlohmann::ordered_json::array();
  const std::size_t n = r.jct_sorted.size();
  if (n > 0)
    for (std::size_t k = 0; k <= 200; ++k) {
      const std::size_t i = std::min(n - 1, (n - 1) * k / 200);
      cdf.push_back(r.jct_sorted[i]);
    }
  j["jct_quantiles_s"] = cdf;  // at 0, 0.5, 1, ..., 100 %
  return j;
}

namespace {

const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                               "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

// A line plot; log_x for CDFs of times spanning decades.
std::string plot(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                 const std::vector<Series>& series, bool log_x) {
  constexpr double W = 860, H = 500, L = 70, R = 270, T = 40, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      const double xv = log_x ? std::log10(std::max(x, 1.0)) : x;
      xmin = std::min(xmin, xv);
      xmax = std::max(xmax, xv);
      ymax = std::max(ymax, y);
    }
  if (xmin > xmax) xmin = 0, xmax = 1;
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= 0) ymax = 1;
  const auto X = [&](double x) { return L + ((log_x ? std::log10(std::max(x, 1.0)) : x) - xmin) / (xmax - xmin) * pw; };
  const auto Y = [&](double y) { return T + (1.0 - y / ymax) * ph; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      W, H, W, H);
  s += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n", L + pw / 2,
                   escape(title));
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", L, T, T + ph);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", L, T + ph, L + pw);
  for (int k = 0; k <= 5; ++k) {
    const double xv = xmin + (xmax - xmin) * k / 5;
    const double label = log_x ? std::pow(10.0, xv) : xv;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.3g}</text>\n", L + pw * k / 5, T + ph + 16,
                     label);
    const double yv = ymax * k / 5;
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3}\" "
                     "y=\"{4:.1f}\" text-anchor=\"end\">{5:.3g}</text>\n",
                     L, Y(yv), L + pw, L - 6, Y(yv) + 4, yv);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", L + pw / 2, H - 18, escape(xlabel));
  s += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">{1}</text>\n",
                   T + ph / 2, escape(ylabel));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* c = kColors[k % 10];
    std::string pts;
    for (const auto& [x, y] : series[k].points) pts += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n", c, pts);
    const double ly = T + 10 + 16.0 * static_cast<double>(k);
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/><text "
                     "x=\"{4}\" y=\"{5}\">{6}</text>\n",
                     L + pw + 12, ly, L + pw + 32, c, L + pw + 38, ly + 4, escape(series[k].name));
  }
  s += "</svg>\n";
  return s;
}

double num(const nlohmann::ordered_json& j, const char* key) { return j.at(key).get<double>(); }

}  // namespace

namespace {

using ordered_json = nlohmann::ordered_json;

// A value as a message shows it: compact JSON (control bytes escaped by dump), cut at 60 chars. The
// document passed parse_json's depth bound, so dump's recursion is bounded.
std::string show(const ordered_json& v) {
  std::string t = v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  if (t.size() <= 60) return t;
  const std::size_t full = t.size();
  t.resize(60);
  return fmt::format("{}... ({} chars)", t, full);
}

[[noreturn]] void shard_fail(std::string_view file, const std::string& field, const std::string& message,
                             ErrorCode code = ErrorCode::kInvalidValue) {
  throw Error(fmt::format("{}: {}: {}", file, field, message), code, field);
}

// `v` shaped like `like` (what run_record writes): the same keys in any order, a number where it has
// a number (an integer where it has an integer), a bool, a string; arrays of finite numbers.
void check_like(std::string_view file, const ordered_json& v, const ordered_json& like, const std::string& path) {
  const auto kind = [](const ordered_json& x) -> std::string_view {
    return x.is_object() ? "an object" : x.is_array() ? "an array" : x.is_string() ? "a string" : x.is_boolean() ? "a bool"
         : x.is_number_integer() ? "an integer" : x.is_number() ? "a number" : "null";
  };
  const bool ok = like.is_object() ? v.is_object() : like.is_array() ? v.is_array() : like.is_string() ? v.is_string()
                : like.is_boolean() ? v.is_boolean() : like.is_number_integer() ? v.is_number_integer() : v.is_number();
  if (!ok) shard_fail(file, path, fmt::format("expected {}, got {}", kind(like), show(v)));
  if (like.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!like.contains(it.key())) shard_fail(file, path + "." + io::detail::shown_key(it.key()), "unknown field", ErrorCode::kUnknownField);
    for (auto it = like.begin(); it != like.end(); ++it) {
      if (!v.contains(it.key())) shard_fail(file, path + "." + it.key(), "missing", ErrorCode::kMissingField);
      check_like(file, v.at(it.key()), it.value(), path + "." + it.key());
    }
  } else if (like.is_array()) {
    for (std::size_t k = 0; k < v.size(); ++k)
      if (!v[k].is_number()) shard_fail(file, fmt::format("{}[{}]", path, k), fmt::format("expected a number, got {}", show(v[k])));
  }
}

// A list of the sweep: an array of strings (or of unsigned integers: the seeds).
std::size_t check_list(std::string_view file, const ordered_json& sweep, const char* key, bool numbers) {
  const std::string path = std::string("sweep.") + key;
  if (!sweep.contains(key)) shard_fail(file, path, "missing", ErrorCode::kMissingField);
  const ordered_json& list = sweep.at(key);
  if (!list.is_array() || list.empty()) shard_fail(file, path, fmt::format("expected a non-empty array, got {}", show(list)));
  for (std::size_t k = 0; k < list.size(); ++k)
    if (numbers ? !list[k].is_number_unsigned() : !list[k].is_string())
      shard_fail(file, fmt::format("{}[{}]", path, k),
                 fmt::format("expected {}, got {}", numbers ? "a seed (an unsigned integer)" : "a string", show(list[k])));
  return list.size();
}

void check_sweep(std::string_view file, const ordered_json& sweep) {
  if (!sweep.is_object()) shard_fail(file, "sweep", fmt::format("expected an object, got {}", show(sweep)));
  static const char* const kKeys[] = {"traces", "trace_labels", "trace_digests", "policies", "seeds", "runs", "parameters"};
  for (auto it = sweep.begin(); it != sweep.end(); ++it)
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return it.key() == k; }) == std::end(kKeys))
      shard_fail(file, "sweep." + io::detail::shown_key(it.key()), "unknown field", ErrorCode::kUnknownField);
  const std::size_t traces = check_list(file, sweep, "traces", false);
  if (check_list(file, sweep, "trace_labels", false) != traces || check_list(file, sweep, "trace_digests", false) != traces)
    shard_fail(file, "sweep.trace_labels", "expected one label and one digest per trace");
  const std::size_t runs = traces * check_list(file, sweep, "policies", false) * check_list(file, sweep, "seeds", true);
  if (!sweep.contains("runs") || !sweep.at("runs").is_number_unsigned() || sweep.at("runs").get<std::uint64_t>() != runs)
    shard_fail(file, "sweep.runs", fmt::format("expected {} (traces x policies x seeds), got {}", runs,
                                               sweep.contains("runs") ? show(sweep.at("runs")) : "nothing"));
  if (!sweep.contains("parameters") || !sweep.at("parameters").is_object())
    shard_fail(file, "sweep.parameters", "expected an object", ErrorCode::kMissingField);
}

// A record of run `index`: trace, policy and seed of that index (run_sweep's numbering).
void check_record(std::string_view file, const ordered_json& sweep, const ordered_json& r, const std::string& path,
                  const Shard& shard) {
  static const ordered_json like = [] {
    ordered_json l = run_record(SimResult{}, 0, "");
    l["jct_quantiles_s"] = ordered_json::array();
    return l;
  }();
  check_like(file, r, like, path);
  const std::size_t runs = sweep.at("runs").get<std::size_t>();
  const std::size_t policies = sweep.at("policies").size(), seeds = sweep.at("seeds").size();
  if (!r.at("index").is_number_unsigned() || r.at("index").get<std::uint64_t>() >= runs)
    shard_fail(file, path + ".index", fmt::format("expected a run index below {}, got {}", runs, show(r.at("index"))));
  const std::size_t i = r.at("index").get<std::size_t>();
  if (i % shard.count != shard.index)
    shard_fail(file, path + ".index", fmt::format("run {} is not one of shard {}/{} (index % {} = {})", i, shard.index,
                                                  shard.count, shard.count, i % shard.count));
  const auto expect = [&](const char* key, const ordered_json& want) {
    if (r.at(key) != want)
      shard_fail(file, path + "." + key, fmt::format("expected {} for run {}, got {}", show(want), i,
                                                     show(r.at(key))), ErrorCode::kInconsistent);
  };
  expect("trace", sweep.at("trace_labels")[i / (policies * seeds)]);
  expect("policy", sweep.at("policies")[(i / seeds) % policies]);
  expect("seed", sweep.at("seeds")[i % seeds]);
  const auto& s = r.at("samples");
  const std::size_t n = s.at("time_s").size();
  for (const char* k : {"utilisation", "queue_length", "fragmentation"})
    if (s.at(k).size() != n) shard_fail(file, path + ".samples." + k, fmt::format("expected {} samples (as time_s), got {}", n, s.at(k).size()));
  if (r.at("jct_quantiles_s").size() > 201)
    shard_fail(file, path + ".jct_quantiles_s", fmt::format("expected at most 201 quantiles, got {}", r.at("jct_quantiles_s").size()));
}

}  // namespace

Result<Shard> read_shard(std::string_view text, std::string_view file) {
  // Depth, size and repeated keys first (parse_json); then the same text in its own key order.
  if (auto checked = io::detail::parse_json(text, file); !checked) return checked.error();
  try {
    const ordered_json doc = ordered_json::parse(text);
    if (!doc.is_object()) shard_fail(file, "shard", "not a shard file (expected {\"sweep\", \"shard\", \"records\"})");
    for (auto it = doc.begin(); it != doc.end(); ++it)
      if (it.key() != "sweep" && it.key() != "shard" && it.key() != "records")
        shard_fail(file, io::detail::shown_key(it.key()), "unknown field", ErrorCode::kUnknownField);
    for (const char* k : {"sweep", "shard", "records"})
      if (!doc.contains(k)) shard_fail(file, k, "missing (not a shard file?)", ErrorCode::kMissingField);
    Shard out;
    out.sweep = doc.at("sweep");
    check_sweep(file, out.sweep);
    const ordered_json& header = doc.at("shard");
    if (!header.is_array() || header.size() != 2 || !header[0].is_number_unsigned() || !header[1].is_number_unsigned() ||
        header[1].get<std::uint64_t>() == 0 || header[1].get<std::uint64_t>() > 1'000'000 ||
        header[0].get<std::uint64_t>() >= header[1].get<std::uint64_t>())
      shard_fail(file, "shard", fmt::format("expected [i, n] with 0 <= i < n <= 1000000, got {}", show(header)));
    out.index = header[0].get<std::size_t>();
    out.count = header[1].get<std::size_t>();
    const ordered_json& records = doc.at("records");
    if (!records.is_array()) shard_fail(file, "records", fmt::format("expected an array, got {}", show(records)));
    for (std::size_t k = 0; k < records.size(); ++k) {
      check_record(file, out.sweep, records[k], fmt::format("records[{}]", k), out);
      out.records.push_back(records[k]);
    }
    return out;
  } catch (const Error& e) {
    return e;
  } catch (const nlohmann::json::exception& e) {
    return Error(fmt::format("{}: malformed JSON ({})", file, io::detail::json_library_text(e.what())), ErrorCode::kParse);
  }
}

Result<SweepReport> sweep_report(const nlohmann::ordered_json& sweep, std::vector<nlohmann::ordered_json> records) {
  const std::size_t total = sweep.at("runs").get<std::size_t>();
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
    return a.at("index").template get<std::size_t>() < b.at("index").template get<std::size_t>();
  });
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto idx = records[i].at("index").get<std::size_t>();
    if (idx != i)
      return Error{idx > i ? fmt::format("runs: run {} missing (a shard not merged?)", i)
                           : fmt::format("runs: run {} given twice", idx),
                   ErrorCode::kInconsistent, "runs"};
  }
  if (records.size() != total)
    return Error{fmt::format("runs: {} of {} runs present (a shard not merged?)", records.size(), total),
                 ErrorCode::kInconsistent, "runs"};
  SweepReport out;
  nlohmann::ordered_json doc;
  doc["sweep"] = sweep;
  doc["runs"] = records;
  out.json = doc.dump(1) + "\n";

  out.csv =
      "index,trace,policy,seed,jobs,completed,rejected,jct_mean_s,jct_p50_s,jct_p95_s,jct_p99_s,wait_mean_s,"
      "wait_p95_s,slowdown_mean,makespan_s,utilisation_mean,fragmentation_mean,jain_fairness_queues,"
      "gpu_hours_lost_preemption,gpu_hours_lost_failure,gpu_hours_restart,preemptions_per_job,energy_kwh,cost,"
      "conservation_holds\n";
  // "completed" shows completed/jobs, so that jobs that did not complete are seen in the table.
  out.table = fmt::format("{:<10} {:<18} {:>5} {:>13} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7} {:>9} {:>8}\n", "trace",
                          "policy", "seed", "completed", "JCT mean h", "JCT p95 h", "wait mean h", "slowdown",
                          "util %", "jain", "lost GPUh", "conserv.");
  for (const auto& r : records) {
    const auto& m = r.at("metrics");
    out.csv += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.at("index").get<std::size_t>(),
        r.at("trace").get<std::string>(), r.at("policy").get<std::string>(), r.at("seed").get<std::uint64_t>(),
        m.at("jobs").get<std::size_t>(), m.at("completed").get<std::size_t>(), m.at("rejected").get<std::size_t>(),
        num(m, "jct_mean_s"), num(m, "jct_p50_s"), num(m, "jct_p95_s"), num(m, "jct_p99_s"), num(m, "wait_mean_s"),
        num(m, "wait_p95_s"), num(m, "slowdown_mean"), m.at("makespan_s").get<std::int64_t>(),
        num(m, "utilisation_mean"), num(m, "fragmentation_mean"), num(m, "jain_fairness_queues"),
        num(m, "gpu_hours_lost_preemption"), num(m, "gpu_hours_lost_failure"), num(m, "gpu_hours_restart"),
        num(m, "preemptions_per_job"), num(m, "energy_kwh"), num(m, "cost"),
        r.at("conservation").at("holds").get<bool>() ? "true" : "false");
    out.table += fmt::format(
        "{:<10} {:<18} {:>5} {:>13} {:>10.2f} {:>10.2f} {:>10.2f} {:>9.2f} {:>7.1f} {:>7.3f} {:>9.1f} {:>8}\n",
        r.at("trace").get<std::string>(), r.at("policy").get<std::string>(), r.at("seed").get<std::uint64_t>(),
        fmt::format("{}/{}", m.at("completed").get<std::size_t>(), m.at("jobs").get<std::size_t>()), num(m, "jct_mean_s") / 3600, num(m, "jct_p95_s") / 3600,
        num(m, "wait_mean_s") / 3600, num(m, "slowdown_mean"), 100 * num(m, "utilisation_mean"),
        num(m, "jain_fairness_queues"),
        num(m, "gpu_hours_lost_preemption") + num(m, "gpu_hours_lost_failure"),
        r.at("conservation").at("holds").get<bool>() ? "ok" : "FAILED");
  }

  // Plots: one series per run label (trace/policy/seed when several).
  std::vector<Series> cdf, util, queue;
  const bool many_traces = sweep.at("traces").size() > 1, many_seeds = sweep.at("seeds").size() > 1;
  for (const auto& r : records) {
    std::string label = r.at("policy").get<std::string>();
    if (many_traces) label = r.at("trace").get<std::string>() + " " + label;
    if (many_seeds) label += fmt::format(" s{}", r.at("seed").get<std::uint64_t>());
    Series c{label, {}}, u{label, {}}, q{label, {}};
    const auto& qs = r.at("jct_quantiles_s");
    for (std::size_t k = 0; k < qs.size(); ++k) c.points.push_back({qs[k].get<double>(), k / 200.0});
    const auto& sm = r.at("samples");
    const auto& t = sm.at("time_s");
    for (std::size_t k = 0; k < t.size(); ++k) {
      const double h = t[k].get<double>() / 3600.0;
      u.points.push_back({h, 100 * sm.at("utilisation")[k].get<double>()});
      q.points.push_back({h, sm.at("queue_length")[k].get<double>()});
    }
    cdf.push_back(std::move(c));
    util.push_back(std::move(u));
    queue.push_back(std::move(q));
  }
  out.svg_jct_cdf = plot("Job completion time CDF", "JCT (s, log scale)", "fraction of completed jobs", cdf, true);
  out.svg_utilisation = plot("GPU utilisation over time", "time (h)", "allocated GPUs (% of capacity)", util, false);
  out.svg_queue = plot("Queue length over time", "time (h)", "jobs waiting", queue, false);
  return out;
}

}  // namespace gpusched::sim
