// MIG in the one cluster model: a MIG reservation is a ClusterState change, rollback restores it
// exactly, MIG GPUs are not given to whole-GPU or shared tasks, a job's MIG task group is placed by
// place_job, and the cluster JSON carries MIG (round trip, unknown fields rejected).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "mig/mig_test_util.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "io/cluster_json_detail.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/mig/planner.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/scheduler/cycle.hpp"

using namespace gpusched;
using namespace gpusched::mig;

namespace {

using namespace gpusched::mig::testing;

// One node, 64 cores / 256 GiB: GPU 0 an A100-40GB in MIG mode with a busy 3g.20gb at 0, GPU 1 an
// A100-40GB not in MIG mode.
ClusterState mixed_node() {
  MigClusterBuilder b;
  const auto n = b.add_node("n0", 64'000, Bytes{256} << 30);
  b.add_gpu(n, model("A100-SXM4-40GB"), {{9, 0}}, {true});
  b.add_plain_gpu(n, "A100-SXM4-40GB");
  return b.build().value();
}

}  // namespace

TEST_CASE("a MIG reservation changes ClusterState, and rollback restores it exactly") {
  ClusterState st = mixed_node();
  const ClusterState before = st;
  REQUIRE(st.mig().table().gpu_count() == 1);
  const MigGpuId g = st.mig().gpu(0, 0);
  REQUIRE(g == 0);
  CHECK(st.mig().gpu(0, 1) == kNoGpu);

  const auto mark = st.checkpoint();
  FragAwarePlacer packer(MigMode::kDynamic, MigDemand::uniform(cat()));
  // Slices 0..3 hold the busy 3g.20gb; a 1g.5gb (starts {0..6}) can only start at 4, 5 or 6.
  const MigDecision d = packer.decide(st, req("1g.5gb"));
  REQUIRE(d.placed());
  CHECK(d.verdict == Verdict::kPlaced);
  CHECK(d.action == MigAction::kCreate);
  CHECK(d.start >= 4);
  CHECK(d.start <= 6);
  REQUIRE(apply_decision(st, d).ok());
  CHECK(st.journal_size() == 1);
  CHECK(st.mig().table().instances(g).size() == 2);
  CHECK_FALSE(st.same_allocation_as(before));
  // The MIG GPU's free share stays 0 and the plain GPU is untouched.
  CHECK(st.shares().free_milli(0, 0) == 0);
  CHECK(st.shares().free_milli(0, 1) == kMilliPerGpu);

  // A second decision, then roll both back: the state equals the one before, class index included.
  const MigDecision d2 = packer.decide(st, req("2g.10gb"));
  REQUIRE(apply_decision(st, d2).ok());
  CHECK(st.mig().table().instances(g).size() == 3);
  st.rollback(mark);
  CHECK(st.journal_size() == 0);
  CHECK(st.same_allocation_as(before));
  CHECK(st.mig().table().layout(g) == before.mig().table().layout(g));
  CHECK(st.mig().table().live_classes().size() == before.mig().table().live_classes().size());

  // A reservation the state cannot honour is refused and changes nothing: the slices of the busy
  // 3g.20gb cannot take a new instance.
  MigTask bad = mig_task(st, d);
  bad.assignment.mig_start = 0;
  CHECK_FALSE(st.reserve(bad.request, bad.assignment).ok());
  CHECK(st.same_allocation_as(before));

  // Release gives back exactly what the reservation took: a created instance is destroyed.
  const MigTask task = mig_task(st, d);
  REQUIRE(st.reserve(task.request, task.assignment).ok());
  st.commit();
  REQUIRE(st.release(task.assignment).ok());
  CHECK(st.same_allocation_as(before));
  // Releasing twice is refused.
  CHECK_FALSE(st.release(task.assignment).ok());
}

TEST_CASE("property: after random MIG reservations and re-partitions the state equals one built from scratch") {
  for (std::uint64_t trial = 0; trial < 30; ++trial) {
    SplitMix64 rng(trial * 104729 + 3);
    MigClusterBuilder b;
    for (int n = 0; n < 4; ++n) {
      const auto node = b.add_node("n" + std::to_string(n));
      for (int g = 0; g < 3; ++g) b.add_gpu(node, model(rng.below(2) ? "A100-SXM4-40GB" : "A30-24GB"));
    }
    ClusterState st = b.build().value();
    const char* names[] = {"1g.5gb", "2g.10gb", "3g.20gb", "1g.6gb", "2g.12gb", "7g.40gb"};
    FragAwarePlacer packer(MigMode::kDynamic, MigDemand::uniform(cat()));
    for (int step = 0; step < 30; ++step) {
      const MigDecision d = packer.decide(st, req(names[rng.below(std::size(names))]));
      if (d.placed()) REQUIRE(apply_decision(st, d).ok());
      if (rng.below(8) == 0) {
        // A re-partition applied (a cluster event, not journaled): a plan for a little random demand.
        std::vector<MigDemandItem> demand;
        for (const char* nm : names) demand.push_back({nm, req(nm), static_cast<std::int64_t>(rng.below(2))});
        REQUIRE(apply_plan(st, plan_repartition(st, demand)).ok());
        st.commit();  // the plan replaced layouts under journaled reservations: no rollback across it
      }
    }
    // The reserved state equals one built from its own view (the instances written back as busy).
    MigClusterBuilder again;
    for (int n = 0; n < 4; ++n) again.add_node("n" + std::to_string(n));
    for (MigGpuId g = 0; g < st.mig().table().gpu_count(); ++g) {
      const auto flags = st.mig().table().busy_flags(g);
      bool busy[kMaxInstances] = {};
      for (std::size_t i = 0; i < flags.size(); ++i) busy[i] = flags[i];
      again.add_gpu(st.mig().table().node_of(g), st.mig().table().model_of(g), st.mig().table().layout(g),
                    std::span<const bool>(busy, flags.size()));
    }
    const ClusterState rebuilt = again.build().value();
    CHECK(rebuilt.same_allocation_as(st));
    // Same answers from the packer on both.
    for (const char* nm : names) {
      const MigDecision x = packer.decide(st, req(nm)), y = packer.decide(rebuilt, req(nm));
      CHECK(x.gpu == y.gpu);
      CHECK(x.start == y.start);
      CHECK(x.verdict == y.verdict);
    }
  }
}

TEST_CASE("property: any sequence of MIG reservations rolls back to the exact prior state") {
  for (std::uint64_t trial = 0; trial < 30; ++trial) {
    SplitMix64 rng(trial * 7 + 1);
    MigClusterBuilder b;
    const auto node = b.add_node("n");
    for (int g = 0; g < 6; ++g) b.add_gpu(node, model("H100-80GB"), {{9, 0}}, {rng.below(2) == 0});
    ClusterState st = b.build().value();
    const ClusterState fresh = st;
    FirstFitPlacer ff(rng.below(2) ? MigMode::kDynamic : MigMode::kStatic);
    const char* names[] = {"1g.10gb", "2g.20gb", "3g.40gb", "1g.20gb"};
    const auto mark = st.checkpoint();
    for (int step = 0; step < 25; ++step) {
      const MigDecision d = ff.decide(st, req(names[rng.below(std::size(names))]));
      if (d.placed()) REQUIRE(apply_decision(st, d).ok());
    }
    st.rollback(mark);
    CHECK(st.same_allocation_as(fresh));
  }
}

TEST_CASE("a GPU in MIG mode is not given to whole-GPU or shared tasks") {
  ClusterState st = mixed_node();
  // Only GPU 1 is idle for whole-GPU placement: the MIG GPU reads free share 0.
  CHECK(st.shares().idle_gpus(0) == 1);
  CHECK(st.shares().node_free_milli(0) == kMilliPerGpu);
  TaskShape two;
  two.gpus = 2;
  two.gpu_milli = kMilliPerGpu;
  const TaskRequest two_gpus = st.compile(two).value();
  CHECK(st.check_fit(0, two_gpus) == FitReason::kInsufficientGpus);
  TaskShape one = two;
  one.gpus = 1;
  const TaskRequest one_gpu = st.compile(one).value();
  REQUIRE(st.check_fit(0, one_gpu) == FitReason::kFits);
  TaskAssignment a;
  REQUIRE(LowestIndexGpuPicker{}.pick(st, 0, one_gpu, a));
  CHECK(a.gpus == std::vector<GpuIndex>{1});
  // Explicitly asking for the MIG GPU is refused.
  a.gpus = {0};
  CHECK_FALSE(st.reserve(one_gpu, a).ok());
  // A shared task (half a GPU) also lands on GPU 1 only.
  TaskShape half = one;
  half.gpu_milli = 500;
  const TaskRequest shared = st.compile(half).value();
  REQUIRE(LowestIndexGpuPicker{}.pick(st, 0, shared, a));
  CHECK(a.gpus == std::vector<GpuIndex>{1});
}

TEST_CASE("a job with a MIG task group is placed through place_job on the one state") {
  ClusterState st = mixed_node();
  Job job;
  job.job_name = "inference";
  TaskGroupSpec server;
  server.name = "server";
  server.replicas = 2;
  server.shape.cpu = 4'000;
  server.shape.memory = Bytes{16} << 30;
  server.mig_profile = "1g.5gb";
  job.groups.push_back(server);
  TaskGroupSpec trainer;
  trainer.name = "trainer";
  trainer.shape.gpus = 1;
  trainer.shape.gpu_milli = kMilliPerGpu;
  job.groups.push_back(trainer);
  const CompiledJob compiled = compile_job(st, job).value();
  CHECK(compiled.groups[0].request.mig.any());
  CHECK_FALSE(compiled.groups[1].request.mig.any());
  const ClusterState before = st;
  const JobPlacement placed = place_job(st, compiled, FirstFitPolicy{});
  REQUIRE_MESSAGE(placed.placed(), describe(compiled, placed));
  // Slices 0..3 hold the busy 3g.20gb (3 compute slices of 7); 1g.5gb starts {0..6}: the node-level
  // pick creates the replicas at the lowest free starts, 4 and 5. The trainer takes GPU 1, the
  // only GPU not in MIG mode.
  REQUIRE(placed.tasks.size() == 3);
  CHECK(placed.tasks[0].assignment.is_mig());
  CHECK(placed.tasks[0].assignment.mig_start == 4);
  CHECK(placed.tasks[1].assignment.mig_start == 5);
  CHECK(placed.tasks[2].assignment.gpus == std::vector<GpuIndex>{1});
  CHECK(st.mig().table().instances(0).size() == 3);
  CHECK(st.cpu_free(0) == 64'000 - 2 * 4'000);

  // Two 2g.10gb (starts {0,2,4}) need slices 4..5 and another even start: only 4 is free of the
  // 3g.20gb, and it is now taken, so nothing fits; all or nothing leaves the state as it was.
  ClusterState fresh = before;
  Job two;
  two.job_name = "two";
  TaskGroupSpec g2 = server;
  g2.mig_profile = "2g.10gb";
  two.groups.push_back(g2);
  const CompiledJob c2 = compile_job(fresh, two).value();
  const JobPlacement refused = place_job(fresh, c2, FirstFitPolicy{});
  CHECK_FALSE(refused.placed());
  CHECK(refused.verdict == Verdict::kNotNow);
  CHECK(refused.diagnosis.count[static_cast<std::size_t>(FitReason::kNoMigPlacement)] == 1);
  CHECK(fresh.same_allocation_as(before));

  // A MIG profile together with whole GPUs is a spec error naming the field.
  Job both;
  both.job_name = "both";
  TaskGroupSpec bad = server;
  bad.shape.gpus = 1;
  bad.shape.gpu_milli = kMilliPerGpu;
  both.groups.push_back(bad);
  const auto err = compile_job(st, both);
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().message.find("mig_profile") != std::string::npos);
}

TEST_CASE("cluster JSON: MIG fields round trip; unknown fields and bad layouts are rejected") {
  const char* text = R"({"nodes": [{"name": "n0", "cpu": 8, "memory": "64Gi", "gpus": [
      {"model": "A100-SXM4-40GB", "mig": {"instances": [
        {"profile": "3g.20gb", "start": 0, "busy": true},
        {"profile_id": 19, "start": 4}]}},
      {"model": "A100-SXM4-40GB"}]}]})";
  auto doc = io::read_cluster_json(text).value();
  const ClusterState st = ClusterState::build(doc.cluster, doc.registry).value();
  REQUIRE(st.mig().table().gpu_count() == 1);
  CHECK(st.mig().table().layout(0) == std::vector<MigInstance>{{9, 0}, {19, 4}});
  CHECK(st.mig().table().busy_flags(0) == std::vector<bool>{true, false});
  CHECK(st.shares().free_milli(0, 0) == 0);
  CHECK(st.shares().idle_gpus(0) == 1);

  // Written back and read again: the same MIG state.
  auto j = nlohmann::json::parse(text);
  j["nodes"][0]["gpus"][0]["mig"] = nlohmann::json::parse(io::write_mig_json(st, 0, 0));
  CHECK(io::write_mig_json(st, 0, 1) == "null");
  CHECK(io::detail::mig_to_json(st, 0, 1).is_null());
  auto doc2 = io::read_cluster_json(j.dump()).value();
  const ClusterState st2 = ClusterState::build(doc2.cluster, doc2.registry).value();
  CHECK(st2.same_allocation_as(st));

  // A typo must not silently drop a busy instance (the legacy MIG reader ignored unknown fields).
  auto typo = nlohmann::json::parse(text);
  typo["nodes"][0]["gpus"][0]["mig"]["instances"][0]["bussy"] = true;
  auto e1 = io::read_cluster_json(typo.dump());
  REQUIRE_FALSE(e1.ok());
  CHECK(e1.error().message.find("nodes[0].gpus[0].mig.instances[0].bussy: unknown field") != std::string::npos);
  auto typo2 = nlohmann::json::parse(text);
  typo2["nodes"][0]["gpus"][0]["mig"]["instance"] = nlohmann::json::array();
  auto e2 = io::read_cluster_json(typo2.dump());
  REQUIRE_FALSE(e2.ok());
  CHECK(e2.error().message.find("nodes[0].gpus[0].mig.instance: unknown field") != std::string::npos);
  // MIG on a model without MIG, and an overlapping layout, name the GPU.
  auto v100 = nlohmann::json::parse(text);
  v100["nodes"][0]["gpus"][1]["model"] = "V100-SXM2-32GB";
  v100["nodes"][0]["gpus"][1]["mig"] = nlohmann::json::object();
  auto e3 = io::read_cluster_json(v100.dump());
  REQUIRE_FALSE(e3.ok());
  CHECK(e3.error().message.find("nodes[0].gpus[1].mig") != std::string::npos);
  auto overlap = nlohmann::json::parse(text);
  overlap["nodes"][0]["gpus"][0]["mig"]["instances"][1]["start"] = 2;
  auto doc4 = io::read_cluster_json(overlap.dump()).value();
  auto e4 = ClusterState::build(doc4.cluster, doc4.registry);
  REQUIRE_FALSE(e4.ok());
  CHECK(e4.error().message.find("nodes[0] (n0).gpus[0].mig.instances[1]") != std::string::npos);
  CHECK(e4.error().field == "nodes[0] (n0).gpus[0].mig");
}

TEST_CASE("MIG GPUs of a cordoned or failed node, or unhealthy ones, take no MIG work") {
  MigClusterBuilder b;
  const auto n0 = b.add_node("cordoned");
  b.add_gpu(n0, model("A100-SXM4-40GB"));
  const auto n1 = b.add_node("ok");
  b.add_gpu(n1, model("A100-SXM4-40GB"), {{0, 0}}, {true});
  b.cluster().nodes()[0].schedulable = false;
  ClusterState st = b.build().value();
  CHECK_FALSE(st.mig().table().available(0));
  CHECK(st.mig().table().available(1));
  const MigDecision d = FirstFitPlacer(MigMode::kDynamic).decide(st, req("1g.5gb"));
  CHECK_FALSE(d.placed());
  CHECK(d.verdict == Verdict::kNotNow);  // the cordoned GPU could serve it once uncordoned
  CHECK(explain(st, req("1g.5gb"), d) ==
        "0/2 GPUs can take 1g.5gb: 1 no free placement (slices taken or limits reached), 1 on nodes that take no "
        "work or unhealthy");
}

TEST_CASE("cluster events keep the MIG index in place; MIG changes advance the generations") {
  MigClusterBuilder b;
  const auto n0 = b.add_node("a");
  b.add_gpu(n0, model("A100-SXM4-40GB"));
  const auto n1 = b.add_node("b");
  b.add_gpu(n1, model("A100-SXM4-40GB"), {{0, 0}}, {true});  // full: a busy 7g.40gb
  ClusterState st = b.build().value();
  FirstFitPlacer ff(MigMode::kDynamic);
  const MigRequest one = req("1g.5gb");
  REQUIRE(ff.decide(st, one).gpu == 0);

  // Cordon, fail and GPU health park node a's MIG GPU; undoing them brings it back.
  REQUIRE(st.cordon(0).ok());
  CHECK_FALSE(ff.decide(st, one).placed());
  CHECK(ff.decide(st, one).verdict == Verdict::kNotNow);
  REQUIRE(st.uncordon(0).ok());
  CHECK(ff.decide(st, one).gpu == 0);
  REQUIRE(st.fail_node(0).ok());
  CHECK_FALSE(ff.decide(st, one).placed());
  REQUIRE(st.recover_node(0).ok());
  REQUIRE(st.set_gpu_health(0, 0, false).ok());
  CHECK_FALSE(ff.decide(st, one).placed());
  REQUIRE(st.set_gpu_health(0, 0, true).ok());
  CHECK(st.shares().free_milli(0, 0) == 0);  // recovered, still in MIG mode: no share for whole-GPU tasks
  CHECK(ff.decide(st, one).gpu == 0);

  // A MIG reservation and an applied re-partition each advance the generation; the layout event
  // also advances the layout generation (an allocation does not).
  const auto gen = st.generation();
  const auto layout_gen = st.layout_generation();
  REQUIRE(apply_decision(st, ff.decide(st, one)).ok());
  CHECK(st.generation() > gen);
  CHECK(st.layout_generation() == layout_gen);
  const std::vector<MigInstance> halves = {{9, 0}, {9, 4}};
  const bool busy[] = {false, false};
  // The layout event replaces the layout as the operator applied it, busy flags included.
  REQUIRE(st.apply_mig_layout(0, 0, halves, busy).ok());
  CHECK(st.layout_generation() > layout_gen);
  CHECK(st.mig().table().layout(0) == halves);
  // A 2g.10gb at 2 would share slices 2..3 with the 3g.20gb at 0..3: refused, nothing changes.
  CHECK(st.apply_mig_layout(0, 0, std::vector<MigInstance>{{9, 0}, {14, 2}}, busy).error().message.find("overlaps") !=
        std::string::npos);
  CHECK(st.mig().table().layout(0) == halves);
  CHECK_FALSE(st.apply_mig_layout(0, 1, halves, busy).ok());  // node a has one GPU

  // A node added by event with a MIG GPU joins the index; removing it parks its GPU for good.
  MigClusterBuilder more;
  const auto n2 = more.add_node("c");
  more.add_gpu(n2, model("A30-24GB"));
  const auto added = st.add_node(more.cluster(), 0);
  REQUIRE(added.ok());
  CHECK(st.mig().table().gpu_count() == 3);
  CHECK(ff.decide(st, req("1g.6gb")).gpu == 2);
  REQUIRE(st.remove_node(*added).ok());
  CHECK_FALSE(ff.decide(st, req("1g.6gb")).placed());
  // The only A30 left the cluster: no GPU can ever serve a 1g.6gb now.
  CHECK(ff.decide(st, req("1g.6gb")).verdict == Verdict::kInfeasible);
}

TEST_CASE("MIG mode on and off is an event on an idle GPU; the state then equals one built with that mode") {
  ClusterState st = mixed_node();  // GPU 0: MIG with a busy 3g.20gb; GPU 1: whole, idle
  FirstFitPlacer ff(MigMode::kDynamic);
  TaskShape whole;
  whole.gpus = 1;
  whole.gpu_milli = kMilliPerGpu;
  const TaskRequest one_gpu = st.compile(whole).value();

  // GPU 1 into MIG mode: it leaves whole-GPU placement and takes MIG work, with no instances yet.
  const auto layout_gen = st.layout_generation();
  REQUIRE(st.set_mig_mode(0, 1, true).ok());
  CHECK(st.layout_generation() > layout_gen);
  const MigGpuId g1 = st.mig().gpu(0, 1);
  REQUIRE(g1 != kNoGpu);
  CHECK(st.mig().table().instances(g1).empty());
  CHECK(st.shares().idle_gpus(0) == 0);
  CHECK(st.shares().node_free_milli(0) == 0);
  CHECK(st.shares().total_free() == 0);
  CHECK(st.check_fit(0, one_gpu) == FitReason::kInsufficientGpus);
  const MigDecision seven = ff.decide(st, req("7g.40gb"));
  REQUIRE(seven.placed());
  CHECK(seven.gpu == g1);
  CHECK(st.set_mig_mode(0, 1, true).ok());  // repeated: no change
  CHECK(st.mig().gpu(0, 1) == g1);

  // Off needs every instance idle: the busy 3g.20gb of GPU 0 refuses it, naming the instance.
  const Status busy = st.set_mig_mode(0, 0, false);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error().code == ErrorCode::kState);
  CHECK(busy.error().message == "set_mig_mode on n0 GPU 0: instance at start 0 is busy; MIG mode changes on an idle GPU only");
  CHECK(st.mig().gpu(0, 0) != kNoGpu);

  // GPU 1 back to whole with an idle instance on it: the instance is dropped, the GPU is idle again.
  REQUIRE(apply_decision(st, seven).ok());
  REQUIRE(st.release(mig_task(st, seven).assignment).ok());
  st.commit();
  REQUIRE(st.set_mig_mode(0, 1, false).ok());
  CHECK(st.mig().gpu(0, 1) == kNoGpu);
  CHECK(st.shares().idle_gpus(0) == 1);
  CHECK(st.check_fit(0, one_gpu) == FitReason::kFits);
  CHECK_FALSE(ff.decide(st, req("7g.40gb")).placed());  // only GPU 0 is MIG, and it is partly busy

  // On again with a whole-GPU task on it: refused with what holds it; a new MIG id once idle.
  TaskAssignment a;
  REQUIRE(LowestIndexGpuPicker{}.pick(st, 0, one_gpu, a));
  REQUIRE(st.reserve(one_gpu, a).ok());
  const Status in_use = st.set_mig_mode(0, 1, true);
  REQUIRE_FALSE(in_use.ok());
  CHECK(in_use.error().message == "set_mig_mode on n0 GPU 1: the GPU is in use (1000 milli-GPU held); MIG mode changes on an idle GPU only");
  REQUIRE(st.release(a).ok());
  st.commit();
  REQUIRE(st.set_mig_mode(0, 1, true).ok());
  CHECK(st.mig().gpu(0, 1) != g1);

  // The evolved state answers like one built with GPU 1 in MIG mode from the start (its MIG ids
  // differ: GPU 1 had one before, kept retired, so same_allocation_as does not apply).
  MigClusterBuilder b;
  const auto n = b.add_node("n0", 64'000, Bytes{256} << 30);
  b.add_gpu(n, model("A100-SXM4-40GB"), {{9, 0}}, {true});
  b.add_gpu(n, model("A100-SXM4-40GB"));
  const ClusterState built = b.build().value();
  CHECK(built.shares().total_free() == st.shares().total_free());
  CHECK(built.shares().total_capacity() == st.shares().total_capacity());
  CHECK(built.shares().eligible_totals() == st.shares().eligible_totals());
  CHECK(built.shares().idle_gpus(0) == st.shares().idle_gpus(0));
  for (GpuIndex g = 0; g < 2; ++g) {
    CHECK(built.shares().free_milli(0, g) == st.shares().free_milli(0, g));
    CHECK(built.shares().free_memory(0, g) == st.shares().free_memory(0, g));
    CHECK(built.mig().table().layout(built.mig().gpu(0, g)) == st.mig().table().layout(st.mig().gpu(0, g)));
    CHECK(built.mig().table().busy_flags(built.mig().gpu(0, g)) == st.mig().table().busy_flags(st.mig().gpu(0, g)));
  }
  for (const char* name : {"1g.5gb", "3g.20gb", "4g.20gb", "7g.40gb"}) {
    const MigDecision x = ff.decide(built, req(name)), y = ff.decide(st, req(name));
    REQUIRE(x.placed() == y.placed());
    if (x.placed()) {
      CHECK(built.mig().table().local_index(x.gpu) == st.mig().table().local_index(y.gpu));
      CHECK(x.start == y.start);
    }
  }

  // Bad input: no such GPU, a model without a MIG table, a removed node.
  CHECK(st.set_mig_mode(0, 5, true).error().field == "gpu");
  MigClusterBuilder t4;
  const auto tn = t4.add_node("t");
  t4.add_plain_gpu(tn, "T4");
  ClusterState plain = t4.build().value();
  CHECK(plain.set_mig_mode(0, 0, true).error().message ==
        "set_mig_mode on t GPU 0: GPU model T4 has no MIG profile table (not MIG-capable)");
  CHECK(plain.mig().table().gpu_count() == 0);
}

namespace {

// Node "k" of Kubernetes' mixed MIG strategy: GPU 0 holds two 3g.20gb devices (slices 0 and 4), one
// busy; GPU 1 two idle 1g.5gb (slices 0 and 1). The layout is fixed: the MIG manager made it.
const char* const kFixedMixed = R"({"nodes": [{"name": "k", "cpu": 64, "memory": "256Gi", "gpus": [
    {"model": "A100-SXM4-40GB", "mig": {"fixed": true, "instances": [
      {"profile": "3g.20gb", "start": 0, "busy": true}, {"profile": "3g.20gb", "start": 4}]}},
    {"model": "A100-SXM4-40GB", "mig": {"fixed": true, "instances": [
      {"profile": "1g.5gb", "start": 0}, {"profile": "1g.5gb", "start": 1}]}}]}]})";

ClusterState fixed_mixed() {
  auto doc = io::read_cluster_json(kFixedMixed).value();
  return ClusterState::build(doc.cluster, doc.registry).value();
}

CompiledJob mig_job(const ClusterState& st, std::string_view profile, std::int32_t replicas) {
  Job job;
  job.job_name = std::string("want-") + std::string(profile);
  TaskGroupSpec g;
  g.name = "g";
  g.replicas = replicas;
  g.shape.cpu = 1'000;
  g.mig_profile = std::string(profile);
  job.groups.push_back(g);
  return compile_job(st, job).value();
}

}  // namespace

TEST_CASE("a fixed MIG layout (Kubernetes): placements take idle instances and never create one") {
  ClusterState st = fixed_mixed();
  REQUIRE(st.mig().layout_fixed(0, 0));
  REQUIRE(st.mig().layout_fixed(0, 1));
  const ClusterState before = st;

  // Two 1g.5gb take the two idle devices of GPU 1; a third waits, though GPU 1 has 5 free slices.
  const JobPlacement two = place_job(st, mig_job(st, "1g.5gb", 2), FirstFitPolicy{});
  REQUIRE(two.placed());
  for (const TaskPlacement& t : two.tasks) {
    CHECK(t.assignment.gpus == std::vector<GpuIndex>{1});
    CHECK_FALSE(t.assignment.mig_create);
  }
  st.commit();
  const CompiledJob third = mig_job(st, "1g.5gb", 1);
  const JobPlacement waits = place_job(st, third, FirstFitPolicy{});
  CHECK(waits.verdict == Verdict::kNotNow);
  CHECK(waits.diagnosis.count[static_cast<std::size_t>(FitReason::kNoIdleMigInstance)] == 1);
  CHECK(describe(third, waits).find("no idle MIG instance") != std::string::npos);

  // The idle 3g.20gb at slice 4 serves a 3g.20gb; a 2g.10gb (no device of that profile) waits.
  CHECK(place_job(st, mig_job(st, "3g.20gb", 1), FirstFitPolicy{}).placed());
  st.rollback(st.checkpoint());
  CHECK(place_job(st, mig_job(st, "2g.10gb", 1), FirstFitPolicy{}).verdict == Verdict::kNotNow);

  // A creating assignment is refused by the state itself, naming the rule.
  TaskAssignment create = two.tasks[0].assignment;  // a 1g.5gb on GPU 1, now created at slice 4
  create.mig_start = 4;
  create.mig_create = true;
  const Status refused = st.reserve(third.groups[0].request, create);
  REQUIRE_FALSE(refused.ok());
  CHECK_MESSAGE(refused.error().message.find("fixed MIG layout") != std::string::npos, refused.error().message);

  // The MIG family's placers honour it too: frag-aware (dynamic) and first-fit create nothing.
  FragAwarePlacer frag(MigMode::kDynamic, MigDemand::uniform(cat()));
  FirstFitPlacer first(MigMode::kDynamic);
  for (const MigPlacer* placer : {static_cast<const MigPlacer*>(&frag), static_cast<const MigPlacer*>(&first)}) {
    const MigDecision d = placer->decide(st, req("1g.5gb"));
    CHECK_FALSE(d.placed());
    CHECK(d.verdict == Verdict::kNotNow);
  }

  // A gang of three 3g.20gb waits for a re-partition (two such devices exist; the two A100s could
  // hold four): "not now", as what could ever fit counts what a re-partition makes. Five never fit.
  auto spec = make_gang_spec(mig_job(st, "3g.20gb", 3)).value();
  CHECK(place_gang(st, spec).verdict == Verdict::kNotNow);
  auto five = make_gang_spec(mig_job(st, "3g.20gb", 5)).value();
  CHECK(place_gang(st, five).verdict == Verdict::kInfeasible);

  // A re-partition is the cluster event that changes a fixed layout: then the 2g.10gb fits.
  ClusterState repartitioned = before;
  const std::vector<MigInstance> one_2g{{14, 0}};
  const bool idle[] = {false};
  REQUIRE(repartitioned.apply_mig_layout(0, 1, one_2g, idle).ok());
  CHECK(repartitioned.mig().layout_fixed(0, 1));
  CHECK(place_job(repartitioned, mig_job(repartitioned, "2g.10gb", 1), FirstFitPolicy{}).placed());

  // The cluster format carries the flag both ways.
  CHECK(nlohmann::json::parse(io::write_mig_json(before, 0, 1)).value("fixed", false));
  auto j = nlohmann::json::parse(kFixedMixed);
  j["nodes"][0]["gpus"][1]["mig"].erase("fixed");
  auto doc = io::read_cluster_json(j.dump()).value();
  CHECK_FALSE(ClusterState::build(doc.cluster, doc.registry).value().mig().layout_fixed(0, 1));
  j["nodes"][0]["gpus"][1]["mig"]["fixed"] = "yes";
  CHECK_FALSE(io::read_cluster_json(j.dump()).ok());
}

TEST_CASE("property: on fixed MIG layouts no placement path changes the instances") {
  SplitMix64 rng(20261204);
  const auto& spec = cat().spec(model("A100-SXM4-40GB"));
  const char* const profiles[] = {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.10gb"};
  for (int round = 0; round < 60; ++round) {
    // A random valid layout per GPU: instances added at random starts while they fit.
    nlohmann::json gpus = nlohmann::json::array();
    for (int g = 0; g < 3; ++g) {
      Occupancy occ{};
      nlohmann::json inst = nlohmann::json::array();
      for (int tries = 0; tries < 6; ++tries) {
        const int p = static_cast<int>(rng.uniform(0, static_cast<std::int64_t>(spec.profiles.size()) - 1));
        const int s = static_cast<int>(rng.uniform(0, kMaxSlots - 1));
        if (!can_add(spec, occ, p, s, LayoutRules{})) continue;
        add_instance(spec, occ, p, s);
        inst.push_back({{"profile_id", spec.profiles[static_cast<std::size_t>(p)].id}, {"start", s}, {"busy", rng.uniform(0, 2) == 0}});
      }
      gpus.push_back({{"model", "A100-SXM4-40GB"}, {"mig", {{"fixed", true}, {"instances", inst}}}});
    }
    const nlohmann::json doc_json = {{"nodes", {{{"name", "n"}, {"cpu", 64}, {"memory", "64Gi"}, {"gpus", gpus}}}}};
    auto doc = io::read_cluster_json(doc_json.dump()).value();
    ClusterState st = ClusterState::build(doc.cluster, doc.registry).value();
    std::vector<std::vector<MigInstance>> layouts;
    for (MigGpuId g = 0; g < st.mig().table().gpu_count(); ++g) layouts.push_back(st.mig().table().layout(g));
    FragAwarePlacer frag(MigMode::kDynamic, MigDemand::uniform(cat()));
    for (int k = 0; k < 8; ++k) {
      const char* profile = profiles[rng.uniform(0, 5)];
      if (rng.uniform(0, 1) == 0) {
        const JobPlacement p = place_job(st, mig_job(st, profile, 1), FirstFitPolicy{});
        if (p.placed()) st.commit();
      } else {
        const MigDecision d = frag.decide(st, req(profile));
        if (d.placed()) REQUIRE(apply_decision(st, d).ok());
      }
      for (MigGpuId g = 0; g < st.mig().table().gpu_count(); ++g) REQUIRE(st.mig().table().layout(g) == layouts[g]);
    }
  }
}

namespace {

// A job of `replicas` tasks of one MIG profile, 1 CPU each.
Job mig_job(std::string name, const char* profile, std::int32_t replicas = 1) {
  Job job;
  job.job_name = std::move(name);
  TaskGroupSpec g;
  g.name = "server";
  g.replicas = replicas;
  g.shape.cpu = 1'000;
  g.mig_profile = profile;
  job.groups.push_back(g);
  return job;
}

ClusterState empty_a100_node() {
  MigClusterBuilder b;
  const auto n = b.add_node("n0", 64'000, Bytes{256} << 30);
  b.add_gpu(n, model("A100-SXM4-40GB"));
  return b.build().value();
}

}  // namespace

TEST_CASE("the frag-aware MIG choice is an option of place_job, place_gang and the cycle (first fit without it)") {
  // An empty A100: first fit creates a 1g.5gb at slice 0, which rules out the 4g.20gb; the
  // frag-aware rule creates it at 6 (packer_test: "a 1g.5gb on an empty A100 goes to slice 6").
  const FragAwareMigPicker picker(MigDemand::uniform(cat()));
  {
    ClusterState st = empty_a100_node();
    const CompiledJob job = compile_job(st, mig_job("a", "1g.5gb")).value();
    CHECK(place_job(st, job, FirstFitPolicy{}).tasks.at(0).assignment.mig_start == 0);
    ClusterState st2 = empty_a100_node();
    JobPlacementOptions o;
    o.mig_picker = &picker;
    const JobPlacement p = place_job(st2, job, FirstFitPolicy{}, o);
    REQUIRE(p.placed());
    CHECK(p.tasks[0].assignment.mig_start == 6);
    CHECK(p.tasks[0].assignment.mig_create);
    CHECK(st2.mig().table().instances(0).size() == 1);
  }
  {
    ClusterState st = empty_a100_node();
    const GangSpec spec = make_gang_spec(compile_job(st, mig_job("g", "1g.5gb")).value()).value();
    GangOptions o;
    o.mig_picker = &picker;
    const GangResult r = place_gang(st, spec, o);
    REQUIRE(r.placed());
    CHECK(r.tasks.at(0).assignment.mig_start == 6);
  }
  {
    ClusterState st = empty_a100_node();
    scheduler::PendingJob p;
    p.job = compile_job(st, mig_job("c", "1g.5gb")).value();
    scheduler::CycleOptions o;
    o.placement.mig_picker = &picker;
    const auto d = scheduler::run_cycle(st, {}, std::span<const scheduler::PendingJob>(&p, 1), {}, 0, o).value();
    REQUIRE(d.starts.size() == 1);
    CHECK(d.starts[0].tasks.at(0).assignment.mig_start == 6);
    ClusterState ff = empty_a100_node();
    const auto plain = scheduler::run_cycle(ff, {}, std::span<const scheduler::PendingJob>(&p, 1), {}, 0).value();
    CHECK(plain.starts.at(0).tasks.at(0).assignment.mig_start == 0);
  }
}

TEST_CASE("property: on a one-node cluster the MIG picker chooses what FragAwarePlacer chooses") {
  SplitMix64 rng(2026);
  const char* const profiles[] = {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.6gb", "2g.12gb"};
  const MigDemand demand = MigDemand::uniform(cat());
  const FragAwareMigPicker picker(demand);
  const FragAwarePlacer placer(MigMode::kDynamic, demand);
  int placed = 0, compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    MigClusterBuilder b;
    const auto n = b.add_node("n0", 64'000, Bytes{256} << 30);
    for (int g = 0; g < 4; ++g) {
      const MigModelId m = model(rng.below(3) == 0 ? "A30-24GB" : "A100-SXM4-40GB");
      // Random instances, busy or idle, placed where they fit.
      const MigGpuSpec& spec = cat().spec(m);
      Occupancy occ;
      std::vector<MigInstance> instances;
      std::vector<char> busy;
      for (int k = static_cast<int>(rng.below(4)); k > 0; --k) {
        const int p = static_cast<int>(rng.below(spec.profiles.size()));
        const SlotMask s = feasible_starts(spec, occ, p);
        if (!s) continue;
        const int start = std::countr_zero(static_cast<unsigned>(s));
        add_instance(spec, occ, p, start);
        instances.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(start)});
        busy.push_back(rng.below(2) == 0);
      }
      bool flags[kMaxInstances] = {};
      for (std::size_t i = 0; i < busy.size(); ++i) flags[i] = busy[i] != 0;
      b.add_gpu(n, m, instances, std::span<const bool>(flags, busy.size()));
    }
    const ClusterState st = b.build().value();
    const MigRequest request = req(profiles[rng.below(std::size(profiles))]);
    TaskRequest task;
    task.mig = request;
    TaskAssignment a;
    const bool ok = picker.pick(st, 0, task, a);
    const MigDecision d = placer.decide(st, request);
    CAPTURE(trial);
    REQUIRE(ok == d.placed());
    ++compared;
    if (!ok) continue;
    ++placed;
    CHECK(a.gpus == std::vector<GpuIndex>{st.mig().table().local_index(d.gpu)});
    CHECK(a.mig_start == d.start);
    CHECK(a.mig_profile == d.profile);
    CHECK(a.mig_create == (d.action == MigAction::kCreate));
  }
  CHECK(placed > 150);  // the comparison is not vacuous
  CHECK(compared == 300);
}
