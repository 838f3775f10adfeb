"""Evaluation: seat-balanced round robins between entrants, summarized with honest statistics.

:func:`run_evaluation` plays every pairing of the entrants (see
:mod:`kahuna_arena.entrants`) and returns an :class:`EvaluationReport`: per pairing
a :class:`kahuna_arena.stats.Tally` (wins/draws/losses, the score — wins plus half
the draws, per game — with its 95% Wilson interval, the mean point margin)
and the speed; for three or more entrants a Bradley–Terry ratings table on
the Elo scale with standard errors.  How the games are scheduled and seeded
(each deal twice, seats swapped; results independent of the worker count) is
in :mod:`kahuna_arena.match`; the game records it can write are :mod:`kahuna_arena.records`.
docs/EVALUATION.md describes the command ``kahuna-eval`` built on it.

Every entrant is resolved once (:func:`check_entrants`: the agent files
read, the networks built); games run in this process or in worker processes
(:class:`kahuna_env.workers.Workers`, ``spawn``) when ``workers > 1``, each
worker receiving the built agents once and resetting them with the game's
seeds before each game.  A worker that cannot start or whose game fails, a
worker process that dies, or an output that cannot be written (the results
store, a game record) ends the whole evaluation with an
:class:`EvaluationError` (one line), never a hang, carrying the report of the
games finished before it, as Ctrl-C does (:class:`EvaluationInterrupted`).
Every game's store row and record are written as it finishes.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kahuna_arena.entrants import (
    UnknownEntrant,
    entrant_label,
    one_torch_thread,
    parse_entrant,
    resolve_entrant,
)
from kahuna_arena.match import (
    MAX_BASE_SEED,
    MAX_WORKERS,
    GameResult,
    GameTask,
    check_evaluation_size,
    play_task,
    schedule,
)
from kahuna_arena.records import RECORD_FORMAT, game_record, write_record
from kahuna_arena.report import EvaluationReport, PairingResult, Rating, summarize
from kahuna_arena.store import (
    Entrant,
    ResultsStore,
    StoredGame,
    StoreError,
    content_entrant,
    failure_cause,
    file_sha256,
)
from kahuna_arena.store import entrant_identity as store_identity
from kahuna_env.agents.search import DEFAULT_SIMULATIONS
from kahuna_env.agents.spec import budget_spec
from kahuna_env.engine import KahunaConfig
from kahuna_env.workers import WorkerFailed, Workers, one_line
from kahuna_policy.registry import SHIPPED_AGENTS, SHIPPED_AGENTS_DIR

__all__ = [
    "RECORD_FORMAT",
    "EvaluationError",
    "EvaluationInterrupted",
    "EvaluationReport",
    "PairingResult",
    "Rating",
    "ResolvedEntrants",
    "WrittenGames",
    "check_entrants",
    "content_entrant",
    "deal_label",
    "entrant_identity",
    "game_record",
    "play_tasks",
    "progress_bar",
    "resolve_entrant",
    "run_evaluation",
    "stored_game",
    "summarize",
]


class EvaluationError(RuntimeError):
    """A game, a worker process or an output failed during an evaluation; the message is one line.

    ``report`` summarizes the games finished before the failure (their
    records and store rows are written), as :class:`EvaluationInterrupted`'s
    does; ``None`` when the evaluation failed before its games began.
    """

    def __init__(self, message: str, report: EvaluationReport | None = None) -> None:
        super().__init__(message)
        self.report = report


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during an evaluation: ``report`` summarizes the games finished before it (their records are written)."""

    def __init__(self, report: EvaluationReport) -> None:
        super().__init__("evaluation interrupted")
        self.report = report


@dataclasses.dataclass
class WrittenGames:
    """Where an evaluation wrote its games, filled in as it runs (for the count of each output after an early end).

    ``session`` is the results store's session of the evaluation (None
    without a store); ``records`` the game records written, in the order
    they were.  A game whose write failed is in neither.
    """

    session: int | None = None
    records: list[Path] = dataclasses.field(default_factory=list)


class WorkerError(RuntimeError):
    """Raised in a worker process: it could not build the entrants, or a game failed (one-line message)."""


# ---------------------------------------------------------------------------------------------- workers
@dataclasses.dataclass(frozen=True)
class ResolvedEntrants:
    """Entrant strings and the agents they name, built once (:func:`check_entrants`) and handed to the workers."""

    specs: tuple[str, ...]
    agents: tuple[Any, ...]
    sampled: bool = False


def _setup_worker(state: dict[str, Any], entrants: ResolvedEntrants, config: dict[str, Any], record: bool) -> None:
    """A worker's state: the entrants' agents as the parent built them (unpickled once), the rules, recording."""
    one_torch_thread(entrants.specs)
    state["agents"] = entrants.agents
    state["config"] = KahunaConfig.from_dict(config)
    state["record"] = record


def _play_task(agents: Sequence[Any], task: GameTask, config: KahunaConfig, record: bool) -> GameResult:
    """Play ``task`` between ``agents`` (indexed by entrant); a failure is a one-line :class:`WorkerError`."""
    try:
        return play_task((agents[task.seats[0]], agents[task.seats[1]]), task, config, record)
    except Exception as error:  # one line for the user (sent to the parent from a worker)
        raise WorkerError(f"game {task.index} of pairing {task.pairing} failed: {one_line(error)}") from None


def _run_in_worker(state: dict[str, Any], task: GameTask) -> GameResult:
    return _play_task(state["agents"], task, state["config"], state["record"])


def _play_in_workers(
    tasks: Sequence[GameTask],
    workers: int,
    entrants: ResolvedEntrants,
    config: KahunaConfig,
    record: bool,
    on_result: Callable[[GameResult], bool | None],
) -> None:
    """Play ``tasks`` in ``workers`` spawned processes, handing each result to ``on_result`` as it arrives.

    When ``on_result`` returns true no further game is started (those
    running are stopped).  The first failure (a worker that cannot start, a
    failed game, a worker process that dies) stops the games and raises
    :class:`EvaluationError`.
    """
    try:
        with Workers(min(workers, len(tasks)), _setup_worker, (entrants, config.to_dict(), record)) as pool:
            for _, result in pool.as_completed(_run_in_worker, tasks):
                if on_result(result):
                    return  # the caller has what it needs
    except WorkerFailed as error:
        raise EvaluationError(str(error)) from None


# ---------------------------------------------------------------------------------------------- the store
def _named_agent_file(name: str) -> Path:
    """Where the shipped agent ``name`` lies, found without importing torch (:mod:`kahuna_policy.registry`)."""
    spec = importlib.util.find_spec("kahuna_policy")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"shipped agent {name!r}: the policy package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / SHIPPED_AGENTS_DIR / SHIPPED_AGENTS[name]


def entrant_identity(spec: str, sampled: bool = False) -> Entrant:
    """:func:`kahuna_arena.store.entrant_identity` of ``spec``, the store's key of what it holds (the shipped
    agents' files found here, without torch)."""
    return store_identity(spec, {name: _named_agent_file(name) for name in SHIPPED_AGENTS}, sampled)


def deal_label(identity: Entrant) -> str:
    """What an entrant's games are seeded from (:func:`kahuna_arena.match.schedule`): what it is, never how it
    is written.

    Derived from the store's identity (:func:`entrant_identity`): ``x.pt``,
    ``./x.pt`` and a renamed copy of it play the same games.  A baseline is
    its name with the search's default budget left out (``mcts``, ``mcts:50``),
    a shipped agent's file its name (``champion``, whatever path it is read
    from), any other file ``sha256:<hex>``, a Python agent its key; a guided
    search appends ``@mcts`` (``@mcts:N`` for another budget than the
    default).  Whether a policy samples its moves does not change its deals.
    """
    key, _, _ = identity.key.partition("#")
    if key.startswith("baseline:"):
        return _short_budget(key.removeprefix("baseline:"))
    agent, at, search = key.partition("@")
    digest = agent.removeprefix("sha256:")
    agent = _shipped_digests().get(digest, agent)
    return agent + (_short_budget(at + search) if at else "")


def _short_budget(spec: str) -> str:
    """``mcts:200`` (the default budget) written ``mcts``; ``@mcts:200`` as ``@mcts``; any other unchanged."""
    default = budget_spec(DEFAULT_SIMULATIONS)
    return spec[: -len(default)] + "mcts" if spec.endswith(default) else spec


_SHIPPED_DIGESTS: dict[str, str] = {}


def _shipped_digests() -> dict[str, str]:
    """sha256 -> name of each shipped agent's file (read once per process)."""
    if not _SHIPPED_DIGESTS:
        for name in SHIPPED_AGENTS:
            try:
                _SHIPPED_DIGESTS[file_sha256(_named_agent_file(name))] = name
            except OSError:
                continue
    return _SHIPPED_DIGESTS


def entrant_kind(spec: str) -> str:
    """The store's kind of an entrant string: ``baseline``, ``search`` (guided by a network) or ``file``.

    A bare name that names nothing here (a report's file from another machine) is a ``file``.
    """
    try:
        entrant = parse_entrant(spec)
    except UnknownEntrant:
        return "file"
    if entrant.kind == "baseline":
        return "baseline"
    return "file" if entrant.simulations is None else "search"


def stored_game(result: GameResult) -> StoredGame:
    """A game's result as the results store keeps it (seat 0's score, every seed, time per move)."""
    task = result.task
    per_move = tuple(
        result.think_seconds[seat] / result.decisions[seat] if result.decisions[seat] else None for seat in (0, 1)
    )
    return StoredGame(
        game_index=task.index,
        game_seed=task.game_seed,
        result=0.5 if result.winner is None else float(result.winner == 0),
        score0=result.scores[0],
        score1=result.scores[1],
        moves=result.moves,
        agent_seeds=task.agent_seeds,
        choice_seed=task.choice_seed,
        seconds_per_move=(per_move[0], per_move[1]),
    )


# ---------------------------------------------------------------------------------------------- driver
def play_tasks(
    tasks: Sequence[GameTask],
    entrants: ResolvedEntrants,
    workers: int,
    config: KahunaConfig,
    record: bool,
    on_result: Callable[[GameResult], bool | None],
) -> None:
    """Play ``tasks`` (in this process for ``workers == 1``), handing each result to ``on_result``.

    ``entrants`` are built once (:func:`check_entrants`): this process plays
    with them, and each worker receives them as they are.  ``on_result``
    returning true stops the play: no further game is started.  A failure is
    an :class:`EvaluationError` (one line).
    """
    if workers > 1:
        _play_in_workers(tasks, workers, entrants, config, record, on_result)
        return
    for task in tasks:
        try:
            result = _play_task(entrants.agents, task, config, record)
        except WorkerError as error:
            raise EvaluationError(str(error)) from None
        if on_result(result):
            return


def check_entrants(entrants: Sequence[str] | ResolvedEntrants, sampled: bool = False) -> ResolvedEntrants:
    """Resolve every entrant once (loading agent files), so that bad names or files fail before any game.

    Returns the entrants with their agents, which :func:`run_evaluation` and
    :func:`play_tasks` use as they are (an already resolved set is returned
    unchanged).  Raises ``ValueError`` for fewer than two entrants,
    duplicates or an unknown name, ``FileNotFoundError`` for a missing file.
    """
    if isinstance(entrants, ResolvedEntrants):
        return entrants
    entrants = tuple(entrants)
    if len(entrants) < 2:
        raise ValueError(f"an evaluation needs at least two entrants, got {len(entrants)}")
    duplicates = sorted({spec for spec in entrants if entrants.count(spec) > 1})
    if duplicates:
        raise ValueError(f"entrant(s) given more than once: {', '.join(duplicates)}")
    agents = tuple(resolve_entrant(spec, seed=0, sampled=sampled) for spec in entrants)
    return ResolvedEntrants(entrants, agents, sampled)


def run_evaluation(
    entrants: Sequence[str] | ResolvedEntrants,
    games: int,
    seed: int = 0,
    workers: int = 1,
    config: KahunaConfig | None = None,
    sampled: bool = False,
    record_dir: str | Path | None = None,
    progress: bool = False,
    store: ResultsStore | None = None,
    source: str = "kahuna-eval",
    common_deals: bool = False,
    written: WrittenGames | None = None,
) -> EvaluationReport:
    """Play a seat-balanced round robin and summarize it.

    Args:
        entrants: two or more entrant strings (see :func:`kahuna_arena.entrants.resolve_entrant`), or
            what :func:`check_entrants` returned for them (built once, not again).
        games: games per pairing, a positive even number.
        seed: base seed of every game (see :mod:`kahuna_arena.match`).
        workers: worker processes (1 plays in this process).
        config: rule options (``None``: the defaults).
        sampled: policy entrants sample their moves instead of the argmax.
        record_dir: write every game as a JSON record there (:mod:`kahuna_arena.records`).
        progress: show a tqdm progress bar on stderr.
        store: write every game to this results store as it finishes (one transaction per game).
        source: the tool named in the store's session (``kahuna-eval``, ``kahuna-ratings``, ...).
        common_deals: seed the deals from ``seed`` and the game number only, and each agent from its
            own name, so that every pairing (and every evaluation with this seed) plays the same deals
            against the same opponent behaviour (see :func:`kahuna_arena.match.schedule`).
        written: filled in with the store's session and each record file as it is written, so that a
            caller can say, after an early end, how many games each output holds.

    Raises ``ValueError`` for bad arguments and entrants (before any game is
    played), ``FileNotFoundError`` for a missing checkpoint,
    :class:`EvaluationError` when a game or a worker fails, ``OSError`` when
    the records cannot be written, and :class:`EvaluationInterrupted` (a
    ``KeyboardInterrupt``) on Ctrl-C, carrying the report of the games
    finished so far (whose records are written).
    """
    resolved = check_run(entrants, games, seed, workers, sampled)
    entrants = resolved.specs
    config = config or KahunaConfig()
    record = record_dir is not None
    if record:
        Path(record_dir).mkdir(parents=True, exist_ok=True)
    identities = [entrant_identity(spec, sampled) for spec in entrants]  # what each name holds as the games begin
    tasks = schedule([deal_label(identity) for identity in identities], games, seed, common_deals=common_deals)
    written = written if written is not None else WrittenGames()
    save = _store_writer(store, entrants, sampled, config, seed, source, common_deals, identities, written)

    def keep(result: GameResult) -> None:
        """Store a finished game and write its record, as it finishes (a later failure never loses it).

        Both are tried; the first that fails is raised after the other is written.
        """
        failures = []
        try:
            save(result)
        except StoreError as error:
            failures.append(error)
        if record:
            path = Path(record_dir) / _record_name(entrants, result)
            try:
                write_record(path, _record(entrants, result, config))
            except OSError as error:
                failures.append(EvaluationError(f"cannot write the game record {path}: {failure_cause(error, path)}"))
            else:
                written.records.append(path)
        if failures:
            raise failures[0]

    started = time.perf_counter()
    results, stop = _play_all(tasks, resolved, workers, config, record, keep, progress)
    elapsed = time.perf_counter() - started
    pairings, ratings = summarize(entrants, games, results)
    report = EvaluationReport(
        entrants=entrants,
        games_per_pairing=games,
        seed=seed,
        config=config.to_dict(),
        sampled=sampled,
        pairings=pairings,
        ratings=ratings,
        elapsed=elapsed,
        workers=workers,
        common_deals=common_deals,
        identities={spec: identity.key for spec, identity in zip(entrants, identities, strict=True)},
    )
    if isinstance(stop, KeyboardInterrupt):
        raise EvaluationInterrupted(report) from stop  # the cause says which: Ctrl-C, or a signal handled as it
    if stop is not None:
        raise EvaluationError(str(stop) if isinstance(stop, EvaluationError) else one_line(stop), report)
    return report


def check_run(
    entrants: Sequence[str] | ResolvedEntrants, games: int, seed: int, workers: int, sampled: bool
) -> ResolvedEntrants:
    """The checks every evaluation makes before its first game (one-line ``ValueError``s); the resolved entrants."""
    count = len(entrants.specs) if isinstance(entrants, ResolvedEntrants) else len(entrants)
    check_evaluation_size(max(count, 2), games)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be an integer in [1, {MAX_WORKERS}], got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_BASE_SEED:
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1], got {seed!r}")
    resolved = check_entrants(entrants, sampled)
    if resolved.sampled != sampled:
        raise ValueError(f"the entrants were resolved with sampled={resolved.sampled}, not sampled={sampled}")
    return resolved


class _NoBar:
    """The stand-in of :func:`progress_bar` where tqdm is not installed: counts nothing, prints nothing."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, count: int = 1) -> None:
        """Ignore ``count`` finished games."""


def progress_bar(total: int, enabled: bool) -> Any:
    """A context manager with ``update(n)``: tqdm's bar over ``total`` games, shown when ``enabled``.

    tqdm comes with the ``train`` extra; ``pip install kahuna-rl`` alone (the environment) still plays
    the baselines with ``kahuna-eval``, without a bar, rather than failing on the missing module.
    """
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc="games", unit="game", disable=not enabled, dynamic_ncols=True)


def _play_all(
    tasks: Sequence[GameTask],
    entrants: ResolvedEntrants,
    workers: int,
    config: KahunaConfig,
    record: bool,
    keep: Callable[[GameResult], None],
    progress: bool,
) -> tuple[list[GameResult], BaseException | None]:
    """Play every task with a progress bar, keeping each result; the results in game order, and what stopped the play.

    ``keep`` stores and records each game as it finishes.  Whatever ends the
    play early (Ctrl-C, a failed game, a dead worker, an output that cannot
    be written) is returned, not raised, with the games finished before it
    (a game whose output failed included), so the caller reports them.
    """
    results: list[GameResult] = []
    stop: BaseException | None = None
    try:
        with progress_bar(len(tasks), progress) as bar:

            def collect(result: GameResult) -> None:
                results.append(result)
                bar.update(1)
                keep(result)

            play_tasks(tasks, entrants, workers, config, record, collect)
    except (KeyboardInterrupt, Exception) as error:  # every early end keeps the finished games
        stop = error
    results.sort(key=lambda r: (r.task.pairing, r.task.index))
    return results, stop


def _store_writer(
    store: ResultsStore | None,
    entrants: Sequence[str],
    sampled: bool,
    config: KahunaConfig,
    seed: int,
    source: str,
    common_deals: bool = False,
    identities: Sequence[Entrant] | None = None,
    written: WrittenGames | None = None,
) -> Callable[[GameResult], None]:
    """A function writing one game to ``store`` (nothing without a store); the session starts now.

    The session's ``command`` is the entrants, followed by ``--common-deals`` when the seeds were those of
    common deals (:func:`kahuna_arena.match.schedule`; every game's own seeds are stored with it either way).
    ``identities`` are the entrants' store identities when the caller already took them
    (:func:`entrant_identity` of each, otherwise taken now); ``written.session`` is set to the session.
    """
    if store is None:
        return lambda result: None
    if identities is None:
        identities = [entrant_identity(spec, sampled) for spec in entrants]
    command = " ".join([*entrants, "--common-deals"] if common_deals else entrants)
    session = store.start_session(source, config.to_dict(), base_seed=seed, sampled=sampled, command=command)
    if written is not None:
        written.session = session

    def save(result: GameResult) -> None:
        seat0, seat1 = result.task.seats
        store.add_game(session, identities[seat0], identities[seat1], stored_game(result))

    return save


def _record_name(entrants: Sequence[str], result: GameResult) -> str:
    seat0, seat1 = (entrant_label(entrants[i]) for i in result.task.seats)
    return f"pairing{result.task.pairing:02d}-game{result.task.index:04d}-{seat0}-vs-{seat1}.json"


def _record(entrants: Sequence[str], result: GameResult, config: KahunaConfig) -> dict[str, Any]:
    """The record of one evaluation game (:func:`kahuna_arena.records.game_record`)."""
    return game_record(
        players=[entrants[i] for i in result.task.seats],
        seed=result.task.game_seed,
        config=config,
        actions=result.actions,
        result={"scores": result.scores, "final_points": result.final_points, "winner": result.winner},
        pairing=result.task.pairing,
        game=result.task.index,
    )
