"""Play Kahuna with an exported agent through onnxruntime and numpy alone (no torch).

    kahuna-export champion --format onnx --out champion.onnx
    python examples/onnx_play.py champion.onnx [--games 2] [--opponent greedy] [--seed 0]

The ONNX file (``kahuna-export --format onnx``) takes ``observation`` (float32,
``(batch, 246)``) and ``action_mask`` (int8, ``(batch, 179)``) and returns
``logits`` (illegal actions at -1e9) and ``value``; the agent plays the greedy
action, ``argmax(logits)``.  The games are those of the AEC env
``kahuna_env.env()``; the exported agent takes ``player_0`` in even games and
``player_1`` in odd ones against a baseline (``kahuna_env.agents``).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import onnxruntime

import kahuna_env
from kahuna_env.agents import choose_action, make_agent


def main(argv: list[str] | None = None) -> int:
    """Play ``--games`` games of the ONNX agent against a baseline; prints one line per game and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="an ONNX file written by kahuna-export --format onnx")
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--opponent", default="greedy", help="a baseline: random, greedy or mcts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    session = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    opponent = make_agent(args.opponent)
    rng = np.random.default_rng(args.seed)
    env = kahuna_env.env()
    wins = 0
    for game in range(args.games):
        onnx_seat = "player_0" if game % 2 == 0 else "player_1"
        env.reset(seed=args.seed + game)
        opponent.reset(seed=args.seed + game)
        for agent in env.agent_iter():
            observation, _, termination, truncation, info = env.last()
            if termination or truncation:
                env.step(None)
                continue
            if agent == onnx_seat:
                logits, _value = session.run(
                    ["logits", "value"],
                    {"observation": observation["observation"][None], "action_mask": observation["action_mask"][None]},
                )
                action = int(np.argmax(logits[0]))
            else:
                action = choose_action(opponent, env.unwrapped.game, rng)
            env.step(action)
        winner = info["winner"]
        won = winner == (0 if onnx_seat == "player_0" else 1)  # winner: 0, 1, or -1 for a draw
        wins += int(won)
        print(f"game {game}: onnx agent as {onnx_seat}, scores {info['scores']}, {'won' if won else 'did not win'}")
    env.close()
    print(f"onnxruntime {onnxruntime.__version__}: the onnx agent won {wins} of {args.games} games vs {args.opponent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
