#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for tests: `scripts/slurm_local.sh up|down|env`.
# Debian's slurm-wlm and munge (apt-get install slurm-wlm munge), started as this project's own
# processes with every file under $GATELAB_SLURM_DIR (default /tmp/gatelab-slurm): munge key and
# socket, slurm.conf, state, spool, logs. `up` prints the environment to use it (SLURM_CONF);
# `down` stops the daemons and leaves nothing running. No accounting (no slurmdbd): sacct fails.
set -euo pipefail
DIR=${GATELAB_SLURM_DIR:-/tmp/gatelab-slurm}
HOST=$(hostname -s)
CPUS=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }

ours() {  # processes whose environment names this cluster (SLURM_CONF): what its jobs started
  for p in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$p" != "$$" ] && grep -qz "^SLURM_CONF=$DIR/slurm.conf$" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done
  return 0
}

stop_pidfile() { [ -f "$1" ] && kill "$(cat "$1")" 2>/dev/null || true; rm -f "$1"; }

down() {
  stop_pidfile "$DIR/slurmd.pid"; stop_pidfile "$DIR/slurmctld.pid"
  [ -S "$DIR/munge.sock" ] && munged --stop --socket="$DIR/munge.sock" >/dev/null 2>&1 || true
  stop_pidfile "$DIR/munged.pid"
  pkill -f "$DIR/spool/" 2>/dev/null || true  # job scripts that outlive their slurmstepd
  for p in $(ours); do kill -9 "$p" 2>/dev/null || true; done  # an srun whose step a requeue aborted, and its children
  for _ in $(seq 50); do pgrep -f "$DIR/" >/dev/null || break; sleep 0.1; done
  pkill -9 -f "$DIR/" 2>/dev/null || true
  for _ in $(seq 50); do pgrep -f "$DIR/" >/dev/null || break; sleep 0.1; done
}

up() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null || {
    echo "slurm_local: slurmctld/munged not found (apt-get install slurm-wlm munge)" >&2; exit 3; }
  down
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
  chmod 700 "$DIR"
  [ -f "$DIR/munge.key" ] || { dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none; chmod 400 "$DIR/munge.key"; }
  munged --force --key-file="$DIR/munge.key" --socket="$DIR/munge.sock" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munged.seed"
  local ctld_port=${GATELAB_SLURM_PORT:-$(free_port)} slurmd_port
  slurmd_port=$(free_port)
  cat > "$DIR/slurm.conf" <<CONF
ClusterName=gatelab
SlurmctldHost=$HOST
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.sock
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
JobRequeue=1
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=600
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$DIR/slurm.conf"
  slurmctld -i -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  for _ in $(seq 300); do
    sinfo -h -o %T 2>/dev/null | grep -qE "^(idle|mixed|allocated)" && { echo "export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.2
  done
  echo "slurm_local: the node did not come up in 60 s; see $DIR/log" >&2; sinfo >&2 || true; down; exit 4
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) echo "export SLURM_CONF=$DIR/slurm.conf" ;;
  left) ours ;;  # what still runs for this cluster (nothing after down)
  *) echo "usage: $0 up|down|env|left" >&2; exit 2 ;;
esac
