"""``python -m training.tools.soup``: one network whose weights are the average of several agents' (a model soup).

Usage::

    python -m training.tools.soup AGENT AGENT [AGENT ...] --out FILE [--weights W W ...]

Each ``AGENT`` is a shipped agent's name (``champion``) or an agent file / checkpoint.
The output is an agent file whose every weight is the (``--weights``-weighted, by
default uniform) average of the agents' weights, as in Wortsman et al., *Model soups*
(ICML 2022).  Averaging only makes sense for networks that share an ancestor and
were trained apart for a while (several sittings started from the same agent, as the
champion runs are): the average of unrelated networks plays like none of them.  The
file's ``meta`` records the ingredients (``soup``: each one's name or path, its weight
and the sha256 of its weights) and the first ingredient's ``meta`` (``source_meta``,
so its provenance and reward settings stay readable); ``init_from:`` and
``kahuna-eval`` take it like any agent file.

Bad input (fewer than two agents, an agent that does not load, networks of
different shapes, reward settings that differ without ``--average-rewards``, weights that are not positive
finite numbers or not one per agent, an existing output) is one line
``soup: error: ...`` and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from kahuna_env.cli import first_line
from policy.agent import DEFAULT_REWARD, PolicyAgent, load_agent
from policy.model import ActorCritic
from policy.reward import reward_record
from training.ppo.checkpoint import export_agent
from training.ppo.provenance import weights_key

PROG = "soup"


def soup(models: Sequence[ActorCritic], weights: Sequence[float] | None = None) -> ActorCritic:
    """A new network with the weighted average of ``models``' weights; ``ValueError`` if they differ in shape."""
    if len(models) < 2:
        raise ValueError(f"a soup needs at least two agents, got {len(models)}")
    weights = [1.0] * len(models) if weights is None else [float(w) for w in weights]
    if len(weights) != len(models):
        raise ValueError(f"--weights has {len(weights)} values for {len(models)} agents")
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValueError(f"--weights must be positive finite numbers, got {weights}")
    first = models[0].config
    for index, model in enumerate(models[1:], start=2):
        if model.config != first:
            raise ValueError(f"agent {index}'s network ({model.config}) differs from agent 1's ({first})")
    total = sum(weights)
    states = [model.state_dict() for model in models]
    average = {
        name: sum((w / total) * state[name].to(torch.float32) for w, state in zip(weights, states, strict=True))
        for name in states[0]
    }
    result = ActorCritic(first)
    result.load_state_dict({name: value.to(states[0][name].dtype) for name, value in average.items()})
    return result.eval()


def soup_reward(
    rewards: Sequence[Mapping[str, float] | None], weights: Sequence[float], average: bool
) -> dict[str, float] | None:
    """The reward settings the soup's file records (``meta["reward"]``): the agents' own when they agree.

    Agents trained with different settings (a ``reward.margin`` sitting and one without) have critics
    that estimate different returns; only with ``average`` is their weighted average recorded (the
    averaged critic estimates roughly that), else it is a one-line ``ValueError``.  An agent whose
    file records none counts as :data:`policy.agent.DEFAULT_REWARD`.
    """
    settings = [{**DEFAULT_REWARD, **(reward or {})} for reward in rewards]
    if all(setting == settings[0] for setting in settings):
        return None if all(reward is None for reward in rewards) else settings[0]
    if not average:
        raise ValueError(
            "the agents were trained with different reward settings ("
            + "; ".join(", ".join(f"{k}={v:g}" for k, v in sorted(setting.items())) for setting in settings)
            + "): pass --average-rewards to record their weighted average"
        )
    total = sum(weights)
    keys = {key for setting in settings for key in setting}
    return reward_record(
        {key: sum(w * s.get(key, 0.0) for w, s in zip(weights, settings, strict=True)) / total for key in keys}
    )


def _load(spec: str) -> PolicyAgent:
    try:
        return load_agent(spec)
    except (OSError, ValueError) as error:
        raise ValueError(f"{spec}: {first_line(error)}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Average the weights of several agents' networks.")
    parser.add_argument("agents", nargs="+", help="shipped agent names or agent files / checkpoints (two or more)")
    parser.add_argument("--out", required=True, help="the agent file to write (must not exist)")
    parser.add_argument("--weights", type=float, nargs="+", default=None, help="one positive weight per agent")
    parser.add_argument(
        "--average-rewards",
        action="store_true",
        help="allow agents trained with different reward settings (records their weighted average)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        parser.error(f"{out} exists; choose another --out")
    weights = args.weights or [1.0] * len(args.agents)
    try:
        agents = [_load(spec) for spec in args.agents]
        model = soup([agent.model for agent in agents], weights)
        reward = soup_reward([agent.reward for agent in agents], weights, args.average_rewards)
    except ValueError as error:
        parser.error(str(error))
    meta = {
        "soup": [
            {"agent": spec, "weight": weight, "weights": weights_key(agent.model)}
            for spec, weight, agent in zip(args.agents, weights, agents, strict=True)
        ],
        "source_meta": dict(agents[0].meta or {}),
    }
    if reward is not None:
        meta["reward"] = reward
    export_agent(out, model, meta)
    print(f"{PROG}: {len(agents)} agents -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
