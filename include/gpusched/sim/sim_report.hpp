// gpusched/sim/sim_report.hpp — the simulator's reports: one JSON record per run, and the sweep report
// (JSON, CSV, SVG plots) built from the records alone.
//
// Sweeps. A sweep is traces x policies x seeds, numbered in that order (run index). `gpusched simulate
// --shard i/n` runs the runs whose index % n == i and writes their records; `gpusched merge` reads the
// shards back and writes the report. The unsharded run goes through the same records (written to text
// and read back), so its report and the merged one are the same bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusched/core/result.hpp"
#include "gpusched/sim/simulator.hpp"
#include "gpusched/sim/traces.hpp"

namespace gpusched::sim {

// A run as the reports need it: index, labels, how many jobs took each option's value
// (`options_applied`), metrics, conservation, samples, the JCT CDF (at most 201 quantiles). Every
// number is an integer or a double that round-trips through JSON text.
nlohmann::ordered_json run_record(const SimResult& result, std::size_t index, const std::string& trace_label,
                                  const OptionsApplied& applied = {});

struct SweepReport {
  std::string json;  // {"sweep": ..., "runs": [...]} (records in index order)
  std::string csv;   // one row per run
  std::string table; // for people
  std::string svg_jct_cdf, svg_utilisation, svg_queue;
};

// One shard file as `gpusched simulate --shard i/n` writes it: {"sweep", "shard": [i, n], "records"}.
struct Shard {
  nlohmann::ordered_json sweep;
  std::size_t index = 0, count = 1;
  std::vector<nlohmann::ordered_json> records;
};
// Reads a shard, checked as every reader checks its input (errors name `file`, the field path and
// the value): JSON nested at most 64 deep, no key twice, no unknown field; 0 <= i < n; the sweep's
// lists, its run count (their product) and its trace labels consistent; each record exactly what
// run_record writes (the same keys, numbers where it writes numbers), its index one of this shard's
// (index % n == i, below the run count) and its trace, policy and seed the ones of that index.
Result<Shard> read_shard(std::string_view text, std::string_view file);

// Builds the report from the sweep description and its records (any order; each index once, 0..total-1).
Result<SweepReport> sweep_report(const nlohmann::ordered_json& sweep, std::vector<nlohmann::ordered_json> records);

}  // namespace gpusched::sim
