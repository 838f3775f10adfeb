"""Self-play PPO for Kahuna, top to bottom: :func:`train` runs a whole training run, :func:`ppo_update` one update.

:func:`train` is one loop in named phases, called in order (CleanRL style):
setup (run directory checks, lock, network, optimizer, league, schedule),
resume (the checkpoint's state), then per update collect, update, league and
schedule, evaluate, log and checkpoint, and at the end export.  One update:

1. split ``rollout.num_games`` games among the opponent kinds of the pool
   (self-play, past snapshots, baselines) and play them all to the end
   (:class:`~training.selfplay.collector.SelfPlayCollector`): every learner decision is
   a transition of its seat's trajectory, with per-seat GAE;
2. run ``ppo.update_epochs`` epochs of clipped-PPO minibatch steps on the
   learner's decisions (:func:`ppo_update`);
3. every ``pool.snapshot_every`` updates, add a snapshot to the pool;
   periodically evaluate against the baselines; log; checkpoint.

The run's length is its :class:`~training.ppo.schedule.Schedule`'s: ``total_updates``,
or with ``schedule.by: time`` the number of updates its first updates' speed fits
in ``max_minutes`` (the learning rate, snapshot and evaluation cadences follow it).

Determinism: all randomness of update ``u`` comes from generators seeded by
``(seed, u)``; the model is initialised from ``seed`` without touching the
global torch generator; torch runs with a fixed number of threads.  So a
run resumed from a checkpoint repeats exactly what the uninterrupted run
does (on the same machine; a time-shaped schedule also depends on wall time:
see :mod:`training.ppo.schedule`).

Safety (docs/TRAINING.md, "Run directories and failures"): nothing is written
before the config, the run directory and the checkpoint are validated; the run
directory is locked for the whole run (:class:`~training.ppo.rundir.RunLock`); an
update whose losses or weights are not finite stops the run with
:class:`TrainingDiverged` before anything of it is saved, so the last
checkpoint stays the last good one.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from kahuna_arena.start_positions import load_start_positions
from kahuna_arena.store import Entrant, ResultsStore, StoredGame, baseline_entrant
from kahuna_env import kernels
from kahuna_env.cli import first_line
from kahuna_policy.model import ActorCritic, check_state_dict
from kahuna_policy.reward import reward_record
from training.league.pool import (
    KIND_GREEDY,
    KIND_LATEST,
    KIND_RANDOM,
    GameAssignment,
    OpponentPool,
    entry_model_config,
    league_scalars,
)
from training.ppo.checkpoint import (
    build_checkpoint,
    checkpoint_dir,
    export_agent,
    find_resume_checkpoint,
    has_checkpoint,
    save_checkpoint,
)
from training.ppo.config import (
    ConfigError,
    PPOConfig,
    TrainConfig,
    apply_overrides,
    config_from_dict,
    config_to_yaml,
    load_config,
    plain_value,
)
from training.ppo.cpus import (
    ContentionGuard,
    CpuWatch,
    PhaseCpu,
    available_cores,
    bf16_message,
    oversubscription_warning,
    update_threads,
    use_bf16,
)
from training.ppo.device import prepare_device, resolve_device, to_device
from training.ppo.metrics import (
    METRICS_FILE,
    PLOT_FILE,
    MetricsLogger,
    elo_scalars,
    metric_name,
    plot_learning_curves,
    resume_metrics,
)
from training.ppo.parallel import UpdateShards
from training.ppo.provenance import start_record, weights_key, write_start_record
from training.ppo.rundir import RunLock, check_new_run_dir, check_writable
from training.ppo.schedule import Plan, Schedule
from training.selfplay.batched_rollout import play_games_batched
from training.selfplay.collector import SelfPlayCollector, build_entrant
from training.selfplay.quick_eval import FinishedGame, QuickEvalResult, evaluate_policy
from training.selfplay.rollout import GameBatch, Rollout

FINAL_AGENT = "final_agent.pt"
FINAL_EVAL = "final_eval.json"
CONFIG_FILE = "config.yaml"


class TrainingDiverged(RuntimeError):
    """An update produced a NaN or infinite loss or weight; the run stopped without saving it."""


@dataclasses.dataclass
class TrainSummary:
    """What a finished (or stopped) run produced.

    Attributes:
        run_dir: the run directory.
        updates: updates completed.
        global_step: learner decisions collected in the whole run.
        actions: game actions played in the whole run (both seats).
        wall_seconds: wall time of this process's part of the run.
        decisions_per_second: learner decisions per second of collection + update in this process.
        final_eval: final evaluation results by opponent name.
    """

    run_dir: Path
    updates: int
    global_step: int
    actions: int
    wall_seconds: float
    decisions_per_second: float
    final_eval: dict[str, QuickEvalResult]


def clipped_ppo_terms(
    ratio: torch.Tensor,
    advantages: torch.Tensor,
    new_values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    clip: float,
    clip_vloss: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-decision clipped policy and value losses (CleanRL's PPO); the loss uses their means.

    ``advantages`` are used as given (normalise them first); the value loss is
    ``0.5 * (V - R)^2``, with ``clip_vloss`` the larger of that and the loss of
    ``V`` clipped to within ``clip`` of the sampled ``old_values``.
    The RLlib Learner (``training.rllib.learner``) calls this too.
    """
    policy = torch.max(-advantages * ratio, -advantages * torch.clamp(ratio, 1 - clip, 1 + clip))
    if not clip_vloss:
        return policy, 0.5 * (new_values - returns) ** 2
    clipped_values = old_values + torch.clamp(new_values - old_values, -clip, clip)
    return policy, 0.5 * torch.max((new_values - returns) ** 2, (clipped_values - returns) ** 2)


def normalized_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """A minibatch's advantages normalised to mean 0 and standard deviation 1 (``ppo.norm_adv``)."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


def ppo_losses(
    logits: torch.Tensor,
    new_values: torch.Tensor,
    actions: torch.Tensor,
    old_log_probs: torch.Tensor,
    old_values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    ppo: PPOConfig,
    rows: int | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The clipped PPO loss of one minibatch from masked ``logits``; returns ``(loss, parts)``.

    Masked logits carry ``MASKED_LOGIT``: illegal actions have probability
    exactly 0, so they add nothing to the entropy, and no gradient reaches them.

    ``rows``: the given rows are a shard of a minibatch of ``rows`` rows whose advantages were
    normalised as a whole (:func:`normalized_advantages`, by the caller); the loss and the parts
    are then the shard's share (sums over its rows divided by ``rows``), which add up over the
    shards to the minibatch's.
    """
    log_probs_all = torch.log_softmax(logits, dim=-1)
    new_log_probs = log_probs_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    # softmax rather than log_probs_all.exp(): exp of the masked entries' huge negative log-probabilities
    # takes a slow path (about 10x slower); both give exactly 0 there.
    entropy = -(torch.softmax(logits, dim=-1) * log_probs_all).sum(dim=-1)
    log_ratio = new_log_probs - old_log_probs
    ratio = log_ratio.exp()
    if rows is None and ppo.norm_adv and len(advantages) > 1:
        advantages = normalized_advantages(advantages)

    def average(terms: torch.Tensor) -> torch.Tensor:
        return terms.mean() if rows is None else terms.sum() / rows

    policy_terms, value_terms = clipped_ppo_terms(
        ratio, advantages, new_values, old_values, returns, ppo.clip_coef, ppo.clip_vloss
    )
    policy_loss, value_loss = average(policy_terms), average(value_terms)
    entropy_mean = average(entropy)
    loss = policy_loss - ppo.ent_coef * entropy_mean + ppo.vf_coef * value_loss
    with torch.no_grad():
        parts = {
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy": entropy_mean.detach(),
            "old_approx_kl": average(-log_ratio),
            "approx_kl": average((ratio - 1) - log_ratio),
            "clipfrac": average(((ratio - 1.0).abs() > ppo.clip_coef).float()),
        }
    return loss, parts


PAD_ROWS = 256
"""A short last minibatch reaches the network padded to a multiple of this many rows (see :func:`padded_rows`)."""


def padded_rows(rows: int, minibatch_size: int) -> int:
    """How many rows the network computes for a minibatch of ``rows`` rows: ``rows`` rounded up to a
    multiple of :data:`PAD_ROWS`, at most ``minibatch_size`` (and never fewer than ``rows``).

    The last minibatch of an update is short, and its length differs from update to update. Under
    bfloat16 autocast a new length each update made the trainer process grow (about 5 MB per update)
    and its updates slower (0.9 s per update at the start, 1.2 s after 100 updates on the default
    config; ``benchmarks/update_drift.py --no-pad``), most likely from the per-shape kernels of
    oneDNN, which runs the bfloat16 products (float32 updates neither grew nor slowed). Padded, the
    network sees at most ``minibatch_size / PAD_ROWS`` shapes; the padding rows' outputs are cut off
    before the loss, so they add nothing to the gradient.
    """
    padded = -(-rows // PAD_ROWS) * PAD_ROWS
    return max(rows, min(padded, minibatch_size))


_UPDATE_ARRAYS = ("observations", "masks", "actions", "log_probs", "values", "advantages", "returns")
"""The rollout's arrays the update reads."""


def ppo_update(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    ppo: PPOConfig,
    generator: torch.Generator,
    shards: UpdateShards | None = None,
) -> dict[str, float]:
    """``ppo.update_epochs`` epochs of minibatch steps on ``rollout``; returns the averaged loss statistics.

    Each minibatch's gradient is the sum of its ``shards.count`` row shards' (one shard without
    ``shards``), computed on up to ``shards.concurrency`` threads with one torch thread each
    (:mod:`training.ppo.parallel`): the result depends on the count, never on the concurrency.
    The update runs on the model's device; the rollout is copied there once.
    """
    parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
    device = parameters[0].device
    data = {name: to_device(torch.from_numpy(getattr(rollout, name)), device) for name in _UPDATE_ARRAYS}
    count = len(rollout)
    totals: dict[str, float] = {}
    steps = 0
    epochs = 0
    shards = shards or UpdateShards(1)
    step = functools.partial(
        _shard_gradients,
        model,
        parameters,
        data,
        ppo,
        use_bf16(ppo.bf16, device),
        -(-ppo.minibatch_size // shards.count),
    )
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # each shard on one thread: the shards are the update's parallelism
    model.train()
    try:
        for _ in range(ppo.update_epochs):
            epochs += 1
            permutation = torch.randperm(count, generator=generator).to(device)
            kl_sum, kl_steps = 0.0, 0
            for start in range(0, count, ppo.minibatch_size):
                index = permutation[start : start + ppo.minibatch_size]
                advantages = data["advantages"].index_select(0, index)
                if ppo.norm_adv and len(index) > 1:
                    advantages = normalized_advantages(advantages)
                splits = (index.tensor_split(shards.count), advantages.tensor_split(shards.count))
                pieces = [(rows, part, len(index)) for rows, part in zip(*splits, strict=True) if len(rows)]
                results = shards.map(step, pieces)
                owned: set[int] = set()
                for parameter, *gradients in zip(parameters, *(result[0] for result in results), strict=True):
                    gradient = functools.reduce(torch.add, gradients)  # in shard order
                    # autograd may hand several parameters one tensor (the three biases summed into one);
                    # each needs its own, since clipping scales the gradients in place.
                    parameter.grad = gradient.clone() if id(gradient) in owned else gradient
                    owned.add(id(parameter.grad))
                nn.utils.clip_grad_norm_(parameters, ppo.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                for key in results[0][1]:
                    totals[key] = totals.get(key, 0.0) + float(sum(result[1][key] for result in results))
                steps += 1
                kl_sum += float(sum(result[1]["approx_kl"] for result in results))
                kl_steps += 1
            if ppo.target_kl is not None and kl_sum / kl_steps > ppo.target_kl:
                break
    finally:
        torch.set_num_threads(threads)
        model.eval()
    stats = {key: value / steps for key, value in totals.items()}
    variance = float(np.var(rollout.returns))
    residual = float(np.var(rollout.returns - rollout.values))
    stats["explained_variance"] = float("nan") if variance == 0 else 1 - residual / variance
    stats["epochs"] = float(epochs)
    return stats


def _shard_gradients(
    model: ActorCritic,
    parameters: list[nn.Parameter],
    data: dict[str, torch.Tensor],
    ppo: PPOConfig,
    bf16: bool,
    capacity: int,
    piece: tuple[torch.Tensor, torch.Tensor, int],
) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
    """One shard's share of a minibatch's loss gradient, and of its loss statistics.

    ``piece``: the shard's rows, their normalised advantages and the minibatch's size.  A short
    shard reaches the network padded
    to :func:`padded_rows` of ``capacity`` (a full shard's size) with copies of its first row, whose
    outputs are cut off before the loss, so they add nothing to the gradient.
    """
    index, advantages, rows = piece
    padding = padded_rows(len(index), capacity) - len(index)
    network_index = torch.cat([index, index[:1].expand(padding)]) if padding else index
    # index_select: the rows of a fancy index, about 3x faster on these arrays.
    with torch.autocast(index.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits, new_values = model(
            data["observations"].index_select(0, network_index), data["masks"].index_select(0, network_index)
        )
    logits, new_values = logits[: len(index)].float(), new_values[: len(index)].float()
    actions, old_log_probs, old_values, returns = (
        data[name].index_select(0, index) for name in ("actions", "log_probs", "values", "returns")
    )
    loss, parts = ppo_losses(logits, new_values, actions, old_log_probs, old_values, advantages, returns, ppo, rows)
    gradients = torch.autograd.grad(loss, parameters, allow_unused=True)
    return [
        torch.zeros_like(parameter) if gradient is None else gradient
        for parameter, gradient in zip(parameters, gradients, strict=True)
    ], parts


def start_settings(config: TrainConfig) -> dict[str, Any]:
    """The collector's start-position arguments (the file read and validated; nothing when off).

    A bad file is a one-line ``ValueError`` (:class:`~kahuna_arena.start_positions.StartPositionsError`).
    """
    rollout = config.rollout
    if rollout.start_positions is None:
        return {}
    rules = config.env.rules()
    return {
        "start_positions": load_start_positions(rollout.start_positions, rules),
        "start_share": rollout.start_share,
        "start_opponent": rollout.start_opponent,
    }


def entrant_settings(config: TrainConfig) -> dict[str, Any]:
    """The collector's league-entrant arguments: the spec and the agent built from it (nothing without its games).

    Built once here, before anything is written: an entrant that cannot be built (a missing file,
    an unknown name, a module that does not import) is a one-line :class:`ConfigError` naming
    ``pool.entrant_agent``.
    """
    spec = config.pool.entrant_agent
    if config.pool.entrant == 0 or spec is None:
        return {}
    try:
        agent = build_entrant(spec)
    except ValueError as error:
        raise ConfigError(first_line(error)) from None
    return {"entrant_agent": spec, "entrant": agent}


def make_optimizer(model: nn.Module, ppo: PPOConfig) -> torch.optim.Adam:
    """The update's Adam (``ppo.lr``, ``ppo.adam_eps``), on torch's fused kernel where this torch has one.

    The same Adam step in one pass over each tensor instead of a dozen small operations: a
    third of the optimizer's time on a CPU (0.30 against 0.89 ms per step for the default network).
    """
    try:
        return torch.optim.Adam(model.parameters(), lr=ppo.lr, eps=ppo.adam_eps, fused=True)
    except (RuntimeError, TypeError, ValueError):  # a torch without the fused kernel for this device
        return torch.optim.Adam(model.parameters(), lr=ppo.lr, eps=ppo.adam_eps)


def keep_optimizer_kernel(optimizer: torch.optim.Optimizer, kernel: dict[str, Any]) -> None:
    """After ``load_state_dict``: the kernel flags this process chose (``kernel``: a param group's before loading).

    A checkpoint's param groups carry the flags of the process that saved it (fused or not); its
    moments load either way.  A fused step reads each ``step`` as float32 on the parameter's device.
    """
    for group in optimizer.param_groups:
        group.update(kernel)
        if not group.get("fused"):
            continue
        for parameter in group["params"]:
            state = optimizer.state.get(parameter, {})
            if "step" in state:
                state["step"] = torch.as_tensor(state["step"], dtype=torch.float32, device=parameter.device)


def build_model(config: TrainConfig) -> ActorCritic:
    """The initial network, seeded by ``config.seed`` without touching the global torch generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return ActorCritic(config.model)


def _evaluate(
    model: ActorCritic, config: TrainConfig, games: int, write: Callable[[str, FinishedGame], None] | None = None
) -> dict[str, QuickEvalResult]:
    game_config = config.env.rules()
    return {
        name: evaluate_policy(
            model,
            name,
            games,
            seed=config.eval.seed,
            game_config=game_config,
            on_game=None if write is None else functools.partial(write, name),
        )
        for name in config.eval.opponents
    }


def _results_writer(
    config: TrainConfig, run: _RunState, update: int, last: bool
) -> Callable[[str, FinishedGame], None] | None:
    """Write an evaluation's games to ``eval.db`` (one transaction per game), or ``None`` without a store."""
    if run.results is None:
        return None
    learner = Entrant(
        key=weights_key(run.model),
        label=f"{run.name}@{update}",
        kind="training",
        run=run.name,
        run_update=update,
        decisions=int(run.counters["global_step"]),
    )
    rules = config.env.rules().to_dict()
    session = run.results.start_session(
        "training",
        rules,
        base_seed=config.eval.seed,
        command=f"{'final' if last else 'periodic'} evaluation of {run.name} at update {update}",
    )

    def write(opponent: str, game: FinishedGame) -> None:
        seats = (learner, baseline_entrant(opponent))
        if game.policy_seat == 1:
            seats = (seats[1], seats[0])
        result = game.policy_score if game.policy_seat == 0 else 1.0 - game.policy_score
        stored = StoredGame(game.index, game.deal_seed, result, game.score0, game.score1, game.moves)
        run.results.add_game(session, seats[0], seats[1], stored)

    return write


def _eval_scalars(results: dict[str, QuickEvalResult]) -> dict[str, float]:
    scalars = {}
    for name, result in results.items():
        scalars[f"eval/win_rate_vs_{metric_name(name)}"] = result.win_rate
        scalars[f"eval/margin_vs_{metric_name(name)}"] = result.mean_margin
    scalars.update(elo_scalars(results))
    return scalars


def train(
    config: TrainConfig,
    run_dir: str | Path,
    resume: bool = False,
    log: Any = print,
    pool: OpponentPool | None = None,
) -> TrainSummary:
    """Run (or with ``resume``, continue from its newest checkpoint) a training run in ``run_dir``.

    ``pool``: the league the learner plays besides itself and the baselines; by default
    ``OpponentPool.from_config(config.model, config.pool)``, the learner's own snapshots.  A best
    response (:mod:`training.tools.exploit`) passes the pool of a
    :class:`~training.league.pool.FixedTarget`, which never takes a snapshot of the learner.

    When resuming, ``config`` must be the checkpoint's config (possibly with
    overrides such as a larger ``total_updates``); see :func:`resume_config`.
    Bad input (a used or unwritable run directory, a run locked by another
    process, a damaged checkpoint) is a ``ValueError`` raised before anything
    is written; a failed write an ``OSError`` naming the file; a diverged
    update :class:`TrainingDiverged`.
    """
    run_dir = Path(run_dir)
    _check_pool(config, pool)
    device = resolve_device(config.device)  # device: cuda without a GPU is one line, before anything is written
    restart = not resume or not has_checkpoint(run_dir)  # a new run, or one stopped before its first checkpoint
    start = initial_agent(config) if config.init_from is not None and restart else None
    initial = None if start is None else start.model
    # A bad start-positions file or league entrant stops the run before anything is written.
    collection = {**start_settings(config), **entrant_settings(config)}
    lock = _claim_run_dir(run_dir, resume)
    try:
        # 1-2. Setup and resume: network, optimizer, league, schedule, counters; the results store.
        run = _start_run(config, run_dir, resume, log, initial, pool, device)
        if not resume:  # before the warm-up (a compile of about 20 s): stopped there, --resume starts it again
            _record_config(config, run_dir, start)
        _warm_up(config, run, log)  # before the session's clock: a first run's compile is not in its budget
        session = _Session(config, run, run_dir, resume, collection)
        try:
            if resume:  # after _Session's check of metrics.jsonl: a refused resume changes nothing
                _record_config(config, run_dir, start)
            for update in range(run.start_update + 1, run.schedule.horizon + 1):
                update_start = time.perf_counter()
                # 3. Collect: play the update's games to the end.
                session.watch.start()
                rollout, assignment, minibatch_generator = _collect(config, run, session, update)
                run.pool.record(assignment, rollout.stats.outcomes)
                collect_cpu = session.watch.stop()
                collect_seconds = time.perf_counter() - update_start
                # 4. Update: PPO epochs on the learner's decisions; stop if anything became non-finite.
                session.watch.start()
                losses = ppo_update(
                    run.model,
                    run.optimizer,
                    rollout,
                    config.ppo,
                    minibatch_generator,
                    shards=run.shards,
                )
                update_cpu = session.watch.stop()
                _check_finite(run, losses, update, run_dir)
                done = _Update(update, rollout, losses, collect_seconds, time.perf_counter() - update_start)
                # The CPU the run got: fewer update threads while other work takes the cores (same results).
                session.watch_cpu(collect_cpu, update_cpu, log)
                # 5-8. League, schedule, evaluation, log, checkpoint.
                if _after_update(config, run, session, run_dir, log, done):
                    break
        finally:
            session.close()
            run.shards.close()
            if run.results is not None:
                run.results.close()
        # 9. Export: the agent file, the final evaluation and the learning curves.
        _export(config, run, run_dir)
    finally:
        lock.release()
    return session.summary(run, run_dir)


def _record_config(config: TrainConfig, run_dir: Path, start: Any) -> None:
    """Write the run's ``config.yaml`` and, for a run started from ``init_from``, its start record.

    With ``config.yaml`` written, a run stopped before its first checkpoint starts again from
    update 0 on ``--resume`` (:func:`_restart_config`).
    """
    (run_dir / CONFIG_FILE).write_text(config_to_yaml(config), encoding="utf-8")
    if start is not None:  # what init_from names now, recorded before the name can change meaning
        write_start_record(run_dir, start_record(str(config.init_from), start.model, start.meta or {}))


COMPILE_SECONDS = 20
"""About how long numba takes to compile the engine's loops on a 2-core machine (announced before it starts)."""


def _warm_up(config: TrainConfig, run: _RunState, log: Any) -> None:
    """Compile the engine's loops (a first run) and run the network's first passes, before the run's clock starts.

    numba compiles the batched engine's loops on their first call and keeps them in its disk
    cache (:mod:`kahuna_env.kernels`); a run that finds them missing says so before it waits.
    Four short games, the learner against itself, ``greedy`` and ``random``, play the loops
    collection uses, here, before the collection workers start (they then load them from the
    cache), and before ``max_minutes`` and the schedule's clock start.  The games draw from
    generators of their own: the run's randomness is untouched.
    """
    cold = kernels.cache_is_warm() is False
    if cold:
        log(f"compiling the engine's kernels, first run only, ~{COMPILE_SECONDS} s")
    start = time.perf_counter()
    kinds = np.array([KIND_LATEST, KIND_GREEDY, KIND_RANDOM, KIND_LATEST])
    batch = GameBatch(
        games=np.arange(len(kinds)),
        seeds=np.arange(len(kinds)),
        kinds=kinds,
        learner_seats=np.stack([np.ones(len(kinds), dtype=bool), kinds == KIND_LATEST], axis=1),
        snapshots=np.full(len(kinds), -1),
        rng_seed=0,
        torch_seed=0,
    )
    game_config = config.env.rules()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as collection runs
    try:
        play_games_batched(batch, run.model, [], game_config, record_potentials=True)
    finally:
        torch.set_num_threads(threads)
    if cold:
        log(f"compiled in {time.perf_counter() - start:.0f} s; later runs read them from numba's cache")


@dataclasses.dataclass(frozen=True)
class _Update:
    """One update's collected games, its losses and its times (collection; collection + update)."""

    number: int
    rollout: Rollout
    losses: dict[str, float]
    collect_seconds: float
    busy_seconds: float


def _start_run(
    config: TrainConfig,
    run_dir: Path,
    resume: bool,
    log: Any,
    initial: ActorCritic | None,
    pool: OpponentPool | None,
    device: torch.device | None = None,
) -> _RunState:
    """The run's state: set up (threads, network, optimizer, league), resumed if asked, with its results store.

    Everything is checked before anything is written: a damaged checkpoint or a foreign
    ``eval.db`` is one line.
    """
    run = _setup(config, log, initial, pool, device)
    if resume:
        _resume(run, config, run_dir, log)
    run.name = run_dir.name
    run.results = ResultsStore(config.eval.db) if config.eval.db is not None else None
    return run


def _after_update(
    config: TrainConfig, run: _RunState, session: _Session, run_dir: Path, log: Any, done: _Update
) -> bool:
    """The phases after an update, in order; returns whether the run ends with it."""
    update = done.number
    session.account(done.rollout, done.busy_seconds)
    _advance_counters(run, done.rollout, update)
    # 5. League and schedule: the learner's snapshot at the schedule's cadence; a time-shaped run
    # plans (or shortens) its length; the schedule's last update, or the time budget, ends the run.
    if run.schedule.snapshot_due(update):
        run.pool.add_learner(run.model, update)
    session.follow_schedule(run, update, run_dir, log)
    last = run.schedule.is_last(update) or session.out_of_time()
    # 6. Evaluate: periodically against the baselines, and a final evaluation at the end.
    eval_start = time.perf_counter()
    results = _evaluate_phase(config, run, update, last)
    # 7. Log: metrics.jsonl, TensorBoard, the progress bar.
    timings = {
        "time/collect_seconds": done.collect_seconds,
        "time/update_seconds": done.busy_seconds - done.collect_seconds,
        "time/eval_seconds": time.perf_counter() - eval_start,
    }
    session.log(update, run, done.rollout, done.losses, results, timings, done.busy_seconds)
    # 8. Checkpoint: numbered and latest.pt, every checkpoint.every updates and at the end.
    run.counters["train_seconds"] = session.train_seconds()
    if update % config.checkpoint.every == 0 or last:
        run.last_checkpoint = _save(config, run, run_dir, update)
    return last


@dataclasses.dataclass
class _RunState:
    """What the phases of :func:`train` share: the learner, its optimizer and pool, the counters."""

    model: ActorCritic
    optimizer: torch.optim.Optimizer
    pool: OpponentPool
    counters: dict[str, Any]
    schedule: Schedule
    start_update: int = 0
    last_checkpoint: Path | None = None
    final_eval: dict[str, QuickEvalResult] = dataclasses.field(default_factory=dict)
    last_eval: dict[str, QuickEvalResult] = dataclasses.field(default_factory=dict)
    name: str = ""
    results: ResultsStore | None = None
    shards: UpdateShards = dataclasses.field(default_factory=UpdateShards)


def _claim_run_dir(run_dir: Path, resume: bool) -> RunLock:
    """Check the run directory (new: missing or empty; both: writable) and lock it; returns the held lock."""
    if not resume:
        check_new_run_dir(run_dir)
    elif not run_dir.is_dir():
        raise FileNotFoundError(f"run directory not found: {run_dir}")
    check_writable(run_dir)
    lock = RunLock(run_dir)
    lock.acquire()
    try:
        check_writable(checkpoint_dir(run_dir))
    except BaseException:
        lock.release()
        raise
    return lock


def initial_model(config: TrainConfig) -> ActorCritic:
    """The network ``config.init_from`` names (a shipped agent, an agent file or a checkpoint), checked.

    A missing file is a ``FileNotFoundError``, anything else wrong a one-line ``ValueError`` (a
    :class:`ConfigError` when the network's shape is not the config's ``model``).
    """
    return initial_agent(config).model


def initial_agent(config: TrainConfig) -> Any:
    """The agent ``config.init_from`` names (its network and ``meta``), checked as :func:`initial_model`."""
    from kahuna_policy.agent import load_agent

    source = config.init_from
    agent = load_agent(source)
    if agent.model.config != config.model:
        raise ConfigError(
            f"init_from: {source} holds a network of {plain_value(dataclasses.asdict(agent.model.config))}, "
            f"but the config's model is {config.to_dict()['model']}; set model.* to match it"
        )
    return agent


def _check_pool(config: TrainConfig, pool: OpponentPool | None) -> None:
    """A ``ValueError`` (before anything is written) for a given pool built for another network than the config's."""
    if pool is not None and pool.model_config != config.model:
        raise ValueError(
            f"the pool was built for a network of {plain_value(dataclasses.asdict(pool.model_config))}, "
            f"but the config's model is {config.to_dict()['model']}"
        )


def _setup(
    config: TrainConfig,
    log: Any,
    initial: ActorCritic | None = None,
    pool: OpponentPool | None = None,
    device: torch.device | None = None,
) -> _RunState:
    """Torch threads, the initial network, the optimizer, the league (``pool``, else the config's) and zero counters.

    With ``initial`` (the ``init_from`` network) the learner starts from its weights and the league
    takes it as its first snapshot (update 0; a fixed target's league takes none).  The learner
    lives on ``device`` (default the CPU); on the CPU the update's minibatches are split in
    ``threads`` shards (:mod:`training.ppo.parallel`).
    """
    device = device or torch.device("cpu")
    threads = update_threads(config.threads)
    cores = available_cores()
    if config.threads == "auto":
        log(f"threads: auto -> {threads} (cores available to this process)")
    warning = oversubscription_warning(threads, config.rollout.workers, cores)
    if warning:
        log(f"warning: {warning}")
    if device.type != "cpu":
        log(prepare_device(device))
    precision = bf16_message(config.ppo.bf16, device)
    if precision:
        log(precision)
    # On the CPU torch runs one thread everywhere: the update's shards are its parallelism. Torch's own
    # threads split each operation and wait for each other at every one: spinning, they collapse beside
    # other work; sleeping (OMP_WAIT_POLICY=PASSIVE, which kahuna-train sets), they made the float32
    # update 2.7 s instead of 1.0 s on a quiet machine (docs/MACHINES.md).
    torch.set_num_threads(1 if device.type == "cpu" else threads)
    model = (build_model(config) if initial is None else initial).to(device)
    if initial is not None:
        log(f"init_from: the learner starts from {config.init_from}")
    model.eval()
    if pool is None:
        pool = OpponentPool.from_config(config.model, config.pool)
    if initial is not None:
        pool.add_learner(model, 0)
    return _RunState(
        model=model,
        optimizer=make_optimizer(model, config.ppo),
        pool=pool,
        counters={"update": 0, "global_step": 0, "actions": 0, "games": 0, "train_seconds": 0.0},
        schedule=Schedule(config),
        shards=UpdateShards(threads if device.type == "cpu" else 1),
    )


def _resume(run: _RunState, config: TrainConfig, run_dir: Path, log: Any) -> None:
    """Load the newest readable checkpoint into ``run``; a ``ValueError`` naming the file if any part is damaged.

    A run stopped before its first checkpoint (no checkpoint, its ``config.yaml`` written) starts
    again from update 0: :func:`resume_config` read that config, with the same seed.
    """
    if not has_checkpoint(run_dir) and (run_dir / CONFIG_FILE).is_file():
        log(
            f"{run_dir} has no checkpoint yet: starting again from update 0 with its {CONFIG_FILE} (seed {config.seed})"
        )
        return
    path, checkpoint, note = find_resume_checkpoint(run_dir)
    if note:
        log(note)
    try:
        check_state_dict(checkpoint["model_state"], run.model.config)
        if len(checkpoint["pool"]) > run.pool.max_snapshots:
            raise ValueError(
                f"the pool holds {len(checkpoint['pool'])} snapshots, more than pool.max_snapshots "
                f"{run.pool.max_snapshots}"
            )
        for entry in checkpoint["pool"]:
            check_state_dict(entry["model_state"], entry_model_config(entry, run.model.config))
        plan = Plan.from_dict(checkpoint["schedule"]) if "schedule" in checkpoint else None
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    run.model.load_state_dict(checkpoint["model_state"])
    _load_optimizer_state(run, checkpoint["optimizer_state"], path)
    run.pool.load_state(checkpoint["pool"])
    run.counters.update(checkpoint["counters"])
    run.schedule = Schedule(config, plan)
    if "rng" in checkpoint:
        try:
            torch.set_rng_state(checkpoint["rng"]["torch"])
        except (TypeError, KeyError, RuntimeError) as error:
            raise ValueError(f"{path} is a damaged training checkpoint: rng: {error}") from None
    run.start_update = int(run.counters["update"])
    run.last_checkpoint = path
    if (run_dir / METRICS_FILE).exists():  # checked here, before anything is written; rewritten by the logger
        _, note = resume_metrics(run_dir / METRICS_FILE, run.start_update)
        if note:
            log(note)
    if run.start_update >= run.schedule.horizon:
        log(f"nothing to do: the run already has {run.start_update} of {run.schedule.horizon} updates")
    elif plan is not None and run.schedule.plan is None:
        log(
            f"schedule: the plan of {plan.updates} updates was made for another total_updates or max_minutes; "
            "the run plans again"
        )
    log(
        f"resuming {run_dir} after update {run.start_update} ({run.counters['global_step']} decisions) from {path.name}"
    )


def _load_optimizer_state(run: _RunState, state: Any, path: Path) -> None:
    """Load Adam's state, checking that every moment has its parameter's shape (Adam itself checks only counts)."""
    kernel = {key: run.optimizer.param_groups[0].get(key) for key in ("fused", "foreach")}
    try:
        run.optimizer.load_state_dict(state)
        keep_optimizer_kernel(run.optimizer, kernel)
        for parameter in run.model.parameters():
            for name, value in run.optimizer.state.get(parameter, {}).items():
                if name != "step" and (not torch.is_tensor(value) or value.shape != parameter.shape):
                    raise ValueError(
                        f"{name} has shape {tuple(getattr(value, 'shape', ()))}, not {tuple(parameter.shape)}"
                    )
                if not bool(torch.isfinite(value).all()):
                    raise ValueError(f"{name} holds NaN or infinite values")
    except (ValueError, KeyError, TypeError, RuntimeError, IndexError) as error:
        raise ValueError(f"{path} is a damaged training checkpoint: optimizer_state: {first_line(error)}") from None


class _Session:
    """The outputs and clocks of this process's part of the run: collector, metrics, progress bar."""

    def __init__(
        self, config: TrainConfig, run: _RunState, run_dir: Path, resume: bool, collection: dict[str, Any]
    ) -> None:
        from tqdm import tqdm

        self.config = config
        # The metrics first: a damaged metrics.jsonl stops the resume before any worker starts.
        self.logger = MetricsLogger(
            run_dir,
            tensorboard=config.logging.tensorboard,
            resume_update=run.start_update if resume else None,
            resume_step=int(run.counters["global_step"]) if resume else None,
            wandb=config.logging.wandb,
            wandb_config=config.to_dict(),
            wandb_project=config.logging.wandb_project,
        )
        game_config = config.env.rules()
        self.collector = SelfPlayCollector(
            config.rollout.num_games,
            game_config,
            gamma=config.ppo.gamma,
            gae_lambda=config.ppo.gae_lambda,
            win_reward=config.reward.win,
            island_shaping=config.reward.island_shaping,
            margin_reward=config.reward.margin,
            workers=config.rollout.workers,
            model_config=config.model,
            backend=config.rollout.backend,
            mcts_simulations=config.pool.mcts_simulations,
            **collection,
        )
        if not resume:
            self.logger.add_text("config", "```\n" + config_to_yaml(config) + "```")
        self.progress = tqdm(
            total=run.schedule.horizon,
            initial=run.start_update,
            unit="update",
            disable=not config.logging.progress,
            dynamic_ncols=True,
        )
        self.process_start = time.perf_counter()
        self.earlier_seconds = float(run.counters["train_seconds"])  # wall time of the run before this process
        self.busy_seconds = 0.0  # collection + update time in this process
        self.decisions = 0
        self.updates = 0  # updates of this process
        self.evaluation_seconds = 0.0  # the periodic evaluation after the last update (0: none)
        self.watch = CpuWatch()
        self.guard = ContentionGuard(run.shards)
        self.cpu_scalars: dict[str, float] = {}

    def watch_cpu(self, collect: PhaseCpu, update: PhaseCpu, log: Any) -> None:
        """Record the cores the update's two phases got; let the guard adapt the update's threads (and say so)."""
        self.cpu_scalars = {"time/collect_cores": collect.cores(), "time/update_cores": update.cores()}
        note = self.guard.observe(collect, update)
        if note:
            log(note)

    def account(self, rollout: Rollout, busy_seconds: float) -> None:
        """Add one update's collection + update time and decisions to this process's throughput."""
        self.busy_seconds += busy_seconds
        self.decisions += len(rollout)
        self.updates += 1

    def decisions_per_second(self) -> float:
        """Learner decisions per second of collection + update in this process."""
        return self.decisions / self.busy_seconds if self.busy_seconds else 0.0

    def train_seconds(self) -> float:
        """Wall time of the whole run so far (earlier processes included)."""
        return self.earlier_seconds + time.perf_counter() - self.process_start

    def follow_schedule(self, run: _RunState, update: int, run_dir: Path, log: Any) -> None:
        """Let a time-shaped schedule measure ``update`` (plan or shorten the run); log and record a new plan."""
        note = run.schedule.observe(update, self.train_seconds(), self.evaluation_seconds)
        self.evaluation_seconds = 0.0
        if note is None:
            return
        log(note)
        run.schedule.write(run_dir)
        self.progress.total = run.schedule.horizon
        self.progress.refresh()

    def out_of_time(self) -> bool:
        """Whether ``max_minutes`` of wall time have passed."""
        return self.config.max_minutes is not None and self.train_seconds() / 60 >= self.config.max_minutes

    def log(
        self,
        update: int,
        run: _RunState,
        rollout: Rollout,
        losses: dict[str, float],
        results: dict[str, QuickEvalResult],
        timings: dict[str, float],
        busy_seconds: float,
    ) -> None:
        """One metrics record (CleanRL's names) and the progress bar's postfix."""
        scalars = {
            "charts/learning_rate": run.optimizer.param_groups[0]["lr"],
            "charts/SPS": self.decisions_per_second(),
            "charts/actions_per_second": rollout.stats.actions / busy_seconds,
            **rollout.stats.as_metrics(),
            **{f"losses/{key}": value for key, value in losses.items() if key not in ("epochs",)},
            "losses/epochs": losses["epochs"],
            **_eval_scalars(results),
            **league_scalars(run.pool),
            **timings,
            **self.cpu_scalars,
        }
        self.logger.log(update, run.counters["global_step"], scalars)
        self.evaluation_seconds = timings["time/eval_seconds"] if results else 0.0
        postfix = {"SPS": f"{self.decisions_per_second():,.0f}"}
        if "rollout/win_rate_vs_greedy" in scalars:
            postfix["train_vs_greedy"] = f"{scalars['rollout/win_rate_vs_greedy']:.2f}"
        for name, result in run.last_eval.items():
            postfix[f"eval_{name}"] = f"{result.win_rate:.2f}"
        self.progress.set_postfix(postfix, refresh=False)
        self.progress.update(1)

    def summary(self, run: _RunState, run_dir: Path) -> TrainSummary:
        """What the run produced, with this process's wall time and speed."""
        return TrainSummary(
            run_dir=run_dir,
            updates=int(run.counters["update"]),
            global_step=int(run.counters["global_step"]),
            actions=int(run.counters["actions"]),
            wall_seconds=time.perf_counter() - self.process_start,
            decisions_per_second=self.decisions_per_second(),
            final_eval=run.final_eval,
        )

    def close(self) -> None:
        """Close the progress bar and the metrics, stop the collection workers."""
        self.progress.close()
        self.logger.close()
        self.collector.close()


def _collect(
    config: TrainConfig, run: _RunState, session: _Session, update: int
) -> tuple[Rollout, GameAssignment, torch.Generator]:
    """Set the update's learning rate, split its games among the opponents and play them.

    Returns the rollout, the games' assignment and the torch generator of
    the update's minibatch order; all come from the generator seeded by
    ``(seed, update)``.
    """
    for group in run.optimizer.param_groups:
        group["lr"] = run.schedule.learning_rate(update)
    rng = np.random.default_rng([config.seed, update])
    minibatch_generator = torch.Generator().manual_seed(int(rng.integers(2**63)))
    assignment = run.pool.assign(config.rollout.num_games, config.pool.shares(), rng, config.pool.snapshots_per_update)
    return session.collector.collect(run.model, run.pool, assignment, rng), assignment, minibatch_generator


def _check_finite(run: _RunState, losses: dict[str, float], update: int, run_dir: Path) -> None:
    """Raise :class:`TrainingDiverged` if a loss or a weight of the network is NaN or infinite."""
    bad_losses = [key for key in ("policy_loss", "value_loss", "entropy", "approx_kl") if not np.isfinite(losses[key])]
    bad_weights = [name for name, value in run.model.named_parameters() if not bool(torch.isfinite(value).all())]
    if not bad_losses and not bad_weights:
        return
    what = f"loss {', '.join(bad_losses)}" if bad_losses else f"weights {', '.join(bad_weights[:3])}"
    kept = (
        f"the last good checkpoint is {run.last_checkpoint}"
        if run.last_checkpoint is not None
        else "no checkpoint was written yet"
    )
    raise TrainingDiverged(
        f"update {update}: {what} became NaN or infinite, so the run stopped without saving it; {kept} "
        f"(continue with --resume {run_dir} --set ppo.lr=<smaller>, or check the reward and PPO settings)"
    )


def _advance_counters(run: _RunState, rollout: Rollout, update: int) -> None:
    run.counters["update"] = update
    run.counters["global_step"] += len(rollout)
    run.counters["actions"] += rollout.stats.actions
    run.counters["games"] += rollout.stats.games


def _evaluate_phase(config: TrainConfig, run: _RunState, update: int, last: bool) -> dict[str, QuickEvalResult]:
    """The final evaluation after the last update, a periodic one every ``eval.every`` updates, else nothing."""
    results: dict[str, QuickEvalResult] = {}
    if last and config.eval.final_games:
        write = _results_writer(config, run, update, last=True)
        results = run.final_eval = _evaluate(run.model, config, config.eval.final_games, write)
    elif run.schedule.evaluation_due(update):
        results = _evaluate(run.model, config, config.eval.games, _results_writer(config, run, update, last=False))
    if results:
        run.last_eval = results
    return results


def _save(config: TrainConfig, run: _RunState, run_dir: Path, update: int) -> Path:
    """Write ``update_NNNNNN.pt`` and ``latest.pt``; returns the numbered file."""
    payload = build_checkpoint(
        run.model,
        run.optimizer,
        config.to_dict(),
        run.counters,
        run.pool.state(),
        schedule=None if run.schedule.plan is None else run.schedule.plan.to_dict(),
        meta={
            "run": config.name,
            "update": update,
            "global_step": run.counters["global_step"],
            # the value semantics (kahuna_policy.agent.recorded_reward)
            "reward": reward_record(dataclasses.asdict(config.reward)),
        },
    )
    return save_checkpoint(run_dir, payload, keep_last=config.checkpoint.keep_last)


def _export(config: TrainConfig, run: _RunState, run_dir: Path) -> None:
    """``final_agent.pt``, ``final_eval.json`` (when there was a final evaluation) and the learning curves.

    The agent's ``meta`` records the run, its counters, the reward settings (the
    critic's value semantics: :func:`kahuna_policy.agent.recorded_reward`), the whole
    config and the final evaluation (scores with 95% intervals; ``{}`` without one).
    """
    summary = {name: result.to_dict() for name, result in run.final_eval.items()}
    meta = {
        "run": config.name,
        "update": int(run.counters["update"]),
        "global_step": int(run.counters["global_step"]),
        "reward": reward_record(dataclasses.asdict(config.reward)),
        "config": config.to_dict(),
        "final_eval": summary,
    }
    if config.init_from is not None:
        meta["init_from"] = config.init_from
    export_agent(run_dir / FINAL_AGENT, run.model, meta)
    if run.final_eval:
        (run_dir / FINAL_EVAL).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if config.logging.plot and (run_dir / METRICS_FILE).exists():
        plot_learning_curves(run_dir / METRICS_FILE, run_dir / PLOT_FILE)


def resume_config(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """The config stored in the run's newest checkpoint, with ``key=value`` overrides applied.

    Reads only: a ``ConfigError`` for a bad override, including any change of
    ``model.*`` (the checkpoint's weights fit only its own network), and a
    ``ValueError`` for a damaged checkpoint.
    """
    if Path(run_dir).is_dir() and not has_checkpoint(run_dir) and checkpoint_dir(run_dir).is_dir():
        return _restart_config(Path(run_dir), overrides)
    path, checkpoint, _ = find_resume_checkpoint(run_dir)
    try:
        stored = config_from_dict(checkpoint["config"])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: the checkpoint's config is unusable: {error}") from None
    config = config_from_dict(apply_overrides(checkpoint["config"], overrides))
    if config.model != stored.model:
        changed = [
            f"model.{field.name}"
            for field in dataclasses.fields(stored.model)
            if getattr(config.model, field.name) != getattr(stored.model, field.name)
        ]
        raise ConfigError(
            f"{', '.join(changed)} cannot change when resuming: the checkpoint holds a network of "
            f"{stored.to_dict()['model']}; start a new run to train another architecture"
        )
    return config


def _restart_config(run_dir: Path, overrides: list[str] | tuple[str, ...]) -> TrainConfig:
    """The ``config.yaml`` of a run stopped before its first checkpoint, with overrides: it starts again from it."""
    config_file = run_dir / CONFIG_FILE
    if not config_file.is_file():
        raise FileNotFoundError(
            f"no checkpoint to resume from: {run_dir} stopped before training began (no checkpoint, no {CONFIG_FILE}); "
            f"start it again with --config FILE --run-dir {run_dir}"
        )
    return load_config(config_file, overrides)
