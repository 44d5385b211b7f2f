"""FGD, Fragmentation Gradient Descent, as a placement policy written in Python.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC'23, section 4. The same algorithm as gpusched's built-in "FGD"
(include/gpusched/packing/fgd.hpp), written from the paper in plain Python against gpusched's policy
interface (docs/policies.md). tests/python/test_policies.py checks that it makes the built-in's
decisions on the Alibaba trace, and benchmarks/README.md records what it costs.

    import gpusched
    from fgd import FGD
    fgd = FGD(gpusched.target_workload("default"))
    report = gpusched.bench_packing("default", policies=[fgd, "FGD"], seeds=[42])

The idea. A node's free GPU share is only useful if the tasks that will arrive can use it. The target
workload M is the most common task shapes m with their frequencies p_m. The fragmentation of a node
is the free GPU share the workload is expected to be unable to use:

    F(node) = sum over m of p_m * F_m(node)
    F_m     = all the node's free share    if m needs no GPU, cannot fit the node's CPU, cannot use
                                           its GPU models, or finds fewer than m.gpus GPUs with m's
                                           share free;
            = the free share of the GPUs with less than m's share free, otherwise.

A task goes where F grows least: the score of a node is int(100 * sigmoid((F_before - F_after) /
1000)), as in the paper's simulator (coarse on purpose: equal scores go to the first node of a seeded
node order, ``ties = "seeded"``). A shared task takes the GPU with the least F_after (ties: the
least free share, then the lowest index); whole GPUs are the lowest-index idle ones.

F depends only on the node's free CPU and its GPUs' free shares and models, so the policy declares
``memoize = True``: gpusched scores each (node state, task shape) once. Run it with the shell:

    PYTHONPATH=build/python python3 examples/policies/fgd.py
"""
import math


class FGD:
    name = "py-fgd"
    ties = "seeded"
    memoize = True

    def __init__(self, workload):
        # gpusched.target_workload(...): dicts with cpu_milli, gpus, gpu_milli, models, weight.
        self.shapes = [(m["cpu_milli"], m["gpus"], m["gpu_milli"], m["models"], m["weight"]) for m in workload]
        self.known = {}  # F by node state: thousands of nodes share a few hundred states

    def fragmentation(self, cpu_free, gpu_free, gpu_models):
        key = (cpu_free, tuple(gpu_free), tuple(gpu_models))
        f = self.known.get(key)
        if f is None:
            f = self.known[key] = self.compute_fragmentation(cpu_free, gpu_free, gpu_models)
        return f

    def compute_fragmentation(self, cpu_free, gpu_free, gpu_models):
        total = sum(gpu_free)
        if total == 0:
            return 0.0
        f = 0.0
        for cpu, gpus, milli, models, weight in self.shapes:
            if gpus == 0 or cpu_free < cpu:
                f += weight * float(total)
                continue
            usable = small = 0
            allowed = False
            for free, model in zip(gpu_free, gpu_models):
                if models is not None and model not in models:
                    small += free
                    continue
                allowed = True
                if free >= milli:
                    usable += 1
                else:
                    small += free
            f += weight * float(total if (not allowed or usable < gpus) else small)
        return f

    @staticmethod
    def usable(node, task):
        """The GPUs the task may use: its models, enough GPU memory."""
        models, memory = task.models, task.gpu_memory
        return [models is None or m in models for m in node.gpu_models] if memory == 0 else [
            (models is None or m in models) and free_memory >= memory
            for m, free_memory in zip(node.gpu_models, node.gpu_free_memory)]

    def best_gpu(self, node, task, free, models, cpu_after):
        """A shared task: (F after, GPU) of the GPU that lowers F most (ties: least free, lowest index)."""
        best = None
        for g, ok in enumerate(self.usable(node, task)):
            if not ok or free[g] < task.gpu_milli:
                continue
            after_free = list(free)
            after_free[g] -= task.gpu_milli
            after = self.fragmentation(cpu_after, after_free, models)
            if best is None or after < best[0] or (after == best[0] and free[g] < free[best[1]]):
                best = (after, g)
        return best

    def whole_gpus(self, node, task, free):
        picked = [g for g, ok in enumerate(self.usable(node, task)) if ok and free[g] == 1000][:task.gpus]
        return picked if len(picked) == task.gpus else None

    def score(self, node, task):
        free, models, cpu = node.gpu_free_milli, node.gpu_models, node.cpu_free_milli
        before = self.fragmentation(cpu, free, models)
        cpu_after = cpu - task.cpu_milli
        if task.shares_gpu:
            best = self.best_gpu(node, task, free, models, cpu_after)
            if best is None:
                return None
            after = best[0]
        elif task.gpus > 0 and task.gpu_milli > 0:
            picked = self.whole_gpus(node, task, free)
            if picked is None:
                return None
            after_free = list(free)
            for g in picked:
                after_free[g] = 0
            after = self.fragmentation(cpu_after, after_free, models)
        else:
            after = self.fragmentation(cpu_after, free, models)
        return int(100.0 / (1.0 + math.exp(-((before - after) / 1000.0))))

    def pick_gpus(self, node, task):
        free = node.gpu_free_milli
        if task.shares_gpu:
            best = self.best_gpu(node, task, free, node.gpu_models, node.cpu_free_milli - task.cpu_milli)
            return None if best is None else best[1]
        return self.whole_gpus(node, task, free)


if __name__ == "__main__":
    import time

    import gpusched

    fgd = FGD(gpusched.target_workload("default"))
    for policy in (fgd, "FGD"):
        start = time.perf_counter()
        report = gpusched.bench_packing("default", policies=[policy], seeds=[42], lower_bound=False)
        row = report["policies"][0]
        print(f"{row['policy']:8} unallocated at 100 %: {row['unallocated_gpu_pct_at_100']:.4f} %  "
              f"({time.perf_counter() - start:.2f} s)")
