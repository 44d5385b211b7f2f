// Kubernetes objects as the scheduling cycle's inputs (gpusched/io/cycle_json.hpp,
// read_cycle_inputs_k8s). With the rest of src/io/k8s/ it is compiled outside the io library's unity
// unit, so that a program that never reads Kubernetes objects (the C API) links none of this and
// needs no YAML library at run time (docs/c-api.md).
#include <new>

#include <fmt/format.h>

#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "io/json_input.hpp"

namespace gpusched::io {
namespace {

// A bound pod's task on its node, on the GPUs the reader gave it (k8s::RunningPod::gpus: the Pod
// object names no device, and `place --k8s` / `fairshare --k8s` take the same ones off the node):
// its whole GPUs, its shared GPU (one per KAI runai-gpu-group), or its MIG GPU's idle instance at
// the start the reader chose. A pod the reader found no room for is refused by the reservation.
Result<TaskAssignment> bound_assignment(const ClusterState& st, NodeId n, const TaskRequest& request,
                                        const k8s::RunningPod& r, const std::string& what) {
  TaskAssignment a = make_assignment(n, request);
  if (request.mig.any()) {
    const mig::MigGpuId id = r.gpus.empty() ? mig::kNoGpu : st.mig().gpu(n, r.gpus.front());
    const int profile = id == mig::kNoGpu ? -1 : request.mig.profile[st.mig().table().model_of(id)];
    if (profile < 0 || r.mig_start < 0)
      return Error(fmt::format("{}: spec.nodeName: node {} has no idle MIG device of the pod's profile left", what, r.node),
                   ErrorCode::kState, "spec.nodeName");
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
    auto configs = k8s::queue_configs(*input, fc->space);
    if (!configs) return configs.error();
    in.queues.queues = std::move(*configs);
    in.queues.classes.insert(input->priority_classes.begin(), input->priority_classes.end());
  }
  for (const k8s::RunningPod& r : input->running) {
    const std::string what = fmt::format("{}: Pod {}/{}", r.source, r.pod.ns, r.pod.name);
    const NodeId n = st.find_node(r.node);
    if (n == kNoNode) continue;  // reported by the reader
    auto compiled = compile_job(st, r.job);
    if (!compiled) return detail::in_context(compiled.error(), what);
    const TaskRequest& request = compiled->groups[0].request;
    auto a = bound_assignment(st, n, request, r, what);
    if (!a) return a.error();
    if (Status s = st.reserve(request, *a); !s) return detail::in_context(s.error(), fmt::format("{} on node {}", what, r.node));
    scheduler::RunningJob job;
    job.name = r.job.job_name;
    job.queue = r.job.queue_name;
    job.priority = r.priority;
    job.start_time = r.start_time;
    job.tasks.push_back({request, std::move(*a)});
    in.running.push_back(std::move(job));
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

Result<AdapterCycle> read_cycle_inputs_k8s(std::span<const k8s::Source> sources) {
  try {
    return read_k8s_cycle(sources);
  } catch (const std::bad_alloc&) {
    return Error("kubernetes objects: out of memory", ErrorCode::kLimit);
  }
}

}  // namespace gpusched::io
