// A decision's tasks as plain records, and the JSON pieces every front end writes of a decision.
#include "gpusched/io/task_records.hpp"

#include <string>
#include <utility>

#include "gpusched/cluster/mig_gpus.hpp"
#include "io/decision_json.hpp"

namespace gpusched::io {

TaskRecord task_record(const ClusterState& state, const TaskAssignment& a, std::string group, std::int32_t replica) {
  TaskRecord t;
  t.group = std::move(group);
  t.replica = replica;
  t.node = a.node;
  t.node_name = std::string(state.node_name(a.node));
  t.gpus.assign(a.gpus.begin(), a.gpus.end());
  t.gpu_milli = static_cast<std::int32_t>(a.gpu_milli);
  if (a.is_mig()) {
    t.mig_profile_index = a.mig_profile;
    t.mig_start = a.mig_start;
    t.mig_create = a.mig_create;
    if (!a.gpus.empty()) {
      const auto g = state.mig().gpu(a.node, a.gpus.front());
      if (g != mig::kNoGpu) {
        const auto& profiles = state.mig().table().spec_of(g).profiles;
        if (static_cast<std::size_t>(a.mig_profile) < profiles.size())
          t.mig_profile = profiles[static_cast<std::size_t>(a.mig_profile)].name;
      }
    }
  }
  return t;
}

std::vector<TaskRecord> task_records(const ClusterState& state, const CompiledJob& job, std::span<const TaskPlacement> tasks) {
  std::vector<TaskRecord> out;
  out.reserve(tasks.size());
  for (const TaskPlacement& t : tasks)
    out.push_back(task_record(state, t.assignment, t.group < job.groups.size() ? job.groups[t.group].name : std::string(),
                              static_cast<std::int32_t>(t.replica)));
  return out;
}

nlohmann::json detail::reasons_json(const std::vector<Reason>& reasons, const CompiledJob* job) {
  nlohmann::json out = nlohmann::json::array();
  for (const Reason& r : reasons) {
    nlohmann::json item{{"kind", std::string(reason_name(r.kind))}, {"text", to_string(r)}};
    if (r.unit != Unit::kNone) item["unit"] = std::string(unit_name(r.unit));
    if (r.needed >= 0) item["needed"] = r.needed;
    if (r.available >= 0) item["available"] = r.available;
    if (r.count > 0) item["count"] = r.count;
    if (job && r.subject >= 0 && static_cast<std::size_t>(r.subject) < job->groups.size())
      item["group"] = job->groups[static_cast<std::size_t>(r.subject)].name;
    out.push_back(std::move(item));
  }
  return out;
}

nlohmann::json detail::placed_task_json(const TaskRecord& t) {
  nlohmann::json out{{"group", t.group}, {"replica", t.replica}, {"node", t.node_name}, {"gpus", t.gpus},
                     {"gpu_milli", t.gpu_milli}};
  // A MIG task: which instance, as the cycle's starts say it (a MIG GPU alone says nothing of it).
  if (t.is_mig())
    out["mig"] = {{"profile", t.mig_profile}, {"profile_index", t.mig_profile_index}, {"start", t.mig_start},
                  {"create", t.mig_create}};
  return out;
}

}  // namespace gpusched::io
