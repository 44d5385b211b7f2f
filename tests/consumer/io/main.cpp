// Reads a cluster document and a jobs document (the io library) and places each job as a gang, one
// after the other, on the one state (a policy family); prints each verdict. Built against the
// installed package with gpusched::io (tests/consumer/io/CMakeLists.txt).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gpusched/gang/gang.hpp"
#include "gpusched/io/cluster_json.hpp"

// What links gpusched::io compiles the families as io was compiled: declarations only.
static_assert(!GPUSCHED_HEADER_ONLY, "a target linking gpusched::io must use the installed compiled families");

static std::string slurp(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  auto cluster = gpusched::io::read_cluster_json(slurp(argv[1]), argv[1]);
  auto jobs = gpusched::io::read_jobs_json(slurp(argv[2]), argv[2]);
  if (!cluster || !jobs) return 2;
  auto state = gpusched::ClusterState::build(cluster->cluster, cluster->registry);
  if (!state) return 2;
  int placed = 0;
  for (const gpusched::Job& job : jobs->jobs) {
    const auto compiled = gpusched::compile_job(*state, job);
    if (!compiled) return 2;
    const auto spec = gpusched::make_gang_spec(*compiled);
    if (!spec) return 2;
    const gpusched::GangResult r = gpusched::place_gang(*state, *spec);
    std::printf("%s: %s\n", job.job_name.c_str(), std::string(gpusched::verdict_name(r.verdict)).c_str());
    placed += r.placed() ? 1 : 0;
  }
  return placed > 0 ? 0 : 1;
}
