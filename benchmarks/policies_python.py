#!/usr/bin/env python3
"""What a placement policy written in Python costs (docs/policies.md; figures in benchmarks/README.md,
"Policies of your own").

    PYTHONPATH=build/python python3 benchmarks/policies_python.py

1. The overhead of one score call: one task of 1 GPU placed (a dry run) on 1,000 nodes that all fit
   it, scored by `lambda node, task: 0` (not memoised: every node is a call) and by the built-in
   most-allocated (a score over every fitting node, in C++). Their difference divided by the 1,000
   calls is what gpusched adds per call around the user's function (the views, the call, the result
   checked). Median of 15 repeats of CPU time (time.process_time: the machine is shared).
2. The whole run: bench-packing's protocol on the default Alibaba trace, seeds 42-51, no LP bound,
   with the Python FGD of examples/policies/fgd.py and with the built-in FGD, both on one thread:
   CPU seconds and their ratio.
"""
import os
import statistics
import sys
import time

import gpusched

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "policies"))
from fgd import FGD  # noqa: E402


def median_cpu(fn, repeats=15):
    samples = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        samples.append(time.process_time() - t0)
    return statistics.median(samples)


def score_call_overhead():
    nodes = [{"name": f"n{i}", "cpu": 96, "memory": "1Ti", "gpu_model": "H100-80GB", "gpus": 8} for i in range(1000)]
    cluster = gpusched.load_cluster({"nodes": nodes})
    jobs = gpusched.load_jobs({"jobs": [{"name": "j", "gpus": 1, "cpu": 1, "memory": "1Gi"}]})
    zero = gpusched.Policy("zero", lambda node, task: 0)
    calls = 20
    python = median_cpu(lambda: [cluster.place(jobs, 0, policy=zero, dry_run=True) for _ in range(calls)])
    builtin = median_cpu(lambda: [cluster.place(jobs, 0, policy="most-allocated", dry_run=True) for _ in range(calls)])
    per_call_us = (python - builtin) / (calls * len(nodes)) * 1e6
    print(f"score call overhead: {per_call_us:.3f} us per call (python {python / calls * 1e3:.2f} ms, "
          f"most-allocated {builtin / calls * 1e3:.2f} ms per decision over 1,000 nodes)")


def whole_run():
    fgd = FGD(gpusched.target_workload("default"))
    seeds = list(range(42, 52))
    t0 = time.process_time()
    py = gpusched.bench_packing("default", policies=[fgd], seeds=seeds, lower_bound=False)
    python = time.process_time() - t0
    t0 = time.process_time()
    builtin_report = gpusched.bench_packing("default", policies=["FGD"], seeds=seeds, lower_bound=False, threads=1)
    builtin = time.process_time() - t0
    same = py["policies"][0]["unallocated_gpu_pct_at_100_per_seed"] == \
        builtin_report["policies"][0]["unallocated_gpu_pct_at_100_per_seed"]
    print(f"bench-packing default trace, 10 seeds: python FGD {python:.2f} s CPU, built-in FGD {builtin:.2f} s CPU, "
          f"ratio {python / builtin:.1f}x; same per-seed results: {same}")


if __name__ == "__main__":
    score_call_overhead()
    whole_run()
