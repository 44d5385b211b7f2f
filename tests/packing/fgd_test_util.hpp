// Builders shared by the FGD and FGD-OC tests: target shapes, trace-like nodes, compiled requests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/packing/fgd.hpp"

namespace gpusched::fgd_test {

inline TargetShape shape(MilliCpu cpu, GpuCount gpus, MilliGpu milli, double w) {
  TargetShape s;
  s.cpu = cpu;
  s.gpus = gpus;
  s.gpu_milli = milli;
  s.weight = w;
  return s;
}

// The example: M = {(4 CPU, 0.5 GPU): 0.5, (8 CPU, 1 GPU): 0.3, CPU-only 2 CPU: 0.2}.
inline TargetWorkload example_workload() {
  TargetWorkload w;
  w.shapes = {shape(4000, 1, 500, 0.5), shape(8000, 1, 1000, 0.3), shape(2000, 0, 0, 0.2)};
  return w;
}

inline NodeSpec node(std::string name, MilliCpu cpu, std::vector<MilliGpu> used, std::string model = "T4") {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu = cpu;
  n.memory = 256 * kGiB;
  for (MilliGpu u : used) n.gpus.push_back(GpuSpec{model, u});
  return n;
}

inline TaskRequest request(const ClusterState& s, MilliCpu cpu, GpuCount gpus, MilliGpu milli) {
  TaskShape t;
  t.cpu = cpu;
  t.memory = kGiB;
  t.gpus = gpus;
  t.gpu_milli = milli;
  return s.compile(t).value();
}

}  // namespace gpusched::fgd_test
