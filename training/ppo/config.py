"""Typed training configuration: YAML files map onto :class:`TrainConfig`, ``--set key=value`` overrides.

Every hyperparameter lives in one dataclass per section, each field with a
one-line help in its docstring.  :func:`load_config` reads a YAML file,
applies overrides and validates everything: an unknown key, a wrong type or a
bad value is a :class:`ConfigError` naming the key, e.g.
``ppo.lr: expected float, got 'abc'``.

Overrides are ``section.key=value`` strings (``ppo.lr=1e-4``,
``model.hidden_sizes=[128,128]``, ``ppo.target_kl=null``); the value is
parsed as YAML.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import yaml

from kahuna_env.agents.spec import EntrantSpec, UnknownEntrant, parse_baseline
from kahuna_env.cli import check_input_file, first_line
from kahuna_env.config import KahunaConfig
from kahuna_policy.model import ModelConfig
from kahuna_policy.reward import TRAINING_REWARD_DEFAULTS
from training.league.pool import KINDS, START_OPPONENTS
from training.ppo.device import DEVICES


class ConfigError(ValueError):
    """A configuration problem (unknown key, wrong type, bad value, bad override, missing file)."""


MAX_SEED = 2**63 - 1
"""Largest seed: torch's generators take 64-bit seeds (numpy would take any size, torch fails past 2**64)."""
# Upper bounds of the budget and size keys: a typo (an extra zero, a pasted number) is refused up
# front instead of hanging a run or exhausting memory.  Each is far above any sensible setting.
MAX_SIMULATIONS = 100_000
"""Largest search budget (``pool.mcts_simulations``, ``eval.opponents`` ``mcts:N``): about 20 s per move."""
MAX_UPDATES = 10_000_000
"""Largest ``total_updates``."""
MAX_GAMES = 1_000_000
"""Largest number of games per update (``rollout.num_games``) or per evaluation opponent (``eval.*games``)."""
MAX_WORKERS = 256
"""Largest number of processes or threads (``rollout.workers``, ``threads``)."""
MAX_SNAPSHOTS = 10_000
"""Largest opponent pool (``pool.max_snapshots``, ``pool.snapshots_per_update``)."""
MAX_EPOCHS = 10_000
"""Largest ``ppo.update_epochs``."""
MAX_MINIBATCH = 100_000_000
"""Largest ``ppo.minibatch_size``."""
MAX_MINUTES = 10 * 365 * 24 * 60
"""Largest ``max_minutes`` (ten years)."""


TRAINING_RULE_OPTIONS = ("variant", "discard_rule")
"""The rule options a training run chooses (the ``env:`` keys), by :class:`~kahuna_env.config.KahunaConfig`'s names.

The other options keep KahunaConfig's defaults: no handicap, and ``player_0`` takes the first
turn (kahuna-rllib may draw it per game instead, ``env.random_first_player``).
"""


def with_rule_options(cls: type) -> type:
    """Class decorator: :data:`TRAINING_RULE_OPTIONS` as the first fields of ``cls``, as KahunaConfig types them.

    Apply it under ``@dataclasses.dataclass``; the fields are read off
    :class:`~kahuna_env.config.KahunaConfig` (``dataclasses.fields``), so they are
    declared, and checked, there only.
    """
    declared = {field.name: field for field in dataclasses.fields(KahunaConfig)}
    own = inspect.get_annotations(cls)
    cls.__annotations__ = {**{name: declared[name].type for name in TRAINING_RULE_OPTIONS}, **own}
    for name in TRAINING_RULE_OPTIONS:
        setattr(cls, name, declared[name].default)
    return cls


@dataclasses.dataclass(frozen=True)
@with_rule_options
class EnvConfig:
    """Rule options of the training games: :data:`TRAINING_RULE_OPTIONS`, declared and checked by KahunaConfig.

    Attributes:
        variant: ``"standard"`` or ``"planning"``.
        discard_rule: ``"instead_of_play"`` or ``"hand_limit"``.
    """

    def __post_init__(self) -> None:
        try:
            self.rules()
        except ValueError as error:
            raise ConfigError(f"env: {error}") from None

    def rules(self) -> KahunaConfig:
        """The games' :class:`~kahuna_env.config.KahunaConfig` (the options not in this section at their defaults)."""
        return KahunaConfig(**{name: getattr(self, name) for name in TRAINING_RULE_OPTIONS})


@dataclasses.dataclass(frozen=True)
class RolloutConfig:
    """Self-play collection.

    Attributes:
        num_games: games played in parallel per update; each update plays all of them to the end.
        workers: extra processes that play a share of the games in parallel with this one (0: none).
        backend: ``vector``: the batched numpy engine (the seated-play driver, :mod:`kahuna_env.seated`).
            The ``scalar`` backend was removed; the scalar engine is the tests' oracle.
        start_positions: a start-positions file (JSON Lines of ``{"seat": S, "position": {...}}``,
            :mod:`kahuna_arena.start_positions`; null: every game is a fresh deal).
        start_share: share of the games against ``start_opponent`` that start from a position drawn
            from ``start_positions`` (determinized from the learner's seat) instead of a fresh deal.
        start_opponent: the opponent kind of the games that may start from a position
            (``latest``, ``greedy``, ``random`` or ``mcts``).
    """

    num_games: int = 256
    workers: int = 0
    backend: str = "vector"
    start_positions: str | None = None
    start_share: float = 0.0
    start_opponent: str = "greedy"

    def __post_init__(self) -> None:
        check_value(
            2 <= self.num_games <= MAX_GAMES, "rollout.num_games", f"must be in [2, {MAX_GAMES}]", self.num_games
        )
        check_value(0 <= self.workers < self.num_games, "rollout.workers", "must be in [0, num_games)", self.workers)
        check_value(self.workers <= MAX_WORKERS, "rollout.workers", f"must be <= {MAX_WORKERS}", self.workers)
        check_value(
            self.backend == "vector",
            "rollout.backend",
            "must be 'vector' (the 'scalar' backend was removed: collection plays on the batched engine)",
            self.backend,
        )
        check_value(0.0 <= self.start_share <= 1.0, "rollout.start_share", "must be in [0, 1]", self.start_share)
        check_value(
            self.start_opponent in START_OPPONENTS,
            "rollout.start_opponent",
            f"must be one of {', '.join(START_OPPONENTS)}",
            self.start_opponent,
        )
        has_file = self.start_positions is not None
        check_value(
            not has_file or (bool(self.start_positions.strip()) and self.start_positions.isprintable()),
            "rollout.start_positions",
            "must be a file path (or null)",
            self.start_positions,
        )
        check_value(
            has_file == (self.start_share > 0),
            "rollout.start_share",
            "must be > 0 exactly when rollout.start_positions names a file",
            self.start_share,
        )


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    """Rewards of a learner seat.

    Attributes:
        win: terminal reward for a win (a loss gets ``-win``, a draw 0).
        island_shaping: coefficient of potential-based shaping with potential
            (my controlled islands - opponent's) / 12, measured at the seat's
            decisions (0 at the end, so the undiscounted return is unchanged
            up to a constant); 0 disables it.
        margin: reward per point of the final score margin, added to the terminal
            reward: ``margin * (my points - the opponent's)`` (a draw on points
            adds 0); 0 (the default) disables it.  The critic then estimates the
            win term plus this one.
    """

    win: float = TRAINING_REWARD_DEFAULTS["win"]
    island_shaping: float = TRAINING_REWARD_DEFAULTS["island_shaping"]
    margin: float = 0.0

    def __post_init__(self) -> None:
        check_value(self.win > 0, "reward.win", "must be > 0", self.win)
        check_value(
            math.isfinite(self.margin) and self.margin >= 0,
            "reward.margin",
            "must be a finite number >= 0",
            self.margin,
        )


@dataclasses.dataclass(frozen=True)
class PPOHyperparameters:
    """The PPO hyperparameters of both trainers (CleanRL's names), each declared and checked here only.

    kahuna-train's ``ppo:`` section is :class:`PPOConfig` and kahuna-rllib's is
    :class:`training.rllib.config.RLlibPPOConfig`: each adds only the keys of its own.

    Attributes:
        lr: Adam learning rate.
        anneal_lr: anneal the learning rate linearly to ``min_lr_fraction * lr`` over the run.
        min_lr_fraction: final learning rate as a fraction of ``lr`` when annealing.
        gamma: discount factor per seat decision.
        gae_lambda: GAE lambda.
        update_epochs: passes over the rollout per update.
        minibatch_size: transitions per gradient step (the last minibatch of an epoch may be smaller).
        clip_coef: policy ratio clipping.
        clip_vloss: clip the value loss like the policy (CleanRL's variant).
        ent_coef: entropy bonus coefficient.
        vf_coef: value loss coefficient.
        max_grad_norm: gradient norm clipping (null: none, kahuna-rllib only).
        adam_eps: Adam epsilon.
        bf16: run the update's forward and backward passes under bfloat16 autocast (CPU); about a
            third faster on CPUs with native bfloat16 (AVX512-BF16, AMX), while the losses, the
            optimizer and the collection's inference stay float32.  ``"auto"``: only where the CPU
            has native bfloat16 (:func:`training.ppo.cpus.native_bfloat16`); elsewhere bfloat16 is
            emulated and makes the update many times slower.
    """

    lr: float = 3e-4
    anneal_lr: bool = True
    min_lr_fraction: float = 0.0
    gamma: float = 1.0
    gae_lambda: float = 0.95
    update_epochs: int = 4
    minibatch_size: int = 4096
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float | None = 0.5
    adam_eps: float = 1e-5
    bf16: bool | str = False

    def __post_init__(self) -> None:
        check_value(self.lr > 0, "ppo.lr", "must be > 0", self.lr)
        check_value(0 <= self.min_lr_fraction <= 1, "ppo.min_lr_fraction", "must be in [0, 1]", self.min_lr_fraction)
        check_value(0 < self.gamma <= 1, "ppo.gamma", "must be in (0, 1]", self.gamma)
        check_value(0 <= self.gae_lambda <= 1, "ppo.gae_lambda", "must be in [0, 1]", self.gae_lambda)
        check_value(
            1 <= self.update_epochs <= MAX_EPOCHS,
            "ppo.update_epochs",
            f"must be in [1, {MAX_EPOCHS}]",
            self.update_epochs,
        )
        check_value(self.bf16 in (True, False, "auto"), "ppo.bf16", "must be true, false or 'auto'", self.bf16)
        check_value(
            1 <= self.minibatch_size <= MAX_MINIBATCH,
            "ppo.minibatch_size",
            f"must be in [1, {MAX_MINIBATCH}]",
            self.minibatch_size,
        )
        check_value(self.clip_coef > 0, "ppo.clip_coef", "must be > 0", self.clip_coef)
        check_value(self.ent_coef >= 0, "ppo.ent_coef", "must be >= 0", self.ent_coef)
        check_value(self.vf_coef >= 0, "ppo.vf_coef", "must be >= 0", self.vf_coef)
        check_value(
            self.max_grad_norm is None or self.max_grad_norm > 0,
            "ppo.max_grad_norm",
            "must be > 0 (or null: no clipping, kahuna-rllib only)",
            self.max_grad_norm,
        )
        check_value(self.adam_eps > 0, "ppo.adam_eps", "must be > 0", self.adam_eps)


@dataclasses.dataclass(frozen=True)
class PPOConfig(PPOHyperparameters):
    """kahuna-train's PPO hyperparameters: the shared ones (:class:`PPOHyperparameters`) and its own.

    Attributes:
        norm_adv: normalise advantages per minibatch.
        target_kl: stop the epochs of an update early when the approximate KL exceeds this (null: never).
    """

    norm_adv: bool = True
    target_kl: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_value(
            self.max_grad_norm is not None,
            "ppo.max_grad_norm",
            "must be > 0: kahuna-train always clips (null, no clipping, is kahuna-rllib's only)",
            self.max_grad_norm,
        )
        check_value(
            self.target_kl is None or self.target_kl > 0, "ppo.target_kl", "must be > 0 or null", self.target_kl
        )


@dataclasses.dataclass(frozen=True)
class PoolConfig:
    """Opponent mix of the training games (shares are normalised; each update splits its games by them).

    Attributes:
        latest: share of pure self-play games (both seats are the current policy and both learn).
        past: share of games against a snapshot of the policy drawn from the pool (uniformly, or by ``pfsp``).
        greedy: share of games against the ``greedy`` baseline.
        random: share of games against the ``random`` baseline.
        mcts: share of games against the ``mcts`` search baseline (slow: one search per move; keep it small).
        mcts_simulations: search budget of the ``mcts`` opponent (``mcts:N``).
        entrant: share of games against ``entrant_agent``.
        entrant_agent: the opponent of the ``entrant`` games: any entrant, as ``kahuna-eval`` takes one
            (an agent file of any kind: ``model.zip``, ``model.onnx``, a checkpoint; ``py:FILE.py:ATTR``;
            ``champion``; ``X@mcts:N``; a baseline); built when the run starts (a bad one stops it
            before anything is written); null: none.
        snapshot_every: add a snapshot of the policy to the pool every this many updates.
        max_snapshots: pool capacity; the oldest snapshot is dropped when it is full.
        snapshots_per_update: null: every ``past`` game draws its snapshot from the whole pool;
            N: each update first draws N distinct snapshots and its ``past`` games draw from
            those (fewer forward passes per tick: faster collection, same odds per game).
        pfsp: how ``past`` games weight the snapshots (prioritized fictitious self-play):
            ``uniform`` (every snapshot alike), ``hard`` (``(1 - p_win) ** pfsp_exponent``,
            AlphaStar's: favours the snapshots the learner does worst against) or ``variance``
            (``p_win * (1 - p_win)``: favours even opponents).
        pfsp_exponent: exponent of the ``hard`` weighting (2: AlphaStar's squared weighting).
        pfsp_prior: win rate assumed against a snapshot not yet played.
        pfsp_prior_games: weight of that prior, in games.
        pfsp_decay: every update multiplies each snapshot's win/game counts by this (1: plain counts).
    """

    latest: float = 0.6
    past: float = 0.2
    greedy: float = 0.2
    random: float = 0.0
    mcts: float = 0.0
    mcts_simulations: int = 50
    entrant: float = 0.0
    entrant_agent: str | None = None
    snapshot_every: int = 10
    max_snapshots: int = 20
    snapshots_per_update: int | None = None
    pfsp: str = "uniform"
    pfsp_exponent: float = 2.0
    pfsp_prior: float = 0.5
    pfsp_prior_games: float = 4.0
    pfsp_decay: float = 0.98

    def __post_init__(self) -> None:
        for name in KINDS:
            check_value(getattr(self, name) >= 0, f"pool.{name}", "must be >= 0", getattr(self, name))
        total = sum(getattr(self, name) for name in KINDS)
        check_value(total > 0, "pool", f"shares {'+'.join(KINDS)} must be > 0", total)
        check_entrant_spec(self.entrant_agent, "pool.entrant_agent")
        check_value(
            self.entrant == 0 or self.entrant_agent is not None,
            "pool.entrant_agent",
            "must name the opponent of the pool.entrant games when pool.entrant > 0 (e.g. model.zip)",
            self.entrant_agent,
        )
        check_value(
            1 <= self.mcts_simulations <= MAX_SIMULATIONS,
            "pool.mcts_simulations",
            f"must be in [1, {MAX_SIMULATIONS}]",
            self.mcts_simulations,
        )
        check_value(self.snapshot_every >= 1, "pool.snapshot_every", "must be >= 1", self.snapshot_every)
        check_value(
            1 <= self.max_snapshots <= MAX_SNAPSHOTS,
            "pool.max_snapshots",
            f"must be in [1, {MAX_SNAPSHOTS}]",
            self.max_snapshots,
        )
        check_value(
            self.snapshots_per_update is None or 1 <= self.snapshots_per_update <= MAX_SNAPSHOTS,
            "pool.snapshots_per_update",
            f"must be in [1, {MAX_SNAPSHOTS}] or null",
            self.snapshots_per_update,
        )
        check_value(
            self.pfsp in ("uniform", "hard", "variance"),
            "pool.pfsp",
            "must be 'uniform', 'hard' or 'variance'",
            self.pfsp,
        )
        check_value(self.pfsp_exponent > 0, "pool.pfsp_exponent", "must be > 0", self.pfsp_exponent)
        check_value(0 < self.pfsp_prior < 1, "pool.pfsp_prior", "must be in (0, 1)", self.pfsp_prior)
        check_value(self.pfsp_prior_games > 0, "pool.pfsp_prior_games", "must be > 0", self.pfsp_prior_games)
        check_value(0 < self.pfsp_decay <= 1, "pool.pfsp_decay", "must be in (0, 1]", self.pfsp_decay)

    def shares(self) -> dict[str, float]:
        """Normalised shares by opponent kind (:data:`training.league.pool.KINDS`, in its order)."""
        total = sum(getattr(self, name) for name in KINDS)
        return {kind: getattr(self, kind) / total for kind in KINDS}


def check_entrant_spec(spec: str | None, key: str) -> None:
    """A :class:`ConfigError` naming ``key`` for an entrant written wrong (``x.pt@mcts:0``, ``py:x``, ``mcts:abc``).

    Read by the one spec reader (:meth:`~kahuna_env.agents.spec.EntrantSpec.parse`), as text only: what
    depends on this machine (a file that is not there, a name no installed package declares, a module
    that does not import) is found when the run starts and builds the entrant, so a config read back
    elsewhere (a checkpoint's, by ``kahuna-ship``) still loads.  ``None`` passes.
    """
    if spec is None:
        return
    try:
        EntrantSpec.parse(spec, max_simulations=MAX_SIMULATIONS)
    except (UnknownEntrant, FileNotFoundError):
        pass  # a name or a file of this machine: checked when the run builds it
    except ValueError as error:
        raise ConfigError(f"{key}: {first_line(error)}") from None


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Periodic and final evaluation (the policy plays its most likely action, seat-balanced games).

    Attributes:
        every: evaluate every this many updates (0: only at the end).
        games: games per opponent in periodic evaluations.
        final_games: games per opponent in the final evaluation (0: none).
        opponents: baselines to evaluate against: ``random``, ``greedy``, ``mcts`` or ``mcts:N``
            (search opponents are slow, 0.01-0.04 s per move: keep them out of frequent evaluations);
            ``greedy``, ``mcts:50`` and ``mcts`` also give an Elo estimate (``elo/vs_*``).
        seed: seed of the evaluation deals (the same games every time, independent of training).
        db: a results store (SQLite file, created when missing) that receives every evaluation game, the
            learner keyed by its weights with the run, update and decisions (``kahuna-ratings --db``);
            null: none.
    """

    every: int = 25
    games: int = 200
    final_games: int = 1000
    opponents: tuple[str, ...] = ("random", "greedy")
    seed: int = 2024
    db: str | None = None

    def __post_init__(self) -> None:
        check_value(self.every >= 0, "eval.every", "must be >= 0", self.every)
        check_value(
            self.db is None or (bool(self.db.strip()) and self.db.isprintable()),
            "eval.db",
            "must be a file path (printable, not empty) or null",
            self.db,
        )
        check_value(2 <= self.games <= MAX_GAMES, "eval.games", f"must be in [2, {MAX_GAMES}]", self.games)
        check_value(0 <= self.seed <= MAX_SEED, "eval.seed", f"must be in [0, {MAX_SEED}]", self.seed)
        check_value(
            0 <= self.final_games <= MAX_GAMES, "eval.final_games", f"must be in [0, {MAX_GAMES}]", self.final_games
        )
        for name in self.opponents:
            check_value(
                _is_baseline_name(name),
                "eval.opponents",
                f"entries must be 'random', 'greedy', 'mcts' or 'mcts:N' with 1 <= N <= {MAX_SIMULATIONS}",
                name,
            )
        unique = len(set(self.opponents)) == len(self.opponents)
        check_value(unique, "eval.opponents", "must not repeat", self.opponents)


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    """Checkpoints in ``<run_dir>/checkpoints``.

    Attributes:
        every: write ``update_NNNNNN.pt`` (and ``latest.pt``) every this many updates; always at the end.
        keep_last: keep only this many numbered checkpoints (0: keep all).
    """

    every: int = 25
    keep_last: int = 3

    def __post_init__(self) -> None:
        check_value(self.every >= 1, "checkpoint.every", "must be >= 1", self.every)
        check_value(self.keep_last >= 0, "checkpoint.keep_last", "must be >= 0", self.keep_last)


@dataclasses.dataclass(frozen=True)
class LoggingConfig:
    """Feedback and metric outputs.

    Attributes:
        progress: show a tqdm progress bar.
        tensorboard: write TensorBoard event files to ``<run_dir>/tensorboard``.
        plot: write ``learning_curves.png`` at the end.
        wandb: also log every update's scalars and the config to Weights & Biases (the ``wandb``
            extra; ``WANDB_MODE=offline`` keeps the run in ``<run_dir>/wandb`` for ``wandb sync``).
        wandb_project: the W&B project of the run (the run is named after the run directory).
    """

    progress: bool = True
    tensorboard: bool = True
    plot: bool = True
    wandb: bool = False
    wandb_project: str = "kahuna-rl"

    def __post_init__(self) -> None:
        import importlib.util

        if self.wandb and importlib.util.find_spec("wandb") is None:
            raise ConfigError(
                'logging.wandb: true needs the wandb package: pip install "kahuna-rl[wandb]" (the wandb extra)'
            )
        check_value(
            isinstance(self.wandb_project, str) and re.fullmatch(r"[\w.-]{1,128}", self.wandb_project) is not None,
            "logging.wandb_project",
            "must be 1 to 128 letters, digits, '_', '-' or '.'",
            self.wandb_project,
        )


SCHEDULE_BY = ("updates", "time")
"""What sets a run's length: its ``total_updates`` as written, or its time budget ``max_minutes``."""
MAX_MEASURE_UPDATES = 1000
"""Largest ``schedule.measure_updates``."""


@dataclasses.dataclass(frozen=True)
class ScheduleConfig:
    """What sets the run's length, and with it the learning-rate annealing and the snapshot and evaluation cadences.

    Attributes:
        by: ``updates``: the run is ``total_updates`` long, whatever the machine (bit-exact: the same seed
            on the same machine gives the same run; ``max_minutes`` is only a safety stop).  ``time``: the
            recipe is written for ``total_updates`` but sized to ``max_minutes``: after
            ``measure_updates`` updates the run measures its speed and plans how many updates fit in the
            budget (at most ``total_updates``); the learning rate anneals over the planned updates, the
            snapshot and evaluation cadences shrink in proportion, and the final evaluation follows the
            last planned update, so a slower machine runs the whole recipe, compressed.  The plan is
            recorded (``schedule.json``, the checkpoints), so a resume continues it; the run shortens it
            if it falls behind (docs/TRAINING.md, "Time budgets").
        measure_updates: updates timed before the plan is made (the first update of a process, its
            warm-up, is not counted in the speed).
        headroom: fraction of the time budget the plan leaves free for the run slowing down later.
    """

    by: str = "updates"
    measure_updates: int = 5
    headroom: float = 0.03

    def __post_init__(self) -> None:
        check_value(self.by in SCHEDULE_BY, "schedule.by", "must be 'updates' or 'time'", self.by)
        check_value(
            2 <= self.measure_updates <= MAX_MEASURE_UPDATES,
            "schedule.measure_updates",
            f"must be in [2, {MAX_MEASURE_UPDATES}]",
            self.measure_updates,
        )
        check_value(0 <= self.headroom < 0.5, "schedule.headroom", "must be in [0, 0.5)", self.headroom)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A complete training run.

    Attributes:
        name: run name (the default run directory is ``runs/<name>-<timestamp>``).
        seed: seed of everything random in the run.
        total_updates: PPO updates (each plays ``rollout.num_games`` complete games); with
            ``schedule.by: time``, the length the recipe is written for and the most the run plays.
        threads: the update's threads: each minibatch is split in this many row shards, whose gradients
            are computed at once, one thread each, and summed in a fixed order
            (:mod:`training.ppo.parallel`); ``"auto"``: the cores this process may actually use (CPU
            affinity and cgroup quota; see :mod:`training.ppo.cpus`).  The number fixes the run's
            results; while other work takes the cores the shards run on fewer threads, with the same
            results.  Torch itself runs one thread per process on the CPU (its threads on a GPU run).
        device: where the learner's network runs (the update and collection's forward passes):
            ``auto`` (CUDA when torch sees a GPU, else the CPU), ``cpu`` or ``cuda``; the batched engine
            plays on the CPU (:mod:`training.ppo.device`).
        max_minutes: stop after the update during which this much wall time has passed (null: no limit);
            with ``schedule.by: time``, also the budget the run is sized to.
        schedule: what sets the run's length: ``total_updates`` or the time budget.
        env: rule options of the games.
        model: network shape.
        rollout: self-play collection.
        reward: rewards.
        ppo: PPO hyperparameters.
        pool: opponent pool.
        eval: evaluation.
        checkpoint: checkpoints.
        logging: progress bar, TensorBoard, plot.
        init_from: start the learner (and the league's first snapshot) from this agent's weights: a
            shipped agent's name (``champion``), an agent file or a training checkpoint, whose network
            must be ``model``'s (null: fresh weights).  Read once, when the run starts; ``--resume``
            continues from the run's own checkpoint.
    """

    name: str = "kahuna-ppo"
    seed: int = 1
    total_updates: int = 100
    threads: int | str = 2
    device: str = "auto"
    max_minutes: float | None = None
    schedule: ScheduleConfig = dataclasses.field(default_factory=ScheduleConfig)
    env: EnvConfig = dataclasses.field(default_factory=EnvConfig)
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    rollout: RolloutConfig = dataclasses.field(default_factory=RolloutConfig)
    reward: RewardConfig = dataclasses.field(default_factory=RewardConfig)
    ppo: PPOConfig = dataclasses.field(default_factory=PPOConfig)
    pool: PoolConfig = dataclasses.field(default_factory=PoolConfig)
    eval: EvalConfig = dataclasses.field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = dataclasses.field(default_factory=CheckpointConfig)
    logging: LoggingConfig = dataclasses.field(default_factory=LoggingConfig)
    init_from: str | None = None

    def __post_init__(self) -> None:
        check_value(
            bool(self.name)
            and self.name not in (".", "..")
            and self.name.isprintable()
            and not set(self.name) & {"/", "\\"},
            "name",
            "must be a non-empty printable name without '/', '\\' or NUL (it names the run directory)",
            self.name,
        )
        check_value(0 <= self.seed <= MAX_SEED, "seed", f"must be in [0, {MAX_SEED}]", self.seed)
        check_value(
            1 <= self.total_updates <= MAX_UPDATES,
            "total_updates",
            f"must be in [1, {MAX_UPDATES}]",
            self.total_updates,
        )
        check_value(
            self.threads == "auto" or (isinstance(self.threads, int) and 1 <= self.threads <= MAX_WORKERS),
            "threads",
            f"must be an integer in [1, {MAX_WORKERS}] or 'auto'",
            self.threads,
        )
        check_value(self.device in DEVICES, "device", f"must be one of {', '.join(DEVICES)}", self.device)
        check_value(
            self.max_minutes is None or 0 < self.max_minutes <= MAX_MINUTES,
            "max_minutes",
            f"must be in (0, {MAX_MINUTES}] or null",
            self.max_minutes,
        )
        check_value(
            self.schedule.by != "time" or self.max_minutes is not None,
            "schedule.by",
            "'time' sizes the run to max_minutes, so it needs max_minutes set",
            self.schedule.by,
        )
        check_value(
            self.init_from is None or (bool(self.init_from.strip()) and self.init_from.isprintable()),
            "init_from",
            "must be null or an agent: a shipped agent's name or the path of an agent file or checkpoint",
            self.init_from,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (lists instead of tuples), as written to YAML and checkpoints."""
        return plain_value(dataclasses.asdict(self))


def _is_baseline_name(name: str) -> bool:
    try:
        return parse_baseline(name, MAX_SIMULATIONS) is not None
    except ValueError:  # a bad or too large budget
        return False


def check_value(condition: bool, key: str, requirement: str, value: object) -> None:
    """Raise a :class:`ConfigError` naming ``key`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(f"{key}: {requirement}, got {value!r}")


def plain_value(value: Any) -> Any:
    """``value`` with mappings as dicts and sequences as lists (for YAML and checkpoints)."""
    if isinstance(value, Mapping):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


# ------------------------------------------------------------------ typed conversion
def _type_name(annotation: Any) -> str:
    if annotation is float:
        return "float"
    if annotation is int:
        return "int"
    if annotation is bool:
        return "bool"
    if annotation is str:
        return "str"
    return str(annotation).replace("typing.", "")


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Check ``value`` against a field annotation and convert it (YAML lists -> tuples, ints -> floats)."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _coerce_union(value, typing.get_args(annotation), key)
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping of options, got {value!r}")
        return build_section(annotation, value, key)
    if origin is tuple:
        element = typing.get_args(annotation)[0]
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise ConfigError(f"{key}: expected a list of {_type_name(element)}, got {value!r}")
        return tuple(_coerce(item, element, f"{key}[{index}]") for index, item in enumerate(value))
    if annotation is float:
        return _coerce_float(value, key)
    if annotation in (bool, int, str):
        # bool is a subclass of int: an int field refuses true/false.
        if isinstance(value, annotation) and not (annotation is int and isinstance(value, bool)):
            return value
        raise ConfigError(f"{key}: expected {_type_name(annotation)}, got {value!r}")
    raise ConfigError(f"{key}: unsupported annotation {annotation}")


def _coerce_union(value: Any, options: tuple[Any, ...], key: str) -> Any:
    """``X | None`` (null or an X) or ``X | Y`` (the first option that accepts the value, e.g. threads: 2 or auto)."""
    if value is None and type(None) in options:
        return None
    non_none = [option for option in options if option is not type(None)]
    if type(None) not in options:
        for option in non_none:
            try:
                return _coerce(value, option, key)
            except ConfigError:
                pass
        names = " or ".join(_type_name(option) for option in non_none)
        raise ConfigError(f"{key}: expected {names}, got {value!r}")
    if len(non_none) != 1:
        raise ConfigError(f"{key}: unsupported annotation {' | '.join(map(str, options))}")
    try:
        return _coerce(value, non_none[0], key)
    except ConfigError as error:
        if not str(error).startswith(f"{key}: expected "):
            raise  # the right type with a bad value, e.g. a non-finite float
        raise ConfigError(f"{key}: expected {_type_name(non_none[0])} or null, got {value!r}") from None


def _coerce_float(value: Any, key: str) -> float:
    """A finite float from a number or a string Python reads as one (YAML 1.1 reads "3e-4" as a string)."""
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            raise ConfigError(f"{key}: {value!r} is too large for a float") from None
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value)
    if number is None:
        raise ConfigError(f"{key}: expected float, got {value!r}")
    if not math.isfinite(number):
        raise ConfigError(f"{key}: must be a finite number, got {value!r}")
    return number


def build_section(cls: type, values: Mapping[str, Any], prefix: str = "") -> Any:
    hints = typing.get_type_hints(cls)
    known = [field.name for field in dataclasses.fields(cls)]
    for name in values:
        if name not in known:
            where = f"{prefix}.{name}" if prefix else str(name)
            raise ConfigError(
                f"{where}: unknown key; known keys{' in ' + prefix if prefix else ''}: {', '.join(known)}"
            )
    arguments = {}
    for name, value in values.items():
        key = f"{prefix}.{name}" if prefix else name
        arguments[name] = _coerce(value, hints[name], key)
    try:
        return cls(**arguments)
    except ConfigError:
        raise
    except ValueError as error:
        # e.g. ModelConfig's own validation; its messages already name the key.
        raise ConfigError(str(error)) from None


def config_from_dict(values: Mapping[str, Any]) -> TrainConfig:
    """Build and validate a :class:`TrainConfig` from a nested mapping (missing keys take defaults)."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"a config must be a mapping of sections, got {type(values).__name__}")
    return build_section(TrainConfig, values)


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``"section.key=value"`` into the key path and the YAML-parsed value."""
    shown = text if len(text) <= 120 else f"{text[:120]}... ({len(text):,} characters)"
    if "=" not in text:
        raise ConfigError(f"bad override {shown!r}: expected key=value, e.g. ppo.lr=1e-4")
    key, raw = text.split("=", 1)
    key = key.strip()
    path = key.split(".")
    if not key or any(not part or not part.replace("_", "").isalnum() for part in path):
        raise ConfigError(f"bad override {shown!r}: the key must be dotted names, e.g. ppo.lr=1e-4")
    try:
        value = load_yaml_text(raw) if raw.strip() else ""
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"bad override {shown!r}: the value is not valid YAML ({problem})") from None
    return path, value


def apply_overrides(values: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """A copy of the nested mapping ``values`` with ``key=value`` overrides applied (validated later)."""
    result = plain_value(dict(values))
    for text in overrides:
        path, value = parse_override(text)
        node = result
        for depth, part in enumerate(path[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise ConfigError(f"bad override {text!r}: {'.'.join(path[: depth + 1])} is not a section")
            node = child
        node[path[-1]] = value
    return result


# ------------------------------------------------------------------ YAML
MAX_CONFIG_BYTES = 1 << 20
"""Largest config file read (1 MiB; the shipped configs are about 2 KiB)."""
MAX_YAML_DEPTH = 16
"""Deepest nesting of mappings and lists in a config or a ``--set`` value (a config needs 3)."""
MAX_NUMBER_DIGITS = 64
"""Longest integer literal read (Python refuses over 4,300 digits with advice that does not apply here)."""


class ConfigLoader(yaml.SafeLoader):
    """PyYAML's ``SafeLoader`` for configs: no anchors or aliases, bounded nesting, no duplicate keys.

    A config never needs an alias, and expanding nested aliases (a "billion laughs" file) costs
    time and memory exponential in the file's size, so anchors and aliases are refused; nesting
    past :data:`MAX_YAML_DEPTH` is refused before it can exhaust Python's stack; a key given
    twice in one mapping is refused rather than the last one silently winning.  Each refusal is
    a ``yaml.MarkedYAMLError`` whose mark gives the line.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _refusal(f"an alias (*{event.anchor}) is not allowed in a config: write the value out", event)
        if getattr(event, "anchor", None) is not None:
            raise _refusal(f"an anchor (&{event.anchor}) is not allowed in a config: write the value out", event)
        self.depth += 1
        if self.depth > MAX_YAML_DEPTH:
            raise _refusal(f"nested more than {MAX_YAML_DEPTH} levels deep", event)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable):  # an unhashable key is PyYAML's own error below
                if key in seen:
                    raise _refusal(f"duplicate key {key!r:.80}", key_node)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > MAX_NUMBER_DIGITS:
            raise _refusal(f"a number of {len(node.value):,} characters (at most {MAX_NUMBER_DIGITS})", node)
        return super().construct_yaml_int(node)


ConfigLoader.add_constructor("tag:yaml.org,2002:int", ConfigLoader.construct_yaml_int)


def _refusal(problem: str, where: Any) -> yaml.MarkedYAMLError:
    return yaml.MarkedYAMLError(problem=problem, problem_mark=where.start_mark)


def load_yaml_text(text: str) -> Any:
    """Parse YAML ``text`` with :class:`ConfigLoader`; a ``yaml.YAMLError`` for anything refused."""
    return yaml.load(text, Loader=ConfigLoader)  # ConfigLoader is a SafeLoader


def yaml_problem(error: yaml.YAMLError) -> str:
    """One line for a YAML error: ``line N: problem`` when PyYAML marked where."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1}: {problem}"
    return str(error).splitlines()[0]


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file as a mapping of sections; any problem is a one-line :class:`ConfigError`.

    The file must be a regular file of at most :data:`MAX_CONFIG_BYTES`, UTF-8, YAML that
    :class:`ConfigLoader` accepts, and a non-empty mapping.
    """
    file = Path(path)
    try:
        file.stat()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except OSError as error:
        raise ConfigError(f"{file}: cannot read: {error.strerror or error}") from None
    try:
        check_input_file(file, "a config file")  # a FIFO or a device, refused unopened
    except ValueError as error:
        raise ConfigError(str(error)) from None
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{file}: larger than {MAX_CONFIG_BYTES:,} bytes, not a config file")
        values = load_yaml_text(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{file}: not a UTF-8 text file (byte {error.start}: {error.reason})") from None
    except OSError as error:
        raise ConfigError(f"{file}: cannot read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{file}: not a valid config file: {yaml_problem(error)}") from None
    if values is None:
        raise ConfigError(f"{file}: empty (no keys); a config file sets at least one key, e.g. name")
    if not isinstance(values, dict):
        raise ConfigError(f"{file}: expected a mapping of sections at the top level, got {type(values).__name__}")
    return values


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Load ``path`` (or the defaults when None), apply ``overrides``, validate: a :class:`TrainConfig`."""
    values = read_yaml(path) if path is not None else {}
    return config_from_dict(apply_overrides(values, overrides))


def config_to_yaml(config: TrainConfig) -> str:
    """The config as YAML text (loads back to an equal config)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)
