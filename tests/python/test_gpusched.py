"""The Python module end to end: every exposed call, hand-worked decisions, errors naming the field.

Run by ctest (`python` test) with PYTHONPATH at the build tree's python/ folder and
GPUSCHED_SOURCE_DIR at the source tree (fixtures and examples).
"""
import json
import os

import pytest

import gpusched

SOURCE = os.environ.get("GPUSCHED_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(SOURCE, "tests", "fixtures")
EXAMPLES = os.path.join(SOURCE, "examples")

# n0: 4 x A100-80GB, n1: 8 x A100-80GB, n2: CPU only (the C API test's cluster, tests/capi).
THREE_NODES = {"nodes": [
    {"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"},
    {"name": "n1", "cpu": 32, "memory": "128Gi", "gpus": 8, "gpu_model": "A100-80GB"},
    {"name": "n2", "cpu": 8, "memory": "32Gi"},
]}
JOBS = {"jobs": [
    {"name": "a", "gpus": 3, "cpu": 4, "memory": "4Gi"},
    {"name": "b", "gpus": 4, "cpu": 4, "memory": "4Gi"},
    {"name": "c", "gpus": 8, "cpu": 4, "memory": "4Gi"},
    {"name": "d", "gpus": 16, "cpu": 4, "memory": "4Gi"},
    {"name": "e", "cpu": 2, "memory": "4Gi"},
    {"name": "half", "gpus": 1, "gpu_milli": 500, "cpu": 1, "memory": "1Gi"},
]}


def test_version_and_policies():
    assert gpusched.__version__ == "0.1.0"
    names = gpusched.policy_names()
    assert names[:2] == ["first-fit", "best-fit"]
    assert "dot-product" in names and "random" in names


def test_cluster_from_dict_and_nodes():
    cluster = gpusched.load_cluster(THREE_NODES)
    assert cluster.node_count == 3
    nodes = cluster.nodes()
    assert [n["name"] for n in nodes] == ["n0", "n1", "n2"]
    assert nodes[0]["gpus"] == 4 and nodes[0]["idle_gpus"] == 4 and nodes[0]["free_gpu_milli"] == 4000
    assert nodes[0]["gpu_models"] == ["A100-80GB"] * 4
    assert nodes[1]["cpu_milli"] == 32000 and nodes[1]["memory"] == 128 * 2**30
    assert nodes[2]["gpus"] == 0 and nodes[2]["schedulable"] and nodes[2]["healthy"]


def test_cluster_events_change_the_state_in_place():
    # The same cluster as above, changed by events instead of rebuilt; best fit as hand-worked there.
    cluster = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS)
    g0 = cluster.generation
    cluster.cordon("n0")  # by name or index
    assert cluster.generation > g0 and not cluster.nodes()[0]["schedulable"]
    a = cluster.place(jobs, "a")  # n0 would fit best, but it is cordoned
    assert a.tasks[0]["node"] == "n1" and a.tasks[0]["gpus"] == [0, 1, 2]
    cluster.uncordon(0)
    held = cluster.fail_node("n1")  # what runs there stays reserved until the caller releases it
    assert held == {"cpu_milli": 4000, "memory": 4 * 2**30, "gpu_milli": 3000, "busy_gpus": 3}
    assert not cluster.nodes()[1]["healthy"]
    assert cluster.place(jobs, "b").tasks[0]["node"] == "n0"  # n1 has more idle GPUs, but it is down
    assert cluster.place(jobs, "half", dry_run=True).verdict == "not now"  # n0 is full now, n1 down
    cluster.recover_node("n1")
    assert cluster.place(jobs, "half", dry_run=True).tasks[0]["node"] == "n1"

    fresh = gpusched.load_cluster(THREE_NODES)
    fresh.set_gpu_health("n0", 0, False)
    assert fresh.nodes()[0]["gpu_healthy"] == [False, True, True, True] and fresh.nodes()[0]["idle_gpus"] == 3
    assert fresh.place(jobs, "a").tasks[0]["gpus"] == [1, 2, 3]
    fresh.set_mig_mode("n1", 0, True)  # nvidia-smi -mig 1 on an idle GPU: MIG work only, no instance yet
    assert fresh.nodes()[1]["mig_mode"] == [True] + [False] * 7 and fresh.nodes()[1]["idle_gpus"] == 7
    d = fresh.mig_pick("7g.80gb")
    assert d["placed"] and (d["node"], d["gpu"]) == ("n1", 0)
    with pytest.raises(ValueError, match="set_mig_mode on n1 GPU 0: instance at start 0 is busy"):
        fresh.set_mig_mode(1, 0, False)
    fresh.set_label("n2", "example.com/rack", "r1")
    fresh.remove_label("n2", "example.com/rack")
    with pytest.raises(KeyError, match="no node named"):
        fresh.cordon("nope")
    with pytest.raises(IndexError, match="out of range"):
        fresh.set_mig_mode("n1", 8, True)
    with pytest.raises(IndexError, match="out of range"):
        fresh.set_gpu_health("n0", 4, False)
    with pytest.raises(IndexError, match="out of range"):
        fresh.fail_node(3)


def test_place_hand_worked_best_fit():
    # Best fit (fewest idle GPUs left; CPU-only tasks on the node with the fewest GPUs):
    # a (3 GPUs) -> n0 [0,1,2]; b (4) -> n1 [0..3]; c (8): no node has 8 idle now -> not now;
    # d (16): no node has 16 GPUs -> infeasible; e (CPU only) -> n2; half -> n0's last GPU (the
    # tightest GPU: n0 has one idle GPU left, n1 four).
    cluster = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS)
    assert len(jobs) == 6 and jobs.names[0] == "a"
    a = cluster.place(jobs, 0)
    assert a.placed and a.verdict == "placed" and a.job == "a"
    assert a.tasks == [{"group": "task", "replica": 0, "node": "n0", "gpus": [0, 1, 2], "gpu_milli": 1000}]
    b = cluster.place(jobs, "b", policy="best-fit")
    assert b.tasks[0]["node"] == "n1" and b.tasks[0]["gpus"] == [0, 1, 2, 3]
    c = cluster.place(jobs, "c")
    assert not c.placed and c.verdict == "not now" and c.tasks == []
    assert "insufficient GPUs" in c.message
    assert any(r["kind"] == "insufficient_gpus" or "GPU" in r["text"] for r in c.reasons)
    d = cluster.place(jobs, "d")
    assert d.verdict == "infeasible"
    e = cluster.place(jobs, "e")
    assert e.tasks[0]["node"] == "n2" and e.tasks[0]["gpus"] == []
    half = cluster.place(jobs, "half")
    assert half.tasks[0]["node"] == "n0" and half.tasks[0]["gpus"] == [3] and half.tasks[0]["gpu_milli"] == 500
    nodes = cluster.nodes()
    assert nodes[0]["idle_gpus"] == 0 and nodes[0]["free_gpu_milli"] == 500
    assert nodes[1]["idle_gpus"] == 4


def test_place_dry_run_and_policies():
    cluster = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS["jobs"])  # a bare list of jobs is a jobs document too
    p = cluster.place(jobs, "a", policy="worst-fit", dry_run=True)
    assert p.tasks[0]["node"] == "n1"  # most idle GPUs left
    assert cluster.nodes()[1]["idle_gpus"] == 8  # the dry run kept nothing
    for policy in gpusched.policy_names():
        q = cluster.place(jobs, "a", policy=policy, seed=7, dry_run=True)
        assert q.placed, policy
    t = cluster.place(jobs, "b", gpu_picker="topology", dry_run=True)
    assert t.placed and len(t.tasks[0]["gpus"]) == 4
    assert "placed" in repr(p) or "tasks" in repr(p)


def test_release_gives_a_finished_job_back_once():
    # a (3 GPUs, 4 cores) on n0 leaves 1 idle GPU and 12 cores; its release restores 4 and 16.
    cluster = gpusched.load_cluster(THREE_NODES)
    other = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS)
    a = cluster.place(jobs, "a")
    assert cluster.nodes()[0]["idle_gpus"] == 1
    with pytest.raises(ValueError, match="holds nothing on this cluster"):
        other.release(a)  # placed on another cluster
    cluster.release(a)
    n0 = cluster.nodes()[0]
    assert n0["idle_gpus"] == 4 and n0["cpu_free_milli"] == 16000
    assert a.tasks[0]["node"] == "n0"  # still readable
    with pytest.raises(ValueError, match="holds nothing"):
        cluster.release(a)  # once
    with pytest.raises(ValueError, match="holds nothing"):
        cluster.release(cluster.place(jobs, "a", dry_run=True))
    with pytest.raises(ValueError, match="holds nothing"):
        cluster.release(cluster.place(jobs, "d"))  # infeasible: nothing placed
    g = cluster.place_gang(jobs, "b")
    assert cluster.nodes()[0]["idle_gpus"] == 0
    cluster.release(g)
    assert cluster.nodes()[0]["idle_gpus"] == 4 and cluster.nodes()[1]["idle_gpus"] == 8


def test_to_json_reads_back_to_the_same_state():
    cluster = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS)
    cluster.place(jobs, "a")
    cluster.place(jobs, "half")
    cluster.cordon("n2")
    text = cluster.to_json()
    doc = json.loads(text)
    assert [n["name"] for n in doc["nodes"]] == ["n0", "n1", "n2"]
    assert doc["nodes"][2]["schedulable"] is False
    copy = gpusched.Cluster.from_json(text)
    assert copy.nodes() == cluster.nodes()
    assert copy.to_json() == text
    assert "\n  " in cluster.to_json(indent=2)
    assert json.loads(cluster.to_json(indent=16)) == doc
    # nlohmann's serializer read past its indent buffer beyond 1,024 (stray bytes at 2000, a crash at 10**6).
    for bad in (-2, 17, 2000, 10**6):
        with pytest.raises(ValueError, match=r"indent: expected -1 \(one line\) to 16 spaces"):
            cluster.to_json(indent=bad)


def test_set_label_refuses_what_no_reader_accepts():
    cluster = gpusched.load_cluster(THREE_NODES)
    # "v\nw" was accepted, then from_json(to_json()) refused the state it wrote.
    with pytest.raises(ValueError, match="control character 0x0a in the label value"):
        cluster.set_label("n0", "k", "v\nw")
    with pytest.raises(ValueError, match="control character 0x01 in the label key"):
        cluster.set_label("n0", "k\x01", "v")
    cluster.set_label("n0", "k", "v")
    assert gpusched.Cluster.from_json(cluster.to_json()).to_json() == cluster.to_json()


def test_place_errors():
    cluster = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS)
    with pytest.raises(ValueError, match=r'policy: unknown policy "nope" \(known: first-fit, best-fit'):
        cluster.place(jobs, 0, policy="nope")
    with pytest.raises(ValueError, match="gpu_picker"):
        cluster.place(jobs, 0, gpu_picker="magic")
    with pytest.raises(IndexError, match=r"job: index 6 is out of range \(6 jobs\)"):
        cluster.place(jobs, 6)
    with pytest.raises(KeyError, match="no job named"):
        cluster.place(jobs, "zz")
    jobs_bad_model = gpusched.load_jobs([{"name": "x", "gpus": 1, "gpu_models": ["Z100"]}])
    with pytest.raises(ValueError, match="Z100"):
        cluster.place(jobs_bad_model, 0)


def test_place_every_way_of_calling():
    # Cluster.place reads plain calls directly and hands every other form to the pybind11 binding
    # (python/gpusched_py.cpp, "Cluster.place's call path"): both must decide the same.
    cluster = gpusched.load_cluster(THREE_NODES)
    jobs = gpusched.load_jobs(JOBS)

    def seen(p):
        return (p.job, p.verdict, p.message, p.tasks, p.reasons)

    plain = seen(cluster.place(jobs, 0, "worst-fit", 42, True))
    assert plain[1] == "placed" and plain[3][0]["node"] == "n1"
    assert seen(cluster.place(jobs=jobs, job="a", policy="worst-fit", dry_run=True)) == plain
    assert seen(cluster.place(jobs, 0, "worst-fit", 42, 1)) == plain  # an int for dry_run: converted
    assert seen(cluster.place(jobs, 0, "worst-fit", 42, True, "default")) == plain
    assert seen(cluster.place(jobs, 0, b"worst-fit", dry_run=True)) == plain  # bytes: converted

    assert "Places one job" in gpusched.Cluster.place.__doc__
    assert seen(cluster.place(jobs, 3, dry_run=True)) == seen(cluster.place(jobs, "d", dry_run=True))
    assert cluster.place(jobs, 3, dry_run=True).reasons
    with pytest.raises(TypeError):
        cluster.place(jobs, 0, "best-fit", 42, True, "default", 7)
    with pytest.raises(TypeError):
        cluster.place(jobs, 0, colour="red")
    with pytest.raises(TypeError):
        cluster.place(jobs)
    with pytest.raises(TypeError):
        cluster.place("not jobs", 0)
    with pytest.raises(TypeError):
        cluster.place(jobs, 0, seed=-1)
    with pytest.raises(TypeError):
        gpusched.Cluster.place(object(), jobs, 0)
    # A job or node of the wrong type is a TypeError (pybind11 said RuntimeError "Unable to cast").
    with pytest.raises(TypeError, match=r"job: expected a job index \(int\) or name \(str\), got NoneType"):
        cluster.place(jobs, None)
    with pytest.raises(TypeError, match=r"node: expected a node index \(int\) or name \(str\), got float"):
        cluster.cordon(3.2)
    with pytest.raises(TypeError, match="got NoneType"):
        cluster.fail_node(None)
    with pytest.raises(TypeError, match="got bytes"):
        cluster.set_label(b"n0", "k", "v")
    with pytest.raises(IndexError):
        cluster.cordon(2**70)
    # Nothing above kept a placement (every call was a dry run or raised).
    assert cluster.nodes()[1]["idle_gpus"] == 8 and cluster.nodes()[0]["idle_gpus"] == 4

def test_bad_documents_name_the_field():
    with pytest.raises(ValueError, match=r"nodes\[0\]\.gpus: expected a non-negative integer, got -2"):
        gpusched.load_cluster({"nodes": [{"name": "a", "cpu": 8, "memory": "8Gi", "gpus": -2}]})
    with pytest.raises(ValueError, match="colour"):
        gpusched.load_jobs({"jobs": [{"name": "j", "colour": "red"}]})
    with pytest.raises(ValueError):
        gpusched.Cluster.from_json("{", "broken.json")
    with pytest.raises(OSError):
        gpusched.load_cluster("/nonexistent/cluster.json")


def test_files_and_the_shipped_example():
    cluster = gpusched.load_cluster(os.path.join(EXAMPLES, "cluster.json"))
    jobs = gpusched.load_jobs(os.path.join(EXAMPLES, "jobs.json"))
    placed = {}
    for name in jobs.names:
        p = cluster.place(jobs, name)
        placed[name] = p
    # The bindings of examples/c/place.expected (and `gpusched place`).
    assert [(t["group"], t["node"], t["gpus"]) for t in placed["llm-pretrain"].tasks] == [
        ("launcher", "cpu-0", []), ("worker", "h100-0", list(range(8))), ("worker", "h100-2", list(range(8)))]
    assert placed["finetune"].tasks[0]["gpus"] == [5, 6, 7]
    assert placed["too-big"].verdict == "not now"
    assert "5 GPU model not allowed" in placed["too-big"].message


def test_gang():
    # n1 half used first (worst fit puts 4 GPUs on n1): a rigid 2 x 8 GPUs fits nowhere even empty
    # (only n1 has 8 GPUs) -> infeasible; an elastic 3 x 4 GPUs (min 1) gets 2 replicas, one per node.
    cluster = gpusched.load_cluster(THREE_NODES)
    fill = gpusched.load_jobs([{"name": "fill", "gpus": 4, "cpu": 1, "memory": "1Gi"}])
    assert cluster.place(fill, 0, policy="worst-fit").tasks[0]["node"] == "n1"
    jobs = gpusched.load_jobs([
        {"name": "rigid", "replicas": 2, "gpus": 8, "cpu": 1, "memory": "1Gi"},
        {"name": "elastic", "replicas": 3, "min_replicas": 1, "gpus": 4, "cpu": 1, "memory": "1Gi"},
    ])
    r = cluster.place_gang(jobs, "rigid")
    assert r.verdict == "infeasible" and r.message
    assert r.gang["placed_per_group"] == {"task": 0}
    e = cluster.place_gang(jobs, "elastic")
    assert e.placed and len(e.tasks) == 2
    assert sorted(t["node"] for t in e.tasks) == ["n0", "n1"]
    assert e.gang["placed_per_group"] == {"task": 2}
    assert cluster.place(jobs, "rigid").gang is None


def test_mig_pick():
    # examples/mig/cluster.json: `gpusched mig place --profile 1g.10gb` creates the instance on
    # dgx-a100-01 GPU 0 at slice 6 (frag-aware), the same decision here.
    cluster = gpusched.load_cluster(os.path.join(EXAMPLES, "mig", "cluster.json"))
    d = cluster.mig_pick("1g.10gb", apply=False)
    assert d["placed"] and d["node"] == "dgx-a100-01" and d["gpu"] == 0 and d["start"] == 6
    assert d["action"] == "create" and d["profile"] == "1g.10gb" and d["model"] == "A100-SXM4-40GB"
    again = cluster.mig_pick("1g.10gb", apply=True)
    assert again == d
    after = cluster.mig_pick("1g.10gb", apply=False)
    assert (after["node"], after["gpu"], after["start"]) != (d["node"], d["gpu"], d["start"])
    ff = cluster.mig_pick("1g.10gb", policy="first-fit", apply=False)
    assert ff["placed"]
    with pytest.raises(ValueError, match="profile"):
        cluster.mig_pick("9g.999gb")
    with pytest.raises(ValueError, match="policy"):
        cluster.mig_pick("1g.10gb", policy="best")
    # A job asking for a MIG instance goes through place() and says which instance it got.
    jobs = gpusched.load_jobs([{"name": "inf", "mig_profile": "1g.10gb", "cpu": 1, "memory": "1Gi"}])
    p = cluster.place(jobs, 0, dry_run=True)
    assert p.placed and p.tasks[0]["mig_profile"] == "1g.10gb" and p.tasks[0]["mig_start"] >= 0
    # The cycle takes the MIG choice by name (docs/mig.md): on an empty A100 a 1g.5gb goes to slice 0
    # by first fit, to slice 6 by the frag-aware rule; a Session likewise.
    one = {"nodes": [{"name": "n0", "cpu": 64, "memory": "256Gi",
                      "gpus": [{"model": "A100-SXM4-40GB", "mig": {"instances": []}}]}]}
    small = [{"name": "s", "mig_profile": "1g.5gb", "cpu": 1}]
    def start(**options):
        out = gpusched.cycle(gpusched.load_cluster(one), small, now=0, **options)
        return out["starts"][0]["tasks"][0]["mig"]["start"]
    assert start() == 0 and start(mig_placement="first-fit") == 0 and start(mig_placement="frag-aware") == 6
    session = gpusched.Session(gpusched.load_cluster(one), mig_placement="frag-aware")
    session.submit(small)
    assert session.cycle(0)["starts"][0]["tasks"][0]["mig"]["start"] == 6
    with pytest.raises(ValueError, match="mig_placement"):
        gpusched.cycle(gpusched.load_cluster(one), small, now=0, mig_placement="best")
    for choice, slice_ in (("first-fit", 0), ("frag-aware", 6)):
        placed = gpusched.load_cluster(one).place(gpusched.load_jobs(small), 0, mig_placement=choice)
        assert placed.placed and placed.tasks[0]["mig_start"] == slice_
    with pytest.raises(ValueError, match="mig_placement"):
        gpusched.load_cluster(one).place(gpusched.load_jobs(small), 0, mig_placement="best")


def test_fairshare():
    # Worked by hand in tests/cli/fairness_cli_test.cpp: v-train, n-pretrain, v-old, n-ft admitted;
    # v-big exceeds vision's borrowing limit, n-more finds no quota to borrow.
    base = os.path.join(FIXTURES, "fairness")
    cluster = gpusched.load_cluster(os.path.join(base, "cluster.json"))
    out = gpusched.fairshare(cluster, os.path.join(base, "queues.json"), os.path.join(base, "jobs.json"))
    assert [a["job"] for a in out["admitted"]] == ["v-train", "n-pretrain", "v-old", "n-ft"]
    assert out["admitted"][0]["flavor"] == "A100-80GB"
    assert [p["job"] for p in out["pending"]] == ["v-big", "n-more"]
    assert "borrowing limit" in out["pending"][0]["reason"]
    assert out["queues"][0]["dominant_share"] == pytest.approx(0.5)
    with open(os.path.join(base, "queues.json")) as f:
        queues = json.load(f)
    early = gpusched.fairshare(cluster, queues, gpusched.load_jobs(os.path.join(base, "jobs.json")), now=0)
    assert early["admitted"][0]["priority"] == 10
    with pytest.raises(ValueError, match=r"queues\[0\]\.weight: expected a positive number, got -1"):
        gpusched.fairshare(cluster, {"queues": [{"name": "a", "weight": -1}]}, os.path.join(base, "jobs.json"))
    table = gpusched.to_frame(out["admitted"])
    assert len(table) == 4


def test_topology_pick():
    # DGX-1 (V100, hybrid cube mesh): `gpusched topo pick --gpus 4` picks 0-3 (span NV1); from the
    # free GPUs 0, 4, 5 the pair 0,4 (NV2) beats 4,5 (NV1) and 0,5 (no NVLink).
    path = os.path.join(FIXTURES, "topology", "dgx1_v100.txt")
    p = gpusched.topology_pick(path, 4)
    assert p["found"] and p["gpus"] == [0, 1, 2, 3] and p["span"] == "NV1" and p["exact"]
    assert p["bus_bandwidth_gbps"] == pytest.approx(115.75)
    with open(path) as f:
        text = f.read()
    q = gpusched.topology_pick(text, 2, free=[0, 4, 5])
    assert q["gpus"] == [0, 4] and q["span"] == "NV2"
    assert not gpusched.topology_pick(text, 4, free=[0, 1])["found"]
    with pytest.raises(ValueError, match="free: GPU 9"):
        gpusched.topology_pick(text, 1, free=[9])
    with pytest.raises(ValueError, match="gpus"):
        gpusched.topology_pick(text, 0)


def test_bench_packing_small():
    assert "default" in gpusched.known_traces()
    assert os.path.isdir(gpusched.data_dir())
    report = gpusched.bench_packing("default", policies=["FGD", "BestFit"], seeds=[42], lower_bound=False)
    by_policy = {p["policy"]: p for p in report["policies"]}
    assert set(by_policy) == {"FGD", "BestFit"}
    assert report["seeds"] == [42]
    # FGD leaves less GPU share unallocated than best fit on the default trace (README: 4.77 % vs
    # 7.14 % over ten seeds).
    assert by_policy["FGD"]["unallocated_gpu_pct_at_100"] < by_policy["BestFit"]["unallocated_gpu_pct_at_100"]
    frame = gpusched.bench_packing_frame(report)
    assert len(frame) == 2
    with pytest.raises(ValueError, match='unknown trace "nope"'):
        gpusched.bench_packing("nope")
    with pytest.raises(ValueError, match="seeds"):
        gpusched.bench_packing("default", seeds=[])


def test_to_frame_without_or_with_pandas():
    rows = [{"a": 1}, {"a": 2}]
    frame = gpusched.to_frame(rows)
    try:
        import pandas  # noqa: F401
    except ImportError:
        assert frame == rows
    else:
        assert list(frame["a"]) == [1, 2]


# One cycle by hand on THREE_NODES at t=1000 (no queues: one queue, priority then submit time;
# EASY backfill; preemption of lower priority within the queue): `low` holds all 8 GPUs of n1 since
# t=0 and never checkpointed. `high` (priority 10, 8 GPUs) fits no node's idle GPUs (n0 has 4), so
# `low` is evicted for it (priority) losing 8 GPUs x 1000 s = 8000 GPU-s, and `high` starts on n1;
# `small` (2 GPUs) best-fits n0's GPUs 0, 1; `huge` (16 GPUs) fits no node: infeasible.
CYCLE_RUNNING = {"jobs": [{"name": "low", "gpus": 8, "cpu": 4, "memory": "4Gi", "start_time": 0,
                           "placement": [{"node": "n1", "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}]}]}
CYCLE_PENDING = {"jobs": [
    {"name": "high", "gpus": 8, "cpu": 4, "memory": "4Gi", "priority": 10, "submit_time": 500},
    {"name": "small", "gpus": 2, "cpu": 4, "memory": "4Gi", "submit_time": 600},
    {"name": "huge", "gpus": 16, "cpu": 4, "memory": "4Gi", "submit_time": 700},
]}


def test_cycle_hand_worked():
    cluster = gpusched.load_cluster(THREE_NODES)
    d = gpusched.cycle(cluster, CYCLE_PENDING, running=CYCLE_RUNNING, now=1000, dry_run=True)
    assert d["now"] == 1000
    assert [s["job"] for s in d["starts"]] == ["high", "small"]
    assert d["starts"][0]["tasks"] == [{"group": "task", "node": "n1", "gpus": list(range(8))}]
    assert d["starts"][0]["preempted"] is True and d["starts"][0]["priority"] == 10
    assert d["starts"][1]["tasks"] == [{"group": "task", "node": "n0", "gpus": [0, 1]}]
    assert d["evictions"] == [{"job": "low", "for": "high", "reason": "priority", "lost_gpu_seconds": 8000.0,
                               "restart_gpu_seconds": 0.0, "tasks": [0]}]
    assert [p["job"] for p in d["pending"]] == ["huge"]
    huge = d["pending"][0]
    assert huge["verdict"] == "infeasible"
    assert any(r["kind"] == "insufficient GPUs" and r["needed"] == 16 and r["available"] == 8 for r in huge["reasons"])
    # A dry run leaves the cluster as it was.
    assert [n["idle_gpus"] for n in cluster.nodes()] == [4, 8, 0]

    # Without preemption `high` waits (not now, with the numbers) and `low` keeps n1.
    d = cluster.cycle(gpusched.load_jobs(CYCLE_PENDING), running=CYCLE_RUNNING, now=1000, dry_run=True, preempt=False)
    assert d["evictions"] == [] and [s["job"] for s in d["starts"]] == ["small"]
    high = next(p for p in d["pending"] if p["job"] == "high")
    assert high["verdict"] == "not now" and "insufficient GPUs (need 8, have 4 GPUs)" in high["message"]

    # Applied: the cluster keeps high (n1) and small (n0).
    d = cluster.cycle(CYCLE_PENDING, running=CYCLE_RUNNING, now=1000)
    assert len(d["starts"]) == 2
    assert [n["idle_gpus"] for n in cluster.nodes()] == [2, 0, 0]
    assert len(gpusched.to_frame(d["starts"])) == 2


def test_cycle_dry_run_without_running_jobs_changes_nothing():
    # It used to keep the starts when no job was running (the cycle committed an empty journal).
    cluster = gpusched.load_cluster(THREE_NODES)
    d = cluster.cycle(CYCLE_PENDING, now=1000, dry_run=True)
    assert [s["job"] for s in d["starts"]] == ["high", "small"]
    assert [n["idle_gpus"] for n in cluster.nodes()] == [4, 8, 0]


def test_session_kept_across_cycles():
    # The hand-worked example as an orchestrator's loop: low runs on n1; high, small and huge are
    # submitted; the first cycle evicts low for high (priority) and starts small on n0; low is back
    # in the queue (evicted jobs join the end); huge never fits (infeasible). Then small finishes and
    # a late job takes its GPUs at the next cycle.
    cluster = gpusched.load_cluster(THREE_NODES)
    s = gpusched.Session(cluster, backfill="none")
    s.add_running(CYCLE_RUNNING)
    assert s.running == ["low"]
    s.submit(CYCLE_PENDING)
    plan = s.cycle(now=1000, dry_run=True)
    assert [x["job"] for x in plan["starts"]] == ["high", "small"]
    assert [n["idle_gpus"] for n in cluster.nodes()] == [4, 0, 0] and s.running == ["low"]
    d = s.cycle(now=1000)
    assert d == plan
    assert [n["idle_gpus"] for n in cluster.nodes()] == [2, 0, 0]
    assert sorted(s.running) == ["high", "small"] and s.pending == ["huge"]
    with pytest.raises(ValueError, match=r'jobs\[0\]\.name: "huge" is already pending or running'):
        s.submit({"jobs": [{"name": "huge", "gpus": 1}]})
    s.finish("small")
    assert [n["idle_gpus"] for n in cluster.nodes()] == [4, 0, 0]
    s.submit({"jobs": [{"name": "late", "gpus": 4, "cpu": 2, "submit_time": 1100}]})
    d = s.cycle(now=1100, decisions_only=True)
    assert [x["job"] for x in d["starts"]] == ["late"]
    assert [p["job"] for p in d["pending"]] == ["huge"]  # infeasible: still listed
    with pytest.raises(ValueError, match='"small": not running'):
        s.finish("small")
    s.cancel("huge")
    assert s.pending == []


def test_session_actions_only():
    # Conservative backfill: low holds n1 until 1980; big (8 GPUs) can only start there then, tiny
    # starts on n0 now. With reservations, big's is reported; actions only: the same start, none.
    cluster = gpusched.load_cluster(THREE_NODES)
    s = gpusched.Session(cluster, backfill="conservative", preempt=False)
    s.add_running({"jobs": [dict(CYCLE_RUNNING["jobs"][0], runtime_estimate=1980)]})
    s.submit({"jobs": [{"name": "big", "gpus": 8, "cpu": 4, "runtime_estimate": 600, "submit_time": 10},
                       {"name": "tiny", "gpus": 2, "cpu": 2, "runtime_estimate": 100, "submit_time": 20}]})
    told = s.cycle(now=1000, dry_run=True, decisions_only=True)
    assert [r["job"] for r in told["reservations"]] == ["big"]
    assert told["reservations"][0]["start"] == 1980  # (on the 60 s grid)
    acted = s.cycle(now=1000, actions_only=True)
    assert acted["reservations"] == []
    assert acted["starts"] == told["starts"] and [x["job"] for x in acted["starts"]] == ["tiny"]
    assert s.running == ["low", "tiny"] and s.pending == ["big"]


def test_cycle_the_shipped_example():
    # docs/cycle.md's worked example: res-train evicts prod-batch (cohort reclaim) and starts on
    # node-2, res-small starts, prod-retry backs off until t=3900, res-big waits (cohort exhausted).
    base = os.path.join(EXAMPLES, "cycle")
    cluster = gpusched.load_cluster(os.path.join(base, "cluster.json"))
    d = gpusched.cycle(cluster, os.path.join(base, "pending.json"), queues=os.path.join(base, "queues.json"),
                       running=os.path.join(base, "running.json"), now=3700)
    assert [s["job"] for s in d["starts"]] == ["res-train", "res-small"]
    assert d["starts"][0]["tasks"][0]["node"] == "node-2"
    assert [(e["job"], e["for"], e["reason"], e["lost_gpu_seconds"]) for e in d["evictions"]] == \
        [("prod-batch", "res-train", "cohort reclaim", 3200.0)]
    waiting = {p["job"]: p["message"] for p in d["pending"]}
    assert waiting["prod-retry"] == "not now: backing off after a failure until t=3900"
    assert "cohort exhausted" in waiting["res-big"]


def test_cycle_errors_name_the_field():
    cluster = gpusched.load_cluster(THREE_NODES)
    bad_node = {"jobs": [{"name": "x", "gpus": 1, "start_time": 0, "placement": [{"node": "nope", "gpus": [0]}]}]}
    with pytest.raises(ValueError, match=r'running: jobs\[0\]\.placement\[0\]\.node: no node named "nope"'):
        gpusched.cycle(cluster, CYCLE_PENDING, running=bad_node, now=0)
    with pytest.raises(ValueError, match=r"running: jobs\[0\]\.start_time: missing"):
        gpusched.cycle(cluster, CYCLE_PENDING, running={"jobs": [{"name": "x", "gpus": 1}]}, now=0)
    with pytest.raises(ValueError, match=r'options\.backfill: expected one of none, easy, conservative, got "x"'):
        gpusched.cycle(cluster, CYCLE_PENDING, now=0, backfill="x")
    with pytest.raises(ValueError, match=r"options\.colour: unknown field"):
        gpusched.cycle(cluster, CYCLE_PENDING, now=0, colour=1)
    with pytest.raises(ValueError, match=r"jobs\[0\]\.runtime_estimate: expected a non-negative integer, got -5"):
        gpusched.cycle(cluster, {"jobs": [{"name": "a", "gpus": 1, "runtime_estimate": -5}]}, now=0)
    with pytest.raises(ValueError, match=r"jobs\[0\]: start_time/placement belong to running jobs"):
        gpusched.cycle(cluster, {"jobs": [{"name": "a", "gpus": 1, "start_time": 3}]}, now=0)
    # A time out of range is refused before the running jobs are reserved: not even the generation moves.
    generation = cluster.generation
    for now in (2**63 - 1, -1):
        with pytest.raises(ValueError, match=r"now: expected seconds in"):
            gpusched.cycle(cluster, CYCLE_PENDING, running=CYCLE_RUNNING, now=now)
    assert cluster.generation == generation
    # Nothing was kept by the failed calls.
    assert [n["idle_gpus"] for n in cluster.nodes()] == [4, 8, 0]


# Two nodes of 8 GPUs. a (8 GPUs, 100 s) and b (2 x 8 GPUs, 50 s) arrive at t=0, c (4 GPUs, 60 s) at
# t=10. fifo: a runs 0-100, b waits for both nodes and runs 100-150, c waits behind b and runs
# 150-210: JCTs 100, 150, 200 (mean 150), makespan 210. easy: b is reserved at t=100 on both
# nodes; c ends at 70 < 100, so it backfills at t=10: JCTs 100, 150, 60 (mean 103.3), makespan 150.
# Either way the GPU-seconds delivered are 8x100 + 16x50 + 4x60 = 1840.
SIM_JOBS = {"jobs": [
    {"name": "a", "submit": 0, "duration": 100, "gpus": 8},
    {"name": "b", "submit": 0, "duration": 50, "gpus": 8, "tasks": 2},
    {"name": "c", "submit": 10, "duration": 60, "gpus": 4},
]}


def test_simulate_hand_worked():
    # No restart cost or estimate error (the jobs give neither; the options' defaults would add them).
    report = gpusched.simulate(jobs=SIM_JOBS, policies=["fifo", "easy"], nodes=2, restart_cost=0, estimate_error=0)
    assert report["sweep"]["runs"] == 2 and report["sweep"]["traces"] == ["jobs"]
    runs = {r["policy"]: r for r in report["runs"]}
    for r in runs.values():
        assert r["trace"] == "jobs" and r["seed"] == 42
        assert r["metrics"]["jobs"] == 3 and r["metrics"]["completed"] == 3
        c = r["conservation"]
        assert c["holds"] and c["delivered_milli_gpu_s"] == 1_840_000 and c["max_overcommit"] == 0
        assert c["delivered_milli_gpu_s"] == (c["demand_done"] + c["lost_preemption"] + c["lost_failure"]
                                              + c["restart_overhead"] + c["rounding"])
    assert runs["fifo"]["metrics"]["jct_mean_s"] == pytest.approx(150.0)
    assert runs["fifo"]["metrics"]["makespan_s"] == 210
    assert runs["easy"]["metrics"]["jct_mean_s"] == pytest.approx(310 / 3)
    assert runs["easy"]["metrics"]["makespan_s"] == 150
    frame = gpusched.simulate_frame(report)
    samples = gpusched.samples_frame(report)
    assert len(frame) == 2 and len(samples) == sum(len(r["samples"]["time_s"]) for r in report["runs"])
    try:
        import pandas  # noqa: F401
    except ImportError:
        assert frame[0]["conservation_holds"] is True
    else:
        assert list(frame["policy"]) == ["fifo", "easy"] and bool(frame["conservation_holds"].all())


def test_simulate_a_shipped_trace():
    # ITP cluster 10 (the smallest shipped: 32 x 8 GPUs in the paper) on 8 nodes with greedy: every
    # job of the trace completes and the GPU-seconds balance exactly.
    report = gpusched.simulate("itp:10", policies="greedy", nodes=8)
    (run,) = report["runs"]
    assert run["trace"] == "itp10" and run["metrics"]["jobs"] > 0
    assert run["metrics"]["completed"] == run["metrics"]["jobs"]
    assert run["conservation"]["holds"]


def test_simulate_errors():
    with pytest.raises(ValueError, match=r"jobs\[1\]\.tasks: expected a positive integer"):
        gpusched.simulate(jobs={"jobs": [{"name": "a", "submit": 0, "duration": 1, "gpus": 1},
                                         {"name": "b", "submit": 0, "duration": 1, "gpus": 1, "tasks": 0}]})
    with pytest.raises(ValueError, match="lifo"):
        gpusched.simulate(jobs=SIM_JOBS, policies=["lifo"])
    with pytest.raises(ValueError, match=r"ITP clusters are itp:01 \.\. itp:10"):
        gpusched.simulate("itp:99")
    with pytest.raises(ValueError, match="seeds"):
        gpusched.simulate(jobs=SIM_JOBS, seeds=[])
    with pytest.raises(ValueError, match="gpus_per_node: expected a positive integer, got 0"):
        gpusched.simulate(jobs=SIM_JOBS, gpus_per_node=0)
    with pytest.raises(ValueError, match='model: unknown GPU model "Z100"'):
        gpusched.simulate(jobs=SIM_JOBS, model="Z100")


def test_kubernetes_objects_in_bindings_out():
    # The fixtures of tests/io/k8s_roundtrip_test.cpp: best fit binds finetune (6 GPUs) to
    # gpu-a100-1, etl to cpu-0, infer to a 3g.20gb on mig-mixed-0, notebook to mig-single-0; big
    # waits (not now).
    nodes = os.path.join(FIXTURES, "k8s", "nodes.yaml")
    pods = os.path.join(FIXTURES, "k8s", "pods.yaml")
    out = gpusched.place_k8s(nodes, pods)
    bound = {b["pod"]: b for b in out["bindings"]}
    assert set(bound) == {"team-a/finetune", "team-b/etl", "team-b/infer", "team-b/notebook"}
    assert bound["team-a/finetune"]["node"] == "gpu-a100-1" and len(bound["team-a/finetune"]["gpus"]) == 6
    assert bound["team-b/infer"]["mig"]["profile"] == "3g.20gb"
    assert [p["pod"] for p in out["pending"]] == ["team-a/big"]
    assert out["pending"][0]["verdict"] == "not now"

    # The same objects as a cluster and jobs: the running pod is off its node, the jobs place alike.
    cluster, jobs, warnings = gpusched.load_k8s(nodes, pods)
    assert isinstance(warnings, list)
    assert len(jobs) == 5 and "team-a/finetune" in jobs.names[0]
    a100_0 = next(n for n in cluster.nodes() if n["name"] == "gpu-a100-0")
    assert a100_0["idle_gpus"] == 4  # running-train holds 4 of its 8
    p = cluster.place(jobs, 0, dry_run=True)
    assert p.placed and p.tasks[0]["node"] == "gpu-a100-1"

    # Text and dicts work as sources too; a bad object names it, the field and the value.
    with open(nodes, encoding="utf-8") as f:
        text = f.read()
    c2, j2, _ = gpusched.load_k8s(text)
    assert c2.node_count == cluster.node_count and len(j2) == 0
    bad = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x", "labels": {"nvidia.com/gpu.product": "NoSuchGPU"}},
           "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}}}
    with pytest.raises(ValueError, match=r"^sources\[1\]: .*NoSuchGPU"):
        gpusched.load_k8s(text, bad)  # named by its place among the arguments, as a file by its path
    with pytest.raises(ValueError, match=r"^sources\[1\]: "):
        gpusched.load_k8s(text, "kind: Node\nmetadata: {name: [}\n")
    with pytest.raises(TypeError, match=r"sources\[0\]"):
        gpusched.load_k8s(42)


def test_slurm_json_in():
    # A real Slurm 22.05 capture (tests/fixtures/slurm): two running jobs hold 6 of the node's 8 GPUs;
    # four jobs are held. Planned as if released, conservative backfill starts job 5 (2 GPUs, 5 min)
    # now and reserves 3 (8 GPUs) at r1's end, 6 at job 5's end, 4 after 3 (docs/slurm.md).
    sinfo = os.path.join(FIXTURES, "slurm", "sinfo-8gpu.json")
    squeue = os.path.join(FIXTURES, "slurm", "squeue-held.json")
    cluster, jobs, warnings, skipped = gpusched.load_slurm(sinfo, squeue)
    assert cluster.nodes()[0]["idle_gpus"] == 2 and len(jobs) == 0
    assert sorted(skipped) == [("3", "JobHeldUser"), ("4", "JobHeldUser"), ("5", "JobHeldUser"), ("6", "JobHeldUser")]
    _, held, _, skipped = gpusched.load_slurm(sinfo, squeue, plan_held=True)
    assert held.names == ["3", "4", "5", "6"] and skipped == []
    out = gpusched.cycle_slurm(sinfo, squeue, now=1796394815, plan_held=True, backfill="conservative", preempt=False)
    assert [s["job"] for s in out["starts"]] == ["5"]
    starts = {r["job"]: r["start"] - 1796394815 for r in out["reservations"]}
    assert set(starts) == {"3", "4", "6"}
    assert starts["6"] < starts["3"] < starts["4"]
    # Orders and the placement policy by name, as the C API's gpusched_cycle_slurm takes them.
    named = gpusched.cycle_slurm(sinfo, squeue, now=1796394815, plan_held=True, backfill="conservative",
                                 preempt=False, order="priority", policy="best-fit")
    assert named["starts"] == out["starts"] and named["reservations"] == out["reservations"]
    with pytest.raises(ValueError, match="unknown job order"):
        gpusched.cycle_slurm(sinfo, squeue, now=1796394815, order="nope")
    with pytest.raises(ValueError, match="meta.plugin"):
        gpusched.load_slurm({"meta": {"plugin": {"type": "openapi/v0.0.12"}}, "nodes": []})
    with pytest.raises(TypeError):
        gpusched.cycle_slurm(sinfo, now="soon")


def test_errors_are_python_exceptions_by_kind():
    # A file that cannot be read is an OSError (and, as every input error, a ValueError); a missing
    # name a KeyError; a wrong type a TypeError; a bad value a ValueError.
    with pytest.raises(gpusched.FileError) as e:
        gpusched.simulate(trace=os.path.join(SOURCE, "no-such-trace.csv"), policies=["fifo"], seeds=[1])
    assert isinstance(e.value, OSError) and isinstance(e.value, ValueError)
    assert "no-such-trace.csv" in str(e.value)
    with pytest.raises(OSError):
        gpusched.simulate(trace=SOURCE, policies=["fifo"], seeds=[1])  # a directory
    cluster = gpusched.load_cluster(THREE_NODES)
    with pytest.raises(KeyError):
        cluster.place(gpusched.load_jobs({"jobs": [{"name": "a", "gpus": 1}]}), "b")
    with pytest.raises(TypeError):
        cluster.place(42, "a")
    with pytest.raises(ValueError):
        gpusched.load_jobs({"jobs": [{"name": "a", "gpus": -1}]})


def test_every_public_call_has_a_docstring():
    for name in gpusched.__all__:
        if name == "__version__":
            continue
        doc = getattr(gpusched, name).__doc__
        assert doc and doc.strip(), name
