"""The arena: tools that measure and play Kahuna agents (docs/EVALUATION.md).

* :mod:`kahuna_arena.entrants` — the entrant strings (baselines, agent files) and the agents they name.
* :mod:`kahuna_arena.match` — the one play loop every tool uses, and an evaluation's seeded games.
* :mod:`kahuna_arena.records` — the one game-record format (write, read, validate) and the one replayer.
* :mod:`kahuna_arena.evaluation` — seat-balanced round robins, in worker processes.
* :mod:`kahuna_arena.report` — per-pairing tallies, ratings, the table and the JSON.
* :mod:`kahuna_arena.stats` — ``Tally``, Wilson intervals, Bradley–Terry ratings.
* :mod:`kahuna_arena.ladder` — one ladder over a results store: the fit, scheduling, report imports, the runs plot.
* :mod:`kahuna_env.cli` — one-line errors and argument types shared by the command-line tools.
* :mod:`kahuna_arena.eval_cli`, :mod:`kahuna_arena.play`, :mod:`kahuna_arena.replay`, :mod:`kahuna_arena.demo`,
  :mod:`kahuna_arena.ratings_cli` —
  ``kahuna-eval``, ``kahuna-play``, ``kahuna-replay``, ``kahuna-demo``, ``kahuna-ratings``.

Importing the arena does not import torch: only an entrant that is an agent
file loads :mod:`training` (and torch), when it is built.
"""

from kahuna_env.version import __version__

__all__ = ["__version__"]
