// Moved: the MIG profile tables are vendor facts below the cluster layer, in gpusched/core/mig_profiles.hpp.
// This header stays so that existing includes keep working.
#pragma once

#include "gpusched/core/mig_profiles.hpp"
