#!/bin/bash
# ctest slurm_sweep (label slurm): a simulation sweep as a real Slurm job array, merged, compared byte for
# byte with the unsharded run.
#
# Starts a private single-node Slurm (tests/slurm/slurm_env.sh), submits
# examples/slurm/sweep.sbatch with `sbatch --array=0-3 --wait`, runs `gpusched merge`, runs the same
# sweep unsharded, compares every output file, and stops the daemons by their PID files.
# Skipped (exit 77) with a message when slurmctld/slurmd/munged are not installed or not root.
#
#   usage: run_slurm_sweep.sh GPUSCHED_BINARY SOURCE_DIR
set -euo pipefail
TOOL=$1
SRC=$2
source "$(dirname "$0")/slurm_env.sh"
start_slurm ""
mkdir -p "$D/out" "$D/ref"

# The sweep: 2 policies x 2 seeds on ITP cluster 10 = 4 runs, one per array task.
ARGS="--trace itp:10 --policies fifo,easy --seeds 42-43"
(cd "$D" && GPUSCHED=$TOOL OUT=$D/out SWEEP_ARGS=$ARGS GPUSCHED_DATA_DIR=$SRC/data \
  timeout 120 sbatch --array=0-3 --wait --export=ALL -o "$D/task-%a.log" "$SRC/examples/slurm/sweep.sbatch") ||
  fail "sbatch --array=0-3 --wait"
ls "$D/out"/shard-*-of-4.json >/dev/null || fail "no shard files"
GPUSCHED_DATA_DIR=$SRC/data "$TOOL" merge --quiet --out "$D/out" "$D"/out/shard-*-of-4.json >/dev/null || fail "merge"
# shellcheck disable=SC2086
GPUSCHED_DATA_DIR=$SRC/data "$TOOL" simulate $ARGS --quiet --out "$D/ref" >/dev/null || fail "unsharded run"
for f in simulate.json simulate.csv jct_cdf.svg utilisation.svg queue_length.svg; do
  cmp "$D/out/$f" "$D/ref/$f" || fail "$f differs between the merged Slurm array and the unsharded run"
done
echo "OK: 4 array tasks merged into the unsharded run's report, byte for byte"
rm -rf "$D"/out "$D"/ref
