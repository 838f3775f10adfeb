"""Speed of the two halves of a training update: collection and the PPO update.

    python benchmarks/training_speed.py [--config configs/default.yaml] [--set KEY=VALUE ...] [--device cpu]
                                        [--decisions 39000] [--repeats 3] [--rows 16 256] [--games 256]
                                        [--checkpoint PATH] [--seed 0]

``--set`` overrides config keys as ``kahuna-train --set`` does (``--set ppo.bf16=false``: the
float32 update of a CPU without bfloat16); ``--device`` runs the network on ``cpu`` or ``cuda``
(default: the config's ``device``, ``auto``).

Update: ``training.ppo.trainer.ppo_update`` with the config's network and PPO settings
(``update_epochs``, ``minibatch_size``, ``bf16``; ``threads`` shards per minibatch, one thread
each, as the trainer runs it: :mod:`training.ppo.parallel`), wall and process CPU seconds, on
a synthetic rollout of ``--decisions`` decisions (random observations, about
a fifth of the actions legal): the same shapes and the same work as one
update of that config, whose rollouts hold about 38,000 learner decisions
with ``configs/default.yaml``.  One warm-up update, then ``--repeats`` timed ones.

Forward: ``kahuna_policy.model.sample_actions`` on one thread (as each collection
process runs it) for each ``--rows`` batch size: 16 is about a snapshot's
games in one tick of the default config, 256 about the learner's.

Collection: ``training.selfplay.batched_rollout.play_games_batched`` on one thread
(one collection process's share) of ``--games`` games split among the
opponent kinds by the config's ``pool`` shares, the ``past`` games against
``pool.snapshots_per_update`` snapshots: fresh networks of the config's shape
(each seeded differently, as are the learner's weights), or with
``--checkpoint RUN/checkpoints/latest.pt`` a training checkpoint's network and
pool.  Each repeat plays the same games with the snapshots' stacked forward
pass (as training does) and with one pass per snapshot, interleaved.

Every rate is printed per repeat, then the best (the least disturbed by other
load on the machine) and the median.

Achieved over attainable: the FLOPs of one decision's forward pass and of one
update (forward and backward of every minibatch, every epoch) are counted with
``torch.utils.flop_counter.FlopCounterMode`` on the config's network; the
attainable rate is this machine's best ``torch.mm`` throughput at the
network's layer shapes (float32, and bfloat16 when the update uses it) with the
same thread count.  The table gives achieved GFLOP/s over attainable for the
update and for the forward passes of collection; the rest of each is the work
that is not matrix products (the engine, masks, sampling, the optimizer).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.observation import OBSERVATION_SIZE
from kahuna_policy.model import ActorCritic, model_from_payload, sample_actions
from training.cli import add_override_argument
from training.league.pool import OpponentPool
from training.ppo.checkpoint import load_checkpoint
from training.ppo.config import TrainConfig, load_config
from training.ppo.cpus import update_threads, use_bf16
from training.ppo.device import DEVICES, resolve_device
from training.ppo.parallel import UpdateShards
from training.ppo.trainer import build_model, make_optimizer, ppo_update
from training.selfplay import batched_rollout
from training.selfplay.batched_rollout import play_games_batched
from training.selfplay.rollout import GameBatch, Rollout


def synthetic_rollout(decisions: int, seed: int) -> Rollout:
    """A rollout of ``decisions`` random decisions with the real arrays' shapes and dtypes."""
    rng = np.random.default_rng(seed)
    masks = rng.random((decisions, NUM_ACTIONS)) < 0.2
    masks[:, 0] = True
    legal_counts = masks.sum(axis=1)
    # A uniformly drawn legal action per row: the k-th legal one, k < that row's count.
    picks = (rng.random(decisions) * legal_counts).astype(np.int64)
    actions = np.argmax(np.cumsum(masks, axis=1) > picks[:, None], axis=1).astype(np.int64)
    return Rollout(
        observations=rng.random((decisions, OBSERVATION_SIZE), dtype=np.float32),
        masks=masks,
        actions=actions,
        log_probs=-np.log(legal_counts).astype(np.float32),
        values=rng.standard_normal(decisions).astype(np.float32),
        rewards=np.zeros(decisions, dtype=np.float32),
        dones=np.zeros(decisions, dtype=bool),
        trajectory=np.zeros(decisions, dtype=np.int64),
        potentials=np.zeros(decisions, dtype=np.float32),
        advantages=rng.standard_normal(decisions).astype(np.float32),
        returns=rng.standard_normal(decisions).astype(np.float32),
        stats={},
    )


def report(label: str, values: list[float], unit: str) -> None:
    print(f"{label}: best {min(values):.4f} {unit}, median {statistics.median(values):.4f} {unit}")


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the times."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/default.yaml", help="run configuration (network, ppo, threads)")
    add_override_argument(parser, "--set ppo.bf16=false --set threads=1")
    parser.add_argument(
        "--device", choices=DEVICES, help="where the network runs (default: the config's device, auto: CUDA if any)"
    )
    parser.add_argument("--decisions", type=int, default=39000, help="decisions in the synthetic rollout")
    parser.add_argument("--repeats", type=int, default=3, help="timed updates (and forward measurements)")
    parser.add_argument("--rows", type=int, nargs="*", default=[16, 256], help="forward-pass batch sizes")
    parser.add_argument("--games", type=int, default=256, help="games of the collection measurement (0: skip it)")
    parser.add_argument(
        "--checkpoint", help="collection with this training checkpoint's network and pool (default: fresh networks)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.decisions < 1 or args.repeats < 1 or any(rows < 1 for rows in args.rows):
        parser.error("--decisions, --repeats and every --rows must be at least 1")
    try:
        config = load_config(args.config, args.overrides)
        device = resolve_device(args.device or config.device)
    except ValueError as error:
        parser.error(str(error))
    threads = update_threads(config.threads)
    rollout = synthetic_rollout(args.decisions, args.seed)
    model = build_model(config).to(device)
    optimizer = make_optimizer(model, config.ppo)
    generator = torch.Generator().manual_seed(args.seed)
    ppo = config.ppo
    shards = UpdateShards(threads if device.type == "cpu" else 1)
    print(
        f"{args.config}{''.join(f' --set {item}' for item in args.overrides)}: {config.model.architecture} network "
        f"{list(config.model.hidden_sizes)}, {args.decisions:,} decisions, {ppo.update_epochs} epochs of minibatches "
        f"of {ppo.minibatch_size}, bf16 {ppo.bf16} -> {use_bf16(ppo.bf16, device)}, {threads} thread(s) "
        f"({shards.count} shard(s) per minibatch), device {device}"
    )
    torch.set_num_threads(threads)
    ppo_update(model, optimizer, rollout, ppo, generator, shards=shards)  # warm-up
    seconds = []
    for repeat in range(args.repeats):
        synchronize(device)
        start, cpu = time.perf_counter(), time.process_time()
        ppo_update(model, optimizer, rollout, ppo, generator, shards=shards)
        synchronize(device)
        seconds.append(time.perf_counter() - start)
        print(
            f"  update {repeat + 1}: {seconds[-1]:.3f} s  ({args.decisions / seconds[-1]:,.0f} decisions/s), "
            f"{time.process_time() - cpu:.3f} CPU s"
        )
    report("ppo_update", seconds, "s")
    shards.close()
    update_flops = update_flops_per_decision(model, rollout, ppo.minibatch_size, ppo.update_epochs)
    attainable_update = attainable_gflops(config, threads, ppo.minibatch_size, use_bf16(ppo.bf16, device), device)
    achieved_update = update_flops * args.decisions / min(seconds) / 1e9

    torch.set_num_threads(1)
    forward_rows: dict[int, float] = {}
    for rows in args.rows:
        observations = np.ascontiguousarray(rollout.observations[:rows])
        masks = np.ascontiguousarray(rollout.masks[:rows])
        calls = max(20, 20000 // rows)
        sample_actions(model, observations, masks, generator)  # warm-up
        per_call = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            for _ in range(calls):
                sample_actions(model, observations, masks, generator)
            per_call.append((time.perf_counter() - start) / calls * 1e3)
        print(f"  forward of {rows} rows, 1 thread: " + ", ".join(f"{ms:.3f}" for ms in per_call) + " ms per call")
        report(f"forward {rows} rows", per_call, "ms")
        forward_rows[rows] = min(per_call)

    forward_flops = forward_flops_per_decision(model, rollout)
    print(
        "\nachieved over attainable (FLOPs counted by FlopCounterMode; attainable: best torch.mm at the layer shapes)\n"
        f"  one decision's forward pass: {forward_flops / 1e6:.3f} MFLOP; one update: "
        f"{update_flops / 1e6:.3f} MFLOP per decision ({ppo.update_epochs} epochs, forward and backward)\n"
        f"  update, {threads} thread(s): {achieved_update:.1f} GFLOP/s of {attainable_update:.1f} attainable "
        f"= {achieved_update / attainable_update:.0%}"
    )
    attainable_one = attainable_gflops(config, 1, max(forward_rows, default=1), False, device)
    for rows, milliseconds in forward_rows.items():
        achieved = forward_flops * rows / (milliseconds / 1e3) / 1e9
        print(
            f"  forward of {rows} rows (collection), 1 thread: {achieved:.1f} GFLOP/s of {attainable_one:.1f} "
            f"attainable = {achieved / attainable_one:.0%}"
        )

    if args.games:
        collection(config, model, args.games, args.repeats, args.seed, args.checkpoint)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a GPU's products run after the call returns)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward_flops_per_decision(model: ActorCritic, rollout: Rollout, rows: int = 256) -> float:
    """FLOPs of the network's forward pass per decision (counted on ``rows`` decisions)."""
    device = next(model.parameters()).device
    observations = torch.from_numpy(rollout.observations[:rows]).to(device)
    masks = torch.from_numpy(rollout.masks[:rows]).to(device)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(observations, masks)
    return counter.get_total_flops() / len(observations)


def update_flops_per_decision(model: ActorCritic, rollout: Rollout, minibatch: int, epochs: int) -> float:
    """FLOPs of an update per decision: forward and backward of a minibatch, per row, times the epochs."""
    rows = min(minibatch, len(rollout.observations))
    device = next(model.parameters()).device
    observations = torch.from_numpy(rollout.observations[:rows]).to(device)
    masks = torch.from_numpy(rollout.masks[:rows]).to(device)
    with FlopCounterMode(display=False) as counter:
        logits, values = model(observations, masks)
        (logits.float().logsumexp(-1).sum() + values.float().sum()).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / rows * epochs


def attainable_gflops(
    config: TrainConfig, threads: int, rows: int, bf16: bool, device: torch.device | None = None, seconds: float = 0.3
) -> float:
    """This machine's best ``torch.mm`` GFLOP/s at the network's layer shapes (``rows`` x width x width)."""
    device = device or torch.device("cpu")
    widths = sorted({*config.model.hidden_sizes, config.model.line_width, OBSERVATION_SIZE, NUM_ACTIONS})
    dtypes = [torch.float32, torch.bfloat16] if bf16 else [torch.float32]
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    best = 0.0
    try:
        for dtype in dtypes:
            for inner in widths:
                for outer in widths:
                    left = torch.rand(rows, inner, dtype=dtype, device=device)
                    right = torch.rand(inner, outer, dtype=dtype, device=device)
                    torch.mm(left, right)  # warm-up
                    calls, start = 0, time.perf_counter()
                    while (elapsed := time.perf_counter() - start) < seconds:
                        torch.mm(left, right)
                        calls += 1
                        if calls % 64 == 0:
                            synchronize(device)
                    synchronize(device)
                    elapsed = time.perf_counter() - start
                    best = max(best, 2 * rows * inner * outer * calls / elapsed / 1e9)
    finally:
        torch.set_num_threads(previous)
    return best


def collection(
    config: TrainConfig, model: ActorCritic, games: int, repeats: int, seed: int, checkpoint: str | None
) -> None:
    """Time one process's collection of ``games`` games with the config's opponent mix (one thread).

    Each repeat plays the same games twice: with the snapshots' stacked pass (as training does)
    and with one forward pass per snapshot (as before the stacked pass), interleaved.
    """
    pool = OpponentPool(config.model, config.pool.max_snapshots)
    if checkpoint is None:
        for index in range(config.pool.snapshots_per_update or 1):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed + 1 + index)
                pool.add(ActorCritic(config.model), index)
    else:
        payload = load_checkpoint(checkpoint)
        model = model_from_payload(payload, checkpoint)
        pool.load_state(payload["pool"])
    shares = {kind: getattr(config.pool, kind) for kind in ("latest", "past", "greedy", "random")}
    game_config = config.env.rules()
    stacked = batched_rollout.StackedNetworks
    seconds: dict[str, list[float]] = {"stacked": [], "one pass per snapshot": []}
    for repeat in range(repeats + 1):  # the first is a warm-up
        rng = np.random.default_rng(seed + repeat)
        assignment = pool.assign(games, shares, rng, config.pool.snapshots_per_update)
        batch = GameBatch(
            games=np.arange(games),
            seeds=rng.integers(2**63, size=games),
            kinds=assignment.kinds,
            learner_seats=assignment.learner_seats,
            snapshots=assignment.snapshots,
            rng_seed=int(rng.integers(2**63)),
            torch_seed=int(rng.integers(2**63)),
        )
        for label, times in seconds.items():
            # No stack makes play_games_batched fall back to one pass per snapshot.
            batched_rollout.StackedNetworks = stacked if label == "stacked" else lambda networks: None
            try:
                start = time.perf_counter()
                played = play_games_batched(batch, model, pool.snapshots, game_config, record_potentials=True)
                elapsed = time.perf_counter() - start
            finally:
                batched_rollout.StackedNetworks = stacked
            if repeat:
                times.append(elapsed)
                print(
                    f"  collection of {games} games ({label}), 1 thread: {elapsed:.3f} s "
                    f"({len(played.actions) / elapsed:,.0f} learner decisions/s)"
                )
    for label, times in seconds.items():
        report(f"collection of {games} games, {label}", times, "s")


if __name__ == "__main__":
    main()
