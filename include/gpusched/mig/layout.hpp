// Moved: the MIG layout rules are vendor facts below the cluster layer, in gpusched/core/mig_layout.hpp.
// This header stays so that existing includes keep working.
#pragma once

#include "gpusched/core/mig_layout.hpp"
