// gpusched/io/mig_nvidia_smi.hpp — reading `nvidia-smi mig -lgip` and `-lgipp` text.
//
// What it is for. A real machine's profile table may differ from the built-in one (a driver adds
// `1g.10gb` or `2g.12gb+me`, renames `3g.40gb` to `3g.39gb`). These parsers read the text
// nvidia-smi prints, so the table can be loaded (`spec_from_nvidia_smi`) or checked against the
// built-in table (`compare_specs`, by profile ID and geometry; names are reported, not compared).
//
// Formats (NVIDIA MIG User Guide, "Getting Started"; the same on R450 through R580 drivers):
//   -lgip   a box table, two lines per profile:
//             |   0  MIG 1g.5gb        19     7/7        4.75       No     14     0     0   |
//             |                                                             1     0     0   |
//           GPU, name, profile ID, instances free/total, memory GiB, P2P, SM, DEC, ENC on the
//           first line; CE, JPEG, OFA on the second.
//   -lgipp  one line per profile: `GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1`; with a
//           single start the driver prints `Placement : {0}:8` (singular, space before colon).
// Lines that are neither (shell prompts, `#` comments, box borders, headers) are skipped. Errors
// name the line number and the text that could not be read.
//
// A reader, so compiled io code (src/io/mig_nvidia_smi.cpp, library gpusched::io, namespace
// gpusched::io); the tables it produces are the header-only gpusched::mig::MigGpuSpec.
//
// Geometry that the text does not print is derived: compute slices from the name's "Ng"; the
// GPU's memory slices from the widest placement; its compute slices and instance limit from the
// largest "Ng" and the largest total; media engines from the full-GPU profile.
// Threads: the readers keep no state between calls and may run concurrently (a reader taking a
// ClusterState only reads it). Rules for every reader (limits, unknown fields, names, line endings,
// errors as values): docs/formats.md, "Every reader".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/core/mig_profiles.hpp"

namespace gpusched::io {

struct LgipRow {
  int line = 0;
  int gpu = 0;
  std::string name;      // without the "MIG " prefix
  std::uint32_t id = 0;
  int free = 0, total = 0;
  double memory_gib = 0;
  bool p2p = false;
  int sm = 0, dec = 0, enc = 0, ce = 0, jpeg = 0, ofa = 0;
};

struct LgippRow {
  int line = 0;
  int gpu = 0;
  std::uint32_t id = 0;
  mig::SlotMask starts = 0;
  int size = 0;
};

Result<std::vector<LgipRow>> parse_lgip(std::string_view text);
Result<std::vector<LgippRow>> parse_lgipp(std::string_view text);

// The table of one GPU (`gpu`, or the first GPU in the text when -1) from both outputs. Every
// -lgip profile needs a -lgipp line and vice versa. `model` names the result.
Result<mig::MigGpuSpec> spec_from_nvidia_smi(std::string_view model, const std::vector<LgipRow>& lgip,
                                        const std::vector<LgippRow>& lgipp, int gpu = -1);

// Differences between a reference table and one read from a machine, matched by profile ID:
// missing or extra IDs, and differing compute slices, memory slices, starts or instance totals.
// Name differences are listed as notes ("name: 3g.40gb vs 3g.39gb") since drivers vary them.
struct SpecDifference {
  bool geometry = false;  // true for a placement/geometry difference, false for a name note
  std::string text;
};
std::vector<SpecDifference> compare_specs(const mig::MigGpuSpec& reference, const mig::MigGpuSpec& observed);

}  // namespace gpusched::io
