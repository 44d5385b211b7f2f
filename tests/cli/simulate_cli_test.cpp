// `gpusched simulate` and `gpusched merge`: shards merge into the unsharded report byte for byte, for
// every shard count; bad input is one message and exit status 2.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_util.hpp"
#include "test_util.hpp"

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::slurp;
using gpusched::cli_test::temp_file;

namespace {

const char* const kOutputs[] = {"simulate.json", "simulate.csv", "jct_cdf.svg", "utilisation.svg", "queue_length.svg"};

}  // namespace

TEST_CASE("simulate: shards 1, 2 and 3 merge into the unsharded report, byte for byte") {
  const std::string jobs = temp_file("sweep_jobs.csv",
                                     "name,submit,duration,gpus,tasks,queue\n"
                                     "a,0,3600,4,1,q0\nb,10,600,8,2,q1\nc,20,7200,1,1,q0\nd,30,1800,2,1,q1\n"
                                     "e,40,900,8,1,q0\nf,50,300,1,1,q1\ng,60,5000,4,2,q0\n");
  const auto dir = std::filesystem::path(jobs).parent_path();
  const std::string sweep = "--trace " + jobs + " --trace synthetic:60 --nodes 3 --policies fifo,easy,las+ckpt --seeds 1-2 --quiet";
  const auto ref = dir / "ref";
  REQUIRE(run_tool("simulate " + sweep + " --out " + ref.string()).status == 0);
  const std::string json = slurp(ref / "simulate.json");
  CHECK(json.find("\"holds\": true") != std::string::npos);
  CHECK(json.find("\"holds\": false") == std::string::npos);
  // The sanitized run (each run of the tool 20x slower) merges three shards only.
  const std::vector<int> shard_counts = gpusched::testing::sanitized ? std::vector<int>{3} : std::vector<int>{1, 2, 3};
  for (int n : shard_counts) {
    const auto out = dir / ("shards" + std::to_string(n));
    std::string files;
    for (int i = 0; i < n; ++i) {
      // Built by appending: GCC 12 warns falsely (-Wstringop-overflow) on long operator+ chains at -O3.
      std::string args = "simulate ";
      args += sweep;
      args += " --shard ";
      args += std::to_string(i);
      args += '/';
      args += std::to_string(n);
      args += " --out ";
      args += out.string();
      REQUIRE(run_tool(args).status == 0);
      std::string name = "shard-";
      name += std::to_string(i);
      name += "-of-";
      name += std::to_string(n);
      name += ".json";
      files += ' ';
      files += (out / name).string();
    }
    REQUIRE(run_tool("merge --quiet --out " + out.string() + files).status == 0);
    for (const char* f : kOutputs) {
      INFO(n << " shards: " << f);
      CHECK(slurp(out / f) == slurp(ref / f));
    }
    if (n == 3) {
      // A missing shard is an error naming the missing run.
      const auto r = run_tool("merge --out " + (dir / "partial").string() + " " +
                                  (out / "shard-0-of-3.json").string(),
                              true);
      CHECK(r.status == 2);
      CHECK(r.out.find("run 1 missing") != std::string::npos);
    }
  }
}

TEST_CASE("simulate: bad input is one message naming it, exit status 2") {
  const std::string bad = temp_file("bad_jobs.csv", "name,submit,duration,gpus\nx,0,60,1\ny,5,-3,1\n");
  auto r = run_tool("simulate --quiet --trace " + bad, true);
  CHECK(r.status == 2);
  CHECK(r.out.find("bad_jobs.csv:3: column 3 (duration): expected a positive integer (seconds), got \"-3\"") !=
        std::string::npos);
  r = run_tool("simulate --quiet --trace itp:99", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("itp:01 .. itp:10") != std::string::npos);
  r = run_tool("simulate --quiet --policies fifo,lifo", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("'lifo'") != std::string::npos);
  r = run_tool("simulate --quiet --shard 3/3", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--shard") != std::string::npos);
  // A number past 64 bits is quoted as given (sscanf read it as 2^64 - 1), and so is garbage.
  for (const char* shard : {"1/99999999999999999999", "1/2x", "-1/2", "1/"}) {
    r = run_tool(std::string("simulate --quiet --shard ") + shard, true);
    CHECK(r.status == 2);
    CHECK(r.out.find(std::string("--shard: expected i/n with 0 <= i < n, got \"") + shard + "\"") != std::string::npos);
  }
  for (const char* quotas : {"q0=1.5", "q0", "=4", "q0=4,q0=2", "q0=-1"}) {
    r = run_tool(std::string("simulate --quiet --policies drf --queue-quotas ") + quotas, true);
    CHECK(r.status == 2);
    CHECK(r.out.find("--queue-quotas: ") != std::string::npos);
  }
  r = run_tool("simulate --quiet --policies drf --queue-weights q0=x", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--queue-weights: expected queue=a positive number pairs separated by commas, got \"q0=x\"") !=
        std::string::npos);
}

TEST_CASE("simulate: DRF queue quotas from the command line cap a queue") {
  // One node of 8 GPUs; q0 has three jobs of 2 GPUs, q1 one, all at 0 for 100 s. Uncapped, all four
  // start at once (makespan 100). With q0 capped at 4 GPUs, q0's third job waits for its first: it
  // runs 100..200 (makespan 200, mean wait 100 / 4 = 25 s).
  const std::string csv = temp_file("drf_quota.csv", "name,submit,duration,gpus,queue\na0,0,100,2,q0\na1,0,100,2,q0\n"
                                                     "a2,0,100,2,q0\nb0,0,100,2,q1\n");
  const std::string out = (std::filesystem::temp_directory_path() / "gpusched_drf_quota").string();
  // No restart cost or estimate error: the file has no such columns, and the options' defaults would
  // add them (what a trace lacks comes from the options).
  const std::string base = "simulate --quiet --trace " + csv +
                           " --nodes 1 --gpus-per-node 8 --policies drf --restart-cost 0 --estimate-error 0 --format json --out " + out;
  auto free_run = run_tool(base, true);
  REQUIRE(free_run.status == 0);
  CHECK(nlohmann::json::parse(free_run.out)["runs"][0]["metrics"]["makespan_s"] == 100);
  auto capped = run_tool(base + " --queue-quotas q0=4", true);
  REQUIRE(capped.status == 0);
  const auto report = nlohmann::json::parse(capped.out);
  CHECK(report["runs"][0]["metrics"]["makespan_s"] == 200);
  CHECK(report["runs"][0]["metrics"]["wait_mean_s"] == 25.0);
  CHECK(report["sweep"]["parameters"]["queue_quota_gpus"] == nlohmann::json::array({nlohmann::json::array({"q0", 4})}));
}

TEST_CASE("simulate: the options add what a file trace lacks, never what it gives") {
  // 160 one-GPU jobs of 10 minutes without checkpoint or restart columns on 4 GPUs: the options'
  // 60 s checkpoints and 30 s restart cost apply (they were ignored while the report stated them);
  // a column the file has is the file's.
  std::string lacking = "name,submit,duration,gpus\n", giving = "name,submit,duration,gpus,checkpoint_interval,restart_cost\n";
  for (int k = 0; k < 40; ++k) {
    lacking += fmt::format("j{},{},600,1\n", k, k * 10);
    giving += fmt::format("j{},{},600,1,0,0\n", k, k * 10);
  }
  const auto run = [](const std::string& name, const std::string& csv) {
    const std::string file = temp_file(name, csv);
    const std::string out = (std::filesystem::temp_directory_path() / ("gpusched_lacks_" + name)).string();
    const Run r = run_tool("simulate --quiet --trace " + file + " --nodes 1 --gpus-per-node 4 --policies fifo "
                           "--checkpoint-interval 60 --restart-cost 30 --format json --out " + out, true);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out)["runs"][0];
  };
  const auto lacks = run("lacks.csv", lacking), gives = run("gives.csv", giving);
  CHECK(lacks["conservation"]["restart_overhead"] == 40 * 30 * 1000);  // 40 starts x 30 s x 1 GPU
  CHECK(gives["conservation"]["restart_overhead"] == 0);
  // Each run says how many jobs took each option's value: the parameters state the options (60, 30)
  // for both runs, and only the first used them.
  CHECK(lacks["options_applied"]["checkpoint_interval_s"] == 40);
  CHECK(lacks["options_applied"]["restart_cost_s"] == 40);
  CHECK(gives["options_applied"]["checkpoint_interval_s"] == 0);
  CHECK(gives["options_applied"]["restart_cost_s"] == 0);
  CHECK(gives["options_applied"]["queues"] == 40);
  CHECK(gives["options_applied"]["elastic_fraction"] == 0);  // no job has two tasks
}

TEST_CASE("simulate: progress in a log is at most one line per 10 % of each run, ending at 100 %") {
  const std::string out = (std::filesystem::temp_directory_path() / ("gpusched-progress-" + std::to_string(getpid()))).string();
  // stderr is a pipe here, not a terminal: lines, not a bar redrawn with carriage returns.
  const Run r = run_tool("simulate --trace itp:01 --policies fifo,easy --out " + out + " --format json 2>&1 >/dev/null | cat");
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.ends_with("%")) lines.push_back(line);  // (the last line says what was written)
  CHECK(r.out.find('\r') == std::string::npos);
  CHECK(lines.size() <= 2 * 10);
  std::size_t hundreds = 0;
  for (const std::string& line : lines) {
    CHECK(line.find("] itp01 ") != std::string::npos);
    hundreds += line.ends_with(" 100%");
  }
  CHECK(hundreds == 2);  // each run ends at 100 %
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back().find("[2/2] itp01 easy seed 42 100%") != std::string::npos);
  // And the simulator's own bad options (issue 33) are refused naming the flag.
  const Run bad = run_tool("simulate --quiet --gpus-per-node -1", true);
  CHECK(bad.status == 2);
  CHECK(bad.out.find("gpus_per_node (--gpus-per-node): expected 1 to 64, got -1") != std::string::npos);
}

TEST_CASE("merge: shards of a trace file whose content changed between them are two sweeps") {
  // The same path with other jobs in it (or "tr.csv" in two folders run from each): the digest of the
  // file's bytes in the sweep tells them apart.
  const std::string trace = temp_file("changing.csv", "name,submit,duration,gpus\na,0,100,1\n");
  const auto dir = std::filesystem::path(trace).parent_path() / "changing";
  const std::string args = "simulate --trace " + trace + " --nodes 1 --policies fifo,easy --quiet --out " + dir.string();
  REQUIRE(run_tool(args + " --shard 0/2").status == 0);
  temp_file("changing.csv", "name,submit,duration,gpus\na,0,100,2\n");
  REQUIRE(run_tool(args + " --shard 1/2").status == 0);
  const Run r = run_tool("merge --quiet --out " + (dir / "m").string() + " " + (dir / "shard-0-of-2.json").string() + " " +
                             (dir / "shard-1-of-2.json").string(),
                         true);
  CHECK(r.status == 2);
  CHECK(r.out.find("shard-1-of-2.json: a shard of another sweep") != std::string::npos);
  // The same shard twice is refused by its header.
  const Run twice = run_tool("merge --quiet --out " + (dir / "m").string() + " " + (dir / "shard-0-of-2.json").string() + " " +
                                 (dir / "shard-0-of-2.json").string(),
                             true);
  CHECK(twice.status == 2);
  CHECK(twice.out.find("shard: shard 0/2 is also") != std::string::npos);
}
