# Sourced by the Slurm tests (label slurm): starts a private single-node Slurm (Debian 12's slurm-wlm
# 22.05) and munge as root, everything under a temporary directory $D (own munge socket and key, own
# ports, state and spool dirs), and stops the daemons by their PID files on exit.
#
#   start_slurm EXTRA_NODE_ARGS [EXTRA_CONF_LINES] [GRES_CONF_LINES]
#
# Skips the test (exit 77) with a message when slurmctld/slurmd/munged are not installed or not root.
for d in slurmctld slurmd munged sbatch sinfo squeue scontrol; do
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
stop_slurm() {
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
cleanup() {
  stop_slurm
  rm -rf "$D"
}
trap cleanup EXIT

start_slurm() {
  local node_args=$1 extra_conf=${2:-} gres_conf=${3:-}
  mkdir -p "$D/munge" "$D/state" "$D/spool"
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
$extra_conf
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=4096 $node_args State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  if [ -n "$gres_conf" ]; then printf '%s\n' "$gres_conf" >"$D/gres.conf"; fi
  export SLURM_CONF=$D/slurm.conf
  slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
  slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
  local state=""
  for _ in $(seq 1 60); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  [ "$state" = idle ] || fail "the node is not idle (sinfo: ${state:-none})"
}
