// Slurm's JSON (sinfo --json, scontrol show nodes --json, squeue --json) as the one model
// (gpusched/io/slurm.hpp; the mapping field by field: docs/slurm.md).
//
// Sources followed: Slurm's OpenAPI plugin v0.0.38 (src/plugins/openapi/v0.0.38 of slurm-22.05: the
// dumpers of nodes and jobs, which sinfo and squeue call), the data_parser v0.0.39–v0.0.41 of 23.02–
// 24.05 (the same fields; numbers as {"set", "infinite", "number"}, states as lists), and the man
// pages of sbatch (--gres, --gpus, --gpus-per-task, --constraint, --array), squeue (--start) and
// gres.conf (GRES types and indices). The captures in tests/fixtures/slurm/ come from Debian 12's
// slurm-wlm 22.05.8.
#include <algorithm>
#include <charconv>
#include <ctime>
#include <map>
#include <new>
#include <set>

#include <fmt/format.h>

#include "gpusched/io/slurm.hpp"
#include "io/json_input.hpp"

namespace gpusched::io::slurm {
namespace {

using json = nlohmann::json;

struct ParseError {
  Error error;
};

// A Slurm array may have at most 4,000,001 tasks (MaxArraySize's bound); a whole input at most 2^20
// jobs after expansion (the job model's bound on tasks, kMaxJobTasks, is the same order).
constexpr std::size_t kMaxJobs = std::size_t{1} << 20;
constexpr std::size_t kMaxHostlist = std::size_t{1} << 20;
// Slurm's "no value" and "infinite" for 32-bit fields (slurm.h NO_VAL, INFINITE).
constexpr std::uint64_t kNoVal = 0xfffffffe, kInfinite = 0xffffffff;

// One record being read, named in messages: "squeue.json: jobs[3] (job 17)".
struct Rec {
  std::string_view source;
  std::string what;
  [[noreturn]] void fail(std::string_view field, std::string_view message, ErrorCode code = ErrorCode::kInvalidValue) const {
    throw ParseError{Error(detail::tidy_message(fmt::format("{}: {}: {}: {}", source, what, field, message)), code, std::string(field))};
  }
};

const json* member(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string get_string(const Rec& r, const json& obj, std::string_view key) {
  const json* v = member(obj, key);
  if (!v) return {};
  if (!v->is_string()) r.fail(key, fmt::format("expected a string, got {}", detail::shown(*v)));
  return v->get<std::string>();
}

// A number field: absent/null/unset, infinite, or a value (v0.0.38 writes Slurm's NO_VAL and INFINITE
// as their 32-bit values; v0.0.39+ as {"set": false} and {"infinite": true}).
struct Number {
  bool set = false;
  bool infinite = false;
  std::uint64_t value = 0;
};
Number get_number(const Rec& r, const json& obj, std::string_view key) {
  const json* v = member(obj, key);
  Number n;
  if (!v) return n;
  if (v->is_object()) {
    const json* set = member(*v, "set");
    const json* inf = member(*v, "infinite");
    const json* num = member(*v, "number");
    if ((set && !set->is_boolean()) || (inf && !inf->is_boolean()))
      r.fail(key, fmt::format("expected {{\"set\", \"infinite\", \"number\"}}, got {}", detail::shown(*v)));
    if (inf && inf->get<bool>()) return {true, true, 0};
    if (set && !set->get<bool>()) return n;
    v = num;
    if (!v) return n;
  }
  if (v->is_number_unsigned()) n.value = v->get<std::uint64_t>();
  else if (v->is_number_integer() && v->get<std::int64_t>() >= 0) n.value = static_cast<std::uint64_t>(v->get<std::int64_t>());
  else r.fail(key, fmt::format("expected a non-negative integer, got {}", detail::shown(*v)));
  n.set = true;
  return n;
}
// A count or a time that fits the model (seconds since 1970, MiB, CPUs); `unset` when absent.
std::int64_t get_int(const Rec& r, const json& obj, std::string_view key, std::int64_t unset = 0) {
  const Number n = get_number(r, obj, key);
  if (!n.set || n.infinite || n.value == kNoVal || n.value == kInfinite) return unset;
  if (n.value > static_cast<std::uint64_t>(INT64_MAX / 4))
    r.fail(key, fmt::format("{} is beyond the representable range", n.value), ErrorCode::kOverflow);
  return static_cast<std::int64_t>(n.value);
}

// ---- Slurm's text forms: hostlists, GRES strings, index lists ----

std::optional<std::uint64_t> parse_uint(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Splits at commas outside brackets and parentheses ("n[1-2,4],m1", "gpu:2(IDX:0,2)").
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t b = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '[' || c == '(') ++depth;
    else if ((c == ']' || c == ')') && depth > 0) --depth;
    else if (c == ',' && depth == 0) {
      if (i > b) out.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  }
  if (b < s.size()) out.push_back(s.substr(b));  // the last item, also when a bracket is left open
  return out;
}

// A list of strings: a JSON array (v0.0.39+) or one comma-separated string (v0.0.38).
std::vector<std::string> get_list(const Rec& r, const json& obj, std::string_view key) {
  std::vector<std::string> out;
  const json* v = member(obj, key);
  if (!v) return out;
  auto add = [&](std::string_view s) {
    for (std::string_view item : split_top(s))
      if (item = detail::trim(item); !item.empty()) out.emplace_back(item);
  };
  if (v->is_string()) add(v->get_ref<const std::string&>());
  else if (v->is_array()) {
    for (const json& item : *v) {
      if (!item.is_string()) r.fail(key, fmt::format("expected strings, got {}", detail::shown(item)));
      add(item.get_ref<const std::string&>());
    }
  } else {
    r.fail(key, fmt::format("expected a string or a list of strings, got {}", detail::shown(*v)));
  }
  return out;
}

// "0-3,5,8-9" -> {0,1,2,3,5,8,9}; also "0-99:2" (array steps). nullopt on malformed text or beyond `cap`.
std::optional<std::vector<std::uint64_t>> expand_ranges(std::string_view s, std::size_t cap) {
  std::vector<std::uint64_t> out;
  for (std::string_view part : split_top(s)) {
    std::uint64_t step = 1;
    if (auto colon = part.find(':'); colon != std::string_view::npos) {
      auto st = parse_uint(part.substr(colon + 1));
      if (!st || *st == 0) return std::nullopt;
      step = *st;
      part = part.substr(0, colon);
    }
    const auto dash = part.find('-');
    auto lo = parse_uint(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : parse_uint(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || (*hi - *lo) / step >= cap - out.size()) return std::nullopt;
    for (std::uint64_t i = *lo; i <= *hi; i += step) out.push_back(i);
    if (out.size() > cap) return std::nullopt;
  }
  return out;
}

// A Slurm hostlist ("gpu[01-03,07],login1", "r[1-2]n[1-2]") as node names; nullopt when malformed.
bool expand_host(std::string_view h, std::string prefix, std::vector<std::string>& out) {
  const auto open = h.find('[');
  if (open == std::string_view::npos) {
    if (h.find(']') != std::string_view::npos) return false;
    out.push_back(prefix + std::string(h));
    return out.size() <= kMaxHostlist;
  }
  const auto close = h.find(']', open);
  if (close == std::string_view::npos) return false;
  prefix += h.substr(0, open);
  for (std::string_view part : split_top(h.substr(open + 1, close - open - 1))) {
    const auto dash = part.find('-');
    const std::string_view lo_text = part.substr(0, dash);
    auto lo = parse_uint(lo_text);
    auto hi = dash == std::string_view::npos ? lo : parse_uint(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi - *lo >= kMaxHostlist) return false;
    for (std::uint64_t i = *lo; i <= *hi; ++i) {
      std::string n = std::to_string(i);
      if (n.size() < lo_text.size()) n.insert(0, lo_text.size() - n.size(), '0');  // "gpu[01-10]" keeps its width
      if (!expand_host(h.substr(close + 1), prefix + n, out)) return false;
    }
  }
  return true;
}
std::optional<std::vector<std::string>> expand_hostlist(std::string_view s) {
  std::vector<std::string> out;
  for (std::string_view h : split_top(s))
    if (!expand_host(detail::trim(h), {}, out)) return std::nullopt;
  return out;
}

// One GRES item: "gpu:a100:4(S:0-1)", "gpu:4", "gpu", "gpu:a100:2(IDX:0,3)", "gpu:0(IDX:N/A)".
struct Gres {
  std::string name, type;
  std::uint64_t count = 1;
  std::optional<std::string_view> idx;  // the text after "IDX:" when given
};
std::optional<Gres> parse_gres(std::string_view item) {
  Gres g;
  std::string_view head = item;
  if (auto paren = item.find('('); paren != std::string_view::npos) {
    if (item.back() != ')') return std::nullopt;
    const std::string_view inside = item.substr(paren + 1, item.size() - paren - 2);
    if (inside.substr(0, 4) == "IDX:") g.idx = inside.substr(4);
    head = item.substr(0, paren);
  }
  std::vector<std::string_view> parts;
  for (std::size_t b = 0;;) {
    const auto e = head.find(':', b);
    parts.push_back(head.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  g.name = std::string(parts[0]);
  if (g.name.empty()) return std::nullopt;
  std::size_t n = parts.size();
  if (n > 1) {
    // The count may carry a K/M/G multiplier (gres.conf); a GPU count never does in practice.
    if (auto c = parse_uint(parts[n - 1])) {
      g.count = *c;
      --n;
    }
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (parts[i] == "no_consume") continue;
    if (!g.type.empty()) g.type += ':';
    g.type += parts[i];
  }
  return g;
}

// A TRES request ("gres:gpu:a100:4" in v0.0.38, "gres/gpu:a100=4" or "gres/gpu=4" later; several
// comma-separated): the GPU count and type, and the other GRES named.
struct TresGpus {
  std::uint64_t count = 0;
  std::string type;
  std::vector<std::string> others;
};
TresGpus parse_tres(const Rec& r, std::string_view field, std::string_view s) {
  TresGpus t;
  for (std::string_view item : split_top(s)) {
    item = detail::trim(item);
    std::string text;
    if (item.substr(0, 5) == "gres:" || item.substr(0, 5) == "gres/") text = std::string(item.substr(5));
    else text = std::string(item);
    if (auto eq = text.find('='); eq != std::string::npos) text[eq] = ':';
    auto g = parse_gres(text);
    if (!g) r.fail(field, fmt::format("{}: not a GRES request (expected gres:gpu[:type]:count)", detail::shown(item)));
    if (g->name != "gpu") {
      t.others.push_back(g->name);
      continue;
    }
    if (g->count > 1'000'000) r.fail(field, fmt::format("{}: {} GPUs is beyond any node", detail::shown(item), g->count), ErrorCode::kLimit);
    t.count += g->count;
    t.type = g->type;
  }
  return t;
}

// The GPU indices of the gpu items of a GRES list with indices ("gpu:a100:2(IDX:0,3)", sinfo's
// gres_used and squeue's gres_detail), each below `gpus`; items of other GRES and "IDX:N/A" add none.
std::vector<std::uint64_t> gres_gpu_indices(const Rec& r, std::string_view field, std::string_view text, std::size_t gpus) {
  std::vector<std::uint64_t> out;
  for (std::string_view item : split_top(text)) {
    auto g = parse_gres(item);
    if (!g) r.fail(field, fmt::format("{}: not a GRES (expected name[:type]:count(IDX:...))", detail::shown(item)));
    if (g->name != "gpu" || !g->idx || *g->idx == "N/A") continue;
    auto idx = expand_ranges(*g->idx, gpus);
    if (!idx) r.fail(field, fmt::format("{}: GPU indices not within the node's {} GPUs", detail::shown(item), gpus));
    for (std::uint64_t k : *idx)
      if (k >= gpus) r.fail(field, fmt::format("{}: GPU {} beyond the node's {} GPUs", detail::shown(item), k, gpus), ErrorCode::kInconsistent);
    out.insert(out.end(), idx->begin(), idx->end());
  }
  return out;
}

// ---- the reader ----

struct NodeFacts {
  std::size_t index = 0;
  std::vector<bool> gpu_busy;  // GPUs held by the running jobs read so far
  std::int64_t sinfo_used_gpus = 0;
  std::int64_t squeue_used_gpus = 0;
};

class Reader {
 public:
  explicit Reader(const Options& o) : opt_(o), registry_(o.registry ? *o.registry : GpuModelRegistry::builtin()) {}

  void read(std::span<const Source> sources) {
    std::vector<std::pair<json, const Source*>> docs;
    for (const Source& s : sources) {
      auto doc = detail::parse_json(s.text, s.name);
      if (!doc) throw ParseError{doc.error()};
      if (!doc->is_object()) throw ParseError{Error(fmt::format("{}: expected the JSON object of sinfo --json or squeue --json", s.name), ErrorCode::kParse)};
      check_meta(*doc, s.name);
      docs.emplace_back(std::move(*doc), &s);
    }
    for (auto& [doc, s] : docs)
      if (const json* nodes = member(doc, "nodes")) read_nodes(*nodes, s->name);
    if (in_.cluster.nodes().empty() && node_index_.empty())
      throw ParseError{Error("slurm: no nodes (give the output of sinfo --json, or scontrol show nodes --json)", ErrorCode::kMissingField, "nodes")};
    bool have_jobs = false;
    for (auto& [doc, s] : docs)
      if (const json* jobs = member(doc, "jobs")) {
        read_jobs(*jobs, s->name);
        have_jobs = true;
      }
    for (auto& [doc, s] : docs)
      if (!member(doc, "nodes") && !member(doc, "jobs"))
        throw ParseError{Error(fmt::format("{}: neither \"nodes\" nor \"jobs\" (expected sinfo --json, scontrol show nodes --json or squeue --json)", s->name), ErrorCode::kMissingField)};
    finish(have_jobs);
  }

  Input take() {
    in_.registry = std::move(registry_);
    return std::move(in_);
  }

 private:
  // meta.plugin.type ("openapi/v0.0.38") or meta.plugin.data_parser ("data_parser/v0.0.40").
  void check_meta(const json& doc, std::string_view source) {
    const Rec r{source, "meta"};
    const json* meta = member(doc, "meta");
    if (!meta || !meta->is_object()) r.fail("meta", "missing (Slurm's JSON names its schema version in meta.plugin)", ErrorCode::kMissingField);
    const json* plugin = member(*meta, "plugin");
    if (!plugin || !plugin->is_object()) r.fail("meta.plugin", "missing (Slurm's JSON names its schema version there)", ErrorCode::kMissingField);
    const Rec p{source, "meta.plugin"};
    std::string version = get_string(p, *plugin, "data_parser");
    if (version.empty()) version = get_string(p, *plugin, "type");
    const auto slash = version.rfind('/');
    const std::string v = slash == std::string::npos ? version : version.substr(slash + 1);
    static constexpr std::string_view kKnown[] = {"v0.0.37", "v0.0.38", "v0.0.39", "v0.0.40", "v0.0.41"};
    if (std::find(std::begin(kKnown), std::end(kKnown), v) == std::end(kKnown))
      r.fail("meta.plugin", fmt::format("schema {} is not one this reader knows (v0.0.37 to v0.0.41: Slurm 21.08 to 24.05)", detail::shown(version)),
             ErrorCode::kUnknownName);
    if (!in_.version.empty() && in_.version != v)
      r.fail("meta.plugin", fmt::format("schema {} beside {} in another input (dump them from one Slurm)", v, in_.version), ErrorCode::kInconsistent);
    in_.version = v;
    if (const json* errors = member(doc, "errors"); errors && errors->is_array() && !errors->empty()) {
      const json& e = (*errors)[0];
      std::string text = e.is_object() ? get_string(r, e, "error") : std::string();
      if (text.empty() && e.is_object()) text = get_string(r, e, "description");
      Rec{source, "errors[0]"}.fail("error", fmt::format("Slurm reported an error: {}", detail::shown(text.empty() ? e.dump() : text)), ErrorCode::kState);
    }
  }

  // A GRES type as a GPU model: the registry's row ("a100" is an alias of A100-SXM4-40GB; AutoDetect's
  // "nvidia_a100-sxm4-80gb" is A100-SXM4-80GB), else a model of its own named by the type (memory
  // unknown): Slurm's types are the site's names, and a typed request matches only its type.
  std::string model_for(const Rec& r, std::string_view field, std::string_view type) {
    std::string name = type.empty() ? std::string("gpu") : std::string(type);
    std::string key = name;
    if (key.rfind("nvidia_", 0) == 0) key.erase(0, 7);
    std::replace(key.begin(), key.end(), '_', '-');
    if (auto id = registry_.find(key)) return registry_.model(*id).name;
    if (auto id = registry_.find(name)) return registry_.model(*id).name;
    if (auto s = detail::check_name(name, field); !s) r.fail(field, s.error().message);
    auto added = registry_.add(GpuModel{name, {}, 0, false, "Slurm GRES type"});
    if (!added) r.fail(field, added.error().message, added.error().code);
    return name;
  }

  void read_nodes(const json& nodes, std::string_view source) {
    if (!nodes.is_array()) Rec{source, "nodes"}.fail("nodes", fmt::format("expected a list, got {}", detail::shown(nodes)));
    for (std::size_t i = 0; i < nodes.size(); ++i) read_node(nodes[i], source, i);
  }

  void read_node(const json& n, std::string_view source, std::size_t i) {
    Rec r{source, fmt::format("nodes[{}]", i)};
    if (!n.is_object()) r.fail("", fmt::format("expected an object, got {}", detail::shown(n)));
    NodeSpec spec;
    spec.name = get_string(r, n, "name");
    if (spec.name.empty()) r.fail("name", "missing", ErrorCode::kMissingField);
    if (auto s = detail::check_name(spec.name, "name"); !s) r.fail("name", s.error().message);
    r.what = fmt::format("nodes[{}] (node {})", i, detail::shown_key(spec.name));
    if (node_index_.count(spec.name)) r.fail("name", fmt::format("node {} listed twice", detail::shown(spec.name)), ErrorCode::kDuplicate);
    const std::int64_t cpus = get_int(r, n, "cpus", -1);
    if (cpus < 0) r.fail("cpus", "missing", ErrorCode::kMissingField);
    if (cpus > 1'000'000) r.fail("cpus", fmt::format("{} CPUs is beyond any node", cpus), ErrorCode::kLimit);
    spec.cpu = cpus * 1000;
    const std::int64_t mem = get_int(r, n, "real_memory");
    if (mem > (std::int64_t{1} << 40)) r.fail("real_memory", fmt::format("{} MiB is beyond any node", mem), ErrorCode::kLimit);
    spec.memory = mem * 1024 * 1024;
    NodeFacts facts;
    facts.index = in_.cluster.nodes().size();
    read_node_gres(r, n, spec, facts);
    read_node_state(r, n, spec);
    std::vector<std::string> features = get_list(r, n, "active_features");
    if (!member(n, "active_features")) features = get_list(r, n, "features");
    for (const std::string& f : features) add_label(r, "active_features", spec, std::string(kFeatureLabel) + f);
    for (const std::string& p : get_list(r, n, "partitions")) add_label(r, "partitions", spec, std::string(kPartitionLabel) + p);
    // Without squeue's jobs the node's own counts say what is in use (finish() decides).
    spec.cpu_used = std::min(spec.cpu, get_int(r, n, "alloc_cpus") * 1000);
    spec.memory_used = std::min(spec.memory, get_int(r, n, "alloc_memory") * 1024 * 1024);
    node_index_.emplace(spec.name, std::move(facts));
    in_.cluster.nodes().push_back(std::move(spec));
  }

  void add_label(const Rec& r, std::string_view field, NodeSpec& spec, std::string key) {
    if (auto s = detail::check_name(key, field); !s) r.fail(field, s.error().message);
    spec.labels.emplace_back(std::move(key), "true");
  }

  // "gres": "gpu:a100:8(S:0-1)" (several types comma-separated; GPUs indexed in this order, as
  // gres.conf lists them); "gres_used": the same with (IDX:...) of the GPUs in use.
  void read_node_gres(const Rec& r, const json& n, NodeSpec& spec, NodeFacts& facts) {
    const std::string gres = get_string(r, n, "gres"), used = get_string(r, n, "gres_used");  // split_top keeps views
    for (std::string_view item : split_top(gres)) {
      if (item == "(null)") continue;
      auto g = parse_gres(item);
      if (!g) r.fail("gres", fmt::format("{}: not a GRES (expected name[:type]:count)", detail::shown(item)));
      if (g->name != "gpu") continue;  // shard, mps, ...: a job that asks for them is warned about
      if (spec.gpus.size() + g->count > 4096) r.fail("gres", fmt::format("{}: more GPUs than any node has", detail::shown(item)), ErrorCode::kLimit);
      total_gpus_ += g->count;
      if (total_gpus_ > kMaxClusterGpus) r.fail("gres", fmt::format("the nodes have more than {} GPUs together", kMaxClusterGpus), ErrorCode::kLimit);
      const std::string model = model_for(r, "gres", g->type);
      for (std::uint64_t k = 0; k < g->count; ++k) spec.gpus.push_back(GpuSpec{model});
    }
    facts.gpu_busy.assign(spec.gpus.size(), false);
    for (std::uint64_t k : gres_gpu_indices(r, "gres_used", used, spec.gpus.size())) {
      spec.gpus[k].used_milli = kMilliPerGpu;
      ++facts.sinfo_used_gpus;
    }
  }

  // v0.0.38: "state" a lower-case base state, "state_flags" a list; v0.0.39+: "state" a list of both.
  void read_node_state(const Rec& r, const json& n, NodeSpec& spec) {
    std::vector<std::string> states = get_list(r, n, "state");
    for (const std::string& f : get_list(r, n, "state_flags")) states.push_back(f);
    for (std::string s : states) {
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      // Base states (slurm.h NODE_STATE_*) and flags (NODE_STATE_DRAIN ...): what Slurm starts jobs on.
      if (s == "IDLE" || s == "ALLOCATED" || s == "MIXED" || s == "COMPLETING" || s == "PLANNED" || s == "CLOUD" ||
          s == "POWERED_DOWN" || s == "POWER_DOWN" || s == "POWERING_UP" || s == "POWER_UP" || s == "RESERVED" ||
          s == "DYNAMIC_NORM" || s == "DYNAMIC_FUTURE" || s == "BLOCKED")
        continue;  // powered-down nodes are resumed by Slurm's power saving; RESERVED: see docs/slurm.md
      if (s == "DOWN" || s == "ERROR" || s == "FUTURE" || s == "NOT_RESPONDING" || s == "FAIL" || s == "FAILING" ||
          s == "INVALID" || s == "INVALID_REG" || s == "UNKNOWN" || s == "POWERING_DOWN" || s == "POWER_DRAIN") {
        spec.healthy = false;
        spec.schedulable = false;
      } else if (s == "DRAIN" || s == "DRAINING" || s == "DRAINED" || s == "MAINTENANCE" || s == "REBOOT_REQUESTED" ||
                 s == "REBOOT_ISSUED" || s == "RESUME" || s == "UNDRAIN") {
        if (s != "RESUME" && s != "UNDRAIN") spec.schedulable = false;  // running jobs go on; nothing new starts
      } else {
        r.fail("state", fmt::format("unknown node state {}", detail::shown(s)), ErrorCode::kUnknownName);
      }
    }
  }

  void read_jobs(const json& jobs, std::string_view source) {
    if (!jobs.is_array()) Rec{source, "jobs"}.fail("jobs", fmt::format("expected a list, got {}", detail::shown(jobs)));
    for (std::size_t i = 0; i < jobs.size(); ++i) read_job(jobs[i], source, i);
  }

  struct JobRecord {
    Rec r;
    std::uint64_t job_id = 0;
    std::string name, account, partition, reason;
    std::uint64_t priority = 0;
    std::int64_t submit = 0, start = 0, end = 0;
    std::int64_t time_limit = -1;  // seconds
  };

  void read_job(const json& j, std::string_view source, std::size_t i) {
    JobRecord job;
    job.r = Rec{source, fmt::format("jobs[{}]", i)};
    Rec& r = job.r;
    if (!j.is_object()) r.fail("", fmt::format("expected an object, got {}", detail::shown(j)));
    const Number id = get_number(r, j, "job_id");
    if (!id.set || id.infinite) r.fail("job_id", "missing", ErrorCode::kMissingField);
    job.job_id = id.value;
    r.what = fmt::format("jobs[{}] (job {})", i, job.job_id);
    std::vector<std::string> states = get_list(r, j, "job_state");
    if (states.empty()) r.fail("job_state", "missing", ErrorCode::kMissingField);
    const std::string& state = states[0];
    job.name = get_string(r, j, "name");
    job.account = get_string(r, j, "account");
    job.partition = get_string(r, j, "partition");
    job.reason = get_string(r, j, "state_reason");
    job.priority = get_number(r, j, "priority").value;
    if (job.priority > kInfinite) r.fail("priority", fmt::format("{} is beyond Slurm's 32-bit priorities", job.priority), ErrorCode::kOverflow);
    job.submit = get_int(r, j, "submit_time");
    job.start = get_int(r, j, "start_time");
    job.end = get_int(r, j, "end_time");
    const Number limit = get_number(r, j, "time_limit");
    if (limit.set && !limit.infinite && limit.value != kNoVal && limit.value != kInfinite) {
      if (limit.value > static_cast<std::uint64_t>(INT64_MAX / 120)) r.fail("time_limit", fmt::format("{} minutes is beyond the representable range", limit.value), ErrorCode::kOverflow);
      job.time_limit = static_cast<std::int64_t>(limit.value) * 60;
    }
    // States (slurm.h JOB_*; v0.0.39+ lists flags after the base state).
    if (state == "RUNNING" || state == "COMPLETING" || state == "CONFIGURING" || state == "SUSPENDED" ||
        state == "STAGE_OUT" || state == "SIGNALING" || state == "RESIZING") {
      read_running(j, job);
    } else if (state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_FED" || state == "REQUEUE_HOLD" ||
               state == "RESV_DEL_HOLD" || state == "SPECIAL_EXIT") {
      read_pending(j, job, state);
    } else if (state == "COMPLETED" || state == "CANCELLED" || state == "FAILED" || state == "TIMEOUT" || state == "NODE_FAIL" ||
               state == "PREEMPTED" || state == "BOOT_FAIL" || state == "DEADLINE" || state == "OUT_OF_MEMORY" ||
               state == "REVOKED") {
      return;  // ended: holds nothing
    } else {
      r.fail("job_state", fmt::format("unknown job state {}", detail::shown(state)), ErrorCode::kUnknownName);
    }
  }

  void warn(const Rec& r, std::string_view field, std::string_view message) {
    in_.warnings.push_back(detail::tidy_message(fmt::format("{}: {}: {}: {}", r.source, r.what, field, message)));
  }

  // The GPUs one node of the job takes: --gres / --gpus-per-node, else --gpus over its nodes, else
  // --gpus-per-task times its tasks per node.
  TresGpus gpus_per_node(const json& j, JobRecord& job, std::int64_t nodes) {
    const Rec& r = job.r;
    TresGpus t = parse_tres(r, "tres_per_node", get_string(r, j, "tres_per_node"));
    std::string_view field = "tres_per_node";
    if (t.count == 0) {
      TresGpus per_job = parse_tres(r, "tres_per_job", get_string(r, j, "tres_per_job"));
      if (per_job.count > 0) {
        field = "tres_per_job";
        if (per_job.count % static_cast<std::uint64_t>(nodes) != 0)
          warn(r, field, fmt::format("{} GPUs over {} nodes: planned as {} per node (Slurm may spread them unevenly)", per_job.count, nodes,
                                      (per_job.count + nodes - 1) / nodes));
        per_job.count = (per_job.count + nodes - 1) / nodes;
        t = std::move(per_job);
      }
    }
    if (t.count == 0) {
      TresGpus per_task = parse_tres(r, "tres_per_task", get_string(r, j, "tres_per_task"));
      if (per_task.count > 0) {
        const std::int64_t tasks = std::max<std::int64_t>(1, get_int(r, j, "tasks", 1));
        per_task.count *= static_cast<std::uint64_t>((tasks + nodes - 1) / nodes);
        t = std::move(per_task);
      }
    }
    if (!get_string(r, j, "tres_per_socket").empty())
      warn(r, "tres_per_socket", "GPUs per socket are not modelled (the node's GPUs are one pool)");
    for (const std::string& other : t.others) warn(r, field, fmt::format("GRES {} is not modelled (only gpu)", detail::shown(other)));
    return t;
  }

  void read_pending(const json& j, JobRecord& job, const std::string& state) {
    const Rec& r = job.r;
    const bool held = state == "REQUEUE_HOLD" || state == "RESV_DEL_HOLD" || state == "SPECIAL_EXIT" ||
                      job.reason == "JobHeldUser" || job.reason == "JobHeldAdmin";
    // Reasons Slurm gives a job it would start when resources allow (slurm.h enum job_state_reason):
    // planned. The rest (a dependency, a begin time, association/QOS limits, a down partition, ...)
    // keep it from starting whatever the resources: skipped, with the reason.
    static const std::set<std::string, std::less<>> kPlannable = {
        "None", "Resources", "Priority", "ReqNodeNotAvail", "NodeDown", "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions"};
    std::vector<std::string> ids = array_ids(j, job);
    if (held && opt_.held == Held::kSkip) {
      for (std::string& id : ids) in_.skipped.push_back({std::move(id), job.reason.empty() ? state : job.reason});
      return;
    }
    if (!held && !kPlannable.count(job.reason)) {
      for (std::string& id : ids) in_.skipped.push_back({std::move(id), job.reason.empty() ? state : job.reason});
      return;
    }
    Job model = pending_model(j, job);
    for (std::string& id : ids) {
      if (in_.jobs.size() >= kMaxJobs) r.fail("array_task_string", fmt::format("more than {} pending jobs and array tasks", kMaxJobs), ErrorCode::kLimit);
      PendingInfo info;
      info.id = id;
      info.job_id = job.job_id;
      info.name = job.name;
      info.partition = job.partition;
      info.time_limit = job.time_limit;
      info.slurm_start = job.start;
      info.reason = job.reason;
      info.slurm_priority = job.priority;
      model.job_name = std::move(id);
      in_.jobs.push_back(model);
      in_.pending.push_back(std::move(info));
    }
  }

  // A pending record's job ids: "17", or one per task of a pending array ("5_0", "5_1", ...).
  std::vector<std::string> array_ids(const json& j, const JobRecord& job) {
    const Rec& r = job.r;
    const std::string tasks = get_string(r, j, "array_task_string");
    const Number task = get_number(r, j, "array_task_id");
    const std::uint64_t array_job = get_number(r, j, "array_job_id").value;
    if (tasks.empty()) {
      if (array_job != 0 && task.set && !task.infinite && task.value != kNoVal) return {fmt::format("{}_{}", array_job, task.value)};
      return {std::to_string(job.job_id)};
    }
    std::string_view range = tasks;
    if (auto pct = range.find('%'); pct != std::string_view::npos) {
      warn(r, "array_task_string", fmt::format("the throttle {} (tasks running at once) is not modelled", detail::shown(range.substr(pct))));
      range = range.substr(0, pct);
    }
    if (get_int(r, j, "array_max_tasks") > 0 && range.size() == tasks.size())
      warn(r, "array_max_tasks", "the array's throttle (tasks running at once) is not modelled");
    auto list = expand_ranges(range, kMaxJobs);
    if (!list) r.fail("array_task_string", fmt::format("{}: not a task list (e.g. 0-15, 1,3,5-7 or 0-99:2) within {} tasks", detail::shown(tasks), kMaxJobs));
    std::vector<std::string> ids;
    const std::uint64_t base = array_job != 0 ? array_job : job.job_id;
    for (std::uint64_t k : *list) ids.push_back(fmt::format("{}_{}", base, k));
    return ids;
  }

  Job pending_model(const json& j, JobRecord& job) {
    const Rec& r = job.r;
    std::int64_t nodes = std::max<std::int64_t>(1, get_int(r, j, "node_count", 1));
    if (nodes > kMaxJobTasks) r.fail("node_count", fmt::format("{} nodes is beyond the job model's bound", nodes), ErrorCode::kLimit);
    const std::int64_t max_nodes = get_int(r, j, "max_nodes");
    if (max_nodes > nodes) warn(r, "max_nodes", fmt::format("a node range {}-{}: planned on {} nodes", nodes, max_nodes, nodes));
    Job m;
    m.queue_name = job.account;
    m.job_submit_time = job.submit;
    TaskGroupSpec g;
    g.name = "node";
    g.replicas = static_cast<std::int32_t>(nodes);
    const std::int64_t cpus = std::max<std::int64_t>(1, get_int(r, j, "cpus", 1));
    g.shape.cpu = (cpus + nodes - 1) / nodes * 1000;
    g.shape.memory = job_memory_mib(j, r, g.shape.cpu / 1000) * 1024 * 1024;
    const TresGpus t = gpus_per_node(j, job, nodes);
    g.shape.gpus = static_cast<GpuCount>(t.count);
    g.shape.gpu_milli = t.count > 0 ? kMilliPerGpu : 0;
    if (t.count > 0 && !t.type.empty()) g.allowed_models.push_back(model_for(r, "tres_per_node", t.type));
    std::vector<std::string> parts = get_list(r, j, "partition");
    job.partition = parts.empty() ? std::string() : parts[0];
    if (parts.size() > 1)
      warn(r, "partition", fmt::format("submitted to {} partitions: planned in the first, {}", parts.size(), detail::shown(parts[0])));
    if (!job.partition.empty()) g.selector.emplace_back(std::string(kPartitionLabel) + job.partition, "true");
    read_constraint(r, get_string(r, j, "features"), g);
    for (const char* f : {"required_nodes", "excluded_nodes", "licenses", "dependency", "prefer"})
      if (!get_string(r, j, f).empty()) warn(r, f, fmt::format("{} is not modelled", detail::shown(get_string(r, j, f))));
    if (const json* c = member(j, "contiguous"); c && c->is_boolean() && c->get<bool>()) warn(r, "contiguous", "contiguous nodes are not modelled");
    if (get_int(r, j, "het_job_id") != 0)
      warn(r, "het_job_id", "a heterogeneous job's components are planned as separate jobs, not all at once");
    const std::string shared = get_string(r, j, "shared");
    if (shared == "none" || shared == "exclusive")
      warn(r, "shared", "exclusive nodes are not modelled: the job takes what it asks for and leaves the rest shared");
    m.groups.push_back(std::move(g));
    if (nodes > 1) m.job_anti_affinity.push_back({0, 0, std::string(kNodeLevel)});  // a Slurm job's nodes are distinct
    m.job_priority = 0;  // set in finish() (ranked when beyond int32)
    return m;
  }

  std::int64_t job_memory_mib(const json& j, const Rec& r, std::int64_t cpus_per_node) {
    const std::int64_t per_node = get_int(r, j, "memory_per_node");
    if (per_node > 0) return std::min<std::int64_t>(per_node, std::int64_t{1} << 40);
    const std::int64_t per_cpu = get_int(r, j, "memory_per_cpu");
    if (per_cpu > 0) return std::min<std::int64_t>(per_cpu, std::int64_t{1} << 30) * cpus_per_node;
    return 0;
  }

  // --constraint: features joined by '&' (or ',') become selectors; an OR, a count or brackets is
  // reported (the selector model is a conjunction).
  void read_constraint(const Rec& r, std::string_view text, TaskGroupSpec& g) {
    if (text.empty()) return;
    if (text.find_first_of("|[]*!()") != std::string_view::npos) {
      warn(r, "features", fmt::format("the constraint {} is not modelled (only features joined by &)", detail::shown(text)));
      return;
    }
    std::size_t b = 0;
    while (b <= text.size()) {
      std::size_t e = text.find_first_of("&,", b);
      if (e == std::string_view::npos) e = text.size();
      std::string_view f = detail::trim(text.substr(b, e - b));
      if (!f.empty()) {
        std::string key = std::string(kFeatureLabel) + std::string(f);
        if (auto s = detail::check_name(key, "features"); !s) r.fail("features", s.error().message);
        g.selector.emplace_back(std::move(key), "true");
      }
      b = e + 1;
    }
  }

  void read_running(const json& j, JobRecord& job) {
    const Rec& r = job.r;
    RunningInfo run;
    run.id = array_ids(j, job).front();
    run.name = job.name;
    run.account = job.account;
    run.partition = job.partition;
    run.slurm_priority = job.priority;
    run.start_time = job.start;
    run.end_time = job.time_limit < 0 ? -1 : (job.end > 0 ? job.end : job.start + job.time_limit);
    std::vector<std::string> nodes = running_nodes(j, r);
    std::vector<std::string> detail_list = get_list_raw(r, j, "gres_detail");
    const std::int64_t cpus = std::max<std::int64_t>(1, get_int(r, j, "cpus", 1));
    const std::int64_t n = static_cast<std::int64_t>(nodes.size());
    std::size_t unknown = 0;
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      auto it = node_index_.find(nodes[k]);
      if (it == node_index_.end()) {
        ++unknown;
        continue;
      }
      RunningInfo::Task task;
      task.node = nodes[k];
      task.cpu = (cpus / n + (static_cast<std::int64_t>(k) < cpus % n ? 1 : 0)) * 1000;
      task.memory = job_memory_mib(j, r, task.cpu / 1000) * 1024 * 1024;
      if (k < detail_list.size()) task.gpus = gpu_indices(r, k, detail_list[k], it->second);
      if (!task.gpus.empty()) task.gpu_model = in_.cluster.nodes()[it->second.index].gpus[static_cast<std::size_t>(task.gpus[0])].model;
      run.tasks.push_back(std::move(task));
    }
    if (unknown > 0)
      warn(r, "nodes", fmt::format("{} of its {} nodes are not in the node input: what it holds there is not counted", unknown, nodes.size()));
    in_.running.push_back(std::move(run));
  }

  // gres_detail items contain commas inside "(IDX:0,2)": an array of strings in every version.
  std::vector<std::string> get_list_raw(const Rec& r, const json& j, std::string_view key) {
    std::vector<std::string> out;
    const json* v = member(j, key);
    if (!v) return out;
    if (!v->is_array()) r.fail(key, fmt::format("expected a list of strings, got {}", detail::shown(*v)));
    for (const json& s : *v) {
      if (!s.is_string()) r.fail(key, fmt::format("expected strings, got {}", detail::shown(s)));
      out.push_back(s.get<std::string>());
    }
    return out;
  }

  // The nodes a running job holds, in Slurm's order (gres_detail[k] is about the k-th): its "nodes"
  // hostlist expanded (Slurm writes it in node-table order, the order of gres_detail and of
  // job_resources' allocated nodes).
  std::vector<std::string> running_nodes(const json& j, const Rec& r) {
    const std::string list = get_string(r, j, "nodes");
    auto expanded = expand_hostlist(list);
    if (!expanded) r.fail("nodes", fmt::format("{}: not a Slurm hostlist", detail::shown(list)));
    if (expanded->empty()) r.fail("nodes", "a running job without nodes", ErrorCode::kMissingField);
    for (const std::string& name : *expanded)
      if (auto s = detail::check_name(name, "nodes"); !s) r.fail("nodes", s.error().message);
    return std::move(*expanded);
  }

  // The GPUs a running job holds on its k-th node (gres_detail[k]), marked busy there.
  std::vector<std::int32_t> gpu_indices(const Rec& r, std::size_t k, std::string_view item, NodeFacts& facts) {
    const std::string field = fmt::format("gres_detail[{}]", k);
    std::vector<std::int32_t> out;
    for (std::uint64_t x : gres_gpu_indices(r, field, item, facts.gpu_busy.size())) {
      if (facts.gpu_busy[x])
        r.fail(field, fmt::format("GPU {} is held by another running job too (dumps from different moments?)", x), ErrorCode::kInconsistent);
      facts.gpu_busy[x] = true;
      ++facts.squeue_used_gpus;
      out.push_back(static_cast<std::int32_t>(x));
    }
    return out;
  }

  // Priorities into the job model's int32 (ranked when beyond it), the pending jobs in Slurm's
  // order, and the nodes' usage: the running jobs' when squeue was read, else sinfo's counts.
  void finish(bool have_jobs) {
    std::vector<std::uint64_t> all;
    for (const PendingInfo& p : in_.pending) all.push_back(p.slurm_priority);
    for (const RunningInfo& r : in_.running) all.push_back(r.slurm_priority);
    in_.priority_ranked = std::any_of(all.begin(), all.end(), [](std::uint64_t p) { return p > static_cast<std::uint64_t>(INT32_MAX); });
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    auto model_priority = [&](std::uint64_t p) {
      if (!in_.priority_ranked) return static_cast<std::int32_t>(p);
      return static_cast<std::int32_t>(std::lower_bound(all.begin(), all.end(), p) - all.begin());
    };
    for (std::size_t j = 0; j < in_.jobs.size(); ++j) in_.jobs[j].job_priority = model_priority(in_.pending[j].slurm_priority);
    for (RunningInfo& r : in_.running) r.priority = model_priority(r.slurm_priority);
    sort_pending();
    if (have_jobs) apply_running_usage();
  }

  void sort_pending() {
    std::vector<std::size_t> order(in_.jobs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const PendingInfo& x = in_.pending[a];
      const PendingInfo& y = in_.pending[b];
      if (x.slurm_priority != y.slurm_priority) return x.slurm_priority > y.slurm_priority;
      return x.job_id < y.job_id;
    });
    std::vector<Job> jobs;
    std::vector<PendingInfo> pending;
    for (std::size_t i : order) {
      jobs.push_back(std::move(in_.jobs[i]));
      pending.push_back(std::move(in_.pending[i]));
    }
    in_.jobs = std::move(jobs);
    in_.pending = std::move(pending);
  }

  // squeue was read: the nodes' usage is its running jobs' (taken off when subtract_running), not
  // sinfo's counts, which were dumped at another moment; a difference is reported.
  void apply_running_usage() {
    for (NodeSpec& node : in_.cluster.nodes()) {
      node.cpu_used = 0;
      node.memory_used = 0;
      for (GpuSpec& g : node.gpus) g.used_milli = 0;
    }
    for (const RunningInfo& run : in_.running)
      for (const RunningInfo::Task& t : run.tasks) {
        if (!opt_.subtract_running) break;
        NodeSpec& node = in_.cluster.nodes()[node_index_.at(t.node).index];
        node.cpu_used = std::min(node.cpu, node.cpu_used + t.cpu);
        node.memory_used = std::min(node.memory, node.memory_used + t.memory);
        for (std::int32_t g : t.gpus) node.gpus[static_cast<std::size_t>(g)].used_milli = kMilliPerGpu;
      }
    for (const NodeSpec& node : in_.cluster.nodes()) {
      const NodeFacts& f = node_index_.at(node.name);
      if (f.sinfo_used_gpus != f.squeue_used_gpus)
        in_.warnings.push_back(detail::tidy_message(fmt::format(
            "node {}: gres_used: sinfo counts {} GPUs in use, squeue's running jobs hold {} (dumped at different moments?): the jobs' count is used",
            node.name, f.sinfo_used_gpus, f.squeue_used_gpus)));
    }
  }

  const Options& opt_;
  GpuModelRegistry registry_;
  Input in_;
  std::map<std::string, NodeFacts, std::less<>> node_index_;
  std::uint64_t total_gpus_ = 0;
};

}  // namespace

Result<Input> read(std::span<const Source> sources, const Options& options) {
  try {
    Reader reader(options);
    reader.read(sources);
    Input in = reader.take();
    return in;
  } catch (const ParseError& e) {
    return e.error;
  } catch (const std::bad_alloc&) {
    return Error("slurm: out of memory", ErrorCode::kLimit);
  }
}

JobsDocument jobs_document(Input& input) {
  JobsDocument doc;
  doc.explicit_priority.assign(input.jobs.size(), true);
  doc.cycle.resize(input.jobs.size());
  for (std::size_t j = 0; j < input.jobs.size(); ++j) doc.cycle[j].runtime_estimate = runtime_estimate(input.pending[j]);
  doc.jobs = std::move(input.jobs);
  return doc;
}

Job running_job(const RunningInfo& run) {
  Job job;
  job.job_name = run.id;
  job.queue_name = run.account;
  job.job_priority = run.priority;
  job.job_submit_time = run.start_time;
  for (std::size_t k = 0; k < run.tasks.size(); ++k) {
    const RunningInfo::Task& t = run.tasks[k];
    TaskGroupSpec g;
    g.name = running_group_name(k);
    g.shape.cpu = t.cpu;
    g.shape.memory = t.memory;
    g.shape.gpus = static_cast<GpuCount>(t.gpus.size());
    g.shape.gpu_milli = t.gpus.empty() ? 0 : kMilliPerGpu;
    job.groups.push_back(std::move(g));
  }
  return job;
}

std::string slurm_time(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  if (!gmtime_r(&tt, &tm)) return std::to_string(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace gpusched::io::slurm
