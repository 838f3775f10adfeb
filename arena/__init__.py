"""The arena: tools that measure and play Kahuna agents.

Entrants (baselines and agent files), seat-balanced matches with their
statistics (:mod:`arena.stats`), game records, and the command-line tools
``kahuna-eval``, ``kahuna-play``, ``kahuna-replay`` and ``kahuna-demo``.

Importing the arena does not import torch: only an entrant that is an agent
file loads :mod:`training` (and torch), when it is built.
"""
