// The shipped default Alibaba trace as a replay workload, loaded once per benchmark program.
#pragma once

#include <string>

#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/sim/packing_experiment.hpp"

namespace gpusched::bench {

inline const sim::TraceWorkload& default_trace_workload() {
  static const sim::TraceWorkload w = [] {
    const std::string dir = std::string(GPUSCHED_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";
    auto nodes = io::read_alibaba_nodes(dir + "openb_node_list_gpu_node.csv");
    auto pods = io::read_alibaba_pods(dir + "openb_pod_list_default.csv");
    return sim::make_trace_workload(nodes.value(), pods.value(), "default").value();
  }();
  return w;
}

}  // namespace gpusched::bench
