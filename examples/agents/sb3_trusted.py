"""An SB3 checkpoint the arena cannot rebuild from its weights alone (a custom features extractor, a CNN, an
LSTM): load it with SB3 in your own code, a ``py:`` agent.

``kahuna-eval model.zip greedy`` reads a plain ``MlpPolicy`` checkpoint of PPO, MaskablePPO, A2C or DQN without
running any code from the file.  SB3's own ``load`` unpickles classes from the zip, which runs code: do it
only for files you trust, by naming this module yourself::

    KAHUNA_SB3_MODEL=model.zip kahuna-eval py:examples/agents/sb3_trusted.py:Agent greedy
"""

import os

import numpy as np


class Agent:
    """A MaskablePPO checkpoint loaded by SB3 itself (``KAHUNA_SB3_MODEL``), masked, deterministic."""

    def __init__(self) -> None:
        from sb3_contrib import MaskablePPO

        self.model = MaskablePPO.load(os.environ["KAHUNA_SB3_MODEL"], device="cpu")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        action, _ = self.model.predict(observation, action_masks=action_mask.astype(bool), deterministic=True)
        return int(action)
