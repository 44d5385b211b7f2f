// libFuzzer: the simulator's trace readers (docs/simulate.md) on arbitrary bytes: the ITP CSV
// (job_id,submission_time,duration,num_gpu), the generic jobs CSV and the generic jobs JSON. Each
// must give jobs or an Error. Jobs the CSV reader accepts are written back with jobs_to_csv and must
// read back to the same jobs (the writer quotes and escapes every name it writes).
#include "fuzz_harness.hpp"

#include <cstdlib>
#include <tuple>

#include "gpusched/sim/traces.hpp"

namespace fuzz_sim_traces {

bool same_jobs(const std::vector<gpusched::sim::SimJob>& a, const std::vector<gpusched::sim::SimJob>& b) {
  if (a.size() != b.size()) return false;
  const auto fields = [](const gpusched::sim::SimJob& j) {
    return std::tie(j.name, j.queue, j.priority, j.submit, j.duration, j.estimate, j.shape.cpu, j.shape.memory,
                    j.shape.gpus, j.shape.gpu_milli, j.tasks, j.min_tasks, j.gpu_model, j.checkpoint_interval,
                    j.restart_cost, j.preemptible);
  };
  for (std::size_t i = 0; i < a.size(); ++i)
    if (fields(a[i]) != fields(b[i])) return false;
  return true;
}

GPUSCHED_FUZZ_TARGET(sim_traces, data, size) {
  const std::string_view text = gpusched::fuzz::as_text(data, size);
  gpusched::fuzz::check_result(gpusched::sim::parse_itp_trace(text, "itp.csv"));
  gpusched::fuzz::check_result(gpusched::sim::parse_jobs_json(text, "jobs.json"));
  const auto csv = gpusched::sim::parse_jobs_csv(text, "jobs.csv");
  gpusched::fuzz::check_result(csv);
  if (csv.ok()) {
    const auto again = gpusched::sim::parse_jobs_csv(gpusched::sim::jobs_to_csv(*csv), "again.csv");
    if (!again.ok() || !same_jobs(*csv, *again)) std::abort();
  }
  return 0;
}

}  // namespace fuzz_sim_traces
