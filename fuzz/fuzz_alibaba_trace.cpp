// libFuzzer: the Alibaba trace CSV readers (node list and pod list) on arbitrary bytes.
#include "fuzz_harness.hpp"
#include "gpusched/io/alibaba_trace.hpp"

GPUSCHED_FUZZ_TARGET(alibaba_trace, data, size) {
  const auto text = gpusched::fuzz::as_text(data, size);
  gpusched::fuzz::check_result(gpusched::io::parse_alibaba_pods(text, "fuzz.csv"));
  gpusched::fuzz::check_result(gpusched::io::parse_alibaba_nodes(text, "fuzz.csv"));
  return 0;
}
