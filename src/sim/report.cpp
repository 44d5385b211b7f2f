// Writers of an ExperimentReport: a table for people, JSON and CSV for tools, an SVG plot.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpusched/sim/packing_experiment.hpp"

namespace gpusched::sim {
namespace {

std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
  if (seeds.empty()) return "";
  bool contiguous = true;
  for (std::size_t i = 1; i < seeds.size(); ++i) contiguous = contiguous && seeds[i] == seeds[i - 1] + 1;
  if (contiguous && seeds.size() > 1) return fmt::format("{}-{}", seeds.front(), seeds.back());
  std::string s;
  for (auto x : seeds) s += fmt::format("{}{}", s.empty() ? "" : ",", x);
  return s;
}

// Curve statistics across seeds at one point.
double curve_sd(const ExperimentReport& r, const std::string& policy, std::size_t point) {
  std::vector<double> v;
  for (const auto& run : r.runs)
    if (run.policy == policy) v.push_back(run.curve[point]);
  return stddev_of(v);
}

}  // namespace

std::string report_table(const ExperimentReport& r) {
  std::string out = fmt::format(
      "trace {}: {} nodes, {} GPUs, {} pods; arrivals resampled to {:.0f}% of GPU capacity; seeds {}\n",
      r.trace, r.nodes, r.gpus, r.pods, r.target_ratio * 100, seeds_text(r.seeds));
  out += fmt::format("{:<14} {:>16} {:>8} {:>18} {:>10} {:>10}\n", "policy", "unalloc@100% (%)", "sd",
                     fmt::format("vs {} (paired)", r.reference_policy), "placed", "failed");
  const bool paired = r.has_reference();
  for (const auto& p : r.policies) {
    std::string vs = p.policy == r.reference_policy || !paired
                         ? std::string("-")
                         : fmt::format("{:+.2f} ± {:.2f}", p.paired_diff_mean, p.paired_diff_stderr);
    out += fmt::format("{:<14} {:>16.2f} {:>8.2f} {:>18} {:>10.0f} {:>10.0f}\n", p.policy, p.mean_at_100,
                       p.stddev_at_100, vs, p.mean_placed, p.mean_failed);
  }
  if (!r.lower_bound_per_seed.empty())
    out += fmt::format("{:<14} {:>16.2f} {:>8.2f}   (LP bound: no policy can do better on these arrivals)\n",
                       "lower bound", r.lower_bound_mean, r.lower_bound_stddev);
  out += fmt::format("({:.1f} s)\n", r.seconds);
  return out;
}

std::string report_json(const ExperimentReport& r) {
  nlohmann::ordered_json j;
  j["trace"] = r.trace;
  j["nodes"] = r.nodes;
  j["gpus"] = r.gpus;
  j["pods"] = r.pods;
  j["seeds"] = r.seeds;
  j["target_ratio"] = r.target_ratio;
  j["reference_policy"] = r.reference_policy;
  j["curve_points_pct"] = r.curve_points;
  nlohmann::ordered_json pols = nlohmann::ordered_json::array();
  for (const auto& p : r.policies) {
    nlohmann::ordered_json o;
    o["policy"] = p.policy;
    o["unallocated_gpu_pct_at_100"] = p.mean_at_100;
    o["unallocated_gpu_pct_at_100_stddev"] = p.stddev_at_100;
    o["unallocated_gpu_pct_at_100_per_seed"] = p.per_seed_at_100;
    if (r.has_reference()) {
      o["paired_diff_vs_reference"] = p.paired_diff_mean;
      o["paired_diff_vs_reference_stderr"] = p.paired_diff_stderr;
    } else {
      o["paired_diff_vs_reference"] = nullptr;
      o["paired_diff_vs_reference_stderr"] = nullptr;
    }
    o["mean_pods_placed"] = p.mean_placed;
    o["mean_pods_failed"] = p.mean_failed;
    o["curve_unallocated_gpu_pct"] = p.mean_curve;
    pols.push_back(std::move(o));
  }
  j["policies"] = std::move(pols);
  if (!r.lower_bound_per_seed.empty()) {
    j["lower_bound"] = {{"unallocated_gpu_pct_at_100", r.lower_bound_mean},
                        {"unallocated_gpu_pct_at_100_stddev", r.lower_bound_stddev},
                        {"per_seed", r.lower_bound_per_seed},
                        {"method", "cutting-stock LP over 1000-milli GPUs (column generation, COIN-OR CLP)"}};
  } else {
    j["lower_bound"] = nullptr;
  }
  j["seconds"] = r.seconds;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string report_csv(const ExperimentReport& r) {
  std::string out = "policy,arrived_gpu_pct,unallocated_gpu_pct_mean,unallocated_gpu_pct_stddev\n";
  for (const auto& p : r.policies)
    for (std::size_t i = 0; i < r.curve_points.size(); ++i)
      out += fmt::format("{},{},{:.4f},{:.4f}\n", p.policy, r.curve_points[i], p.mean_curve[i],
                         curve_sd(r, p.policy, i));
  if (!r.lower_bound_per_seed.empty())
    out += fmt::format("lower-bound,100,{:.4f},{:.4f}\n", r.lower_bound_mean, r.lower_bound_stddev);
  return out;
}

std::string report_svg(const ExperimentReport& r) {
  constexpr double W = 760, H = 480, L = 70, R = 170, T = 40, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  double xmin = r.curve_points.empty() ? 0 : r.curve_points.front();
  double xmax = r.curve_points.empty() ? 1 : r.curve_points.back();
  if (xmax <= xmin) xmax = xmin + 1;
  double ymax = 1;
  for (const auto& p : r.policies)
    for (double v : p.mean_curve) ymax = std::max(ymax, v);
  ymax = std::ceil(ymax / 5.0) * 5.0;
  auto X = [&](double x) { return L + (x - xmin) / (xmax - xmin) * pw; };
  auto Y = [&](double y) { return T + (1.0 - y / ymax) * ph; };
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      W, H, W, H);
  s += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">Unallocated GPUs vs arrived "
                   "workload — trace {} (mean of {} seeds)</text>\n",
                   L + pw / 2, r.trace, r.seeds.size());
  // Axes, ticks, grid.
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", L, T, T + ph);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", L, T + ph, L + pw);
  for (double x = std::ceil(xmin / 10) * 10; x <= xmax + 1e-9; x += 10)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0:.1f}\" "
                     "y=\"{3}\" text-anchor=\"middle\">{4:.0f}</text>\n",
                     X(x), T, T + ph, T + ph + 16, x);
  for (double y = 0; y <= ymax + 1e-9; y += ymax / 5)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3}\" "
                     "y=\"{4:.1f}\" text-anchor=\"end\">{5:.0f}</text>\n",
                     L, Y(y), L + pw, L - 6, Y(y) + 4, y);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">Arrived GPU request (% of cluster GPU "
                   "capacity)</text>\n",
                   L + pw / 2, H - 18);
  s += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">Unallocated "
                   "GPUs (% of capacity)</text>\n",
                   T + ph / 2);
  for (std::size_t k = 0; k < r.policies.size(); ++k) {
    const auto& p = r.policies[k];
    const char* c = kColors[k % 10];
    std::string pts;
    for (std::size_t i = 0; i < r.curve_points.size(); ++i)
      pts += fmt::format("{:.1f},{:.1f} ", X(r.curve_points[i]), Y(p.mean_curve[i]));
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" points=\"{}\"/>\n", c, pts);
    const double ly = T + 10 + 18.0 * static_cast<double>(k);
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/><text "
                     "x=\"{4}\" y=\"{5}\">{6} ({7:.2f}%)</text>\n",
                     L + pw + 12, ly, L + pw + 32, c, L + pw + 38, ly + 4, p.policy, p.mean_at_100);
  }
  if (!r.lower_bound_per_seed.empty() && 100 >= xmin && 100 <= xmax) {
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"black\"/>\n", X(100), Y(r.lower_bound_mean));
    const double ly = T + 10 + 18.0 * static_cast<double>(r.policies.size());
    s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"black\"/><text x=\"{}\" y=\"{}\">LP bound "
                     "({:.2f}%)</text>\n",
                     L + pw + 22, ly, L + pw + 38, ly + 4, r.lower_bound_mean);
  }
  s += "</svg>\n";
  return s;
}

}  // namespace gpusched::sim
