// src/io/decision_json.hpp — decisions' parts as JSON, shared by the io writers, the tool, the C API
// and the Python module (private: public headers take and give text, no nlohmann type).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "gpusched/core/outcome.hpp"
#include "gpusched/io/task_records.hpp"
#include "gpusched/packing/placement.hpp"

namespace gpusched::io::detail {

// The one vocabulary's reasons: kind, text, unit, needed, available, count (those that are set), and
// with `job` the group a reason is about.
nlohmann::json reasons_json(const std::vector<Reason>& reasons, const CompiledJob* job = nullptr);

// A task as `gpusched place --format json` writes it: group, replica, node, gpus, gpu_milli.
nlohmann::json placed_task_json(const TaskRecord& task);

}  // namespace gpusched::io::detail
