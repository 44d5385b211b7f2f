#!/usr/bin/env python3
"""The README's policy comparison from Python: the FGD paper's trace experiment (docs/bench-packing.md).

    PYTHONPATH=build/python python3 examples/python/compare_policies.py [--trace default]
        [--seeds 42-44] [--policies FGD,FGD-OC,BestFit] [--out compare_policies]

Replays the Alibaba GPU trace against the placement policies and prints, per policy, the unallocated
GPU % when the arrived workload equals the cluster's capacity (mean ± standard deviation over the
seeds, and paired against FGD), and the LP lower bound. The README's figures use ten seeds (42-51):
FGD 4.77 %, BestFit 7.14 %, FGD-OC 3.78 %, bound 3.09 %; three seeds (the default here) take a
fraction of the time and land close. With matplotlib installed it also draws the curves from 50 % to
130 % arrived workload into OUT.png (like `gpusched bench-packing`'s SVG); the table goes to OUT.csv.
"""
import argparse
import csv
import sys

import gpusched


def seed_list(text):
    seeds = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            seeds.extend(range(int(a), int(b) + 1))
        else:
            seeds.append(int(part))
    return seeds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default", help="a shipped pod list (gpusched.known_traces()) or a CSV path")
    ap.add_argument("--seeds", default="42-44", help="A-B or a comma list (the README uses 42-51)")
    ap.add_argument("--policies", default="", help="comma list; default: all seven")
    ap.add_argument("--no-bound", action="store_true", help="skip the LP lower bound")
    ap.add_argument("--out", default="compare_policies", help="prefix of the .csv (and .png) written")
    args = ap.parse_args(argv)

    policies = [p for p in args.policies.split(",") if p]
    report = gpusched.bench_packing(args.trace, policies=policies, seeds=seed_list(args.seeds),
                                    lower_bound=not args.no_bound)
    ref = report["reference_policy"]
    print(f"trace {report['trace']}: {report['nodes']} nodes, {report['gpus']} GPUs, {report['pods']} pods; "
          f"seeds {report['seeds'][0]}-{report['seeds'][-1]}")
    print(f"{'policy':<14} {'unallocated GPU % at 100 %':>28} {'vs ' + ref + ' (paired)':>20}")
    rows = []
    for p in sorted(report["policies"], key=lambda p: p["unallocated_gpu_pct_at_100"]):
        mean, sd = p["unallocated_gpu_pct_at_100"], p["unallocated_gpu_pct_at_100_stddev"]
        diff, se = p.get("paired_diff_vs_reference"), p.get("paired_diff_vs_reference_stderr")
        paired = "-" if diff is None or p["policy"] == ref else f"{diff:+.2f} ± {se:.2f}"
        print(f"{p['policy']:<14} {mean:>21.2f} ± {sd:4.2f} {paired:>20}")
        rows.append({"policy": p["policy"], "mean": mean, "stddev": sd, "paired_diff": diff})
    bound = report.get("lower_bound")
    if isinstance(bound, dict) and bound.get("unallocated_gpu_pct_at_100") is not None:
        print(f"{'LP bound':<14} {bound['unallocated_gpu_pct_at_100']:>21.2f} ± "
              f"{bound['unallocated_gpu_pct_at_100_stddev']:4.2f}")

    with open(args.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["policy", "mean", "stddev", "paired_diff"])
        w.writeheader()
        w.writerows(rows)
    frame = gpusched.to_frame(rows)  # a DataFrame when pandas is installed, else the rows
    if not isinstance(frame, list):
        print(frame.describe().loc[["mean", "min", "max"]].to_string())

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (apt-get install python3-matplotlib)")
        return 0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    x = report["curve_points_pct"]
    for p in report["policies"]:
        ax.plot(x, p["curve_unallocated_gpu_pct"], label=p["policy"])
    ax.set_xlabel("arrived GPU request (% of capacity)")
    ax.set_ylabel("unallocated GPU (%)")
    ax.set_title(f"Alibaba GPU trace ({report['trace']}), {len(report['seeds'])} seeds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=120)
    print(f"wrote {args.out}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
