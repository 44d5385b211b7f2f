// Kubernetes objects into the one cluster and job model (gpusched/io/k8s.hpp, docs/kubernetes.md).
#include "gpusched/io/k8s.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <cstdint>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <memory>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpusched/core/mig_profiles.hpp"
#include "io/cluster_json_detail.hpp"
#include "io/json_input.hpp"
#include "io/k8s/k8s_detail.hpp"

namespace gpusched::io::k8s {
namespace {

using json = nlohmann::json;

struct ParseError {
  Error error;
};

constexpr std::int64_t kMaxPodsPerCluster = 150'000;

// One object of the input: where it came from and who it is, for messages.
struct Obj {
  const json* v = nullptr;
  std::string source;
  std::string kind;
  std::string group;  // API group ("" for core, "kueue.x-k8s.io", ...)
  std::string ns;
  std::string name;
  std::string_view lazy;  // a Pod of a JSON PodList read when the pods are (v is null until then)

  // Escaped: a name is checked after it is read, and its message must not print a NUL (which cut it)
  // or a newline raw.
  std::string id() const {
    return io::detail::tidy_message(ns.empty() ? fmt::format("{} {}", kind, name) : fmt::format("{} {}/{}", kind, ns, name));
  }
  [[noreturn]] void fail(std::string_view field, std::string_view message, ErrorCode code = ErrorCode::kInvalidValue) const {
    throw ParseError{Error{fmt::format("{}: {}: {}: {}", source, id(), field, message), code, std::string(field)}};
  }
};

// A field's path for messages, made only when a message needs it: "<a><b>[<index>]<c>" (the reader
// checks every field of every pod, and its path is text only on error; formatting it for each check
// was a tenth of reading a 100,000-pod PodList). Holds views: pass it, do not keep it.
struct Field {
  std::string_view a, b;
  std::int64_t index = -1;
  std::string_view c;
  Field(const char* s) : a(s) {}  // NOLINT: implicit on purpose, as the string_view it replaces
  Field(std::string_view s) : a(s) {}
  Field(const std::string& s) : a(s) {}
  Field(std::string_view a_, std::string_view b_, std::int64_t i = -1, std::string_view c_ = {}) : a(a_), b(b_), index(i), c(c_) {}
  std::string str() const {
    std::string out;
    out.reserve(a.size() + b.size() + c.size() + (index >= 0 ? 8 : 0));
    out += a;
    out += b;
    if (index >= 0) out += fmt::format("[{}]", index);
    out += c;
    return out;
  }
};

std::string shown(const json& v) { return io::detail::shown(v, 60); }

const json* child(const json* v, std::string_view key) {
  if (!v || !v->is_object()) return nullptr;
  auto it = v->find(key);
  return it == v->end() || it->is_null() ? nullptr : &*it;
}
const json* path(const json* v, std::initializer_list<std::string_view> keys) {
  for (auto k : keys) v = child(v, k);
  return v;
}

std::string get_string(const Obj& o, const json* v, const Field& field, bool required = false) {
  if (!v) {
    if (required) o.fail(field.str(), "missing", ErrorCode::kMissingField);
    return {};
  }
  if (!v->is_string()) o.fail(field.str(), fmt::format("expected a string, got {}", shown(*v)));
  return v->get_ref<const std::string&>();
}

const json& get_object(const Obj& o, const json* v, const Field& field) {
  if (!v->is_object()) o.fail(field.str(), fmt::format("expected an object, got {}", shown(*v)));
  return *v;
}
const json& get_array(const Obj& o, const json* v, const Field& field) {
  if (!v->is_array()) o.fail(field.str(), fmt::format("expected a list, got {}", shown(*v)));
  return *v;
}

std::int64_t get_int(const Obj& o, const json* v, const Field& field_path, std::int64_t lo, std::int64_t hi) {
  const std::string field = field_path.str();
  std::int64_t x = 0;
  if (v->is_number_integer() && !(v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi))) {
    x = v->get<std::int64_t>();
  } else if (v->is_string()) {
    auto q = parse_quantity(v->get<std::string>(), QuantityUnit::kCount);
    if (!q) o.fail(field, q.error().message);
    x = *q;
  } else {
    o.fail(field, fmt::format("expected an integer, got {}", shown(*v)));
  }
  if (x < lo || x > hi) o.fail(field, fmt::format("expected an integer in {}..{}, got {}", lo, hi, x));
  return x;
}

std::int64_t get_quantity(const Obj& o, const json& v, const Field& field_path, QuantityUnit unit, std::int64_t scale) {
  auto r = io::detail::read_quantity(v, {}, unit, scale);
  if (!r) {
    // Read again with the field's path, for the message (read_quantity names it).
    const std::string field = field_path.str();
    r = io::detail::read_quantity(v, field, unit, scale);
    throw ParseError{Error{fmt::format("{}: {}: {}", o.source, o.id(), r.error().message), r.error().code, field}};
  }
  return *r;
}

template <class MakeField>
  requires std::is_invocable_r_v<std::string, MakeField&>
std::int64_t get_quantity(const Obj& o, const json& v, MakeField&& make_field, QuantityUnit unit, std::int64_t scale) {
  auto r = io::detail::read_quantity(v, {}, unit, scale);
  if (!r) {
    const std::string field = make_field();
    r = io::detail::read_quantity(v, field, unit, scale);
    throw ParseError{Error{fmt::format("{}: {}: {}", o.source, o.id(), r.error().message), r.error().code, field}};
  }
  return *r;
}

std::vector<std::pair<std::string, std::string>> get_string_map(const Obj& o, const json* v, const Field& field) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!v) return out;
  get_object(o, v, field);
  out.reserve(v->size());
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    const json& value = *it;
    // The field's name is formatted only for a message: this runs for every label of every pod.
    auto f = [&] { return fmt::format("{}[\"{}\"]", field.str(), key); };
    if (!value.is_string()) o.fail(f(), fmt::format("expected a string, got {}", shown(value)));
    if (io::detail::first_control_character(key) >= 0) o.fail(f(), io::detail::check_name(key, f()).error().message);
    out.emplace_back(key, value.get_ref<const std::string&>());
  }
  return out;
}

const std::string* find_label(const std::vector<std::pair<std::string, std::string>>& labels, std::string_view key) {
  for (const auto& [k, v] : labels)
    if (k == key) return &v;
  return nullptr;
}

// metadata.creationTimestamp (RFC 3339, "2024-05-01T10:00:00Z") in seconds since the epoch; 0 when
// absent. Days from the civil date by Howard Hinnant's days_from_civil.
std::int64_t parse_timestamp(const Obj& o, const json* v, const Field& field = "metadata.creationTimestamp") {
  if (!v) return 0;
  const std::string s = get_string(o, v, field);
  // "YYYY-MM-DDTHH:MM:SS" then a zone ("Z" or an offset, which Kubernetes never writes) or
  // fractional seconds; read by position (this runs for every pod).
  auto digits = [&](std::size_t at, std::size_t n) {
    int x = 0;
    for (std::size_t k = at; k < at + n; ++k) {
      if (k >= s.size() || s[k] < '0' || s[k] > '9') return -1;
      x = x * 10 + (s[k] - '0');
    }
    return x;
  };
  int y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2), se = digits(17, 2);
  const auto bad = [&] {
    o.fail(field.str(), fmt::format("expected an RFC 3339 time like \"2024-05-01T10:00:00Z\", got {}", shown(*v)));
  };
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
      s[16] != ':' || y < 0 || mo < 1 || mo > 12 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60)
    bad();
  // The day exists in its month (2024-02-30 was read as March 1).
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d < 1 || d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) bad();
  // Then fractional seconds, and the zone RFC 3339 requires: "Z" or an offset, applied.
  std::size_t at = 19;
  if (at < s.size() && s[at] == '.') {
    const std::size_t digits_from = ++at;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
    if (at == digits_from) bad();
  }
  std::int64_t offset = 0;
  if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at + 6 == s.size() && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
    const int oh = digits(at + 1, 2), om = digits(at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) bad();
    offset = (s[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    bad();
  }
  if (at != s.size()) bad();
  y -= mo <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = era * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + se - offset;
}

// A whole string as a finite decimal number ("0.5", "8"), or nothing.
std::optional<double> parse_decimal(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A field's value among `names` (its index); `fallback` when the field is absent or empty.
std::size_t get_choice(const Obj& o, const json* v, const std::string& field, std::initializer_list<std::string_view> names,
                       std::size_t fallback) {
  const std::string s = get_string(o, v, field);
  if (s.empty()) return fallback;
  std::string expected;  // "A, B or C"
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names.begin()[k] == s) return k;
    expected += fmt::format("{}{}", k == 0 ? "" : k + 1 == names.size() ? " or " : ", ", names.begin()[k]);
  }
  o.fail(field, fmt::format("expected {}, got {}", expected, shown(s)));
}

// ---- warnings, aggregated by (field, message) ----
struct Warnings {
  std::vector<Warning> list;
  std::unordered_map<std::string, std::size_t> index;
  void add(const Obj& o, std::string field, std::string message) {
    std::string key = field + '\x1f' + message;
    auto [it, fresh] = index.emplace(std::move(key), list.size());
    if (fresh) list.push_back({fmt::format("{}: {}", o.source, o.id()), std::move(field), std::move(message), 1});
    else ++list[it->second].count;
  }
};

// ---- taints and the constraint classes of pods ----
struct Taint {
  std::string key, value, effect;
  friend bool operator==(const Taint&, const Taint&) = default;
};
constexpr std::size_t kMaxTaints = 64;
constexpr std::size_t kMaxClasses = 256;
constexpr std::string_view kClassLabelPrefix = "gpusched.io/node-class-";

// A GPU product label as GPU Feature Discovery writes it: "NVIDIA-A100-SXM4-40GB",
// "A100-SXM4-40GB-MIG-1g.5gb" (MIG single strategy), "Tesla-T4-SHARED" (time-slicing renames).
struct Product {
  std::string base;
  std::string mig_profile;  // "" unless "-MIG-<profile>"
  bool mig = false;         // "-MIG-" was in it (GFD's single strategy), with a profile or not
  bool shared = false;
};
Product split_product(std::string_view p) {
  Product out;
  if (p.size() > 7 && p.substr(p.size() - 7) == "-SHARED") {
    out.shared = true;
    p.remove_suffix(7);
  }
  if (auto m = p.find("-MIG-"); m != std::string_view::npos) {
    out.mig_profile = std::string(p.substr(m + 5));
    out.mig = true;
    p = p.substr(0, m);
  }
  out.base = std::string(p);
  return out;
}
std::optional<std::string> model_of(const GpuModelRegistry& reg, std::string_view base) {
  if (auto id = reg.find(base)) return reg.model(*id).name;
  for (std::string_view prefix : {"Tesla-", "TESLA-", "NVIDIA-Tesla-", "NVIDIA-TESLA-"})
    if (base.substr(0, prefix.size()) == prefix)
      if (auto id = reg.find(base.substr(prefix.size()))) return reg.model(*id).name;
  return std::nullopt;
}

// A pod's requests, as Kubernetes adds them up (see read_pod_spec).
struct Req {
  std::int64_t cpu = 0, memory = 0, gpu = 0;
  std::map<std::string, std::int64_t> mig;  // profile -> devices
  // Adds r's requests; the name of the first resource whose sum passes int64, or nullptr.
  [[nodiscard]] const char* add(const Req& r) {
    if (__builtin_add_overflow(cpu, r.cpu, &cpu)) return "cpu";
    if (__builtin_add_overflow(memory, r.memory, &memory)) return "memory";
    if (__builtin_add_overflow(gpu, r.gpu, &gpu)) return "nvidia.com/gpu";
    for (const auto& [p, n] : r.mig)
      if (__builtin_add_overflow(mig[p], n, &mig[p])) return "nvidia.com/mig-*";
    return nullptr;
  }
  void max_with(const Req& r) {
    cpu = std::max(cpu, r.cpu);
    memory = std::max(memory, r.memory);
    gpu = std::max(gpu, r.gpu);
    for (const auto& [p, n] : r.mig) mig[p] = std::max(mig[p], n);
  }
};

// What a pod spec (or a pod template's spec) asks for.
struct PodSpecRead {
  TaskShape shape;
  std::string mig_profile;
  std::vector<std::pair<std::string, std::string>> selector;
  std::vector<std::string> models;
  std::string scheduler = "default-scheduler";
  std::optional<std::int32_t> priority;
  std::string priority_class;
  std::string node_name;
  // Constraint class: tolerations and node affinity beyond plain label equalities (-1 = none).
  int cls = -1;
};

struct NodeRec {
  std::uint64_t taint_mask = 0;
  std::string model;        // "" = no GPUs
  std::string mig_profile;  // MIG single strategy: the profile whose devices nvidia.com/gpu counts
  std::string source;       // the file it was read from
};

class Reader {
 public:
  explicit Reader(const Options& opt) : opt_(opt), reg_(opt.registry ? *opt.registry : GpuModelRegistry::builtin()) {}

  Input run(std::span<const Source> sources);

 private:
  void collect(const json& doc, const std::string& source, int depth);
  void remember(const Obj& o);
  void read_node(const Obj& o);
  void build_mig(const Obj& o, NodeSpec& node, const std::string& model, std::int64_t whole,
                 const std::vector<std::pair<std::string, std::int64_t>>& mig, std::int64_t physical_label);
  PodSpecRead read_pod_spec(const Obj& o, const json* spec, const std::string& prefix);
  void read_gpu_sharing(const Obj& o, const std::vector<std::pair<std::string, std::string>>& annotations,
                        const std::string& prefix, PodSpecRead& s);
  MilliGpu memory_share(const std::vector<std::string>& models, Bytes memory) const;
  Req read_container(const Obj& o, const json& c, const std::string& prefix, std::string_view list, std::size_t index);
  int constraint_class(const Obj& o, const json* spec, const std::string& prefix, bool has_complex_affinity,
                       const json* terms);
  bool term_matches(const json& term, std::size_t node) const;
  std::string queue_of_pod(const Obj& o, const std::vector<std::pair<std::string, std::string>>& labels);
  std::int32_t priority_of(const Obj& o, const PodSpecRead& s, std::string_view field);
  void read_priority_class(const Obj& o);
  void read_queues();
  void finish_kai_queues();
  void read_volcano_hierarchy(const Obj& o, QueueSpec& q);
  void finish_volcano_hierarchy();
  void read_pods();
  void read_volcano_jobs();
  void read_network_topology(const Obj& o, const json* spec, Job& job);
  void apply_running();
  void take_shared_gpu(const Obj& o, NodeSpec& node, std::size_t node_index, const std::string& group, TaskGroupSpec& g,
                       std::map<std::pair<std::size_t, std::string>, std::size_t>& shared_gpu);
  void apply_classes();
  std::string flavor_model(const Obj& o, const std::string& flavor);

  const Options& opt_;
  GpuModelRegistry reg_;
  Input in_;
  Warnings warn_;
  std::deque<json> docs_;  // stable addresses: objects point into them
  std::vector<Obj> objs_;
  std::vector<NodeSpec> nodes_;
  std::vector<NodeRec> node_recs_;
  std::unordered_map<std::string, std::size_t> node_index_;
  std::vector<Taint> taints_;
  std::uint64_t taint_union_ = 0;  // the taints some node has
  std::map<std::string, int> class_index_;
  // Tolerated taints and the affinity terms, copied: pods are parsed one at a time, so a pointer into
  // one would dangle once the next is read (ASan: heap-use-after-free in apply_classes).
  std::vector<std::pair<std::uint64_t, std::shared_ptr<const json>>> classes_;
  std::map<std::string, std::string> local_queues_;              // "ns/name" -> ClusterQueue
  std::map<std::string, const Obj*> podgroups_;                  // "ns/name"
  std::map<std::string, const Obj*> volcano_jobs_;               // "ns/name"
  std::optional<std::int64_t> default_priority_;
  std::map<std::string, std::int64_t> volcano_running_;  // "ns/job/task" -> bound pods
  std::unordered_map<std::string, std::string> identities_;  // "kind group ns/name" -> its file
  std::size_t gpus_read_ = 0;                                 // GPUs of the nodes read (kMaxClusterGpus)
  std::vector<std::string> cluster_models_;                   // the nodes' GPU models, first seen first
  std::vector<std::string> running_gpu_group_;                // per in_.running: KAI's runai-gpu-group label
  std::map<std::string, const Obj*> kai_objects_;             // KAI Queue objects by name
  struct VolcanoPath {
    std::vector<std::string> names;  // "root", ..., the leaf's level
    std::vector<double> weights;
    const Obj* object = nullptr;
  };
  std::map<std::string, VolcanoPath> volcano_paths_;  // Volcano queues with hierarchy annotations
};

// ---- documents and objects ----

void identify(Obj& o);

void Reader::collect(const json& doc, const std::string& source, int depth) {
  Obj o;
  o.v = &doc;
  o.source = source;
  o.kind = "object";
  if (!doc.is_object()) o.fail("kind", fmt::format("expected a Kubernetes object, got {}", shown(doc)));
  o.kind = get_string(o, child(&doc, "kind"), "kind", true);
  const std::string api = get_string(o, child(&doc, "apiVersion"), "apiVersion");
  if (auto slash = api.find('/'); slash != std::string::npos) o.group = api.substr(0, slash);
  if (o.kind == "List" || (o.kind.size() > 4 && o.kind.substr(o.kind.size() - 4) == "List")) {
    if (depth > 0) o.fail("items", "a list inside a list");
    const json* items = child(&doc, "items");
    if (!items) return;
    get_array(o, items, "items");
    for (const auto& item : *items) collect(item, source, depth + 1);
    return;
  }
  identify(o);
  remember(o);
  objs_.push_back(std::move(o));
}

// The API server holds one object per kind, group, namespace and name: a second one in the input is
// a mistake (two pods of one name were both bound), refused naming both files.
void Reader::remember(const Obj& o) {
  auto [it, fresh] = identities_.try_emplace(fmt::format("{} {} {}/{}", o.kind, o.group, o.ns, o.name), o.source);
  if (!fresh) o.fail("metadata.name", fmt::format("duplicate {} \"{}\" (the first is in {})", o.kind, o.ns.empty() ? o.name : o.ns + "/" + o.name, it->second), ErrorCode::kDuplicate);
}

void identify(Obj& o) {
  o.name = get_string(o, path(o.v, {"metadata", "name"}), "metadata.name", true);
  if (o.name.empty()) o.fail("metadata.name", "must not be empty");
  o.ns = get_string(o, path(o.v, {"metadata", "namespace"}), "metadata.namespace");
  for (const auto& [field, s] : {std::pair{"metadata.name", &o.name}, std::pair{"metadata.namespace", &o.ns}})
    if (const int u = io::detail::first_control_character(*s); u >= 0)
      o.fail(field, fmt::format("control character 0x{:02x} in name {}", u, io::detail::shown(*s)));
  // The API server's path segment rule (apimachinery's IsValidPathSegmentName) for every object
  // name: no "/" or "%", not "." or "..". Without it pod "a/b" in namespace "c" and pod "b" in
  // namespace "c/a" were one binding "c/a/b".
  for (const auto& [field, s] : {std::pair{"metadata.name", &o.name}, std::pair{"metadata.namespace", &o.ns}}) {
    if (s->find_first_of("/%") != std::string::npos || *s == "." || *s == "..")
      o.fail(field, fmt::format("{} is not a valid Kubernetes name (no \"/\" or \"%\", not \".\" or \"..\")", io::detail::shown(*s)));
  }
  const bool namespaced = o.kind == "Pod" || o.kind == "PodGroup" || o.kind == "LocalQueue" ||
                          (o.kind == "Job" && o.group == "batch.volcano.sh");
  if (namespaced && o.ns.empty()) o.ns = "default";
}

Input Reader::run(std::span<const Source> sources) {
  in_.registry = reg_;
  in_.topology_levels = opt_.topology_levels;
  for (const Source& s : sources) {
    const std::string name(s.name);
    // A JSON list: its envelope checked on its own, its items one by one; Pods are parsed only when
    // the pods are read, one at a time (see scan_json_list).
    if (auto scan = detail::scan_json_list(s.text)) {
      const std::string envelope =
          std::string(s.text.substr(0, scan->array_open + 1)) + std::string(s.text.substr(scan->array_close));
      auto env = io::detail::parse_json(envelope, s.name);
      if (!env) throw ParseError{env.error()};
      const json* kind = child(&*env, "kind");
      if (kind && kind->is_string() && kind->get_ref<const std::string&>().ends_with("List")) {
        for (const auto& item : scan->items) {
          const std::string_view text = s.text.substr(item.begin, item.end - item.begin);
          if (item.kind == "Pod") {
            Obj o;
            o.source = name;
            o.kind = "Pod";
            o.lazy = text;
            objs_.push_back(std::move(o));
            continue;
          }
          auto doc = io::detail::parse_json_fast(text, s.name, {.max_values = detail::kMaxObjectValues});
          if (!doc) throw ParseError{doc.error()};
          docs_.push_back(std::move(*doc));
          collect(docs_.back(), name, 1);
        }
        continue;
      }
    }
    auto parsed = detail::parse_documents(s.text, s.name);
    if (!parsed) throw ParseError{parsed.error()};
    // docs/formats.md: empty input is an error, never an empty success ("0 bound", exit 0).
    if (parsed->empty())
      throw ParseError{Error{fmt::format("{}: no Kubernetes object (no YAML or JSON document in the file)", name),
                             ErrorCode::kMissingField, "kind"}};
    for (auto& d : *parsed) {
      docs_.push_back(std::move(d));
      collect(docs_.back(), name, 0);
    }
  }

  // Order of reading: what others refer to first.
  for (const Obj& o : objs_) {
    if (o.kind == "PriorityClass") read_priority_class(o);
    else if (o.kind == "Topology" && o.group == "kueue.x-k8s.io") {
      const json* levels = path(o.v, {"spec", "levels"});
      if (!levels) o.fail("spec.levels", "missing", ErrorCode::kMissingField);
      get_array(o, levels, "spec.levels");
      for (std::size_t l = 0; l < levels->size(); ++l) {
        const std::string key = get_string(o, child(&(*levels)[l], "nodeLabel"), fmt::format("spec.levels[{}].nodeLabel", l), true);
        if (std::find(in_.topology_levels.begin(), in_.topology_levels.end(), key) == in_.topology_levels.end())
          in_.topology_levels.push_back(key);
      }
    }
  }
  for (const Obj& o : objs_)
    if (o.kind == "Node") read_node(o);
  for (const NodeRec& r : node_recs_) {
    taint_union_ |= r.taint_mask;
    if (!r.model.empty() && std::find(cluster_models_.begin(), cluster_models_.end(), r.model) == cluster_models_.end())
      cluster_models_.push_back(r.model);
  }
  for (const Obj& o : objs_) {
    if (o.kind == "PodGroup") podgroups_[o.ns + "/" + o.name] = &o;
    else if (o.kind == "Job" && o.group == "batch.volcano.sh") volcano_jobs_[o.ns + "/" + o.name] = &o;
    else if (o.kind == "LocalQueue") {
      local_queues_[o.ns + "/" + o.name] = get_string(o, path(o.v, {"spec", "clusterQueue"}), "spec.clusterQueue", true);
    }
  }
  read_queues();
  read_pods();
  read_volcano_jobs();
  for (const Obj& o : objs_) {
    static const std::set<std::string> known = {"Node", "Pod", "PriorityClass", "PodGroup", "LocalQueue", "ClusterQueue",
                                                "ResourceFlavor", "Queue", "Topology"};
    if (known.contains(o.kind) || (o.kind == "Job" && o.group == "batch.volcano.sh")) continue;
    warn_.add(o, "kind", fmt::format("kind {} is not read", o.kind));
  }
  apply_running();
  apply_classes();
  for (std::size_t n = 0; n < nodes_.size(); ++n)
    for (const auto& level : in_.topology_levels)
      if (!find_label(nodes_[n].labels, level)) {
        Obj o{nullptr, node_recs_[n].source, "Node", "", "", nodes_[n].name, {}};
        warn_.add(o, fmt::format("metadata.labels[\"{}\"]", level),
                  fmt::format("node has no label of topology level {}: it is in no domain of that level", level));
      }
  // A class the input does not define was reported and resolved to a number already; the job keeps
  // the number only, so that consumers resolving classes (fair share) do not fail on it.
  for (Job& j : in_.jobs)
    if (!j.job_priority_class.empty() && !in_.priority_classes.contains(j.job_priority_class)) j.job_priority_class.clear();
  in_.cluster = Cluster(std::move(nodes_));
  in_.warnings = std::move(warn_.list);
  return std::move(in_);
}

void Reader::read_priority_class(const Obj& o) {
  const json* v = child(o.v, "value");
  if (!v) o.fail("value", "missing", ErrorCode::kMissingField);
  const auto value = get_int(o, v, "value", std::numeric_limits<std::int32_t>::min(), 1000000000);
  in_.priority_classes[o.name] = value;
  if (const json* d = child(o.v, "globalDefault"); d && d->is_boolean() && d->get<bool>()) default_priority_ = value;
}

// ---- nodes ----

void Reader::read_node(const Obj& o) {
  NodeSpec node;
  node.name = o.name;
  if (node_index_.contains(node.name)) o.fail("metadata.name", fmt::format("duplicate node \"{}\"", node.name), ErrorCode::kDuplicate);
  node.labels = get_string_map(o, path(o.v, {"metadata", "labels"}), "metadata.labels");
  const char* which = opt_.use_capacity ? "capacity" : "allocatable";
  const json* res = path(o.v, {"status", which});
  if (!res && !opt_.use_capacity) {
    which = "capacity";
    res = path(o.v, {"status", which});
  }
  if (!res) o.fail("status.allocatable", "missing (and no status.capacity)", ErrorCode::kMissingField);
  get_object(o, res, fmt::format("status.{}", which));
  std::int64_t whole = 0;
  std::vector<std::pair<std::string, std::int64_t>> mig;
  bool has_cpu = false, has_memory = false;
  for (const auto& [key, value] : res->items()) {
    const std::string f = fmt::format("status.{}[\"{}\"]", which, key);
    if (key == "cpu") {
      node.cpu = get_quantity(o, value, f, QuantityUnit::kMilli, kMilliPerCpu);
      has_cpu = true;
    } else if (key == "memory") {
      node.memory = get_quantity(o, value, f, QuantityUnit::kBytes, 1);
      has_memory = true;
    } else if (key == "nvidia.com/gpu") {
      whole = get_quantity(o, value, f, QuantityUnit::kCount, 1);
      if (whole > 65535) o.fail(f, fmt::format("expected at most 65535 GPUs, got {}", whole));
    } else if (key.rfind("nvidia.com/mig-", 0) == 0) {
      const std::int64_t n = get_quantity(o, value, f, QuantityUnit::kCount, 1);
      if (n > 4096) o.fail(f, fmt::format("expected at most 4096 MIG devices, got {}", n));
      if (n > 0) mig.emplace_back(key.substr(15), n);
    }
  }
  if (!has_cpu) o.fail(fmt::format("status.{}.cpu", which), "missing", ErrorCode::kMissingField);
  if (!has_memory) o.fail(fmt::format("status.{}.memory", which), "missing", ErrorCode::kMissingField);

  NodeRec rec;
  if (whole > 0 || !mig.empty()) {
    const std::string* product = find_label(node.labels, "nvidia.com/gpu.product");
    const std::string field = "metadata.labels[\"nvidia.com/gpu.product\"]";
    if (!product)
      o.fail(field, fmt::format("missing: the node has {} GPU devices and GPU Feature Discovery names their model here", whole + static_cast<std::int64_t>(mig.size())),
             ErrorCode::kMissingField);
    const Product p = split_product(*product);
    auto model = model_of(reg_, p.base);
    if (!model) o.fail(field, fmt::format("unknown GPU model {} (not in the GPU model registry; add it as a gpu_models row)", shown(*product)), ErrorCode::kUnknownName);
    // "A100-SXM4-40GB-MIG-" was read as whole GPUs: GFD's single strategy names the profile.
    if (p.mig && !mig::parse_profile_name(p.mig_profile))
      o.fail(field, fmt::format("{}: no MIG profile after \"-MIG-\" (GFD's single strategy writes e.g. A100-SXM4-40GB-MIG-1g.5gb)", shown(*product)));
    rec.model = *model;
    if (p.shared)
      warn_.add(o, field, "time-sliced GPUs (-SHARED): nvidia.com/gpu counts replicas; each replica is read as a whole GPU");
    const std::string* strategy = find_label(node.labels, "nvidia.com/mig.strategy");
    std::int64_t physical = -1;
    if (const std::string* c = find_label(node.labels, "nvidia.com/gpu.count")) {
      auto q = parse_quantity(*c, QuantityUnit::kCount);
      if (!q || *q > 65535) o.fail("metadata.labels[\"nvidia.com/gpu.count\"]", fmt::format("expected a GPU count, got \"{}\"", *c));
      physical = *q;
    }
    if (!p.mig_profile.empty()) {
      // MIG single strategy: nvidia.com/gpu counts MIG devices of the product's profile.
      if (strategy && *strategy != "single")
        o.fail(field, fmt::format("a MIG product \"{}\" with nvidia.com/mig.strategy \"{}\" (expected single)", *product, *strategy));
      if (!mig.empty()) o.fail(field, "MIG single-strategy product and nvidia.com/mig-* resources together");
      build_mig(o, node, rec.model, 0, {{p.mig_profile, whole}}, -1);
      rec.mig_profile = p.mig_profile;
    } else {
      node.gpus.assign(static_cast<std::size_t>(whole), GpuSpec{rec.model});
      if (!mig.empty()) build_mig(o, node, rec.model, whole, mig, physical);
    }
  }
  if (const json* u = path(o.v, {"spec", "unschedulable"})) {
    if (!u->is_boolean()) o.fail("spec.unschedulable", fmt::format("expected true or false, got {}", shown(*u)));
    node.schedulable = !u->get<bool>();
  }
  if (const json* conds = path(o.v, {"status", "conditions"})) {
    get_array(o, conds, "status.conditions");
    bool ready = false;
    for (std::size_t i = 0; i < conds->size(); ++i) {
      const json& c = (*conds)[i];
      if (get_string(o, child(&c, "type"), fmt::format("status.conditions[{}].type", i)) == "Ready")
        ready = get_string(o, child(&c, "status"), fmt::format("status.conditions[{}].status", i)) == "True";
    }
    node.healthy = ready;
  }
  if (const json* ts = path(o.v, {"spec", "taints"})) {
    get_array(o, ts, "spec.taints");
    for (std::size_t i = 0; i < ts->size(); ++i) {
      const json& t = (*ts)[i];
      const std::string f = fmt::format("spec.taints[{}]", i);
      Taint taint{get_string(o, child(&t, "key"), f + ".key", true), get_string(o, child(&t, "value"), f + ".value"),
                  get_string(o, child(&t, "effect"), f + ".effect", true)};
      if (taint.effect == "PreferNoSchedule") {
        warn_.add(o, f + ".effect", "PreferNoSchedule taints are a scoring preference, not modelled");
        continue;
      }
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute")
        o.fail(f + ".effect", fmt::format("expected NoSchedule, PreferNoSchedule or NoExecute, got \"{}\"", taint.effect));
      auto it = std::find(taints_.begin(), taints_.end(), taint);
      if (it == taints_.end()) {
        if (taints_.size() == kMaxTaints) o.fail(f, fmt::format("more than {} distinct NoSchedule/NoExecute taints in the cluster", kMaxTaints), ErrorCode::kLimit);
        taints_.push_back(taint);
        it = taints_.end() - 1;
      }
      rec.taint_mask |= std::uint64_t{1} << (it - taints_.begin());
    }
  }
  gpus_read_ += node.gpus.size();
  if (gpus_read_ > kMaxClusterGpus)
    o.fail("status.allocatable", fmt::format("the nodes so far have {} GPUs: more than the {} a cluster may have", gpus_read_,
                                             kMaxClusterGpus), ErrorCode::kLimit);
  node_index_.emplace(node.name, nodes_.size());
  nodes_.push_back(std::move(node));
  rec.source = o.source;
  node_recs_.push_back(rec);
}

// MIG devices as GPU instances on physical GPUs. The device plugin reports only counts per
// profile, not the layout, so the instances are laid out here: largest profile first, each on
// the first GPU with a free allowed placement (the profile table's start slices, NVIDIA MIG User
// Guide "Supported MIG Profiles"); GPUs beyond the whole ones come from nvidia.com/gpu.count when
// GFD gives it (mixed strategy: every physical GPU), else as many as the instances need.
void Reader::build_mig(const Obj& o, NodeSpec& node, const std::string& model, std::int64_t whole,
                       const std::vector<std::pair<std::string, std::int64_t>>& mig, std::int64_t physical_label) {
  const std::string field = mig.size() == 1 && whole == 0 && physical_label < 0 ? "metadata.labels[\"nvidia.com/gpu.product\"]"
                                                                               : "status.allocatable";
  const auto& catalog = mig::MigCatalog::builtin();
  const auto mid = catalog.find(model);
  if (!mid) o.fail(field, fmt::format("MIG devices on GPU model {}, which has no MIG profile table", model));
  const mig::MigGpuSpec& spec = catalog.spec(*mid);
  std::vector<std::pair<int, std::int64_t>> wanted;  // profile index, count
  for (const auto& [name, count] : mig) {
    const auto g = mig::parse_profile_name(name);
    const int pi = g ? mig::match_profile(spec, *g) : -1;
    if (pi < 0) o.fail(field, fmt::format("\"{}\" is not a MIG profile of {}", name, spec.model));
    wanted.emplace_back(pi, count);
  }
  std::sort(wanted.begin(), wanted.end(), [&](const auto& a, const auto& b) {
    return spec.profiles[static_cast<std::size_t>(a.first)].memory_slices > spec.profiles[static_cast<std::size_t>(b.first)].memory_slices;
  });
  struct Build {
    mig::SlotMask used = 0;
    std::vector<MigInstanceInfo> instances;
  };
  std::vector<Build> gpus;
  // GFD's nvidia.com/gpu.count counts every physical GPU (mixed strategy): those beyond the whole
  // ones carry the MIG devices. A count that leaves too few (0 with MIG devices, say) is reported.
  const std::int64_t fixed = physical_label >= 0 ? std::max<std::int64_t>(0, physical_label - whole) : -1;
  if (fixed > 0) gpus.resize(static_cast<std::size_t>(fixed));
  std::int64_t total = 0;
  for (const auto& [pi, count] : wanted) {
    const mig::MigProfile& prof = spec.profiles[static_cast<std::size_t>(pi)];
    // GPUs only fill up: a GPU that had no room for this profile has none for its next instance,
    // so the scan resumes where the last one was placed (it restarted at GPU 0: 65,535 devices
    // were quadratic, over 20 s for 100 such nodes).
    std::size_t from = 0;
    for (std::int64_t k = 0; k < count; ++k) {
      if (++total > 65535) o.fail(field, "too many MIG devices");
      bool placed = false;
      for (std::size_t g = from; g <= gpus.size() && !placed; ++g) {
        from = g;
        if (g == gpus.size()) {
          if (fixed >= 0)
            warn_.add(o, "metadata.labels[\"nvidia.com/gpu.count\"]",
                      "the MIG devices do not fit on the GPUs nvidia.com/gpu.count leaves for MIG; GPUs added");
          gpus.emplace_back();
        }
        Build& b = gpus[g];
        if (b.instances.size() >= spec.max_instances) continue;
        for (int s = 0; s < spec.memory_slots; ++s) {
          if (!((prof.starts >> s) & 1u) || (prof.window(s) & b.used)) continue;
          b.used |= prof.window(s);
          b.instances.push_back({prof.id, static_cast<std::uint8_t>(s), false});
          placed = true;
          break;
        }
      }
    }
  }
  for (auto& b : gpus) {
    GpuSpec g{model};
    g.mig_mode = true;
    g.mig_layout_fixed = true;  // the device plugin advertises instances; only the MIG manager makes them
    g.mig_instances = std::move(b.instances);
    node.gpus.push_back(std::move(g));
  }
}

// ---- pods ----

Req Reader::read_container(const Obj& o, const json& c, const std::string& prefix, std::string_view list, std::size_t index) {
  Req out;
  const json* res = child(&c, "resources");
  if (!res) return out;
  const json* requests = child(res, "requests");
  const json* limits = child(res, "limits");
  // Kubernetes: a request defaults to the limit when only the limit is given; extended resources
  // (nvidia.com/*) are given as limits and may not be overcommitted (request == limit). So every
  // request, then every limit without a request.
  auto entry = [&](const std::string& name, const json* v) {
    // "spec.containers[0].resources.requests[\"cpu\"]", made only for a message.
    auto f = [&] {
      return fmt::format("{}{}[{}].resources.{}[\"{}\"]", prefix, list, index,
                         requests && child(requests, name) ? "requests" : "limits", name);
    };
    if (name == "cpu") out.cpu = get_quantity(o, *v, f, QuantityUnit::kMilli, kMilliPerCpu);
    else if (name == "memory") out.memory = get_quantity(o, *v, f, QuantityUnit::kBytes, 1);
    else if (name == "nvidia.com/gpu") {
      out.gpu = get_quantity(o, *v, f, QuantityUnit::kCount, 1);
      if (out.gpu > 65535) o.fail(f(), fmt::format("expected at most 65535 GPUs, got {}", out.gpu));
    } else if (name.rfind("nvidia.com/mig-", 0) == 0) {
      const auto n = get_quantity(o, *v, f, QuantityUnit::kCount, 1);
      if (n > 0) out.mig[name.substr(15)] = n;
    } else {
      const auto r = io::detail::read_quantity(*v, f(), QuantityUnit::kBytes, 1);
      if (!r || *r != 0) warn_.add(o, fmt::format("spec.containers[].resources[\"{}\"]", name),
                                   fmt::format("resource {} is not modelled: nodes are not checked for it", name));
    }
  };
  const Field resources{prefix, list, static_cast<std::int64_t>(index), ".resources"};
  if (requests) get_object(o, requests, resources);
  if (limits) get_object(o, limits, resources);
  if (requests)
    for (auto it = requests->begin(); it != requests->end(); ++it) entry(it.key(), &*it);
  if (limits)
    for (auto it = limits->begin(); it != limits->end(); ++it)
      if (!requests || !child(requests, it.key())) entry(it.key(), &*it);
  return out;
}

bool Reader::term_matches(const json& term, std::size_t node) const {
  const NodeSpec& n = nodes_[node];
  for (const char* part : {"matchExpressions", "matchFields"}) {
    const json* exprs = child(&term, part);
    if (!exprs) continue;
    const bool fields = part[5] == 'F';
    for (const json& e : *exprs) {
      const std::string key = e.value("key", "");
      const std::string op = e.value("operator", "");
      const std::string* have = fields ? (key == "metadata.name" ? &n.name : nullptr) : find_label(n.labels, key);
      const json* values = child(&e, "values");
      auto in_values = [&](const std::string& s) {
        if (!values) return false;
        for (const json& x : *values)
          if (x.is_string() && x.get_ref<const std::string&>() == s) return true;
        return false;
      };
      bool ok = false;
      if (op == "In") ok = have && in_values(*have);
      else if (op == "NotIn") ok = !have || !in_values(*have);
      else if (op == "Exists") ok = have != nullptr;
      else if (op == "DoesNotExist") ok = have == nullptr;
      else if (op == "Gt" || op == "Lt") {
        if (!have || !values || values->size() != 1 || !(*values)[0].is_string()) return false;
        auto a = parse_quantity(*have, QuantityUnit::kCount);
        auto b = parse_quantity((*values)[0].get_ref<const std::string&>(), QuantityUnit::kCount);
        ok = a && b && (op == "Gt" ? *a > *b : *a < *b);
      }
      if (!ok) return false;
    }
  }
  return true;
}

// The class of a pod's node constraints that plain label equalities cannot say: which of the
// cluster's NoSchedule/NoExecute taints it tolerates ("Taints and Tolerations": a toleration
// matches a taint when the keys are equal (or the toleration's key is empty with Exists), the
// operator is Exists or the values are equal, and the effect is equal or empty), and its required
// node affinity terms (OR of terms, AND of expressions; In, NotIn, Exists, DoesNotExist, Gt, Lt;
// matchFields on metadata.name). Every class becomes a node label "gpusched.io/node-class-<k>"
// on the nodes it admits, and the pod selects it: exact, with the job model's selector.
int Reader::constraint_class(const Obj& o, const json* spec, const std::string& prefix, bool has_complex_affinity,
                             const json* terms) {
  std::uint64_t all = taints_.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << taints_.size()) - 1;
  std::uint64_t tolerated = 0;
  if (const json* tols = child(spec, "tolerations")) {
    get_array(o, tols, Field{prefix, ".tolerations"});
    for (std::size_t i = 0; i < tols->size(); ++i) {
      const json& t = (*tols)[i];
      const auto at = static_cast<std::int64_t>(i);
      const std::string key = get_string(o, child(&t, "key"), Field{prefix, ".tolerations", at, ".key"});
      std::string op = get_string(o, child(&t, "operator"), Field{prefix, ".tolerations", at, ".operator"});
      if (op.empty()) op = "Equal";
      if (op != "Equal" && op != "Exists")
        o.fail(Field{prefix, ".tolerations", at, ".operator"}.str(), fmt::format("expected Equal or Exists, got \"{}\"", op));
      const std::string value = get_string(o, child(&t, "value"), Field{prefix, ".tolerations", at, ".value"});
      const std::string effect = get_string(o, child(&t, "effect"), Field{prefix, ".tolerations", at, ".effect"});
      if (child(&t, "tolerationSeconds") && effect == "NoExecute")
        warn_.add(o, Field{prefix, ".tolerations", at, ".tolerationSeconds"}.str(), "tolerationSeconds (eviction after a delay) is not modelled");
      for (std::size_t k = 0; k < taints_.size(); ++k) {
        const Taint& tt = taints_[k];
        const bool key_ok = key.empty() ? op == "Exists" : key == tt.key;
        const bool value_ok = op == "Exists" || value == tt.value;
        const bool effect_ok = effect.empty() || effect == tt.effect;
        if (key_ok && value_ok && effect_ok) tolerated |= std::uint64_t{1} << k;
      }
    }
  }
  // Taints only matter on nodes that carry them: a class is needed when some node has a taint the
  // pod does not tolerate.
  const bool blocked = (taint_union_ & ~tolerated) != 0;
  if (!blocked && !has_complex_affinity) return -1;
  const std::string key = fmt::format("{:x}|{}", tolerated & all, has_complex_affinity ? terms->dump() : std::string());
  auto it = class_index_.find(key);
  if (it != class_index_.end()) return it->second;
  if (classes_.size() == kMaxClasses)
    o.fail(prefix, fmt::format("more than {} distinct combinations of tolerations and node affinity in the input", kMaxClasses),
           ErrorCode::kLimit);
  classes_.emplace_back(tolerated, has_complex_affinity ? std::make_shared<const json>(*terms) : nullptr);
  class_index_.emplace(key, static_cast<int>(classes_.size() - 1));
  return static_cast<int>(classes_.size() - 1);
}

// A pod's spec: requests as Kubernetes counts them ("Resource Management for Pods and Containers",
// "Init Containers", "Sidecar Containers"): the app containers' requests add up; an init container
// runs alone (beside the sidecars started before it), so the pod asks for the larger of the two;
// sidecars (init containers with restartPolicy Always) run on beside the app containers; the
// RuntimeClass overhead (spec.overhead) adds on top.
PodSpecRead Reader::read_pod_spec(const Obj& o, const json* spec, const std::string& prefix) {
  PodSpecRead out;
  if (!spec) o.fail(prefix, "missing", ErrorCode::kMissingField);
  get_object(o, spec, prefix);
  const json* containers = child(spec, "containers");
  if (!containers) o.fail(prefix + ".containers", "missing", ErrorCode::kMissingField);
  get_array(o, containers, Field{prefix, ".containers"});
  // Requests add up in int64; a sum past it is refused (65,538 containers of 65,535 GPUs wrapped to 2).
  auto add = [&](Req& to, const Req& r) {
    if (const char* resource = to.add(r))
      o.fail(prefix + ".containers[].resources", fmt::format("the pod's {} requests add up past 2^63", resource), ErrorCode::kOverflow);
  };
  Req app;
  for (std::size_t i = 0; i < containers->size(); ++i) add(app, read_container(o, (*containers)[i], prefix, ".containers", i));
  Req init_peak, sidecars;
  if (const json* inits = child(spec, "initContainers")) {
    get_array(o, inits, Field{prefix, ".initContainers"});
    for (std::size_t i = 0; i < inits->size(); ++i) {
      const json& c = (*inits)[i];
      Req r = read_container(o, c, prefix, ".initContainers", i);
      const json* rp = child(&c, "restartPolicy");
      if (rp && rp->is_string() && rp->get_ref<const std::string&>() == "Always") {
        add(sidecars, r);
        init_peak.max_with(sidecars);
      } else {
        add(r, sidecars);
        init_peak.max_with(r);
      }
    }
  }
  add(app, sidecars);
  app.max_with(init_peak);
  if (const json* oh = child(spec, "overhead")) {
    get_object(o, oh, prefix + ".overhead");
    Req overhead;
    if (const json* c = child(oh, "cpu")) overhead.cpu = get_quantity(o, *c, prefix + ".overhead.cpu", QuantityUnit::kMilli, kMilliPerCpu);
    if (const json* m = child(oh, "memory")) overhead.memory = get_quantity(o, *m, prefix + ".overhead.memory", QuantityUnit::kBytes, 1);
    add(app, overhead);
  }
  if (app.gpu > 65535)
    o.fail(prefix + ".containers[].resources", fmt::format("the pod asks for {} GPUs; at most 65535", app.gpu), ErrorCode::kLimit);
  out.shape.cpu = app.cpu;
  out.shape.memory = app.memory;
  std::int64_t mig_devices = 0;
  for (const auto& [p, n] : app.mig) mig_devices += n;
  if (mig_devices > 0) {
    if (mig_devices > 1 || app.gpu > 0)
      o.fail(prefix + ".containers[].resources", fmt::format("asks for {} GPUs and {} MIG devices; the job model gives a task one MIG instance or whole GPUs", app.gpu, mig_devices));
    out.mig_profile = app.mig.begin()->first;
    if (!mig::parse_profile_name(out.mig_profile))
      o.fail(prefix + ".containers[].resources", fmt::format("\"nvidia.com/mig-{}\" is not a MIG profile", out.mig_profile));
  } else if (app.gpu > 0) {
    out.shape.gpus = static_cast<GpuCount>(app.gpu);
    out.shape.gpu_milli = kMilliPerGpu;
  }
  out.selector = get_string_map(o, child(spec, "nodeSelector"), Field{prefix, ".nodeSelector"});
  if (const std::string* product = find_label(out.selector, "nvidia.com/gpu.product")) {
    const Product p = split_product(*product);
    if (p.mig && !mig::parse_profile_name(p.mig_profile))
      o.fail(prefix + ".nodeSelector[\"nvidia.com/gpu.product\"]",
             fmt::format("{}: no MIG profile after \"-MIG-\" (GFD's single strategy writes e.g. A100-SXM4-40GB-MIG-1g.5gb)", shown(*product)));
    if (auto model = model_of(reg_, p.base)) out.models.push_back(*model);
    if (!p.mig_profile.empty() && out.shape.gpus == 1 && out.mig_profile.empty()) {
      // MIG single strategy: nvidia.com/gpu on a MIG product's nodes is one MIG device.
      out.mig_profile = p.mig_profile;
      out.shape.gpus = 0;
      out.shape.gpu_milli = 0;
    }
  }
  out.scheduler = get_string(o, child(spec, "schedulerName"), Field{prefix, ".schedulerName"});
  if (out.scheduler.empty()) out.scheduler = "default-scheduler";
  if (const json* p = child(spec, "priority"))
    out.priority = static_cast<std::int32_t>(get_int(o, p, Field{prefix, ".priority"}, std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max()));
  out.priority_class = get_string(o, child(spec, "priorityClassName"), Field{prefix, ".priorityClassName"});
  out.node_name = get_string(o, child(spec, "nodeName"), Field{prefix, ".nodeName"});

  // Node affinity: a single term of single-value In expressions is a plain selector; anything else
  // a constraint class.
  bool complex = false;
  const json* terms = nullptr;
  if (const json* aff = child(spec, "affinity")) {
    const std::string ap = prefix + ".affinity";
    for (const char* k : {"podAffinity", "podAntiAffinity"})
      if (child(aff, k)) warn_.add(o, fmt::format("{}.{}", ap, k), fmt::format("{} is not modelled (pods are placed without it)", k));
    if (const json* na = child(aff, "nodeAffinity")) {
      if (child(na, "preferredDuringSchedulingIgnoredDuringExecution"))
        warn_.add(o, ap + ".nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                  "preferred node affinity is a scoring preference, not modelled");
      if (const json* req = child(na, "requiredDuringSchedulingIgnoredDuringExecution")) {
        const std::string rp = ap + ".nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        terms = child(req, "nodeSelectorTerms");
        if (!terms) o.fail(rp, "missing", ErrorCode::kMissingField);
        get_array(o, terms, rp);
        if (terms->empty()) o.fail(rp, "an empty list matches no node");
        std::vector<std::pair<std::string, std::string>> simple;
        for (std::size_t t = 0; t < terms->size(); ++t) {
          const json& term = (*terms)[t];
          const std::string tp = fmt::format("{}[{}]", rp, t);
          get_object(o, &term, tp);
          for (const char* part : {"matchExpressions", "matchFields"}) {
            const json* exprs = child(&term, part);
            if (!exprs) continue;
            get_array(o, exprs, fmt::format("{}.{}", tp, part));
            for (std::size_t e = 0; e < exprs->size(); ++e) {
              const json& ex = (*exprs)[e];
              const std::string ep = fmt::format("{}.{}[{}]", tp, part, e);
              const std::string key = get_string(o, child(&ex, "key"), ep + ".key", true);
              const std::string op = get_string(o, child(&ex, "operator"), ep + ".operator", true);
              static const std::set<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
              if (!ops.contains(op))
                o.fail(ep + ".operator", fmt::format("expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"{}\"", op));
              const json* values = child(&ex, "values");
              if (values) {
                get_array(o, values, ep + ".values");
                for (std::size_t k = 0; k < values->size(); ++k) get_string(o, &(*values)[k], fmt::format("{}.values[{}]", ep, k));
              }
              if (part[5] == 'F' && key != "metadata.name")
                o.fail(ep + ".key", fmt::format("matchFields supports metadata.name only, got \"{}\"", key));
              if ((op == "Gt" || op == "Lt") && (!values || values->size() != 1))
                o.fail(ep + ".values", fmt::format("{} takes exactly one value", op));
              if ((op == "In" || op == "NotIn") && (!values || values->empty()))
                o.fail(ep + ".values", fmt::format("{} needs at least one value", op));
              if (terms->size() == 1 && part[5] == 'E' && op == "In" && values->size() == 1)
                simple.emplace_back(key, (*values)[0].get<std::string>());
              else
                complex = true;
            }
          }
        }
        if (!complex) {
          for (auto& kv : simple) {
            if (!find_label(out.selector, kv.first)) out.selector.push_back(std::move(kv));
            else if (*find_label(out.selector, kv.first) != kv.second) complex = true;  // contradicts: no node fits
          }
        }
      }
    }
  }
  if (child(spec, "topologySpreadConstraints"))
    warn_.add(o, prefix + ".topologySpreadConstraints", "topology spread constraints of single pods are not modelled");
  out.cls = constraint_class(o, spec, prefix, complex, terms);
  return out;
}

// GPU sharing by annotation, as KAI-Scheduler (and Run:ai) read it from a pod with no GPU resources
// (KAI pkg/common/constants, docs/gpu-sharing): `gpu-fraction: "0.5"` is that share of one GPU,
// `gpu-memory: "2000"` that many MiB of one GPU's memory (its share is the memory's part of the GPU:
// KAI counts gpu-memory / the node's GPU memory), `gpu-fraction-num-devices` the number of such
// devices (1 unless given). Run:ai's legacy MIG form puts the MIG resource in an annotation
// (`nvidia.com/mig-1g.5gb: "1"`, resources {}): one MIG instance of that profile. KAI refuses a
// fraction beside nvidia.com/gpu, and gpu-memory beside either; so does this reader, naming the field.
void Reader::read_gpu_sharing(const Obj& o, const std::vector<std::pair<std::string, std::string>>& annotations,
                              const std::string& prefix, PodSpecRead& s) {
  const std::string* fraction = find_label(annotations, "gpu-fraction");
  const std::string* memory = find_label(annotations, "gpu-memory");
  const std::string* devices = find_label(annotations, "gpu-fraction-num-devices");
  auto field = [&](std::string_view key) { return fmt::format("{}[\"{}\"]", prefix, key); };
  for (const auto& [key, value] : annotations) {
    if (key.rfind("nvidia.com/mig-", 0) != 0) continue;
    const auto count = parse_quantity(value, QuantityUnit::kCount);
    if (!count || *count != 1)
      o.fail(field(key), fmt::format("expected \"1\" (a task holds one MIG instance), got {}", shown(value)));
    if (s.shape.needs_gpu() || !s.mig_profile.empty() || fraction || memory)
      o.fail(field(key), "a MIG annotation beside GPU resources, another MIG device or a GPU fraction");
    s.mig_profile = key.substr(15);
    if (!mig::parse_profile_name(s.mig_profile)) o.fail(field(key), fmt::format("\"{}\" is not a MIG profile", key));
  }
  if (devices && !fraction && !memory) o.fail(field("gpu-fraction-num-devices"), "given without gpu-fraction or gpu-memory");
  if (!fraction && !memory) return;
  const std::string_view key = fraction ? "gpu-fraction" : "gpu-memory";
  if (fraction && memory) o.fail(field("gpu-memory"), "beside gpu-fraction (KAI: cannot request both GPU and GPU memory)");
  if (s.shape.needs_gpu() || !s.mig_profile.empty())
    o.fail(field(key), "beside nvidia.com/gpu or a MIG device (KAI: cannot have both GPU fraction request and whole GPU resource request)");
  std::int64_t num_devices = 1;
  if (devices) {
    const auto n = parse_quantity(*devices, QuantityUnit::kCount);
    if (!n || *n < 1 || *n > 1024)
      o.fail(field("gpu-fraction-num-devices"), fmt::format("expected a count of GPUs (1 to 1024), got {}", shown(*devices)));
    num_devices = *n;
  }
  s.shape.gpus = 1;
  if (fraction) {
    // A decimal in (0, 1]; KAI's webhook takes (0, 1), its scheduler (0, 1]. Rounded up to milli-GPU.
    const auto v = parse_decimal(*fraction);
    if (!v || !(*v > 0) || *v > 1) o.fail(field(key), fmt::format("expected a fraction of one GPU in (0, 1], got {}", shown(*fraction)));
    s.shape.gpu_milli = static_cast<MilliGpu>(std::clamp(std::ceil(*v * kMilliPerGpu - 1e-9), 1.0, double{kMilliPerGpu}));
  } else {
    const auto mib = parse_quantity(*memory, QuantityUnit::kCount);
    if (!mib || *mib < 1 || *mib > (std::int64_t{1} << 30))
      o.fail(field(key), fmt::format("expected GPU memory in MiB (a positive integer), got {}", shown(*memory)));
    s.shape.gpu_memory = *mib << 20;
    s.shape.gpu_milli = memory_share(s.models, s.shape.gpu_memory);
    if (s.models.empty() && s.node_name.empty())
      warn_.add(o, field(key),
                "GPU memory read as a share of the smallest GPU that holds it (a pod on a larger GPU holds more share "
                "than KAI counts there; a nvidia.com/gpu.product nodeSelector makes it exact)");
  }
  // A share of each of N GPUs: the job model shares one GPU per task, so the task takes N whole GPUs
  // (never over-committed: it holds at least what KAI gives it; it packs less densely), reported.
  if (num_devices > 1) {
    warn_.add(o, field("gpu-fraction-num-devices"),
              "a share of each of several GPUs is read as that many whole GPUs (the job model shares one GPU per task)");
    s.shape.gpus = static_cast<GpuCount>(num_devices);
    s.shape.gpu_milli = kMilliPerGpu;
  }
}

// The share of one GPU that `memory` is: of the pod's GPU model when it names one, else of the
// smallest GPU of the cluster that holds it (never less than KAI reserves on any node it may use;
// on a larger GPU the pod holds more share than KAI would, which is reported).
MilliGpu Reader::memory_share(const std::vector<std::string>& models, Bytes memory) const {
  Bytes of = 0;
  auto consider = [&](const std::string& model) {
    const auto id = reg_.find(model);
    const Bytes m = id ? reg_.model(*id).memory : 0;
    if (m >= memory && (of == 0 || m < of)) of = m;
  };
  // (The cluster's distinct models, not every node: this runs for every pod that asks by memory.)
  for (const std::string& m : models.empty() ? cluster_models_ : std::vector<std::string>{models[0]}) consider(m);
  if (of == 0) return kMilliPerGpu;  // no GPU holds it: it fits nowhere either way
  return static_cast<MilliGpu>(std::clamp<std::int64_t>((memory * kMilliPerGpu + of - 1) / of, 1, kMilliPerGpu));
}

// Shape and selectors, for grouping a gang's pods into task groups (only gangs need it).
std::string signature_of(const PodSpecRead& s) {
  std::string out = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", s.shape.cpu, s.shape.memory, s.shape.gpus, s.shape.gpu_milli,
                                s.shape.gpu_memory, s.mig_profile, s.cls, s.models.empty() ? "" : s.models[0], s.selector.size());
  for (const auto& [k, v] : s.selector) out += fmt::format("|{}={}", k, v);
  return out;
}

std::string Reader::queue_of_pod(const Obj& o, const std::vector<std::pair<std::string, std::string>>& labels) {
  if (const std::string* lq = find_label(labels, "kueue.x-k8s.io/queue-name")) {
    auto it = local_queues_.find(o.ns + "/" + *lq);
    if (it != local_queues_.end()) return it->second;
    warn_.add(o, "metadata.labels[\"kueue.x-k8s.io/queue-name\"]",
              "LocalQueue not in the input: the local queue's name is used as the queue");
    return *lq;
  }
  for (const char* key : {"kai.scheduler/queue", "runai/queue"})
    if (const std::string* q = find_label(labels, key)) return *q;
  return {};
}

std::int32_t Reader::priority_of(const Obj& o, const PodSpecRead& s, std::string_view field) {
  if (s.priority) return *s.priority;
  if (!s.priority_class.empty()) {
    auto it = in_.priority_classes.find(s.priority_class);
    if (it != in_.priority_classes.end()) return static_cast<std::int32_t>(it->second);
    static const std::map<std::string, std::int32_t> builtin = {{"system-cluster-critical", 2000000000},
                                                                {"system-node-critical", 2000001000}};
    if (auto b = builtin.find(s.priority_class); b != builtin.end()) return b->second;
    warn_.add(o, std::string(field), fmt::format("PriorityClass \"{}\" is not in the input: priority 0", s.priority_class));
    return 0;
  }
  return static_cast<std::int32_t>(default_priority_.value_or(0));
}

TaskGroupSpec group_from(const PodSpecRead& s, std::string name) {
  TaskGroupSpec g;
  g.name = std::move(name);
  g.shape = s.shape;
  g.selector = s.selector;
  if (s.cls >= 0) g.selector.emplace_back(fmt::format("{}{}", kClassLabelPrefix, s.cls), "true");
  g.allowed_models = s.models;
  g.mig_profile = s.mig_profile;
  return g;
}

void set_topology(Job& job, const std::vector<std::pair<std::string, std::string>>& annotations) {
  if (const std::string* r = find_label(annotations, "kueue.x-k8s.io/podset-required-topology"))
    job.job_topology = {*r, LevelMode::kRequired};
  else if (const std::string* p = find_label(annotations, "kueue.x-k8s.io/podset-preferred-topology"))
    job.job_topology = {*p, LevelMode::kPreferred};
}

struct PendingPod {
  const Obj* obj;
  PodSpecRead spec;
  std::vector<std::pair<std::string, std::string>> labels, annotations;
  std::int64_t created;
};

void Reader::read_pods() {
  // Gangs in first-seen order: key "ns/name" -> pending pods and bound count per task.
  struct Gang {
    std::string kind;
    std::string ns, name;
    std::vector<PendingPod> pods;
    std::int64_t running = 0;
    std::int64_t total_count = -1;  // Kueue pod-group-total-count
  };
  std::vector<Gang> gangs;
  std::map<std::string, std::size_t> gang_index;
  std::map<std::string, std::int64_t> volcano_running;  // "ns/job/task" -> bound pods
  for (Obj& o : objs_) {
    if (o.kind != "Pod") continue;
    json lazy_doc;  // a PodList's pod, parsed now and dropped after this iteration
    if (!o.v) {
      auto doc = io::detail::parse_json_fast(o.lazy, o.source, {.max_values = detail::kMaxObjectValues});
      if (!doc) throw ParseError{doc.error()};
      lazy_doc = std::move(*doc);
      o.v = &lazy_doc;
      identify(o);
      remember(o);
    }
    struct Forget {
      Obj& o;
      ~Forget() {
        if (!o.lazy.empty()) o.v = nullptr;
      }
    } forget{o};
    const std::string phase = get_string(o, path(o.v, {"status", "phase"}), "status.phase");
    if (phase == "Succeeded" || phase == "Failed") continue;  // holds nothing
    PendingPod p{&o, read_pod_spec(o, child(o.v, "spec"), "spec"), get_string_map(o, path(o.v, {"metadata", "labels"}), "metadata.labels"),
                 get_string_map(o, path(o.v, {"metadata", "annotations"}), "metadata.annotations"),
                 parse_timestamp(o, path(o.v, {"metadata", "creationTimestamp"}))};
    read_gpu_sharing(o, p.annotations, "metadata.annotations", p.spec);
    const std::string queue = queue_of_pod(o, p.labels);
    std::string gang_key, gang_kind;
    std::int64_t total_count = -1;
    if (const std::string* g = find_label(p.annotations, "scheduling.k8s.io/group-name")) gang_key = *g, gang_kind = "PodGroup";
    else if (const std::string* k = find_label(p.annotations, "pod-group-name")) gang_key = *k, gang_kind = "PodGroup";
    else if (const std::string* q = find_label(p.labels, "kueue.x-k8s.io/pod-group-name")) {
      gang_key = *q, gang_kind = "pod-group";
      if (const std::string* c = find_label(p.annotations, "kueue.x-k8s.io/pod-group-total-count")) {
        auto n = parse_quantity(*c, QuantityUnit::kCount);
        if (!n) o.fail("metadata.annotations[\"kueue.x-k8s.io/pod-group-total-count\"]", n.error().message);
        total_count = *n;
      }
    }
    const std::string* vjob = find_label(p.labels, "volcano.sh/job-name");
    const bool of_vjob = vjob && volcano_jobs_.contains(o.ns + "/" + *vjob);
    if (!p.spec.node_name.empty()) {
      RunningPod r;
      r.pod = {o.ns, o.name};
      r.source = o.source;
      r.node = p.spec.node_name;
      r.job.job_name = o.ns + "/" + o.name;
      r.job.queue_name = queue;
      if (gang_kind == "PodGroup") {
        auto pg = podgroups_.find(o.ns + "/" + gang_key);
        if (pg != podgroups_.end() && r.job.queue_name.empty())
          r.job.queue_name = get_string(*pg->second, path(pg->second->v, {"spec", "queue"}), "spec.queue");
      }
      r.job.groups.push_back(group_from(p.spec, "pod"));
      r.priority = priority_of(o, p.spec, "spec.priorityClassName");
      r.start_time = parse_timestamp(o, path(o.v, {"status", "startTime"}), "status.startTime");
      if (r.start_time == 0) r.start_time = p.created;
      in_.running.push_back(std::move(r));
      const std::string* gpu_group = find_label(p.labels, "runai-gpu-group");
      running_gpu_group_.push_back(gpu_group ? *gpu_group : std::string());
      if (!gang_key.empty()) {
        auto [it, fresh] = gang_index.emplace(o.ns + "/" + gang_key, gangs.size());
        if (fresh) gangs.push_back({gang_kind, o.ns, gang_key, {}, 0, total_count});
        ++gangs[it->second].running;
      }
      if (of_vjob) {
        const std::string* task = find_label(p.annotations, "volcano.sh/task-spec");
        ++volcano_running[o.ns + "/" + *vjob + "/" + (task ? *task : std::string())];
      }
      continue;
    }
    if (!opt_.scheduler_name.empty() && p.spec.scheduler != opt_.scheduler_name) {
      in_.skipped.push_back({o.ns, o.name});
      continue;
    }
    if (of_vjob) continue;  // the Volcano Job describes its pending pods (read_volcano_jobs)
    if (!gang_key.empty()) {
      auto [it, fresh] = gang_index.emplace(o.ns + "/" + gang_key, gangs.size());
      if (fresh) gangs.push_back({gang_kind, o.ns, gang_key, {}, 0, total_count});
      gangs[it->second].pods.push_back(std::move(p));
      continue;
    }
    Job job;
    job.job_name = o.ns + "/" + o.name;
    job.queue_name = queue;
    job.job_priority = priority_of(o, p.spec, "spec.priorityClassName");
    job.job_priority_class = p.spec.priority_class;
    job.job_submit_time = p.created;
    job.groups.push_back(group_from(p.spec, "pod"));
    set_topology(job, p.annotations);
    in_.jobs.push_back(std::move(job));
    in_.sources.push_back({"Pod", {o.ns, o.name}, {{{o.ns, o.name}}}});
  }
  for (Gang& g : gangs) {
    if (g.pods.empty()) continue;
    const Obj& first = *g.pods.front().obj;
    Job job;
    JobSource src;
    src.kind = g.kind;
    src.object = {g.ns, g.name};
    job.job_name = g.ns + "/" + g.name;
    // Task groups: pods with the same request, selectors and task name (Volcano's
    // volcano.sh/task-spec annotation) are replicas of one group.
    std::map<std::string, std::size_t> by_sig;
    std::int64_t created = std::numeric_limits<std::int64_t>::max();
    std::int32_t priority = std::numeric_limits<std::int32_t>::min();
    for (PendingPod& p : g.pods) {
      const std::string* task = find_label(p.annotations, "volcano.sh/task-spec");
      const std::string sig = (task ? *task : std::string()) + "#" + signature_of(p.spec);
      auto [it, fresh] = by_sig.emplace(sig, job.groups.size());
      if (fresh) {
        job.groups.push_back(group_from(p.spec, task ? *task : fmt::format("group-{}", job.groups.size())));
        job.groups.back().replicas = 0;
        src.pods.emplace_back();
      }
      ++job.groups[it->second].replicas;
      src.pods[it->second].push_back({p.obj->ns, p.obj->name});
      created = std::min(created, p.created);
      priority = std::max(priority, priority_of(*p.obj, p.spec, "spec.priorityClassName"));
      if (job.queue_name.empty()) job.queue_name = queue_of_pod(*p.obj, p.labels);
      if (job.job_priority_class.empty()) job.job_priority_class = p.spec.priority_class;
    }
    set_topology(job, g.pods.front().annotations);
    job.job_submit_time = created;
    job.job_priority = priority;
    std::int64_t pending = 0;
    for (const auto& grp : job.groups) pending += grp.replicas;
    std::int64_t min_member = pending + g.running;  // rigid unless the group says otherwise
    std::map<std::string, std::int64_t> min_task;
    if (g.kind == "PodGroup") {
      auto pg = podgroups_.find(g.ns + "/" + g.name);
      if (pg == podgroups_.end()) {
        warn_.add(first, "metadata.annotations[\"scheduling.k8s.io/group-name\"]",
                  "the pod's PodGroup is not in the input: its pending pods are read as one rigid gang");
      } else {
        const Obj& po = *pg->second;
        if (const json* m = path(po.v, {"spec", "minMember"})) min_member = get_int(po, m, "spec.minMember", 0, 1 << 20);
        if (const json* q = path(po.v, {"spec", "queue"})) job.queue_name = get_string(po, q, "spec.queue");
        if (const json* pc = path(po.v, {"spec", "priorityClassName"})) {
          PodSpecRead s;
          s.priority_class = get_string(po, pc, "spec.priorityClassName");
          job.job_priority_class = s.priority_class;
          job.job_priority = priority_of(po, s, "spec.priorityClassName");
        }
        if (const json* mt = path(po.v, {"spec", "minTaskMember"})) {
          get_object(po, mt, "spec.minTaskMember");
          for (const auto& [task, n] : mt->items()) min_task[task] = get_int(po, &n, fmt::format("spec.minTaskMember[\"{}\"]", task), 0, 1 << 20);
        }
        read_network_topology(po, child(po.v, "spec"), job);
        if (path(po.v, {"spec", "subGroupPolicy"}))
          warn_.add(po, "spec.subGroupPolicy",
                    "Volcano sub-groups (subGroupSize, minSubGroups, their networkTopology) are not read: the gang is "
                    "placed whole by its minMember");
        if (path(po.v, {"spec", "minResources"}))
          warn_.add(po, "spec.minResources", "minResources is not read (the gang's pods are)");
      }
    } else if (g.total_count >= 0) {
      min_member = g.total_count;
    }
    const std::int64_t need = std::max<std::int64_t>(0, min_member - g.running);
    if (!min_task.empty()) {
      for (auto& grp : job.groups)
        if (auto it = min_task.find(grp.name); it != min_task.end()) grp.min_replicas = static_cast<std::int32_t>(std::min<std::int64_t>(it->second, grp.replicas));
    } else if (need < pending) {
      if (job.groups.size() == 1) job.groups[0].min_replicas = static_cast<std::int32_t>(need);
      else
        warn_.add(first, "spec.minMember", "a minimum over several task groups is not expressible per group: the gang is read as rigid");
    } else if (need > pending) {
      warn_.add(first, "spec.minMember", fmt::format("minMember {} exceeds the gang's {} pods in the input; read as rigid", min_member, pending + g.running));
    }
    in_.jobs.push_back(std::move(job));
    in_.sources.push_back(std::move(src));
  }
  volcano_running_ = std::move(volcano_running);
}

// A Volcano Job (batch.volcano.sh/v1alpha1): one gang job whose groups are its tasks, each task's
// pod template read like a pod; replicas already bound (pods labelled volcano.sh/job-name and
// annotated volcano.sh/task-spec) are running work and leave the task. Pods Volcano would create
// are named <job>-<task>-<index>.
// Volcano's spec.networkTopology on a PodGroup or a Volcano Job (network-topology-aware scheduling,
// Volcano 1.12): mode "hard" (the default) puts every task inside one HyperNode of tier at most
// highestTierAllowed (or of the tier named highestTierName), else the job waits; "soft" prefers one,
// by that tier when given (Volcano's scheduler reads it as the preferred tier), else the lowest.
// HyperNode objects are not read: tier t is the reader's t-th topology level counted from the
// innermost (tier 1 = the last of Options::topology_levels and Kueue's levels), a tier name is a
// level name; reported as that approximation. Kueue's topology annotations, when given, win.
void Reader::read_network_topology(const Obj& o, const json* spec, Job& job) {
  const json* nt = child(spec, "networkTopology");
  if (!nt) return;
  get_object(o, nt, "spec.networkTopology");
  const std::string mode = get_string(o, child(nt, "mode"), "spec.networkTopology.mode");
  if (!mode.empty() && mode != "hard" && mode != "soft")
    o.fail("spec.networkTopology.mode", fmt::format("expected hard or soft, got {}", shown(mode)));
  const bool hard = mode != "soft";
  const std::string tier_name = get_string(o, child(nt, "highestTierName"), "spec.networkTopology.highestTierName");
  std::int64_t tier = 0;
  if (const json* t = child(nt, "highestTierAllowed")) tier = get_int(o, t, "spec.networkTopology.highestTierAllowed", 1, 1 << 20);
  const std::vector<std::string>& levels = in_.topology_levels;
  std::string level = tier_name;
  if (level.empty() && tier > 0 && static_cast<std::size_t>(tier) <= levels.size()) level = levels[levels.size() - static_cast<std::size_t>(tier)];
  if (level.empty() && tier == 0 && !hard && !levels.empty()) level = levels.back();
  if (level.empty()) {
    warn_.add(o, "spec.networkTopology",
              tier > 0 ? fmt::format("tier {} is above the {} topology levels read (--topology-level): no domain constraint", tier, levels.size())
                       : std::string("hard mode without highestTierAllowed (or highestTierName) constrains nothing, as in Volcano"));
    return;
  }
  if (!job.job_topology.level.empty()) {
    warn_.add(o, "spec.networkTopology", "Kueue's topology annotation is given too: it is the one followed");
    return;
  }
  job.job_topology = {level, hard ? LevelMode::kRequired : LevelMode::kPreferred};
  warn_.add(o, "spec.networkTopology",
            fmt::format("read as {} topology level {} (HyperNode objects are not read: tier 1 is the innermost --topology-level)",
                        hard ? "required" : "preferred", shown(level)));
}

void Reader::read_volcano_jobs() {
  for (const Obj& o : objs_) {
    if (o.kind != "Job" || o.group != "batch.volcano.sh") continue;
    const json* spec = child(o.v, "spec");
    if (!spec) o.fail("spec", "missing", ErrorCode::kMissingField);
    const std::string scheduler = get_string(o, child(spec, "schedulerName"), "spec.schedulerName");
    if (!opt_.scheduler_name.empty() && scheduler != opt_.scheduler_name) {
      in_.skipped.push_back({o.ns, o.name});
      continue;
    }
    const json* tasks = child(spec, "tasks");
    if (!tasks) o.fail("spec.tasks", "missing", ErrorCode::kMissingField);
    get_array(o, tasks, "spec.tasks");
    if (tasks->empty()) o.fail("spec.tasks", "expected at least one task");
    Job job;
    JobSource src;
    src.kind = "Job";
    src.object = {o.ns, o.name};
    job.job_name = o.ns + "/" + o.name;
    job.queue_name = get_string(o, child(spec, "queue"), "spec.queue");
    job.job_submit_time = parse_timestamp(o, path(o.v, {"metadata", "creationTimestamp"}));
    std::int64_t total = 0, running = 0;
    bool per_task_min = false;
    std::set<std::string> names;
    for (std::size_t t = 0; t < tasks->size(); ++t) {
      const json& task = (*tasks)[t];
      const std::string tp = fmt::format("spec.tasks[{}]", t);
      std::string name = get_string(o, child(&task, "name"), tp + ".name");
      if (name.empty()) name = fmt::format("task-{}", t);
      if (!names.insert(name).second) o.fail(tp + ".name", fmt::format("duplicate task \"{}\"", name), ErrorCode::kDuplicate);
      std::int64_t replicas = 1;
      // Kubernetes' documented scale ("Considerations for large clusters": at most 150,000 pods in
      // a cluster) bounds a job's replicas; 10^6 of them (268 bytes of YAML) took 1.75 GB here.
      if (const json* r = child(&task, "replicas")) replicas = get_int(o, r, tp + ".replicas", 0, kMaxPodsPerCluster);
      if (total + replicas > kMaxPodsPerCluster)
        o.fail(tp + ".replicas", fmt::format("the job's tasks have {} replicas: more than the {} pods a Kubernetes cluster holds",
                                             total + replicas, kMaxPodsPerCluster), ErrorCode::kLimit);
      PodSpecRead s = read_pod_spec(o, path(&task, {"template", "spec"}), tp + ".template.spec");
      const auto annotations = get_string_map(o, path(&task, {"template", "metadata", "annotations"}), tp + ".template.metadata.annotations");
      read_gpu_sharing(o, annotations, tp + ".template.metadata.annotations", s);
      if (job.job_topology.level.empty()) set_topology(job, annotations);
      const std::int64_t bound = volcano_running_[o.ns + "/" + o.name + "/" + name];
      running += bound;
      total += replicas;
      TaskGroupSpec g = group_from(s, name);
      g.replicas = static_cast<std::int32_t>(std::max<std::int64_t>(0, replicas - bound));
      if (const json* m = child(&task, "minAvailable")) {
        g.min_replicas = static_cast<std::int32_t>(std::clamp<std::int64_t>(get_int(o, m, tp + ".minAvailable", 0, 1 << 20) - bound, 0, g.replicas));
        per_task_min = true;
      }
      job.job_priority_class = get_string(o, child(spec, "priorityClassName"), "spec.priorityClassName");
      if (job.job_priority_class.empty()) job.job_priority_class = s.priority_class;
      std::vector<PodRef> pods;
      for (std::int64_t r = bound; r < replicas; ++r) pods.push_back({o.ns, fmt::format("{}-{}-{}", o.name, name, r)});
      if (g.replicas == 0) continue;
      job.groups.push_back(std::move(g));
      src.pods.push_back(std::move(pods));
    }
    if (job.groups.empty()) continue;  // everything runs
    PodSpecRead klass;
    klass.priority_class = job.job_priority_class;
    job.job_priority = priority_of(o, klass, "spec.priorityClassName");
    std::int64_t min_available = total;
    if (const json* m = child(spec, "minAvailable")) min_available = get_int(o, m, "spec.minAvailable", 0, 1 << 20);
    const std::int64_t need = std::max<std::int64_t>(0, min_available - running);
    std::int64_t pending = total - running;
    if (!per_task_min && need < pending) {
      if (job.groups.size() == 1) job.groups[0].min_replicas = static_cast<std::int32_t>(need);
      else warn_.add(o, "spec.minAvailable", "a minimum over several tasks without per-task minAvailable is read as rigid");
    }
    read_network_topology(o, spec, job);
    for (const char* k : {"policies", "plugins"})
      if (child(spec, k)) warn_.add(o, fmt::format("spec.{}", k), fmt::format("spec.{} is not modelled", k));
    in_.jobs.push_back(std::move(job));
    in_.sources.push_back(std::move(src));
  }
}

// A ResourceFlavor's GPU model: its nvidia.com/gpu.product node label, else the model of the nodes
// its nodeLabels select (the one with the most GPUs when they select several; reported).
std::string Reader::flavor_model(const Obj& o, const std::string& flavor) {
  const Obj* rf = nullptr;
  for (const Obj& x : objs_)
    if (x.kind == "ResourceFlavor" && x.name == flavor) rf = &x;
  if (!rf) {
    warn_.add(o, "spec.resourceGroups[].flavors[].name", fmt::format("ResourceFlavor \"{}\" is not in the input: its GPU quota applies to every GPU model", flavor));
    return {};
  }
  const auto labels = get_string_map(*rf, path(rf->v, {"spec", "nodeLabels"}), "spec.nodeLabels");
  if (const std::string* product = find_label(labels, "nvidia.com/gpu.product")) {
    auto m = model_of(reg_, split_product(*product).base);
    if (!m) rf->fail("spec.nodeLabels[\"nvidia.com/gpu.product\"]", fmt::format("unknown GPU model \"{}\"", *product), ErrorCode::kUnknownName);
    return *m;
  }
  for (const char* k : {"nodeTaints", "tolerations"})
    if (path(rf->v, {"spec", k}))
      warn_.add(*rf, fmt::format("spec.{}", k),
                std::string_view(k) == "nodeTaints" ? "flavor node taints are not read (the nodes' own taints are)"
                                                    : "flavor tolerations (added to admitted pods) are not read");
  std::map<std::string, std::size_t> gpus;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    bool match = true;
    for (const auto& [k, v] : labels) {
      const std::string* have = find_label(nodes_[n].labels, k);
      match = match && have && *have == v;
    }
    if (match && !node_recs_[n].model.empty()) gpus[node_recs_[n].model] += nodes_[n].gpus.size();
  }
  if (gpus.empty()) return {};
  auto best = std::max_element(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (gpus.size() > 1)
    warn_.add(*rf, "spec.nodeLabels", fmt::format("the flavor's nodes have {} GPU models; its GPU quota is read as {}", gpus.size(), best->first));
  return best->first;
}

// The queues some queue names as its parent (they hold weight only: the leaves hold quotas and jobs).
std::set<std::string> parent_names(const std::vector<QueueSpec>& queues) {
  std::set<std::string> out;
  for (const QueueSpec& q : queues)
    if (!q.parent.empty()) out.insert(q.parent);
  return out;
}

void add_amount(std::vector<std::pair<std::string, std::int64_t>>& v, const std::string& key, std::int64_t x) {
  for (auto& [k, a] : v)
    if (k == key) {
      // Saturating: two flavors' INT64_MAX memory quotas wrapped to -2 ("expected a non-negative
      // amount, got -2"); more than int64 holds is no limit at all.
      if (a == fairness::kNoLimit || x == fairness::kNoLimit || __builtin_add_overflow(a, x, &a)) a = fairness::kNoLimit;
      return;
    }
  v.emplace_back(key, x);
}

void Reader::read_queues() {
  const std::vector<std::string>& models = cluster_models_;
  std::set<std::string> names;
  for (const Obj& o : objs_) {
    const bool kueue = o.kind == "ClusterQueue" && o.group == "kueue.x-k8s.io";
    const bool kai = o.kind == "Queue" && o.group == "scheduling.run.ai";
    const bool volcano = o.kind == "Queue" && o.group == "scheduling.volcano.sh";
    if (!kueue && !kai && !volcano) continue;
    if (!names.insert(o.name).second) o.fail("metadata.name", fmt::format("duplicate queue \"{}\"", o.name), ErrorCode::kDuplicate);
    const json* spec = child(o.v, "spec");
    QueueSpec q;
    q.name = o.name;
    if (kueue) {
      // Kueue ClusterQueue (kueue.sigs.k8s.io/docs/concepts/cluster_queue): per flavor and resource
      // nominalQuota, borrowingLimit, lendingLimit; a resource the queue does not cover is
      // inadmissible (nominal 0). The fairness model has one CPU and one memory dimension, so CPU
      // and memory quotas of several flavors add up; GPU quotas go to their flavor's GPU model.
      q.kind = "ClusterQueue";
      q.unlisted = 0;
      q.cohort = get_string(o, child(spec, "cohort"), "spec.cohort");
      if (q.cohort.empty()) q.cohort = get_string(o, child(spec, "cohortName"), "spec.cohortName");
      const std::string strategy = get_string(o, child(spec, "queueingStrategy"), "spec.queueingStrategy");
      if (!strategy.empty() && strategy != "BestEffortFIFO" && strategy != "StrictFIFO")
        o.fail("spec.queueingStrategy", fmt::format("expected BestEffortFIFO or StrictFIFO, got \"{}\"", strategy));
      q.strict_fifo = strategy == "StrictFIFO";
      if (const json* w = path(spec, {"fairSharing", "weight"})) {
        auto r = io::detail::read_quantity(*w, "spec.fairSharing.weight", QuantityUnit::kMilli, kMilliPerCpu);
        if (!r || *r <= 0) o.fail("spec.fairSharing.weight", fmt::format("expected a positive weight, got {}", shown(*w)));
        q.weight = static_cast<double>(*r) / 1000.0;
      }
      // Kueue's preemption policies, each Never unless set (kueue.sigs.k8s.io "Preemption"), followed
      // by the cycle for this queue's pending jobs.
      const json* pre = child(spec, "preemption");
      constexpr WithinQueue within[] = {WithinQueue::kNever, WithinQueue::kLowerPriority, WithinQueue::kLowerOrNewerEqualPriority};
      q.within_queue = within[get_choice(o, child(pre, "withinClusterQueue"), "spec.preemption.withinClusterQueue",
                                         {"Never", "LowerPriority", "LowerOrNewerEqualPriority"}, 0)];
      constexpr CohortReclaim reclaim[] = {CohortReclaim::kNever, CohortReclaim::kLowerPriority, CohortReclaim::kAny};
      q.reclaim_within_cohort = reclaim[get_choice(o, child(pre, "reclaimWithinCohort"), "spec.preemption.reclaimWithinCohort",
                                                   {"Never", "LowerPriority", "Any"}, 0)];
      if (const json* borrow = child(pre, "borrowWithinCohort")) {
        q.borrow_within_cohort.lower_priority =
            get_choice(o, child(borrow, "policy"), "spec.preemption.borrowWithinCohort.policy", {"Never", "LowerPriority"}, 0) == 1;
        if (const json* t = child(borrow, "maxPriorityThreshold"))
          q.borrow_within_cohort.max_priority_threshold =
              get_int(o, t, "spec.preemption.borrowWithinCohort.maxPriorityThreshold", std::numeric_limits<std::int32_t>::min(),
                      std::numeric_limits<std::int32_t>::max());
        if (q.borrow_within_cohort.lower_priority && q.reclaim_within_cohort == CohortReclaim::kNever)
          o.fail("spec.preemption.borrowWithinCohort.policy",
                 "LowerPriority beside reclaimWithinCohort Never (Kueue refuses it: reclaimWithinCohort=Never and "
                 "borrowWithinCohort.Policy!=Never)");
      }
      if (const json* ns = child(spec, "namespaceSelector"); ns && !(ns->is_object() && ns->empty()))
        warn_.add(o, "spec.namespaceSelector", "the namespace selector is not checked");
      if (child(spec, "admissionChecks") || child(spec, "admissionChecksStrategy"))
        warn_.add(o, "spec.admissionChecks", "admission checks are not modelled");
      const json* groups = child(spec, "resourceGroups");
      if (groups) get_array(o, groups, "spec.resourceGroups");
      for (std::size_t gi = 0; groups && gi < groups->size(); ++gi) {
        const json& g = (*groups)[gi];
        const std::string gp = fmt::format("spec.resourceGroups[{}]", gi);
        const json* flavors = child(&g, "flavors");
        if (!flavors) o.fail(gp + ".flavors", "missing", ErrorCode::kMissingField);
        get_array(o, flavors, gp + ".flavors");
        for (std::size_t fi = 0; fi < flavors->size(); ++fi) {
          const json& f = (*flavors)[fi];
          const std::string fp = fmt::format("{}.flavors[{}]", gp, fi);
          const std::string fname = get_string(o, child(&f, "name"), fp + ".name", true);
          const json* resources = child(&f, "resources");
          if (!resources) o.fail(fp + ".resources", "missing", ErrorCode::kMissingField);
          get_array(o, resources, fp + ".resources");
          std::string model;
          bool model_known = false;
          for (std::size_t ri = 0; ri < resources->size(); ++ri) {
            const json& r = (*resources)[ri];
            const std::string rp = fmt::format("{}.resources[{}]", fp, ri);
            const std::string rname = get_string(o, child(&r, "name"), rp + ".name", true);
            std::vector<std::string> keys;
            QuantityUnit unit = QuantityUnit::kMilli;
            std::int64_t scale = kMilliPerCpu;
            if (rname == "cpu") keys = {"cpu"};
            else if (rname == "memory") keys = {"memory"}, unit = QuantityUnit::kBytes, scale = 1;
            else if (rname == "nvidia.com/gpu") {
              if (!model_known) model = flavor_model(o, fname), model_known = true;
              if (model.empty()) {
                if (models.size() > 1)
                  warn_.add(o, rp, "a GPU quota whose flavor names no GPU model applies to every GPU model of the cluster");
                for (const auto& m : models) keys.push_back("gpu/" + m);
              } else {
                keys = {"gpu/" + model};
                if (std::find(q.flavor_order.begin(), q.flavor_order.end(), model) == q.flavor_order.end()) q.flavor_order.push_back(model);
              }
            } else {
              warn_.add(o, rp + ".name", fmt::format("quota on resource {} is not modelled", rname));
              continue;
            }
            auto amount = [&](const char* field) -> std::optional<std::int64_t> {
              const json* v = child(&r, field);
              if (!v) return std::nullopt;
              return get_quantity(o, *v, fmt::format("{}.{}", rp, field), unit, scale);
            };
            const auto nominal = amount("nominalQuota");
            if (!nominal) o.fail(rp + ".nominalQuota", "missing", ErrorCode::kMissingField);
            for (const auto& key : keys) {
              add_amount(q.nominal, key, *nominal);
              if (auto b = amount("borrowingLimit")) add_amount(q.borrowing_limit, key, *b);
              if (auto l = amount("lendingLimit")) add_amount(q.lending_limit, key, *l);
            }
          }
        }
        if (flavors->size() > 1) {
          bool host = false;
          for (const json& f : *flavors)
            if (const json* rs = child(&f, "resources"))
              for (const json& r : *rs) host = host || r.value("name", "") == "cpu" || r.value("name", "") == "memory";
          if (host) warn_.add(o, gp, "CPU and memory quotas of several flavors are added up (one CPU and one memory dimension)");
        }
      }
    } else if (kai) {
      // KAI Scheduler Queue (docs/queues): per resource quota (-1 unlimited), limit (-1 none; 0 or
      // unset: nothing above quota) and overQuotaWeight; CPU in millicores, memory in MB (10^6
      // bytes), GPUs in devices. Every KAI queue lends what it does not use to the others: one cohort.
      q.kind = "Queue (KAI)";
      q.unlisted = fairness::kNoLimit;
      q.cohort = "kai";
      q.parent = get_string(o, child(spec, "parentQueue"), "spec.parentQueue");
      const json* res = child(spec, "resources");
      bool weight_set = false;
      for (const char* rname : {"cpu", "memory", "gpu"}) {
        const json* r = child(res, rname);
        if (!r) continue;
        const std::string rp = fmt::format("spec.resources.{}", rname);
        std::vector<std::string> keys;
        if (std::string_view(rname) == "gpu")
          for (const auto& m : models) keys.push_back("gpu/" + m);
        else keys = {rname};
        auto scaled = [&](const char* field, std::int64_t dflt) -> std::int64_t {
          const json* v = child(r, field);
          if (!v) return dflt;
          if (!v->is_number()) o.fail(fmt::format("{}.{}", rp, field), fmt::format("expected a number, got {}", shown(*v)));
          const double x = v->get<double>();
          if (x == -1) return fairness::kNoLimit;
          if (x < 0 || x > 1e15) o.fail(fmt::format("{}.{}", rp, field), fmt::format("expected -1 or a non-negative amount, got {}", shown(*v)));
          const double unit = std::string_view(rname) == "memory" ? 1e6 : 1.0;  // cpu: millicores; gpu: devices -> milli
          return static_cast<std::int64_t>(std::string_view(rname) == "gpu" ? x * 1000.0 : x * unit);
        };
        const std::int64_t quota = scaled("quota", 0);
        const std::int64_t limit = scaled("limit", 0);
        std::int64_t borrow = fairness::kNoLimit;
        if (quota != fairness::kNoLimit && limit != fairness::kNoLimit) borrow = std::max<std::int64_t>(0, limit - quota);
        for (const auto& key : keys) {
          add_amount(q.nominal, key, quota);
          add_amount(q.borrowing_limit, key, borrow);
        }
        if (const json* w = child(r, "overQuotaWeight"); w && std::string_view(rname) == "gpu") {
          if (!w->is_number() || w->get<double>() <= 0)
            o.fail(rp + ".overQuotaWeight", fmt::format("expected a positive number, got {}", shown(*w)));
          q.weight = w->get<double>();
          weight_set = true;
        }
      }
      (void)weight_set;
      if (child(spec, "priority")) warn_.add(o, "spec.priority", "queue priority (over-quota order) is not modelled");
      kai_objects_.emplace(q.name, &o);
    } else {
      // Volcano Queue (volcano.sh/en/docs/queue): weight; deserved -> nominal quota; capability ->
      // the most it may hold (nominal + borrowing); all Volcano queues reclaim from each other.
      q.kind = "Queue (Volcano)";
      q.unlisted = fairness::kNoLimit;
      q.cohort = "volcano";
      if (const json* w = child(spec, "weight")) q.weight = static_cast<double>(get_int(o, w, "spec.weight", 1, 1 << 20));
      std::vector<std::pair<std::string, std::int64_t>> capability;
      for (auto [field, target] : {std::pair<const char*, std::vector<std::pair<std::string, std::int64_t>>*>{"deserved", &q.nominal},
                                   {"capability", &capability}}) {
        const json* m = child(spec, field);
        if (!m) continue;
        get_object(o, m, fmt::format("spec.{}", field));
        for (const auto& [rname, v] : m->items()) {
          const std::string rp = fmt::format("spec.{}[\"{}\"]", field, rname);
          if (rname == "cpu") add_amount(*target, "cpu", get_quantity(o, v, rp, QuantityUnit::kMilli, kMilliPerCpu));
          else if (rname == "memory") add_amount(*target, "memory", get_quantity(o, v, rp, QuantityUnit::kBytes, 1));
          else if (rname == "nvidia.com/gpu") {
            const auto x = get_quantity(o, v, rp, QuantityUnit::kMilli, kMilliPerGpu);
            for (const auto& m2 : models) add_amount(*target, "gpu/" + m2, x);
          } else warn_.add(o, rp, fmt::format("resource {} is not modelled", rname));
        }
      }
      for (const auto& [key, cap] : capability) {
        std::int64_t nominal = fairness::kNoLimit;
        for (const auto& [k, a] : q.nominal)
          if (k == key) nominal = a;
        if (nominal == fairness::kNoLimit) add_amount(q.nominal, key, 0), nominal = 0;
        add_amount(q.borrowing_limit, key, std::max<std::int64_t>(0, cap - nominal));
      }
      if (child(spec, "guarantee")) warn_.add(o, "spec.guarantee", "guarantee is not modelled (deserved is the nominal quota)");
      if (const json* parent = child(spec, "parent"); parent && get_string(o, parent, "spec.parent") != "root")
        q.parent = get_string(o, parent, "spec.parent");  // Volcano >= 1.11 (capacity plugin's queue tree)
      read_volcano_hierarchy(o, q);
      if (const json* r = child(spec, "reclaimable"); r && r->is_boolean() && !r->get<bool>())
        warn_.add(o, "spec.reclaimable", "reclaimable: false is not modelled");
    }
    in_.queues.push_back(std::move(q));
  }
  finish_kai_queues();
  finish_volcano_hierarchy();
}

// Volcano's hierarchical DRF (docs/design/hdrf.md; the drf plugin with enableHierarchy): a Queue's
// annotations volcano.sh/hierarchy "root/eng/prod" and volcano.sh/hierarchy-weights "1/2/8" place it
// in a tree of weighted inner nodes. Each inner node becomes a parent queue named by its path
// ("root/eng": no Kubernetes object has a '/' in its name) with its weight; the leaf takes the last
// weight. Volcano clamps weights below 1 to 1 and prepends "root" when missing; so does this reader.
void Reader::read_volcano_hierarchy(const Obj& o, QueueSpec& q) {
  const auto annotations = get_string_map(o, path(o.v, {"metadata", "annotations"}), "metadata.annotations");
  const std::string* h = find_label(annotations, "volcano.sh/hierarchy");
  const std::string* w = find_label(annotations, "volcano.sh/hierarchy-weights");
  const std::string hf = "metadata.annotations[\"volcano.sh/hierarchy\"]";
  const std::string wf = "metadata.annotations[\"volcano.sh/hierarchy-weights\"]";
  if (!h && !w) return;
  if (!h || !w) o.fail(h ? wf : hf, "missing: volcano.sh/hierarchy and volcano.sh/hierarchy-weights go together", ErrorCode::kMissingField);
  auto split = [](std::string_view text) {
    std::vector<std::string> out;
    for (std::size_t at = 0;;) {
      const std::size_t slash = text.find('/', at);
      out.emplace_back(text.substr(at, slash == std::string_view::npos ? std::string_view::npos : slash - at));
      if (slash == std::string_view::npos) return out;
      at = slash + 1;
    }
  };
  std::vector<std::string> names = split(*h), weights = split(*w);
  if (names.empty() || names[0] != "root") {  // Volcano's admission policy prepends both
    names.insert(names.begin(), "root");
    weights.insert(weights.begin(), "1");
  }
  if (weights.size() != names.size())
    o.fail(wf, fmt::format("{} weights for the {} levels of {}", weights.size(), names.size(), shown(*h)));
  if (names.size() > 64) o.fail(hf, "more than 64 levels", ErrorCode::kLimit);
  VolcanoPath vp;
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k].empty()) o.fail(hf, fmt::format("an empty level in {}", shown(*h)));
    const auto x = parse_decimal(weights[k]);
    if (!x || *x > 1e9) o.fail(wf, fmt::format("level {}: expected a weight, got {}", k, shown(weights[k])));
    vp.weights.push_back(std::max(1.0, *x));
  }
  vp.names = std::move(names);
  vp.object = &o;
  q.weight = vp.weights.back();
  volcano_paths_.emplace(q.name, std::move(vp));
}

// The inner nodes of the Volcano paths read (read_volcano_hierarchy) as parent queues, outermost
// first; a path that is another's inner node, or an inner node given two weights, is an error.
void Reader::finish_volcano_hierarchy() {
  std::map<std::string, std::pair<double, const Obj*>> inner;  // "root/eng" -> weight, first object
  std::map<std::string, std::string> leaf_at;                   // "root/eng/prod" -> queue
  for (const auto& [queue, vp] : volcano_paths_) {
    std::string at = vp.names[0];
    for (std::size_t k = 1; k < vp.names.size(); ++k) {
      at += "/" + vp.names[k];
      if (k + 1 == vp.names.size()) {
        if (auto [it, fresh] = leaf_at.emplace(at, queue); !fresh)
          vp.object->fail("metadata.annotations[\"volcano.sh/hierarchy\"]",
                          fmt::format("the path {} is also queue {}'s", shown(at), it->second), ErrorCode::kDuplicate);
        continue;
      }
      auto [it, fresh] = inner.emplace(at, std::pair{vp.weights[k], vp.object});
      if (!fresh && it->second.first != vp.weights[k])
        vp.object->fail("metadata.annotations[\"volcano.sh/hierarchy-weights\"]",
                        fmt::format("{} has weight {} here and {} in Queue {}", shown(at), vp.weights[k], it->second.first,
                                    it->second.second->name));
    }
  }
  for (const auto& [at, queue] : leaf_at)
    if (inner.contains(at))
      volcano_paths_.at(queue).object->fail("metadata.annotations[\"volcano.sh/hierarchy\"]",
                                            fmt::format("{} is a leaf here and an inner node of another queue's path", shown(at)));
  for (const auto& [at, wo] : inner) {  // map order: a parent's path sorts before its children's
    QueueSpec p;
    p.name = at;
    p.kind = "Queue (Volcano)";
    p.weight = wo.first;
    const std::size_t slash = at.rfind('/');
    if (const std::string up = at.substr(0, slash); up.find('/') != std::string::npos) p.parent = up;
    in_.queues.push_back(std::move(p));
  }
  for (QueueSpec& q : in_.queues)
    if (auto it = volcano_paths_.find(q.name); it != volcano_paths_.end() && it->second.names.size() > 2) {
      const auto& n = it->second.names;
      std::string parent = n[0];
      for (std::size_t k = 1; k + 1 < n.size(); ++k) parent += "/" + n[k];
      q.parent = parent;
    }
}

// KAI's queue tree (docs/queues, docs/fairness): only leaf queues hold jobs; a parent divides what it
// gets among its children by their quotas, then by overQuotaWeight. In the one queue model a parent
// carries its weight only (the children's quotas apply), so a parent's quota or limit other than
// "none" (quota 0 or -1, limit -1) is reported by field. The cluster's capacity that no leaf's quota
// covers is KAI's over-quota pool, shared by weight: it joins the "kai" cohort as a member that holds
// no jobs ("(kai over-quota pool)"), so a queue of quota 0 and limit -1 (the quickstart's) may use
// what nobody's quota holds instead of nothing.
void Reader::finish_kai_queues() {
  if (kai_objects_.empty()) return;
  const std::set<std::string> parents = parent_names(in_.queues);
  std::map<std::string, std::int64_t> quota_sum;  // per key, over leaves with a finite quota
  bool finite = false;
  for (QueueSpec& q : in_.queues) {
    if (q.kind != "Queue (KAI)") continue;
    if (!parents.contains(q.name)) {
      for (const auto& [key, x] : q.nominal)
        if (x != fairness::kNoLimit) {
          finite = true;
          std::int64_t& s = quota_sum[key];
          s = x > std::numeric_limits<std::int64_t>::max() - s ? std::numeric_limits<std::int64_t>::max() : s + x;
        }
      continue;
    }
    const Obj& o = *kai_objects_.at(q.name);
    for (const char* rname : {"cpu", "memory", "gpu"}) {
      const json* r = path(o.v, {"spec", "resources", rname});
      for (const char* field : {"quota", "limit"}) {
        const json* v = child(r, field);
        const double x = v && v->is_number() ? v->get<double>() : (std::string_view(field) == "quota" ? 0.0 : -1.0);
        if (std::string_view(field) == "quota" ? (x != 0 && x != -1) : x != -1)
          warn_.add(o, fmt::format("spec.resources.{}.{}", rname, field),
                    "a parent queue's quota and limit are not modelled: its child queues' quotas and limits apply, "
                    "and it divides by weight");
      }
    }
    q.nominal.clear();
    q.borrowing_limit.clear();
    q.cohort.clear();
  }
  if (!finite) return;
  std::map<std::string, std::int64_t> capacity;
  for (const NodeSpec& n : nodes_) {
    capacity["cpu"] += n.cpu;
    capacity["memory"] = n.memory > std::numeric_limits<std::int64_t>::max() - capacity["memory"]
                             ? std::numeric_limits<std::int64_t>::max()
                             : capacity["memory"] + n.memory;
    for (const GpuSpec& g : n.gpus)
      if (const auto id = reg_.find(g.model)) capacity["gpu/" + reg_.model(*id).name] += kMilliPerGpu;
  }
  QueueSpec pool;
  pool.name = "(kai over-quota pool)";
  pool.kind = "Queue (KAI)";
  pool.cohort = "kai";
  for (const auto& [key, cap] : capacity) {
    add_amount(pool.nominal, key, std::max<std::int64_t>(0, cap - quota_sum[key]));
    add_amount(pool.borrowing_limit, key, 0);
  }
  in_.queues.push_back(std::move(pool));
}

// Bound pods take their requests from their nodes: CPU and memory, whole GPUs on the lowest
// indices that are free (the device plugin's device IDs are not in the Pod object), a MIG device
// on the first idle instance of its profile.
void Reader::apply_running() {
  std::map<std::pair<std::size_t, std::string>, std::size_t> shared_gpu;  // (node, runai-gpu-group) -> GPU
  for (std::size_t ri = 0; ri < in_.running.size(); ++ri) {
    RunningPod& r = in_.running[ri];
    Obj o{nullptr, r.source, "Pod", "", r.pod.ns, r.pod.name, {}};
    auto it = node_index_.find(r.node);
    if (it == node_index_.end()) {
      warn_.add(o, "spec.nodeName", "bound to a node that is not in the input: its usage is not counted");
      continue;
    }
    NodeSpec& node = nodes_[it->second];
    TaskGroupSpec& g = r.job.groups[0];
    if (const std::string& single = node_recs_[it->second].mig_profile; !single.empty() && g.shape.gpus > 0) {
      // MIG single strategy: the pod's nvidia.com/gpu are MIG devices of the node's profile (a
      // pending pod says so by its nodeSelector; a bound one by its node).
      if (g.shape.gpus == 1) {
        g.mig_profile = single;
        g.shape.gpus = 0;
        g.shape.gpu_milli = 0;
      } else {
        warn_.add(o, "spec.nodeName", fmt::format("bound to a MIG single-strategy node with {} nvidia.com/gpu: the job model gives a task one MIG device; its GPU usage is not counted", g.shape.gpus));
        g.shape.gpus = 0;
        g.shape.gpu_milli = 0;
      }
    }
    if (g.shape.gpus > 0 || !g.mig_profile.empty()) r.gpu_model = node_recs_[it->second].model;
    if (g.shape.shares_gpu() && g.shape.gpu_memory > 0 && !r.gpu_model.empty())
      g.shape.gpu_milli = memory_share({r.gpu_model}, g.shape.gpu_memory);  // KAI: of this node's GPU
    if (!opt_.subtract_running) continue;
    // Saturating, then capped below: bound pods' requests may add up past int64.
    if (__builtin_add_overflow(node.cpu_used, g.shape.cpu, &node.cpu_used)) node.cpu_used = std::numeric_limits<std::int64_t>::max();
    if (__builtin_add_overflow(node.memory_used, g.shape.memory, &node.memory_used))
      node.memory_used = std::numeric_limits<std::int64_t>::max();
    if (node.cpu_used > node.cpu || node.memory_used > node.memory) {
      warn_.add(o, "spec.nodeName", "the node's bound pods ask for more CPU or memory than it has: usage capped at capacity");
      node.cpu_used = std::min(node.cpu_used, node.cpu);
      node.memory_used = std::min(node.memory_used, node.memory);
    }
    if (g.shape.shares_gpu()) {
      take_shared_gpu(o, node, it->second, running_gpu_group_[ri], g, shared_gpu);
      continue;
    }
    GpuCount left = g.shape.gpus;
    for (auto& gpu : node.gpus) {
      if (left == 0) break;
      if (!gpu.mig_mode && gpu.used_milli == 0) gpu.used_milli = kMilliPerGpu, --left;
    }
    if (left > 0) warn_.add(o, "spec.nodeName", "the node's bound pods use more GPUs than it has");
    if (!g.mig_profile.empty()) {
      bool taken = false;
      const auto geometry = mig::parse_profile_name(g.mig_profile);
      for (auto& gpu : node.gpus) {
        if (!gpu.mig_mode || taken || !geometry) continue;
        const auto mid = mig::MigCatalog::builtin().find(gpu.model);
        if (!mid) continue;
        const auto& spec = mig::MigCatalog::builtin().spec(*mid);
        const int pi = mig::match_profile(spec, *geometry);
        for (auto& inst : gpu.mig_instances)
          if (!taken && pi >= 0 && !inst.busy && inst.profile_id == spec.profiles[static_cast<std::size_t>(pi)].id)
            inst.busy = true, taken = true;
      }
      if (!taken) warn_.add(o, "spec.nodeName", fmt::format("no idle MIG device {} left on the node for a bound pod", g.mig_profile));
    }
  }
}

// A bound pod's GPU share (a KAI fraction). The Pod object does not say which device it got, but
// KAI's binder labels the pods of one shared GPU with one runai-gpu-group: a group's pods share its
// GPU, and a new group takes a GPU no other group holds (an idle one first). A pod without the
// label takes the first GPU already shared that has room, else the first idle one.
void Reader::take_shared_gpu(const Obj& o, NodeSpec& node, std::size_t node_index, const std::string& group,
                             TaskGroupSpec& g, std::map<std::pair<std::size_t, std::string>, std::size_t>& shared_gpu) {
  auto fits = [&](const GpuSpec& gpu) {
    const auto id = reg_.find(gpu.model);
    const Bytes capacity = id ? reg_.model(*id).memory : 0;
    return !gpu.mig_mode && gpu.used_milli + g.shape.gpu_milli <= kMilliPerGpu &&
           (capacity == 0 || gpu.used_memory + g.shape.gpu_memory <= capacity);
  };
  std::optional<std::size_t> pick;
  auto of_a_group = [&](std::size_t k) {  // the map is ordered by node: this node's groups only
    for (auto it = shared_gpu.lower_bound({node_index, std::string()}); it != shared_gpu.end() && it->first.first == node_index; ++it)
      if (it->second == k) return true;
    return false;
  };
  if (!group.empty())
    if (auto it = shared_gpu.find({node_index, group}); it != shared_gpu.end()) pick = it->second;
  for (int pass = 0; pass < 2 && !pick; ++pass)
    for (std::size_t k = 0; k < node.gpus.size() && !pick; ++k) {
      if (!fits(node.gpus[k])) continue;
      const bool shared = node.gpus[k].used_milli > 0;
      if (group.empty() ? (pass == 1 || shared) : (!of_a_group(k) && (pass == 1 || !shared))) pick = k;
    }
  if (!pick || !fits(node.gpus[*pick])) {
    warn_.add(o, "spec.nodeName", "no GPU of the node has room for the bound pod's GPU fraction: its share is not counted");
    return;
  }
  if (!group.empty()) shared_gpu.emplace(std::pair{node_index, group}, *pick);
  node.gpus[*pick].used_milli += g.shape.gpu_milli;
  node.gpus[*pick].used_memory += g.shape.gpu_memory;
}

void Reader::apply_classes() {
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    const auto& [tolerated, terms] = classes_[c];
    const std::string key = fmt::format("{}{}", kClassLabelPrefix, c);
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (node_recs_[n].taint_mask & ~tolerated) continue;
      bool ok = !terms;
      for (std::size_t t = 0; terms && t < terms->size() && !ok; ++t) ok = term_matches((*terms)[t], n);
      if (ok) nodes_[n].labels.emplace_back(key, "true");
    }
  }
}

}  // namespace

std::string to_string(const Warning& w) {
  std::string out = fmt::format("{}: {}: {}", w.object, w.field, w.message);
  if (w.count > 1) out += fmt::format(" ({} objects)", w.count);
  return out;
}

Result<Input> read(std::span<const Source> sources, const Options& options) {
  try {
    Reader reader(options);
    return reader.run(sources);
  } catch (const ParseError& e) {
    return e.error;
  } catch (const json::exception& e) {
    return Error{fmt::format("kubernetes objects: {}", e.what()), ErrorCode::kInvalidValue};
  } catch (const std::bad_alloc&) {
    return Error{"kubernetes objects: out of memory", ErrorCode::kLimit};
  }
}

Result<std::vector<fairness::QueueConfig>> queue_configs(const Input& input, const fairness::ResourceSpace& space) {
  std::vector<fairness::QueueConfig> out;
  std::vector<std::string> names;
  for (const QueueSpec& q : input.queues) names.push_back(q.name);
  auto fill = [&](const QueueSpec& q, const std::vector<std::pair<std::string, std::int64_t>>& amounts,
                  std::int64_t unlisted) -> Result<fairness::Amounts> {
    fairness::Amounts a = fairness::Amounts::Constant(space.size(), unlisted);
    for (const auto& [key, x] : amounts) {
      std::optional<Eigen::Index> d;
      if (key == "cpu") d = fairness::ResourceSpace::kCpu;
      else if (key == "memory") d = fairness::ResourceSpace::kMemory;
      else if (key.rfind("gpu/", 0) == 0) d = space.gpu_dim(key.substr(4));
      if (!d) continue;  // a GPU model the cluster does not have
      a[*d] = x;
    }
    (void)q;
    return a;
  };
  const std::set<std::string> parents = parent_names(input.queues);
  for (const QueueSpec& q : input.queues) {
    fairness::QueueConfig c;
    c.name = q.name;
    c.parent = q.parent;
    c.weight = q.weight;
    c.cohort = q.cohort;
    c.strict_fifo = q.strict_fifo;
    c.within_queue = q.within_queue;
    c.reclaim_within_cohort = q.reclaim_within_cohort;
    c.borrow_within_cohort = q.borrow_within_cohort;
    for (const auto& m : q.flavor_order)
      if (space.gpu_dim(m)) c.flavor_order.push_back(m);
    if (parents.contains(q.name)) {  // a parent queue divides by weight; its leaves hold the quotas
      out.push_back(std::move(c));
      continue;
    }
    c.nominal = *fill(q, q.nominal, q.unlisted);
    if (!q.borrowing_limit.empty()) c.borrowing_limit = *fill(q, q.borrowing_limit, fairness::kNoLimit);
    if (!q.lending_limit.empty()) c.lending_limit = *fill(q, q.lending_limit, fairness::kNoLimit);
    out.push_back(std::move(c));
  }
  std::vector<fairness::RunningJob> running;
  for (const RunningPod& r : input.running)
    if (std::find(names.begin(), names.end(), r.job.queue_name) != names.end()) running.push_back({&r.job, r.gpu_model});
  auto usage = fairness::queue_usage_from_running(running, space, input.registry, names);
  if (!usage) return Error{fmt::format("running pods: {}", usage.error().message), usage.error().code, usage.error().field};
  for (std::size_t q = 0; q < out.size(); ++q)
    if (!parents.contains(out[q].name)) out[q].usage = (*usage)[q];  // jobs run in leaf queues only
  return out;
}

namespace {

json bindings_object(const Input& input, const ClusterState& state, std::span<const JobPlacement> placements,
                     std::span<const std::string> messages) {
  json bindings = json::array();
  json pending = json::array();
  for (std::size_t j = 0; j < input.jobs.size(); ++j) {
    const JobSource& src = input.sources[j];
    const JobPlacement* p = j < placements.size() ? &placements[j] : nullptr;
    std::vector<std::vector<bool>> bound(src.pods.size());
    for (std::size_t g = 0; g < src.pods.size(); ++g) bound[g].assign(src.pods[g].size(), false);
    if (p && p->placed()) {
      for (const TaskPlacement& t : p->tasks) {
        if (t.group >= src.pods.size() || t.replica >= src.pods[t.group].size()) continue;
        const PodRef& pod = src.pods[t.group][t.replica];
        bound[t.group][t.replica] = true;
        const TaskAssignment& a = t.assignment;
        json b{{"pod", pod.ns + "/" + pod.name}, {"namespace", pod.ns}, {"name", pod.name},
               {"node", std::string(state.node_name(a.node))}};
        json gpus = json::array();
        for (auto g : a.gpus) gpus.push_back(g);
        b["gpus"] = gpus;
        if (a.is_mig() && !a.gpus.empty()) {
          const auto id = state.mig_gpu(a.node, a.gpus[0]);
          std::string profile;
          if (id != mig::kNoGpu) profile = state.mig().spec_of(id).profiles[static_cast<std::size_t>(a.mig_profile)].name;
          b["mig"] = json{{"gpu", a.gpus[0]}, {"profile", profile}, {"start", a.mig_start}};
        } else if (a.gpu_milli > 0 && a.gpu_milli < kMilliPerGpu) {
          b["gpu_milli"] = a.gpu_milli;
        }
        b["job"] = input.jobs[j].job_name;
        bindings.push_back(std::move(b));
      }
    }
    for (std::size_t g = 0; g < src.pods.size(); ++g)
      for (std::size_t r = 0; r < src.pods[g].size(); ++r) {
        if (bound[g][r]) continue;
        const PodRef& pod = src.pods[g][r];
        json e{{"pod", pod.ns + "/" + pod.name}, {"job", input.jobs[j].job_name}};
        if (p) e["verdict"] = std::string(verdict_name(p->placed() ? Verdict::kNotNow : p->verdict));
        if (j < messages.size() && !messages[j].empty()) e["message"] = messages[j];
        else if (p && p->placed()) e["message"] = "the gang was placed at its minimum; this pod waits";
        pending.push_back(std::move(e));
      }
  }
  json warnings = json::array();
  for (const Warning& w : input.warnings)
    warnings.push_back(json{{"object", w.object}, {"field", w.field}, {"message", w.message}, {"count", w.count}});
  return json{{"bindings", bindings}, {"pending", pending}, {"warnings", warnings}};
}

json instances_json(const mig::MigGpuSpec& spec, std::span<const mig::MigInstance> instances) {
  json out = json::array();
  for (const mig::MigInstance& i : instances) {
    const int p = spec.find_id(i.profile_id);
    out.push_back(json{{"profile", p >= 0 ? spec.profiles[static_cast<std::size_t>(p)].name : std::string("?")}, {"start", i.start}});
  }
  return out;
}

std::string dump(const json& v) { return v.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string bindings_json(const Input& input, const ClusterState& state, std::span<const JobPlacement> placements,
                          std::span<const std::string> messages) {
  return dump(bindings_object(input, state, placements, messages));
}

namespace {

json repartition_object(const ClusterState& state, const mig::MigPlan& plan) {
  json gpus = json::array();
  for (const mig::MigGpuChange& c : plan.changes) {
    const mig::MigGpuSpec& spec = state.mig().spec_of(c.gpu);
    gpus.push_back(json{{"node", std::string(state.node_name(state.mig().node_of(c.gpu)))},
                        {"gpu", state.mig().local_index(c.gpu)},
                        {"destroy", instances_json(spec, c.destroyed)},
                        {"create", instances_json(spec, c.created)},
                        {"after", instances_json(spec, c.after)}});
  }
  return json{{"served", plan.total_served()}, {"unserved", plan.total_unserved()}, {"gpus", std::move(gpus)}};
}

}  // namespace

std::string repartition_json(const ClusterState& state, const mig::MigPlan& plan) {
  return plan.changes.empty() ? std::string() : dump(repartition_object(state, plan));
}

std::string bindings_json(const Input& input, const ClusterState& state, const Decisions& decisions) {
  json out = bindings_object(input, state, decisions.placements, decisions.messages);
  if (!decisions.repartition.changes.empty()) out["repartition"] = repartition_object(state, decisions.repartition);
  return dump(out);
}

}  // namespace gpusched::io::k8s
