"""Agents from outside the project: Python code, ONNX files, other frameworks' networks, plugins.

Every tool that takes an entrant (``kahuna-eval``, ``kahuna-ratings``,
``kahuna-play``, ``kahuna-serve``, ``kahuna-exploit``, the training league,
``gymnasium.make("Kahuna-v0", opponent=...)``) reads it with
:class:`~kahuna_env.agents.spec.EntrantSpec` and builds it with
:func:`kahuna_arena.entrants.resolve_entrant`; this module holds the parts that need
no torch.

**The agent protocol** (``py:MODULE:ATTR``, ``py:FILE.py:ATTR``).  ``ATTR`` is

* a function of two arguments: ``act(observation, action_mask) -> action``;
* a class, or a function of no arguments, that builds an object with an
  ``act(observation, action_mask)`` method; or such an object itself;
* a :class:`~kahuna_env.agents.base.Agent` (class or instance): used as the
  project's own agents are (it may ask for a determinized game).

The object may also have

* ``act_batch(observations, action_masks) -> actions`` (arrays ``(n, 246)``,
  ``(n, 179)`` -> ``(n,)``), used where several positions are decided at once;
* ``value(observation) -> float``: the expected result for the player
  whose observation it is, in ``[-1, 1]`` (+1 a win, -1 a loss, 0 a draw:
  the env's ``win_loss`` reward).  ``AGENT@mcts:N`` needs it: the search is
  guided by it;
* ``probabilities(observation, action_mask) -> (179,)``: the policy, the
  search's prior (a uniform prior over the legal actions without it);
* ``reset(seed)``: called before every game with that game's seed for the agent.

``observation`` is always the flat ``float32`` vector of 246 values (the
env's observation: the ``"observation"`` entry of the dict form and the
whole of the ``observation="flat"`` form are the same vector, so an agent
trained on either reads it); ``action_mask`` is the ``int8`` vector of 179
(nonzero where legal).  An action that is not legal is refused in one line
naming the agent: the harness never "fixes" it.

**Agent files** are recognised by their content (:func:`agent_file_kind`):
the project's agent files and checkpoints, TorchScript files of
``kahuna-export``, Stable-Baselines3 / sb3-contrib ``.zip`` checkpoints (read
without unpickling anything: ``kahuna_policy/external.py``), and ONNX files
(:func:`load_onnx`, onnxruntime, no torch) that follow this convention:

* inputs: ``observation`` ``(batch, 246)`` float32 and, optionally,
  ``action_mask`` ``(batch, 179)`` (any integer, bool or float type);
* outputs: first ``logits`` ``(batch, 179)`` (the legal one with the highest
  logit is played; illegal ones are masked here too) or ``action``
  ``(batch,)`` integers; optionally one named ``value`` ``(batch,)`` or
  ``(batch, 1)``, read as :meth:`value` above.

``kahuna-export --format onnx`` writes exactly that.

**Plugins.**  A package declares named agents in the entry-point group
:data:`PLUGINS` (``NAME = "module:factory"``, ``factory(NAME)`` returning an
agent); every tool accepts those names as it accepts ``champion``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import math
import sys
import zipfile
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents.base import Agent, SeededAgent
from kahuna_env.agents.mcts import DEFAULT_PRIOR_TEMPERATURE, GuidedSearchAgent
from kahuna_env.agents.spec import PYTHON_PREFIX, EntrantSpec, quoted
from kahuna_env.engine import KahunaGame
from kahuna_env.files import file_type
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation

__all__ = [
    "FILE_KINDS",
    "PLUGINS",
    "ArrayAgent",
    "ExternalEvaluator",
    "PythonAgent",
    "agent_file_kind",
    "guided_agent",
    "load_onnx",
    "load_plugin",
    "load_python",
    "plugin_names",
    "regular_file",
]

PLUGINS = "kahuna_env.opponents"
"""Entry-point group of named agents: ``NAME = "module:factory"``, ``factory(NAME)`` returning an agent.

kahuna-rl declares its shipped agents there (``champion = "kahuna_policy.agent:load_agent"``); any package can add
its own.  The group is read only when a name is not a baseline, and only the named entry point is loaded."""
FILE_KINDS: dict[str, str] = {
    "kahuna": "a Kahuna agent file or training checkpoint",
    "torchscript": "a TorchScript export (kahuna-export --format torchscript)",
    "sb3": "a Stable-Baselines3 / sb3-contrib checkpoint (.zip)",
    "onnx": "an ONNX file",
}
"""The kinds of agent file :func:`agent_file_kind` tells apart, and how messages name each."""
MAX_ZIP_ENTRIES = 10_000
"""The most entries a zip agent file may list (a checkpoint holds a few dozen; more is not an agent file)."""


# ---------------------------------------------------------------------------------------------- plugins
def plugin_names() -> list[str]:
    """The names declared in the :data:`PLUGINS` entry-point group (sorted)."""
    return sorted({entry.name for entry in entry_points(group=PLUGINS)})


def load_plugin(name: str, seed: int | None = None) -> Agent:
    """The agent the :data:`PLUGINS` entry point ``name`` builds, as an :class:`Agent` (one-line ``ValueError``)."""
    found = [entry for entry in entry_points(group=PLUGINS) if entry.name == name]
    if not found:
        raise ValueError(f"no agent named {quoted(name)} (named agents: {', '.join(plugin_names()) or 'none'})")
    try:
        built = found[0].load()(name)
    except (ImportError, OSError, ValueError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"agent {name!r} ({found[0].value}) cannot be loaded: {message}") from None
    agent = built if isinstance(built, Agent) else _as_agent(built, name)
    agent.reset(seed)
    return agent


# ---------------------------------------------------------------------------------------------- agent files
def regular_file(path: str | Path, what: str = "agent file") -> Path:
    """``path`` if it names a regular file (links followed); else a one-line ``ValueError`` / ``FileNotFoundError``.

    Checked before a file is opened: a FIFO, a device or a socket would block
    or stream forever, a folder is not a file.
    """
    file = Path(path)
    kind = file_type(file)
    if kind is None:
        try:
            file.stat()
        except FileNotFoundError:
            raise FileNotFoundError(f"{what} not found: {quoted(str(path))}") from None
        except OSError as error:
            raise ValueError(f"cannot read {what} {quoted(str(path))}: {error.strerror or error}") from None
        raise ValueError(f"cannot read {what} {quoted(str(path))}")  # a name the system refuses (a NUL in it)
    if kind == "directory":
        raise ValueError(f"{what} {quoted(str(path))} is a directory; give a file")
    if kind == "special":
        raise ValueError(f"{what} {quoted(str(path))} is not a regular file (a FIFO, device or socket); give a file")
    return file


def agent_file_kind(path: str | Path) -> str:
    """Which kind of agent file ``path`` holds (a key of :data:`FILE_KINDS`), read from its content.

    A zip archive holding ``data`` and ``policy.pth`` is an SB3 checkpoint,
    one holding TorchScript's ``code/`` a TorchScript file; a name ending in
    ``.onnx`` is an ONNX file; anything else is read as a Kahuna agent file
    (whose reader says what is wrong with it).  Only the zip's directory is
    read.  A special file is refused (:func:`regular_file`).
    """
    file = regular_file(path)
    if file.suffix.lower() == ".onnx":
        return "onnx"
    try:
        with open(file, "rb") as handle:
            if handle.read(4) != b"PK\x03\x04":
                return "kahuna"
        with zipfile.ZipFile(file) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                raise ValueError(f"{quoted(str(path))} is not an agent file: a zip of {len(infos):,} entries")
            names = [info.filename for info in infos]
    except (OSError, zipfile.BadZipFile):
        return "kahuna"  # the agent file reader gives the one line
    if "data" in names and "policy.pth" in names:
        return "sb3"
    if any("/code/" in name for name in names) and any(name.endswith("constants.pkl") for name in names):
        return "torchscript"
    return "kahuna"


# ---------------------------------------------------------------------------------------------- the harness side
def _legal(agent_name: str, action: object, action_mask: np.ndarray) -> int:
    """``action`` as an int if it is legal under ``action_mask``; else a one-line ``ValueError`` naming the agent."""
    try:
        number = int(action)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"agent {agent_name} returned {action!r:.40}, not an action number") from None
    if isinstance(action, float) and not float(action).is_integer():
        raise ValueError(f"agent {agent_name} returned {action!r:.40}, not an action number")
    if not 0 <= number < NUM_ACTIONS or not action_mask[number]:
        legal = int(np.count_nonzero(action_mask))
        raise ValueError(f"agent {agent_name} chose action {number}, which is not legal here ({legal} legal actions)")
    return number


class ArrayAgent(SeededAgent):
    """An agent backed by a batched function ``forward(observations, masks) -> (scores, values)``.

    ``forward`` takes ``(n, 246)`` float32 observations and ``(n, 179)`` bool
    masks and returns either ``(n, 179)`` scores (logits or Q-values: the legal
    action with the highest is played, or with ``sampled`` one drawn from
    their softmax with the agent's seeded generator) or ``(n,)`` actions, and
    the values ``(n,)`` in ``[-1, 1]`` or ``None`` when it has none.  The ONNX,
    TorchScript and Stable-Baselines3 agents are this class; ``recipe`` rebuilds
    the agent in another process (a worker), instead of pickling a session.
    """

    def __init__(
        self,
        forward: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray | None]],
        name: str,
        has_value: bool,
        recipe: tuple[Callable[..., Any], tuple[Any, ...]],
        sampled: bool = False,
        seed: int | None = None,
        logits: bool = True,
    ) -> None:
        super().__init__(seed)
        self.forward = forward
        self.name = name
        self.has_value = has_value
        self.sampled = sampled
        self.logits = logits
        """Whether the scores are logits (a policy: the search's prior is their softmax) or values (Q)."""
        self._recipe = recipe

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return self._recipe

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch of observations ``(n, 246)`` and masks ``(n, 179)``; each checked legal."""
        masks = np.asarray(action_masks).astype(bool)
        scores, _ = self.forward(np.asarray(observations, dtype=np.float32), masks)
        scores = np.asarray(scores)
        if scores.ndim == 1:
            actions = scores
        else:
            masked = np.where(masks, scores.astype(np.float64), -np.inf)
            if self.sampled:
                top = masked.max(axis=1, keepdims=True)
                weights = np.exp(masked - top)
                cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
                draws = self.rng.random((len(masked), 1))
                actions = np.minimum((cumulative < draws).sum(axis=1), NUM_ACTIONS - 1)
            else:
                actions = masked.argmax(axis=1)
        return np.array([_legal(self.name, action, mask) for action, mask in zip(actions, masks, strict=True)])

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        return int(self.act_batch(np.asarray(observation)[None, :], np.asarray(action_mask)[None, :])[0])

    def value(self, observation: np.ndarray) -> float:
        """The expected result in ``[-1, 1]`` for the player whose observation it is."""
        return float(self.evaluate_batch(np.asarray(observation, dtype=np.float32)[None, :], None)[1][0])

    def evaluate_batch(self, observations: np.ndarray, masks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Scores ``(n, 179)`` and values ``(n,)`` of a batch (the guided search's one call per batch of leaves)."""
        if masks is None:
            masks = np.ones((len(observations), NUM_ACTIONS), dtype=bool)
        scores, values = self.forward(observations, masks)
        if values is None:
            raise ValueError(f"agent {self.name} gives no value")
        return np.asarray(scores), np.asarray(values, dtype=np.float64).reshape(-1)


# ---------------------------------------------------------------------------------------------- ONNX
def load_onnx(path: str | Path, sampled: bool = False, seed: int | None = None, name: str | None = None) -> ArrayAgent:
    """An ONNX file following the module's convention as an agent (onnxruntime, no torch).

    One-line ``ValueError`` for a file onnxruntime cannot read or whose inputs
    and outputs do not follow the convention; the ``export`` extra provides
    onnxruntime.
    """
    file = regular_file(path)
    label = name or str(path)
    try:
        import onnxruntime
    except ImportError as error:
        raise ValueError(
            f'{label}: an ONNX agent needs onnxruntime (the export extra: pip install "kahuna-rl[export]"): '
            f"{str(error).splitlines()[0] if str(error) else 'not installed'}"
        ) from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own exception types for foreign bytes
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise ValueError(f"{label} is not a readable ONNX file: {first}") from None
    inputs = {item.name: item for item in session.get_inputs()}
    outputs = [item.name for item in session.get_outputs()]
    expected = (
        "inputs observation (batch, 246) float32 [, action_mask (batch, 179)], outputs logits or action [, value]"
    )
    if "observation" not in inputs or (set(inputs) - {"observation", "action_mask"}) or not outputs:
        raise ValueError(
            f"{label} does not follow the Kahuna ONNX convention: it has inputs {sorted(inputs)} and outputs "
            f"{outputs}; expected {expected}"
        )
    mask_type = _onnx_numpy_type(inputs["action_mask"].type) if "action_mask" in inputs else None
    policy_output = outputs[0] if outputs[0] != "value" else (outputs[1] if len(outputs) > 1 else None)
    if policy_output is None:
        raise ValueError(f"{label} does not follow the Kahuna ONNX convention: no logits or action output")
    has_value = "value" in outputs
    wanted = [policy_output, "value"] if has_value else [policy_output]

    def forward(observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        feed: dict[str, np.ndarray] = {"observation": observations}
        if mask_type is not None:
            feed["action_mask"] = masks.astype(mask_type)
        try:
            results = session.run(wanted, feed)
        except Exception as error:  # a shape or type the file does not accept
            first = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
            raise ValueError(f"{label}: the ONNX model failed on a batch of observations: {first}") from None
        scores = np.asarray(results[0])
        width_ok = scores.ndim == 1 or (scores.ndim == 2 and scores.shape[1] == NUM_ACTIONS)
        if scores.shape[0] != len(observations) or not width_ok:
            raise ValueError(
                f"{label} does not follow the Kahuna ONNX convention: output {policy_output!r} has shape "
                f"{scores.shape} for {len(observations)} observations; expected (batch, {NUM_ACTIONS}) or (batch,)"
            )
        return scores, (np.asarray(results[1]).reshape(-1) if has_value else None)

    return ArrayAgent(
        forward,
        name=label,
        has_value=has_value,
        recipe=(load_onnx, (str(file), sampled, None, name)),
        sampled=sampled,
        seed=seed,
    )


def _onnx_numpy_type(onnx_type: str) -> type:
    """The numpy type of an ONNX input type such as ``tensor(int8)``."""
    return {
        "tensor(bool)": np.bool_,
        "tensor(int8)": np.int8,
        "tensor(uint8)": np.uint8,
        "tensor(int32)": np.int32,
        "tensor(int64)": np.int64,
        "tensor(float)": np.float32,
        "tensor(double)": np.float64,
    }.get(onnx_type, np.int8)


# ---------------------------------------------------------------------------------------------- Python agents
class PythonAgent(SeededAgent):
    """An object of the agent protocol (module docstring) as an :class:`Agent`; its actions checked legal."""

    def __init__(self, target: Any, name: str, recipe: tuple[Callable[..., Any], tuple[Any, ...]] | None = None):
        super().__init__(None)
        self.target = target
        self.name = name
        self._recipe = recipe
        self.has_value = callable(getattr(target, "value", None))
        self.logits = False

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        if self._recipe is None:
            raise TypeError(f"agent {self.name} cannot be sent to a worker process (build it from its py: spec)")
        return self._recipe

    def reset(self, seed: int | None = None) -> None:
        reset = getattr(self.target, "reset", None)
        if callable(reset):
            reset(seed)

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        return _legal(self.name, self.target.act(observation, action_mask), action_mask)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """The object's ``act_batch`` when it has one, else ``act`` row by row; every action checked legal."""
        batch = getattr(self.target, "act_batch", None)
        masks = np.asarray(action_masks)
        if callable(batch):
            actions = np.asarray(batch(observations, masks)).reshape(-1)
            if len(actions) != len(masks):
                raise ValueError(f"agent {self.name}: act_batch gave {len(actions)} actions for {len(masks)} positions")
        else:
            actions = [self.target.act(row, mask) for row, mask in zip(observations, masks, strict=True)]
        return np.array([_legal(self.name, action, mask) for action, mask in zip(actions, masks, strict=True)])

    def value(self, observation: np.ndarray) -> float:
        """The object's value of ``observation``, checked to be a number in ``[-1, 1]``."""
        return _checked_value(self.name, self.target.value(observation))

    def evaluate_batch(self, observations: np.ndarray, masks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Priors (the object's ``probabilities``, else uniform) and values of a batch, for the guided search."""
        if masks is None:
            masks = np.ones((len(observations), NUM_ACTIONS), dtype=bool)
        probabilities = getattr(self.target, "probabilities", None)
        rows = []
        for observation, mask in zip(observations, masks, strict=True):
            if callable(probabilities):
                row = np.asarray(probabilities(observation, mask.astype(np.int8)), dtype=np.float64).reshape(-1)
                if row.shape != (NUM_ACTIONS,) or not np.all(np.isfinite(row)) or np.any(row < 0):
                    raise ValueError(f"agent {self.name}: probabilities() must give {NUM_ACTIONS} numbers >= 0")
            else:
                row = mask.astype(np.float64)
            rows.append(row)
        values = [self.value(observation) for observation in observations]
        return np.array(rows), np.array(values)


def _checked_value(name: str, value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"agent {name}: value() returned {value!r:.40}, not a number") from None
    if not -1.0 <= number <= 1.0:  # also refuses NaN
        raise ValueError(f"agent {name}: value() returned {number!r}, expected a number in [-1, 1]")
    return number


def _import_target(source: str) -> Any:
    """The object ``MODULE:ATTR`` / ``FILE.py:ATTR`` names (imports the module or runs the file)."""
    target, _, attribute = source.rpartition(":")
    if target.endswith(".py"):
        file = regular_file(target, "Python agent file").resolve()
        module_name = "kahuna_py_agent_" + hashlib.sha256(str(file).encode()).hexdigest()[:16]
        module = sys.modules.get(module_name)
        if module is None or getattr(module, "__file__", None) != str(file):
            spec = importlib.util.spec_from_file_location(module_name, file)
            if spec is None or spec.loader is None:
                raise ValueError(f"cannot load Python agent file {quoted(target)}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module  # so that classes defined there can be pickled by reference
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(module_name, None)
                raise
    else:
        module = importlib.import_module(target)
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ValueError(f"{quoted(PYTHON_PREFIX + source)}: {quoted(target)} has no attribute {quoted(part)}")
        found = getattr(found, part)
    return found


def _required_positional(function: Callable[..., Any]) -> int | None:
    """How many positional arguments ``function`` requires (``None`` when it cannot be told)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(
        1
        for parameter in parameters
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and parameter.default is parameter.empty
    )


class _Function:
    """A bare ``act(observation, action_mask)`` function as an object of the protocol."""

    def __init__(self, function: Callable[[np.ndarray, np.ndarray], int]) -> None:
        self.act = function


def _as_agent(found: Any, name: str, recipe: tuple[Callable[..., Any], tuple[Any, ...]] | None = None) -> Agent:
    """What ``found`` (the protocol's ``ATTR``) gives, as an :class:`Agent` (one-line ``ValueError`` otherwise)."""
    if isinstance(found, Agent):
        return found
    if inspect.isclass(found):
        if issubclass(found, Agent):
            return found()
        return _as_agent(found(), name, recipe)
    if callable(getattr(found, "act", None)):
        return PythonAgent(found, name, recipe)
    if callable(found):
        required = _required_positional(found)
        if required == 0:
            return _as_agent(found(), name, recipe)
        if required in (None, 2):
            return PythonAgent(_Function(found), name, recipe)
    raise ValueError(
        f"{name} is not an agent: expected a function act(observation, action_mask), a class or factory of "
        "objects with act(), or an object with act() (see docs/EVALUATION.md, 'Evaluate your own agent')"
    )


def load_python(source: str, seed: int | None = None) -> Agent:
    """Build the Python agent ``MODULE:ATTR`` / ``FILE.py:ATTR`` (the protocol of the module docstring).

    Runs the module's code: the caller chose it.  An exception while
    importing or building it is a one-line ``ValueError`` naming the spec.
    """
    name = PYTHON_PREFIX + source
    try:
        agent = _as_agent(_import_target(source), name, (load_python, (source, None)))
    except (FileNotFoundError, ValueError):
        raise
    except Exception as error:  # the user's code may raise anything while it is imported or built
        message = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise ValueError(f"{quoted(name)} cannot be loaded: {type(error).__name__}: {message}") from None
    agent.reset(seed)
    return agent


# ---------------------------------------------------------------------------------------------- the guided search
class ExternalEvaluator:
    """A :class:`~kahuna_env.agents.evaluators.LeafEvaluator` from an agent that gives a value.

    For a batch of determinized positions: each encoded from the player to
    move, the agent's ``evaluate_batch`` gives scores and values; the priors
    are ``softmax(logits / prior_temperature)`` over the legal actions for a
    policy's logits, the agent's ``probabilities`` (or uniform) for a Python
    agent, and the win probability is ``(value + 1) / 2``.
    """

    def __init__(self, agent: ArrayAgent | PythonAgent, prior_temperature: float = DEFAULT_PRIOR_TEMPERATURE) -> None:
        self.agent = agent
        self.prior_temperature = float(prior_temperature)
        self.positions = 0
        self.calls = 0

    def evaluate(
        self, states: Sequence[KahunaGame], legal: Sequence[list[int]]
    ) -> tuple[list[list[float]], list[float]]:
        """Priors over each state's ``legal`` actions and the win probability of its player to move."""
        count = len(states)
        observations = np.empty((count, OBSERVATION_SIZE), dtype=np.float32)
        masks = np.zeros((count, NUM_ACTIONS), dtype=bool)
        for row, (state, actions) in enumerate(zip(states, legal, strict=True)):
            observations[row] = encode_observation(state, state.current_player)
            masks[row, actions] = True
        scores, values = self.agent.evaluate_batch(observations, masks)
        priors = []
        for row, actions in enumerate(legal):
            chosen = np.asarray(scores[row], dtype=np.float64)[actions]
            if getattr(self.agent, "logits", False):
                chosen = np.exp((chosen - chosen.max()) / self.prior_temperature)
            total = float(chosen.sum())
            priors.append(
                (chosen / total).tolist() if total > 0 and math.isfinite(total) else [1 / len(actions)] * len(actions)
            )
        wins = np.clip((np.asarray(values, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)
        self.positions += count
        self.calls += 1
        return priors, wins.tolist()


def guided_agent(agent: Agent, spec: EntrantSpec, seed: int | None = None) -> GuidedSearchAgent:
    """The search of ``spec`` (``AGENT@mcts:N``) guided by ``agent``'s value and policy.

    An agent without a value is refused in one line: the search would be
    guided by nothing (a constant) and still look like a guided search.
    """
    if not getattr(agent, "has_value", False) or not callable(getattr(agent, "evaluate_batch", None)):
        raise ValueError(
            f"{spec}: {spec.agent} gives no value, and the search {spec.agent}@mcts is guided by the agent's value; "
            "give the agent a value(observation) (or a 'value' output), or play it without @mcts"
        )
    assert spec.simulations is not None
    return GuidedSearchAgent(ExternalEvaluator(agent), simulations=spec.simulations, seed=seed, name=str(spec))
