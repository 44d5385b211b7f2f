"""Placement policies written in Python (docs/policies.md): FGD re-implemented from the paper makes
the built-in FGD's decisions; every path takes a policy; user code that fails or returns garbage is a
PolicyError naming the policy, never a crash, and changes nothing."""
import json
import os
import sys

import pytest

import gpusched

SOURCE = os.environ.get("GPUSCHED_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "examples", "policies"))
from fgd import FGD  # noqa: E402  (examples/policies/fgd.py)

NODES = {"nodes": [
    {"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"},
    {"name": "n1", "cpu": 32, "memory": "128Gi", "gpus": 8, "gpu_model": "A100-80GB"},
    {"name": "n2", "cpu": 8, "memory": "32Gi"},
]}
JOBS = {"jobs": [{"name": "one", "gpus": 1, "cpu": 1, "memory": "1Gi"},
                 {"name": "half", "gpus": 1, "gpu_milli": 500, "cpu": 1, "memory": "1Gi"}]}


def highest_id(node, task):
    return node.id


def test_python_fgd_decides_as_the_builtin_fgd_on_the_alibaba_trace():
    fgd = FGD(gpusched.target_workload("default"))
    report = gpusched.bench_packing("default", policies=[fgd, "FGD"], seeds=[42], ratio=1.0, lower_bound=False)
    python, builtin = report["policies"]
    assert python["policy"] == "py-fgd" and builtin["policy"] == "FGD"
    # Every point of the curve (50 % .. 130 % of capacity arrived), the pods placed and failed: the
    # same decisions, one after another, over the whole replay.
    assert python["curve_unallocated_gpu_pct"] == builtin["curve_unallocated_gpu_pct"]
    assert python["mean_pods_placed"] == builtin["mean_pods_placed"] > 5000
    assert python["mean_pods_failed"] == builtin["mean_pods_failed"]


def test_a_policy_on_every_path():
    cluster = gpusched.load_cluster(NODES)
    jobs = gpusched.load_jobs(JOBS)
    # best-fit packs n0; the function prefers the highest id that fits (n2 has no GPU: never scored).
    assert cluster.place(jobs, "one", dry_run=True).tasks[0]["node"] == "n0"
    assert cluster.place(jobs, "one", policy=highest_id, dry_run=True).tasks[0]["node"] == "n1"

    class Spread:  # a class: name, score, pick_gpus
        name = "spread-last-gpu"

        def score(self, node, task):
            return sum(node.gpu_free_milli)

        def pick_gpus(self, node, task):  # the last GPUs that can take the task
            return [g for g, free in enumerate(node.gpu_free_milli) if free >= task.gpu_milli][-task.gpus:]

    p = cluster.place(jobs, "half", policy=Spread(), dry_run=True)
    assert p.tasks[0]["node"] == "n1" and p.tasks[0]["gpus"] == [7]
    policy = gpusched.Policy("by-id", highest_id)
    assert cluster.place_gang(jobs, "one", policy=policy, dry_run=True).tasks[0]["node"] == "n1"
    d = gpusched.cycle(cluster, jobs, now=0, dry_run=True, policy=highest_id)
    assert [t["node"] for s in d["starts"] for t in s["tasks"]] == ["n1", "n1"]
    session = gpusched.Session(gpusched.load_cluster(NODES), policy=Spread())
    session.submit(jobs)
    started = session.cycle(now=0)["starts"]
    assert {t["node"] for s in started for t in s["tasks"]} == {"n1"}
    report = gpusched.simulate(jobs={"jobs": [{"name": "j", "submit": 0, "duration": 60, "gpus": 1}]},
                               policies=["fifo"], nodes=2, placement=policy)
    assert report["sweep"]["parameters"]["placement"] == "by-id"
    assert report["runs"][0]["metrics"]["completed"] == 1
    # The built-ins by name on the same paths, FGD included (it packs for the jobs given).
    assert cluster.place(jobs, "half", policy="FGD", dry_run=True).placed


def test_user_code_that_fails_is_a_policy_error_and_changes_nothing():
    cluster = gpusched.load_cluster(NODES)
    jobs = gpusched.load_jobs(JOBS)
    before = cluster.to_json()

    def broken(node, task):
        if node.name == "n1":
            raise KeyError("no such thing")
        return 0

    with pytest.raises(gpusched.PolicyError, match=r'policy "broken" failed: score raised KeyError') as e:
        cluster.place(jobs, "one", policy=broken)
    assert isinstance(e.value.__cause__, KeyError)
    with pytest.raises(gpusched.PolicyError, match="broken"):
        gpusched.cycle(cluster, jobs, now=0, policy=broken)
    assert cluster.to_json() == before
    for garbage in (float("nan"), "7", True, 2 ** 70, [1]):
        with pytest.raises(gpusched.PolicyError, match="expected an int"):
            cluster.place(jobs, "one", policy=gpusched.Policy("garbage", lambda n, t, g=garbage: g))
    with pytest.raises(gpusched.PolicyError, match=r"pick_gpus returned \"99\" \(int\) for node \"n1\" \(8 GPUs\)"):
        cluster.place(jobs, "one", policy=gpusched.Policy("bad-gpu", highest_id, pick_gpus=lambda n, t: [99]))
    with pytest.raises(gpusched.PolicyError, match="cannot take"):  # a GPU that is not free enough
        cluster.place(jobs, "half", policy=gpusched.Policy("twice", highest_id, pick_gpus=lambda n, t: [0]))
        cluster.place(jobs, "one", policy=gpusched.Policy("twice", highest_id, pick_gpus=lambda n, t: [0]))
    with pytest.raises(gpusched.PolicyError, match="ZeroDivisionError"):
        gpusched.bench_packing("default", policies=[gpusched.Policy("div", lambda n, t: 1 // 0)], seeds=[42],
                               ratio=0.1, lower_bound=False)
    with pytest.raises(gpusched.PolicyError, match="ZeroDivisionError"):
        gpusched.simulate(jobs={"jobs": [{"name": "j", "submit": 0, "duration": 60, "gpus": 1}]},
                          policies=["fifo"], nodes=2, placement=lambda n, t: 1 // 0)
    # Bad arguments are TypeError / ValueError before anything runs.
    with pytest.raises(TypeError, match="policy"):
        cluster.place(jobs, "one", policy=3)
    with pytest.raises(TypeError, match="score"):
        gpusched.Policy("x", 3)
    with pytest.raises(ValueError, match="ties"):
        gpusched.Policy("x", highest_id, ties="random")
    with pytest.raises(ValueError, match="existing policy"):
        gpusched.bench_packing("default", policies=[gpusched.Policy("FGD", highest_id)], seeds=[42])


def test_views_are_read_only_and_expire():
    cluster = gpusched.load_cluster(NODES)
    jobs = gpusched.load_jobs(JOBS)
    seen = []

    def look(node, task):
        seen.append((node, node.name, node.gpus, node.idle_gpus, node.gpu_free_milli, node.gpu_models, task.gpus,
                     task.gpu_milli, task.shares_gpu, task.models))
        return 0

    cluster.place(jobs, "half", policy=look, dry_run=True)
    assert [s[1:] for s in seen] == [
        ("n0", 4, 4, [1000] * 4, ["A100-80GB"] * 4, 1, 500, True, None),
        ("n1", 8, 8, [1000] * 8, ["A100-80GB"] * 8, 1, 500, True, None)]
    with pytest.raises(ValueError, match="outside the policy call"):
        seen[0][0].name
    with pytest.raises(AttributeError):
        seen[0][0].gpus = 3


def test_a_job_order_of_ones_own():
    cluster = gpusched.load_cluster({"nodes": [{"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4,
                                                "gpu_model": "A100-80GB"}]})
    jobs = {"jobs": [{"name": "big", "gpus": 4, "cpu": 1, "memory": "1Gi", "submit_time": 0},
                     {"name": "mid", "gpus": 2, "cpu": 1, "memory": "1Gi", "submit_time": 1},
                     {"name": "small", "gpus": 1, "cpu": 1, "memory": "1Gi", "submit_time": 2}]}

    def started(d):
        return [s["job"] for s in d["starts"]]

    # The default order (priority, then submit time): big takes the node, the others wait. Fewest
    # GPUs first: small and mid start, big waits.
    assert started(cluster.cycle(jobs, now=0, dry_run=True, backfill="none")) == ["big"]

    def fewest_gpus(job):
        return job.gpu_milli

    assert started(cluster.cycle(jobs, now=0, dry_run=True, backfill="none", order=fewest_gpus)) == ["small", "mid"]
    session = gpusched.Session(cluster, backfill="none", order=fewest_gpus)
    session.submit(jobs)
    assert started(session.cycle(now=0, dry_run=True)) == ["small", "mid"]

    def broken(job):
        raise RuntimeError("no key for " + job.name)

    before = cluster.to_json()
    with pytest.raises(gpusched.PolicyError, match=r'job order "broken" failed: order raised RuntimeError') as e:
        cluster.cycle(jobs, now=0, order=broken)
    assert isinstance(e.value.__cause__, RuntimeError)
    assert cluster.to_json() == before
    with pytest.raises(gpusched.PolicyError, match="expected an int"):
        cluster.cycle(jobs, now=0, order=lambda job: "first")
    with pytest.raises(TypeError, match="order"):
        cluster.cycle(jobs, now=0, order=3)

    # A kept session whose order fails once: the submit is withdrawn (all or none) and the order is
    # asked again next time.
    calls = []

    def flaky(job):
        calls.append(job.name)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return job.gpu_milli

    session = gpusched.Session(cluster, backfill="none", order=flaky)
    with pytest.raises(gpusched.PolicyError, match="first call fails"):
        session.submit(jobs)
    assert session.pending == []
    session.submit(jobs)
    assert started(session.cycle(now=0, dry_run=True)) == ["small", "mid"]
    # By name: a built-in order.
    assert started(cluster.cycle(jobs, now=0, dry_run=True, backfill="none", order="smallest-first")) == ["small", "mid"]
    assert started(cluster.cycle(jobs, now=0, dry_run=True, backfill="none", order="submit-order")) == ["big"]
    with pytest.raises(ValueError, match="unknown job order"):
        cluster.cycle(jobs, now=0, order="no-such-order")


# n0 (4 GPUs) and n1 (8 GPUs) both held at t=1000: x (4 GPUs on n0) since 100, y (8 GPUs on n1) since
# 500; urgent (4 GPUs, priority 10) starts by evicting either. The default victim order evicts x
# (lost work 4 x 900 = 3,600 GPU-s against y's 8 x 500 = 4,000); the newest first evicts y.
VICTIM_NODES = {"nodes": [{"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"},
                          {"name": "n1", "cpu": 16, "memory": "64Gi", "gpus": 8, "gpu_model": "A100-80GB"}]}
VICTIM_RUNNING = {"jobs": [
    {"name": "x", "gpus": 4, "cpu": 1, "memory": "1Gi", "start_time": 100,
     "placement": [{"node": "n0", "gpus": [0, 1, 2, 3]}]},
    {"name": "y", "gpus": 8, "cpu": 1, "memory": "1Gi", "start_time": 500,
     "placement": [{"node": "n1", "gpus": list(range(8))}]}]}
URGENT = {"jobs": [{"name": "urgent", "gpus": 4, "cpu": 1, "memory": "1Gi", "priority": 10}]}


def test_a_victim_order_of_ones_own():
    cluster = gpusched.load_cluster(VICTIM_NODES)

    def evicted(**kw):
        d = cluster.cycle(URGENT, running=VICTIM_RUNNING, now=1000, dry_run=True, **kw)
        return [e["job"] for e in d["evictions"]]

    seen = []

    def newest_first(victim):
        seen.append((victim.name, victim.whole, victim.freed_milli_gpu, victim.lost_milli_gpu_seconds))
        return victim.now - victim.start_time

    assert evicted() == ["x"]
    assert evicted(victim_order="checkpoint-cost") == ["x"]
    assert evicted(victim_order=newest_first) == ["y"]
    assert sorted(seen) == [("x", True, 4000, 3_600_000), ("y", True, 8000, 4_000_000)]
    assert evicted(victim_order="newest-first") == ["y"]
    assert evicted(victim_order="fewest-gpus") == ["x"]
    session = gpusched.Session(gpusched.load_cluster(VICTIM_NODES), victim_order="newest-first")
    session.add_running(VICTIM_RUNNING)
    session.submit(URGENT)
    assert [e["job"] for e in session.cycle(now=1000, dry_run=True)["evictions"]] == ["y"]

    before = cluster.to_json()
    kept = []

    def broken(victim):
        kept.append(victim)
        raise KeyError(victim.name)

    with pytest.raises(gpusched.PolicyError, match=r'victim order "broken" failed: victim_order raised KeyError') as e:
        cluster.cycle(URGENT, running=VICTIM_RUNNING, now=1000, victim_order=broken)
    assert isinstance(e.value.__cause__, KeyError)
    assert cluster.to_json() == before
    with pytest.raises(ValueError, match="VictimView: used outside"):
        kept[0].name
    with pytest.raises(gpusched.PolicyError, match="expected an int >= 0"):
        cluster.cycle(URGENT, running=VICTIM_RUNNING, now=1000, victim_order=lambda v: -1)
    with pytest.raises(gpusched.PolicyError, match="expected an int >= 0"):
        cluster.cycle(URGENT, running=VICTIM_RUNNING, now=1000, victim_order=lambda v: float("nan"))
    with pytest.raises(ValueError, match="unknown victim order"):
        cluster.cycle(URGENT, running=VICTIM_RUNNING, now=1000, victim_order="shortest-first")
    assert cluster.to_json() == before


def test_orders_in_a_simulation():
    # A contended synthetic trace under a preempting policy: an order by name and the same order as a
    # Python function make the same schedule; the report records them; a failing one raises.
    common = dict(trace="synthetic:60", policies=["priority"], nodes=4, gpus_per_node=4, priorities=3)

    def shortest_first(job):
        return job.runtime_estimate if job.runtime_estimate > 0 else 2**63 - 1

    def newest_first(victim):
        return victim.now - victim.start_time

    named = gpusched.simulate(**common, order="shortest-first", victim_order="newest-first")
    python = gpusched.simulate(**common, order=shortest_first, victim_order=newest_first)
    plain = gpusched.simulate(**common)
    assert named["sweep"]["parameters"]["order"] == "shortest-first"
    assert python["sweep"]["parameters"]["order"] == "python:shortest_first"
    assert named["runs"][0]["metrics"] == python["runs"][0]["metrics"]
    assert named["runs"][0]["metrics"] != plain["runs"][0]["metrics"]

    # Two lambdas (both named "<lambda>") are a job order and a victim order, not a clash.
    lambdas = gpusched.simulate(**common, order=lambda job: job.runtime_estimate or 2**63 - 1,
                                victim_order=lambda victim: victim.now - victim.start_time)
    assert lambdas["runs"][0]["metrics"] == named["runs"][0]["metrics"]
    assert lambdas["sweep"]["parameters"]["victim_order"] == "python-victims:<lambda>"

    def broken(job):
        raise ValueError("no")

    with pytest.raises(gpusched.PolicyError, match="no") as e:
        gpusched.simulate(**common, order=broken)
    assert isinstance(e.value.__cause__, ValueError)
    with pytest.raises(ValueError, match="unknown victim order"):
        gpusched.simulate(**common, victim_order="nope")


def test_a_python_policy_places_kubernetes_pods():
    # tests/fixtures/k8s: best-fit binds etl (CPU only) to cpu-0, keeping GPU nodes for GPU work; a
    # Python policy that scores by idle GPUs binds it to a GPU node (mig-single-0); finetune (6 GPUs)
    # fits gpu-a100-1 only. One that raises is a PolicyError.
    fixtures = os.path.join(SOURCE, "tests", "fixtures", "k8s")
    nodes, pods = os.path.join(fixtures, "nodes.yaml"), os.path.join(fixtures, "pods.yaml")

    def most_idle(node, task):
        return node.idle_gpus

    best = {b["pod"]: b["node"] for b in gpusched.place_k8s(nodes, pods)["bindings"]}
    mine = {b["pod"]: b["node"] for b in gpusched.place_k8s(nodes, pods, policy=most_idle)["bindings"]}
    assert set(mine) == set(best)
    assert best["team-b/etl"] == "cpu-0" and mine["team-b/etl"] == "mig-single-0"
    assert best["team-a/finetune"] == mine["team-a/finetune"] == "gpu-a100-1"

    def broken(node, task):
        raise RuntimeError("cannot")

    with pytest.raises(gpusched.PolicyError, match="broken"):
        gpusched.place_k8s(nodes, pods, policy=broken)
