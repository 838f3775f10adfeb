"""``python -m training.tools.widen``: a wider copy of an agent's network that plays exactly as the original.

Usage::

    python -m training.tools.widen AGENT --hidden-sizes 512 256 [--line-width 64] --out FILE [--seed 0]

``AGENT`` is a shipped agent's name (``champion``) or an agent file / checkpoint.
The copy has the same depth and wider layers (the trunk's ``hidden_sizes``, and for
the ``board`` architecture the per-line and per-island networks' ``line_width``).
Every weight of the original sits in the top-left block of its wider layer; a new
unit gets fresh incoming weights (the network's own initialisation, from
``--seed``) and *zero* outgoing weights, so the wider network computes the very
same logits and value as the original (a function-preserving widening, as in
Net2Net with zero-initialised fan-out), and training can then use the new units:
their outgoing weights get gradients from the first update.  The output is an
agent file (``meta``: ``widened_from``, the source's name or path; ``source_meta``,
its own ``meta``, so its reward settings stay readable) that ``init_from:`` takes.

Bad input (an agent that does not load, a size that is not wider than the
original's, a different depth, an existing output) is one line
``widen: error: ...`` and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

from kahuna_env.actions import NUM_ACTIONS
from policy.agent import load_agent
from policy.model import OBSERVATION_SIZE, ActorCritic, ModelConfig
from training.ppo.checkpoint import export_agent

PROG = "widen"


def _segments(config: ModelConfig) -> dict[str, tuple[list[int], list[int]]]:
    """Each linear layer's name -> (input segment widths, output segment widths) for ``config``'s network.

    A layer whose input is a concatenation (the value network reads the trunk and the
    lines' mean) has one segment per part, so a widened part keeps its place.
    """
    sizes = [OBSERVATION_SIZE, *config.hidden_sizes]
    width = sizes[-1]
    layers = {f"trunk.{2 * k}": ([sizes[k]], [sizes[k + 1]]) for k in range(len(sizes) - 1)}
    if config.architecture == "mlp":
        return {**layers, "policy_head": ([width], [NUM_ACTIONS]), "value_head": ([width], [1])}
    line, half = config.line_width, config.line_width // 2
    return {
        **layers,
        "line_own": ([3], [line]),
        "line_from_a": ([ActorCritic._island_width], [line]),
        "line_from_b": ([ActorCritic._island_width], [line]),
        "line_from_trunk": ([width], [line]),
        "line_net.0": ([line], [line]),
        "line_head": ([line], [6]),
        "island_from_self": ([ActorCritic._island_width], [half]),
        "island_from_trunk": ([width], [half]),
        "island_head": ([half], [1]),
        "turn_head": ([width], [5]),
        "value_net.0": ([width, line], [line]),
        "value_head": ([line], [1]),
    }


def _blocks(old: list[int], new: list[int]) -> list[tuple[slice, slice]]:
    """Per segment: (the old positions, where they go in the new layout)."""
    pairs, old_start, new_start = [], 0, 0
    for old_width, new_width in zip(old, new, strict=True):
        pairs.append((slice(old_start, old_start + old_width), slice(new_start, new_start + old_width)))
        old_start, new_start = old_start + old_width, new_start + new_width
    return pairs


def widen(model: ActorCritic, hidden_sizes: list[int], line_width: int, seed: int) -> ActorCritic:
    """A wider network computing what ``model`` computes (see the module docstring); ``ValueError`` if not wider."""
    config = model.config
    if len(hidden_sizes) != len(config.hidden_sizes):
        raise ValueError(
            f"--hidden-sizes has {len(hidden_sizes)} layers; the network has {len(config.hidden_sizes)} "
            f"({list(config.hidden_sizes)}): widening keeps the depth"
        )
    if any(new < old for new, old in zip(hidden_sizes, config.hidden_sizes, strict=True)):
        raise ValueError(f"--hidden-sizes {hidden_sizes} is narrower than the network's {list(config.hidden_sizes)}")
    if line_width < config.line_width or line_width % 2:
        raise ValueError(f"--line-width must be even and >= the network's {config.line_width}, got {line_width}")
    wide_config = dataclasses.replace(config, hidden_sizes=tuple(hidden_sizes), line_width=line_width)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        wide = ActorCritic(wide_config)
    old_segments, new_segments = _segments(config), _segments(wide_config)
    old_state = model.state_dict()
    state = {key: value.detach().clone() for key, value in wide.state_dict().items()}
    for name, (old_in, old_out) in old_segments.items():
        new_in, new_out = new_segments[name]
        weight, bias = state[f"{name}.weight"], state[f"{name}.bias"]
        old_weight, old_bias = old_state[f"{name}.weight"], old_state[f"{name}.bias"]
        for old_rows, new_rows in _blocks(old_out, new_out):
            weight[new_rows] = 0.0  # an old unit reads nothing from a new one ...
            for old_columns, new_columns in _blocks(old_in, new_in):
                weight[new_rows, new_columns] = old_weight[old_rows, old_columns]  # ... and what it read before
            bias[new_rows] = old_bias[old_rows]
    wide.load_state_dict(state)
    return wide.eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="A wider copy of an agent's network that plays the same.")
    parser.add_argument("agent", help="shipped agent name or agent file / checkpoint")
    parser.add_argument("--hidden-sizes", type=int, nargs="+", required=True, help="the trunk's new widths")
    parser.add_argument("--line-width", type=int, default=None, help="the per-line network's new width (board)")
    parser.add_argument("--out", required=True, help="the agent file to write (must not exist)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the new units' incoming weights")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        parser.error(f"{out} exists; choose another --out")
    try:
        agent = load_agent(args.agent)
    except (OSError, ValueError) as error:
        parser.error(str(error).splitlines()[0] if str(error) else type(error).__name__)
    try:
        wide = widen(agent.model, args.hidden_sizes, args.line_width or agent.model.config.line_width, args.seed)
    except ValueError as error:
        parser.error(str(error))
    meta = {"widened_from": args.agent, "widen_seed": args.seed, "source_meta": dict(agent.meta or {})}
    export_agent(out, wide, meta)
    print(
        f"{PROG}: {args.agent} {list(agent.model.config.hidden_sizes)}/{agent.model.config.line_width} -> "
        f"{out} {list(wide.config.hidden_sizes)}/{wide.config.line_width}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
