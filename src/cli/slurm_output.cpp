// What the tool prints for Slurm inputs besides its decisions (docs/slurm.md): the reader's notes on
// stderr, and the scontrol commands of `--format slurm`.
#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.hpp"
#include "io/text_input.hpp"

namespace gpusched::cli {

void print_slurm_notes(const io::slurm::Input& input) {
  for (const std::string& w : input.warnings) std::fprintf(stderr, "gpusched: warning: %s\n", w.c_str());
  if (input.skipped.empty()) return;
  // Counted per reason: a queue may hold thousands of held or dependent jobs.
  std::map<std::string, std::size_t> reasons;
  for (const io::slurm::Skipped& s : input.skipped) ++reasons[s.reason];
  std::string text;
  for (const auto& [reason, n] : reasons) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", n, io::detail::shown(reason, 60));
  std::fprintf(stderr, "gpusched: slurm: %zu pending jobs not planned, as Slurm would not start them now (%s)\n", input.skipped.size(),
               text.c_str());
}

std::string scontrol_start(std::string_view id, std::vector<std::string> nodes) {
  // A job's nodes in first-use order, each once (a node list may not repeat a node).
  std::vector<std::string> unique;
  for (std::string& n : nodes)
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(std::move(n));
  return fmt::format("scontrol update JobId={} ReqNodeList={}\n", id, fmt::join(unique, ","));
}

}  // namespace gpusched::cli
