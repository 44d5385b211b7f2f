// Kubernetes objects as the scheduling cycle's inputs (gpusched/io/cycle_json.hpp,
// read_cycle_inputs_k8s). With the rest of src/io/k8s/ it is compiled outside the io library's unity
// unit, so that a program that never reads Kubernetes objects (the C API) links none of this and
// needs no YAML library at run time (docs/c-api.md).
#include <new>

#include <fmt/format.h>

#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "io/json_input.hpp"
#include "io/text_input.hpp"

namespace gpusched::io {
namespace {

// A bound pod's task on its node, on the GPUs the reader gave it (k8s::RunningPod::gpus: the Pod
// object names no device, and `place --k8s` / `fairshare --k8s` take the same ones off the node):
// its whole GPUs, its shared GPU (one per KAI runai-gpu-group), or its MIG GPU's idle instance at
// the start the reader chose; no GPU when the reader found no room for it.
TaskAssignment bound_assignment(const ClusterState& st, NodeId n, const TaskRequest& request, const k8s::RunningPod& r) {
  TaskAssignment a = make_assignment(n, request);
  if (request.mig.any()) {
    const mig::MigGpuId id = r.gpus.empty() ? mig::kNoGpu : st.mig().gpu(n, r.gpus.front());
    const int profile = id == mig::kNoGpu ? -1 : request.mig.profile[st.mig().table().model_of(id)];
    if (profile < 0 || r.mig_start < 0) return a;
    a.gpus.push_back(r.gpus.front());
    a.mig_profile = static_cast<std::int8_t>(profile);
    a.mig_start = r.mig_start;
    a.mig_create = false;
  } else if (request.shape.gpus > 0) {
    a.gpus.assign(r.gpus.begin(), r.gpus.end());
  }
  return a;
}

Result<AdapterCycle> read_k8s_cycle(std::span<const k8s::Source> sources) {
  k8s::Options kopt;
  kopt.subtract_running = false;
  auto input = k8s::read(sources, kopt);
  if (!input) return input.error();
  AdapterCycle out;
  for (const auto& w : input->warnings) out.warnings.push_back(k8s::to_string(w));
  if (Status s = out.build_state(input->registry, input->cluster); !s) return s.error();
  ClusterState& st = *out.state;
  CycleInputs& in = out.inputs;
  if (!input->topology_levels.empty())
    if (Status s = st.set_topology_levels(input->topology_levels); !s) return s.error();
  if (!input->queues.empty()) {
    auto fc = fairness::fairness_cluster(st);
    if (!fc) return detail::in_context(fc.error(), "nodes");
    auto configs = k8s::queue_configs(*input, st, fc->space);
    if (!configs) return configs.error();
    in.queues.queues = std::move(*configs);
    in.queues.classes.insert(input->priority_classes.begin(), input->priority_classes.end());
  }
  for (const k8s::RunningPod& r : input->running) {
    if (st.find_node(r.node) == kNoNode) continue;  // reported by the reader
    auto job = k8s::running_job_on(st, r);
    if (!job) return job.error();
    const RunningTask& t = job->tasks.front();
    const std::string what = fmt::format("{}: Pod {}/{}", r.source, r.pod.ns, r.pod.name);
    if (t.request.mig.any() && t.assignment.gpus.empty())
      return Error(fmt::format("{}: spec.nodeName: node {} has no idle MIG device of the pod's profile left", what, r.node),
                   ErrorCode::kState, "spec.nodeName");
    if (Status s = st.reserve(t.request, t.assignment); !s) return detail::in_context(s.error(), fmt::format("{} on node {}", what, r.node));
    in.running.push_back(std::move(*job));
    in.running_groups.push_back({"pod"});
  }
  st.commit();
  for (const Job& job : input->jobs) {
    auto compiled = compile_job(st, job);
    if (!compiled) return detail::in_context(compiled.error(), fmt::format("job {}", job.job_name));
    scheduler::PendingJob p;
    p.job = std::move(*compiled);
    in.pending.push_back(std::move(p));
  }
  return out;
}

}  // namespace

namespace k8s {
Result<RunningJob> running_job_on(const ClusterState& state, const RunningPod& pod) {
  const std::string what = fmt::format("{}: Pod {}/{}", pod.source, pod.pod.ns, pod.pod.name);
  const NodeId n = state.find_node(pod.node);
  if (n == kNoNode)
    return Error(fmt::format("{}: spec.nodeName: no node named {}", what, io::detail::shown(pod.node)), ErrorCode::kUnknownName,
                 "spec.nodeName");
  auto compiled = compile_job(state, pod.job);
  if (!compiled) return io::detail::in_context(compiled.error(), what);
  RunningJob job;
  job.name = pod.job.job_name;
  job.queue = pod.job.queue_name;
  job.priority = pod.priority;
  job.start_time = pod.start_time;
  const TaskRequest& request = compiled->groups[0].request;
  job.tasks.push_back({request, bound_assignment(state, n, request, pod)});
  return job;
}
}  // namespace k8s

Result<AdapterCycle> read_cycle_inputs_k8s(std::span<const k8s::Source> sources) {
  try {
    return read_k8s_cycle(sources);
  } catch (const std::bad_alloc&) {
    return Error("kubernetes objects: out of memory", ErrorCode::kLimit);
  }
}

}  // namespace gpusched::io
