// Slurm's JSON as the scheduling cycle's inputs (gpusched/io/cycle_json.hpp, read_cycle_inputs_slurm;
// docs/slurm.md): nodes whole, running jobs reserved on the GPUs Slurm gave them (gres_detail's
// indices) with their end times as the backfill's expected ends, pending jobs with their time limits
// as run-time estimates.
#include <new>

#include <fmt/format.h>

#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/slurm.hpp"
#include "io/json_input.hpp"
#include "io/text_input.hpp"

namespace gpusched::io {
namespace {

Status reserve_running(ClusterState& st, const slurm::RunningInfo& run, CycleInputs& in) {
  if (run.tasks.empty()) return {};  // on nodes the input does not have (reported by the reader)
  auto job = slurm::running_job_on(st, run);
  if (!job) return job.error();
  std::vector<std::string> groups;
  for (std::size_t k = 0; k < job->tasks.size(); ++k) {
    const RunningTask& t = job->tasks[k];
    if (Status s = st.reserve(t.request, t.assignment); !s)
      return detail::in_context(s.error(), fmt::format("running job {} on node {}", run.id, run.tasks[k].node));
    groups.push_back(slurm::running_group_name(k));
  }
  in.running.push_back(std::move(*job));
  in.running_groups.push_back(std::move(groups));
  return {};
}

Result<AdapterCycle> read_slurm_cycle(std::span<const slurm::Source> sources, slurm::Options options) {
  options.subtract_running = false;
  auto input = slurm::read(sources, options);
  if (!input) return input.error();
  AdapterCycle out;
  out.warnings = std::move(input->warnings);
  if (Status s = out.build_state(input->registry, input->cluster); !s) return s.error();
  ClusterState& st = *out.state;
  for (const slurm::RunningInfo& run : input->running)
    if (Status s = reserve_running(st, run, out.inputs); !s) return s.error();
  st.commit();
  for (std::size_t j = 0; j < input->jobs.size(); ++j) {
    auto compiled = compile_job(st, input->jobs[j]);
    if (!compiled) return detail::in_context(compiled.error(), fmt::format("job {}", input->pending[j].id));
    scheduler::PendingJob p;
    p.job = std::move(*compiled);
    p.runtime_estimate = slurm::runtime_estimate(input->pending[j]);
    out.inputs.pending.push_back(std::move(p));
  }
  out.slurm = std::move(*input);
  return out;
}

}  // namespace

namespace slurm {
Result<RunningJob> running_job_on(const ClusterState& state, const RunningInfo& run) {
  const std::string what = fmt::format("running job {}", run.id);
  RunningJob job;
  job.name = run.id;
  job.queue = run.account;
  job.priority = run.priority;
  job.start_time = run.start_time;
  job.runtime_estimate = run.end_time > run.start_time ? run.end_time - run.start_time : -1;
  auto compiled = compile_job(state, running_job(run));
  if (!compiled) return detail::in_context(compiled.error(), what);
  for (std::size_t k = 0; k < run.tasks.size(); ++k) {
    const RunningInfo::Task& t = run.tasks[k];
    const NodeId n = state.find_node(t.node);
    if (n == kNoNode)
      return Error(fmt::format("{}: nodes[{}]: no node named {}", what, k, detail::shown(t.node, 200)), ErrorCode::kUnknownName, "nodes");
    const TaskRequest& request = compiled->groups[k].request;
    TaskAssignment a = make_assignment(n, request);
    for (std::int32_t g : t.gpus) a.gpus.push_back(static_cast<GpuIndex>(g));
    job.tasks.push_back({request, std::move(a)});
  }
  return job;
}
}  // namespace slurm

Result<AdapterCycle> read_cycle_inputs_slurm(std::span<const slurm::Source> sources, const slurm::Options& options) {
  try {
    return read_slurm_cycle(sources, options);
  } catch (const std::bad_alloc&) {
    return Error("slurm: out of memory", ErrorCode::kLimit);
  }
}

}  // namespace gpusched::io
