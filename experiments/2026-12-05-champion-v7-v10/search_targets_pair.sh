#!/usr/bin/env bash
# Search-improved targets against plain PPO at equal wall time, one seed: the two runs side by side
# on the machine's cores, each with one torch thread, the same budget and the same config otherwise.
#
#   bash benchmarks/search_targets_pair.sh SEED [MINUTES] [extra kahuna-train --set overrides of the search arm...]
#
# e.g. `bash benchmarks/search_targets_pair.sh 1 20 search.fraction=0.25 search.candidates=8`.
# Writes runs/st-plain-sSEED and runs/st-search-sSEED (and their .log); each run's final evaluation
# against greedy (1000 games) ends its log. docs/TRAINING.md, "Search-improved targets", has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
seed=${1:?usage: search_targets_pair.sh SEED [MINUTES] [search overrides...]}
minutes=${2:-20}
shift $(( $# >= 2 ? 2 : 1 ))
search=("$@")
if [ ${#search[@]} -eq 0 ]; then search=(search.fraction=0.25 search.candidates=8); fi
overrides=()
for setting in "${search[@]}"; do overrides+=(--set "$setting"); done
common=(--config configs/default.yaml --set "seed=$seed" --set threads=1 --set "max_minutes=$minutes"
        --set "eval.opponents=[greedy]" --set logging.progress=false)
mkdir -p runs
kahuna-train "${common[@]}" --run-dir "runs/st-plain-s$seed" > "runs/st-plain-s$seed.log" 2>&1 &
kahuna-train "${common[@]}" --run-dir "runs/st-search-s$seed" "${overrides[@]}" > "runs/st-search-s$seed.log" 2>&1 &
wait
tail -n 2 "runs/st-plain-s$seed.log" "runs/st-search-s$seed.log"
