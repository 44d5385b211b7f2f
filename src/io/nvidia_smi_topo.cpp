// The `nvidia-smi topo -m` reader (format in io/nvidia_smi_topo.hpp and docs/topology.md).
#include "gpusched/io/nvidia_smi_topo.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <numeric>
#include <new>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "io/json_input.hpp"
#include "io/text_input.hpp"

namespace gpusched::io {
namespace {

using detail::trim;
using topology::NodeTopology;
using topology::pair_link_name;

struct Line {
  std::size_t number = 0;  // 1-based
  std::string text;        // without ANSI codes and '\r'
};

// Drops ANSI CSI sequences (ESC '[' params final-byte) and other lone ESC characters.
std::string strip_ansi(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      if (i + 1 < s.size() && s[i + 1] == '[') {
        i += 2;
        while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      }
      continue;
    }
    if (s[i] == '\r') continue;
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> split_tabs(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t tab = s.find('\t', start);
    out.emplace_back(trim(s.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start)));
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<PairLink> parse_code(std::string_view code) {
  const std::string u = upper(trim(code));
  if (u == "X") return PairLink{PairClass::kSelf, 0};
  if (u == "PIX") return PairLink{PairClass::kPix, 0};
  if (u == "PXB") return PairLink{PairClass::kPxb, 0};
  if (u == "PHB") return PairLink{PairClass::kPhb, 0};
  if (u == "NODE") return PairLink{PairClass::kNode, 0};
  if (u == "SYS" || u == "SOC") return PairLink{PairClass::kSys, 0};
  if (u.size() > 2 && u[0] == 'N' && u[1] == 'V') {
    int n = 0;
    auto [p, ec] = std::from_chars(u.data() + 2, u.data() + u.size(), n);
    if (ec == std::errc{} && p == u.data() + u.size() && n >= 1 && n <= 255)
      return PairLink{PairClass::kNvLink, static_cast<std::uint8_t>(n)};
  }
  return std::nullopt;
}

bool is_gpu_name(std::string_view s) {
  if (s.size() < 4 || upper(s.substr(0, 3)) != "GPU") return false;
  return std::all_of(s.begin() + 3, s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// "0-31,64-95", "0,2,4", "7": non-empty comma list of n or a-b with a <= b.
bool valid_cpu_list(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t comma = std::min(s.find(',', i), s.size());
    const std::string_view part = s.substr(i, comma - i);
    const std::size_t dash = part.find('-');
    auto num = [](std::string_view t, long& v) {
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return !t.empty() && ec == std::errc{} && p == t.data() + t.size() && v >= 0;
    };
    long a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (!num(part, a)) return false;
    } else if (!num(part.substr(0, dash), a) || !num(part.substr(dash + 1), b) || a > b) {
      return false;
    }
    i = comma + 1;
    if (comma == s.size()) break;
  }
  return true;
}

// nvidia-smi prints GPUs and NICs; the largest machines have 16 GPUs and a few dozen NICs.
constexpr std::size_t kMaxDevices = 1024;

enum class Extra { kCpu, kNuma, kGpuNuma };

std::string_view extra_name(Extra e) {
  switch (e) {
    case Extra::kCpu: return "CPU Affinity";
    case Extra::kNuma: return "NUMA Affinity";
    case Extra::kGpuNuma: return "GPU NUMA ID";
  }
  return "?";
}

}  // namespace

namespace {

// A device name as messages show it (short, control characters escaped).
std::string shown_name(std::string_view name) { return detail::shown(name, 40); }

// The header's columns: device names, then the trailing affinity columns.
Status read_header(const Line& header, std::vector<std::string>& names, std::vector<Extra>& extras) {
  std::vector<std::string> fields;
  if (header.text.find('\t') != std::string::npos) {
    for (auto& f : split_tabs(header.text))
      if (!f.empty()) fields.push_back(f);
  } else {
    fields = split_ws(header.text);
  }
  std::size_t i = 0;
  auto word = [&](std::size_t k) { return i + k < fields.size() ? upper(fields[i + k]) : std::string{}; };
  for (; i < fields.size();) {
    // A tab-separated header holds "CPU Affinity" in one field; a space-separated one in two.
    const std::string w = upper(fields[i]);
    if (w == "CPU AFFINITY") extras.push_back(Extra::kCpu), ++i;
    else if (w == "NUMA AFFINITY") extras.push_back(Extra::kNuma), ++i;
    else if (w == "GPU NUMA ID") extras.push_back(Extra::kGpuNuma), ++i;
    else if (w == "CPU" && word(1) == "AFFINITY") extras.push_back(Extra::kCpu), i += 2;
    else if (w == "NUMA" && word(1) == "AFFINITY") extras.push_back(Extra::kNuma), i += 2;
    else if (w == "GPU" && word(1) == "NUMA" && word(2) == "ID") extras.push_back(Extra::kGpuNuma), i += 3;
    else if (!extras.empty())
      return Error{fmt::format("line {}: unknown column {} after the affinity columns", header.number, shown_name(fields[i])), ErrorCode::kParse, ""};
    else {
      if (std::find(names.begin(), names.end(), fields[i]) != names.end())
        return Error{fmt::format("line {}: device {} appears twice in the header", header.number, shown_name(fields[i])), ErrorCode::kParse, ""};
      names.push_back(fields[i]);
      ++i;
    }
  }
  return {};
}

// A row's values after the matrix (CPU affinity, NUMA affinity, GPU NUMA ID), in column order.
Status read_extras(const Line& line, const std::string& row, const std::vector<std::string>& rest,
                   const std::vector<Extra>& extras, NodeDevice& dev) {
  for (std::size_t e = 0; e < rest.size(); ++e) {
    std::string v(trim(rest[e]));
    if (upper(v) == "N/A") v.clear();
    if (v.empty()) continue;
    switch (extras[e]) {
      case Extra::kCpu:
        if (!valid_cpu_list(v))
          return Error{fmt::format("line {}: row {}, {}: expected a CPU list like 0-31,64-95, got {}",
                                   line.number, row, extra_name(extras[e]), shown_name(v)), ErrorCode::kParse, ""};
        dev.cpu_affinity = v;
        break;
      case Extra::kNuma: {
        if (!valid_cpu_list(v))
          return Error{fmt::format("line {}: row {}, {}: expected a NUMA node list, got {}", line.number,
                                   row, extra_name(extras[e]), shown_name(v)), ErrorCode::kParse, ""};
        dev.numa_affinity = v;
        int node = -1;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), node);
        dev.numa_node = (ec == std::errc{} && p == v.data() + v.size()) ? node : -1;
        break;
      }
      case Extra::kGpuNuma: {
        int id = -1;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
        if (ec != std::errc{} || p != v.data() + v.size() || id < 0)
          return Error{fmt::format("line {}: row {}, {}: expected a NUMA node id or N/A, got {}", line.number,
                                   row, extra_name(extras[e]), shown_name(v)), ErrorCode::kParse, ""};
        dev.gpu_numa_id = id;
        break;
      }
    }
  }
  return {};
}

// The NIC legend below the matrix ("  NIC0: mlx5_0") names the NICs' devices.
void read_nic_legend(const std::vector<Line>& lines, std::size_t li, std::vector<NodeDevice>& devices) {
  bool in_nic_legend = false;
  for (; li < lines.size(); ++li) {
    const std::string_view t = trim(lines[li].text);
    if (upper(t).rfind("NIC LEGEND", 0) == 0) {
      in_nic_legend = true;
      continue;
    }
    if (!in_nic_legend || t.empty()) continue;
    const std::size_t colon = t.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(t.substr(0, colon)), value = trim(t.substr(colon + 1));
    for (NodeDevice& d : devices)
      if (d.kind == DeviceKind::kNic && d.name == key && !value.empty()) d.nic_name = value;
  }
}

// The matrix with GPUs first, keeping the order within each kind.
Result<TopoMatrix> gpus_first(const std::vector<NodeDevice>& devices, const std::vector<PairLink>& matrix,
                              const std::vector<Extra>& extras, const Line& header) {
  const std::size_t n = devices.size();
  TopoMatrix out;
  for (Extra e : extras) {
    out.has_cpu_affinity |= e == Extra::kCpu;
    out.has_numa_affinity |= e == Extra::kNuma;
    out.has_gpu_numa_id |= e == Extra::kGpuNuma;
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_partition(order.begin(), order.end(), [&](std::size_t d) { return devices[d].kind == DeviceKind::kGpu; });
  if (order.empty() || devices[order[0]].kind != DeviceKind::kGpu)
    return Error{fmt::format("line {}: no GPU columns", header.number), ErrorCode::kParse, ""};
  out.devices.reserve(n);
  out.matrix.resize(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    out.devices.push_back(devices[order[i]]);
    for (std::size_t j = 0; j < n; ++j) out.matrix[i * n + j] = matrix[order[i] * n + order[j]];
  }
  return out;
}


// Row r of the matrix: its device's name first, n link codes (X on the diagonal only), then the
// trailing values.
Status read_row(const Line& line, std::size_t r, const std::vector<std::string>& names, const std::vector<Extra>& extras,
                std::vector<PairLink>& matrix, NodeDevice& dev) {
  const std::size_t n = names.size();
  const bool tabs = line.text.find('\t') != std::string::npos;
  std::vector<std::string> fields = tabs ? split_tabs(line.text) : split_ws(line.text);
  if (tabs)  // a leading tab would make an empty first field
    while (!fields.empty() && fields.front().empty()) fields.erase(fields.begin());
  if (fields.empty() || fields[0] != names[r])
    return Error{fmt::format("line {}: row {} where {} was expected", line.number,
                             shown_name(fields.empty() ? std::string{} : fields[0]), shown_name(names[r])), ErrorCode::kParse, ""};
  std::size_t cells = 0;
  while (1 + cells < fields.size() && cells < n && parse_code(fields[1 + cells])) ++cells;
  if (cells != n) {
    if (1 + cells < fields.size() && cells < n && !fields[1 + cells].empty() &&
        std::isalpha(static_cast<unsigned char>(fields[1 + cells][0])) && upper(fields[1 + cells]) != "N/A")
      return Error{fmt::format("line {}: row {}, column {}: unknown link code {} (expected X, NV#, PIX, PXB, "
                               "PHB, NODE or SYS)",
                               line.number, names[r], names[cells], shown_name(fields[1 + cells])), ErrorCode::kParse, ""};
    return Error{fmt::format("line {}: row {} has {} link cells, expected {} (ragged matrix)", line.number,
                             names[r], cells, n), ErrorCode::kParse, ""};
  }
  for (std::size_t c = 0; c < n; ++c) {
    const PairLink l = *parse_code(fields[1 + c]);
    if ((l.cls == PairClass::kSelf) != (c == r))
      return Error{fmt::format("line {}: row {}, column {}: {}", line.number, names[r], names[c],
                               c == r ? fmt::format("expected X on the diagonal, got {}", shown_name(fields[1 + c]))
                                      : std::string{"X off the diagonal"}), ErrorCode::kParse, ""};
    matrix[r * n + c] = l;
  }
  // Trailing values in column order. Empty fields are skipped: nvidia-smi itself pads with double
  // tabs before GPU NUMA ID, and with spaces empty values vanish anyway.
  std::vector<std::string> rest;
  for (std::size_t f = 1 + n; f < fields.size(); ++f)
    if (!fields[f].empty()) rest.push_back(fields[f]);
  if (rest.size() > extras.size())
    return Error{fmt::format("line {}: row {} has {} values after the matrix, the header names {} columns",
                             line.number, names[r], rest.size(), extras.size()), ErrorCode::kParse, ""};
  return read_extras(line, names[r], rest, extras, dev);
}

Result<TopoMatrix> read_matrix(std::string_view text) {
  if (text.size() > detail::kMaxTextBytes)
    return Error{fmt::format("{} bytes, more than the limit of {} for nvidia-smi text", text.size(), detail::kMaxTextBytes),
                 ErrorCode::kLimit, ""};
  std::vector<Line> lines;
  {
    std::size_t number = 1;
    for (std::string_view raw : detail::text_lines(text)) lines.push_back({number++, strip_ansi(raw)});
  }
  // The header: the first line naming a GPU whose second word is not a link code (a matrix row
  // reads "GPU0  X  NV1 ...").
  std::size_t h = 0;
  while (h < lines.size()) {
    const auto words = split_ws(lines[h].text);
    const bool names_gpu = std::any_of(words.begin(), words.end(), [](const std::string& w) { return is_gpu_name(w); });
    if (names_gpu && !(words.size() > 1 && parse_code(words[1]))) break;
    ++h;
  }
  if (h == lines.size()) return Error{"no header line naming GPU0 (is this `nvidia-smi topo -m` output?)", ErrorCode::kParse, ""};
  const Line& header = lines[h];

  std::vector<std::string> names;
  std::vector<Extra> extras;
  if (auto st = read_header(header, names, extras); !st) return st.error();
  const std::size_t n = names.size();
  // Bound what the header alone claims before allocating n x n cells: each device needs a row
  // below the header, and no machine has more than kMaxDevices GPUs and NICs.
  if (n > kMaxDevices)
    return Error{fmt::format("line {}: {} devices in the header, more than the limit of {}", header.number, n, kMaxDevices),
                 ErrorCode::kLimit, ""};
  if (n > lines.size() - h - 1)
    return Error{fmt::format("line {}: the header names {} devices but only {} lines follow (one row per device expected)",
                             header.number, n, lines.size() - h - 1), ErrorCode::kParse, ""};
  for (const std::string& name : names) {
    if (auto st = detail::check_name(name, fmt::format("line {}: device name", header.number)); !st) return st.error();
    if (name.size() > 64)
      return Error{fmt::format("line {}: device name {} is longer than 64 characters", header.number, shown_name(name)),
                   ErrorCode::kLimit, ""};
  }
  std::vector<PairLink> matrix(n * n);
  std::vector<std::size_t> row_line(n, 0);
  std::vector<NodeDevice> devices(n);
  for (std::size_t d = 0; d < n; ++d) {
    devices[d].name = names[d];
    devices[d].kind = is_gpu_name(names[d]) ? DeviceKind::kGpu : DeviceKind::kNic;
    devices[d].nic_name = devices[d].kind == DeviceKind::kNic ? names[d] : std::string{};
  }

  // Rows, in header order, until a blank line or the legend.
  std::size_t li = h + 1;
  for (std::size_t r = 0; r < n; ++r, ++li) {
    if (li >= lines.size() || trim(lines[li].text).empty() ||
        upper(trim(lines[li].text)).rfind("LEGEND", 0) == 0) {
      const std::size_t at = li < lines.size() ? lines[li].number : lines.back().number;
      return Error{fmt::format("line {}: the matrix has {} rows, expected {} (row {} missing)", at, r, n, names[r]), ErrorCode::kParse, ""};
    }
    const Line& line = lines[li];
    if (auto st = read_row(line, r, names, extras, matrix, devices[r]); !st) return st.error();
    row_line[r] = line.number;
  }
  // Symmetry, naming both lines.
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < a; ++b)
      if (matrix[a * n + b] != matrix[b * n + a])
        return Error{fmt::format("line {}: asymmetric: {}-{} is {} but {}-{} (line {}) is {}", row_line[a], names[a],
                                 names[b], pair_link_name(matrix[a * n + b]), names[b], names[a], row_line[b],
                                 pair_link_name(matrix[b * n + a])), ErrorCode::kParse, ""};
  read_nic_legend(lines, li, devices);
  return gpus_first(devices, matrix, extras, header);
}

}  // namespace

Result<TopoMatrix> read_nvidia_smi_topo_matrix(std::string_view text) {
  // Never throws (the header's promise): the one thing the code above can throw is bad_alloc.
  try {
    return read_matrix(text);
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("out of memory reading {} bytes of nvidia-smi topo text", text.size()), ErrorCode::kLimit, ""};
  }
}

Result<NodeInterconnect> read_nvidia_smi_interconnect(std::string_view text, InterconnectOptions options) {
  auto m = read_nvidia_smi_topo_matrix(text);
  if (!m) return m.error();
  return NodeInterconnect{std::move(m->devices), std::move(m->matrix), options};
}

Result<NodeTopology> parse_nvidia_smi_topo(std::string_view text, InterconnectOptions options) {
  auto m = read_nvidia_smi_topo_matrix(text);
  if (!m) return m.error();
  return NodeTopology::build(std::move(m->devices), std::move(m->matrix), options);
}

}  // namespace gpusched::io
