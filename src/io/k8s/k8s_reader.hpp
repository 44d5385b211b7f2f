// src/io/k8s/k8s_reader.hpp — the Kubernetes reader's shared parts (private, not installed): the
// object being read and its field paths, the field readers that fail naming them, warnings, and the
// Reader, whose members live in one file per object kind: k8s_reader.cpp (documents, priority
// classes, the running pods, assembling the Input), k8s_nodes.cpp, k8s_pod_spec.cpp (what a pod
// asks for), k8s_pods.cpp (pods, PodGroups and Volcano Jobs into jobs), k8s_queues.cpp (Kueue,
// Volcano and KAI queues); k8s_bindings.cpp writes the answers back.
#pragma once

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

namespace gpusched::io::k8s::reader {


using json = nlohmann::json;

struct ParseError {
  Error error;
};

inline constexpr std::int64_t kMaxPodsPerCluster = 150'000;

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

inline std::string shown(const json& v) { return io::detail::shown(v, 60); }

inline const json* child(const json* v, std::string_view key) {
  if (!v || !v->is_object()) return nullptr;
  auto it = v->find(key);
  return it == v->end() || it->is_null() ? nullptr : &*it;
}
inline const json* path(const json* v, std::initializer_list<std::string_view> keys) {
  for (auto k : keys) v = child(v, k);
  return v;
}

inline std::string get_string(const Obj& o, const json* v, const Field& field, bool required = false) {
  if (!v) {
    if (required) o.fail(field.str(), "missing", ErrorCode::kMissingField);
    return {};
  }
  if (!v->is_string()) o.fail(field.str(), fmt::format("expected a string, got {}", shown(*v)));
  return v->get_ref<const std::string&>();
}

inline const json& get_object(const Obj& o, const json* v, const Field& field) {
  if (!v->is_object()) o.fail(field.str(), fmt::format("expected an object, got {}", shown(*v)));
  return *v;
}
inline const json& get_array(const Obj& o, const json* v, const Field& field) {
  if (!v->is_array()) o.fail(field.str(), fmt::format("expected a list, got {}", shown(*v)));
  return *v;
}

inline std::int64_t get_int(const Obj& o, const json* v, const Field& field_path, std::int64_t lo, std::int64_t hi) {
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

inline std::int64_t get_quantity(const Obj& o, const json& v, const Field& field_path, QuantityUnit unit, std::int64_t scale) {
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
inline std::int64_t get_quantity(const Obj& o, const json& v, MakeField&& make_field, QuantityUnit unit, std::int64_t scale) {
  auto r = io::detail::read_quantity(v, {}, unit, scale);
  if (!r) {
    const std::string field = make_field();
    r = io::detail::read_quantity(v, field, unit, scale);
    throw ParseError{Error{fmt::format("{}: {}: {}", o.source, o.id(), r.error().message), r.error().code, field}};
  }
  return *r;
}

inline std::vector<std::pair<std::string, std::string>> get_string_map(const Obj& o, const json* v, const Field& field) {
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

inline const std::string* find_label(const std::vector<std::pair<std::string, std::string>>& labels, std::string_view key) {
  for (const auto& [k, v] : labels)
    if (k == key) return &v;
  return nullptr;
}

// metadata.creationTimestamp (RFC 3339, "2024-05-01T10:00:00Z") in seconds since the epoch; 0 when
// absent. Days from the civil date by Howard Hinnant's days_from_civil.
inline std::int64_t parse_timestamp(const Obj& o, const json* v, const Field& field = "metadata.creationTimestamp") {
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
inline std::optional<double> parse_decimal(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A field's value among `names` (its index); `fallback` when the field is absent or empty.
inline std::size_t get_choice(const Obj& o, const json* v, const std::string& field, std::initializer_list<std::string_view> names,
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
inline constexpr std::size_t kMaxTaints = 64;
inline constexpr std::size_t kMaxClasses = 256;
inline constexpr std::string_view kClassLabelPrefix = "gpusched.io/node-class-";

// A GPU product label as GPU Feature Discovery writes it: "NVIDIA-A100-SXM4-40GB",
// "A100-SXM4-40GB-MIG-1g.5gb" (MIG single strategy), "Tesla-T4-SHARED" (time-slicing renames).
struct Product {
  std::string base;
  std::string mig_profile;  // "" unless "-MIG-<profile>"
  bool mig = false;         // "-MIG-" was in it (GFD's single strategy), with a profile or not
  bool shared = false;
};
inline Product split_product(std::string_view p) {
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
inline std::optional<std::string> model_of(const GpuModelRegistry& reg, std::string_view base) {
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

// The object's name and namespace, checked as the API server checks them (k8s_reader.cpp).
void identify(Obj& o);

struct PendingPod;
struct PodGangRef;
struct PodGang;
struct PodGangs;

class Reader {
 public:
  explicit Reader(const Options& opt) : opt_(opt), reg_(opt.registry ? *opt.registry : GpuModelRegistry::builtin()) {}

  Input run(std::span<const Source> sources);

 private:
  void collect_source(const Source& s);
  void collect(const json& doc, const std::string& source, int depth);
  void read_topology_levels(const Obj& o);
  void remember(const Obj& o);
  void read_node(const Obj& o);
  void read_node_resources(const Obj& o, NodeSpec& node, std::int64_t& whole,
                           std::vector<std::pair<std::string, std::int64_t>>& mig);
  void read_node_gpus(const Obj& o, NodeSpec& node, NodeRec& rec, std::int64_t whole,
                      const std::vector<std::pair<std::string, std::int64_t>>& mig);
  std::uint64_t read_node_taints(const Obj& o, const json& taints);
  void build_mig(const Obj& o, NodeSpec& node, const std::string& model, std::int64_t whole,
                 const std::vector<std::pair<std::string, std::int64_t>>& mig, std::int64_t physical_label);
  PodSpecRead read_pod_spec(const Obj& o, const json* spec, const std::string& prefix);
  void read_pod_requests(const Obj& o, const json* spec, const std::string& prefix, PodSpecRead& out);
  void read_gpu_product_selector(const Obj& o, const json* spec, const std::string& prefix, PodSpecRead& out);
  void read_node_affinity(const Obj& o, const json* spec, const std::string& prefix, PodSpecRead& out, bool& complex,
                          const json*& terms);
  void check_selector_requirement(const Obj& o, const json& ex, const std::string& ep, const std::string& key,
                                  const std::string& op, bool match_fields);
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
  void read_kueue_queue(const Obj& o, const json* spec, QueueSpec& q);
  void read_kueue_resource_groups(const Obj& o, const json* spec, QueueSpec& q);
  void read_kai_queue(const Obj& o, const json* spec, QueueSpec& q);
  void read_volcano_queue(const Obj& o, const json* spec, QueueSpec& q);
  void finish_kai_queues();
  void read_volcano_hierarchy(const Obj& o, QueueSpec& q);
  void finish_volcano_hierarchy();
  void read_pods();
  void read_pod(Obj& o, PodGangs& gangs);
  PodGangRef gang_of_pod(const Obj& o, const PendingPod& p) const;
  void add_running_pod(const Obj& o, const PendingPod& p, const std::string& queue, const PodGangRef& ref, PodGangs& gangs);
  void add_gang_job(PodGang& g);
  void read_pod_group(const PodGang& g, const Obj& first, Job& job, std::int64_t& min_member,
                      std::map<std::string, std::int64_t>& min_task);
  void read_volcano_jobs();
  void read_network_topology(const Obj& o, const json* spec, Job& job);
  void apply_running();
  void take_host_share(const Obj& o, NodeSpec& node, const TaskShape& shape);
  void take_whole_gpus(const Obj& o, std::vector<GpuSpec>& gpus, const TaskGroupSpec& g, RunningPod& r);
  void take_shared_gpu(const Obj& o, std::vector<GpuSpec>& gpus, std::size_t node_index, const std::string& group,
                       const TaskGroupSpec& g, std::map<std::pair<std::size_t, std::string>, std::size_t>& shared_gpu,
                       RunningPod& r);
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

}  // namespace gpusched::io::k8s::reader
