#!/bin/bash
# ctest slurm_sweep (label slurm): a simulation sweep as a real Slurm job array, merged, compared byte for
# byte with the unsharded run.
#
# Starts a private single-node Slurm (Debian 12's slurm-wlm 22.05) and munge as root, everything under a
# temporary directory (own munge socket and key, own ports, state and spool dirs), submits
# examples/slurm/sweep.sbatch with `sbatch --array=0-3 --wait`, runs `gpusched merge`, runs the same
# sweep unsharded, compares every output file, and stops the daemons by their PID files.
# Skipped (exit 77) with a message when slurmctld/slurmd/munged are not installed or not root.
#
#   usage: run_slurm_sweep.sh GPUSCHED_BINARY SOURCE_DIR
set -euo pipefail
TOOL=$1
SRC=$2
for d in slurmctld slurmd munged sbatch sinfo; do
  if ! command -v "$d" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$d" ]; then
    echo "SKIP: $d not found (install Debian's slurm-wlm and munge: apt-get install slurm-wlm munge)"
    exit 77
  fi
done
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the single-node Slurm of this test is started as root"
  exit 77
fi
export PATH=$PATH:/usr/sbin
D=$(mktemp -d /tmp/gpusched-slurm.XXXXXX)
chmod 755 "$D"
PORT=$((20000 + $$ % 20000))
stop() {
  for p in slurmd slurmctld munged; do
    if [ -s "$D/$p.pid" ]; then kill "$(cat "$D/$p.pid")" 2>/dev/null || true; fi
  done
  sleep 1
  for p in slurmd slurmctld munged; do
    if [ -s "$D/$p.pid" ] && kill -0 "$(cat "$D/$p.pid")" 2>/dev/null; then kill -9 "$(cat "$D/$p.pid")" || true; fi
  done
}
fail() {
  echo "FAILED: $*"
  for f in "$D"/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}
trap stop EXIT

# munge: a private key and socket.
mkdir -p "$D/munge" "$D/state" "$D/spool" "$D/out" "$D/ref"
chmod 700 "$D/munge"
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$D/munge/munge.key"
munged --force --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" --pid-file="$D/munged.pid" \
  --log-file="$D/munged.log" --seed-file="$D/munge/munge.seed" || fail "munged did not start"

cat >"$D/slurm.conf" <<CONF
ClusterName=gpusched-test
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=4096 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
for _ in $(seq 1 60); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "${state:-}" = idle ] || fail "the node is not idle (sinfo: ${state:-none})"

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
