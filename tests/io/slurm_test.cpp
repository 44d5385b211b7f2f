// The Slurm reader (gpusched/io/slurm.hpp) on captures of a real Slurm (tests/fixtures/slurm/, from
// Debian 12's slurm-wlm 22.05.8: SOURCE.txt), on the later schemas' forms written from the data_parser
// v0.0.40 documentation, and on broken input. The same plan as Slurm's on its own capture is the
// offline twin of the CI comparison against the live slurmctld (tests/slurm/run_slurm_backfill.sh).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/slurm.hpp"
#include "test_util.hpp"

using namespace gpusched;
using namespace gpusched::io;

namespace {

std::string slurm_fixture(const char* name) { return gpusched::testing::fixture_text(std::string("slurm/") + name); }

Result<slurm::Input> slurm_read(const std::string& nodes, const std::string& jobs, slurm::Options o = {}) {
  std::vector<slurm::Source> in = {{nodes, "sinfo.json"}};
  if (!jobs.empty()) in.push_back({jobs, "squeue.json"});
  return slurm::read(in, o);
}

bool slurm_has_label(const NodeSpec& n, const std::string& key) {
  return std::any_of(n.labels.begin(), n.labels.end(), [&](const auto& l) { return l.first == key && l.second == "true"; });
}

const char* kSlurmMeta38 = R"J("meta": {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}})J";
const char* kSlurmMeta40 = R"J("meta": {"plugin": {"type": "", "name": "", "data_parser": "data_parser/v0.0.40"}})J";

std::string slurm_doc(const char* meta, const std::string& key, const std::string& items) {
  std::string out = "{";  // appended, not `"{" + std::string(...)`: GCC 12 warns on that (-Wstringop-overflow)
  out.append(meta).append(", \"errors\": [], \"").append(key).append("\": [").append(items).append("]}");
  return out;
}

}  // namespace

TEST_CASE("a real sinfo/squeue capture: nodes, GPUs by index, running jobs, held jobs skipped or planned") {
  const std::string nodes = slurm_fixture("sinfo-8gpu.json"), jobs = slurm_fixture("squeue-held.json");
  auto in = slurm_read(nodes, jobs);
  REQUIRE_MESSAGE(in.ok(), in.error().message);
  CHECK(in->version == "v0.0.38");
  REQUIRE(in->cluster.nodes().size() == 1);
  const NodeSpec& n = in->cluster.nodes()[0];
  CHECK(n.name == "localhost");
  CHECK(n.cpu == 16000);
  CHECK(n.memory == 4096LL * 1024 * 1024);
  REQUIRE(n.gpus.size() == 8);
  CHECK(n.gpus[0].model == "A100-SXM4-40GB");  // GRES type "a100" is the registry's alias
  CHECK(slurm_has_label(n, "slurm.schedmd.com/feature.nvlink"));
  CHECK(slurm_has_label(n, "slurm.schedmd.com/partition.debug"));
  CHECK(n.schedulable);
  // Usage from squeue's two running jobs (gres_detail IDX 0-3 and 4-5), taken off the node.
  for (int g = 0; g < 8; ++g) CHECK(n.gpus[static_cast<std::size_t>(g)].used_milli == (g < 6 ? 1000 : 0));
  CHECK(n.cpu_used == 2000);
  REQUIRE(in->running.size() == 2);
  CHECK(in->running[0].id == "1");
  CHECK(in->running[0].end_time - in->running[0].start_time == 30 * 60);
  REQUIRE(in->running[0].tasks.size() == 1);
  CHECK(in->running[0].tasks[0].gpus == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(in->running[1].tasks[0].gpus == std::vector<std::int32_t>{4, 5});
  CHECK(in->running[0].priority > in->running[1].priority);  // ranked: 4,294,901,759 > 4,294,901,758
  CHECK(in->priority_ranked);
  // Held jobs: Slurm does not start them, so they are skipped with its reason...
  CHECK(in->jobs.empty());
  REQUIRE(in->skipped.size() == 4);
  CHECK(in->skipped[0].reason == "JobHeldUser");
  // ... or planned as if released, in submission order.
  slurm::Options plan;
  plan.held = slurm::Held::kPlan;
  auto p = slurm_read(nodes, jobs, plan);
  REQUIRE(p.ok());
  REQUIRE(p->jobs.size() == 4);
  CHECK(p->jobs[0].job_name == "3");
  CHECK(p->jobs[3].job_name == "6");
  CHECK(p->pending[0].time_limit == 3600);
  const TaskGroupSpec& big = p->jobs[0].groups[0];
  CHECK(big.shape.gpus == 8);
  CHECK(big.allowed_models.empty());  // --gres=gpu:8: any type
  const TaskGroupSpec& one = p->jobs[3].groups[0];
  CHECK(std::count(one.selector.begin(), one.selector.end(), std::pair<std::string, std::string>{"slurm.schedmd.com/feature.nvlink", "true"}) == 1);
  CHECK(std::count(one.selector.begin(), one.selector.end(), std::pair<std::string, std::string>{"slurm.schedmd.com/partition.debug", "true"}) == 1);
}

TEST_CASE("the conservative backfill on Slurm's own capture plans what Slurm planned") {
  // squeue-planned.json: the same jobs after release; Slurm started 5 and planned 3, 4 and 6.
  const std::string nodes = slurm_fixture("sinfo-8gpu.json"), jobs = slurm_fixture("squeue-planned.json");
  std::vector<slurm::Source> src = {{nodes, "sinfo.json"}, {jobs, "squeue.json"}};
  auto c = read_cycle_inputs_slurm(src);
  REQUIRE_MESSAGE(c.ok(), c.error().message);
  REQUIRE(c->inputs.running.size() == 3);
  REQUIRE(c->inputs.pending.size() == 3);
  scheduler::CycleOptions o;
  o.preempt = false;
  o.backfill.mode = scheduler::BackfillMode::kConservative;
  o.backfill.resolution = 60;
  const std::int64_t now = 1796394815;  // a second after the small job started
  auto d = run_cycle_on(*c->state, c->inputs, now, o);
  REQUIRE_MESSAGE(d.ok(), d.error().message);
  CHECK(d->starts.empty());
  std::map<std::string, std::int64_t> ours;
  for (const auto& r : d->reservations) ours[r.job] = r.start;
  for (const slurm::PendingInfo& p : c->slurm.pending) {
    INFO("job " << p.id);
    REQUIRE(ours.count(p.id) == 1);
    CHECK(p.slurm_start > 0);
    // Slurm's start times lie on its bf_resolution grid (60 s) where no running job's end sets them.
    CHECK(std::abs(ours[p.id] - p.slurm_start) <= 60);
    CHECK(ours[p.id] >= now);
  }
  // Where a running job's end sets the start, Slurm has that end exactly and gpusched the first point
  // of its bf_resolution grid (counted from now) at or after it.
  CHECK(ours["3"] - 1796396613 >= 0);  // r1's end
  CHECK(ours["3"] - 1796396613 < 60);
  CHECK(ours["6"] - 1796395114 >= 0);  // the small job's end
  CHECK(ours["6"] - 1796395114 < 60);
  // Job 4 waits for job 3's reservation (which holds the node while the later jobs are tried), and
  // says so with its time, not as an unschedulable node.
  const auto w = std::find_if(d->waiting.begin(), d->waiting.end(), [](const scheduler::Waiting& x) { return x.job == "4"; });
  REQUIRE(w != d->waiting.end());
  const std::string text = waiting_text(c->inputs, *w);
  CHECK(text.find(fmt::format("held for 3, which is reserved to start at t={})", ours["3"])) != std::string::npos);
  CHECK(text.find("node unschedulable") == std::string::npos);
}

TEST_CASE("a pending array is expanded into its tasks, in Slurm's priority order") {
  auto in = slurm_read(slurm_fixture("sinfo-array.json"), slurm_fixture("squeue-array.json"));
  REQUIRE_MESSAGE(in.ok(), in.error().message);
  std::vector<std::string> ids;
  for (const Job& j : in->jobs) ids.push_back(j.job_name);
  CHECK(ids == std::vector<std::string>{"3", "5_0", "5_1", "5_2", "5_3"});
  REQUIRE(in->skipped.size() == 1);
  CHECK(in->skipped[0].id == "4");
  CHECK(in->jobs[1].groups[0].shape.gpus == 1);
  CHECK(in->jobs[0].job_priority > in->jobs[1].job_priority);
}

TEST_CASE("the later schemas' forms: state lists, number objects, gres/ TRES, hostlists, multi-node jobs") {
  const std::string nodes = slurm_doc(kSlurmMeta40, "nodes", R"J(
    {"name": "gpu01", "cpus": 64, "real_memory": 512000, "gres": "gpu:h100:4(S:0-1)", "gres_used": "gpu:h100:0(IDX:N/A)",
     "state": ["IDLE"], "features": ["ib", "nvl"], "active_features": ["ib", "nvl"], "partitions": ["gpu"]},
    {"name": "gpu02", "cpus": 64, "real_memory": 512000, "gres": "gpu:h100:4", "state": ["MIXED", "DRAIN"], "partitions": ["gpu"]},
    {"name": "gpu03", "cpus": 64, "real_memory": 512000, "gres": "gpu:h100:4", "state": ["DOWN", "NOT_RESPONDING"], "partitions": ["gpu"]},
    {"name": "gpu04", "cpus": 64, "real_memory": 512000, "gres": "gpu:rtx_6000:2,shard:rtx_6000:8", "state": ["IDLE"], "partitions": ["gpu"]})J");
  const std::string jobs = slurm_doc(kSlurmMeta40, "jobs", R"J(
    {"job_id": 40, "name": "train", "job_state": ["RUNNING"], "priority": {"set": true, "infinite": false, "number": 1000},
     "start_time": {"set": true, "number": 1000}, "end_time": {"set": true, "number": 4600},
     "time_limit": {"set": true, "infinite": false, "number": 60}, "nodes": "gpu[01-02]", "cpus": 16,
     "gres_detail": ["gpu:h100:2(IDX:0-1)", "gpu:h100:4(IDX:0-3)"], "partition": "gpu", "account": "ml"},
    {"job_id": 41, "name": "wide", "job_state": ["PENDING"], "state_reason": "Resources", "priority": {"set": true, "number": 900},
     "time_limit": {"set": false, "infinite": true, "number": 0}, "node_count": {"set": true, "number": 2},
     "tres_per_node": "gres/gpu:h100=2", "cpus": 8, "partition": "gpu", "account": "ml", "features": "ib&nvl"},
    {"job_id": 42, "name": "after", "job_state": ["PENDING"], "state_reason": "Dependency", "priority": {"set": true, "number": 800},
     "tres_per_node": "gres/gpu=1", "partition": "gpu"},
    {"job_id": 43, "name": "either", "job_state": ["PENDING"], "state_reason": "Priority", "priority": {"set": true, "number": 700},
     "tres_per_job": "gres/gpu:3", "node_count": 2, "partition": "gpu,debug", "features": "a100|h100"},
    {"job_id": 44, "name": "done", "job_state": ["COMPLETED"]})J");
  auto in = slurm_read(nodes, jobs);
  REQUIRE_MESSAGE(in.ok(), in.error().message);
  CHECK(in->version == "v0.0.40");
  REQUIRE(in->cluster.nodes().size() == 4);
  const auto& ns = in->cluster.nodes();
  CHECK(ns[0].gpus.size() == 4);
  CHECK(ns[0].gpus[0].model == "H100-80GB");
  CHECK(ns[0].schedulable);
  CHECK(!ns[1].schedulable);
  CHECK(ns[1].healthy);  // drained: running jobs go on, nothing new starts
  CHECK(!ns[2].healthy);
  REQUIRE(ns[3].gpus.size() == 2);  // shards are not GPUs
  CHECK(ns[3].gpus[0].model == "rtx_6000");  // the site's type, as a model of its own
  // The running job holds two GPUs of gpu01 and four of gpu02 (hostlist order = gres_detail order).
  REQUIRE(in->running.size() == 1);
  REQUIRE(in->running[0].tasks.size() == 2);
  CHECK(in->running[0].tasks[0].node == "gpu01");
  CHECK(in->running[0].tasks[1].gpus.size() == 4);
  CHECK(in->running[0].tasks[0].cpu == 8000);
  CHECK(ns[0].gpus[1].used_milli == 1000);
  CHECK(ns[0].gpus[2].used_milli == 0);
  // Pending: 41 (two nodes of 2 H100s, on distinct nodes; unlimited), 43 (3 GPUs over 2 nodes); 42 waits
  // on a dependency (skipped); 44 ended.
  REQUIRE(in->jobs.size() == 2);
  const Job& wide = in->jobs[0];
  CHECK(wide.job_name == "41");
  CHECK(wide.queue_name == "ml");
  CHECK(wide.groups[0].replicas == 2);
  CHECK(wide.groups[0].shape.gpus == 2);
  CHECK(wide.groups[0].allowed_models == std::vector<std::string>{"H100-80GB"});
  CHECK(wide.groups[0].shape.cpu == 4000);
  REQUIRE(wide.job_anti_affinity.size() == 1);
  CHECK(wide.job_anti_affinity[0].level == "node");
  CHECK(in->pending[0].time_limit == -1);
  CHECK(in->jobs[1].groups[0].shape.gpus == 2);  // ceil(3 / 2), reported
  CHECK(!in->priority_ranked);
  CHECK(in->jobs[0].job_priority == 900);
  REQUIRE(in->skipped.size() == 1);
  CHECK(in->skipped[0].reason == "Dependency");
  // What is not modelled is reported by record and field.
  auto warned = [&](const std::string& text) {
    return std::any_of(in->warnings.begin(), in->warnings.end(), [&](const std::string& w) { return w.find(text) != std::string::npos; });
  };
  CHECK(warned("squeue.json: jobs[3] (job 43): tres_per_job: 3 GPUs over 2 nodes"));
  CHECK(warned("jobs[3] (job 43): partition: submitted to 2 partitions"));
  CHECK(warned("jobs[3] (job 43): features: the constraint \"a100|h100\" is not modelled"));
}

TEST_CASE("Slurm hostlists keep zero padding and expand every bracket") {
  const std::string nodes = slurm_doc(kSlurmMeta38, "nodes", R"J(
    {"name": "n08", "cpus": 8, "gres": "gpu:1", "state": "idle"}, {"name": "n09", "cpus": 8, "gres": "gpu:1", "state": "idle"},
    {"name": "n10", "cpus": 8, "gres": "gpu:1", "state": "idle"}, {"name": "r1n1", "cpus": 8, "gres": "gpu:1", "state": "idle"},
    {"name": "r2n1", "cpus": 8, "gres": "gpu:1", "state": "idle"})J");
  const std::string jobs = slurm_doc(kSlurmMeta38, "jobs", R"J(
    {"job_id": 1, "job_state": "RUNNING", "nodes": "n[08-10],r[1-2]n1", "cpus": 5, "time_limit": 10, "start_time": 100,
     "end_time": 700, "gres_detail": ["gpu:1(IDX:0)", "gpu:1(IDX:0)", "gpu:1(IDX:0)", "gpu:1(IDX:0)", "gpu:1(IDX:0)"]})J");
  auto in = slurm_read(nodes, jobs);
  REQUIRE_MESSAGE(in.ok(), in.error().message);
  REQUIRE(in->running.size() == 1);
  std::vector<std::string> names;
  for (const auto& t : in->running[0].tasks) names.push_back(t.node);
  CHECK(names == std::vector<std::string>{"n08", "n09", "n10", "r1n1", "r2n1"});
  CHECK(in->running[0].tasks[0].gpus == std::vector<std::int32_t>{0});
  CHECK(in->cluster.nodes()[0].gpus[0].model == "gpu");  // untyped GRES
  for (const NodeSpec& n : in->cluster.nodes()) CHECK(n.gpus[0].used_milli == 1000);
}

TEST_CASE("bad Slurm JSON is refused naming the source, the record, the field and the value") {
  auto error_of = [](const std::string& nodes, const std::string& jobs = {}) {
    INFO(nodes.substr(0, 200) << " | " << jobs.substr(0, 200));
    auto in = slurm_read(nodes, jobs);
    REQUIRE(!in.ok());
    return in.error();
  };
  const std::string node = R"J({"name": "a", "cpus": 8, "gres": "gpu:a100:2", "state": "idle"})J";
  const std::string good = slurm_doc(kSlurmMeta38, "nodes", node);
  Error e = error_of(R"J({"meta": {"plugin": {"type": "openapi/v0.0.36"}}, "nodes": []})J");
  CHECK(e.code == ErrorCode::kUnknownName);
  CHECK(e.message.find("sinfo.json: meta: meta.plugin: schema \"openapi/v0.0.36\" is not one this reader knows") != std::string::npos);
  e = error_of(R"J({"nodes": []})J");
  CHECK(e.message.find("meta") != std::string::npos);
  CHECK(e.code == ErrorCode::kMissingField);
  e = error_of(slurm_doc(kSlurmMeta38, "nodes", R"J({"name": "a", "cpus": 8, "gres": "gpu:a100:x(", "state": "idle"})J"));
  CHECK(e.message.find("sinfo.json: nodes[0] (node a): gres:") != std::string::npos);
  e = error_of(slurm_doc(kSlurmMeta38, "nodes", R"J({"name": "a", "cpus": -3, "state": "idle"})J"));
  CHECK(e.message.find("nodes[0] (node a): cpus: expected a non-negative integer, got -3") != std::string::npos);
  e = error_of(slurm_doc(kSlurmMeta38, "nodes", R"J({"name": "a", "cpus": 8, "state": "sleepy"})J"));
  CHECK(e.message.find("unknown node state \"SLEEPY\"") != std::string::npos);
  e = error_of(slurm_doc(kSlurmMeta38, "nodes", node + "," + node));
  CHECK(e.code == ErrorCode::kDuplicate);
  e = error_of(good, slurm_doc(kSlurmMeta38, "jobs", R"J({"job_id": 7, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:a100:1(IDX:5)"]})J"));
  CHECK(e.message.find("squeue.json: jobs[0] (job 7): gres_detail[0]:") != std::string::npos);
  e = error_of(good, slurm_doc(kSlurmMeta38, "jobs", R"J({"job_id": 7, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:a100:1(IDX:1)"]},
                                             {"job_id": 8, "job_state": "RUNNING", "nodes": "a", "gres_detail": ["gpu:a100:1(IDX:1)"]})J"));
  CHECK(e.code == ErrorCode::kInconsistent);
  CHECK(e.message.find("jobs[1] (job 8): gres_detail[0]: GPU 1 is held by another running job") != std::string::npos);
  e = error_of(good, slurm_doc(kSlurmMeta38, "jobs", R"J({"job_id": 7, "job_state": "PENDING", "state_reason": "Priority", "array_task_string": "0-99999999"})J"));
  CHECK(e.message.find("jobs[0] (job 7): array_task_string:") != std::string::npos);
  e = error_of(good, slurm_doc(kSlurmMeta38, "jobs", R"J({"job_id": 7, "job_state": "WAITING"})J"));
  CHECK(e.message.find("unknown job state \"WAITING\"") != std::string::npos);
  e = error_of(good, slurm_doc(kSlurmMeta38, "jobs", R"J({"job_id": 7, "job_state": "RUNNING", "nodes": "a[1-"})J"));
  CHECK(e.message.find("jobs[0] (job 7): nodes: \"a[1-\": not a Slurm hostlist") != std::string::npos);
  e = error_of(good, R"J({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [{"error": "Invalid user"}], "jobs": []})J");
  CHECK(e.message.find("Slurm reported an error: \"Invalid user\"") != std::string::npos);
  e = error_of(good, slurm_doc(kSlurmMeta40, "jobs", ""));
  CHECK(e.code == ErrorCode::kInconsistent);  // two schemas: dumps from two Slurms
  e = error_of(slurm_doc(kSlurmMeta38, "jobs", ""));
  CHECK(e.message.find("no nodes") != std::string::npos);
  // A long value is cut in the message, never echoed whole.
  e = error_of(slurm_doc(kSlurmMeta38, "nodes", R"J({"name": "a", "cpus": 8, "state": ")J" + std::string(100000, 'x') + "\"}"));
  CHECK(e.message.size() < 400);
}
