#!/usr/bin/env bash
# A single-node Slurm cluster for kevo's tests, from Debian's packages, no
# systemd, as root: `slurm_cluster.sh up DIR` starts munged, slurmctld and
# slurmd with their state, logs and config under DIR and waits until the
# node is idle; `slurm_cluster.sh down DIR` stops them by PID. Exit 3 from
# `up` when this machine cannot run it (not root, packages missing), with
# the reason on stderr: tests then skip.
set -u
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: slurm_cluster.sh up|down DIR" >&2; exit 2; }

down() {
  [ -f "$dir/runtime" ] && rt=$(cat "$dir/runtime") || rt=""
  for name in slurmd slurmctld munged; do
    [ -f "$dir/$name.pid" ] || continue
    pid=$(cat "$dir/$name.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    rm -f "$dir/$name.pid"
  done
  [ -n "$rt" ] && case "$rt" in /tmp/kslurm.*) rm -rf "$rt" ;; esac
  rm -f "$dir/runtime"
}

if [ "$cmd" = down ]; then down; exit 0; fi
[ "$cmd" = up ] || { echo "slurm_cluster.sh: unknown command '$cmd'" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "not root: the test cluster's daemons need root" >&2; exit 3; }
for p in slurmctld slurmd munged sbatch squeue scontrol scancel; do
  command -v "$p" >/dev/null || { echo "$p is not installed (scripts/setup.sh slurm)" >&2; exit 3; }
done
# Unix sockets (munge's, slurmstepd's in the spool) need paths under 108
# bytes: they live in a short directory of their own.
mkdir -p "$dir"/{state,log}
rt=$(mktemp -d /tmp/kslurm.XXXXXX) && chmod 755 "$rt" && echo "$rt" > "$dir/runtime"
mkdir -p "$rt"/{spool,munge/key}
chown -R munge:munge "$rt/munge"; chmod 755 "$rt/munge"; chmod 700 "$rt/munge/key"
host=$(hostname -s)
read -r cpus mem < <(slurmd -C | awk '/^NodeName/ {for (i=1;i<=NF;i++) {split($i,a,"="); if (a[1]=="CPUs") c=a[2]; if (a[1]=="RealMemory") m=a[2]}} END {print c, m}')
mem=$((mem * 9 / 10))
# Several array tasks at once even on a 2-core machine.
slots=$((cpus < 8 ? 8 : cpus))
# Ports no other cluster (another test's, in parallel) holds: the two
# daemons' ranges do not overlap, and a port something answers on is passed.
free_port() {
  local base=$1 port
  for _ in $(seq 50); do
    port=$((base + RANDOM % 2000))
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null || { echo "$port"; return; }
  done
  echo "$((base + RANDOM % 2000))"
}
ctld_port=$(free_port 21000)
slurmd_port=$(free_port 23000)
cat > "$dir/slurm.conf" <<CONF
ClusterName=kevotest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$rt/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$((mem / slots))
SchedulerParameters=sched_interval=2,bf_interval=2
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=1
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$slots RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
# munged with a key of its own, its socket in DIR.
dd if=/dev/urandom of="$rt/munge/key/munge.key" bs=1024 count=1 2>/dev/null
chown munge:munge "$rt/munge/key/munge.key"; chmod 400 "$rt/munge/key/munge.key"
su -s /bin/sh munge -c "munged --key-file=$rt/munge/key/munge.key --socket=$rt/munge/socket \
  --pid-file=$rt/munge/munged.pid --log-file=$rt/munge/munged.log --seed-file=$rt/munge/seed" \
  || { echo "munged did not start" >&2; down; exit 3; }
cp "$rt/munge/munged.pid" "$dir/munged.pid"
echo "AuthInfo=socket=$rt/munge/socket" >> "$dir/slurm.conf"
# Their own sessions: they outlive this script and whoever started it.
setsid slurmctld -f "$dir/slurm.conf" -D > "$dir/log/slurmctld.out" 2>&1 < /dev/null &
setsid slurmd -f "$dir/slurm.conf" -D > "$dir/log/slurmd.out" 2>&1 < /dev/null &
# Up when the node is idle; a controller that died (a port taken after
# all) or a wait past 20 s is said, and what was started is stopped.
end=$(( $(date +%s) + 20 ))
while [ "$(date +%s)" -lt "$end" ]; do
  state=$(timeout 3 sinfo -h -o %t 2>/dev/null | head -1)
  [ "$state" = idle ] && { echo "$dir/slurm.conf"; exit 0; }
  if [ -f "$dir/slurmctld.pid" ] && ! kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    echo "slurmctld died: $(grep -m1 fatal "$dir/log/slurmctld.out")" >&2
    down
    exit 3
  fi
  sleep 0.1
done
echo "the test cluster did not come up within 20 s (node state: ${state:-none}); see $dir/log" >&2
down
exit 3
