#!/usr/bin/env bash
# The ratings table of docs/RATINGS.md, regenerated: a seat-balanced round robin of the baselines, the default
# run's agent and the shipped champion (raw, and guiding a 50-simulation search), 100 games per pairing.
# Every game also goes to the results store results.sqlite (kahuna-eval --db), so the table can grow
# without a replay: --add plays a new agent's own games only.
#
#   benchmarks/ratings.sh DEFAULT_AGENT [kahuna-eval options ...]
#   benchmarks/ratings.sh runs/default-v5/final_agent.pt                  # writes ratings.json and results.sqlite
#   benchmarks/ratings.sh runs/default-v5/final_agent.pt --json out.json  # later options win (also --db)
#   benchmarks/ratings.sh --print DEFAULT_AGENT ...                       # print the command, run nothing
#   benchmarks/ratings.sh --add NEW_AGENT [kahuna-ratings options ...]    # add an agent to the stored table:
#       kahuna-ratings --db results.sqlite --entrant NEW_AGENT --schedule 8 --play --games 50 (400 games)
#
# DEFAULT_AGENT is the agent of a run of configs/default.yaml (runs/ is not in git, so it is a parameter).
# 8 entrants, 28 pairings, 2,800 games; mcts:1000 dominates the time (44-72 minutes with 2 workers
# on the 2-core machines of docs/RATINGS.md, which has the table).  Results are identical for any --workers.
# `kahuna-ratings --db results.sqlite` prints the ladder over every stored game (docs/EVALUATION.md).
set -euo pipefail

print_only=0
add=0
if [[ "${1:-}" == "--print" ]]; then
    print_only=1
    shift
elif [[ "${1:-}" == "--add" ]]; then
    add=1
    shift
fi
if [[ $# -lt 1 || "$1" == -* ]]; then
    echo "ratings.sh: error: usage: benchmarks/ratings.sh [--print | --add] AGENT [options ...]" >&2
    exit 2
fi
agent="$1"
shift

if [[ $add == 1 ]]; then
    command=(
        kahuna-ratings --db results.sqlite --entrant "$agent" --schedule 8 --play --games 50 --workers 2
        --json ratings-ladder.json "$@"
    )
else
    command=(
        kahuna-eval random greedy mcts:50 mcts mcts:1000 "$agent" champion champion@mcts:50
        --games 100 --seed 7 --workers 2 --json ratings.json --db results.sqlite "$@"
    )
fi
if [[ $print_only == 1 ]]; then
    echo "${command[*]}"
    exit 0
fi
exec "${command[@]}"
