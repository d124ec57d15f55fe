#!/usr/bin/env bash
# codl-slurm-agents.sh: inside a Slurm allocation, start one codl-agent per node (one
# `srun --overlap` step, so victim steps can still run beside it) pointing at a controller;
# wait until every agent has registered; then either run an experiment against them and stop
# them (--experiment), or keep them until this script is signalled or the allocation ends.
#
#   salloc -N4 codl-slurm-agents.sh --controller ctl.example:7700 --experiment exp.yaml
#   sbatch deploy/slurm/codl-experiment.sbatch          (a complete batch job)
#
# Each agent gets --id $SLURMD_NODENAME and the labels slurm_job=$SLURM_JOB_ID and
# slurm_node=$SLURMD_NODENAME (plus slurm_cluster when known), so an experiment selects this
# allocation's nodes with `nodes: {labels: {slurm_job: "${SLURM_JOB_ID}"}}`: ${SLURM_JOB_ID}
# in the experiment file is replaced with the job id before it is submitted.
# Docs: docs/deploy.md (Slurm).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: codl-slurm-agents.sh --controller HOST:PORT [options] [-- extra codl-agent flags]
  --controller ADDR     controller address (default: $CODL_CONTROLLER)
  --experiment FILE     submit FILE once all agents are up, follow it, then stop the agents;
                        the exit status is codlctl's
  --bin-dir DIR         where codl-agent and codlctl live on every node
                        (default: $CODL_BIN_DIR, else the directory of codl-agent on PATH)
  --config FILE         agent config file (each node reads its own copy at this path)
  --listen ADDR         agent listen address (default: $CODL_AGENT_LISTEN, else 127.0.0.1:0
                        for a loopback controller, else 0.0.0.0:7701 advertised as the node's
                        hostname)
  --scratch DIR         per-job scratch parent; each node makes a private directory
                        DIR/codl-<job>-<node>.XXXXXX (mktemp -d) and removes it at the end
                        (default: $CODL_SCRATCH, else the node's ${TMPDIR:-/tmp})
  --label KEY=VALUE     extra agent label (repeatable)
  --tls-ca/--tls-cert/--tls-key FILE
                        mTLS files for the agents and for codlctl (required off loopback)
  --wait SECONDS        how long to wait for every agent to register (default 120)
  --gpus-per-node N     GPUs of each node the agents may use (their step gets --gres=gpu:N;
                        the allocation must hold them: sbatch/salloc --gres=gpu:N)
  --allow-shared        do not warn when the allocation shares its nodes with other jobs
Signals: SIGTERM or SIGINT cancels a running --experiment, then stops the agents (each stops
its antagonists and removes its scratch dir). The exit status is then 143.
USAGE
}

controller=${CODL_CONTROLLER:-}
experiment=""
bin_dir=${CODL_BIN_DIR:-}
config=""
listen=${CODL_AGENT_LISTEN:-}
scratch=${CODL_SCRATCH:-}
wait_s=120
gpus_per_node=""
allow_shared=0
labels=()
tls=()
extra=()
while (($#)); do
  case "$1" in
    --controller) controller=$2; shift 2 ;;
    --experiment) experiment=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --listen) listen=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --label) labels+=(--label "$2"); shift 2 ;;
    --tls-ca|--tls-cert|--tls-key) tls+=("$1" "$2"); shift 2 ;;
    --wait) wait_s=$2; shift 2 ;;
    --gpus-per-node) gpus_per_node=$2; shift 2 ;;
    --allow-shared) allow_shared=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "codl-slurm-agents: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

die() { echo "codl-slurm-agents: $*" >&2; exit 2; }
[[ -n "${SLURM_JOB_ID:-}" ]] || die "not inside a Slurm allocation (no SLURM_JOB_ID): use salloc or sbatch"
[[ -n "$controller" ]] || die "--controller (or \$CODL_CONTROLLER) is required"
[[ -z "$experiment" || -r "$experiment" ]] || die "--experiment $experiment: cannot read it"
if [[ -z "$bin_dir" ]]; then
  agent_path=$(command -v codl-agent) || die "codl-agent not on PATH: pass --bin-dir"
  bin_dir=$(dirname "$agent_path")
fi
[[ -x "$bin_dir/codl-agent" && -x "$bin_dir/codlctl" ]] || die "no codl-agent/codlctl in $bin_dir"
[[ -z "$gpus_per_node" || "$gpus_per_node" =~ ^[1-9][0-9]*$ ]] ||
  die "--gpus-per-node '$gpus_per_node': expected a whole number >= 1"
# A node shared with another job makes baselines meaningless: say so (sbatch --exclusive).
if ((!allow_shared)); then
  shared=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | grep -o 'OverSubscribe=[A-Z]*' | head -1)
  if [[ -n "$shared" && "$shared" != OverSubscribe=NO ]]; then
    echo "codl-slurm-agents: warning: job $SLURM_JOB_ID does not hold its nodes exclusively" \
         "($shared): other jobs' load lands in the baselines; use --exclusive" >&2
  fi
fi
nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
advertise_port=""
insecure=()
if [[ -z "$listen" ]]; then
  case "$controller" in
    127.*|localhost:*|\[::1\]:*|unix:*) listen=127.0.0.1:0 ;;
    *) listen=0.0.0.0:7701; advertise_port=7701 ;;
  esac
fi
# A single-node test setup without TLS: plaintext loopback needs the explicit --insecure
# (docs/security.md); real clusters give --tls-* and listen on 0.0.0.0.
if ((${#tls[@]} == 0)); then
  case "$listen" in 127.*|localhost:*|\[::1\]:*) insecure=(--insecure) ;; esac
fi
# Each node makes its own private directory (mktemp -d, mode 0700) under this base: a predictable
# /tmp/codl-$SLURM_JOB_ID could be created (or symlinked) in advance by another user.
scratch=${scratch:-}

agent_args=(--controller "$controller" --listen "$listen" --label "slurm_job=$SLURM_JOB_ID"
            "${labels[@]}" "${tls[@]}" "${insecure[@]}")
[[ -n "${SLURM_CLUSTER_NAME:-}" ]] && agent_args+=(--label "slurm_cluster=$SLURM_CLUSTER_NAME")
[[ -n "$config" ]] && agent_args+=(--config "$config")
agent_args+=("${extra[@]}")

# The per-node part runs on each node: node-specific flags, a scratch dir removed at the end,
# and SIGTERM passed on to the agent (which stops its antagonists first).
node_script='
  node=${SLURMD_NODENAME:-$(hostname -s)}
  base=${1:-${TMPDIR:-/tmp}}; port=$2; shift 2
  mkdir -p "$base" || exit 1
  dir=$(mktemp -d "$base/codl-$SLURM_JOB_ID-$node.XXXXXX") || exit 1
  mkdir -m 700 "$dir/scratch" "$dir/state" || exit 1
  adv=(); [[ -n $port ]] && adv=(--advertise "$(hostname -f):$port")
  "$@" --id "$node" --label "slurm_node=$node" --scratch-root "$dir/scratch" \
       --state-dir "$dir/state" "${adv[@]}" &
  pid=$!
  trap "kill -TERM $pid 2>/dev/null" TERM INT
  wait $pid; rc=$?
  [[ $rc -gt 128 ]] && { wait $pid; rc=$?; }
  rm -rf "$dir"
  exit $rc'

echo "codl-slurm-agents: job $SLURM_JOB_ID: starting $nodes agent(s) for controller $controller"
step_gres=()
[[ -n "$gpus_per_node" ]] && step_gres=(--gres="gpu:$gpus_per_node")
srun --overlap --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1 --kill-on-bad-exit=0 \
     --job-name=codl-agents "${step_gres[@]}" \
     bash -c "$node_script" codl-node "$scratch" "$advertise_port" "$bin_dir/codl-agent" \
     "${agent_args[@]}" &
srun_pid=$!

# Graceful stop: SIGTERM to the step's tasks only (scancel --signal does not cancel the step), so
# each agent stops its antagonists and the per-node part removes its scratch dir; the step then
# ends by itself. Fallbacks: srun's own termination, then SIGKILL.
stop_agents() {
  kill -0 "$srun_pid" 2>/dev/null || { wait "$srun_pid" 2>/dev/null; return 0; }
  echo "codl-slurm-agents: stopping the agents"
  local step
  step=$(squeue -h -s -j "$SLURM_JOB_ID" -o "%i %j" 2>/dev/null | awk '$2 == "codl-agents" {print $1; exit}')
  [[ -n "$step" ]] && scancel --signal=TERM "$step" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$srun_pid" 2>/dev/null || break; sleep 0.2; done
  kill -TERM "$srun_pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$srun_pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$srun_pid" 2>/dev/null || true
  wait "$srun_pid" 2>/dev/null || true
}
# A running experiment is cancelled first, so the controller records it as cancelled and stops
# its antagonists in order, rather than seeing its agents vanish mid-trial.
experiment_id=""
on_signal() {
  if [[ -n "$experiment_id" ]]; then
    echo "codl-slurm-agents: cancelling experiment $experiment_id"
    "${ctl[@]}" cancel "$experiment_id" >/dev/null 2>&1 || true
    [[ -n "${watch_pid:-}" ]] && wait "$watch_pid" 2>/dev/null
  fi
  stop_agents
  exit 143
}
trap on_signal TERM INT
trap stop_agents EXIT

ctl=("$bin_dir/codlctl" --controller "$controller" "${tls[@]}")
# Alive agents of this job, counted from `codlctl agents --json` (one JSON object per line).
alive() {
  "${ctl[@]}" agents --json 2>/dev/null |
    grep -F "\"slurm_job\":\"$SLURM_JOB_ID\"" | grep -c '"alive":true' || true
}
deadline=$((SECONDS + wait_s))
until [[ $(alive) -ge $nodes ]]; do
  kill -0 "$srun_pid" 2>/dev/null || die "the agent step ended before all agents registered"
  ((SECONDS < deadline)) || die "only $(alive) of $nodes agents registered within ${wait_s}s"
  sleep 1
done
echo "codl-slurm-agents: $nodes agent(s) registered (label slurm_job=$SLURM_JOB_ID)"

if [[ -z "$experiment" ]]; then
  wait "$srun_pid"  # until the allocation ends or this script is signalled
  exit $?
fi
exp_copy=$(mktemp "${TMPDIR:-/tmp}/codl-exp-$SLURM_JOB_ID.XXXXXX.yaml")
sed -e "s/\${SLURM_JOB_ID}/$SLURM_JOB_ID/g" "$experiment" >"$exp_copy"
experiment_id=$("${ctl[@]}" submit "$exp_copy") || die "codlctl submit $experiment failed"
rm -f "$exp_copy"
experiment_id=$(printf '%s\n' "$experiment_id" | tail -1 | awk '{print $NF}')
echo "codl-slurm-agents: experiment $experiment_id submitted"
# Watched in the background: bash runs the TERM trap only between commands.
set +e
"${ctl[@]}" watch "$experiment_id" &
watch_pid=$!
wait "$watch_pid"
rc=$?
set -e
exit $rc
