// The policy families compiled once for gpusched's own programs (GPUSCHED_SEPARATE_COMPILATION,
// gpusched/core/config.hpp): the tool, the bindings, the tests, the examples and the benchmarks link
// this unit instead of compiling the families' definitions in each of theirs.
#include "gpusched/compiled.hpp"
