#!/usr/bin/env bash
# deploy/slurm against a REAL local Slurm: munged, slurmctld and two slurmd (node1, node2: two
# node names on this host, distinct ports; proctrack/linuxproc and task/none so no cgroups are
# needed), all started from a slurm.conf in a temp dir and torn down at the end.
#   A. salloc -N2 + codl-slurm-agents.sh: both agents register with a real codl-controller,
#      labelled slurm_job/slurm_node; on SIGTERM the script stops them and removes their scratch.
#   B. sbatch --wait deploy/slurm/codl-experiment.sbatch: agents + an experiment end to end.
# Usage: slurm_test.sh SOURCE_DIR BIN_DIR. Exit 77 (skipped, with the reason) when Slurm is not
# installed, we are not root, or the daemons cannot start here.
set -uo pipefail
src=${1:?source dir}
bin=${2:?bin dir}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; show_logs; exit 1; }

[[ $(id -u) -eq 0 ]] || skip "needs root to run munged, slurmctld and slurmd"
for t in munged slurmctld slurmd srun salloc sbatch squeue scancel sinfo python3; do
  command -v "$t" >/dev/null ||
    skip "$t not found (Debian packages munge, slurmctld, slurmd, slurm-client; 'scripts/install-deps.sh test' installs them)"
done
for b in codl-controller codl-agent codlctl codl-inject; do
  [[ -x "$bin/$b" ]] || fail "$bin/$b not built"
done

tmp=$(mktemp -d /tmp/codl-slurm-test.XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/run"
chmod 755 "$tmp/munge"
export SLURM_CONF=$tmp/slurm.conf
pids_to_stop=()

show_logs() {
  for f in "$tmp"/log/* "$tmp"/*.log "$tmp"/*.out; do
    [[ -f $f ]] || continue
    echo "---- $(basename "$f") (last 25 lines)"
    tail -n 25 "$f"
  done
}
stop_pid() {  # stop_pid PID: TERM, up to 10 s, then KILL
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  set +e
  if [[ -f "$tmp/slurmctld.pid" ]]; then
    for j in $(timeout 10 squeue -h -o %i 2>/dev/null); do timeout 10 scancel "$j"; done
  fi
  for p in "${pids_to_stop[@]}"; do stop_pid "$p"; done
  for f in "$tmp"/run/slurmd-*.pid "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
    [[ -f $f ]] && stop_pid "$(cat "$f")"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- munge -------------------------------------------------------------------------------------
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1 count=1024 status=none
chmod 400 "$tmp/munge/munge.key"
timeout 20 munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.sock" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/log/munged.log" \
  --seed-file="$tmp/munge/munged.seed" ||
  { show_logs; skip "munged cannot start in this environment (log above)"; }

# ---- slurm.conf: two node names on this host, distinct ports ---------------------------------
host=$(hostname -s)
ctld_port=$(free_port); node1_port=$(free_port); node2_port=$(free_port)
cat >"$SLURM_CONF" <<CONF
ClusterName=codltest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool/%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd-%n.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd-%n.log
# No cgroups in a container: track processes by parentage, no task binding or accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
GresTypes=gpu
NodeName=node1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$node1_port CPUs=2 RealMemory=1000 Gres=gpu:1 State=UNKNOWN
NodeName=node2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$node2_port CPUs=2 RealMemory=1000 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=node1,node2 Default=YES MaxTime=10 State=UP OverSubscribe=YES
CONF

# One fake GPU per node (/dev/null as its device file): enough to check that the agents' step
# asks for it.
printf 'Name=gpu File=/dev/null\n' >"$tmp/gres.conf"
timeout 30 slurmctld -f "$SLURM_CONF" -i || { show_logs; skip "slurmctld cannot start in this environment"; }
for n in node1 node2; do
  timeout 30 slurmd -f "$SLURM_CONF" -N "$n" || { show_logs; skip "slurmd -N $n cannot start in this environment"; }
done
ready=0
for _ in $(seq 1 60); do
  if [[ $(timeout 10 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l) -ge 2 ]]; then ready=1; break; fi
  sleep 0.5
done
((ready)) || { timeout 10 sinfo -N -l; show_logs; skip "slurmd nodes did not become idle within 30 s"; }
out=$(timeout 60 srun -N2 --ntasks-per-node=1 bash -c 'echo $SLURMD_NODENAME' 2>&1) ||
  { echo "$out"; show_logs; skip "srun cannot launch tasks in this environment"; }
echo "local Slurm up: srun ran on $(echo $out | tr '\n' ' ')"

# ---- a real controller ---------------------------------------------------------------------------
controller=127.0.0.1:$(free_port)
"$bin/codl-controller" --listen "$controller" --db "$tmp/controller.db" --heartbeat-interval 500ms --insecure \
  >"$tmp/controller.log" 2>&1 &
pids_to_stop+=($!)
ctl() { timeout 20 "$bin/codlctl" --controller "$controller" "$@"; }
for _ in $(seq 1 100); do ctl agents >/dev/null 2>&1 && break; sleep 0.2; done
ctl agents >/dev/null || fail "codl-controller did not come up"

# ---- A. salloc + codl-slurm-agents.sh ------------------------------------------------------------
timeout 120 salloc -N2 --time=5 --job-name=codl-agents-test \
  bash "$src/deploy/slurm/codl-slurm-agents.sh" --controller "$controller" --bin-dir "$bin" \
  --scratch "$tmp/scratch" --label test=slurm --wait 60 >"$tmp/salloc.out" 2>&1 &
salloc_pid=$!
pids_to_stop+=($salloc_pid)
agents_json=""
for _ in $(seq 1 120); do
  agents_json=$(ctl agents --json 2>/dev/null | grep '"alive":true' | grep '"slurm_job":')
  [[ $(printf '%s\n' "$agents_json" | grep -c slurm_job) -ge 2 ]] && break
  sleep 0.5
done
echo "$agents_json"
[[ $(printf '%s\n' "$agents_json" | grep -c slurm_job) -eq 2 ]] || fail "two agents with a slurm_job label did not register"
for n in node1 node2; do
  grep "\"agent_id\":\"$n\"" <<<"$agents_json" | grep -q "\"slurm_node\":\"$n\"" ||
    fail "no agent $n labelled slurm_node=$n"
done
job=$(grep -o '"slurm_job":"[0-9]*"' <<<"$agents_json" | head -1 | grep -o '[0-9]\+')
grep -q '"test":"slurm"' <<<"$agents_json" || fail "the --label passed to the script is missing"
[[ $(grep -c "\"slurm_job\":\"$job\"" <<<"$agents_json") -eq 2 ]] || fail "agents disagree on slurm_job"
timeout 30 bash -c "until grep -q 'registered' '$tmp/salloc.out'; do sleep 0.2; done" ||
  fail "codl-slurm-agents.sh did not report the registration"
# Private per-job, per-node directories (mktemp -d): codl-<job>-<node>.XXXXXX, mode 0700.
n1=$(compgen -G "$tmp/scratch/codl-*-node1.*" || true); n2=$(compgen -G "$tmp/scratch/codl-*-node2.*" || true)
[[ -d "$n1/scratch" && -d "$n2/scratch" ]] || fail "per-node scratch dirs missing"
[[ $(stat -c %a "$n1") == 700 ]] || fail "per-node dir $n1 is not private (mode $(stat -c %a "$n1"))"
grep -q "does not hold its nodes exclusively" "$tmp/salloc.out" ||
  fail "no warning for an allocation that shares its nodes (salloc without --exclusive)"
echo "A: agents of job $job registered with slurm_job/slurm_node labels (and a shared-node warning)"

# SIGTERM to the script (salloc's child): it stops the agent step and the allocation ends.
script_pid=$(pgrep -P "$salloc_pid" -f codl-slurm-agents.sh | head -1)
[[ -n "$script_pid" ]] || fail "cannot find codl-slurm-agents.sh under salloc"
kill -TERM "$script_pid"
timeout 60 bash -c "while kill -0 $salloc_pid 2>/dev/null; do sleep 0.2; done" ||
  fail "salloc did not end within 60 s of SIGTERM to the script"
gone=0
for _ in $(seq 1 60); do
  [[ $(ctl agents --json 2>/dev/null | grep "\"slurm_job\":\"$job\"" | grep -c '"alive":true') -eq 0 ]] &&
    ! pgrep -f "codl-agent.*slurm_job=$job" >/dev/null && { gone=1; break; }
  sleep 0.5
done
((gone)) || fail "agents of job $job still alive after the script stopped"
[[ ! -e "$n1" && ! -e "$n2" ]] || fail "per-node scratch dirs not removed"
echo "A: SIGTERM stopped both agents and removed their scratch dirs"

# ---- B. sbatch example: agents + an experiment ---------------------------------------------------
"$bin/codlctl" validate "$src/deploy/slurm/experiment.yaml" >/dev/null ||
  fail "deploy/slurm/experiment.yaml does not validate"
cat >"$tmp/experiment.yaml" <<'EXP'
name: slurm-test
nodes: {labels: {slurm_job: "${SLURM_JOB_ID}"}}
victim:
  command: [sh, -c, 'for i in 1 2 3 4 5 6; do echo "{\"step\": $i, \"step_time_s\": 0.01}"; sleep 0.05; done']
  progress: {format: jsonl, field: step_time_s}
  warmup_steps: 1
  timeout: 60s
antagonists:
  - name: membw
    injector: memcpy
    options: {threads: 1, buffer_size: 8MiB}
    levels: [0.5]
pairings: singles
repetitions: 1
order: {randomize: true, seed: 1}
settle: 1s
calibration: {duration: 1s}
lease: 5s
EXP
(cd "$tmp" && timeout 200 sbatch --wait -N2 --time=5 --output="$tmp/sbatch-%j.out" \
  --export="ALL,CODL_CONTROLLER=$controller,CODL_BIN_DIR=$bin,EXPERIMENT=$tmp/experiment.yaml,CODL_SLURM_AGENTS=$src/deploy/slurm/codl-slurm-agents.sh,CODL_AGENT_LISTEN=127.0.0.1:0,CODL_SCRATCH=$tmp/scratch-b" \
  "$src/deploy/slurm/codl-experiment.sbatch") >"$tmp/sbatch-submit.log" 2>&1
rc=$?
cat "$tmp"/sbatch-*.out 2>/dev/null
((rc == 0)) || fail "sbatch --wait codl-experiment.sbatch exited $rc"
grep -q "experiment finished with status 0" "$tmp"/sbatch-*.out || fail "the experiment did not finish with status 0"
results=$(ctl results latest -o csv 2>&1) || fail "codlctl results: $results"
grep -q "membw" <<<"$results" || fail "results lack the membw pairing: $results"
! grep -q "does not hold its nodes exclusively" "$tmp"/sbatch-*.out ||
  fail "the sbatch example (#SBATCH --exclusive) still shares its nodes"
echo "B: sbatch example ran the experiment on both nodes, holding them exclusively"

# C: Slurm's time-limit signal (#SBATCH --signal=B:TERM@120) reaches the batch shell; here
# `scancel --batch --signal=TERM` delivers the same signal at once. The running experiment must
# end cancelled, the agents must stop, and the job must end well before Slurm's own kill. The
# agents' step asks for the GPUs given by CODL_GPUS_PER_NODE.
cat >"$tmp/long.yaml" <<'EXP'
name: slurm-signal
nodes: {labels: {slurm_job: "${SLURM_JOB_ID}"}}
victim:
  command: [sh, -c, 'for i in $(seq 1 150); do echo "{\"step\": $i, \"step_time_s\": 0.1}"; sleep 0.1; done']
  progress: {format: jsonl, field: step_time_s}
  timeout: 300s
antagonists:
  - name: ticks
    injector: noop
    rates: ['1000']
pairings: singles
repetitions: 2
settle: 1s
lease: 5s
EXP
rm -f "$tmp"/sbatch-*.out
submitted=$(cd "$tmp" && timeout 30 sbatch --parsable -N2 --time=5 --gres=gpu:1 --output="$tmp/sbatch-%j.out" \
  --export="ALL,CODL_CONTROLLER=$controller,CODL_BIN_DIR=$bin,EXPERIMENT=$tmp/long.yaml,CODL_SLURM_AGENTS=$src/deploy/slurm/codl-slurm-agents.sh,CODL_AGENT_LISTEN=127.0.0.1:0,CODL_SCRATCH=$tmp/scratch-c,CODL_GPUS_PER_NODE=1" \
  "$src/deploy/slurm/codl-experiment.sbatch" 2>&1) || fail "sbatch: $submitted"
cjob=${submitted%%;*}
running=0
for _ in $(seq 1 120); do
  ctl status latest 2>/dev/null | grep -q "slurm-signal.*running" && { running=1; break; }
  sleep 0.5
done
((running)) || fail "the long experiment of job $cjob did not start"
steps=$(timeout 10 scontrol show step "$cjob" 2>/dev/null)
# The agents' step (job name codl-agents) asks for one GPU per node (TresPerNode=gres:gpu:1).
grep -A12 "Name=codl-agents" <<<"$steps" | grep -q "TresPerNode=gres:gpu:1" ||
  fail "the agents' step of job $cjob did not request GPUs: $steps"
timeout 10 scancel --batch --signal=TERM "$cjob" || fail "scancel --batch --signal=TERM $cjob failed"
ended=0
for _ in $(seq 1 120); do
  [[ -z $(timeout 10 squeue -h -j "$cjob" -o %i 2>/dev/null) ]] && { ended=1; break; }
  sleep 0.5
done
cat "$tmp"/sbatch-*.out 2>/dev/null
((ended)) || fail "job $cjob still running 60 s after SIGTERM to its batch shell"
ctl status latest 2>/dev/null | grep -q "slurm-signal.*cancelled" ||
  fail "the experiment was not recorded as cancelled: $(ctl status latest 2>&1)"
grep -q "cancelling experiment" "$tmp"/sbatch-*.out || fail "the script did not cancel the experiment"
gone=0
for _ in $(seq 1 60); do
  [[ $(ctl agents --json 2>/dev/null | grep "\"slurm_job\":\"$cjob\"" | grep -c '"alive":true') -eq 0 ]] &&
    { gone=1; break; }
  sleep 0.5
done
((gone)) || fail "agents of job $cjob still alive 30 s after the job ended"
[[ -z $(compgen -G "$tmp/scratch-c/codl-*" || true) ]] || fail "per-node scratch dirs of job $cjob not removed"
echo "C: SIGTERM to the batch shell cancelled the experiment and stopped the agents; the agents' step asked for gres:gpu:1"
echo "Slurm deployment verified"
