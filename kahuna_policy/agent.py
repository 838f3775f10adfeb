"""Load a policy file, or an agent shipped in the package by name, as a ready-to-play agent: :func:`load_agent`.

Shipped agents (:data:`SHIPPED_AGENTS`) are policy files stored as package
data in ``kahuna_policy/agents/`` and read through :mod:`importlib.resources`, so
``load_agent("champion")`` works from any install (editable or a wheel) and
any working directory.  A bare registered name always means the shipped
agent, even when a file of that name exists in the working directory; write
``./champion`` to load such a file.  ``python -m training.tools.ship`` writes them.
"""

from __future__ import annotations

import importlib.resources
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kahuna_env.agents.base import SeededAgent
from kahuna_env.agents.spec import looks_like_path
from kahuna_env.cli import check_input_file, first_line
from kahuna_env.engine import KahunaGame
from kahuna_policy.model import ActorCritic, model_from_payload, sample_from_logits
from kahuna_policy.registry import SHIPPED_AGENTS, SHIPPED_AGENTS_DIR, shipped_agent_names
from kahuna_policy.reward import DEFAULT_REWARD, island_potentials, recorded_reward

__all__ = [
    "DEFAULT_REWARD",
    "SHIPPED_AGENTS",
    "PolicyAgent",
    "agent_file",
    "is_agent_name",
    "load_agent",
    "read_policy_file",
    "recorded_reward",
    "shipped_agent_names",
    "shipped_agent_source",
]


class PolicyAgent(SeededAgent):
    """An agent backed by an :class:`ActorCritic` network.

    ``deterministic=True`` plays the most likely legal action; otherwise it
    samples from the masked policy with its own seeded generator.
    """

    uses_game = False

    def __init__(
        self,
        model: ActorCritic,
        deterministic: bool = True,
        seed: int | None = None,
        name: str = "policy",
        meta: Mapping[str, Any] | None = None,
        reward: Mapping[str, float] | None = None,
    ) -> None:
        self.model = model.eval()
        self.deterministic = deterministic
        self.name = name
        self.meta: dict[str, Any] = dict(meta or {})
        """The ``meta`` dict of the file the agent was loaded from (a shipped agent's provenance)."""
        self.reward: dict[str, float] | None = dict(reward) if reward is not None else None
        """The reward settings the network was trained with (:func:`recorded_reward`); None if not recorded."""
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

    @torch.inference_mode()
    def probabilities_and_value(self, observation: np.ndarray, action_mask: np.ndarray) -> tuple[np.ndarray, float]:
        """The policy's move probabilities (179, zero off the mask, summing to 1) and the seat's win probability.

        For one seat's observation (what it may know) and its legal-action
        mask.  The win probability (draws count half) is the critic's value
        with the reward settings it was trained with undone, as the guided
        search reads it (``kahuna_policy/search.py``); :data:`DEFAULT_REWARD` when the file records none.
        """
        observations = np.asarray(observation, dtype=np.float32)[None, :]
        mask = np.asarray(action_mask).astype(bool)[None, :]
        logits, values = self.model(torch.from_numpy(observations), torch.from_numpy(mask))
        probabilities = torch.softmax(logits.double(), dim=-1)[0].numpy()
        probabilities[~mask[0]] = 0.0
        probabilities /= probabilities.sum()
        reward = self.reward or DEFAULT_REWARD
        potential = float(island_potentials(observations)[0])
        outcome = (float(values[0]) + reward["island_shaping"] * potential) / reward["win"]
        return probabilities, float(np.clip((outcome + 1.0) / 2.0, 0.0, 1.0))


def read_policy_file(path: str | Path) -> dict[str, Any]:
    """Read a policy file or checkpoint safely (``weights_only=True``); clear errors for missing/corrupt files."""
    file = Path(path)
    if file.is_dir():
        raise ValueError(f"{file} is a directory; give a checkpoint file (e.g. {file}/checkpoints/latest.pt)")
    if not file.exists():
        raise FileNotFoundError(f"checkpoint not found: {file}")
    check_input_file(file, "an agent file")  # a FIFO would block the open below
    try:
        with open(file, "rb") as handle:
            head = handle.read(16)
            # torch.save writes a zip archive: its directory is at the end, so a cut-off file has none.
            complete = zipfile.is_zipfile(handle)
    except OSError as error:
        raise ValueError(f"{file} cannot be read: {error.strerror or error}") from None
    if not head.startswith(b"PK\x03\x04"):
        # torch.save writes a zip archive; text, CSV and other files would fail deep inside torch.load.
        # The file's bytes are never echoed: the message may reach a web page or a log.
        raise ValueError(f"{file} is not a readable checkpoint: not a torch file (those are zip archives)")
    if not complete:  # torch's own message is a paragraph of advice about its zip reader
        raise ValueError(f"{file} is not a readable checkpoint: truncated or corrupt (an incomplete zip archive)")
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
            f"{file} is not a readable checkpoint (corrupt or not a torch file): {_first_sentence(error)}"
        ) from None
    if not isinstance(payload, dict):
        raise ValueError(f"{file} is not a Kahuna agent file (holds a {type(payload).__name__})")
    return payload


def _first_sentence(error: BaseException, limit: int = 120) -> str:
    """The first sentence of ``error``'s first line, at most ``limit`` characters (torch appends advice)."""
    text = first_line(error).split(". ")[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_agent_name(spec: object) -> bool:
    """Whether ``spec`` is a bare agent name (a string without a path separator or a suffix), not a path."""
    return isinstance(spec, str) and bool(spec) and not looks_like_path(spec)


def shipped_agent_source(name: str) -> Path:
    """Where the shipped agent ``name`` lies in the source tree (where ``python -m training.tools.ship`` writes it)."""
    if name not in SHIPPED_AGENTS:
        raise ValueError(f"unknown shipped agent {name!r}; shipped agents: {', '.join(shipped_agent_names())}")
    return Path(__file__).resolve().parent / SHIPPED_AGENTS_DIR / SHIPPED_AGENTS[name]


def agent_file(spec: str | Path) -> Path:
    """The file :func:`load_agent` reads for ``spec``: a shipped agent's file for its name, else the path itself."""
    if isinstance(spec, str) and spec in SHIPPED_AGENTS:
        return shipped_agent_source(spec)
    return Path(spec)


def _load_shipped(name: str, deterministic: bool, seed: int | None) -> PolicyAgent:
    resource = importlib.resources.files("kahuna_policy").joinpath(SHIPPED_AGENTS_DIR, SHIPPED_AGENTS[name])
    with importlib.resources.as_file(resource) as file:
        if not file.is_file():
            raise FileNotFoundError(
                f"shipped agent {name!r} is missing from the installed package (no {file}); reinstall kahuna-rl"
            )
        payload = read_policy_file(file)
        source = f"shipped agent {name!r} ({file})"
        model = model_from_payload(payload, source=source)
        reward = recorded_reward(payload, source)
    meta = payload.get("meta")
    return PolicyAgent(
        model,
        deterministic=deterministic,
        seed=seed,
        name=name,
        meta=meta if isinstance(meta, Mapping) else None,
        reward=reward,
    )


def load_agent(path: str | Path, deterministic: bool = True, seed: int | None = None) -> PolicyAgent:
    """Load a shipped agent by name, a training checkpoint or an exported policy file as a :class:`PolicyAgent`.

    ``path`` is a name of :data:`SHIPPED_AGENTS` (a string such as
    ``"champion"``: the file shipped in the package, whatever the working
    directory holds) or the path of a file.  Raises ``FileNotFoundError`` for
    a missing file (for a bare name that is neither shipped nor a file, the
    message lists the shipped names) and a one-line ``ValueError`` naming the
    file for a corrupt, foreign or crafted one (wrong types, weights that do
    not fit the declared network, NaN or infinite weights); see
    :func:`kahuna_policy.model.model_from_payload`.  The agent's ``meta`` is the
    file's ``meta`` dict, its ``reward`` the reward settings the file records
    (:func:`recorded_reward`; None for an old file that records none).
    """
    if isinstance(path, str) and path in SHIPPED_AGENTS:
        return _load_shipped(path, deterministic, seed)
    if is_agent_name(path) and not Path(path).exists():
        raise FileNotFoundError(
            f"no agent {path!r}: not a shipped agent ({', '.join(shipped_agent_names())}) and no file of that name"
        )
    payload = read_policy_file(path)
    model = model_from_payload(payload, source=str(path))
    reward = recorded_reward(payload, str(path))
    meta = payload.get("meta")
    return PolicyAgent(
        model,
        deterministic=deterministic,
        seed=seed,
        name=Path(path).stem,
        meta=meta if isinstance(meta, Mapping) else None,
        reward=reward,
    )
