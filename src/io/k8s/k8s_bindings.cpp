// The answers in Kubernetes terms: pod bindings and MIG re-partition plans as JSON.
#include "io/k8s/k8s_reader.hpp"

namespace gpusched::io::k8s {

using json = nlohmann::json;

namespace {

json bindings_object(const Input& input, const ClusterState& state, std::span<const JobPlacement> placements,
                     std::span<const std::string> messages) {
  json bindings = json::array();
  json pending = json::array();
  for (std::size_t j = 0; j < input.jobs.size(); ++j) {
    const JobSource& src = input.sources[j];
    const JobPlacement* p = j < placements.size() ? &placements[j] : nullptr;
    std::vector<std::vector<bool>> bound(src.pods.size());
    for (std::size_t g = 0; g < src.pods.size(); ++g) bound[g].assign(src.pods[g].size(), false);
    if (p && p->placed()) {
      for (const TaskPlacement& t : p->tasks) {
        if (t.group >= src.pods.size() || t.replica >= src.pods[t.group].size()) continue;
        const PodRef& pod = src.pods[t.group][t.replica];
        bound[t.group][t.replica] = true;
        const TaskAssignment& a = t.assignment;
        json b{{"pod", pod.ns + "/" + pod.name}, {"namespace", pod.ns}, {"name", pod.name},
               {"node", std::string(state.node_name(a.node))}};
        json gpus = json::array();
        for (auto g : a.gpus) gpus.push_back(g);
        b["gpus"] = gpus;
        if (a.is_mig() && !a.gpus.empty()) {
          const auto id = state.mig().gpu(a.node, a.gpus[0]);
          std::string profile;
          if (id != mig::kNoGpu) profile = state.mig().table().spec_of(id).profiles[static_cast<std::size_t>(a.mig_profile)].name;
          b["mig"] = json{{"gpu", a.gpus[0]}, {"profile", profile}, {"start", a.mig_start}};
        } else if (a.gpu_milli > 0 && a.gpu_milli < kMilliPerGpu) {
          b["gpu_milli"] = a.gpu_milli;
        }
        b["job"] = input.jobs[j].job_name;
        bindings.push_back(std::move(b));
      }
    }
    for (std::size_t g = 0; g < src.pods.size(); ++g)
      for (std::size_t r = 0; r < src.pods[g].size(); ++r) {
        if (bound[g][r]) continue;
        const PodRef& pod = src.pods[g][r];
        json e{{"pod", pod.ns + "/" + pod.name}, {"job", input.jobs[j].job_name}};
        if (p) e["verdict"] = std::string(verdict_name(p->placed() ? Verdict::kNotNow : p->verdict));
        if (j < messages.size() && !messages[j].empty()) e["message"] = messages[j];
        else if (p && p->placed()) e["message"] = "the gang was placed at its minimum; this pod waits";
        pending.push_back(std::move(e));
      }
  }
  json warnings = json::array();
  for (const Warning& w : input.warnings)
    warnings.push_back(json{{"object", w.object}, {"field", w.field}, {"message", w.message}, {"count", w.count}});
  return json{{"bindings", bindings}, {"pending", pending}, {"warnings", warnings}};
}

json instances_json(const mig::MigGpuSpec& spec, std::span<const mig::MigInstance> instances) {
  json out = json::array();
  for (const mig::MigInstance& i : instances) {
    const int p = spec.find_id(i.profile_id);
    out.push_back(json{{"profile", p >= 0 ? spec.profiles[static_cast<std::size_t>(p)].name : std::string("?")}, {"start", i.start}});
  }
  return out;
}

std::string dump(const json& v) { return v.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string bindings_json(const Input& input, const ClusterState& state, std::span<const JobPlacement> placements,
                          std::span<const std::string> messages) {
  return dump(bindings_object(input, state, placements, messages));
}

namespace {

json repartition_object(const ClusterState& state, const mig::MigPlan& plan) {
  json gpus = json::array();
  for (const mig::MigGpuChange& c : plan.changes) {
    const mig::MigGpuSpec& spec = state.mig().table().spec_of(c.gpu);
    gpus.push_back(json{{"node", std::string(state.node_name(state.mig().table().node_of(c.gpu)))},
                        {"gpu", state.mig().table().local_index(c.gpu)},
                        {"destroy", instances_json(spec, c.destroyed)},
                        {"create", instances_json(spec, c.created)},
                        {"after", instances_json(spec, c.after)}});
  }
  return json{{"served", plan.total_served()}, {"unserved", plan.total_unserved()}, {"gpus", std::move(gpus)}};
}

}  // namespace

std::string repartition_json(const ClusterState& state, const mig::MigPlan& plan) {
  return plan.changes.empty() ? std::string() : dump(repartition_object(state, plan));
}

std::string bindings_json(const Input& input, const ClusterState& state, const Decisions& decisions) {
  json out = bindings_object(input, state, decisions.placements, decisions.messages);
  if (!decisions.repartition.changes.empty()) out["repartition"] = repartition_object(state, decisions.repartition);
  return dump(out);
}

}  // namespace gpusched::io::k8s
