// Helpers shared by the MIG test files (one translation unit with GPUSCHED_UNITY_BUILD).
#pragma once

#include <string_view>

#include "gpusched/core/mig_profiles.hpp"
#include "gpusched/mig/packer.hpp"

namespace gpusched::mig::testing {

inline const MigCatalog& cat() { return MigCatalog::builtin(); }
inline MigModelId model(std::string_view name) { return *cat().find(name); }
inline MigRequest req(std::string_view name) { return MigRequest::from_name(cat(), name).value(); }

}  // namespace gpusched::mig::testing
