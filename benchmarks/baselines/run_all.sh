#!/usr/bin/env bash
# The runs of docs/BASELINES.md: every library's training for seeds 0 and 1, one after another, then every
# run's learning curve against greedy and its final snapshot's Kahuna-v1 protocol (evaluate.py --protocol),
# then the table and the curves (table.py, replacing ROOT/curves.png).
#
#   benchmarks/baselines/run_all.sh [ROOT]                 # default runs/baselines; in the project's venv
#   nohup benchmarks/baselines/run_all.sh > baselines.log 2>&1 &
#
# Resumable: run it again (another session, after a crash) and each finished run says so and is skipped,
# an unfinished one goes on from its last snapshot (native, RLlib: their trainer's last checkpoint), and
# no snapshot is evaluated twice.  A run that fails is reported at the end; the others go on.
# Time: 5 libraries x 2 seeds x 30 minutes of training, then per run 4 or 5 x 382 games against greedy
# and the protocol (2,736 games).  The table compares speeds: nothing else should run on the machine.
#
# Settings by environment (defaults in brackets), for a short trial of this script itself:
#   MINUTES [30]  SEEDS ["0 1"]  SCRIPTS [every library]  EVALUATE_OPTIONS ["--protocol"]
#   MINUTES=0.2 SEEDS=0 SCRIPTS=cleanrl_ppo EVALUATE_OPTIONS="--games 2" benchmarks/baselines/run_all.sh /tmp/trial
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="${1:-runs/baselines}"
minutes="${MINUTES:-30}"
read -r -a seeds <<< "${SEEDS:-0 1}"
read -r -a scripts <<< "${SCRIPTS:-native sb3_maskable_ppo tianshou_dqn rllib_ppo cleanrl_ppo}"
read -r -a evaluate_options <<< "${EVALUATE_OPTIONS---protocol}"
failed=()

for script in "${scripts[@]}"; do
    for seed in "${seeds[@]}"; do
        out="$root/$script-s$seed"
        echo "== $script seed $seed -> $out ($(date -u +%FT%TZ))"
        python "$here/$script.py" --out "$out" --seed "$seed" --minutes "$minutes" || failed+=("$out")
    done
done

runs=()
for folder in "$root"/*/; do
    [[ -f "$folder/progress.json" ]] && runs+=("${folder%/}")
done
if [[ ${#runs[@]} -gt 0 ]]; then
    echo "== evaluate ${#runs[@]} runs ($(date -u +%FT%TZ))"
    python "$here/evaluate.py" "${runs[@]}" "${evaluate_options[@]}" || failed+=("evaluate.py")
    python "$here/table.py" "$root" --force || failed+=("table.py")
fi

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "run_all.sh: error: failed: ${failed[*]}; run it again to go on" >&2
    exit 1
fi
