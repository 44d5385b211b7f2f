// Placement policies written in Python: see py_policy.hpp and docs/policies.md.
#include "py_policy.hpp"

#include <fmt/format.h>

#include "io/text_input.hpp"

namespace gpusched::python {
namespace {

PyObject* policy_error_class = nullptr;

const ClusterState& node_state(const PyNodeView& v) {
  if (!v.state) throw py::value_error("NodeView: used outside the policy call it was given to (views are not kept)");
  return *v.state;
}
const TaskRequest& task_request(const PyTaskView& v) {
  if (!v.state || !v.request) throw py::value_error("TaskView: used outside the policy call it was given to (views are not kept)");
  return *v.request;
}

// A short, printable rendering of what user code returned, for messages.
std::string shown_value(const py::handle& value) {
  std::string text;
  try {
    text = py::repr(value).cast<std::string>();
  } catch (const py::error_already_set&) {
    text = "<unprintable>";
  }
  return io::detail::shown(text, 60) + " (" + std::string(py::str(py::type::handle_of(value).attr("__name__"))) + ")";
}

// An int (not a bool), or anything with __index__ (numpy integers), within 64 bits.
std::optional<std::int64_t> as_int(const py::handle& value) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) return std::nullopt;
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) {
    PyErr_Clear();
    return std::nullopt;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  return static_cast<std::int64_t>(v);
}

class PythonPolicy final : public ScoreFunctionPolicy {
 public:
  PythonPolicy(const PyPolicySpec& spec, std::uint64_t seed, std::shared_ptr<py::object> sink)
      : ScoreFunctionPolicy(spec.name, seed, traits_of(spec)), score_(spec.score), pick_(spec.pick_gpus),
        sink_(std::move(sink)) {
    node_obj_ = py::cast(PyNodeView{});
    task_obj_ = py::cast(PyTaskView{});
    node_ = node_obj_.cast<PyNodeView*>();
    task_ = task_obj_.cast<PyTaskView*>();
  }

  std::optional<std::int64_t> score(const ClusterState& state, NodeId node, const TaskRequest& request) const override {
    py::object r;
    if (!call(score_, state, node, request, "score", r)) return std::nullopt;
    if (r.is_none()) return std::nullopt;
    if (auto v = as_int(r)) return v;
    fail(fmt::format("score returned {} for node {}: expected an int (higher is better) or None (refuse the node)",
                     shown_value(r), io::detail::shown(state.node_name(node))));
    return std::nullopt;
  }

  bool pick_gpus(const ClusterState& state, NodeId node, const TaskRequest& request,
                 std::vector<GpuIndex>& gpus) const override {
    py::object r;
    if (!call(pick_, state, node, request, "pick_gpus", r) || r.is_none()) return false;
    const auto add = [&](const py::handle& item) {
      const std::optional<std::int64_t> g = as_int(item);
      if (!g || *g < 0 || static_cast<std::size_t>(*g) >= state.gpu_count(node)) {
        fail(fmt::format("pick_gpus returned {} for node {} ({} GPUs): expected GPU indices", shown_value(item),
                         io::detail::shown(state.node_name(node)), state.gpu_count(node)));
        return false;
      }
      gpus.push_back(static_cast<GpuIndex>(*g));
      return true;
    };
    if (as_int(r)) return add(r);
    if (!py::isinstance<py::sequence>(r) || py::isinstance<py::str>(r)) {
      fail(fmt::format("pick_gpus returned {} for node {}: expected a list of GPU indices, an index or None",
                       shown_value(r), io::detail::shown(state.node_name(node))));
      return false;
    }
    for (const py::handle item : r)
      if (!add(item)) return false;
    return true;
  }

  // The Python exception the policy's code raised, if that is how it failed.
  std::optional<py::error_already_set>& error() const { return error_; }

 private:
  static ScoreFunctionTraits traits_of(const PyPolicySpec& spec) {
    return {spec.ties, spec.memoize, !spec.pick_gpus.is_none()};
  }

  // Calls fn(node view, task view) into `out`; false (and the policy failed) when it raised.
  bool call(const py::object& fn, const ClusterState& state, NodeId node, const TaskRequest& request, const char* what,
            py::object& out) const {
    *node_ = {&state, node};
    *task_ = {&state, &request};
    bool ok = true;
    try {
      out = fn(node_obj_, task_obj_);
    } catch (py::error_already_set& e) {
      std::string text;
      try {
        text = py::str(e.value()).cast<std::string>();
      } catch (const py::error_already_set&) {
        text = "<unprintable>";
      }
      fail(fmt::format("{} raised {}: {} (node {})", what, py::str(e.type().attr("__name__")).cast<std::string>(),
                       io::detail::shown(text, 200), io::detail::shown(state.node_name(node))));
      if (!error_) error_.emplace(std::move(e));
      if (sink_ && !*sink_) *sink_ = error_->value();
      ok = false;
    }
    *node_ = {};
    *task_ = {};
    return ok;
  }

  py::object score_, pick_;
  py::object node_obj_, task_obj_;
  PyNodeView* node_ = nullptr;
  PyTaskView* task_ = nullptr;
  mutable std::optional<py::error_already_set> error_;
  std::shared_ptr<py::object> sink_;  // where the first exception is kept for the caller (may be null)
};

struct PyJobView {
  const scheduler::PendingJob* job = nullptr;
};
struct PyVictimView {
  const scheduler::VictimCandidate* candidate = nullptr;
};

const scheduler::PendingJob& pending_job(const PyJobView& v) {
  if (!v.job) throw py::value_error("JobView: used outside the order call it was given to (views are not kept)");
  return *v.job;
}
const scheduler::VictimCandidate& victim_candidate(const PyVictimView& v) {
  if (!v.candidate) throw py::value_error("VictimView: used outside the order call it was given to (views are not kept)");
  return *v.candidate;
}

// An order's Python function, called with one view object (reused: no allocation per call) and
// answering an int. Its first failure is kept, with the exception it raised (the PolicyError's
// cause; also in `sink` when given, for runs whose orders are gone when the error reaches the caller).
template <class View>
class PythonOrderCall {
 public:
  PythonOrderCall(py::object fn, std::shared_ptr<py::object> sink)
      : fn_(std::move(fn)), name_(py::str(py::getattr(fn_, "__name__", py::str("order"))).cast<std::string>()),
        sink_(std::move(sink)) {
    view_obj_ = py::cast(View{});
    view_ = view_obj_.cast<View*>();
  }
  const std::string& name() const { return name_; }
  std::string_view failure() const { return failure_; }
  const py::object& cause() const { return cause_; }

  // fn(view) as an int; `who` names the job in messages, `expected` says what an answer is.
  template <class Fact>
  std::optional<std::int64_t> call(const Fact& fact, const char* what, const std::string& who, const char* expected) const {
    if (!failure_.empty()) return std::nullopt;
    *view_ = View{&fact};
    py::object r;
    try {
      r = fn_(view_obj_);
    } catch (py::error_already_set& e) {
      std::string text;
      try {
        text = py::str(e.value()).cast<std::string>();
      } catch (const py::error_already_set&) {
        text = "<unprintable>";
      }
      failure_ = fmt::format("{} raised {}: {} (job {})", what, py::str(e.type().attr("__name__")).cast<std::string>(),
                             io::detail::shown(text, 200), io::detail::shown(who));
      cause_ = e.value();
      if (sink_ && !*sink_) *sink_ = cause_;
    }
    *view_ = View{};
    if (!failure_.empty()) return std::nullopt;
    if (auto v = as_int(r)) return v;
    fail(fmt::format("{} returned {} for job {}: expected {}", what, shown_value(r), io::detail::shown(who), expected));
    return std::nullopt;
  }
  void fail(std::string why) const {
    if (failure_.empty()) failure_ = std::move(why);
  }
  void clear() const {
    failure_.clear();
    cause_ = py::none();
  }

 private:
  py::object fn_;
  std::string name_;
  py::object view_obj_;
  View* view_ = nullptr;
  std::shared_ptr<py::object> sink_;
  mutable std::string failure_;
  mutable py::object cause_ = py::none();
};

class PythonOrder final : public scheduler::JobOrder {
 public:
  PythonOrder(py::object fn, std::shared_ptr<py::object> sink) : call_(std::move(fn), std::move(sink)) {}
  std::string_view name() const override { return call_.name(); }
  std::string_view failure() const override { return call_.failure(); }
  void clear_failure() const override { call_.clear(); }
  std::int64_t key(const scheduler::PendingJob& job) const override {
    return call_.call(job, "order", job.job.name, "an int (lower goes first)").value_or(0);
  }
  const py::object& cause() const { return call_.cause(); }

 private:
  PythonOrderCall<PyJobView> call_;
};

class PythonVictimOrder final : public scheduler::VictimOrder {
 public:
  PythonVictimOrder(py::object fn, std::shared_ptr<py::object> sink) : call_(std::move(fn), std::move(sink)) {}
  std::string_view name() const override { return call_.name(); }
  std::string_view failure() const override { return call_.failure(); }
  void clear_failure() const override { call_.clear(); }
  std::int64_t cost(const scheduler::VictimCandidate& c) const override {
    const auto v = call_.call(c, "victim_order", c.job->name, "an int >= 0 (the cheapest victims go first)");
    if (v && *v < 0)
      call_.fail(fmt::format("victim_order returned {} for job {}: expected an int >= 0 (the cheapest victims go first)",
                             *v, io::detail::shown(c.job->name)));
    return v && *v >= 0 ? *v : 0;
  }
  const py::object& cause() const { return call_.cause(); }

 private:
  PythonOrderCall<PyVictimView> call_;
};

TieRule tie_rule(const std::string& ties) {
  if (ties == "lowest-id") return TieRule::kLowestId;
  if (ties == "seeded") return TieRule::kSeededOrder;
  throw py::value_error(fmt::format("ties: expected \"lowest-id\" or \"seeded\", got {}", io::detail::shown(ties)));
}

// One value per GPU of the node, as a list: of_gpu(state, node, gpu).
template <class OfGpu>
py::list per_gpu(const PyNodeView& v, OfGpu of_gpu) {
  const ClusterState& s = node_state(v);
  py::list out;
  for (std::size_t g = 0; g < s.gpu_count(v.node); ++g) out.append(of_gpu(s, v.node, static_cast<GpuIndex>(g)));
  return out;
}

}  // namespace

std::optional<PyPolicySpec> as_policy_spec(const py::handle& policy) {
  if (policy.is_none() || py::isinstance<py::str>(policy) || py::isinstance<py::bytes>(policy)) return std::nullopt;
  if (py::isinstance<PyPolicySpec>(policy)) return policy.cast<PyPolicySpec>();
  const auto attr = [&](const char* name, py::object fallback) {
    return py::hasattr(policy, name) ? py::getattr(policy, name) : fallback;
  };
  if (py::hasattr(policy, "score") && PyCallable_Check(py::getattr(policy, "score").ptr())) {
    py::object name = attr("name", py::type::handle_of(policy).attr("__name__"));
    if (py::isinstance<py::type>(policy)) name = attr("name", policy.attr("__name__"));
    return py::module_::import("gpusched._core")
        .attr("Policy")(py::str(name), policy.attr("score"), attr("pick_gpus", py::none()), attr("ties", py::str("lowest-id")),
                        attr("memoize", py::bool_(false)))
        .cast<PyPolicySpec>();
  }
  if (PyCallable_Check(policy.ptr()))
    return py::module_::import("gpusched._core")
        .attr("Policy")(py::str(attr("__name__", py::str("python-policy"))), policy)
        .cast<PyPolicySpec>();
  throw py::type_error(fmt::format("policy: expected a policy name, a gpusched.Policy, an object with a score method "
                                   "or a score function, got {}",
                                   shown_value(policy)));
}

namespace {
template <class Order, class Made>
Made make_order(const py::handle& order, const char* what, const char* signature, std::shared_ptr<py::object> sink,
                Result<Made> (scheduler::OrderRegistry::*by_name)(std::string_view) const) {
  if (order.is_none()) return nullptr;
  if (py::isinstance<py::str>(order)) {
    static const scheduler::OrderRegistry builtins = scheduler::OrderRegistry::with_builtins();
    auto made = (builtins.*by_name)(order.cast<std::string>());
    if (!made) throw py::value_error(fmt::format("{}: {}", what, made.error().message));
    return std::move(*made);
  }
  if (!PyCallable_Check(order.ptr()))
    throw py::type_error(fmt::format("{}: expected a name or a function {}, got {}", what, signature, shown_value(order)));
  return std::make_unique<Order>(py::reinterpret_borrow<py::object>(order), std::move(sink));
}
}  // namespace

std::unique_ptr<scheduler::JobOrder> make_python_order(const py::handle& order, std::shared_ptr<py::object> sink) {
  return make_order<PythonOrder, std::unique_ptr<scheduler::JobOrder>>(order, "order", "order(job) -> int",
                                                                     std::move(sink),
                                                                     &scheduler::OrderRegistry::make_job_order);
}

std::unique_ptr<scheduler::VictimOrder> make_python_victim_order(const py::handle& order,
                                                                 std::shared_ptr<py::object> sink) {
  return make_order<PythonVictimOrder, std::unique_ptr<scheduler::VictimOrder>>(
      order, "victim_order", "victim_order(victim) -> int", std::move(sink), &scheduler::OrderRegistry::make_victim_order);
}

void raise_order_failure(const scheduler::JobOrder* order, const scheduler::VictimOrder* victim_order) {
  // The failure is forgotten as it is raised: a kept Session asks the order again next time.
  if (order && !order->failure().empty()) {
    const auto* o = dynamic_cast<const PythonOrder*>(order);
    const std::string message = fmt::format("job order {} failed: {}", io::detail::shown(order->name()), order->failure());
    const py::object cause = o ? o->cause() : py::object(py::none());
    order->clear_failure();
    raise_policy_error(message, cause);
  }
  if (victim_order && !victim_order->failure().empty()) {
    const auto* o = dynamic_cast<const PythonVictimOrder*>(victim_order);
    const std::string message =
        fmt::format("victim order {} failed: {}", io::detail::shown(victim_order->name()), victim_order->failure());
    const py::object cause = o ? o->cause() : py::object(py::none());
    victim_order->clear_failure();
    raise_policy_error(message, cause);
  }
}

std::unique_ptr<PlacementPolicy> make_python_policy(const PyPolicySpec& spec, std::uint64_t seed,
                                                    std::shared_ptr<py::object> sink) {
  return std::make_unique<PythonPolicy>(spec, seed, std::move(sink));
}

void raise_policy_error(const std::string& message, const py::object& cause) {
  const std::string text = io::detail::tidy_message(message);
  if (!cause || cause.is_none()) {
    PyErr_SetString(policy_error_class, text.c_str());
    throw py::error_already_set();
  }
  py::object error = py::reinterpret_borrow<py::object>(policy_error_class)(text);
  PyException_SetCause(error.ptr(), cause.inc_ref().ptr());  // steals the reference
  PyErr_SetObject(policy_error_class, error.ptr());
  throw py::error_already_set();
}

void raise_policy_failure_now(const PlacementPolicy& policy) {
  const std::string message = fmt::format("policy {} failed: {}", io::detail::shown(policy.name()), policy.failure());
  const auto* p = dynamic_cast<const PythonPolicy*>(&policy);
  raise_policy_error(message, p && p->error() ? p->error()->value() : py::object(py::none()));
}

PolicyRegistry registry_with(const std::vector<py::object>& policies, std::vector<std::string>& names,
                             const std::shared_ptr<py::object>& sink) {
  PolicyRegistry registry = PolicyRegistry::with_builtins();
  for (const py::object& p : policies) {
    if (py::isinstance<py::str>(p) || py::isinstance<py::bytes>(p)) {
      names.push_back(p.cast<std::string>());
      continue;
    }
    const std::optional<PyPolicySpec> given = as_policy_spec(p);
    if (!given) throw py::type_error("policies: expected policy names or policies, got None");
    const PyPolicySpec& spec = *given;
    PolicyEntry e;
    e.name = spec.name;
    e.summary = "a Python policy";
    e.thread_safe = false;  // Python runs one thread at a time (the GIL): the run is serial
    e.make = [spec, sink](const PolicyArgs& a) { return make_python_policy(spec, a.seed, sink); };
    if (Status ok = registry.add(std::move(e)); !ok) throw py::value_error("policies: " + ok.error().message);
    names.push_back(spec.name);
  }
  return registry;
}

// gpusched.Policy: a placement policy from Python callables.
void install_policy_class(py::module_& m) {
  py::class_<PyPolicySpec>(m, "Policy",
                           "A placement policy written in Python (docs/policies.md): score(node, task) -> int (higher "
                           "is better) or None (refuse the node), called for every node that fits.")
      .def(py::init([](std::string name, py::object score, py::object pick_gpus, const std::string& ties, bool memoize) {
             if (name.empty()) throw py::value_error("name: a policy needs a name");
             if (!PyCallable_Check(score.ptr()))
               throw py::type_error(fmt::format("score: expected a callable score(node, task), got {}", shown_value(score)));
             if (!pick_gpus.is_none() && !PyCallable_Check(pick_gpus.ptr()))
               throw py::type_error(fmt::format("pick_gpus: expected a callable or None, got {}", shown_value(pick_gpus)));
             return PyPolicySpec{std::move(name), std::move(score), std::move(pick_gpus), tie_rule(ties), memoize};
           }),
           py::arg("name"), py::arg("score"), py::arg("pick_gpus") = py::none(), py::arg("ties") = "lowest-id",
           py::arg("memoize") = false)
      .def_property_readonly("name", [](const PyPolicySpec& p) { return p.name; })
      .def_property_readonly("memoize", [](const PyPolicySpec& p) { return p.memoize; })
      .def_property_readonly("ties", [](const PyPolicySpec& p) {
        return p.ties == TieRule::kLowestId ? "lowest-id" : "seeded";
      });
}

// The read-only views a Python policy or order is handed during one call.
void install_job_view(py::module_& m) {
  py::class_<PyJobView>(m, "JobView", "A pending job as a job order sees it, during one call (read-only).")
      .def_property_readonly("name", [](const PyJobView& v) { return pending_job(v).job.name; })
      .def_property_readonly("queue", [](const PyJobView& v) { return pending_job(v).job.queue; })
      .def_property_readonly("priority", [](const PyJobView& v) { return pending_job(v).job.priority; })
      .def_property_readonly("submit_time", [](const PyJobView& v) { return pending_job(v).job.submit_time; })
      .def_property_readonly("runtime_estimate", [](const PyJobView& v) { return pending_job(v).runtime_estimate; })
      .def_property_readonly("restarts", [](const PyJobView& v) { return pending_job(v).restarts; })
      .def_property_readonly("tasks",
                             [](const PyJobView& v) {
                               std::int64_t n = 0;
                               for (const CompiledGroup& g : pending_job(v).job.groups) n += g.replicas;
                               return n;
                             })
      .def_property_readonly("gpu_milli",
                             [](const PyJobView& v) {
                               std::int64_t n = 0;
                               for (const CompiledGroup& g : pending_job(v).job.groups)
                                 n += std::int64_t{g.replicas} * g.request.shape.total_gpu_milli();
                               return n;
                             })
      .def("__repr__", [](const PyJobView& v) {
        return v.job ? fmt::format("<JobView {}>", v.job->job.name) : std::string("<JobView (expired)>");
      });
}

void install_victim_view(py::module_& m) {
  py::class_<PyVictimView>(m, "VictimView",
                           "A candidate victim of a preemption as a victim order sees it, during one call "
                           "(read-only): a running job evicted whole, or the tasks an elastic job would shed.")
      .def_property_readonly("name", [](const PyVictimView& v) { return victim_candidate(v).job->name; })
      .def_property_readonly("queue", [](const PyVictimView& v) { return victim_candidate(v).job->queue; })
      .def_property_readonly("priority", [](const PyVictimView& v) { return victim_candidate(v).job->priority; })
      .def_property_readonly("start_time", [](const PyVictimView& v) { return victim_candidate(v).job->start_time; })
      .def_property_readonly("now", [](const PyVictimView& v) { return victim_candidate(v).now; })
      .def_property_readonly("whole", [](const PyVictimView& v) { return victim_candidate(v).whole; })
      .def_property_readonly("first_task", [](const PyVictimView& v) { return victim_candidate(v).first_task; })
      .def_property_readonly("task_count", [](const PyVictimView& v) { return victim_candidate(v).task_count; })
      .def_property_readonly("lost_milli_gpu_seconds",
                             [](const PyVictimView& v) { return victim_candidate(v).lost_milli_gpu_seconds; })
      .def_property_readonly("restart_milli_gpu_seconds",
                             [](const PyVictimView& v) { return victim_candidate(v).restart_milli_gpu_seconds; })
      .def_property_readonly("freed_milli_gpu", [](const PyVictimView& v) { return victim_candidate(v).freed_milli_gpu; })
      .def("__repr__", [](const PyVictimView& v) {
        return v.candidate ? fmt::format("<VictimView {}>", v.candidate->job->name) : std::string("<VictimView (expired)>");
      });
}

void install_node_view(py::module_& m) {
  py::class_<PyNodeView>(m, "NodeView", "A node as a policy sees it, during one call (read-only).")
      .def_property_readonly("id", [](const PyNodeView& v) { return (void)node_state(v), v.node; })
      .def_property_readonly("name", [](const PyNodeView& v) { return std::string(node_state(v).node_name(v.node)); })
      .def_property_readonly("cpu_milli", [](const PyNodeView& v) { return node_state(v).cpu_capacity(v.node); })
      .def_property_readonly("cpu_free_milli", [](const PyNodeView& v) { return node_state(v).cpu_free(v.node); })
      .def_property_readonly("memory", [](const PyNodeView& v) { return node_state(v).memory_capacity(v.node); })
      .def_property_readonly("memory_free", [](const PyNodeView& v) { return node_state(v).memory_free(v.node); })
      .def_property_readonly("gpus", [](const PyNodeView& v) { return node_state(v).gpu_count(v.node); })
      .def_property_readonly("idle_gpus", [](const PyNodeView& v) { return node_state(v).shares().idle_gpus(v.node); })
      .def_property_readonly("gpu_free_milli",
                             [](const PyNodeView& v) {
                               return per_gpu(v, [](const ClusterState& s, NodeId n, GpuIndex g) {
                                 return s.shares().free_milli_if_healthy(n, g);
                               });
                             })
      .def_property_readonly("gpu_free_memory",
                             [](const PyNodeView& v) {
                               return per_gpu(v, [](const ClusterState& s, NodeId n, GpuIndex g) {
                                 return s.shares().free_memory_if_healthy(n, g);
                               });
                             })
      .def_property_readonly("gpu_models", [](const PyNodeView& v) {
        return per_gpu(v, [](const ClusterState& s, NodeId n, GpuIndex g) {
          return py::str(s.registry().model(s.gpu_model(n, g)).name);
        });
      })
      .def("__repr__", [](const PyNodeView& v) {
        return v.state ? fmt::format("<NodeView {}>", v.state->node_name(v.node)) : std::string("<NodeView (expired)>");
      });
}

void install_task_view(py::module_& m) {
  py::class_<PyTaskView>(m, "TaskView", "One task of a job as a policy sees it, during one call (read-only).")
      .def_property_readonly("cpu_milli", [](const PyTaskView& v) { return task_request(v).shape.cpu; })
      .def_property_readonly("memory", [](const PyTaskView& v) { return task_request(v).shape.memory; })
      .def_property_readonly("gpus", [](const PyTaskView& v) { return task_request(v).shape.gpus; })
      .def_property_readonly("gpu_milli", [](const PyTaskView& v) { return task_request(v).shape.gpu_milli; })
      .def_property_readonly("gpu_memory", [](const PyTaskView& v) { return task_request(v).shape.gpu_memory; })
      .def_property_readonly("shares_gpu", [](const PyTaskView& v) { return task_request(v).shape.shares_gpu(); })
      .def_property_readonly("models",
                             [](const PyTaskView& v) -> py::object {
                               const TaskRequest& r = task_request(v);
                               if (r.models == kAnyGpuModel) return py::none();
                               py::set out;
                               for (std::size_t m = 0; m < v.state->registry().size(); ++m)
                                 if (r.models & model_bit(static_cast<GpuModelId>(m)))
                                   out.add(py::str(v.state->registry().model(static_cast<GpuModelId>(m)).name));
                               return py::frozenset(out);
                             })
      .def("__repr__", [](const PyTaskView& v) {
        if (!v.request) return std::string("<TaskView (expired)>");
        const TaskShape& s = v.request->shape;
        return fmt::format("<TaskView cpu_milli={} gpus={} gpu_milli={}>", s.cpu, s.gpus, s.gpu_milli);
      });
}

void install_policies(py::module_& m) {
  policy_error_class = PyErr_NewExceptionWithDoc(
      "gpusched.PolicyError",
      "A placement policy written in Python failed: it raised (the exception is the __cause__), returned "
      "something that is not a score, or chose GPUs the task cannot take. The message names the policy.",
      PyExc_RuntimeError, nullptr);
  if (!policy_error_class) throw py::error_already_set();
  m.attr("PolicyError") = py::handle(policy_error_class);
  install_policy_class(m);
  install_job_view(m);
  install_victim_view(m);
  install_node_view(m);
  install_task_view(m);
}

}  // namespace gpusched::python
