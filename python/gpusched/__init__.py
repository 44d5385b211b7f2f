"""gpusched: GPU-cluster scheduling policies from Python.

A thin layer over the C++ library (docs/python.md): the same readers, the one cluster state, the
same policies. Clusters and jobs come from dicts (the JSON formats of docs/formats.md) or files;
results are plain Python objects, and tables are pandas DataFrames when pandas is installed.

    import gpusched
    cluster = gpusched.load_cluster("examples/cluster.json")
    jobs = gpusched.load_jobs({"jobs": [{"name": "train", "gpus": 4, "cpu": 8, "memory": "64Gi"}]})
    p = cluster.place(jobs, "train", policy="best-fit")
    p.placed, p.tasks      # True, [{'group': 'task', 'replica': 0, 'node': 'h100-1', 'gpus': [0, 1, 2, 3], ...}]

Bad input raises ValueError with a message naming the field and value
(``nodes[3].gpus: expected a non-negative integer, got -2``); a job that cannot be placed is not an
error: ``p.verdict`` is 'not now' or 'infeasible' and ``p.message`` says why.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ._core import (Cluster, FileError, JobView, Jobs, NodeView, Placement, Policy, PolicyError, TaskView,
                    VictimView, __version__, policy_names)
from . import _core

__all__ = [
    "Cluster", "FileError", "Jobs", "Placement", "__version__", "policy_names", "load_cluster", "load_jobs", "fairshare",
    "topology_pick", "bench_packing", "bench_packing_frame", "known_traces", "to_frame", "data_dir", "cycle",
    "simulate", "simulate_frame", "samples_frame", "load_k8s", "place_k8s", "load_slurm", "cycle_slurm", "Session",
    "Policy", "PolicyError", "NodeView", "TaskView", "JobView", "VictimView", "target_workload",
]

Source = Union[str, "os.PathLike[str]", Mapping[str, Any], Sequence[Any]]


def _text(source: Source, what: str) -> tuple[str, str]:
    """JSON text and a source name from a dict/list (serialised) or a path (read)."""
    if isinstance(source, (dict, list, tuple)) or isinstance(source, Mapping):
        return json.dumps(source), what
    path = os.fspath(source)
    with open(path, encoding="utf-8") as f:
        return f.read(), path


def load_cluster(source: Source) -> Cluster:
    """A cluster from a cluster document: a dict ({"nodes": [...]}) or a JSON file's path."""
    text, name = _text(source, "cluster")
    return Cluster.from_json(text, name)


def load_jobs(source: Source) -> Jobs:
    """Jobs from a jobs document: a dict ({"jobs": [...]}), a list of jobs, or a JSON file's path."""
    text, name = _text(source, "jobs")
    return Jobs.from_json(text, name)


def fairshare(cluster: Cluster, queues: Source, jobs: Union[Jobs, Source], now: Optional[int] = None) -> dict:
    """The fair-share admission order (docs/fairness.md): hierarchical DRF, quotas, priorities.

    Returns the dict of ``gpusched fairshare --format json``: "admitted" (in order, with queue,
    flavor, borrowed, priority), "pending" (with reasons), "queues" (usage, dominant and fair
    shares), "capacity", "free_before". ``to_frame(result["admitted"])`` makes a table of it.
    """
    queues_text, _ = _text(queues, "queues")
    if not isinstance(jobs, Jobs):
        jobs = load_jobs(jobs)
    return json.loads(cluster.fairshare_json(queues_text, jobs, now))


def _optional_text(source: Optional[Source], what: str) -> str:
    """JSON text of an optional document ("" for None)."""
    return "" if source is None else _text(source, what)[0]


def cycle(cluster: Cluster, jobs: Union[Jobs, Source], queues: Optional[Source] = None,
          running: Optional[Source] = None, now: int = 0, dry_run: bool = False, policy: Any = None,
          order: Any = None, victim_order: Any = None, **options: Any) -> dict:
    """One scheduling cycle at time ``now`` (docs/cycle.md), as ``gpusched cycle`` runs it.

    ``cluster`` describes the nodes *without* the running jobs; ``running`` (a dict, list or path in
    the jobs format plus ``start_time`` and ``placement``) lists them and their tasks are reserved on
    it; ``jobs`` are the pending jobs (with ``runtime_estimate``, ``not_before``, ... when known);
    ``queues`` the queues document of docs/fairness.md (None: one queue, priority then submit time).
    ``options`` are the cycle's knobs: ``preempt`` (True), ``within_queue`` ('lower', 'never',
    'lower-or-newer'), ``reclaim_within_cohort`` ('any', 'lower', 'never'), ``fair_share_reclaim``
    (True), ``grow`` (True), ``min_runtime`` (0), ``backfill`` ('easy', 'conservative', 'none'),
    ``backfill_window`` (86400), ``backfill_resolution`` (60), ``backfill_depth`` (500), ``seed`` (42),
    ``mig_placement`` ('first-fit' or 'frag-aware': where a MIG task goes on its node, docs/mig.md).
    ``policy`` places every task: a name ("best-fit", "FGD", ...) or a policy written in Python
    (docs/policies.md); a Python policy that fails raises PolicyError and the cycle changes nothing.
    ``order`` orders the jobs within each queue: a name ("priority", the default; "shortest-first",
    "smallest-first", "submit-order") or ``order(job) -> int``, lower first (a JobView: name, queue, priority,
    submit_time, runtime_estimate, tasks, gpu_milli, restarts); equal keys keep the default order
    (priority, then submit time). ``victim_order`` chooses whom a preemption evicts: a name
    ("checkpoint-cost", the default; "fewest-gpus"; "newest-first") or ``victim_order(victim) -> int``,
    a cost >= 0 (a VictimView: name, queue, priority, start_time, now, whole, first_task,
    task_count, lost_milli_gpu_seconds, restart_milli_gpu_seconds, freed_milli_gpu); the cheapest
    set of victims that lets the job start is evicted (docs/policies.md). An order that fails raises
    PolicyError and the cycle changes nothing.

    Returns the dict of ``gpusched cycle --format json``: "starts" (job, queue, priority, tasks with
    node and GPUs), "evictions" and "shrinks" (job, for, reason, lost GPU-seconds), "grows",
    "reservations", "nominations", and "pending" (every job that waits, with verdict, message and
    structured reasons). ``to_frame(result["pending"])`` makes a table of it.

    Unless ``dry_run`` the cluster keeps the running jobs' tasks and the decisions (evictions
    released, starts and grows reserved). Bad input raises ValueError naming the field
    (``running: jobs[0].placement[0].node: no node named "x"``); a job that waits is not an error.
    """
    if not isinstance(jobs, Jobs):
        jobs = load_jobs(jobs)
    text = cluster.cycle_json(jobs, _optional_text(queues, "queues"), _optional_text(running, "running"), int(now),
                              json.dumps(options) if options else "", dry_run, policy, order, victim_order)
    return json.loads(text)


def _cluster_cycle(self: Cluster, jobs: Union[Jobs, Source], queues: Optional[Source] = None,
                   running: Optional[Source] = None, now: int = 0, dry_run: bool = False, policy: Any = None,
                   order: Any = None, victim_order: Any = None, **options: Any) -> dict:
    return cycle(self, jobs, queues, running, now, dry_run, policy, order, victim_order, **options)


_cluster_cycle.__doc__ = "Cluster.cycle(jobs, queues=None, running=None, now=0, dry_run=False, policy=None, " \
                         "order=None, victim_order=None, **options): " \
                         "gpusched.cycle on this cluster.\n\n" + (cycle.__doc__ or "")
Cluster.cycle = _cluster_cycle


class Session:
    """A scheduler kept across cycles (docs/cycle.md, "Sessions"): an orchestrator's loop.

    Pending jobs are compiled once and kept in their queues' order, running jobs with their queues'
    usage; between cycles the session is told what changed (``submit``, ``finish``, ``cancel``), and
    each ``cycle`` costs what changed, not the length of the queue. It decides exactly what
    ``gpusched.cycle`` decides on the same jobs (which is a fresh session for one cycle).

        s = gpusched.Session(cluster, queues=queues_doc, backfill="easy")
        s.submit({"jobs": [...]})                 # a dict, list, path or Jobs
        d = s.cycle(now=60)                       # the dict of ``gpusched cycle --format json``
        s.finish("train-7")                       # its tasks go back to the cluster

    The session changes ``cluster`` (started jobs reserved, finished ones released) and keeps it
    alive. ``cycle(now, dry_run=True)`` decides and changes nothing; ``decisions_only=True`` leaves
    out the jobs that merely wait (infeasible and invalid ones are still listed) and the work of
    explaining them; ``actions_only=True`` also leaves out the reservations (what to do now only,
    which spares conservative backfill most of its plan). ``options`` are ``gpusched.cycle``'s knobs. Bad input raises ValueError naming
    the field; a name already pending or running, or unknown to ``finish``, is a ValueError too.
    """

    def __init__(self, cluster: Cluster, queues: Optional[Source] = None, policy: Any = None, order: Any = None,
                 victim_order: Any = None, **options: Any) -> None:
        self._core = _core._Session(cluster, _optional_text(queues, "queues"), json.dumps(options) if options else "",
                                    policy, order, victim_order)

    def submit(self, jobs: Union[Jobs, Source]) -> None:
        """The jobs join their queues (all or none)."""
        if not isinstance(jobs, Jobs):
            jobs = load_jobs(jobs)
        self._core.submit(jobs)

    def add_running(self, running: Source) -> None:
        """Jobs that already run (``gpusched.cycle``'s ``running`` format): their tasks are reserved."""
        self._core.add_running(_text(running, "running")[0])

    def finish(self, job: str) -> None:
        """A running job ended: its tasks go back to the cluster."""
        self._core.finish(job)

    def cancel(self, job: str) -> None:
        """A pending job withdrawn, or a running one stopped."""
        self._core.cancel(job)

    def cycle(self, now: int, dry_run: bool = False, decisions_only: bool = False, actions_only: bool = False) -> dict:
        """One scheduling cycle at ``now``, committed unless ``dry_run``."""
        detail = 2 if actions_only else 1 if decisions_only else 0
        return json.loads(self._core.cycle_json(int(now), bool(dry_run), detail))

    @property
    def pending(self) -> list[str]:
        """The pending jobs' names, in the session's order (submission; evicted jobs at the end)."""
        return self._core.pending

    @property
    def running(self) -> list[str]:
        """The running jobs' names."""
        return self._core.running


def simulate(trace: Union[str, Sequence[str], None] = None, policies: Sequence[str] = ("fifo", "easy"),
             seeds: Iterable[int] = (42,), *, jobs: Optional[Source] = None, nodes: int = 0, gpus_per_node: int = 8,
             model: str = "V100M32", checkpoint_interval: int = 1800, restart_cost: int = 60, queues: int = 4,
             priorities: int = 1, estimate_error: float = 1.0, elastic: float = 0.0, mtbf_hours: float = 0.0,
             mttr_hours: float = 2.0, cycle_period: int = 0, placement: Any = None, order: Any = None,
             victim_order: Any = None) -> dict:
    """Replays job traces through time under scheduling policies (docs/simulate.md).

    ``trace`` is a spec or a list of them: "itp:01" .. "itp:10" (Microsoft ITP, the shipped
    ElasticFlow release), "alibaba:NAME" (a shipped Alibaba v2023 pod list), "synthetic:N", or a
    path to a job file in the generic format (.json, else CSV). ``jobs`` gives a jobs document of
    that format directly (a dict ``{"jobs": [{"name", "submit", "duration", "gpus", ...}]}``, a list,
    or a path); it is the trace named "jobs" (the default trace when given, else "itp:10").
    ``policies`` are names like "fifo", "greedy", "easy", "conservative", "priority", "drf", "las",
    "srtf" with modifiers ("+ckpt", "+topo", "+energy", "+preempt"); ``seeds`` seed what
    the trace lacks (queues, priorities, estimates: docs/simulate.md) and failures. ``nodes`` = 0
    takes the trace's own cluster (ITP: the paper's; a jobs document or file: 16 nodes of
    ``gpus_per_node`` ``model`` GPUs). ``placement`` is the placement policy of every run (None:
    best-fit): a name ("FGD", ...) or a policy written in Python (docs/policies.md; the runs then keep
    the GIL and a policy that fails raises PolicyError). ``order`` and ``victim_order`` replace the
    policies' own order within a queue and choice of victims, as in ``cycle`` (names or Python
    functions; recorded in the report's parameters).

    Returns the report: {"sweep": {...}, "runs": [one record per trace x policy x seed: "trace",
    "policy", "seed", "metrics" (jct_mean_s, wait_mean_s, utilisation_mean, ...), "conservation"
    (holds, delivered_milli_gpu_s, ...), "samples" (time_s, utilisation, queue_length,
    fragmentation), "jct_quantiles_s"]}. ``simulate_frame`` and ``samples_frame`` tabulate it.
    Runs with the GIL released (other Python threads go on).
    """
    documents = {}
    if jobs is not None:
        documents["jobs"] = _text(jobs, "jobs")[0]
    if trace is None:
        traces = ["jobs"] if jobs is not None else ["itp:10"]
    elif isinstance(trace, (str, os.PathLike)):
        traces = [os.fspath(trace)]
    else:
        traces = [os.fspath(t) for t in trace]
    if isinstance(policies, str):
        policies = [p for p in policies.split(",") if p]
    report = _core.simulate_json(traces, list(policies), [int(s) for s in seeds], documents, int(nodes),
                                 int(gpus_per_node), model, int(checkpoint_interval), int(restart_cost), int(queues),
                                 int(priorities), float(estimate_error), float(elastic), float(mtbf_hours),
                                 float(mttr_hours), int(cycle_period), placement, order, victim_order)
    return json.loads(report)


def simulate_frame(report: Mapping[str, Any]):
    """One row per run of a simulate report: trace, policy, seed, every metric, and whether the
    conservation check holds."""
    rows = []
    for r in report["runs"]:
        row = {"trace": r["trace"], "policy": r["policy"], "seed": r["seed"]}
        row.update(r["metrics"])
        row["conservation_holds"] = r["conservation"]["holds"]
        rows.append(row)
    return to_frame(rows)


def samples_frame(report: Mapping[str, Any]):
    """The samples over time of every run of a simulate report, one row per (run, sample): trace,
    policy, seed, time_s, utilisation, queue_length, fragmentation."""
    rows = []
    for r in report["runs"]:
        s = r["samples"]
        for i, t in enumerate(s["time_s"]):
            rows.append({"trace": r["trace"], "policy": r["policy"], "seed": r["seed"], "time_s": t,
                         "utilisation": s["utilisation"][i], "queue_length": s["queue_length"][i],
                         "fragmentation": s["fragmentation"][i]})
    return to_frame(rows)


def topology_pick(nvidia_smi_topo: Union[str, "os.PathLike[str]"], gpus: int, free: Optional[Iterable[int]] = None,
                  message_bytes: float = 64 * 1024 * 1024) -> dict:
    """The best ``gpus`` GPUs of one node by estimated all-reduce time (docs/topology.md).

    ``nvidia_smi_topo`` is the text of ``nvidia-smi topo -m`` or a path to it; ``free`` the GPU
    indices that may be taken (default all). Returns {"found", "gpus", "span", "allreduce_us", ...}
    or {"found": False, "reason": ...}.
    """
    text = str(nvidia_smi_topo)
    if "\n" not in text and os.path.exists(text):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    return _core.topology_pick(text, gpus, None if free is None else list(free), message_bytes)


def data_dir() -> str:
    """The folder of the shipped data ($GPUSCHED_DATA_DIR, else the source tree's data/, else the
    installed share/gpusched)."""
    return _core.default_data_dir()


def _trace_dir() -> str:
    return os.path.join(data_dir(), "alibaba-gpu-v2023")


def known_traces() -> list[str]:
    """The names of the shipped pod lists ("default", "cpu050", "gpuspec33", ...)."""
    prefix, suffix = "openb_pod_list_", ".csv"
    try:
        names = os.listdir(_trace_dir())
    except OSError:
        return []
    return sorted(n[len(prefix):-len(suffix)] for n in names if n.startswith(prefix) and n.endswith(suffix))


def bench_packing(trace: str = "default", policies: Optional[Sequence[str]] = None,
                  seeds: Iterable[int] = range(42, 44), ratio: float = 1.3, lower_bound: bool = True,
                  nodes: Optional[str] = None, threads: int = 0) -> dict:
    """The FGD paper's trace experiment (docs/bench-packing.md) on one pod list.

    ``trace`` is a shipped pod list's name or a CSV path; ``policies`` default to the paper's and
    FGD-OC, and may name any placement policy or be policies written in Python (docs/policies.md:
    a gpusched.Policy, an object with a ``score`` method, or a score function; the run is then
    serial and keeps the GIL, and a policy that fails raises PolicyError);
    ``seeds`` to two (the tool's default is ten: 42-51). Returns the ``--format json`` report:
    per policy the unallocated GPU % at 100 % arrived workload (mean, stddev, per seed, paired
    difference to FGD) and the mean curve; the LP lower bound. ``bench_packing_frame`` tabulates it.
    """
    path, name = _pod_list(trace)
    nodes = nodes or os.path.join(_trace_dir(), "openb_node_list_gpu_node.csv")
    report = _core.bench_packing_json(nodes, path, name, list(policies or []), [int(s) for s in seeds], ratio,
                                      lower_bound, threads)
    return json.loads(report)


def _pod_list(trace: str) -> tuple[str, str]:
    if os.path.exists(trace):
        return trace, os.path.splitext(os.path.basename(trace))[0]
    path = os.path.join(_trace_dir(), f"openb_pod_list_{trace}.csv")
    if not os.path.exists(path):
        raise ValueError(f'trace: unknown trace "{trace}" (known: {", ".join(known_traces()) or "none"}; or give a CSV path)')
    return path, trace


def target_workload(trace: str = "default", nodes: Optional[str] = None) -> list[dict]:
    """FGD's target workload of an Alibaba pod list, exactly as ``bench_packing`` computes it (the
    most frequent task shapes covering 95 % of the pods, docs/bench-packing.md): one dict per shape,
    most frequent first, with "cpu_milli", "gpus", "gpu_milli", "models" (None: any, else a frozenset
    of GPU model names), "weight" (the weights sum to 1) and "count". For policies written in Python
    (examples/policies/fgd.py)."""
    path, _ = _pod_list(trace)
    return _core.trace_target_workload(nodes or os.path.join(_trace_dir(), "openb_node_list_gpu_node.csv"), path)


def bench_packing_frame(report: Mapping[str, Any]):
    """One row per policy of a bench_packing report: policy, mean and stddev of the unallocated GPU %
    at 100 % arrived workload, the paired difference to the reference policy."""
    rows = []
    for p in report["policies"]:
        rows.append({k: p.get(k) for k in ("policy", "unallocated_gpu_pct_at_100", "unallocated_gpu_pct_at_100_stddev",
                                           "paired_diff_vs_reference", "paired_diff_vs_reference_stderr")})
    return to_frame(rows)


def to_frame(rows: Sequence[Mapping[str, Any]]):
    """A pandas DataFrame of a list of dicts when pandas is importable, else the list itself."""
    try:
        import pandas  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return list(rows)
    return pandas.DataFrame(list(rows))


def _k8s_sources(sources: Sequence[Any]) -> list:
    """(text, name) pairs: a dict or list is one object or a list of them (sent as JSON), a path is
    read (JSON or YAML), any other string is the text itself. Errors and warnings name a file by its
    path, and text or objects by their place among the arguments (``sources[1]``), as TypeError does."""
    out = []
    for i, src in enumerate(sources):
        if isinstance(src, (dict, list, tuple)) or isinstance(src, Mapping):
            out.append((json.dumps(src), f"sources[{i}]"))
        elif isinstance(src, os.PathLike) or (isinstance(src, str) and "\n" not in src and os.path.exists(src)):
            path = os.fspath(src)
            with open(path, encoding="utf-8") as f:
                out.append((f.read(), path))
        elif isinstance(src, str):
            out.append((src, f"sources[{i}]"))
        else:
            raise TypeError(f"sources[{i}]: expected a dict, a list, a path or YAML/JSON text, got {type(src).__name__}")
    return out


def load_k8s(*sources: Any, topology_levels: Sequence[str] = (), scheduler_name: str = "") -> tuple:
    """A cluster and its pending jobs from Kubernetes objects (docs/kubernetes.md).

    ``sources`` are files (``kubectl get nodes,pods -o yaml`` output, JSON or YAML, lists or single
    objects), their text, or dicts: Nodes, Pods, PriorityClasses, Volcano PodGroups and Jobs, Kueue
    ClusterQueues, LocalQueues, ResourceFlavors and Topologies, KAI queues. Bound pods are running
    work, taken off their nodes; pending pods (of ``scheduler_name`` when given) and their gangs are
    the jobs. ``topology_levels`` adds node label keys that are levels (rack, block), outermost first.

    Returns ``(cluster, jobs, warnings)``: a ``Cluster``, a ``Jobs`` (place them with
    ``cluster.place``/``place_gang``) and the reader's warnings (fields it could not express).
    Bad objects raise ValueError naming the object, the field and the value.
    """
    return _core.load_k8s(_k8s_sources(sources), list(topology_levels), scheduler_name)


def load_slurm(*sources: Any, plan_held: bool = False) -> tuple:
    """A cluster and its pending jobs from Slurm's JSON (docs/slurm.md).

    ``sources`` are files (or their text, or parsed dicts) of ``sinfo --json`` (or ``scontrol show
    nodes --json``) and ``squeue --json``. The running jobs' CPUs and GPUs are taken off their nodes;
    the pending jobs, named by Slurm's id ("17", "5_2" for an array task), come in Slurm's priority
    order. Held jobs are skipped unless ``plan_held`` (planned as if released).

    Returns ``(cluster, jobs, warnings, skipped)``: a ``Cluster``, a ``Jobs``, the fields the reader
    could not express, and the jobs Slurm would not start now as ``(id, reason)`` pairs. Bad JSON
    raises ValueError naming the file, the record, the field and the value.
    """
    return _core.load_slurm(_k8s_sources(sources), bool(plan_held))


def cycle_slurm(*sources: Any, now: int, plan_held: bool = False, **options: Any) -> dict:
    """One scheduling cycle at ``now`` (seconds since 1970, Slurm's clock) on Slurm's JSON, as
    ``gpusched cycle --slurm``: the running jobs on the GPUs Slurm gave them until their end times,
    the pending jobs with their time limits, one queue in priority order. ``options`` as
    ``gpusched.cycle``'s (``backfill='conservative'``, ``preempt=False`` for a site without
    preemption), and by name ``policy`` (a placement policy), ``seed``, ``order`` and ``victim_order``
    (built-in orders: docs/policies.md). Returns the dict of ``gpusched cycle --format json``: "starts", "reservations"
    (job, start, nodes), "pending", ...
    """
    if not isinstance(now, int) or isinstance(now, bool):
        raise TypeError(f"now: expected an int (seconds), got {type(now).__name__}")
    return json.loads(_core.cycle_slurm_json(_k8s_sources(sources), now, json.dumps(options) if options else "",
                                             bool(plan_held)))


def place_k8s(*sources: Any, policy: Any = "best-fit", seed: int = 42, topology_levels: Sequence[str] = (),
              scheduler_name: str = "") -> dict:
    """Decides every pending pod and gang of the Kubernetes objects (as ``gpusched place --k8s``):
    returns {"policy", "bindings": [{"pod", "node", "gpus" or "mig"}], "pending": [{"pod",
    "verdict", "reason"}], ...}, the document ``gpusched place --k8s --format json`` prints.
    ``policy`` is a name or a policy written in Python (docs/policies.md); one that fails raises
    PolicyError."""
    return json.loads(_core.place_k8s_json(_k8s_sources(sources), policy, seed, list(topology_levels),
                                           scheduler_name))
