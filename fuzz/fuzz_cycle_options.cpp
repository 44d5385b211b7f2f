// libFuzzer: the scheduling cycle's options document (docs/cycle.md, `gpusched cycle --options`, the
// C API's gpusched_cycle) on arbitrary bytes: options or an Error naming the field.
#include "fuzz_harness.hpp"

#include "gpusched/io/cycle_json.hpp"

namespace fuzz_cycle_options {

GPUSCHED_FUZZ_TARGET(cycle_options, data, size) {
  gpusched::fuzz::check_result(gpusched::io::read_cycle_options_json(gpusched::fuzz::as_text(data, size), "options.json"));
  return 0;
}

}  // namespace fuzz_cycle_options
