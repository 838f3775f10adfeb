"""Self-play PPO for Kahuna, top to bottom: :func:`train` runs a whole training run, :func:`ppo_update` one update.

One update:

1. split ``rollout.num_games`` games among the opponent kinds of the pool
   (self-play, past snapshots, baselines) and play them all to the end
   (:class:`~training.rollout.SelfPlayCollector`): every learner decision is
   a transition of its seat's trajectory, with per-seat GAE;
2. run ``ppo.update_epochs`` epochs of clipped-PPO minibatch steps on the
   learner's decisions (:func:`ppo_update`);
3. every ``pool.snapshot_every`` updates, add a snapshot to the pool;
   periodically evaluate against the baselines; log; checkpoint.

Determinism: all randomness of update ``u`` comes from generators seeded by
``(seed, u)``; the model is initialised from ``seed`` without touching the
global torch generator; torch runs with a fixed number of threads.  So a
run resumed from a checkpoint repeats exactly what the uninterrupted run
does (on the same machine).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from kahuna_env.engine import KahunaConfig
from training.checkpoint import build_checkpoint, export_agent, load_checkpoint, save_checkpoint
from training.config import ConfigError, PPOConfig, TrainConfig, config_from_dict, config_to_yaml
from training.metrics import METRICS_FILE, PLOT_FILE, MetricsLogger, plot_learning_curves
from training.model import ActorCritic
from training.pool import KINDS, OpponentPool
from training.quick_eval import QuickEvalResult, evaluate_policy
from training.rollout import Rollout, SelfPlayCollector

FINAL_AGENT = "final_agent.pt"
FINAL_EVAL = "final_eval.json"


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


def ppo_losses(
    logits: torch.Tensor,
    new_values: torch.Tensor,
    actions: torch.Tensor,
    old_log_probs: torch.Tensor,
    old_values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    ppo: PPOConfig,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The clipped PPO loss of one minibatch from masked ``logits``; returns ``(loss, parts)``.

    Masked logits carry ``MASKED_LOGIT``: illegal actions have probability
    exactly 0, so they add nothing to the entropy, and no gradient reaches
    them (the mask is applied with ``torch.where``).
    """
    log_probs_all = torch.log_softmax(logits, dim=-1)
    new_log_probs = log_probs_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    # softmax rather than log_probs_all.exp(): exp of the masked entries' huge negative log-probabilities
    # takes a slow path (about 10x slower); both give exactly 0 there.
    entropy = -(torch.softmax(logits, dim=-1) * log_probs_all).sum(dim=-1)
    log_ratio = new_log_probs - old_log_probs
    ratio = log_ratio.exp()
    if ppo.norm_adv and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    policy_loss = torch.max(
        -advantages * ratio, -advantages * torch.clamp(ratio, 1 - ppo.clip_coef, 1 + ppo.clip_coef)
    ).mean()
    if ppo.clip_vloss:
        clipped_values = old_values + torch.clamp(new_values - old_values, -ppo.clip_coef, ppo.clip_coef)
        value_loss = 0.5 * torch.max((new_values - returns) ** 2, (clipped_values - returns) ** 2).mean()
    else:
        value_loss = 0.5 * ((new_values - returns) ** 2).mean()
    entropy_mean = entropy.mean()
    loss = policy_loss - ppo.ent_coef * entropy_mean + ppo.vf_coef * value_loss
    with torch.no_grad():
        parts = {
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy": entropy_mean.detach(),
            "old_approx_kl": (-log_ratio).mean(),
            "approx_kl": ((ratio - 1) - log_ratio).mean(),
            "clipfrac": ((ratio - 1.0).abs() > ppo.clip_coef).float().mean(),
        }
    return loss, parts


def ppo_update(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    ppo: PPOConfig,
    generator: torch.Generator,
) -> dict[str, float]:
    """``ppo.update_epochs`` epochs of minibatch steps on ``rollout``; returns the averaged loss statistics."""
    observations = torch.from_numpy(rollout.observations)
    masks = torch.from_numpy(rollout.masks)
    actions = torch.from_numpy(rollout.actions)
    old_log_probs = torch.from_numpy(rollout.log_probs)
    old_values = torch.from_numpy(rollout.values)
    advantages = torch.from_numpy(rollout.advantages)
    returns = torch.from_numpy(rollout.returns)
    count = len(rollout)
    totals: dict[str, float] = {}
    steps = 0
    epochs = 0
    model.train()
    for _ in range(ppo.update_epochs):
        epochs += 1
        permutation = torch.randperm(count, generator=generator)
        kl_sum, kl_steps = 0.0, 0
        for start in range(0, count, ppo.minibatch_size):
            index = permutation[start : start + ppo.minibatch_size]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ppo.bf16):
                logits, new_values = model(observations[index], masks[index])
            loss, parts = ppo_losses(
                logits.float(),
                new_values.float(),
                actions[index],
                old_log_probs[index],
                old_values[index],
                advantages[index],
                returns[index],
                ppo,
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), ppo.max_grad_norm)
            optimizer.step()
            for key, value in parts.items():
                totals[key] = totals.get(key, 0.0) + float(value)
            steps += 1
            kl_sum += float(parts["approx_kl"])
            kl_steps += 1
        if ppo.target_kl is not None and kl_sum / kl_steps > ppo.target_kl:
            break
    model.eval()
    stats = {key: value / steps for key, value in totals.items()}
    variance = float(np.var(rollout.returns))
    residual = float(np.var(rollout.returns - rollout.values))
    stats["explained_variance"] = float("nan") if variance == 0 else 1 - residual / variance
    stats["epochs"] = float(epochs)
    return stats


def learning_rate(config: TrainConfig, update: int) -> float:
    """The learning rate of ``update`` (1-based): linear annealing to ``min_lr_fraction * lr`` when enabled."""
    ppo = config.ppo
    if not ppo.anneal_lr:
        return ppo.lr
    remaining = 1.0 - (update - 1) / config.total_updates
    return ppo.lr * (ppo.min_lr_fraction + (1 - ppo.min_lr_fraction) * remaining)


def build_model(config: TrainConfig) -> ActorCritic:
    """The initial network, seeded by ``config.seed`` without touching the global torch generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return ActorCritic(config.model)


def _rollout_scalars(rollout: Rollout) -> dict[str, float]:
    stats = rollout.stats
    scalars: dict[str, float] = {
        "charts/episodic_return": float(np.mean(stats["episodic_returns"])) if len(stats["episodic_returns"]) else 0.0,
        "charts/decisions": float(stats["decisions"]),
        "charts/game_length": stats["actions"] / stats["games"],
    }
    for kind in KINDS[1:]:
        wins, draws, losses = stats["results"][kind]
        games = wins + draws + losses
        if games:
            scalars[f"rollout/win_rate_vs_{kind}"] = wins / games
    wins, draws, losses = stats["first_seat_results"]
    if wins + draws + losses:
        scalars["rollout/selfplay_first_seat_win_rate"] = wins / (wins + draws + losses)
    return scalars


def _evaluate(model: ActorCritic, config: TrainConfig, games: int) -> dict[str, QuickEvalResult]:
    game_config = KahunaConfig(variant=config.env.variant, discard_rule=config.env.discard_rule)
    return {
        name: evaluate_policy(model, name, games, seed=config.eval.seed, game_config=game_config)
        for name in config.eval.opponents
    }


def _eval_scalars(results: dict[str, QuickEvalResult]) -> dict[str, float]:
    scalars = {}
    for name, result in results.items():
        scalars[f"eval/win_rate_vs_{name}"] = result.win_rate
        scalars[f"eval/margin_vs_{name}"] = result.mean_margin
    return scalars


def train(
    config: TrainConfig,
    run_dir: str | Path,
    resume: bool = False,
    log: Any = print,
) -> TrainSummary:
    """Run (or with ``resume``, continue from ``<run_dir>/checkpoints/latest.pt``) a training run in ``run_dir``.

    When resuming, ``config`` must be the checkpoint's config (possibly with
    overrides such as a larger ``total_updates``); see :func:`resume_config`.
    """
    torch.set_num_threads(config.threads)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(config_to_yaml(config), encoding="utf-8")

    model = build_model(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.ppo.lr, eps=config.ppo.adam_eps)
    pool = OpponentPool(config.model, config.pool.max_snapshots)
    counters: dict[str, Any] = {"update": 0, "global_step": 0, "actions": 0, "games": 0, "train_seconds": 0.0}
    if resume:
        checkpoint = load_checkpoint(run_dir / "checkpoints" / "latest.pt")
        model.load_state_dict(checkpoint["model_state"])
        optimizer.load_state_dict(checkpoint["optimizer_state"])
        pool.load_state(checkpoint["pool"])
        counters.update(checkpoint["counters"])
        if "rng" in checkpoint:
            torch.set_rng_state(checkpoint["rng"]["torch"])
        log(f"resuming {run_dir} after update {counters['update']} ({counters['global_step']} decisions)")
    start_update = int(counters["update"])
    if start_update >= config.total_updates:
        log(f"nothing to do: the run already has {start_update} of {config.total_updates} updates")
    model.eval()

    game_config = KahunaConfig(variant=config.env.variant, discard_rule=config.env.discard_rule)
    collector = SelfPlayCollector(
        config.rollout.num_games,
        game_config,
        gamma=config.ppo.gamma,
        gae_lambda=config.ppo.gae_lambda,
        win_reward=config.reward.win,
        island_shaping=config.reward.island_shaping,
        workers=config.rollout.workers,
        model_config=config.model,
    )
    logger = MetricsLogger(
        run_dir,
        tensorboard=config.logging.tensorboard,
        resume_update=start_update if resume else None,
        resume_step=int(counters["global_step"]) if resume else None,
    )
    if not resume:
        logger.add_text("config", "```\n" + config_to_yaml(config) + "```")

    from tqdm import tqdm

    progress = tqdm(
        total=config.total_updates,
        initial=start_update,
        unit="update",
        disable=not config.logging.progress,
        dynamic_ncols=True,
    )
    process_start = time.perf_counter()
    earlier_seconds = float(counters["train_seconds"])  # wall time of the run before this process
    busy_seconds = 0.0  # collection + update time in this process
    process_decisions = 0
    final_eval: dict[str, QuickEvalResult] = {}
    last_eval: dict[str, QuickEvalResult] = {}
    update = start_update
    try:
        for update in range(start_update + 1, config.total_updates + 1):
            update_start = time.perf_counter()
            lr = learning_rate(config, update)
            for group in optimizer.param_groups:
                group["lr"] = lr
            rng = np.random.default_rng([config.seed, update])
            generator = torch.Generator().manual_seed(int(rng.integers(2**63)))

            # 1. Collect: play the update's games to the end.
            assignment = pool.assign(
                config.rollout.num_games, config.pool.shares(), rng, config.pool.snapshots_per_update
            )
            rollout = collector.collect(model, pool, assignment, rng)
            collect_seconds = time.perf_counter() - update_start

            # 2. Learn.
            losses = ppo_update(model, optimizer, rollout, config.ppo, generator)
            train_seconds = time.perf_counter() - update_start
            busy_seconds += train_seconds
            process_decisions += len(rollout)
            counters["update"] = update
            counters["global_step"] += len(rollout)
            counters["actions"] += rollout.stats["actions"]
            counters["games"] += rollout.stats["games"]

            # 3. Pool, evaluation, logging, checkpoint.
            if update % config.pool.snapshot_every == 0:
                pool.add(model, update)
            elapsed_minutes = (earlier_seconds + time.perf_counter() - process_start) / 60
            last = update == config.total_updates or (
                config.max_minutes is not None and elapsed_minutes >= config.max_minutes
            )
            eval_start = time.perf_counter()
            results: dict[str, QuickEvalResult] = {}
            if last and config.eval.final_games:
                results = final_eval = _evaluate(model, config, config.eval.final_games)
            elif config.eval.every and update % config.eval.every == 0:
                results = _evaluate(model, config, config.eval.games)
            if results:
                last_eval = results
            scalars = {
                "charts/learning_rate": lr,
                "charts/SPS": process_decisions / busy_seconds,
                "charts/actions_per_second": rollout.stats["actions"] / train_seconds,
                **_rollout_scalars(rollout),
                **{f"losses/{key}": value for key, value in losses.items() if key not in ("epochs",)},
                "losses/epochs": losses["epochs"],
                **_eval_scalars(results),
                "time/collect_seconds": collect_seconds,
                "time/update_seconds": train_seconds - collect_seconds,
                "time/eval_seconds": time.perf_counter() - eval_start,
            }
            logger.log(update, counters["global_step"], scalars)

            counters["train_seconds"] = earlier_seconds + (time.perf_counter() - process_start)
            if update % config.checkpoint.every == 0 or last:
                payload = build_checkpoint(
                    model,
                    optimizer,
                    config.to_dict(),
                    counters,
                    pool.state(),
                    meta={"run": config.name, "update": update, "global_step": counters["global_step"]},
                )
                save_checkpoint(run_dir, payload, keep_last=config.checkpoint.keep_last)

            postfix = {"SPS": f"{process_decisions / busy_seconds:,.0f}"}
            if "rollout/win_rate_vs_greedy" in scalars:
                postfix["train_vs_greedy"] = f"{scalars['rollout/win_rate_vs_greedy']:.2f}"
            for name, result in last_eval.items():
                postfix[f"eval_{name}"] = f"{result.win_rate:.2f}"
            progress.set_postfix(postfix, refresh=False)
            progress.update(1)
            if last:
                break
    finally:
        progress.close()
        logger.close()
        collector.close()

    meta = {"run": config.name, "update": update, "global_step": int(counters["global_step"])}
    export_agent(run_dir / FINAL_AGENT, model, meta)
    if final_eval:
        summary = {
            name: {
                **dataclasses.asdict(result),
                "win_rate": result.win_rate,
                "win_rate_ci95": list(result.win_rate_interval()),
            }
            for name, result in final_eval.items()
        }
        (run_dir / FINAL_EVAL).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if config.logging.plot and (run_dir / METRICS_FILE).exists():
        plot_learning_curves(run_dir / METRICS_FILE, run_dir / PLOT_FILE)
    wall = time.perf_counter() - process_start
    return TrainSummary(
        run_dir=run_dir,
        updates=int(counters["update"]),
        global_step=int(counters["global_step"]),
        actions=int(counters["actions"]),
        wall_seconds=wall,
        decisions_per_second=process_decisions / busy_seconds if busy_seconds else 0.0,
        final_eval=final_eval,
    )


def resume_config(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """The config stored in ``<run_dir>/checkpoints/latest.pt``, with ``key=value`` overrides applied."""
    from training.checkpoint import latest_checkpoint
    from training.config import apply_overrides

    checkpoint = load_checkpoint(latest_checkpoint(run_dir))
    try:
        return config_from_dict(apply_overrides(checkpoint["config"], overrides))
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ValueError(f"{run_dir}: the checkpoint's config is unusable: {error}") from None
