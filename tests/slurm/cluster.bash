# Sourced by the slurm tests: a one-node SLURM cluster on this machine (munged, slurmctld and slurmd of
# Debian's slurm-wlm, which scripts/setup.sh installs), with its config, state, sockets and logs in a fresh
# directory under /tmp (unix socket paths must stay short). `start_cluster CPUS` exports SLURM_CONF so
# sbatch/srun/scontrol talk to it; the daemons and any job left are stopped when the test exits, failed
# or not. A machine where the daemons cannot start (not root, packages missing, a daemon that does not
# come up) skips the test (ctest's 77) with the reason and the daemon's log tail.
export PATH=$PATH:/usr/sbin:/sbin
cluster_dir="" cluster_pids=()

skip() { echo "SKIP: $*"; exit 77; }

# wait_for SECONDS WHAT COMMAND...: poll COMMAND every 0.5 s until it succeeds; 1 after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" > /dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "timed out waiting for $what" >&2; return 1; }
    sleep 0.5
  done
}

stop_cluster() {
  local rc=$? p
  trap - EXIT
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    # Jobs first, so that no slurmstepd (a daemon of its own) outlives slurmd with training processes.
    scancel --quiet --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    wait_for 60 "the jobs to end" test -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" || true
  fi
  for p in "${cluster_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${cluster_pids[@]}"; do
    wait_for 15 "daemon $p to stop" bash -c "! kill -0 $p" || kill -9 "$p" 2>/dev/null || true
  done
  [ -n "$cluster_dir" ] && rm -rf "$cluster_dir"
  exit "$rc"
}

# daemon_up NAME PID LOG: the daemon is still running (else skip with its log tail).
daemon_up() {
  kill -0 "$2" 2>/dev/null && return 0
  tail -n 30 "$3" >&2
  skip "$1 exited at start-up (log tail above)"
}

# start_daemon NAME LOG COMMAND...: run it in the foreground mode in the background, remember its pid.
start_daemon() {
  local name=$1 log=$2
  shift 2
  "$@" >> "$log" 2>&1 &
  cluster_pids=("$!" "${cluster_pids[@]}")  # stopped in reverse order of start
  sleep 0.2
  daemon_up "$name" "$!" "$log"
}

# ready_or_skip SECONDS NAME LOG COMMAND...: wait until COMMAND succeeds while the daemon lives.
ready_or_skip() {
  local deadline=$((SECONDS + $1)) name=$2 log=$3 pid=${cluster_pids[0]}
  shift 3
  until "$@" > /dev/null 2>&1; do
    daemon_up "$name" "$pid" "$log"
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 30 "$log" >&2
      skip "$name did not become ready in ${SECONDS}s (log tail above)"
    fi
    sleep 0.5
  done
}

node_idle() { [ "$(sinfo -h -n "$cluster_node" -o %T)" = idle ]; }
ctld_up() { scontrol ping | grep -q "is UP"; }
munge_ok() { munge -n -S "$cluster_dir/munge.sock" | unmunge -S "$cluster_dir/munge.sock"; }

start_cluster() {
  local cpus=${1:-2} c
  [ "$(id -u)" = 0 ] || skip "the test's slurmd and munged run as root; this is uid $(id -u)"
  for c in munged mungekey munge slurmctld slurmd sbatch srun scontrol squeue sinfo scancel python3; do
    command -v "$c" > /dev/null || skip "$c not found (Debian: apt-get install slurmctld slurmd slurm-client munge; scripts/setup.sh installs them)"
  done
  cluster_dir=$(mktemp -d /tmp/gptrain-slurm.XXXXXX)
  trap stop_cluster EXIT
  trap 'exit 143' TERM INT
  local d=$cluster_dir ports
  mkdir -p "$d/state" "$d/spool"
  # Two free loopback ports (another test's cluster may be running beside this one).
  ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
  cluster_node=$(hostname -s)
  mungekey -c -k "$d/munge.key" || skip "mungekey could not create a key"
  start_daemon munged "$d/munged.log" munged -F --force --socket="$d/munge.sock" --key-file="$d/munge.key" \
    --log-file="$d/munged.log" --pid-file="$d/munged.pid" --seed-file="$d/munged.seed"
  ready_or_skip 60 munged "$d/munged.log" munge_ok

  # A job's processes are tracked in cgroups as on a cluster (proctrack/cgroup: whatever a job leaves
  # behind dies with it) where this machine lets root make a cgroup v1 hierarchy's directories; else by
  # their parent links (proctrack/linuxproc: a container without delegated cgroups, or cgroup v2 only,
  # which Slurm wants delegated by systemd). Job cgroups are named by node and job id, so job ids start at
  # a number of this shell's own: another test's cluster on this machine has the same node name. A job
  # record stays an hour after the job ends, so that a finished job can be requeued; it may start again
  # once the credentials of its last run expired (cred_expire, 120 s by default: slurmd refuses a revoked
  # one). The scheduler looks for startable jobs every 5 s rather than 60.
  local proctrack=linuxproc probe=/sys/fs/cgroup/freezer/gptrain-probe-$$
  if mkdir "$probe" 2> /dev/null; then
    rmdir "$probe"
    proctrack=cgroup
    printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n' > "$d/cgroup.conf"
  fi
  cat > "$d/slurm.conf" <<EOF
ClusterName=gptraintest
SlurmctldHost=$cluster_node(127.0.0.1)
SlurmctldPort=${ports% *}
SlurmdPort=${ports#* }
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock,cred_expire=10
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/$proctrack
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=3600
FirstJobId=$(($$ * 10 + 1))
KillWait=30
SlurmdParameters=config_overrides
NodeName=$cluster_node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$cluster_node Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$d/slurm.conf
  start_daemon slurmctld "$d/slurmctld.log" slurmctld -D -i -f "$SLURM_CONF"
  ready_or_skip 120 slurmctld "$d/slurmctld.log" ctld_up
  start_daemon slurmd "$d/slurmd.log" slurmd -D -N "$cluster_node" -f "$SLURM_CONF"
  ready_or_skip 120 slurmd "$d/slurmd.log" node_idle
  echo "cluster: slurmctld, slurmd (node $cluster_node, $cpus CPUs, proctrack/$proctrack) and munged up in $d"
}
