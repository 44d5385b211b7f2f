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

void add_slurm_options(CLI::App* sub, std::vector<std::string>& files, std::string* held, const std::string& instead) {
  auto* slurm = sub->add_option("--slurm", files,
                                instead + ": the output of sinfo --json (or scontrol show nodes --json) and squeue --json (docs/slurm.md)");
  if (held)
    sub->add_option("--slurm-held", *held, "With --slurm: held jobs are skipped, or planned as if released")
        ->check(CLI::IsMember({"skip", "plan"}))->capture_default_str()->needs(slurm);
}

std::vector<io::slurm::Source> slurm_sources(const std::vector<std::string>& texts, const std::vector<std::string>& files) {
  std::vector<io::slurm::Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], files[i]});
  return sources;
}

io::slurm::Options slurm_options(std::string_view held) {
  io::slurm::Options o;
  o.held = held == "plan" ? io::slurm::Held::kPlan : io::slurm::Held::kSkip;
  return o;
}

std::string scontrol_start(std::string_view id, std::vector<std::string> nodes) {
  // A job's nodes in first-use order, each once (a node list may not repeat a node).
  std::vector<std::string> unique;
  for (std::string& n : nodes)
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(std::move(n));
  return fmt::format("scontrol update JobId={} ReqNodeList={}\n", id, fmt::join(unique, ","));
}

}  // namespace gpusched::cli
