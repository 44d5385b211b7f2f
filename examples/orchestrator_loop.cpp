// An orchestrator's loop over one day, on one scheduler session (scheduler/session.hpp).
//
// The orchestrator keeps its own structs (machines with racks, a DGX-1, a MIG A100, T4s) and its own
// job list; it implements gpusched's ClusterView and JobView over them once and opens one Session on
// one ClusterState. Then, every minute of the day, it tells the session what happened (jobs that
// arrived, jobs that ended, a node that failed or came back) and asks for one cycle. Each cycle
// composes the families on that state, in one pass:
//   fair share   two queues, research (weight 2) and prod (weight 1), served in H-DRF order;
//   gang         a two-node pretraining job, all ranks in one rack, all or nothing;
//   topology     GPUs picked by NVLink distance (TopologyGpuPicker): the fine-tune gets a quad;
//   MIG          an inference server on a 1g.5gb instance of the A100, where the frag-aware rule
//                puts it (FragAwareMigPicker: the slice that keeps the 4g and 3g profiles placeable);
//   preemption   a priority-20 hotfix evicts the lower-priority work of its queue, cheapest first.
// The session keeps the queue order and the running jobs between cycles, so a minute in which
// nothing changed costs little; the decisions are exactly those of run_cycle on the same lists.
// ctest runs this program and compares its output with examples/orchestrator_loop.expected. By hand:
//   00:00  H-DRF serves research first (equal shares, creation order): llm-pretrain, 2 x 8 H100 in
//          one rack, only r1 has two free 8-GPU nodes. Then prod, now the lower share: chat-serve on
//          the A100's 1g.5gb instance (slice 6; first fit would take 0), the notebook on a quarter of T4 GPU 0, embeddings on
//          a V100 pair; then research's finetune gets the fully NVLinked quad {4, 5, 6, 7} of the
//          DGX-1's hybrid cube mesh (the picker put the pair on {1, 2}, keeping a quad whole).
//   00:10  the four 2-GPU sweeps fill h100-c.
//   01:00  eval (prod, 8 H100 on one node) finds no free node; research holds 16 + 8 H100 + 4 V100
//          at weight 2, prod far less at weight 1: fair-share reclaim evicts the four sweeps (2 GPUs
//          x 3,000 s lost each, no checkpoints) and eval takes h100-c.
//   02:00  eval and finetune end; the sweeps start again on h100-c.
//   02:30  hotfix (research, priority 20) needs a whole H100 node: the sweeps (priority 0, run
//          1,800 s >= the 600 s minimum) are the cheapest victims (2 x 1,800 GPU-s each) against
//          llm-pretrain (16 GPUs x 9,000 s): they are evicted, hotfix starts.
//   03:00  hotfix ends, the sweeps start a third time and end at 04:00.
//   06:00  llm-pretrain ends; retrain (2 x 8 H100 in one rack) starts on r1.
//   07:00  h100-a fails: retrain is stopped whole and backs off a minute; with h100-a down no rack
//          has two free 8-GPU nodes, so it waits until h100-a is back at 09:00, and ends at 13:00.
//   The day ends with chat-serve and embeddings running.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/scheduler/session.hpp"
#include "gpusched/topology/gpu_picker.hpp"

namespace orchestrator {

struct Gpu {
  std::string model;
  bool mig = false;
};

struct Machine {
  std::string name;
  int cores = 0;
  long long ram_gib = 0;
  std::string rack;
  std::vector<Gpu> gpus;
};

struct Work {
  std::string name;
  std::string queue;
  int priority = 0;
  long long submit = 0;  // seconds into the day
  long long runtime = 0;
  int replicas = 1;
  gpusched::TaskShape shape;
  std::string model;        // "" = any
  std::string mig_profile;  // "" = none
  bool one_rack = false;
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
    gpusched::GpuInfo info;
    info.model = m_[n].gpus[g].model;
    info.mig_mode = m_[n].gpus[g].mig;
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
  std::int64_t submit_time() const override { return w_.submit; }
  std::size_t group_count() const override { return 1; }
  gpusched::TaskGroupInfo group(std::size_t) const override { return {"task", w_.replicas, -1, w_.shape, w_.mig_profile}; }
  std::size_t allowed_model_count(std::size_t) const override { return w_.model.empty() ? 0 : 1; }
  std::string_view allowed_model(std::size_t, std::size_t) const override { return w_.model; }
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

std::string hhmm(long long t) {
  char out[48];
  std::snprintf(out, sizeof out, "%02lld:%02lld", t / 3600, t / 60 % 60);
  return out;
}

std::string where(const gpusched::ClusterState& state, const std::vector<gpusched::scheduler::RunningTask>& tasks) {
  std::string out;
  for (const auto& t : tasks) {
    out += " " + std::string(state.node_name(t.assignment.node));
    if (t.assignment.mig_profile >= 0) {
      out += "[MIG @ slice " + std::to_string(t.assignment.mig_start) + "]";
    } else if (t.assignment.gpu_milli > 0 && t.assignment.gpu_milli < gpusched::kMilliPerGpu) {
      out += "[GPU " + std::to_string(t.assignment.gpus[0]) + ": " + std::to_string(t.assignment.gpu_milli) + " milli]";
    } else if (!t.assignment.gpus.empty()) {
      out += "[GPUs";
      for (gpusched::GpuIndex g : t.assignment.gpus) out += " " + std::to_string(g);
      out += "]";
    }
  }
  return out;
}

// The cluster: three H100 nodes in two racks, a DGX-1, one A100 in MIG mode and a T4 node.
std::vector<Machine> the_machines() {
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
  machines[4].gpus[0].mig = true;
  return machines;

}

// A day of work in two queues: training gangs, a MIG-served chat model, notebooks on shared T4s,
// a sweep, an evaluation, a high-priority hotfix that preempts, a retrain.
std::vector<Work> the_work() {
  namespace gs = gpusched;
  std::vector<Work> work;
  const gs::TaskShape serve{4 * gs::kMilliPerCpu, 16 * gs::kGiB, 0, 0, 0};
  const gs::TaskShape notebook{2 * gs::kMilliPerCpu, 8 * gs::kGiB, 1, 250, 0};
  //             name            queue       prio submit  runtime  replicas shape        model         MIG       one rack
  work.push_back({"llm-pretrain", "research", 5, 0, 6 * 3600, 2, gpus(8, 32), "H100-80GB", "", true});
  work.push_back({"finetune", "research", 5, 0, 2 * 3600, 1, gpus(4, 16), "V100M32", "", false});
  work.push_back({"chat-serve", "prod", 5, 0, 24 * 3600, 1, serve, "", "1g.5gb", false});
  work.push_back({"notebook", "prod", 1, 0, 3 * 3600, 1, notebook, "T4", "", false});
  work.push_back({"embeddings", "prod", 1, 0, 24 * 3600, 1, gpus(2, 8), "V100M32", "", false});
  for (int k = 0; k < 4; ++k)
    work.push_back({"sweep-" + std::to_string(k), "research", 0, 600, 3600, 1, gpus(2, 8), "H100-80GB", "", false});
  work.push_back({"eval", "prod", 3, 3600, 3600, 1, gpus(8, 16), "H100-80GB", "", false});
  work.push_back({"hotfix", "research", 20, 2 * 3600 + 1800, 1800, 1, gpus(8, 16), "H100-80GB", "", false});
  work.push_back({"retrain", "research", 0, 5 * 3600, 4 * 3600, 2, gpus(8, 32), "H100-80GB", "", true});
  return work;
}

// The work submitted at `now` joins its queue (compiled once, its runtime as the estimate).
void submit_arrivals(gpusched::scheduler::Session& session, const std::vector<Work>& work, const std::vector<WorkView>& views,
                     long long now) {
  for (std::size_t k = 0; k < work.size(); ++k) {
    if (work[k].submit != now) continue;
    auto job = gpusched::compile_job(session.state(), views[k]);
    if (!job) {
      std::printf("%s %s: invalid: %s\n", hhmm(now).c_str(), work[k].name.c_str(), job.error().message.c_str());
      continue;
    }
    gpusched::scheduler::PendingJob p;
    p.job = std::move(*job);
    p.runtime_estimate = work[k].runtime;
    (void)session.submit(std::move(p));
  }
}

// The running jobs whose time is up end: their GPUs go back to the state.
void finish_ended(gpusched::scheduler::Session& session, std::map<std::string, long long>& ends, long long now) {
  for (auto it = ends.begin(); it != ends.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    std::printf("%s %-12s ends\n", hhmm(now).c_str(), it->first.c_str());
    (void)session.finish(it->first);
    it = ends.erase(it);
  }
}

// What a cycle decided, as lines of the day's log; the jobs' expected ends follow the decisions.
void report(const gpusched::scheduler::CycleDecisions& d, long long now, const gpusched::ClusterState& state,
            const std::vector<Work>& work, std::map<std::string, std::size_t>& index, std::map<std::string, long long>& ends) {
  namespace gs = gpusched;
  namespace sc = gpusched::scheduler;
  for (const sc::Eviction& e : d.evictions) {
    std::printf("%s %-12s evicted for %s (%s), loses %.0f GPU-s\n", hhmm(now).c_str(), e.job.c_str(), e.for_job.c_str(),
                std::string(sc::eviction_reason_name(e.reason)).c_str(), static_cast<double>(e.lost_milli_gpu_seconds) / 1000);
    ends.erase(e.job);
  }
  for (const sc::Start& s : d.starts) {
    std::printf("%s %-12s starts%s%s\n", hhmm(now).c_str(), s.job.c_str(), where(state, s.tasks).c_str(),
                s.preempted ? " (after evictions)" : "");
    ends[s.job] = now + work[index[s.job]].runtime;
  }
  for (const sc::Waiting& w : d.waiting)
    if (now == 0 || w.outcome.verdict != gs::Verdict::kNotNow)
      std::printf("%s %-12s %s\n", hhmm(now).c_str(), w.job.c_str(), gs::to_string(w.outcome).c_str());
}

}  // namespace orchestrator

int main() {
  using namespace orchestrator;
  namespace gs = gpusched;
  namespace sc = gpusched::scheduler;

  const std::vector<Machine> machines = the_machines();
  std::vector<Work> work = the_work();

  const Machines view(machines);
  auto state = gs::ClusterState::build(view, gs::GpuModelRegistry::builtin());
  if (!state) {
    std::printf("cluster: %s\n", state.error().message.c_str());
    return 2;
  }
  std::vector<gs::fairness::QueueConfig> queues(2);
  queues[0].name = "research";
  queues[0].weight = 2;
  queues[1].name = "prod";
  const gs::topology::TopologyGpuPicker picker;
  const gs::mig::FragAwareMigPicker mig_picker(gs::mig::MigDemand::uniform(gs::mig::MigCatalog::builtin()));
  const gs::BestFitPolicy policy;
  sc::CycleOptions options;
  options.placement.policy = &policy;
  options.placement.gpu_picker = &picker;
  options.placement.mig_picker = &mig_picker;
  options.preemption.min_runtime = 600;
  options.backfill.mode = sc::BackfillMode::kNone;
  auto opened = sc::Session::open(*state, queues, options);
  if (!opened) {
    std::printf("queues: %s\n", opened.error().message.c_str());
    return 2;
  }
  sc::Session& session = *opened;

  std::vector<WorkView> views;
  views.reserve(work.size());
  for (const Work& w : work) views.emplace_back(w);
  std::map<std::string, long long> ends;  // running job -> when it ends
  std::map<std::string, std::size_t> index;
  for (std::size_t k = 0; k < work.size(); ++k) index[work[k].name] = k;
  const gs::NodeId h100_a = 0;
  std::size_t cycles = 0, busy_cycles = 0;

  for (long long now = 0; now < 24 * 3600; now += 60) {
    // What happened in the last minute: arrivals, ends, a node failure and its repair.
    submit_arrivals(session, work, views, now);
    finish_ended(session, ends, now);
    if (now == 7 * 3600) {
      auto failed = session.fail(h100_a, -1, now);
      std::printf("%s h100-a fails:", hhmm(now).c_str());
      for (const sc::Restart& r : failed->restarts) {
        std::printf(" %s restarts (back off until %s)", r.job.c_str(), hhmm(r.not_before).c_str());
        ends.erase(r.job);
      }
      std::printf("\n");
    }
    if (now == 9 * 3600) {
      (void)state->recover_node(h100_a);
      std::printf("%s h100-a is back\n", hhmm(now).c_str());
    }

    auto d = session.cycle(now, sc::CycleApply::kCommit, sc::CycleDetail::kDecisions);
    if (!d) {
      std::printf("cycle: %s\n", d.error().message.c_str());
      return 2;
    }
    ++cycles;
    busy_cycles += !d->starts.empty() || !d->evictions.empty();
    report(*d, now, *state, work, index, ends);
  }
  std::printf("%zu cycles, %zu of them started or evicted something; %zu jobs still pending, %zu running\n", cycles,
              busy_cycles, session.pending().size(), session.running().size());
  return 0;
}
