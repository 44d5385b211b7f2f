#!/usr/bin/env python3
"""One placement decision through Python: the Python side of benchmarks/bindings_place.cpp.

    PYTHONPATH=build/python python3 benchmarks/bindings_place.py

The same cluster (1,000 nodes of 8 H100, each GPU busy with probability 0.7 from SplitMix64 seed
42) and the same decision (one task of 2 GPUs, 20 cores, 200 GiB, best fit, a dry run) as the C++
and C API benchmarks. Prints the median over 15 repeats of the CPU time per call (time.process_time,
the machine being shared), in microseconds. Figures: benchmarks/README.md, "Bindings".
"""
import statistics
import time

import gpusched

MASK = (1 << 64) - 1


def splitmix64(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def cluster_doc(nodes):
    rng = splitmix64(42)
    out = []
    for i in range(nodes):
        gpus = [{"used_milli": 1000 if next(rng) % 10 < 7 else 0} for _ in range(8)]
        used = sum(1 for g in gpus if g["used_milli"])
        out.append({"name": f"node-{i}", "cpu": 96, "memory": "1Ti", "gpu_model": "H100-80GB",
                    "cpu_used": used * 11, "memory_used": f"{used * 120}Gi", "gpus": gpus})
    return {"nodes": out}


def main():
    cluster = gpusched.load_cluster(cluster_doc(1000))
    jobs = gpusched.load_jobs({"jobs": [{"name": "j", "gpus": 2, "cpu": 20, "memory": "200Gi"}]})
    place = cluster.place
    for _ in range(2000):  # warm up
        place(jobs, 0, "best-fit", 42, True)
    n = 20000
    samples = []
    for _ in range(15):
        t0 = time.process_time()
        for _ in range(n):
            place(jobs, 0, "best-fit", 42, True)
        samples.append((time.process_time() - t0) / n * 1e6)
    p = place(jobs, 0, "best-fit", 42, True)
    assert p.placed, p.message
    print(f"python place (dry run), 1,000 nodes: median {statistics.median(samples):.2f} us CPU per call "
          f"(min {min(samples):.2f}, max {max(samples):.2f}; {n} calls x 15)")


if __name__ == "__main__":
    main()
