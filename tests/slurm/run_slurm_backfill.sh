#!/bin/bash
# ctest slurm_backfill (label slurm): gpusched's conservative backfill on a real Slurm's own JSON,
# compared with the plan of Slurm's sched/backfill (docs/slurm.md, docs/backfill.md).
#
# A private single-node Slurm (tests/slurm/slurm_env.sh) with 8 GPUs as a typed GRES (stand-in device
# files: slurmd reports a count-only GPU GRES as 0), sched/backfill at bf_resolution=60 and
# priority/basic (priority = submission order). Two jobs run with time limits; the pending jobs are
# submitted held. `sinfo --json` and `squeue --json` are dumped, and gpusched plans the held jobs as
# if released (`cycle --slurm ... --slurm-held plan --backfill conservative --no-preempt`). Then the
# jobs are released; once Slurm's backfill has planned every job that still waits, squeue --json is
# dumped again. The test (tests/slurm/compare_backfill.py) requires:
#   - the jobs gpusched starts now are the jobs Slurm started;
#   - every job Slurm plans gets gpusched's planned start within bf_resolution (+ the seconds between
#     the two dumps), or, where Slurm reserves a planned job's whole node (docs/backfill.md), no later.
# Skipped (exit 77) when Slurm is not installed or the test does not run as root.
#
#   usage: run_slurm_backfill.sh GPUSCHED_BINARY
set -euo pipefail
TOOL=$1
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/slurm_env.sh"
mkdir -p "$D/dev"
for i in 0 1 2 3 4 5 6 7; do : >"$D/dev/nvidia$i"; done
# 16 CPUs on a 2-core machine (config_overrides): the GPUs, not the CPUs, are what the jobs wait for.
start_slurm "CPUs=16 Gres=gpu:a100:8 Feature=nvlink" "GresTypes=gpu
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=bf_resolution=60,bf_window=1440,bf_interval=1,bf_continue
PriorityType=priority/basic" "NodeName=localhost Name=gpu Type=a100 File=$D/dev/nvidia[0-7]"

submit() { sbatch --parsable -o /dev/null "$@" --wrap "sleep 7200"; }

# One scenario: the running jobs start, the pending ones are submitted held, both JSON documents are
# dumped and planned by gpusched, the jobs are released, Slurm's plan is dumped once its backfill
# has planned every job that still waits, and the two plans are compared (compare_backfill.py, with
# the jobs that may start earlier by design named). Every job is cancelled at the end.
#   scenario NAME RUNNING_FN HELD_FN EARLIER_BY_DESIGN
scenario() {
  local name=$1 running=$2 pending=$3 earlier=$4
  echo "== scenario $name"
  $running
  for _ in $(seq 1 40); do
    [ "$(squeue -h -t R | wc -l)" = "$RUNNING" ] && break
    sleep 0.5
  done
  [ "$(squeue -h -t R | wc -l)" = "$RUNNING" ] || fail "$name: the running jobs did not start"
  HELD=""
  $pending
  local now
  now=$(date +%s)
  sinfo --json >"$D/$name-sinfo.json"
  squeue --json >"$D/$name-held.json"
  "$TOOL" cycle --slurm "$D/$name-sinfo.json" "$D/$name-held.json" --slurm-held plan --now "$now" --backfill conservative \
    --backfill-resolution 60 --no-preempt --format json >"$D/$name-gpusched.json" || fail "$name: gpusched cycle --slurm"
  "$TOOL" cycle --slurm "$D/$name-sinfo.json" "$D/$name-held.json" --slurm-held plan --now "$now" --backfill conservative \
    --backfill-resolution 60 --no-preempt --format slurm || fail "$name: gpusched cycle --slurm --format slurm"
  # shellcheck disable=SC2086
  scontrol release $HELD
  for _ in $(seq 1 60); do
    sleep 1
    squeue --json >"$D/$name-planned.json"
    python3 "$HERE/compare_backfill.py" --ready "$D/$name-planned.json" && break
  done
  squeue --start || true
  python3 "$HERE/compare_backfill.py" "$D/$name-gpusched.json" "$D/$name-held.json" "$D/$name-planned.json" "$now" "$(date +%s)" 60 \
    "$earlier" || fail "$name: gpusched's plan differs from Slurm's"
  scancel --full $(squeue -h -o %i) 2>/dev/null || true
  for _ in $(seq 1 40); do
    [ -z "$(squeue -h)" ] && break
    sleep 0.5
  done
}
hold() { HELD="$HELD $(submit -H "$@")"; }

# Running in both scenarios: 4 GPUs for 30 min, 2 GPUs for 10 min (2 GPUs left free).
RUNNING=2
two_running() {
  submit -J r1 -t 30 --gres=gpu:a100:4 >/dev/null
  submit -J r2 -t 10 --gres=gpu:2 >/dev/null
}
# A: in priority order, the whole node for 60 min (reserved when r1 ends), half of it for 25 min
# (does not fit before that reservation: after it), 2 GPUs for 5 min (starts now, beside the running
# jobs), 1 GPU for 20 min on feature nvlink (starts when the small job ends, and ends before the
# whole-node job's reservation). Slurm and gpusched plan the same.
whole_node() {
  hold -J big -t 60 --gres=gpu:8
  hold -J mid -t 25 --gres=gpu:4
  hold -J small -t 5 --gres=gpu:2
  hold -J one -t 20 --gres=gpu:1 --constraint=nvlink
}
# B: 6 GPUs for 60 min (reserved when r1 ends, leaving 2 GPUs of the node free), then 2 GPUs for
# 60 min: they fit now and beside the 6-GPU job's reservation, so gpusched starts them now; Slurm's
# backfill reserves the planned job's whole node (its node_space map holds nodes, not GPUs) and puts
# them after it. By design gpusched is earlier there, never later (docs/backfill.md).
partial_node() {
  hold -J six -t 60 --gres=gpu:6
  hold -J side -t 60 --gres=gpu:2
}
scenario whole-node two_running whole_node ""
scenario partial-node two_running partial_node "side"
echo "OK: gpusched's conservative backfill plans what Slurm's sched/backfill plans (and no later where Slurm reserves whole nodes)"
