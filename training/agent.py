"""Load a policy file into a ready-to-play agent: :func:`load_agent`."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arena.cli import first_line
from kahuna_env.agents.base import SeededAgent
from kahuna_env.engine import KahunaGame
from training.model import ActorCritic, model_from_payload, sample_from_logits


class PolicyAgent(SeededAgent):
    """An agent backed by an :class:`ActorCritic` network.

    ``deterministic=True`` plays the most likely legal action; otherwise it
    samples from the masked policy with its own seeded generator.
    """

    uses_game = False

    def __init__(
        self, model: ActorCritic, deterministic: bool = True, seed: int | None = None, name: str = "policy"
    ) -> None:
        self.model = model.eval()
        self.deterministic = deterministic
        self.name = name
        super().__init__(seed)

    @torch.inference_mode()
    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch of observations ``(n, 246)`` and masks ``(n, 179)``."""
        logits, _ = self.model(torch.as_tensor(observations, dtype=torch.float32), torch.as_tensor(action_masks))
        if self.deterministic:
            return logits.argmax(dim=-1).numpy()
        # The training sampler, fed from this agent's own seeded generator (reseeded by reset()).
        uniform = torch.from_numpy(self.rng.random(logits.shape, dtype=np.float32))
        return sample_from_logits(logits, uniform).numpy()

    def act(self, observation: np.ndarray, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        return int(self.act_batch(observation[None, :], np.asarray(action_mask)[None, :])[0])


def read_policy_file(path: str | Path) -> dict[str, Any]:
    """Read a policy file or checkpoint safely (``weights_only=True``); clear errors for missing/corrupt files."""
    file = Path(path)
    if file.is_dir():
        raise ValueError(f"{file} is a directory; give a checkpoint file (e.g. {file}/checkpoints/latest.pt)")
    if not file.exists():
        raise FileNotFoundError(f"checkpoint not found: {file}")
    try:
        with open(file, "rb") as handle:
            head = handle.read(16)
    except OSError as error:
        raise ValueError(f"{file} cannot be read: {error.strerror or error}") from None
    if not head.startswith(b"PK\x03\x04"):
        # torch.save writes a zip archive; text, CSV and other files would fail deep inside torch.load.
        raise ValueError(
            f"{file} is not a readable checkpoint: not a torch file (those are zip archives; it starts with {head!r})"
        )
    try:
        payload = torch.load(file, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        # torch's own text suggests weights_only=False, which would run code from an untrusted file.
        raise ValueError(
            f"{file} is not a readable checkpoint: it is corrupt, or it holds Python objects other than "
            "tensors and plain values (refused: loading those could run code)"
        ) from None
    except MemoryError:
        raise ValueError(f"{file} is not a readable checkpoint: it declares more data than fits in memory") from None
    except Exception as error:  # torch.load fails on foreign bytes in many ways (KeyError, IndexError, ...)
        raise ValueError(
            f"{file} is not a readable checkpoint (corrupt or not a torch file): {first_line(error)}"
        ) from None
    if not isinstance(payload, dict):
        raise ValueError(f"{file} is not a Kahuna agent file (holds a {type(payload).__name__})")
    return payload


def load_agent(path: str | Path, deterministic: bool = True, seed: int | None = None) -> PolicyAgent:
    """Load a training checkpoint or an exported policy file as a ready-to-play :class:`PolicyAgent`.

    Raises ``FileNotFoundError`` for a missing file and a one-line ``ValueError``
    naming the file for a corrupt, foreign or crafted one (wrong types, weights
    that do not fit the declared network, NaN or infinite weights); see
    :func:`training.model.model_from_payload`.
    """
    payload = read_policy_file(path)
    model = model_from_payload(payload, source=str(path))
    return PolicyAgent(model, deterministic=deterministic, seed=seed, name=Path(path).stem)
