// gpusched/io/alibaba_trace.hpp — readers for the Alibaba GPU cluster trace v2023 ("openb").
//
// The trace (github.com/alibaba/clusterdata, cluster-trace-gpu-v2023; shipped in
// data/alibaba-gpu-v2023/) is the workload of the USENIX ATC'23 FGD paper (Weng et al., "Beware of
// Fragmentation"). It has two kinds of CSV file:
//
//   node list  sn,cpu_milli,memory_mib,gpu,model
//   pod list   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//              deletion_time,scheduled_time      (the multigpu* variants carry only the first five)
//
// Columns are found by their header name, so any order and the short multigpu layout both read;
// unknown extra columns are ignored. `gpu_milli` is the share per GPU (1000 = whole); below 1000 only
// for one GPU. `gpu_spec` is an OR-list of allowed GPU models joined by '|' (empty = any model).
//
// Every error names the file, the line (1-based, the header is line 1) and the column (1-based
// number and header name), e.g.
//   openb_pod_list_default.csv:17: column 4 (num_gpu): expected a non-negative integer, got "-1"
//
//   auto pods = gpusched::io::read_alibaba_pods("data/alibaba-gpu-v2023/openb_pod_list_default.csv");
//   if (!pods) { std::cerr << pods.error().message; ... }
//   gpusched::Cluster cluster = gpusched::io::to_cluster(nodes.value());
// Threads: the readers keep no state between calls and may run concurrently (a reader taking a
// ClusterState only reads it). Rules for every reader (limits, unknown fields, names, line endings,
// errors as values): docs/formats.md, "Every reader".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/result.hpp"

namespace gpusched::io {

struct TraceNode {
  std::string name;
  MilliCpu cpu = 0;
  Bytes memory = 0;
  GpuCount gpus = 0;
  std::string model;  // empty for CPU-only nodes
};

struct TracePod {
  std::string name;
  MilliCpu cpu = 0;
  Bytes memory = 0;
  GpuCount gpus = 0;
  MilliGpu gpu_milli = 0;               // per GPU
  std::vector<std::string> gpu_spec;    // allowed models (OR); empty = any
  std::string qos, phase;               // empty when the file lacks the column
  std::int64_t creation_time = -1;      // seconds from trace start; -1 when absent or empty
  std::int64_t deletion_time = -1;
  std::int64_t scheduled_time = -1;

  // The task's shape in the library's units (memory in bytes).
  TaskShape shape() const;
};

// Parse the text of a node list / pod list. `file_name` is used in error messages only.
Result<std::vector<TraceNode>> parse_alibaba_nodes(std::string_view text, std::string_view file_name);
Result<std::vector<TracePod>> parse_alibaba_pods(std::string_view text, std::string_view file_name);

// Read a file and parse it; the error names the path when it cannot be read.
Result<std::vector<TraceNode>> read_alibaba_nodes(const std::string& path);
Result<std::vector<TracePod>> read_alibaba_pods(const std::string& path);

// An in-memory cluster with the nodes' GPUs all idle (model names as in the trace; the built-in
// GpuModelRegistry knows them).
Cluster to_cluster(const std::vector<TraceNode>& nodes);

}  // namespace gpusched::io
