// benchmarks/instances/k8s.hpp — the Kubernetes objects io_k8s.cpp reads (a NodeList as `kubectl get
// nodes -o json|yaml` prints it, a PodList), with their size a parameter for scale_stack.cpp.
#pragma once

#include <cstddef>
#include <string>

#include <fmt/format.h>

namespace gpusched::bench {

// `nodes` nodes (io_k8s.cpp reads 10,000): 8 A100-80GB GPUs each, GFD labels, zone/rack labels, a GPU taint on every node,
// a Ready condition. About 900 bytes of JSON per node.
inline std::string k8s_node_list(std::size_t nodes, bool yaml) {
  std::string out;
  if (yaml) {
    out = "apiVersion: v1\nkind: NodeList\nitems:\n";
    for (std::size_t n = 0; n < nodes; ++n)
      out += fmt::format(
          "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-{0}\n    labels:\n      kubernetes.io/hostname: node-{0}\n"
          "      topology.kubernetes.io/zone: zone-{1}\n      example.com/rack: rack-{2}\n"
          "      nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n      nvidia.com/gpu.count: \"8\"\n"
          "      nvidia.com/gpu.memory: \"81920\"\n      nvidia.com/mig.strategy: none\n"
          "  spec:\n    taints:\n    - {{key: nvidia.com/gpu, value: present, effect: NoSchedule}}\n"
          "  status:\n    capacity: {{cpu: \"128\", memory: 1056Gi, nvidia.com/gpu: \"8\", pods: \"110\"}}\n"
          "    allocatable: {{cpu: 127500m, memory: 1048Gi, nvidia.com/gpu: \"8\", pods: \"110\"}}\n"
          "    conditions:\n    - {{type: Ready, status: \"True\"}}\n",
          n, n / 2500, n / 32);
    return out;
  }
  out = R"({"apiVersion":"v1","kind":"NodeList","items":[)";
  for (std::size_t n = 0; n < nodes; ++n)
    out += fmt::format(
        R"({}{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"node-{}","labels":{{"kubernetes.io/hostname":"node-{}",)"
        R"("topology.kubernetes.io/zone":"zone-{}","example.com/rack":"rack-{}","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB",)"
        R"("nvidia.com/gpu.count":"8","nvidia.com/gpu.memory":"81920","nvidia.com/mig.strategy":"none"}}}},)"
        R"("spec":{{"taints":[{{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}}]}},)"
        R"("status":{{"capacity":{{"cpu":"128","memory":"1056Gi","nvidia.com/gpu":"8","pods":"110"}},)"
        R"("allocatable":{{"cpu":"127500m","memory":"1048Gi","nvidia.com/gpu":"8","pods":"110"}},)"
        R"("conditions":[{{"type":"Ready","status":"True"}}]}}}})",
        n ? "," : "", n, n, n / 2500, n / 32);
  return out + "]}";
}

// `pods` pods (io_k8s.cpp reads 100,000): 1 in 5 bound (running), the rest pending; 1, 2, 4 or 8 GPUs, two containers (one
// an init container), a toleration, a Kueue queue label. About 700 bytes of JSON per pod.
inline std::string k8s_pod_list(std::size_t pods, std::size_t nodes) {
  std::string out = R"({"apiVersion":"v1","kind":"PodList","items":[)";
  for (std::size_t p = 0; p < pods; ++p) {
    const int gpus = 1 << (p % 4);
    const std::string bound = p % 5 == 0 ? fmt::format(R"("nodeName":"node-{}",)", (p / 5) % nodes) : std::string();
    out += fmt::format(
        R"({}{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"pod-{}","namespace":"team-{}",)"
        R"("labels":{{"kueue.x-k8s.io/queue-name":"lq","app":"train"}},"creationTimestamp":"2024-05-01T10:00:00Z"}},)"
        R"("spec":{{{}"schedulerName":"default-scheduler","priorityClassName":"","tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists"}}],)"
        R"("initContainers":[{{"name":"init","resources":{{"requests":{{"cpu":"1","memory":"1Gi"}}}}}}],)"
        R"("containers":[{{"name":"main","image":"trainer:1","resources":{{"requests":{{"cpu":"{}","memory":"{}Gi"}},)"
        R"("limits":{{"nvidia.com/gpu":"{}"}}}}}}]}},"status":{{"phase":"{}"}}}})",
        p ? "," : "", p, p % 8, bound, 4 * gpus, 32 * gpus, gpus, bound.empty() ? "Pending" : "Running");
  }
  return out + "]}";
}

}  // namespace gpusched::bench
