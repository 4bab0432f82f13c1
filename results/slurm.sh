#!/usr/bin/env bash
# A sharded weft campaign on a real Slurm: installs Debian's Slurm and MUNGE,
# starts munged, slurmctld and slurmd for a single-node cluster on
# localhost from files in a temporary folder, runs a small PCT campaign
# unsharded, submits the same campaign as a job array of shards
# (weft replay --shard I/N), waits for it, merges the shards with
# weft merge, and checks that the merged summary.json is byte for byte the
# unsharded one. Stops every daemon it started (trap on EXIT). Writes
# results/slurm.md: each command and its output.
# Needs root (apt-get, and SlurmUser=root). Nothing is added to
# scripts/bootstrap: Slurm is for this experiment only.
# Usage: results/slurm.sh [SHARDS] [RUNS]     (default 4 shards of 40 runs)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
shards="${1:-4}" runs="${2:-40}"
source "$here/results/transcript-lib.sh"

die() { echo "slurm.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (apt-get; the cluster runs with SlurmUser=root)"
"$here/scripts/build" >/dev/null
export PATH="$build/cli:$PATH" # bare `weft` in the commands, as when installed
fixture="$build/fixtures/lost_update"

tmp="$(mktemp -d /tmp/weft-slurm.XXXXXX)"
chmod 711 "$tmp" # munged wants its socket's folders searchable by all
pids=() # daemons this script started: stopped by these ids, nothing else
cleanup() {
  local status=$?
  # the cluster is this script's own: whatever is in its queue was submitted here
  if [ "${#pids[@]}" -ge 3 ] && squeue -h 2>/dev/null | grep -q .; then
    squeue -h -o %A | sort -u | xargs -r scancel 2>/dev/null || true
    timeout 30 bash -c "while squeue -h 2>/dev/null | grep -q .; do sleep 1; done" || true
  fi
  local p
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || continue
    timeout 15 bash -c "while kill -0 $p 2>/dev/null; do sleep 0.2; done" || kill -9 "$p" 2>/dev/null || true
  done
  if [ "$status" != 0 ]; then
    echo "slurm.sh: failed; daemon logs:" >&2
    tail -n 20 "$tmp"/*.log >&2 2>/dev/null || true
  fi
  [ -n "${WEFT_SLURM_KEEP:-}" ] && echo "slurm.sh: kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT

# pid_of FILE: the pid a daemon wrote, once it has (it forks first).
pid_of() {
  timeout 20 bash -c "until [ -s '$1' ]; do sleep 0.2; done" || die "no pid file $1"
  cat "$1"
}

# Free TCP ports for slurmctld and slurmd: the defaults may be taken.
free_port() {
  local p="$1"
  # a port something accepts connections on is taken (bash's /dev/tcp: no iproute2 needed)
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

md="$tmp/slurm.md"
t_begin "$md" "A weft campaign as a Slurm job array ($(date -u +%Y-%m-%d))"
t_note "Made by \`results/slurm.sh $shards $runs\` on Debian $(cat /etc/debian_version), $(nproc) cores," \
  "from commit \`$(git -C "$here" describe --always --dirty)\`: a single-node Slurm on localhost" \
  "started from files in a temporary folder (shown below as \`\$T\`), a PCT campaign of $runs runs" \
  "of the \`lost_update\` fixture run once unsharded and once as a job array of $shards shards," \
  "the shards merged with \`weft merge\`. Each block is a command as the script ran it and its" \
  "output; \`weft\` is the checkout's \`build/cli/weft\` and \`\$FIXTURES\` its \`build/fixtures\`."
T="$tmp" FIXTURES="$build/fixtures"
export SLURM_CONF="$T/slurm.conf"

t_note "## Slurm and MUNGE from Debian"
# No services start on install where policy-rc.d says so (containers); where
# none exists, a temporary one keeps the packages from starting the system's
# munged and slurm daemons, which this script would not own.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
fi
t_run "DEBIAN_FRONTEND=noninteractive timeout 1200 apt-get install -y -qq slurmctld slurmd slurm-client munge >\$T/apt.log 2>&1 && dpkg-query -W slurmctld slurmd slurm-client munge" ||
  { [ "$made_policy" = 0 ] || rm -f "$policy"; die "apt-get install failed (see $T/apt.log)"; }
[ "$made_policy" = 0 ] || rm -f "$policy"

t_note "## A single-node cluster on localhost"
t_note "A MUNGE key and munged with its socket, pid, log and seed in \`\$T/munge\`:"
t_run "mkdir -m 711 \$T/munge && dd if=/dev/urandom of=\$T/munge/munge.key bs=1024 count=1 status=none && chmod 600 \$T/munge/munge.key"
t_run "munged --key-file=\$T/munge/munge.key --socket=\$T/munge/socket --pid-file=\$T/munge/munged.pid --log-file=\$T/munged.log --seed-file=\$T/munge/seed"
pids+=("$(pid_of "$T/munge/munged.pid")")
t_run "munge -S \$T/munge/socket -n | unmunge -S \$T/munge/socket | grep STATUS"

mem="$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')"
[ -n "$mem" ] || die "slurmd -C printed no RealMemory"
ctld_port="$(free_port 6817)"
slurmd_port="$(free_port $((ctld_port + 1)))"
cat >"$T/slurm.conf" <<EOF
# single-node Slurm for results/slurm.sh: everything in $T
ClusterName=weft
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
# no cgroups: processes tracked by their parent, tasks not confined
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p "$T/state" "$T/spool"
t_note "RealMemory is what \`slurmd -C\` measures here ($mem MB); the ports are the first free" \
  "ones from Slurm's defaults."
t_run "cat \$T/slurm.conf"
t_run "slurmctld"
pids+=("$(pid_of "$T/slurmctld.pid")")
t_run "slurmd -N localhost"
pids+=("$(pid_of "$T/slurmd.pid")")
t_run "timeout 120 bash -c 'until sinfo -h -o %T | grep -qx idle; do sleep 1; done' && sinfo"

t_note "## The campaign, unsharded"
guest_vars='^(PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|TZ|TERM|SHELL|TMPDIR|LC_[A-Z_]*|QEMU_[A-Z_]*)='
t_run "cd \$T"
t_note "The guest sees only part of weft's environment (docs/scale-out.md): these variables" \
  "of it, here in the script's shell:"
t_run "env | grep -oE '$guest_vars' | tr -d = | sort | tr '\\n' ' '; echo"
t_note "Slurm gives a job \`TMPDIR=/tmp\` when the environment it was submitted from has no" \
  "TMPDIR, and one more variable on the guest's stack changes what its C library's start-up" \
  "executes, hence every virtual time. Measured here, seed 1 without and with TMPDIR:"
t_run "for env in 'env -u TMPDIR' 'env TMPDIR=/tmp'; do \$env timeout -s KILL 120 weft replay --sched pct --depth 2 --runs 1 --seed 1 -q -o tmpdir-probe -- \$FIXTURES/lost_update >/dev/null || true; echo \"\$env: \$(jq -c '{seed, verdict, makespan_ns, steps}' tmpdir-probe/runs.jsonl)\"; rm -rf tmpdir-probe; done"
t_note "So the script sets TMPDIR itself, for the unsharded campaign and (through sbatch's" \
  "default --export=ALL) for the shards alike:"
t_run "export TMPDIR=/tmp"
t_note "PCT at depth 2, seeds 1..$runs. A campaign in which some run fails exits 10: here that" \
  "is the finding, not an error."
t_run "timeout -s KILL 1800 weft replay --sched pct --depth 2 --runs $runs --seed 1 --jobs 1 --quiet -o whole -- \$FIXTURES/lost_update || [ \$? = 10 ]"

t_note "## The same campaign as a Slurm job array"
cat >"$T/campaign.sbatch" <<EOF
#!/bin/bash
# campaign.sbatch: shard \$SLURM_ARRAY_TASK_ID of $shards; submit with sbatch --array=1-$shards
#SBATCH --job-name=weft-pct
#SBATCH --cpus-per-task=1
#SBATCH --time=00:30:00
#SBATCH --output=logs/shard-%a.%A.out
set -euo pipefail
N=$shards # fixed: a task submitted again alone (--array=2) has SLURM_ARRAY_TASK_COUNT=1
I=\$SLURM_ARRAY_TASK_ID # 1..N (--array=1-N: shards count from 1)
echo "shard \$I/\$N on \$(hostname), \$(env | grep -c '^SLURM_') SLURM_* variables (the guest sees none)"
echo "variables the guest sees: \$(env | grep -oE "$guest_vars" | tr -d = | sort | tr '\n' ' ')"
# exit 10: some run of the shard failed, which is a result. "\$@": e.g. --resume
timeout -s KILL 1800 weft replay --sched pct --depth 2 --runs $runs --seed 1 --jobs "\$SLURM_CPUS_PER_TASK" \\
  --quiet --shard "\$I/\$N" -o "shard-\$I" "\$@" -- "$FIXTURES/lost_update" || [ \$? = 10 ]
EOF
shard_dirs="$(for i in $(seq 1 "$shards"); do printf 'shard-%d ' "$i"; done)"
t_run "cat campaign.sbatch"
t_note "The array, and the merge as a job that starts once every task has succeeded:"
t_run "mkdir logs && jobid=\$(sbatch --parsable --array=1-$shards campaign.sbatch) && echo \$jobid"
t_run "mergeid=\$(sbatch --parsable --dependency=afterok:\$jobid --job-name=weft-merge --output=logs/merge.out --wrap 'weft merge -o merged ${shard_dirs% }') && echo \$mergeid"
t_run "squeue"
t_note "Waiting for the queue to empty (at most 30 minutes), then the jobs' final states, which" \
  "slurmctld keeps for MinJobAge (300 s) after they end. (\`sacct\` needs an accounting" \
  "database, which this cluster does not have; 22.05's \`sacct --completion\` over a" \
  "jobcomp/filetxt log does not read array tasks.)"
t_run "timeout 1800 bash -c 'while squeue -h | grep -q .; do sleep 2; done' && squeue"
states="scontrol -o show job \$jobid; scontrol -o show job \$mergeid"
t_run "{ $states; } | awk '{ for (i = 1; i <= NF; i++) if (\$i ~ /^(JobId|JobName|ArrayTaskId|JobState|RunTime|ExitCode)=/) printf \"%s \", \$i; print \"\" }'"
t_run "test \"\$({ $states; } | grep -c ' JobState=COMPLETED .* ExitCode=0:0 ')\" = $((shards + 1)) && echo 'all $shards tasks and the merge COMPLETED with exit code 0'"
t_run "head -n 3 logs/shard-*.out"
t_run "cat logs/merge.out"

t_note "## Merged against unsharded"
t_run "cmp merged/summary.json whole/summary.json && echo 'merged/summary.json and whole/summary.json are identical'"
t_run "sha256sum whole/summary.json merged/summary.json shard-*/summary.json"
t_run "jq -c '{runs, hits, verdicts, first_hit_seed}' merged/summary.json"

t_note "## A task run again"
t_note "A task that failed or hit its time limit is submitted again alone, with \`--resume\`" \
  "(handed to weft replay through the batch script's arguments): it runs only the seeds its" \
  "folder lacks, here none."
t_run "rid=\$(sbatch --parsable --array=2 campaign.sbatch --resume) && timeout 600 bash -c 'while squeue -h | grep -q .; do sleep 2; done' && grep -h 'to run' logs/shard-2.\$rid.out"

t_note "## Stopped"
t_note "\`scontrol shutdown\` stops slurmctld and slurmd; munged is stopped by its pid. (The" \
  "script's EXIT trap does the same by the recorded pids if anything fails on the way.)"
t_run "scontrol shutdown && timeout 300 bash -c 'while [ -e /proc/${pids[1]} ] || [ -e /proc/${pids[2]} ]; do sleep 0.5; done' && echo 'slurmctld and slurmd stopped'"
t_run "kill ${pids[0]} && timeout 30 bash -c 'while [ -e /proc/${pids[0]} ]; do sleep 0.2; done' && echo 'munged stopped'"

sed -i "s|$T|\$T|g; s|$FIXTURES|\$FIXTURES|g" "$md"
cp "$md" "$here/results/slurm.md.tmp" && mv "$here/results/slurm.md.tmp" "$here/results/slurm.md"
echo "slurm.sh: wrote results/slurm.md" >&2
