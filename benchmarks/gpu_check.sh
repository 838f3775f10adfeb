#!/bin/bash
# The main job on a CUDA GPU, checked in under 10 minutes: its steps time out at 170, 90, 240 and 80 s
# (docs/MACHINES.md, "A GPU"):
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]          # default OUT_DIR: $OUT, else runs/gpu-check
#
# 1. benchmarks/training_speed.py on the GPU (decisions/s, achieved over attainable), then on the CPU
#    of the same machine as the baseline;
# 2. a short default-config run with device=cuda (30 updates, checkpoints every 10, a 200-game
#    final evaluation), resumed on the CPU for 2 more updates: a GPU checkpoint read on the CPU.
#
# It needs a python ($PYTHON, default python3) whose torch sees the GPU, with this project importable.
# On a machine without package registries, WHEELS=DIR installs the project and the wheels in DIR
# first, without reaching any index (the project's pure-Python dependencies that the machine
# lacks, e.g. gymnasium, pettingzoo, farama-notifications, cloudpickle: `pip download --no-deps`).
# DEVICE=cpu runs the same steps without a GPU (a dry run of this script).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-runs/gpu-check}}
python=${PYTHON:-python3}
device=${DEVICE:-cuda}
mkdir -p "$out"
log="$out/gpu_check.log"
: >"$log"
say() { echo "== $* ($(date +%T))" | tee -a "$log"; }
step() { "$@" 2>&1 | tee -a "$log"; }

if [ -n "${WHEELS:-}" ]; then
    say "installing from $WHEELS"
    step "$python" -m pip install --quiet --no-index --no-deps "$WHEELS"/*.whl
    step "$python" -m pip install --quiet --no-index --no-deps --no-build-isolation -e .
fi
say "machine"
if command -v nvidia-smi >/dev/null; then step nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; fi
step "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-', 'cpu threads', torch.get_num_threads())"

say "update and collection speed on $device"
step timeout 170 "$python" benchmarks/training_speed.py --device "$device" --repeats 3
say "the same on this machine's CPU (the baseline)"
step timeout 90 "$python" benchmarks/training_speed.py --device cpu --repeats 3 --games 0

run="$out/run"
rm -rf "$run"
train=("$python" -c "import sys; from training.launch import train; sys.exit(train(sys.argv[1:]))")
say "a short default run on $device"
step timeout 240 "${train[@]}" --config configs/default.yaml --run-dir "$run" --set device="$device" \
    --set total_updates=30 --set schedule.by=updates --set checkpoint.every=10 --set eval.every=1000 \
    --set eval.final_games=200 --set logging.progress=false
say "resumed on the CPU for 2 more updates"
step timeout 80 "${train[@]}" --resume "$run" --set device=cpu --set total_updates=32
say "done"
