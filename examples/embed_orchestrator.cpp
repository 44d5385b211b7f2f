// Embedding gpusched in an orchestrator that keeps its own structures.
//
// The orchestrator below has its own `Machine` and `PendingJob` types, as a real one would (an
// informer cache, a Slurm node table). It implements gpusched's two read-only views directly over
// them, without copying, asks the best-fit policy where a job should go, and prints the decision.
// The test suite runs this program, so the interfaces stay easy to implement.
#include <cstdio>
#include <string>
#include <vector>

#include "gpusched/gpusched.hpp"

namespace orchestrator {

struct Accelerator {
  int used_milli = 0;  // share of this GPU in use
};

struct Machine {
  std::string hostname;
  int cores = 0;
  int cores_used = 0;
  long long ram_gib = 0;
  long long ram_used_gib = 0;
  std::string gpu_type;
  std::vector<Accelerator> accelerators;
  bool cordoned = false;
  std::string rack;
};

struct PendingJob {
  std::string id;
  int workers = 0;
  int gpus_per_worker = 0;
  int cores_per_worker = 0;
};

// The views read the orchestrator's own vectors; nothing is copied.
class MachinesView final : public gpusched::ClusterView {
 public:
  explicit MachinesView(const std::vector<Machine>& machines) : machines_(machines) {}
  std::size_t node_count() const override { return machines_.size(); }
  std::string_view node_name(std::size_t n) const override { return machines_[n].hostname; }
  gpusched::NodeResources node_resources(std::size_t n) const override {
    const Machine& m = machines_[n];
    return {m.cores * gpusched::kMilliPerCpu, (m.cores - m.cores_used) * gpusched::kMilliPerCpu,
            m.ram_gib * gpusched::kGiB, (m.ram_gib - m.ram_used_gib) * gpusched::kGiB};
  }
  std::size_t gpu_count(std::size_t n) const override { return machines_[n].accelerators.size(); }
  gpusched::GpuInfo gpu(std::size_t n, std::size_t g) const override {
    return {machines_[n].gpu_type, gpusched::kMilliPerGpu - machines_[n].accelerators[g].used_milli};
  }
  bool schedulable(std::size_t n) const override { return !machines_[n].cordoned; }
  std::size_t label_count(std::size_t) const override { return 1; }
  gpusched::Label label(std::size_t n, std::size_t) const override { return {"rack", machines_[n].rack}; }

 private:
  const std::vector<Machine>& machines_;
};

class PendingJobView final : public gpusched::JobView {
 public:
  explicit PendingJobView(const PendingJob& job) : job_(job) {}
  std::string_view name() const override { return job_.id; }
  std::size_t group_count() const override { return 1; }
  gpusched::TaskGroupInfo group(std::size_t) const override {
    gpusched::TaskShape shape;
    shape.cpu = job_.cores_per_worker * gpusched::kMilliPerCpu;
    shape.gpus = job_.gpus_per_worker;
    shape.gpu_milli = gpusched::kMilliPerGpu;
    return {"worker", job_.workers, -1, shape};
  }

 private:
  const PendingJob& job_;
};

}  // namespace orchestrator

int main() {
  using namespace orchestrator;
  std::vector<Machine> machines = {
      {"gpu-a", 64, 8, 512, 64, "H100-80GB", std::vector<Accelerator>(8), false, "r1"},
      {"gpu-b", 64, 0, 512, 0, "H100-80GB", std::vector<Accelerator>(8), false, "r1"},
      {"gpu-c", 64, 0, 512, 0, "H100-80GB", std::vector<Accelerator>(8), true, "r2"},
  };
  // gpu-a already runs a 6-GPU job: best-fit should put a 2-GPU worker there.
  for (int g = 0; g < 6; ++g) machines[0].accelerators[g].used_milli = 1000;

  MachinesView cluster(machines);
  auto state = gpusched::ClusterState::build(cluster, gpusched::GpuModelRegistry::builtin());
  if (!state) {
    std::fprintf(stderr, "cluster: %s\n", state.error().message.c_str());
    return 2;
  }
  PendingJob pending{"train-7", 2, 2, 8};
  PendingJobView job(pending);
  auto compiled = gpusched::compile_job(*state, job);
  if (!compiled) {
    std::fprintf(stderr, "job: %s\n", compiled.error().message.c_str());
    return 2;
  }
  gpusched::BestFitPolicy best_fit;
  const gpusched::JobPlacement placement = gpusched::place_job(*state, *compiled, best_fit);
  if (!placement.placed()) {
    std::printf("%s unschedulable: %s\n", pending.id.c_str(), describe(*compiled, placement).c_str());
    return 1;
  }
  bool as_expected = true;
  for (const auto& task : placement.tasks) {
    std::printf("%s worker %u -> %s GPUs", pending.id.c_str(), task.replica,
                machines[task.assignment.node].hostname.c_str());
    for (auto g : task.assignment.gpus) std::printf(" %u", static_cast<unsigned>(g));
    std::printf("\n");
  }
  // Worker 0 fills gpu-a's last two GPUs; worker 1 goes to gpu-b (gpu-c is cordoned).
  as_expected = placement.tasks.size() == 2 && placement.tasks[0].assignment.node == 0 &&
                placement.tasks[0].assignment.gpus == std::vector<gpusched::GpuIndex>{6, 7} &&
                placement.tasks[1].assignment.node == 1;
  if (!as_expected) return 1;

  // The cluster moves on; the state follows it through events instead of being rebuilt. gpu-b fails
  // (its worker is reported as running work to requeue), the operator uncordons gpu-c, and the worker
  // is placed again: on gpu-c, the only node with 2 idle GPUs left.
  state->commit();
  auto lost = state->fail_node(1);
  auto uncordoned = state->uncordon(2);
  if (!lost || !uncordoned) return 2;
  std::printf("gpu-b failed with %d milli-GPU of work on it\n", static_cast<int>(lost->gpu_milli));
  if (!state->release(placement.tasks[1].assignment)) return 2;
  gpusched::CompiledJob one_worker = *compiled;
  one_worker.groups[0].replicas = 1;
  one_worker.groups[0].min_replicas = 1;
  const gpusched::JobPlacement again = gpusched::place_job(*state, one_worker, best_fit);
  if (!again.placed()) return 1;
  std::printf("%s worker 1 -> %s\n", pending.id.c_str(), machines[again.tasks[0].assignment.node].hostname.c_str());
  return lost->gpu_milli == 2000 && again.tasks[0].assignment.node == 2 ? 0 : 1;
}
