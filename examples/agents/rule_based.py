"""A rule-based Kahuna agent for the arena: ``kahuna-eval py:examples/agents/rule_based.py:act greedy``.

The agent protocol's smallest form: a function of the observation and the legal-action mask
(docs/EVALUATION.md, "Evaluate your own agent").  This one places a bridge when it can, else takes
the first other legal action (draw, take a face-up card, pass, remove, discard), in action order.
"""

import numpy as np

PAID_PLACEMENTS, FREE_PLACEMENTS = range(0, 54), range(152, 179)
"""The actions that place a bridge, paid with cards or free (docs/ENV.md, the action table)."""


def act(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """The first legal placement, else the first legal action."""
    legal = np.flatnonzero(action_mask)
    placements = [action for action in legal if action in PAID_PLACEMENTS or action in FREE_PLACEMENTS]
    return int(placements[0] if placements else legal[0])
