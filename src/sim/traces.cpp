// Trace readers and generators of gpusched/sim/traces.hpp.
#include "gpusched/sim/traces.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <numbers>
#include <span>
#include <sstream>

#include <fmt/format.h>

#include "gpusched/core/random.hpp"
#include "io/json_input.hpp"

namespace gpusched::sim {
namespace {

bool parse_i64(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}


// One CSV table (RFC 4180): header columns by name, rows with located errors. Fields may be quoted
// ("a,b", "say ""hi""", a quoted field may span lines); unquoted fields are trimmed of spaces and
// tabs. \n, \r\n and a lone \r end a record; blank lines are skipped; a UTF-8 byte order mark before
// the header is ignored. The header must name each column once and only the columns the format
// knows (docs/formats.md: unknown fields are errors, never silently dropped).
class Csv {
 public:
  Csv(std::string_view text, std::string_view file) : text_(text), file_(file) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  }

  Status header(std::span<const std::string_view> required, std::span<const std::string_view> known) {
    Status status;
    if (!row(names_, status, false)) {
      if (!status) return status;
      return Error{fmt::format("{}: empty file (expected a header line)", file_), ErrorCode::kMissingField};
    }
    const std::size_t header_line = record_line_;
    for (std::size_t c = 0; c < names_.size(); ++c) {
      const std::string& name = names_[c];
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return Error{fmt::format("{}:{}: unknown column {} (known: {})", file_, header_line, io::detail::shown(name), list),
                     ErrorCode::kUnknownField, name};
      }
      for (std::size_t d = 0; d < c; ++d)
        if (names_[d] == name)
          return Error{fmt::format("{}:{}: column '{}' appears twice (columns {} and {})", file_, header_line, name, d + 1, c + 1),
                       ErrorCode::kInvalidValue, name};
    }
    for (std::string_view r : required)
      if (column(r) < 0)
        return Error{fmt::format("{}:{}: missing column '{}'", file_, header_line, r), ErrorCode::kMissingField, std::string(r)};
    return {};
  }
  int column(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<int>(i);
    return -1;
  }
  // Next non-blank record; false at the end or on an error (then `status` says which).
  bool row(std::vector<std::string>& fields, Status& status, bool check_width = true) {
    while (pos_ < text_.size()) {
      if (Status s = record(fields); !s) {
        status = s;
        return false;
      }
      if (fields.size() == 1 && fields[0].empty() && !quoted_) continue;  // a blank line
      if (check_width && fields.size() != names_.size()) {
        status = Error{fmt::format("{}:{}: expected {} columns, got {}", file_, record_line_, names_.size(), fields.size()),
                       ErrorCode::kParse};
        return false;
      }
      return true;
    }
    return false;
  }
  Error bad(int col, std::string_view what, std::string_view value) const {
    return Error{fmt::format("{}:{}: column {} ({}): expected {}, got {}", file_, record_line_, col + 1,
                             names_[static_cast<std::size_t>(col)], what, io::detail::shown(value)),
                 ErrorCode::kInvalidValue, names_[static_cast<std::size_t>(col)]};
  }
  std::string_view name(int col) const { return names_[static_cast<std::size_t>(col)]; }

 private:
  static bool blank(char c) { return c == ' ' || c == '\t'; }
  // Consumes a line break at pos_ (\n, \r\n or \r); false when there is none.
  bool line_break() {
    if (pos_ >= text_.size() || (text_[pos_] != '\n' && text_[pos_] != '\r')) return false;
    if (text_[pos_] == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
    return true;
  }
  // One record from pos_ (which is before the end of the text).
  Status record(std::vector<std::string>& fields) {
    fields.clear();
    record_line_ = line_;
    quoted_ = false;
    if (fields.capacity() == 0) fields.reserve(16);
    while (true) {
      std::size_t at = pos_;
      while (at < text_.size() && blank(text_[at])) ++at;
      std::string cell;
      if (at < text_.size() && text_[at] == '"') {
        quoted_ = true;
        pos_ = at + 1;
        while (true) {
          const std::size_t quote = text_.find('"', pos_);
          if (quote == std::string_view::npos)
            return Error{fmt::format("{}:{}: a quoted field is not closed", file_, record_line_), ErrorCode::kParse};
          for (std::size_t k = pos_; k < quote; ++k)  // line breaks inside the field, for later line numbers
            if (text_[k] == '\n' || (text_[k] == '\r' && (k + 1 >= quote || text_[k + 1] != '\n'))) ++line_;
          cell.append(text_.substr(pos_, quote - pos_));
          pos_ = quote + 1;
          if (pos_ < text_.size() && text_[pos_] == '"') {  // "" is one quote
            cell += '"';
            ++pos_;
            continue;
          }
          break;
        }
        while (pos_ < text_.size() && blank(text_[pos_])) ++pos_;
        if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r')
          return Error{fmt::format("{}:{}: column {}: text after a closing quote (write a quote inside a quoted field as \"\")",
                                   file_, line_, fields.size() + 1),
                       ErrorCode::kParse};
      } else {
        std::size_t end = pos_;
        while (end < text_.size() && text_[end] != ',' && text_[end] != '\n' && text_[end] != '\r') ++end;
        std::string_view raw = text_.substr(pos_, end - pos_);
        while (!raw.empty() && blank(raw.front())) raw.remove_prefix(1);
        while (!raw.empty() && blank(raw.back())) raw.remove_suffix(1);
        cell.assign(raw);
        pos_ = end;
      }
      fields.push_back(std::move(cell));
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      line_break();
      return {};
    }
  }

  std::string_view text_, file_;
  std::vector<std::string> names_;
  std::size_t pos_ = 0, line_ = 1, record_line_ = 0;
  bool quoted_ = false;
};

// A CSV cell as jobs_to_csv writes it: quoted when the reader would otherwise split, trim or
// unquote it.
std::string csv_cell(std::string_view value) {
  const bool plain = value.find_first_of(",\"\r\n") == std::string_view::npos &&
                     (value.empty() || (value.front() != ' ' && value.front() != '\t' && value.back() != ' ' &&
                                        value.back() != '\t'));
  if (plain) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Names (job, queue, GPU model) must not hold control characters (io::detail::first_control_character,
// docs/formats.md). The expectation text when one does, else "".
std::string name_problem(std::string_view value) {
  const int u = io::detail::first_control_character(value);
  return u < 0 ? std::string() : fmt::format("a name without control characters (0x{:02x})", u);
}

constexpr std::string_view kGenericColumns[] = {
    "name", "submit", "duration", "gpus", "tasks", "gpu_milli", "min_tasks", "cpu_milli", "memory_mib", "queue",
    "priority", "estimate", "checkpoint_interval", "restart_cost", "preemptible", "gpu_model"};

// A trace of no jobs is an error, not an empty run (docs/formats.md: empty input is never an empty
// success).
Error no_jobs(std::string_view file) {
  return Error{fmt::format("{}: no jobs (the file has no job rows)", file), ErrorCode::kMissingField, "jobs"};
}

void sort_by_submit(std::vector<SimJob>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const SimJob& a, const SimJob& b) { return a.submit < b.submit; });
}

// One generic job's fields from (key, text) pairs; `where(key)` locates an error.
struct FieldSink {
  SimJob job;
  bool has_name = false, has_submit = false, has_duration = false, has_gpus = false;
};

// Applies one key; returns the expectation text when the value is bad, "" when fine, "?" when unknown.
std::string apply_field(FieldSink& f, std::string_view key, std::string_view value) {
  std::int64_t v = 0;
  const auto integer = [&](std::int64_t lo, const char* what) -> std::string {
    if (!parse_i64(value, v) || v < lo) return what;
    return "";
  };
  SimJob& j = f.job;
  if (key == "name" || key == "queue" || key == "gpu_model")
    if (std::string e = name_problem(value); !e.empty()) return e;
  if (key == "name") {
    if (value.empty()) return "a non-empty name";
    j.name = value;
    f.has_name = true;
    return "";
  }
  if (key == "queue") return j.queue = value, j.given |= SimJob::kGivenQueue, "";
  if (key == "gpu_model") return j.gpu_model = value, "";
  if (key == "preemptible") {
    if (value == "true" || value == "1" || value.empty()) return j.preemptible = true, "";
    if (value == "false" || value == "0") return j.preemptible = false, "";
    return "true, false, 1 or 0";
  }
  struct IntField {
    std::string_view key;
    std::int64_t lo;
    const char* what;
  };
  static constexpr IntField kInts[] = {
      {"submit", 0, "a non-negative integer (seconds)"}, {"duration", 1, "a positive integer (seconds)"},
      {"gpus", 0, "a non-negative integer"},            {"tasks", 1, "a positive integer"},
      {"gpu_milli", 1, "an integer in 1..1000"},        {"min_tasks", -1, "an integer >= -1"},
      {"cpu_milli", 0, "a non-negative integer"},       {"memory_mib", 0, "a non-negative integer"},
      {"priority", -1'000'000'000, "an integer"},        {"estimate", 0, "a non-negative integer (seconds)"},
      {"checkpoint_interval", 0, "a non-negative integer (seconds)"},
      {"restart_cost", 0, "a non-negative integer (seconds)"}};
  for (const IntField& i : kInts) {
    if (key != i.key) continue;
    if (std::string e = integer(i.lo, i.what); !e.empty()) return e;
    if (key == "submit") j.submit = v, f.has_submit = true;
    if (key == "duration") j.duration = v, f.has_duration = true;
    if (key == "gpus") {
      if (v > 1024) return "an integer in 0..1024";
      j.shape.gpus = static_cast<GpuCount>(v), f.has_gpus = true;
    }
    if (key == "tasks") {
      if (v > 1'000'000) return "an integer in 1..1000000";
      j.tasks = static_cast<std::int32_t>(v);
    }
    if (key == "gpu_milli") {
      if (v > 1000) return "an integer in 1..1000";
      j.shape.gpu_milli = static_cast<MilliGpu>(v);
    }
    if (key == "min_tasks") {
      j.min_tasks = static_cast<std::int32_t>(std::min<std::int64_t>(v, 1'000'000));
      j.given |= SimJob::kGivenMinTasks;
    }
    if (key == "cpu_milli") j.shape.cpu = v;
    if (key == "memory_mib") {
      if (v > (std::numeric_limits<Bytes>::max() >> 20)) return "a non-negative integer below 2^43 (MiB)";
      j.shape.memory = v << 20;
    }
    if (key == "priority") j.priority = static_cast<std::int32_t>(std::min<std::int64_t>(v, 1'000'000'000)), j.given |= SimJob::kGivenPriority;
    if (key == "estimate") j.estimate = v, j.given |= SimJob::kGivenEstimate;
    if (key == "checkpoint_interval") j.checkpoint_interval = v, j.given |= SimJob::kGivenCheckpoint;
    if (key == "restart_cost") j.restart_cost = v, j.given |= SimJob::kGivenRestart;
    return "";
  }
  return "?";
}

void finish_shape(SimJob& j) {
  if (j.shape.gpus == 0) j.shape.gpu_milli = 0;
  else if (j.shape.gpu_milli == 0) j.shape.gpu_milli = kMilliPerGpu;
}

}  // namespace

// ---------------------------------------------------------------------------------------------- ITP

Result<std::vector<SimJob>> parse_itp_trace(std::string_view text, std::string_view file_name,
                                            std::int32_t gpus_per_node) {
  Csv csv(text, file_name);
  static constexpr std::string_view kColumns[] = {"job_id", "submission_time", "duration", "num_gpu"};
  if (Status s = csv.header(kColumns, kColumns); !s) return s.error();  // all four required, nothing else
  const int c_id = csv.column("job_id"), c_sub = csv.column("submission_time"), c_dur = csv.column("duration"),
            c_gpu = csv.column("num_gpu");
  std::vector<SimJob> jobs;
  std::vector<std::string> f;
  Status status;
  while (csv.row(f, status)) {
    SimJob j;
    j.name = f[static_cast<std::size_t>(c_id)];
    if (j.name.empty()) return csv.bad(c_id, "a non-empty job id", j.name);
    if (std::string e = name_problem(j.name); !e.empty()) return csv.bad(c_id, e, j.name);
    std::int64_t sub = 0, dur = 0, gpus = 0;
    if (!parse_i64(f[static_cast<std::size_t>(c_sub)], sub) || sub < 0)
      return csv.bad(c_sub, "a non-negative integer", f[static_cast<std::size_t>(c_sub)]);
    if (!parse_i64(f[static_cast<std::size_t>(c_dur)], dur) || dur < 1)
      return csv.bad(c_dur, "a positive integer", f[static_cast<std::size_t>(c_dur)]);
    if (!parse_i64(f[static_cast<std::size_t>(c_gpu)], gpus) || gpus < 1 || gpus > 4096 ||
        (gpus > gpus_per_node && gpus % gpus_per_node != 0))
      return csv.bad(c_gpu, fmt::format("1..{} or a multiple of {}", gpus_per_node, gpus_per_node),
                     f[static_cast<std::size_t>(c_gpu)]);
    j.submit = sub;
    j.duration = dur;
    j.shape.gpu_milli = kMilliPerGpu;
    if (gpus <= gpus_per_node) {
      j.shape.gpus = static_cast<GpuCount>(gpus);
    } else {
      j.shape.gpus = gpus_per_node;
      j.tasks = static_cast<std::int32_t>(gpus / gpus_per_node);
    }
    jobs.push_back(std::move(j));
  }
  if (!status) return status.error();
  if (jobs.empty()) return no_jobs(file_name);
  sort_by_submit(jobs);
  return jobs;
}

Result<std::vector<SimJob>> read_itp_trace(const std::string& path, std::int32_t gpus_per_node) {
  auto text = io::detail::read_input_file(path);
  if (!text) return text.error();
  return parse_itp_trace(*text, path, gpus_per_node);
}

std::size_t itp_paper_nodes(int number) {
  switch (number) {
    case 1: case 2: case 3: case 5: case 6: return 64;
    case 4: case 7: case 8: case 9: return 128;
    case 10: return 32;
    default: return 0;
  }
}

// ------------------------------------------------------------------------------------------ Alibaba

std::vector<SimJob> alibaba_jobs(const std::vector<io::TracePod>& pods) {
  std::vector<SimJob> jobs;
  for (const io::TracePod& p : pods) {
    if (p.creation_time < 0 || p.deletion_time <= p.creation_time) continue;
    SimJob j;
    j.name = p.name;
    j.submit = p.creation_time;
    j.duration = p.deletion_time - p.creation_time;
    j.shape = p.shape();
    if (p.gpu_spec.size() == 1) j.gpu_model = p.gpu_spec.front();
    jobs.push_back(std::move(j));
  }
  sort_by_submit(jobs);
  return jobs;
}

// ------------------------------------------------------------------------------------------ generic

Result<std::vector<SimJob>> parse_jobs_csv(std::string_view text, std::string_view file_name) {
  Csv csv(text, file_name);
  static constexpr std::string_view kRequired[] = {"name", "submit", "duration", "gpus"};
  if (Status s = csv.header(kRequired, kGenericColumns); !s) return s.error();
  std::vector<std::string> f;
  std::vector<SimJob> jobs;
  Status status;
  while (csv.row(f, status)) {
    FieldSink sink;
    for (std::size_t c = 0; c < f.size(); ++c) {
      // Empty optional fields keep the default.
      const int col = static_cast<int>(c);
      if (f[c].empty() && csv.name(col) != "name" && csv.name(col) != "submit" && csv.name(col) != "duration" &&
          csv.name(col) != "gpus")
        continue;
      std::string e = apply_field(sink, csv.name(col), f[c]);
      if (!e.empty() && e != "?") return csv.bad(col, e, f[c]);
    }
    finish_shape(sink.job);
    if (sink.job.min_tasks > sink.job.tasks) {
      const int col = csv.column("min_tasks");
      return csv.bad(col, fmt::format("at most tasks ({})", sink.job.tasks), f[static_cast<std::size_t>(col)]);
    }
    jobs.push_back(std::move(sink.job));
  }
  if (!status) return status.error();
  if (jobs.empty()) return no_jobs(file_name);
  sort_by_submit(jobs);
  return jobs;
}

Result<std::vector<SimJob>> parse_jobs_json(std::string_view text, std::string_view file_name) {
  auto doc = io::detail::parse_json(text, file_name);
  if (!doc) return doc.error();
  const nlohmann::json& root = *doc;
  if (!root.is_object() || !root.contains("jobs") || !root["jobs"].is_array())
    return Error{fmt::format("{}: expected an object with a \"jobs\" array", file_name), ErrorCode::kMissingField, "jobs"};
  std::vector<SimJob> jobs;
  const auto& list = root["jobs"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& o = list[i];
    const std::string where = fmt::format("jobs[{}]", i);
    if (!o.is_object())
      return Error{fmt::format("{}: {}: expected an object, got {}", file_name, where, io::detail::shown(o)),
                   ErrorCode::kInvalidValue, where};
    FieldSink sink;
    for (auto it = o.begin(); it != o.end(); ++it) {
      std::string value;
      if (it->is_string()) value = it->get<std::string>();
      else if (it->is_number_integer()) value = std::to_string(it->get<std::int64_t>());
      else if (it->is_boolean()) value = it->get<bool>() ? "true" : "false";
      else value = "\x01";  // rejected below with the JSON shown
      std::string e = apply_field(sink, it.key(), value);
      if (e == "?")
        return Error{fmt::format("{}: {}.{}: unknown field", file_name, where, it.key()), ErrorCode::kUnknownField,
                     where + "." + it.key()};
      if (!e.empty())
        return Error{fmt::format("{}: {}.{}: expected {}, got {}", file_name, where, it.key(), e,
                                 io::detail::shown(*it)),
                     ErrorCode::kInvalidValue, where + "." + it.key()};
    }
    for (const auto& [has, key] : {std::pair{sink.has_name, "name"}, std::pair{sink.has_submit, "submit"},
                                   std::pair{sink.has_duration, "duration"}, std::pair{sink.has_gpus, "gpus"}})
      if (!has)
        return Error{fmt::format("{}: {}: missing field '{}'", file_name, where, key), ErrorCode::kMissingField,
                     where + "." + key};
    finish_shape(sink.job);
    if (sink.job.min_tasks > sink.job.tasks)
      return Error{fmt::format("{}: {}.min_tasks: expected at most tasks ({}), got {}", file_name, where,
                               sink.job.tasks, sink.job.min_tasks),
                   ErrorCode::kInconsistent, where + ".min_tasks"};
    jobs.push_back(std::move(sink.job));
  }
  if (jobs.empty()) return no_jobs(file_name);
  sort_by_submit(jobs);
  return jobs;
}

Result<std::vector<SimJob>> read_jobs_file(const std::string& path) {
  auto text = io::detail::read_input_file(path);
  if (!text) return text.error();
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return parse_jobs_json(*text, path);
  return parse_jobs_csv(*text, path);
}

std::string jobs_to_csv(const std::vector<SimJob>& jobs) {
  std::string out =
      "name,submit,duration,gpus,tasks,gpu_milli,min_tasks,cpu_milli,memory_mib,queue,priority,estimate,"
      "checkpoint_interval,restart_cost,preemptible,gpu_model\n";
  for (const SimJob& j : jobs) {
    // A CPU-only job's share is 0, which the column refuses (1..1000): left empty, it reads back as 0.
    const std::string gpu_milli = j.shape.gpus == 0 ? std::string() : std::to_string(j.shape.gpu_milli);
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(j.name), j.submit, j.duration,
                       j.shape.gpus, j.tasks, gpu_milli, j.min_tasks, j.shape.cpu, j.shape.memory >> 20,
                       csv_cell(j.queue), j.priority, j.estimate, j.checkpoint_interval, j.restart_cost,
                       j.preemptible ? 1 : 0, csv_cell(j.gpu_model));
  }
  return out;
}

// -------------------------------------------------------------------------------- augment, synthetic

namespace {
double unit(SplitMix64& rng) { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }
}  // namespace

void augment(std::vector<SimJob>& jobs, const Augment& a) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    // One stream per job (seed and index), so adding jobs never changes the earlier ones' draws.
    SplitMix64 rng(a.seed ^ (0xA0761D6478BD642FULL * (i + 1)));
    SimJob& j = jobs[i];
    // Only what the trace lacks (SimJob::given); the draws are made either way, so a job's draws do
    // not depend on which fields its trace gave.
    const auto lacks = [&](std::uint8_t field) { return (j.given & field) == 0; };
    if (a.queues > 1) {
      const std::uint64_t q = rng.below(static_cast<std::uint64_t>(a.queues));
      if (lacks(SimJob::kGivenQueue)) j.queue = "q" + std::to_string(q);
    } else {
      (void)rng.next();
    }
    if (a.priorities > 1) {
      const auto p = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(a.priorities)));
      if (lacks(SimJob::kGivenPriority)) j.priority = p;
    } else {
      (void)rng.next();
    }
    if (a.checkpoint_interval > 0 && lacks(SimJob::kGivenCheckpoint)) j.checkpoint_interval = a.checkpoint_interval;
    if (a.restart_cost > 0 && lacks(SimJob::kGivenRestart)) j.restart_cost = a.restart_cost;
    const double u = unit(rng);
    if (a.estimate_error > 0 && lacks(SimJob::kGivenEstimate)) {
      // Generated, so bounded here: an estimate past the simulator's horizon would be refused as if
      // the trace had given it (and a double past int64 cannot be converted).
      const double e = std::ceil(static_cast<double>(j.duration) * (1 + a.estimate_error * u));
      j.estimate = std::max<Seconds>(j.duration, e >= static_cast<double>(kMaxSimSeconds) ? kMaxSimSeconds : static_cast<Seconds>(e));
    }
    if (a.elastic_fraction > 0 && j.tasks > 1 && unit(rng) < a.elastic_fraction && lacks(SimJob::kGivenMinTasks))
      j.min_tasks = j.tasks / 2;
  }
}

OptionsApplied options_applied(const std::vector<SimJob>& jobs) {
  OptionsApplied n;
  for (const SimJob& j : jobs) {
    const auto lacks = [&](std::uint8_t field) -> std::size_t { return (j.given & field) == 0 ? 1 : 0; };
    n.queues += lacks(SimJob::kGivenQueue);
    n.priorities += lacks(SimJob::kGivenPriority);
    n.estimate_error += lacks(SimJob::kGivenEstimate);
    n.checkpoint_interval += lacks(SimJob::kGivenCheckpoint);
    n.restart_cost += lacks(SimJob::kGivenRestart);
    n.elastic_fraction += j.tasks > 1 ? lacks(SimJob::kGivenMinTasks) : 0;
  }
  return n;
}

std::vector<SimJob> synthetic_jobs(const SyntheticSpec& spec) {
  std::vector<SimJob> jobs;
  jobs.reserve(spec.jobs);
  SplitMix64 rng(spec.seed);
  double t = 0, total_w = 0;
  for (double w : spec.size_weights) total_w += w;
  const double mean_gap = 3600.0 / std::max(1e-9, spec.arrivals_per_hour);
  for (std::size_t i = 0; i < spec.jobs; ++i) {
    t += -std::log1p(-unit(rng)) * mean_gap;  // Poisson process: exponential gaps
    double pick = unit(rng) * total_w;
    std::int32_t gpus = spec.size_gpus.empty() ? 1 : spec.size_gpus.back();
    for (std::size_t k = 0; k < spec.size_gpus.size() && k < spec.size_weights.size(); ++k) {
      if (pick < spec.size_weights[k]) {
        gpus = spec.size_gpus[k];
        break;
      }
      pick -= spec.size_weights[k];
    }
    // Log-normal by Box-Muller.
    const double u1 = std::max(unit(rng), 1e-300), u2 = unit(rng);
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    const double d = std::clamp(spec.duration_median * std::exp(spec.duration_sigma * z), 60.0, 30.0 * 86400);
    SimJob j;
    j.name = fmt::format("syn-{:07}", i);
    j.submit = static_cast<Seconds>(t);
    j.duration = static_cast<Seconds>(d);
    j.shape.gpu_milli = kMilliPerGpu;
    if (gpus <= spec.gpus_per_node) {
      j.shape.gpus = gpus;
    } else {
      j.shape.gpus = spec.gpus_per_node;
      j.tasks = gpus / spec.gpus_per_node;
    }
    jobs.push_back(std::move(j));
  }
  augment(jobs, spec.extra);
  return jobs;
}

}  // namespace gpusched::sim
