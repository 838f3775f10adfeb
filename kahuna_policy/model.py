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
from typing import Any, Final

import numpy as np
import torch
import torch.nn.functional as F
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
MAX_HIDDEN_LAYERS = 16
"""Most hidden layers a :class:`ModelConfig` may declare (the project's networks have one or two)."""
MAX_WIDTH = 8192
"""Widest hidden layer (``hidden_sizes`` entries and ``line_width``) a :class:`ModelConfig` may declare."""
MAX_PARAMETERS = 50_000_000
"""Most parameters a :class:`ModelConfig` may declare (200 MB of float32; the default network has about 0.2M).

Checked arithmetically (:func:`parameter_count`) before anything is built, so a
crafted agent file declaring a huge network is refused at once."""
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
        # A mapping or a string would silently become its keys or characters: only lists and tuples.
        # Sizes are bounded here, before any network (even a shape-only one) is built: a crafted
        # agent file declaring 60,000 layers or a width of 10**12 is refused at once.
        sizes = tuple(self.hidden_sizes) if isinstance(self.hidden_sizes, (list, tuple)) else ()
        if len(sizes) > MAX_HIDDEN_LAYERS:
            raise ValueError(f"model.hidden_sizes declares {len(sizes)} layers; at most {MAX_HIDDEN_LAYERS} allowed")
        if not sizes or any(isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= MAX_WIDTH for s in sizes):
            raise ValueError(
                f"model.hidden_sizes must be a non-empty list of integers in [1, {MAX_WIDTH}], "
                f"got {_short(self.hidden_sizes)}"
            )
        object.__setattr__(self, "hidden_sizes", sizes)
        if not isinstance(self.activation, str) or self.activation not in _ACTIVATIONS:
            raise ValueError(f"model.activation must be one of {sorted(_ACTIVATIONS)}, got {_short(self.activation)}")
        if not isinstance(self.architecture, str) or self.architecture not in ARCHITECTURES:
            raise ValueError(
                f"model.architecture must be one of {list(ARCHITECTURES)}, got {_short(self.architecture)}"
            )
        width = self.line_width
        if isinstance(width, bool) or not isinstance(width, int) or not 2 <= width <= MAX_WIDTH:
            raise ValueError(f"model.line_width must be an integer in [2, {MAX_WIDTH}], got {_short(width)}")
        count = parameter_count(self)
        if count > MAX_PARAMETERS:
            raise ValueError(f"the network declares {count:,} parameters; at most {MAX_PARAMETERS:,} allowed")


def _short(value: object) -> str:
    """A bounded description of a value for an error message (never more than 40 characters of it)."""
    text = repr(value) if not isinstance(value, (list, tuple)) or len(value) <= 8 else f"a list of {len(value)} items"
    return text if len(text) <= 40 else text[:37] + "..."


def parameter_count(config: ModelConfig) -> int:
    """The number of parameters of the network ``config`` describes, computed without building it."""

    def linear(width_in: int, width_out: int) -> int:
        return width_in * width_out + width_out

    sizes = [OBSERVATION_SIZE, *config.hidden_sizes]
    count = sum(linear(a, b) for a, b in itertools.pairwise(sizes))
    width = sizes[-1]
    if config.architecture == "mlp":
        return count + linear(width, NUM_ACTIONS) + linear(width, 1)
    line, half = config.line_width, config.line_width // 2
    count += linear(3, line) + 2 * linear(_ISLAND_FEATURES, line) + linear(width, line)  # the per-line input
    count += linear(line, line) + linear(line, 6)  # line_net, line_head
    count += linear(_ISLAND_FEATURES, half) + linear(width, half) + linear(half, 1)  # the island network
    count += linear(width, 5) + linear(width + line, line) + linear(line, 1)  # turn head, value network
    return count


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


def sample_from_logits(logits: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """One action per row of masked ``logits``, given ``uniform`` noise in [0, 1) of the same shape (Gumbel-max).

    ``argmax(logits - log(-log U))`` is an exact sample of ``softmax(logits)``
    for ``U`` in (0, 1).  ``torch.rand`` returns exactly 0 once in 2**24 draws,
    whose noise ``-log(-log 0)`` is ``-inf``: a legal action drawing it would lose
    to the masked ones, which all round to :data:`MASKED_LOGIT` (so ``argmax``
    took the first of them, action 0, when that action was the only legal one).
    So ``U`` is raised to the smallest normal float first: its noise is about
    -4.5, finite, and every other draw is unchanged.  The noise stays within
    [-4.5, 16.7], so a masked logit can never win against a legal one.
    """
    uniform = uniform.clamp(min=torch.finfo(uniform.dtype).tiny)
    return torch.argmax(logits - torch.log(-torch.log(uniform)), dim=1)


@torch.inference_mode()
def sample_actions(
    model: ActorCritic,
    observations: np.ndarray,
    masks: np.ndarray,
    generator: torch.Generator,
    logits_out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample from ``model``'s masked policy with ``generator``: actions, their log-probabilities, values.

    The one sampler of the project: training collection, sampled evaluation
    and :class:`~kahuna_policy.agent.PolicyAgent` all draw through
    :func:`sample_from_logits`.  ``logits_out`` (``(len(observations), 179)``
    float32), if given, receives the masked logits the actions were drawn from.
    """
    logits, values = network_outputs(model, observations, masks)
    actions = sample_from_logits(logits, torch.rand(logits.shape, generator=generator))
    log_probs = torch.log_softmax(logits, dim=1).gather(1, actions.unsqueeze(1)).squeeze(1)
    if logits_out is not None:
        logits_out[:] = logits.numpy()
    return actions.numpy(), log_probs.numpy(), values.numpy()


def network_outputs(model: nn.Module, observations: np.ndarray, masks: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """``model``'s masked logits and values for numpy inputs, computed on the model's device, returned on the CPU."""
    device = next(model.parameters()).device
    logits, values = model(torch.from_numpy(observations).to(device), torch.from_numpy(masks).to(device))
    return logits.cpu(), values.cpu()


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

    # Shapes and observation slices as constants that TorchScript reads (see _scripted_forward).
    __constants__ = (
        "_observation_width",
        "_num_islands",
        "_num_lines",
        "_island_width",
        "_own_start",
        "_own_stop",
        "_claim_start",
        "_claim_stop",
        "_masked_logit",
        "_line_inputs",
        "_relu",
    )
    _observation_width: Final[int] = OBSERVATION_SIZE
    _num_islands: Final[int] = NUM_ISLANDS
    _num_lines: Final[int] = NUM_LINES
    _island_width: Final[int] = _ISLAND_FEATURES
    _own_start: Final[int] = OBSERVATION_LAYOUT["lines_mine"].start
    _own_stop: Final[int] = OBSERVATION_LAYOUT["lines_opponent"].stop
    _claim_start: Final[int] = OBSERVATION_LAYOUT["claim"].start
    _claim_stop: Final[int] = OBSERVATION_LAYOUT["claim"].stop
    _masked_logit: Final[float] = MASKED_LOGIT
    _line_inputs: Final[int] = 3 + 2 * _ISLAND_FEATURES
    _relu: Final[bool] = True

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
        self._relu = activation == "relu"
        # Constant index and feature tables (buffers, so they follow the module; not saved).
        self.register_buffer("island_map", _ISLAND_MAP, persistent=False)
        self.register_buffer("island_offset", _ISLAND_OFFSET, persistent=False)
        self.register_buffer("line_ends", _LINE_ENDS, persistent=False)
        # The same features as gathered columns (see _FeatureGather): the fast path of the forward pass.
        for name, table in _GATHER.items():
            self.register_buffer(name, table, persistent=False)

    def _island_features(self, observation: torch.Tensor) -> torch.Tensor:
        """``(..., 12, _ISLAND_FEATURES)`` per-island features; see :func:`_island_feature_map`."""
        # Every feature is an affine function of the observation, so one product computes them all
        # (no gradient flows into the observation, so this costs nothing in the backward pass).
        features = torch.addmm(self.island_offset, observation.reshape(-1, OBSERVATION_SIZE), self.island_map)
        return features.view(*observation.shape[:-1], NUM_ISLANDS, _ISLAND_FEATURES)

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(batch, 179)`` and values ``(batch,)``; ``action_mask`` is nonzero where legal.

        ``torch.jit.script(model)`` compiles :meth:`_scripted_forward` instead (the same operations).
        """
        if torch.jit.is_scripting():
            return self._scripted_forward(observation, action_mask)
        if self.config.architecture == "board" and not _autocast(observation):
            return self._board_forward(observation, action_mask)
        return self._forward(observation, action_mask, _OWN_WEIGHTS)

    def _board_forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The "board" network's forward pass with its own weights, in few passes over the per-line tensors.

        The same function as :meth:`_forward` (equal up to float rounding): the line and island
        features are gathered from the observation (:class:`_FeatureGather`) instead of computed by a
        product with :data:`_ISLAND_MAP`; the three per-line layers run as :func:`_line_block`, in
        place, and in training as :class:`_LineLayers`, whose backward pass is written out and runs
        over chunks of positions that stay in the CPU's cache; the mask is applied as
        ``logits * legal + bias`` (exactly :data:`MASKED_LOGIT` where illegal, the logit where legal).
        TorchScript compiles this method too (the eager training branch aside).
        """
        shape = observation.shape
        observation = observation.reshape(-1, self._observation_width)
        batch = observation.shape[0]
        hidden = self.trunk(observation)
        augmented = torch.cat([observation, torch.mm(observation, self.gather_sums)], dim=1)
        islands = torch.addcmul(
            self.island_gather_offset, augmented.index_select(1, self.island_gather), self.island_gather_scale
        )
        lines = torch.cat([observation, islands], dim=1).index_select(1, self.line_gather)
        lines = lines.view(batch * self._num_lines, self._line_inputs)
        islands = islands.view(batch, self._num_islands, self._island_width)
        first = torch.cat([self.line_own.weight, self.line_from_a.weight, self.line_from_b.weight], dim=-1)
        shift = self.line_from_trunk(hidden) + (self.line_own.bias + self.line_from_a.bias + self.line_from_b.bias)
        second = self.line_net[0]
        if torch.jit.is_scripting():
            scores, line_mean = _line_block(
                lines, shift, first, second.weight, second.bias, self.line_head.weight, self.line_head.bias, self._relu
            )[:2]
        else:
            scores, line_mean = self._line_layers(lines, shift, first)
        line_logits = scores.view(batch, self._num_lines, 6).transpose(1, 2)  # (batch, 6 groups, 27 lines)
        island_input = self.island_from_self(islands) + self.island_from_trunk(hidden).unsqueeze(1)
        discard_logits = self.island_head(self.activation(island_input)).squeeze(-1)  # (batch, 12)
        logits = torch.cat(
            [
                line_logits[:, :5, :].reshape(batch, 5 * self._num_lines),
                discard_logits,
                self.turn_head(hidden),
                line_logits[:, 5, :],
            ],
            dim=1,
        )
        value = self.value_head(self.value_net(torch.cat([hidden, line_mean], dim=1)))
        legal = action_mask.reshape(logits.shape).to(torch.bool).to(logits.dtype)
        logits = torch.addcmul((legal - 1) * -self._masked_logit, logits, legal)
        return logits.view(shape[:-1] + logits.shape[-1:]), value.view(shape[:-1])

    @torch.jit.unused
    def _line_layers(
        self, lines: torch.Tensor, shift: torch.Tensor, first: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:func:`_line_block`, through :class:`_LineLayers` when a gradient is wanted (not while tracing for ONNX)."""
        second, head = self.line_net[0], self.line_head
        tensors = (lines, shift, first, second.weight, second.bias, head.weight, head.bias)
        if torch.is_grad_enabled() and not torch.jit.is_tracing() and any(t.requires_grad for t in tensors):
            return _LineLayers.apply(self._relu, *tensors)
        return _line_block(*tensors, self._relu)[:2]

    def _scripted_forward(
        self, observation: torch.Tensor, action_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The eager forward pass, written so that TorchScript compiles it.

        The same operations in the same order (``hasattr`` for the architecture; the "board" network's
        :meth:`_board_forward`), so the scripted network's outputs are bit-identical to the eager ones
        (tests/test_export.py).
        """
        if hasattr(self, "line_head"):  # architecture "board" (a compile-time test in TorchScript)
            return self._board_forward(observation, action_mask)
        hidden = self.trunk(observation)
        logits = self.policy_head(hidden).masked_fill(~action_mask.to(torch.bool), self._masked_logit)
        return logits, self.value_head(hidden).squeeze(-1)

    @torch.jit.unused
    def _forward(
        self, observation: torch.Tensor, action_mask: torch.Tensor, weights: _OwnWeights | StackedNetworks
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward pass with the layers' weights from ``weights``: this network's own, or a stack's.

        Written over the last dimensions only, so that the leading ones may be ``(batch,)`` or,
        for :class:`StackedNetworks`, ``(networks, batch)``.
        """
        hidden = weights.sequential(self.trunk, observation)
        if self.config.architecture == "mlp":
            logits = weights.linear(self.policy_head, hidden)
            return masked_logits(logits, action_mask), weights.linear(self.value_head, hidden).squeeze(-1)
        lead = observation.shape[:-1]
        islands = self._island_features(observation)
        # Each line's input: its own three features, then the features of its two islands.
        # (Slices, a concatenation and index_select: the same values as one fancy index, faster.)
        own = torch.cat([observation[..., _LINES_MINE_TO_OPPONENT], observation[..., _CLAIM]], dim=-1)
        # In the island features' dtype: under bfloat16 autocast they are bfloat16, and a float32 part
        # would make the concatenation cast the whole (batch, 27, 31) tensor up, and the next layer back down.
        own = own.view(*lead, 3, NUM_LINES).transpose(-1, -2).to(islands.dtype)
        ends = islands.index_select(-2, self.line_ends).view(*lead, NUM_LINES, 2 * _ISLAND_FEATURES)
        line_features = torch.cat([own, ends], dim=-1)  # (..., 27, 3 + 2 * 14)
        # W [own; island a; island b] with the three input blocks' weights side by side.
        blocks = [weights.parameters(layer) for layer in (self.line_own, self.line_from_a, self.line_from_b)]
        weight = torch.cat([block[0] for block in blocks], dim=-1)
        bias = blocks[0][1] + blocks[1][1] + blocks[2][1]
        line_input = weights.affine(line_features, weight, bias)
        line_input = line_input + weights.linear(self.line_from_trunk, hidden).unsqueeze(-2)
        line_embedding = weights.sequential(self.line_net, self.activation(line_input))  # (..., 27, line_width)
        line_logits = weights.linear(self.line_head, line_embedding).transpose(-1, -2)  # (..., 6 groups, 27 lines)
        island_input = weights.linear(self.island_from_self, islands)
        island_input = island_input + weights.linear(self.island_from_trunk, hidden).unsqueeze(-2)
        discard_logits = weights.linear(self.island_head, self.activation(island_input)).squeeze(-1)  # (..., 12)
        # Action-id order: the five per-line groups, the discards, draw/take/pass, the free bridges.
        logits = torch.cat(
            [
                line_logits[..., :5, :].reshape(*lead, 5 * NUM_LINES),
                discard_logits,
                weights.linear(self.turn_head, hidden),
                line_logits[..., 5, :],
            ],
            dim=-1,
        )
        summary = torch.cat([hidden, _line_mean(line_embedding)], dim=-1)
        value = weights.linear(self.value_head, weights.sequential(self.value_net, summary))
        return masked_logits(logits, action_mask), value.squeeze(-1)


def _line_mean(line_embedding: torch.Tensor) -> torch.Tensor:
    """The mean of ``(..., 27, width)`` line embeddings over the lines.

    In bfloat16 (the update under autocast) as a sum divided by 27: ``mean`` of a bfloat16 tensor
    copies the whole tensor to float32 first, which cost more than the rest of the pass over it.
    In float32 (inference, and the update without autocast) ``mean`` itself, so that those outputs
    are bit for bit what they were.
    """
    if line_embedding.dtype == torch.bfloat16:
        return line_embedding.sum(dim=-2) / NUM_LINES
    return line_embedding.mean(dim=-2)


def _autocast(tensor: torch.Tensor) -> bool:
    """Whether autocast is on for ``tensor``'s device (the bfloat16 update keeps the generic forward pass)."""
    return torch.is_autocast_enabled(tensor.device.type)


LINE_CHUNK = 512
"""Positions per chunk of :class:`_LineLayers`: a whole shard of the default update (1,024-row minibatches
in two shards), 512 x 27 lines x 32 floats, 1.8 MB of activations per layer.  Chunks of 128 (one
core's 442 kB) cost as much on one thread but took 10% longer on two: each chunk is some 30 small
operations whose Python holds the interpreter's lock the other shard's thread waits for
(docs/MACHINES.md)."""


def _activate_(x: torch.Tensor, relu: bool) -> torch.Tensor:
    return x.clamp_min_(0.0) if relu else x.tanh_()


def _line_block(
    lines: torch.Tensor,
    shift: torch.Tensor,
    first: torch.Tensor,
    second: torch.Tensor,
    second_bias: torch.Tensor,
    head: torch.Tensor,
    head_bias: torch.Tensor,
    relu: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The per-line layers of the "board" network, computed in place; no gradient (see :class:`_LineLayers`).

    ``lines``: ``(positions * 27, 31)`` line inputs; ``shift``: ``(positions, width)``, each
    position's trunk projection plus the first layer's bias, added to its 27 lines.  Returns the
    lines' six scores ``(positions * 27, 6)``, the mean line embedding ``(positions, width)``, and
    the two activations ``(positions * 27, width)`` the backward pass reads.
    """
    positions, width = shift.shape
    per_position = lines.shape[0] // max(positions, 1)  # 27 (0 for an empty batch)
    # In place on the product's own (positions, 27, width) view, never on a view of a kept tensor: the
    # ONNX exporter traces this function, and it loses in-place writes made through a view.
    hidden = torch.mm(lines, first.t()).view(positions, per_position, width).add_(shift.unsqueeze(1))
    hidden = _activate_(hidden, relu).view(-1, width)
    embedding = _activate_(torch.mm(hidden, second.t()).add_(second_bias), relu)
    scores = torch.addmm(head_bias, embedding, head.t())
    return scores, embedding.view(positions, per_position, embedding.shape[1]).mean(1), hidden, embedding


def _activation_backward(grad: torch.Tensor, output: torch.Tensor, relu: bool) -> torch.Tensor:
    """The gradient before the activation from the one after it and the activation's output."""
    if relu:
        return torch.ops.aten.threshold_backward(grad, output, 0.0)
    return torch.ops.aten.tanh_backward(grad, output)


class _LineLayers(torch.autograd.Function):
    """:func:`_line_block` with a gradient: forward and backward over chunks of :data:`LINE_CHUNK` positions.

    Autograd through the three layers made about twenty passes over ``(batch, 27, width)``
    tensors of several MB each (the bias written across every line, the activations and their
    backward, the mean's backward, the accumulations); here each chunk's forward and backward run
    while its tensors are in the cache, in place where they can.  The gradients are the layers'
    own (``tests/test_architecture.py`` checks them against autograd in float64).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, relu: bool, lines: torch.Tensor, shift: torch.Tensor, *weights: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``weights``: :func:`_line_block`'s ``first, second, second_bias, head, head_bias``."""
        scores, means, activations = [], [], []
        for start in range(0, max(shift.shape[0], 1), LINE_CHUNK):  # an empty batch: one empty chunk
            rows = slice(start * NUM_LINES, (start + LINE_CHUNK) * NUM_LINES)
            chunk = _line_block(lines[rows], shift[start : start + LINE_CHUNK], *weights, relu)
            scores.append(chunk[0])
            means.append(chunk[1])
            activations.append(chunk[2:])
        first, second, _, head, _ = weights
        ctx.save_for_backward(lines, first, second, head)
        ctx.activations, ctx.relu = activations, relu
        return torch.cat(scores), torch.cat(means)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad_scores: torch.Tensor, grad_mean: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        lines, first, second, head = ctx.saved_tensors
        relu = ctx.relu
        grad_scores = grad_scores.contiguous()
        grad_mean = grad_mean / NUM_LINES
        grads = [torch.zeros_like(tensor) for tensor in (first, second, second[:, 0], head)]
        grad_shift = []
        for index, (hidden, embedding) in enumerate(ctx.activations):
            start = index * LINE_CHUNK
            rows = slice(start * NUM_LINES, start * NUM_LINES + len(hidden))
            positions = len(hidden) // NUM_LINES
            chunk_scores = grad_scores[rows]
            grad = torch.mm(chunk_scores, head)
            grad.view(positions, NUM_LINES, -1).add_(grad_mean[start : start + positions].unsqueeze(1))
            grad = _activation_backward(grad, embedding, relu)
            grads[1].addmm_(grad.t(), hidden)
            grads[2].add_(grad.sum(0))
            grads[3].addmm_(chunk_scores.t(), embedding)
            grad = _activation_backward(torch.mm(grad, second), hidden, relu)
            grads[0].addmm_(grad.t(), lines[rows])
            grad_shift.append(grad.view(positions, NUM_LINES, -1).sum(1))
        ctx.activations = None
        shift = torch.cat(grad_shift)
        return None, None, shift, grads[0], grads[1], grads[2], grads[3], grad_scores.sum(0)


class _OwnWeights:
    """:meth:`ActorCritic._forward` with the network's own layers (its ordinary forward pass)."""

    @staticmethod
    def parameters(layer: nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
        return layer.weight, layer.bias

    @staticmethod
    def affine(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.linear(x, weight, bias)

    @staticmethod
    def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        return layer(x)

    @staticmethod
    def sequential(layers: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
        return layers(x)


_OWN_WEIGHTS = _OwnWeights()


class StackedNetworks:
    """Several networks of one shape evaluated together: one batched product per layer instead of one per network.

    ``stacked(observations, masks)`` with ``(networks, rows, 246)`` observations and
    ``(networks, rows, 179)`` masks returns ``(networks, rows, 179)`` masked logits
    and ``(networks, rows)`` values, network ``k``'s outputs on its own rows (up to
    float rounding: the products run as batched matrix products).  Inference only.
    Collection uses it for the snapshot opponents of a tick, whose few rows each
    would otherwise cost one small forward pass per snapshot.
    """

    def __init__(self, networks: list[ActorCritic]) -> None:
        if not networks:
            raise ValueError("StackedNetworks needs at least one network")
        configs = {network.config for network in networks}
        if len(configs) != 1:
            raise ValueError(f"StackedNetworks needs networks of one shape, got {len(configs)} different configs")
        self.template = networks[0]
        self.size = len(networks)
        modules = [dict(network.named_modules()) for network in networks]
        self._stacked: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        for name, layer in modules[0].items():
            if isinstance(layer, nn.Linear):
                weight = torch.stack([m[name].weight.detach() for m in modules])  # (networks, out, in)
                bias = torch.stack([m[name].bias.detach() for m in modules])  # (networks, out)
                self._stacked[id(layer)] = (weight, bias)

    def parameters(self, layer: nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
        return self._stacked[id(layer)]

    @staticmethod
    def affine(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], -1, x.shape[-1])  # (networks, rows, in)
        out = torch.baddbmm(bias.unsqueeze(1), rows, weight.transpose(1, 2))
        return out.view(*x.shape[:-1], weight.shape[1])

    def linear(self, layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        return self.affine(x, *self._stacked[id(layer)])

    def sequential(self, layers: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            x = self.linear(layer, x) if isinstance(layer, nn.Linear) else layer(x)
        return x

    @torch.inference_mode()
    def __call__(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if observation.dim() != 3 or observation.shape[0] != self.size:
            raise ValueError(
                f"StackedNetworks of {self.size} networks takes (networks, rows, 246) observations, "
                f"got shape {tuple(observation.shape)}"
            )
        return self.template._forward(observation, action_mask, self)


def _island_feature_map() -> tuple[torch.Tensor, torch.Tensor]:
    """``(map, offset)`` with per-island features = ``(observation @ map + offset).view(-1, 12, 14)``.

    The 14 features of island ``i``: control (mine, opponent's), bridges on its lines (mine,
    opponent's, as fractions of its degree), how far each side is from a majority
    ``(bridges - majority) / 6``, its cards in my hand, face up (summed over the three slots),
    openly discarded, my face-down discards, known in the opponent's hand, unseen, and the
    constants degree / 6 and majority / 4.
    """
    mapping = torch.zeros(OBSERVATION_SIZE, NUM_ISLANDS, _ISLAND_FEATURES)
    offset = torch.zeros(NUM_ISLANDS, _ISLAND_FEATURES)

    def column(name: str, island: int) -> int:
        return OBSERVATION_LAYOUT[name].start + island

    copied = {0: "control_mine", 1: "control_opponent", 2: "bridges_mine", 3: "bridges_opponent", 6: "hand"}
    copied.update({8: "open_discard", 9: "my_face_down", 10: "opponent_known", 11: "unseen"})
    for island in range(NUM_ISLANDS):
        for feature, name in copied.items():
            mapping[column(name, island), island, feature] = 1.0
        for feature, name in ((4, "bridges_mine"), (5, "bridges_opponent")):
            mapping[column(name, island), island, feature] = DEGREE[island] / 6
            offset[island, feature] = -MAJORITY[island] / 6
        for slot in range(3):
            mapping[column("face_up", NUM_ISLANDS * slot + island), island, 7] = 1.0
        offset[island, 12] = DEGREE[island] / 6
        offset[island, 13] = MAJORITY[island] / 4
    return mapping.view(OBSERVATION_SIZE, -1), offset.view(-1)


_ISLAND_MAP, _ISLAND_OFFSET = _island_feature_map()
# Each line's own features: lines_mine and lines_opponent (adjacent in the observation), then claim.
_LINES_MINE_TO_OPPONENT = slice(OBSERVATION_LAYOUT["lines_mine"].start, OBSERVATION_LAYOUT["lines_opponent"].stop)
_CLAIM = OBSERVATION_LAYOUT["claim"]
assert OBSERVATION_LAYOUT["lines_mine"].stop == OBSERVATION_LAYOUT["lines_opponent"].start
# The two islands of each line, flattened: (a0, b0, a1, b1, ...).
_LINE_ENDS = torch.tensor(LINES, dtype=torch.int64).view(-1)


def _feature_gather(mapping: torch.Tensor, offset: torch.Tensor) -> dict[str, torch.Tensor]:
    """The line and island features of :func:`_island_feature_map` as gathered, scaled columns.

    Every island feature reads at most one observation column (times a constant, plus the offset),
    except the sums over several columns (the face-up cards of an island's three slots); those are
    appended to the observation by one small product (``gather_sums``).  Then, from the augmented
    observation ``[observation, observation @ gather_sums]``, the islands' ``(12 x 14)`` features are
    ``augmented[:, island_gather] * island_gather_scale + island_gather_offset``, and the lines'
    ``(27 x 31)`` inputs (each line's mine / opponent's / claim, then the features of its two
    islands, the order of ``ActorCritic._forward``) are ``[observation, islands][:, line_gather]``.
    Derived from the map itself, so the two formulations cannot drift apart.
    """
    nonzero = mapping != 0
    sums = [column for column in range(mapping.shape[1]) if int(nonzero[:, column].sum()) > 1]
    columns, scales = [], []
    for column in range(mapping.shape[1]):
        rows = torch.nonzero(nonzero[:, column]).flatten().tolist()
        if column in sums:
            columns.append(OBSERVATION_SIZE + sums.index(column))
            scales.append(1.0)
        else:  # one column times its constant, or a constant (a zero times the first column)
            columns.append(rows[0] if rows else 0)
            scales.append(float(mapping[rows[0], column]) if rows else 0.0)
    own = list(range(_LINES_MINE_TO_OPPONENT.start, _LINES_MINE_TO_OPPONENT.stop))
    own += list(range(_CLAIM.start, _CLAIM.stop))
    own_columns = torch.tensor(own).view(3, NUM_LINES).t()  # (27, 3): mine, opponent's, claim
    island_features = OBSERVATION_SIZE + torch.arange(NUM_ISLANDS * _ISLAND_FEATURES).view(NUM_ISLANDS, -1)
    ends = _LINE_ENDS.view(NUM_LINES, 2)
    lines = torch.cat([own_columns, island_features[ends[:, 0]], island_features[ends[:, 1]]], dim=1)
    return {
        "gather_sums": mapping[:, sums].contiguous(),
        "island_gather": torch.tensor(columns),
        "island_gather_scale": torch.tensor(scales),
        "island_gather_offset": offset.clone(),
        "line_gather": lines.reshape(-1),
    }


_GATHER = _feature_gather(_ISLAND_MAP, _ISLAND_OFFSET)


def model_config_from_dict(values: Any) -> ModelConfig:
    """Build a :class:`ModelConfig` from a mapping; anything else, an unknown key or a bad value is a ``ValueError``."""
    if not isinstance(values, Mapping):
        raise ValueError(f"model_config must be a mapping of options, got {type(values).__name__}")
    known = {field.name for field in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(map(str, values)) - known)
    if unknown:
        raise ValueError(f"unknown model option(s) {_short(unknown)}; known: {sorted(known)}")
    return ModelConfig(**values)


def agent_payload(model: ActorCritic, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keys of the agent file format for ``model`` (training checkpoints add their own)."""
    config = dataclasses.asdict(model.config)
    config["hidden_sizes"] = list(config["hidden_sizes"])
    return {
        "format": AGENT_FORMAT,
        "model_config": config,
        "model_state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "observation_size": OBSERVATION_SIZE,
        "num_actions": NUM_ACTIONS,
        "meta": dict(meta or {}),
    }


def expected_state_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape of the network ``config`` describes, computed without allocating it.

    The network is built on PyTorch's ``meta`` device, which records shapes
    only: a file declaring ``hidden_sizes: [60000, 60000]`` costs nothing to check.
    """
    with torch.device("meta"):
        shapes = {name: tuple(tensor.shape) for name, tensor in ActorCritic(config).state_dict().items()}
    return shapes


def check_state_dict(state: Any, config: ModelConfig) -> None:
    """``ValueError`` unless ``state`` holds exactly the finite float tensors of the network ``config`` describes.

    The message names the missing, unexpected and mis-shaped keys (the first
    few of each), or the first tensor with a NaN or an infinity.
    """
    if not isinstance(state, Mapping) or not all(isinstance(key, str) for key in state):
        raise ValueError(f"model_state must be a mapping of parameter names to tensors, got {type(state).__name__}")
    expected = expected_state_shapes(config)
    problems = []
    missing = [key for key in expected if key not in state]
    unexpected = [key for key in state if key not in expected]
    # Only dense tensors: a sparse, quantized or nested one would fail deep inside torch.
    not_tensors = [key for key in expected if key in state and not _is_dense_tensor(state[key])]
    mismatched = [
        f"{key} {tuple(state[key].shape)} instead of {expected[key]}"
        for key in expected
        if key in state and key not in not_tensors and tuple(state[key].shape) != expected[key]
    ]
    for label, keys in (
        ("missing", missing),
        ("unexpected", unexpected),
        ("not dense tensors", not_tensors),
        ("wrong shape", mismatched),
    ):
        if keys:
            more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
            problems.append(f"{label}: {', '.join(keys[:3])}{more}")
    if problems:
        raise ValueError(f"model_state does not fit model_config {_describe(config)}: {'; '.join(problems)}")
    for key in expected:
        tensor = state[key]
        if not tensor.is_floating_point():
            raise ValueError(f"model_state[{key!r}] holds {tensor.dtype} values, expected floating point")
        if not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"model_state[{key!r}] holds NaN or infinite weights (a diverged run?)")


def _is_dense_tensor(value: Any) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and value.layout == torch.strided
        and not value.is_quantized
        and not getattr(value, "is_nested", False)
        and value.device.type == "cpu"
    )


def _describe(config: ModelConfig) -> str:
    return f"(architecture {config.architecture}, hidden_sizes {list(config.hidden_sizes)})"


def model_from_payload(payload: Mapping[str, Any], source: str = "policy file") -> ActorCritic:
    """Rebuild the network from an agent-format dict; any problem is a one-line ``ValueError`` naming ``source``.

    The declared architecture is bounded first (:data:`MAX_HIDDEN_LAYERS`,
    :data:`MAX_WIDTH`, :data:`MAX_PARAMETERS`, checked arithmetically by
    :class:`ModelConfig`), then types, layouts, shapes and values of the state
    dict are checked against it before the network is built, so a crafted file
    cannot make it allocate more than the file itself holds (or spend long
    finding out), and no error echoes the file's bytes.
    """
    if not isinstance(payload, Mapping) or payload.get("format") != AGENT_FORMAT:
        found = payload.get("format") if isinstance(payload, Mapping) else type(payload).__name__
        raise ValueError(f"{source} is not a Kahuna agent file (format {_short(found)}, expected {AGENT_FORMAT!r})")
    if payload.get("observation_size") != OBSERVATION_SIZE or payload.get("num_actions") != NUM_ACTIONS:
        raise ValueError(
            f"{source} was made for observations of size {_short(payload.get('observation_size'))} and "
            f"{_short(payload.get('num_actions'))} actions; this version uses {OBSERVATION_SIZE} and {NUM_ACTIONS}"
        )
    try:
        config = model_config_from_dict(payload.get("model_config"))
        check_state_dict(payload.get("model_state"), config)
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None
    model = ActorCritic(config)
    model.load_state_dict(payload["model_state"])
    model.eval()
    return model
