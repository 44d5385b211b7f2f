// Composing every policy family on one cluster model, as an orchestrator would in one scheduling pass.
//
// The orchestrator keeps its own structs (machines with racks, GPUs in MIG mode, a job list). It
// implements gpusched's ClusterView and JobView over them once, builds one ClusterState, and then:
//   1. the fair-share planner (H-DRF over two queues) orders the pending jobs and admits them against
//      quota and free capacity;
//   2. each admitted job is placed on that same state, in admission order: a distributed job as a gang
//      (all or nothing, all ranks in one rack), a 4-GPU fine-tune with the topology-aware GPU picker
//      (an NVLink-connected quad on a DGX-1), an inference server on a MIG instance, a notebook on a
//      quarter of a T4;
//   3. whatever did not start is explained in the one vocabulary (not now / infeasible, with reasons).
// No state is copied between families. ctest runs this program and compares its output with
// examples/compose_orchestrator.expected (hand-checked: see the comments at each job).
#include <cstdio>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/topology/gpu_picker.hpp"

namespace orchestrator {

struct Gpu {
  std::string model;
  int used_milli = 0;
  bool mig = false;
};

struct Machine {
  std::string name;
  int cores = 0;
  long long ram_gib = 0;
  std::string rack;
  std::vector<Gpu> gpus;
};

struct Group {
  std::string name;
  int replicas = 1;
  gpusched::TaskShape shape;
  std::string mig_profile;  // "" = none
  std::string model;        // "" = any
};

struct Work {
  std::string name;
  std::string queue;
  int priority = 0;
  long long submitted = 0;
  std::vector<Group> groups;
  bool one_rack = false;  // all ranks in one rack (they all-reduce together)
};

class Machines final : public gpusched::ClusterView {
 public:
  explicit Machines(const std::vector<Machine>& m) : m_(m) {}
  std::size_t node_count() const override { return m_.size(); }
  std::string_view node_name(std::size_t n) const override { return m_[n].name; }
  gpusched::NodeResources node_resources(std::size_t n) const override {
    const auto cpu = m_[n].cores * gpusched::kMilliPerCpu;
    const auto mem = m_[n].ram_gib * gpusched::kGiB;
    return {cpu, cpu, mem, mem};
  }
  std::size_t gpu_count(std::size_t n) const override { return m_[n].gpus.size(); }
  gpusched::GpuInfo gpu(std::size_t n, std::size_t g) const override {
    const Gpu& gpu = m_[n].gpus[g];
    gpusched::GpuInfo info;
    info.model = gpu.model;
    info.free_milli = gpusched::kMilliPerGpu - gpu.used_milli;
    info.mig_mode = gpu.mig;
    return info;
  }
  std::size_t label_count(std::size_t) const override { return 1; }
  gpusched::Label label(std::size_t n, std::size_t) const override { return {"topology.kubernetes.io/rack", m_[n].rack}; }

 private:
  const std::vector<Machine>& m_;
};

class WorkView final : public gpusched::JobView {
 public:
  explicit WorkView(const Work& w) : w_(w) {}
  std::string_view name() const override { return w_.name; }
  std::string_view queue() const override { return w_.queue; }
  std::int32_t priority() const override { return w_.priority; }
  std::int64_t submit_time() const override { return w_.submitted; }
  std::size_t group_count() const override { return w_.groups.size(); }
  gpusched::TaskGroupInfo group(std::size_t g) const override {
    const Group& gr = w_.groups[g];
    return {gr.name, gr.replicas, -1, gr.shape, gr.mig_profile};
  }
  std::size_t allowed_model_count(std::size_t g) const override { return w_.groups[g].model.empty() ? 0 : 1; }
  std::string_view allowed_model(std::size_t g, std::size_t) const override { return w_.groups[g].model; }
  gpusched::TopologyRequest topology() const override {
    if (!w_.one_rack) return {};
    return {"rack", gpusched::LevelMode::kRequired};
  }

 private:
  const Work& w_;
};

gpusched::TaskShape gpus(int count, int cores) {
  return {cores * gpusched::kMilliPerCpu, 64 * gpusched::kGiB, count, gpusched::kMilliPerGpu, 0};
}

}  // namespace orchestrator

int main() {
  using namespace orchestrator;
  namespace gs = gpusched;

  std::vector<Machine> machines;
  auto add = [&](std::string name, std::string rack, std::string model, int count) {
    machines.push_back({std::move(name), 96, 1024, std::move(rack), std::vector<Gpu>(static_cast<std::size_t>(count), Gpu{model})});
  };
  add("h100-a", "r1", "H100-80GB", 8);
  add("h100-b", "r1", "H100-80GB", 8);
  add("h100-c", "r2", "H100-80GB", 8);
  add("dgx1", "r3", "V100-SXM2-32GB", 8);  // DGX-1: hybrid cube-mesh NVLink (the model's default)
  add("mig-1", "r3", "A100-SXM4-40GB", 1);
  add("t4-1", "r3", "T4", 4);
  machines[2].gpus[0].used_milli = machines[2].gpus[1].used_milli = 1000;  // h100-c: 6 GPUs free
  machines[3].gpus[1].used_milli = machines[3].gpus[2].used_milli = 1000;  // dgx1: GPUs 1, 2 busy
  machines[4].gpus[0].mig = true;                                          // empty MIG GPU
  machines[5].gpus[0].used_milli = 500;                                    // a notebook already

  std::vector<Work> work;
  // 16 H100 in one rack: only r1 has two free 8-GPU nodes.
  work.push_back({"llm-pretrain", "research", 10, 100, {{"worker", 2, gpus(8, 32), "", "H100-80GB"}}, true});
  // 3 x 8 H100 in one rack: the planner holds it (24 H100 asked, 6 free after llm-pretrain); the gang
  // family says waiting cannot help: no rack has 3 nodes with 8 free GPUs (r1 offers 0 now), and even
  // empty the largest rack, r1 (h100-a, h100-b), holds 2 tasks of 8 GPUs: infeasible.
  work.push_back({"llm-huge", "research", 10, 110, {{"worker", 3, gpus(8, 32), "", "H100-80GB"}}, true});
  // 4 V100 for a fine-tune: the picker takes an NVLink quad {4,5,6,7}, not the lowest idle {0,3,4,5}.
  work.push_back({"finetune", "research", 5, 120, {{"trainer", 1, gpus(4, 16), "", "V100M32"}}, false});
  // An inference server on a 1g.5gb MIG instance of the A100.
  gs::TaskShape serve_shape{4 * gs::kMilliPerCpu, 16 * gs::kGiB, 0, 0, 0};
  work.push_back({"chat-serve", "prod", 5, 130, {{"server", 1, serve_shape, "1g.5gb", ""}}, false});
  // A notebook on a quarter of a T4: best-fit shares the half-used GPU 0 (500 -> 250 left).
  gs::TaskShape notebook_shape{2 * gs::kMilliPerCpu, 8 * gs::kGiB, 1, 250, 0};
  work.push_back({"notebook", "prod", 1, 140, {{"lab", 1, notebook_shape, "", "T4"}}, false});
  // 8 H100 on one node: after llm-pretrain only h100-c's 6 are free -> not now (the planner says so).
  work.push_back({"eval", "prod", 3, 150, {{"eval", 1, gpus(8, 16), "", "H100-80GB"}}, false});

  const Machines view(machines);
  auto state = gs::ClusterState::build(view, gs::GpuModelRegistry::builtin());
  if (!state) {
    std::printf("cluster: %s\n", state.error().message.c_str());
    return 2;
  }

  // 1. Fair share over the same state: capacity and free per flavor come from it.
  auto resources = gs::fairness::fairness_cluster(*state);
  if (!resources) return 2;
  std::vector<gs::fairness::QueueConfig> queues(2);
  queues[0].name = "research";
  queues[1].name = "prod";
  auto planner = gs::fairness::FairSharePlanner::build(resources->space, resources->capacity, resources->free, queues);
  if (!planner) {
    std::printf("queues: %s\n", planner.error().message.c_str());
    return 2;
  }
  std::vector<WorkView> views;
  views.reserve(work.size());
  for (const Work& w : work) views.emplace_back(w);
  std::vector<const gs::JobView*> pointers;
  for (const WorkView& v : views) pointers.push_back(&v);
  auto plan = gs::fairness::plan_jobs(*planner, pointers, state->registry());
  if (!plan) {
    std::printf("jobs: %s\n", plan.error().message.c_str());
    return 2;
  }

  // 2. Place in admission order on the one state: best-fit nodes, topology-aware GPUs.
  const gs::BestFitPolicy policy;
  const gs::topology::TopologyGpuPicker picker;
  std::printf("admission order (H-DRF):\n");
  for (const gs::fairness::AdmittedJob& admitted : plan->plan.admitted) {
    const Work& w = work[admitted.job];
    auto job = gs::compile_job(*state, views[admitted.job]);
    if (!job) {
      std::printf("  %-13s invalid: %s\n", w.name.c_str(), job.error().message.c_str());
      continue;
    }
    std::vector<gs::TaskPlacement> tasks;
    std::string why;
    if (job->has_gang_constraints() || job->groups[0].replicas > 1) {
      auto spec = gs::make_gang_spec(*job);
      gs::GangOptions options;
      options.policy = &policy;
      options.gpu_picker = &picker;
      gs::GangResult r = gs::place_gang(*state, *spec, options);
      if (r.placed()) tasks = r.tasks;
      else why = std::string(gs::verdict_name(r.verdict)) + ": " + r.explanation;
    } else {
      gs::JobPlacementOptions options;
      options.gpu_picker = &picker;
      gs::JobPlacement p = gs::place_job(*state, *job, policy, options);
      if (p.placed()) tasks = p.tasks;
      else why = std::string(gs::verdict_name(p.verdict)) + ": " + gs::describe(*job, p);
    }
    if (tasks.empty()) {
      // Admitted by quota, but it does not place: its quota goes back and the pass goes on.
      std::printf("  %-13s not started, %s\n", w.name.c_str(), why.c_str());
      continue;
    }
    std::printf("  %-13s", w.name.c_str());
    for (const gs::TaskPlacement& t : tasks) {
      std::printf(" %s", std::string(state->node_name(t.assignment.node)).c_str());
      if (t.assignment.mig_profile >= 0) {
        std::printf("[MIG %s @ slice %d]", w.groups[t.group].mig_profile.c_str(), t.assignment.mig_start);
      } else if (t.assignment.gpu_milli > 0 && t.assignment.gpu_milli < gs::kMilliPerGpu) {
        std::printf("[GPU %u: %d milli]", static_cast<unsigned>(t.assignment.gpus[0]), static_cast<int>(t.assignment.gpu_milli));
      } else {
        std::printf("[GPUs");
        for (gs::GpuIndex g : t.assignment.gpus) std::printf(" %u", static_cast<unsigned>(g));
        std::printf("]");
      }
    }
    std::printf("\n");
  }
  state->commit();

  // 3. What waits, and why, in the one vocabulary.
  std::printf("pending:\n");
  for (const gs::fairness::PendingJobReport& pending : plan->plan.pending) {
    const gs::Outcome o = planner->outcome(plan->plan, pending);
    std::printf("  %-13s %s\n", work[pending.job].name.c_str(), gs::to_string(o).c_str());
    // Quota alone says "wait"; the gang family tells whether waiting can ever help.
    auto job = gs::compile_job(*state, views[pending.job]);
    if (!job || !job->has_gang_constraints()) continue;
    auto spec = gs::make_gang_spec(*job);
    gs::GangOptions dry;
    dry.dry_run = true;
    const gs::GangResult r = gs::place_gang(*state, *spec, dry);
    std::printf("  %-13s gang: %s: %s\n", "", std::string(gs::verdict_name(r.verdict)).c_str(), r.explanation.c_str());
  }
  std::printf("GPUs free after the pass: %lld milli of %lld\n", static_cast<long long>(state->total_gpu_milli_free()),
              static_cast<long long>(state->total_gpu_milli_capacity()));
  return 0;
}
