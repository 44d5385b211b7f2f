// libFuzzer: the `nvidia-smi mig -lgip` / `-lgipp` text readers (docs/mig.md) on arbitrary bytes. The
// input is read as both tables (a real file holds one or the other, or both pasted together), and
// when both parse, the profile table built from them must validate or be refused with an error.
#include "fuzz_harness.hpp"
#include "gpusched/io/mig_nvidia_smi.hpp"

GPUSCHED_FUZZ_TARGET(nvidia_smi_mig, data, size) {
  const auto text = gpusched::fuzz::as_text(data, size);
  auto lgip = gpusched::io::parse_lgip(text);
  auto lgipp = gpusched::io::parse_lgipp(text);
  gpusched::fuzz::check_result(lgip);
  gpusched::fuzz::check_result(lgipp);
  if (lgip.ok() && lgipp.ok())
    gpusched::fuzz::check_result(gpusched::io::spec_from_nvidia_smi("fuzz", *lgip, *lgipp, -1));
  return 0;
}
