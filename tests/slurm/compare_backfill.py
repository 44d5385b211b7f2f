#!/usr/bin/env python3
"""Compares gpusched's plan (`cycle --slurm --format json`) with Slurm's (squeue --json after release).

  compare_backfill.py --ready SQUEUE_JSON      exit 0 when every pending job has Slurm's start time
  compare_backfill.py GPUSCHED_JSON HELD_JSON PLANNED_JSON NOW LATER RESOLUTION EARLIER

EARLIER names (comma-separated job names, sbatch -J) the jobs gpusched may plan earlier than Slurm by design: Slurm's
backfill reserves a planned job's whole node. Every other job must match within RESOLUTION (plus the
seconds between the two dumps); no job may be later.

The jobs are named by Slurm's ids ("17", "5_1" for array tasks), as gpusched names them.
"""
import json
import sys


def slurm_jobs(path):
    jobs = {}
    for j in json.load(open(path))["jobs"]:
        if j.get("array_task_string"):
            # A pending array record: its tasks wait together.
            for t in j["array_task_string"].split("%")[0].split(","):
                lo, _, hi = t.partition("-")
                for k in range(int(lo), int(hi or lo) + 1):
                    jobs[f"{j['array_job_id']}_{k}"] = j
        elif j.get("array_job_id"):
            jobs[f"{j['array_job_id']}_{j['array_task_id']}"] = j
        else:
            jobs[str(j["job_id"])] = j
    return jobs


def state(j):
    s = j["job_state"]
    return s[0] if isinstance(s, list) else s


def ready(path):
    pending = [j for j in slurm_jobs(path).values() if state(j) == "PENDING"]
    return all(j["start_time"] > 0 for j in pending)


def main(argv):
    if argv[1] == "--ready":
        return 0 if ready(argv[2]) else 1
    ours = json.load(open(argv[1]))
    held = [name for name, j in slurm_jobs(argv[2]).items() if state(j) == "PENDING"]
    planned = slurm_jobs(argv[3])
    now, later, resolution = int(argv[4]), int(argv[5]), int(argv[6])
    # EARLIER names jobs by their Slurm name (sbatch -J); the plans name them by id.
    earlier_names = {n for n in argv[7].split(",") if n}
    earlier = {n for n in held if planned[n]["name"] in earlier_names}
    ours_start = {s["job"] for s in ours["starts"]}
    ours_reserved = {r["job"]: r["start"] for r in ours["reservations"]}
    slurm_started = {n for n in held if state(planned[n]) == "RUNNING"}
    failures = []
    print(f"{'job':8} {'gpusched':>12} {'slurm':>12}")
    for n in held:
        j = planned[n]
        mine = "now" if n in ours_start else (f"+{ours_reserved[n] - now}s" if n in ours_reserved else "-")
        theirs = "now" if n in slurm_started else f"+{j['start_time'] - now}s"
        print(f"{n:8} {mine:>12} {theirs:>12}")
    if ours_start - earlier != slurm_started:
        failures.append(f"started now: gpusched {sorted(ours_start)}, Slurm {sorted(slurm_started)}")
    slack = resolution + (later - now)
    for n in held:
        if n in slurm_started:
            continue
        theirs = planned[n]["start_time"]
        if n in earlier and n in ours_start:
            continue  # gpusched starts it now, Slurm later: by design
        if n not in ours_reserved:
            failures.append(f"job {n}: Slurm plans it at {theirs}, gpusched reserves nothing")
        elif ours_reserved[n] > theirs + slack:
            failures.append(f"job {n}: gpusched plans it later than Slurm: {ours_reserved[n]} > {theirs} + {slack}")
        elif ours_reserved[n] < theirs - slack and n not in earlier:
            failures.append(f"job {n}: gpusched plans it {theirs - ours_reserved[n]} s earlier than Slurm (whole-node reservation?)")
    for f in failures:
        print("FAILED:", f)
    print("OK: gpusched plans what Slurm plans" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
