#include "gpusched/io/mig_nvidia_smi.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "io/json_input.hpp"
#include "io/text_input.hpp"

#include "gpusched/core/mig_layout.hpp"

namespace gpusched::io {

// The tables and their rules are the header-only MIG vocabulary.
using namespace gpusched::mig;
namespace {

// Any line ending ("\n", "\r\n", a lone "\r"); text beyond the size bound is refused by the callers.
std::vector<std::string_view> split_lines(std::string_view text) { return detail::text_lines(text); }

// A line or a token as messages show it: short, control characters escaped.
std::string trimmed(std::string_view s) { return detail::shown(detail::trim(s), 80); }

Error too_big(std::string_view what, std::size_t size) {
  return Error{fmt::format("{}: {} bytes, more than the limit of {} for nvidia-smi text", what, size, detail::kMaxTextBytes),
               ErrorCode::kLimit, ""};
}

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '|')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '|') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool to_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out >= 0;
}

bool to_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out >= 0;
}


}  // namespace

Result<std::vector<LgipRow>> parse_lgip(std::string_view text) {
  if (text.size() > detail::kMaxTextBytes) return too_big("lgip", text.size());
  std::vector<LgipRow> rows;
  const auto lines = split_lines(text);
  bool expect_second = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const int lineno = static_cast<int>(i + 1);
    if (line.empty() || line.front() != '|') continue;  // prompts, comments, +---+ borders
    auto t = tokens(line);
    if (t.empty()) continue;
    int first = 0;
    if (!to_int(t[0], first)) {
      if (expect_second)
        return Error{fmt::format("lgip line {}: expected the CE/JPEG/OFA line of profile {}, got {}", lineno,
                                 detail::shown(rows.back().name, 40), trimmed(line))};
      continue;  // header lines
    }
    if (expect_second) {
      if (t.size() != 3)
        return Error{fmt::format("lgip line {}: expected 3 numbers (CE JPEG OFA), got {}", lineno, trimmed(line))};
      LgipRow& r = rows.back();
      if (!to_int(t[0], r.ce) || !to_int(t[1], r.jpeg) || !to_int(t[2], r.ofa))
        return Error{fmt::format("lgip line {}: CE/JPEG/OFA must be integers, got {}", lineno, trimmed(line))};
      expect_second = false;
      continue;
    }
    LgipRow r;
    r.line = lineno;
    r.gpu = first;
    std::size_t k = 1;
    if (k < t.size() && t[k] == "MIG") ++k;
    if (t.size() != k + 8)
      return Error{fmt::format("lgip line {}: expected GPU, name, ID, free/total, memory, P2P, SM, DEC, ENC; got {}",
                               lineno, trimmed(line))};
    r.name = std::string(t[k]);
    int id = 0;
    if (!to_int(t[k + 1], id)) return Error{fmt::format("lgip line {}: profile ID {} is not an integer", lineno, trimmed(t[k + 1]))};
    r.id = static_cast<std::uint32_t>(id);
    const std::string_view ft = t[k + 2];
    const std::size_t slash = ft.find('/');
    if (slash == std::string_view::npos || !to_int(ft.substr(0, slash), r.free) || !to_int(ft.substr(slash + 1), r.total))
      return Error{fmt::format("lgip line {}: instances {} is not free/total", lineno, trimmed(ft))};
    // Bounded (the largest GPU has 192 GiB; "inf" parses as a double) so that the MiB conversion
    // below cannot overflow an int32.
    if (!to_double(t[k + 3], r.memory_gib) || !(r.memory_gib <= 1'000'000))
      return Error{fmt::format("lgip line {}: memory {} is not a number of GiB", lineno, trimmed(t[k + 3]))};
    if (t[k + 4] != "Yes" && t[k + 4] != "No")
      return Error{fmt::format("lgip line {}: P2P {} is not Yes/No", lineno, trimmed(t[k + 4]))};
    r.p2p = t[k + 4] == "Yes";
    if (!to_int(t[k + 5], r.sm) || !to_int(t[k + 6], r.dec) || !to_int(t[k + 7], r.enc))
      return Error{fmt::format("lgip line {}: SM/DEC/ENC must be integers, got {}", lineno, trimmed(line))};
    rows.push_back(std::move(r));
    expect_second = true;
  }
  if (expect_second)
    return Error{fmt::format("lgip: profile {} lacks its CE/JPEG/OFA line", detail::shown(rows.back().name, 40))};
  if (rows.empty()) return Error{"lgip: no GPU instance profile rows found"};
  return rows;
}

Result<std::vector<LgippRow>> parse_lgipp(std::string_view text) {
  if (text.size() > detail::kMaxTextBytes) return too_big("lgipp", text.size());
  std::vector<LgippRow> rows;
  const auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const int lineno = static_cast<int>(i + 1);
    const std::size_t pid = line.find("Profile ID");
    if (pid == std::string_view::npos || line.find("GPU") == std::string_view::npos) continue;
    auto bad = [&](std::string_view what) {
      return Error{fmt::format("lgipp line {}: {} in {}", lineno, what, trimmed(line))};
    };
    LgippRow r;
    r.line = lineno;
    auto head = tokens(line.substr(0, pid));
    if (head.size() != 2 || head[0] != "GPU" || !to_int(head[1], r.gpu)) return bad("expected 'GPU <index>'");
    std::string_view rest = line.substr(pid + 10);
    const std::size_t brace = rest.find('{');
    const std::size_t close = rest.find('}');
    if (brace == std::string_view::npos || close == std::string_view::npos || close < brace)
      return bad("expected '{starts}:size'");
    // Between the ID and the brace: "19 Placements:" or " 5 Placement :".
    auto mid = tokens(rest.substr(0, brace));
    int id = 0;
    if (mid.empty() || !to_int(mid[0], id)) return bad("expected a profile ID");
    r.id = static_cast<std::uint32_t>(id);
    std::string word;
    for (std::size_t k = 1; k < mid.size(); ++k) word += std::string(mid[k]);
    if (word != "Placements:" && word != "Placement:") return bad("expected 'Placements:'");
    std::string_view list = rest.substr(brace + 1, close - brace - 1);
    while (!list.empty()) {
      const std::size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      int s = 0;
      if (!to_int(item, s) || s >= kMaxSlots) return bad(fmt::format("start {} is not a slice 0..{}", trimmed(item), kMaxSlots - 1));
      r.starts = static_cast<SlotMask>(r.starts | (1U << s));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    if (r.starts == 0) return bad("empty placement list");
    std::string_view after = rest.substr(close + 1);
    while (!after.empty() && after.back() == ' ') after.remove_suffix(1);
    if (after.empty() || after.front() != ':' || !to_int(after.substr(1), r.size) || r.size < 1 || r.size > kMaxSlots)
      return bad("expected ':size' after the placements");
    rows.push_back(r);
  }
  if (rows.empty()) return Error{"lgipp: no 'GPU n Profile ID k Placements: {..}:size' lines found"};
  return rows;
}

Result<MigGpuSpec> spec_from_nvidia_smi(std::string_view model, const std::vector<LgipRow>& lgip,
                                        const std::vector<LgippRow>& lgipp, int gpu) {
  if (lgip.empty()) return Error{"lgip: no rows"};
  if (gpu < 0) gpu = lgip.front().gpu;
  MigGpuSpec spec;
  spec.model = std::string(model);
  spec.source = fmt::format("nvidia-smi mig -lgip/-lgipp output, GPU {}", gpu);
  int slots = 0, compute = 0, max_gi = 0;
  for (const LgipRow& r : lgip) {
    if (r.gpu != gpu) continue;
    auto geometry = parse_profile_name(r.name);
    if (!geometry)
      return Error{fmt::format("lgip line {}: profile name {} is not of the form <N>g.<M>gb[+me]", r.line, detail::shown(r.name, 40))};
    auto pp = std::find_if(lgipp.begin(), lgipp.end(), [&](const LgippRow& p) { return p.gpu == gpu && p.id == r.id; });
    if (pp == lgipp.end())
      return Error{fmt::format("lgipp: no placements for profile ID {} ({}) of GPU {}", r.id, detail::shown(r.name, 40), gpu)};
    MigProfile p;
    p.id = r.id;
    p.name = r.name;
    p.compute_slices = static_cast<std::uint8_t>(geometry->compute_slices);
    p.memory_slices = static_cast<std::uint8_t>(pp->size);
    p.starts = pp->starts;
    p.max_instances = static_cast<std::uint8_t>(std::min(r.total, 255));
    p.media_extensions = geometry->media_extensions;
    p.memory_mib = static_cast<std::int32_t>(std::lround(r.memory_gib * 1024.0));
    p.sm_count = r.sm;
    p.copy_engines = static_cast<std::uint8_t>(std::min(r.ce, 255));
    p.decoders = static_cast<std::uint8_t>(std::min(r.dec, 255));
    p.jpeg = static_cast<std::uint8_t>(std::min(r.jpeg, 255));
    p.ofa = static_cast<std::uint8_t>(std::min(r.ofa, 255));
    p.source = fmt::format("nvidia-smi -lgip line {}, -lgipp line {}", r.line, pp->line);
    for (SlotMask s = p.starts; s; s = static_cast<SlotMask>(s & (s - 1)))
      slots = std::max(slots, std::countr_zero(static_cast<unsigned>(s)) + pp->size);
    compute = std::max(compute, geometry->compute_slices);
    max_gi = std::max(max_gi, r.total);
    spec.profiles.push_back(std::move(p));
  }
  if (spec.profiles.empty()) return Error{fmt::format("lgip: no profiles of GPU {}", gpu)};
  for (const LgippRow& p : lgipp)
    if (p.gpu == gpu && spec.find_id(p.id) < 0)
      return Error{fmt::format("lgipp line {}: profile ID {} is not in the -lgip table of GPU {}", p.line, p.id, gpu)};
  spec.memory_slots = static_cast<std::uint8_t>(std::clamp(slots, 1, kMaxSlots));
  spec.compute_slices = static_cast<std::uint8_t>(std::clamp(compute, 1, 255));
  spec.max_instances = static_cast<std::uint8_t>(std::clamp(max_gi, 1, kMaxInstances));
  // Media engines: the full-GPU profile's; without one, the sums are not limited.
  spec.decoders = spec.jpeg = spec.ofa = 255;
  for (const MigProfile& p : spec.profiles)
    if (p.memory_slices == spec.memory_slots) {
      spec.decoders = p.decoders;
      spec.jpeg = p.jpeg;
      spec.ofa = p.ofa;
    }
  if (Status st = validate_spec(spec); !st) return st.error();
  return spec;
}

std::vector<SpecDifference> compare_specs(const MigGpuSpec& reference, const MigGpuSpec& observed) {
  std::vector<SpecDifference> out;
  auto geo = [&out](std::string text) { out.push_back({true, std::move(text)}); };
  if (reference.memory_slots != observed.memory_slots)
    geo(fmt::format("memory slices: {} vs {}", reference.memory_slots, observed.memory_slots));
  for (const MigProfile& r : reference.profiles) {
    const int oi = observed.find_id(r.id);
    if (oi < 0) {
      geo(fmt::format("profile ID {} ({}): missing from the observed table", r.id, r.name));
      continue;
    }
    const MigProfile& o = observed.profiles[static_cast<std::size_t>(oi)];
    if (r.name != o.name) out.push_back({false, fmt::format("profile ID {}: name {} vs {}", r.id, r.name, o.name)});
    if (r.compute_slices != o.compute_slices)
      geo(fmt::format("profile ID {}: compute slices {} vs {}", r.id, r.compute_slices, o.compute_slices));
    if (r.memory_slices != o.memory_slices)
      geo(fmt::format("profile ID {}: placement size {} vs {}", r.id, r.memory_slices, o.memory_slices));
    if (r.starts != o.starts)
      geo(fmt::format("profile ID {}: placements {} vs {}", r.id, format_starts(r.starts), format_starts(o.starts)));
    if (r.max_instances != o.max_instances)
      geo(fmt::format("profile ID {}: instances {} vs {}", r.id, r.max_instances, o.max_instances));
    if (r.media_extensions != o.media_extensions)
      geo(fmt::format("profile ID {}: media extensions {} vs {}", r.id, r.media_extensions, o.media_extensions));
  }
  for (const MigProfile& o : observed.profiles)
    if (reference.find_id(o.id) < 0)
      geo(fmt::format("profile ID {} ({}): not in the reference table", o.id, o.name));
  return out;
}

}  // namespace gpusched::io
