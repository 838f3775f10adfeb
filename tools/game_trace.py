"""The md5 of 30 seeded games played through the public API: a refactor of the core must leave it unchanged.

    python tools/game_trace.py            # prints the digest and the number of steps

Each game (seeds 0..29, cycling through the variants, discard rules and handicaps) is played by a
seeded random chooser through :class:`kahuna_env.engine.KahunaGame`; every step adds to the digest the
action, the legal-action mask, both players' observations, the full state vector and the position JSON,
and at the end the outcome.  The same digest before and after a change means the same games, bit for bit,
as a user sees them (the names of Python attributes are not part of it).
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation, encode_state

GAMES = 30


def trace(games: int = GAMES) -> tuple[str, int]:
    """``(md5 hex digest, steps)`` of ``games`` seeded games."""
    digest = hashlib.md5()
    steps = 0
    for seed in range(games):
        config = KahunaConfig(
            variant=("standard", "planning")[seed % 2],
            discard_rule=("instead_of_play", "hand_limit")[seed // 2 % 2],
            handicap=(seed % 2, 1 + seed % 3) if seed % 5 == 4 else None,
            first_player=seed // 3 % 2,
        )
        game = KahunaGame(config, seed=seed)
        rng = np.random.default_rng(1000 + seed)
        while not game.is_over:
            mask = game.action_mask()
            for part in (mask, encode_observation(game, 0), encode_observation(game, 1), encode_state(game)):
                digest.update(np.ascontiguousarray(part).tobytes())
            digest.update(json.dumps(game.to_dict(), sort_keys=True).encode())
            action = int(rng.choice(np.flatnonzero(mask)))
            digest.update(action.to_bytes(2, "little"))
            game.step(action)
            steps += 1
        digest.update(json.dumps([game.winner, game.scores, game.to_dict()], sort_keys=True).encode())
    return digest.hexdigest(), steps


if __name__ == "__main__":
    value, steps = trace()
    print(f"{value}  {GAMES} games, {steps} steps (KAHUNA_JIT={os.environ.get('KAHUNA_JIT', '1')})")
