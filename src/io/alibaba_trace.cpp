#include "gpusched/io/alibaba_trace.hpp"

#include "io/json_input.hpp"
#include "io/text_input.hpp"

#include <charconv>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include <fmt/format.h>

namespace gpusched::io {
namespace {

// Splits one CSV record on commas. The trace has no quoted fields; a quote is rejected by the caller
// with a located error rather than misread.
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

using detail::shown;
using detail::trim;

// A CSV table read line by line with its header, producing located errors.
class Table {
 public:
  Table(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  // Reads the header; fails when the file is empty or a required column is missing.
  Status read_header(std::initializer_list<std::string_view> required) {
    std::string_view line;
    if (!next_line(line))
      return Error{fmt::format("{}: empty file (expected a header line)", file_), ErrorCode::kMissingField};
    header_ = split_fields(line);
    for (auto& h : header_) h = trim(h);
    for (std::string_view name : required)
      if (!column(name))
        return Error{fmt::format("{}:1: missing column \"{}\" in the header", file_, name), ErrorCode::kMissingField,
                     std::string(name)};
    return {};
  }

  std::optional<std::size_t> column(std::string_view name) const {
    for (std::size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return i;
    return std::nullopt;
  }

  // Next non-empty record; false at the end. Fails on a wrong field count or a quote.
  bool next_record(Status& status) {
    std::string_view line;
    while (next_line(line)) {
      if (trim(line).empty()) continue;
      fields_ = split_fields(line);
      if (fields_.size() != header_.size()) {
        status = Error{fmt::format("{}:{}: expected {} columns as in the header, got {}", file_, line_no_,
                                   header_.size(), fields_.size()),
                       ErrorCode::kParse};
        return false;
      }
      for (std::size_t i = 0; i < fields_.size(); ++i) {
        fields_[i] = trim(fields_[i]);
        if (fields_[i].find('"') != std::string_view::npos) {
          status = error(i, fmt::format("quoted fields are not supported, got {}", shown(fields_[i])));
          return false;
        }
        // A control character (a NUL byte, an escape) in a name would cut or garble every table and
        // file the name is written to later: refuse it here, where the line is known.
        if (const int u = detail::first_control_character(fields_[i]); u >= 0) {
          status = error(i, fmt::format("control character 0x{:02x} in {}", u, shown(fields_[i])));
          return false;
        }
      }
      return true;
    }
    return false;
  }

  std::string_view field(std::size_t col) const { return fields_[col]; }

  Error error(std::size_t col, const std::string& message) const {
    return Error{fmt::format("{}:{}: column {} ({}): {}", file_, line_no_, col + 1, header_[col], message),
                 ErrorCode::kInvalidValue, std::string(header_[col])};
  }

  // A non-negative integer field, at most `max`.
  Result<std::int64_t> integer(std::size_t col, std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    const std::string_view s = fields_[col];
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || v < 0)
      return error(col, fmt::format("expected a non-negative integer, got {}", shown(s)));
    if (v > max) return error(col, fmt::format("value {} exceeds the maximum {}", v, max));
    return v;
  }

  // An optional time: empty = -1.
  Result<std::int64_t> optional_integer(std::optional<std::size_t> col) const {
    if (!col || fields_[*col].empty()) return std::int64_t{-1};
    return integer(*col);
  }

 private:
  // Any line ending: "\n", "\r\n" or a lone "\r" (old Mac exports), so a CR-only file is not read as
  // one long header line with no records.
  bool next_line(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const std::size_t eol = text_.find_first_of("\r\n", pos_);
    const std::size_t end = eol == std::string_view::npos ? text_.size() : eol;
    line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    if (eol != std::string_view::npos && text_[eol] == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_no_;
    return true;
  }

  std::string_view text_, file_;
  std::size_t pos_ = 0;
  std::size_t line_no_ = 0;
  std::vector<std::string_view> header_, fields_;
};

// Memory in MiB must convert to bytes without overflow: cap at 2^40 MiB (1 EiB).
constexpr std::int64_t kMaxMib = std::int64_t{1} << 40;
constexpr std::int64_t kMaxCpuMilli = std::int64_t{1} << 40;


}  // namespace

TaskShape TracePod::shape() const {
  TaskShape s;
  s.cpu = cpu;
  s.memory = memory;
  s.gpus = gpu_milli > 0 ? gpus : 0;
  s.gpu_milli = gpus > 0 ? gpu_milli : 0;
  return s;
}

Result<std::vector<TraceNode>> parse_alibaba_nodes(std::string_view text, std::string_view file_name) {
  Table t(text, file_name);
  if (auto st = t.read_header({"sn", "cpu_milli", "memory_mib", "gpu", "model"}); !st) return st.error();
  const std::size_t c_sn = *t.column("sn"), c_cpu = *t.column("cpu_milli"), c_mem = *t.column("memory_mib"),
                    c_gpu = *t.column("gpu"), c_model = *t.column("model");
  std::vector<TraceNode> nodes;
  Status status;
  while (t.next_record(status)) {
    TraceNode n;
    n.name = std::string(t.field(c_sn));
    if (n.name.empty()) return t.error(c_sn, "empty node name");
    auto cpu = t.integer(c_cpu, kMaxCpuMilli);
    if (!cpu) return cpu.error();
    auto mem = t.integer(c_mem, kMaxMib);
    if (!mem) return mem.error();
    auto gpu = t.integer(c_gpu, 65535);
    if (!gpu) return gpu.error();
    n.cpu = *cpu;
    n.memory = *mem * kMiB;
    n.gpus = static_cast<GpuCount>(*gpu);
    n.model = std::string(t.field(c_model));
    if (n.gpus > 0 && n.model.empty()) return t.error(c_model, fmt::format("{} GPUs but no model", n.gpus));
    nodes.push_back(std::move(n));
  }
  if (!status) return status.error();
  return nodes;
}

Result<std::vector<TracePod>> parse_alibaba_pods(std::string_view text, std::string_view file_name) {
  Table t(text, file_name);
  if (auto st = t.read_header({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}); !st)
    return st.error();
  const std::size_t c_name = *t.column("name"), c_cpu = *t.column("cpu_milli"), c_mem = *t.column("memory_mib"),
                    c_ngpu = *t.column("num_gpu"), c_milli = *t.column("gpu_milli");
  const auto c_spec = t.column("gpu_spec"), c_qos = t.column("qos"), c_phase = t.column("pod_phase"),
             c_ct = t.column("creation_time"), c_dt = t.column("deletion_time"), c_st = t.column("scheduled_time");
  std::vector<TracePod> pods;
  Status status;
  while (t.next_record(status)) {
    TracePod p;
    p.name = std::string(t.field(c_name));
    if (p.name.empty()) return t.error(c_name, "empty pod name");
    auto cpu = t.integer(c_cpu, kMaxCpuMilli);
    if (!cpu) return cpu.error();
    auto mem = t.integer(c_mem, kMaxMib);
    if (!mem) return mem.error();
    auto ngpu = t.integer(c_ngpu, 65535);
    if (!ngpu) return ngpu.error();
    auto milli = t.integer(c_milli, kMilliPerGpu);
    if (!milli) return milli.error();
    p.cpu = *cpu;
    p.memory = *mem * kMiB;
    p.gpus = static_cast<GpuCount>(*ngpu);
    p.gpu_milli = *milli;
    if (p.gpus == 0 && p.gpu_milli != 0)
      return t.error(c_milli, fmt::format("gpu_milli {} with num_gpu 0", p.gpu_milli));
    if (p.gpus > 0 && p.gpu_milli == 0)
      return t.error(c_milli, fmt::format("gpu_milli 0 with num_gpu {}", p.gpus));
    if (p.gpus > 1 && p.gpu_milli != kMilliPerGpu)
      return t.error(c_milli, fmt::format("a share of {} on {} GPUs (a share below 1000 needs num_gpu 1)",
                                          p.gpu_milli, p.gpus));
    if (c_spec && !t.field(*c_spec).empty()) {
      const std::string_view spec = t.field(*c_spec);
      std::size_t start = 0;
      while (true) {
        const std::size_t bar = spec.find('|', start);
        const std::string_view m = trim(spec.substr(start, bar == std::string_view::npos ? spec.npos : bar - start));
        if (m.empty()) return t.error(*c_spec, fmt::format("empty model name in {}", shown(spec)));
        p.gpu_spec.emplace_back(m);
        if (bar == std::string_view::npos) break;
        start = bar + 1;
      }
    }
    if (c_qos) p.qos = std::string(t.field(*c_qos));
    if (c_phase) p.phase = std::string(t.field(*c_phase));
    auto ct = t.optional_integer(c_ct);
    if (!ct) return ct.error();
    auto dt = t.optional_integer(c_dt);
    if (!dt) return dt.error();
    auto st = t.optional_integer(c_st);
    if (!st) return st.error();
    p.creation_time = *ct;
    p.deletion_time = *dt;
    p.scheduled_time = *st;
    pods.push_back(std::move(p));
  }
  if (!status) return status.error();
  return pods;
}

Result<std::vector<TraceNode>> read_alibaba_nodes(const std::string& path) {
  auto text = detail::read_input_file(path);
  if (!text) return text.error();
  return parse_alibaba_nodes(*text, path);
}

Result<std::vector<TracePod>> read_alibaba_pods(const std::string& path) {
  auto text = detail::read_input_file(path);
  if (!text) return text.error();
  return parse_alibaba_pods(*text, path);
}

Cluster to_cluster(const std::vector<TraceNode>& nodes) {
  std::vector<NodeSpec> specs;
  specs.reserve(nodes.size());
  for (const auto& n : nodes) {
    NodeSpec s;
    s.name = n.name;
    s.cpu = n.cpu;
    s.memory = n.memory;
    s.gpus.assign(static_cast<std::size_t>(n.gpus), GpuSpec{n.model});
    specs.push_back(std::move(s));
  }
  return Cluster(std::move(specs));
}

}  // namespace gpusched::io
