// Reads a cluster document and places a two-task gang of 4 GPUs on it; prints the verdict.
// Built against the installed package with gpusched::io (tests/consumer/io/CMakeLists.txt).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gpusched/gang/gang.hpp"
#include "gpusched/io/cluster_json.hpp"

// What links gpusched::io compiles the families as io was compiled: declarations only.
static_assert(!GPUSCHED_HEADER_ONLY, "a target linking gpusched::io must use the installed compiled families");

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::ifstream in(argv[1]);
  std::ostringstream text;
  text << in.rdbuf();
  auto doc = gpusched::io::read_cluster_json(text.str(), argv[1]);
  if (!doc) {
    std::fprintf(stderr, "%s\n", doc.error().message.c_str());
    return 2;
  }
  auto state = gpusched::ClusterState::build(doc->cluster, doc->registry);
  if (!state) return 2;
  gpusched::Job job;
  job.job_name = "allreduce";
  gpusched::TaskGroupSpec group;
  group.name = "worker";
  group.replicas = 2;
  group.shape = gpusched::TaskShape{4000, gpusched::kGiB, 4, 1000, 0};
  job.groups.push_back(group);
  auto compiled = gpusched::compile_job(*state, job);
  if (!compiled) return 2;
  auto spec = gpusched::make_gang_spec(*compiled);
  if (!spec) return 2;
  const gpusched::GangResult gang = gpusched::place_gang(*state, *spec);
  std::printf("gang: %s\n", std::string(gpusched::verdict_name(gang.verdict)).c_str());
  return gang.placed() ? 0 : 1;
}
