"""The masked actor-critic network and the agent file format shared by every tool.

A policy file (an exported agent, or a training checkpoint, which holds the
same keys and more) is a ``torch.save`` dict of plain types and tensors,
loaded with ``weights_only=True`` so an untrusted file cannot run code:

==================  ==========================================================
key                 value
==================  ==========================================================
``format``          ``"kahuna-agent-v1"``
``model_config``    ``dict``: the :class:`ModelConfig` fields
``model_state``     the network's ``state_dict``
``observation_size``  246 (must match :data:`kahuna_env.observation.OBSERVATION_SIZE`)
``num_actions``     179
``meta``            ``dict`` of plain values (run name, update, env steps, ...)
==================  ==========================================================
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from kahuna_env import actions as A
from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.board import DEGREE, LINES, MAJORITY, NUM_ISLANDS, NUM_LINES
from kahuna_env.observation import OBSERVATION_LAYOUT, OBSERVATION_SIZE

AGENT_FORMAT = "kahuna-agent-v1"
MASKED_LOGIT = -1e9
"""Logit given to illegal actions: their probability is exactly 0 in float32."""

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
ARCHITECTURES = ("mlp", "board")
_ISLAND_FEATURES = 14
# The "board" network assembles its logits in action-id order: five per-line groups, the discards,
# draw/take/pass, then the free bridges.
assert (A.PLACE_A, A.DISCARD, A.DRAW, A.FREE_BRIDGE, NUM_ACTIONS) == (0, 5 * 27, 5 * 27 + 12, 5 * 27 + 17, 179)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Network shape.

    Attributes:
        hidden_sizes: widths of the shared MLP trunk's hidden layers (the global trunk of ``"board"``).
        activation: ``"tanh"`` or ``"relu"``.
        architecture: ``"mlp"`` (one MLP over the observation) or ``"board"`` (the MLP trunk plus a
            network shared by all 27 lines and one shared by all 12 islands, which score the
            line and island actions; see :class:`ActorCritic`).
        line_width: ``"board"``: width of the per-line network's two hidden layers.
    """

    hidden_sizes: tuple[int, ...] = (256, 256)
    activation: str = "tanh"
    architecture: str = "mlp"
    line_width: int = 64

    def __post_init__(self) -> None:
        sizes = tuple(self.hidden_sizes)
        if not sizes or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
            raise ValueError(
                f"model.hidden_sizes must be a non-empty list of positive integers, got {self.hidden_sizes!r}"
            )
        object.__setattr__(self, "hidden_sizes", sizes)
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"model.activation must be one of {sorted(_ACTIVATIONS)}, got {self.activation!r}")
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"model.architecture must be one of {list(ARCHITECTURES)}, got {self.architecture!r}")
        if isinstance(self.line_width, bool) or not isinstance(self.line_width, int) or self.line_width < 2:
            raise ValueError(f"model.line_width must be an integer >= 2, got {self.line_width!r}")


def _mlp(sizes: list[int], activation: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width_in, width_out in itertools.pairwise(sizes):
        linear = nn.Linear(width_in, width_out)
        nn.init.orthogonal_(linear.weight, gain=2**0.5)
        nn.init.zeros_(linear.bias)
        layers += [linear, _ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


def _head(width_in: int, width_out: int, gain: float) -> nn.Linear:
    linear = nn.Linear(width_in, width_out)
    nn.init.orthogonal_(linear.weight, gain=gain)
    nn.init.zeros_(linear.bias)
    return linear


def masked_logits(logits: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with illegal actions (mask 0) set to :data:`MASKED_LOGIT`; no gradient reaches those entries."""
    return logits.masked_fill(~action_mask.bool(), MASKED_LOGIT)


class ActorCritic(nn.Module):
    """Policy (179 logits, illegal ones masked) and value for one seat's observation.

    ``architecture="mlp"``: an MLP trunk with a policy head and a value head.

    ``architecture="board"``: the same trunk summarises the whole observation;
    then one small network, *shared by all 27 lines*, reads each line's own
    features (mine / opponent's / claimable) with those of its two islands
    (control, bridges and how far from a majority each side is, cards of the
    island in my hand, face up, discarded, known in the opponent's hand,
    unseen) plus a summary of the trunk, and scores that line's six actions
    (two placements, three removals, the free bridge).  A network shared by
    the 12 islands scores the discards; the trunk scores draw, take and pass.
    The value head reads the trunk and the mean of the line embeddings.
    Sharing weights across lines means what is learned on one line applies
    to all of them, which makes learning much more sample-efficient.
    """

    def __init__(self, config: ModelConfig | None = None) -> None:
        super().__init__()
        self.config = config or ModelConfig()
        sizes = [OBSERVATION_SIZE, *self.config.hidden_sizes]
        self.trunk = _mlp(sizes, self.config.activation)
        width = sizes[-1]
        if self.config.architecture == "mlp":
            self.policy_head = _head(width, NUM_ACTIONS, 0.01)
            self.value_head = _head(width, 1, 1.0)
            return
        line_width = self.config.line_width
        activation = self.config.activation
        # The first layer of the per-line network is split by input so that the island parts are
        # computed once per island (12) and gathered for the lines' two ends, and the trunk part
        # once per position: W [own; island a; island b; trunk] = W_own own + W_a a + W_b b + W_t trunk.
        self.line_own = _head(3, line_width, 2**0.5)
        self.line_from_a = _head(_ISLAND_FEATURES, line_width, 2**0.5)
        self.line_from_b = _head(_ISLAND_FEATURES, line_width, 2**0.5)
        self.line_from_trunk = _head(width, line_width, 2**0.5)
        self.line_net = _mlp([line_width, line_width], activation)
        self.line_head = _head(line_width, 6, 0.01)
        self.island_from_self = _head(_ISLAND_FEATURES, line_width // 2, 2**0.5)
        self.island_from_trunk = _head(width, line_width // 2, 2**0.5)
        self.island_head = _head(line_width // 2, 1, 0.01)
        self.turn_head = _head(width, 5, 0.01)
        self.value_net = _mlp([width + line_width, line_width], activation)
        self.value_head = _head(line_width, 1, 1.0)
        self.activation = _ACTIVATIONS[activation]()
        # Line-island incidence: row l of incidence_a is one-hot on line l's first island.
        incidence_a = torch.zeros(NUM_LINES, NUM_ISLANDS)
        incidence_b = torch.zeros(NUM_LINES, NUM_ISLANDS)
        for line, (a, b) in enumerate(LINES):
            incidence_a[line, a] = incidence_b[line, b] = 1.0
        self.register_buffer("incidence_a", incidence_a, persistent=False)
        self.register_buffer("incidence_b", incidence_b, persistent=False)
        self.register_buffer("degree", torch.tensor(DEGREE, dtype=torch.float32).unsqueeze(1), persistent=False)
        self.register_buffer("majority", torch.tensor(MAJORITY, dtype=torch.float32).unsqueeze(1), persistent=False)

    def _island_features(self, columns: torch.Tensor) -> torch.Tensor:
        """``(12, batch, _ISLAND_FEATURES)`` per-island features from the transposed observation ``(246, batch)``."""
        batch = columns.shape[1]

        def part(name: str) -> torch.Tensor:
            return columns[OBSERVATION_LAYOUT[name]]

        mine = part("bridges_mine") * self.degree
        theirs = part("bridges_opponent") * self.degree
        return torch.stack(
            [
                part("control_mine"),
                part("control_opponent"),
                part("bridges_mine"),
                part("bridges_opponent"),
                (mine - self.majority) / 6,
                (theirs - self.majority) / 6,
                part("hand"),
                part("face_up").view(3, NUM_ISLANDS, batch).sum(dim=0),
                part("discard_open"),
                part("my_face_down"),
                part("opponent_known"),
                part("unseen"),
                (self.degree / 6).expand(NUM_ISLANDS, batch),
                (self.majority / 4).expand(NUM_ISLANDS, batch),
            ],
            dim=2,
        )

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(batch, 179)`` and values ``(batch,)``; ``action_mask`` is nonzero where legal."""
        hidden = self.trunk(observation)
        if self.config.architecture == "mlp":
            return masked_logits(self.policy_head(hidden), action_mask), self.value_head(hidden).squeeze(-1)
        # Line and island tensors are kept line-major, (27, batch, width), so that gathering each
        # line's two islands is one matrix product with the incidence matrices.
        batch = observation.shape[0]
        columns = observation.T.contiguous()
        islands = self._island_features(columns)
        own = torch.stack(
            [columns[OBSERVATION_LAYOUT[name]] for name in ("lines_mine", "lines_opponent", "claim")], dim=2
        )
        from_islands = self.incidence_a @ self.line_from_a(islands).view(NUM_ISLANDS, -1)
        from_islands = from_islands + self.incidence_b @ self.line_from_b(islands).view(NUM_ISLANDS, -1)
        line_input = self.line_own(own) + from_islands.view(NUM_LINES, batch, -1) + self.line_from_trunk(hidden)
        line_embedding = self.line_net(self.activation(line_input))
        line_logits = self.line_head(line_embedding).permute(1, 2, 0)  # (batch, 6, 27)
        island_input = self.island_from_self(islands) + self.island_from_trunk(hidden)
        discard_logits = self.island_head(self.activation(island_input)).squeeze(2).T
        logits = torch.cat(
            [
                line_logits[:, :5].reshape(batch, 5 * NUM_LINES),
                discard_logits,
                self.turn_head(hidden),
                line_logits[:, 5],
            ],
            dim=1,
        )
        value = self.value_head(self.value_net(torch.cat([hidden, line_embedding.mean(dim=0)], dim=1)))
        return masked_logits(logits, action_mask), value.squeeze(-1)


def model_config_from_dict(values: Mapping[str, Any]) -> ModelConfig:
    """Build a :class:`ModelConfig` from a mapping; unknown keys are a ``ValueError``."""
    known = {field.name for field in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown model option(s) {unknown}; known: {sorted(known)}")
    data = dict(values)
    if "hidden_sizes" in data and isinstance(data["hidden_sizes"], list):
        data["hidden_sizes"] = tuple(data["hidden_sizes"])
    return ModelConfig(**data)


def agent_payload(model: ActorCritic, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keys of the agent file format for ``model`` (training checkpoints add their own)."""
    config = dataclasses.asdict(model.config)
    config["hidden_sizes"] = list(config["hidden_sizes"])
    return {
        "format": AGENT_FORMAT,
        "model_config": config,
        "model_state": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "observation_size": OBSERVATION_SIZE,
        "num_actions": NUM_ACTIONS,
        "meta": dict(meta or {}),
    }


def model_from_payload(payload: Mapping[str, Any], source: str = "policy file") -> ActorCritic:
    """Rebuild the network from an agent-format dict; a wrong format is a ``ValueError`` naming ``source``."""
    if not isinstance(payload, Mapping) or payload.get("format") != AGENT_FORMAT:
        found = payload.get("format") if isinstance(payload, Mapping) else type(payload).__name__
        raise ValueError(f"{source} is not a Kahuna agent file (format {found!r}, expected {AGENT_FORMAT!r})")
    if payload.get("observation_size") != OBSERVATION_SIZE or payload.get("num_actions") != NUM_ACTIONS:
        raise ValueError(
            f"{source} was made for observations of size {payload.get('observation_size')} and "
            f"{payload.get('num_actions')} actions; this version uses {OBSERVATION_SIZE} and {NUM_ACTIONS}"
        )
    model = ActorCritic(model_config_from_dict(payload["model_config"]))
    try:
        model.load_state_dict(payload["model_state"])
    except (RuntimeError, KeyError, TypeError) as error:
        raise ValueError(f"{source} has weights that do not fit its model_config: {error}") from None
    model.eval()
    return model
