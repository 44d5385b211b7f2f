// src/io/cluster_json_detail.hpp — the cluster reader's pieces that take parsed JSON, for the other
// readers and the tool that embed a cluster or quantities in their own documents (the MIG cluster
// file, the fairness queues file). Private: the public API (gpusched/io/cluster_json.hpp) takes text,
// so no nlohmann type is part of it.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpusched/core/quantity.hpp"
#include "gpusched/io/cluster_json.hpp"

namespace gpusched::io::detail {

// A cluster document already parsed (through parse_json, so its depth is bounded).
Result<ClusterDocument> cluster_from_json(const nlohmann::json& doc, std::string_view source = "cluster");

// The "mig" object of a GPU (see write_mig_json); null when the GPU is not in MIG mode.
nlohmann::json mig_to_json(const ClusterState& state, NodeId node, GpuIndex gpu);

// Reads a quantity field: a JSON integer in `integer_scale` units of the target, or a Kubernetes
// string. The message names `path` and the value.
Result<std::int64_t> read_quantity(const nlohmann::json& value, std::string_view path, QuantityUnit unit,
                                   std::int64_t integer_scale = 1);

}  // namespace gpusched::io::detail
