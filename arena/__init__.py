"""The arena: tools that measure and play Kahuna agents (docs/EVALUATION.md).

* :mod:`arena.entrants` — the entrant strings (baselines, agent files) and the agents they name.
* :mod:`arena.match` — the one play loop every tool uses, and an evaluation's seeded games.
* :mod:`arena.records` — the one game-record format (write, read, validate) and the one replayer.
* :mod:`arena.evaluation` — seat-balanced round robins, in worker processes.
* :mod:`arena.report` — per-pairing tallies, ratings, the table and the JSON.
* :mod:`arena.stats` — ``Tally``, Wilson intervals, Bradley–Terry ratings.
* :mod:`arena.ladder` — one ladder over a results store: the fit, scheduling, report imports, the runs plot.
* :mod:`kahuna_env.cli` — one-line errors and argument types shared by the command-line tools.
* :mod:`arena.eval_cli`, :mod:`arena.play`, :mod:`arena.replay`, :mod:`arena.demo`, :mod:`arena.ratings_cli` —
  ``kahuna-eval``, ``kahuna-play``, ``kahuna-replay``, ``kahuna-demo``, ``kahuna-ratings``.

Importing the arena does not import torch: only an entrant that is an agent
file loads :mod:`training` (and torch), when it is built.
"""

from kahuna_env.version import __version__

__all__ = ["__version__"]
