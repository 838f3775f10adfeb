"""The ladder of a results store: the fit, the next pairings, report imports, the runs plot, the web's summary.

The ladder is a Bradley–Terry fit (:func:`kahuna_arena.stats.fit_bradley_terry`,
draws half a win, :data:`kahuna_arena.report.PRIOR_DRAWS` virtual draw per pairing)
over every stored game under the chosen rules, a game repeated with the same
seeds counted once, plus imported tallies (:func:`fit_ladder`).  Its scale
is pinned by fixed *anchors*: by default the baselines of the ratings
table of docs/RATINGS.md at their ratings there (:data:`DEFAULT_ANCHORS`, the project's
one Elo scale, :data:`kahuna_arena.stats.ANCHOR_RATINGS`, which the trainer's ``elo/*`` metrics use too), so that a
new entrant's rating means the same as in that table; the shift puts the
anchors present at their ratings on average, and each ``±95%`` is the
interval of the rating relative to that anchor mean.  Entrants not linked to
the anchors by games are listed as unrated.

:func:`schedule_pairings` proposes the pairings whose next games are worth
most: an entrant without games first meets the ladder entrants nearest the
middle of the ladder; otherwise pairings are ranked by the variance of their
rating difference times ``p (1 - p)`` (the Fisher information of one game at
the predicted score ``p``), so uncertain ratings of evenly matched entrants
come first.  :func:`play_pairings` plays them into the store, each on deals
no earlier session of the store used (or all on the same fresh deals).

An import (:func:`import_report`) is keyed by the games' identity, not the
file's bytes: games the store holds already (imported before from any copy
of the report, or stored one by one by ``kahuna-eval --db``) are not added
again.  A malformed or partial report is a one-line ``ValueError``.

:func:`plot_runs` draws Elo against learner decisions per training run, and
:func:`ladder_summary` is the ladder as the browser shows it (``kahuna-serve
--db``).  The command line is :mod:`kahuna_arena.ratings_cli` (``kahuna-ratings``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kahuna_arena.entrants import split_search
from kahuna_arena.match import MAX_BASE_SEED, MAX_GAMES
from kahuna_arena.report import PRIOR_DRAWS, EvaluationReport
from kahuna_arena.stats import ANCHOR_RATINGS, Z95, expected_score, fit_bradley_terry
from kahuna_arena.store import Entrant, ImportedTally, ResultsStore, StoreError, baseline_entrant
from kahuna_env.cli import first_line, terminal_safe
from kahuna_env.engine import KahunaConfig

DEFAULT_ANCHORS = ANCHOR_RATINGS
"""The ladder's default anchors: :data:`kahuna_arena.stats.ANCHOR_RATINGS` itself (the baselines of docs/RATINGS.md's
table at their ratings there), the scale of the trainer's ``elo/*`` metrics as well."""
MAX_REPORT_BYTES = 16 * 1024 * 1024
"""The largest report ``--import-report`` reads."""


@dataclasses.dataclass(frozen=True)
class LadderRow:
    """One entrant of the ladder.

    Attributes:
        entrant: who (key, label, provenance).
        elo: rating on the anchored scale (``None`` when not linked to the anchors by games).
        elo_se: standard error relative to the anchors' mean (Elo points).
        games: games counted for it (imported tallies included).
        score: its score per game over them.
    """

    entrant: Entrant
    elo: float | None
    elo_se: float | None
    games: int
    score: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        half = None if self.elo_se is None else Z95 * self.elo_se
        return {
            "entrant": self.entrant.label,
            "key": self.entrant.key,
            "kind": self.entrant.kind,
            "run": self.entrant.run,
            "update": self.entrant.run_update,
            "decisions": self.entrant.decisions,
            "elo": self.elo,
            "elo_se": self.elo_se,
            "elo_ci95": None if self.elo is None or half is None else [self.elo - half, self.elo + half],
            "games": self.games,
            "score": self.score,
        }


@dataclasses.dataclass(frozen=True)
class Ladder:
    """The fitted ladder: rows best first (unrated last), the anchors used, and the fit's pieces.

    Attributes:
        rows: every entrant with games.
        anchors: entrant label -> fixed rating, for the anchors that took part.
        keys: entrant keys of the fitted entrants, in the order of ``elo`` / ``covariance``.
        elo: fitted ratings (anchored), by ``keys``.
        covariance: covariance of the anchored ratings (Elo points squared).
        games: ``games[i, j]``: games between fitted entrants ``i`` and ``j``.
    """

    rows: tuple[LadderRow, ...]
    anchors: dict[str, float]
    keys: tuple[str, ...]
    elo: np.ndarray
    covariance: np.ndarray
    games: np.ndarray

    def table(self) -> str:
        """The ladder as text (labels with control characters escaped: a store's labels are not trusted)."""
        shown = {row.entrant.key: terminal_safe(row.entrant.label) for row in self.rows}
        width = max([len("entrant"), *(len(label) for label in shown.values())])
        lines = [f"{'rank':>4}  {'entrant':<{width}}  {'Elo':>6}  {'±95%':>5}  {'games':>6}  {'score':>5}"]
        for rank, row in enumerate(self.rows, 1):
            label = shown[row.entrant.key]
            if row.elo is None:
                lines.append(f"{'-':>4}  {label:<{width}}  {'-':>6}  {'-':>5}  {row.games:>6}  {row.score:>5.3f}")
            else:
                half = Z95 * (row.elo_se or 0.0)
                lines.append(
                    f"{rank:>4}  {label:<{width}}  {row.elo:>6.0f}  {half:>5.0f}  {row.games:>6}  {row.score:>5.3f}"
                )
        if self.anchors:
            pinned = ", ".join(f"{terminal_safe(name)} {value:g}" for name, value in self.anchors.items())
            lines.append(f"(Bradley-Terry fit over every stored game; scale pinned by the anchors' mean: {pinned})")
        else:
            lines.append("(Bradley-Terry fit over every stored game; no anchor took part: the mean rating is 1000)")
        if any(row.elo is None for row in self.rows):
            lines.append("(-: not linked to the anchors by games, no rating)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json``, format ``kahuna-ratings-v1``)."""
        return {
            "format": "kahuna-ratings-v1",
            "anchors": self.anchors,
            "rating_definition": (
                f"Bradley-Terry maximum likelihood over every stored game (a game repeated with the same seeds once), "
                f"draws as half wins, {PRIOR_DRAWS:g} virtual draw per pairing; Elo = 400*log10(strength) shifted so "
                "that the anchors average their fixed ratings; se relative to the anchors' mean"
            ),
            "ratings": [row.to_dict() for row in self.rows],
        }


# ---------------------------------------------------------------------------------------------- the fit
def _components(linked: np.ndarray) -> list[list[int]]:
    """Connected components of the undirected graph ``linked[i, j]``."""
    n = linked.shape[0]
    seen: set[int] = set()
    parts = []
    for start in range(n):
        if start in seen:
            continue
        part, stack = [], [start]
        seen.add(start)
        while stack:
            node = stack.pop()
            part.append(node)
            for other in np.flatnonzero(linked[node]):
                if int(other) not in seen:
                    seen.add(int(other))
                    stack.append(int(other))
        parts.append(sorted(part))
    return parts


def fit_ladder(store: ResultsStore, rules: dict[str, Any] | None, anchors: dict[str, float]) -> Ladder:
    """The ladder of every game in ``store`` under ``rules`` (``None``: all), pinned by ``anchors`` (spec -> Elo)."""
    from kahuna_arena.evaluation import entrant_identity

    entrants = {e.key: e for e in store.entrants()}
    counts = store.pair_counts(rules)
    keys = sorted({c.seat0 for c in counts} | {c.seat1 for c in counts}, key=list(entrants).index)
    index = {key: i for i, key in enumerate(keys)}
    n = len(keys)
    scores = np.zeros((n, n))
    games = np.zeros((n, n))
    for c in counts:
        i, j = index[c.seat0], index[c.seat1]
        scores[i, j] += c.points
        scores[j, i] += c.games - c.points
        games[i, j] += c.games
        games[j, i] += c.games
    anchor_keys = {entrant_identity(spec).key: (spec, value) for spec, value in anchors.items()}
    parts = _components(games > 0) if n else []
    # The part holding the anchors (the most anchors, then the most entrants) is rated; the rest is not.
    part = max(parts, key=lambda p: (sum(keys[i] in anchor_keys for i in p), len(p)), default=[])
    rated: dict[int, tuple[float, float]] = {}
    used: dict[str, float] = {}
    elo = np.zeros(0)
    covariance = np.zeros((0, 0))
    if len(part) >= 2:
        sub = np.ix_(part, part)
        fit = fit_bradley_terry(scores[sub], games[sub], prior_draws=PRIOR_DRAWS)
        pinned = [k for k, i in enumerate(part) if keys[i] in anchor_keys]
        weights = np.zeros(len(part))
        if pinned:
            weights[pinned] = 1.0 / len(pinned)
            fixed = np.array([anchor_keys[keys[part[k]]][1] for k in pinned])
            shift = float(np.mean(fixed - fit.elo[pinned]))
            used = {anchor_keys[keys[part[k]]][0]: anchor_keys[keys[part[k]]][1] for k in pinned}
        else:
            weights[:] = 1.0 / len(part)
            shift = 0.0
        # Ratings relative to the weighted mean w: R = (I - 1 w^T) e, so Cov(R) = M C M^T.
        relative = np.eye(len(part)) - np.outer(np.ones(len(part)), weights)
        covariance = relative @ fit.covariance @ relative.T
        elo = fit.elo + shift
        for k, i in enumerate(part):
            rated[i] = (float(elo[k]), float(math.sqrt(max(covariance[k, k], 0.0))))
    rows = []
    for i, key in enumerate(keys):
        total = games[i].sum()
        value, se = rated.get(i, (None, None))
        rows.append(LadderRow(entrants[key], value, se, int(total), float(scores[i].sum() / total) if total else 0.0))
    rows.sort(key=lambda r: (r.elo is None, -(r.elo or 0.0)))
    fitted = tuple(keys[i] for i in part) if len(part) >= 2 else ()
    return Ladder(
        rows=tuple(rows),
        anchors=used,
        keys=fitted,
        elo=elo,
        covariance=covariance,
        games=games[np.ix_(part, part)] if fitted else np.zeros((0, 0)),
    )


# ---------------------------------------------------------------------------------------------- scheduling
@dataclasses.dataclass(frozen=True)
class Pairing:
    """A proposed pairing: labels and keys of both entrants, and why (the value of its next game)."""

    a: Entrant
    b: Entrant
    value: float
    reason: str


def schedule_pairings(
    ladder: Ladder, newcomers: Sequence[Entrant], count: int, allowed: Callable[[Entrant], bool] | None = None
) -> list[Pairing]:
    """The ``count`` most informative pairings (see the module docstring); newcomers without games first.

    ``allowed`` (``--play``: whether an entrant can be played here) leaves out pairings with other entrants;
    learners evaluated during training (kind ``training``, no file) are never proposed.
    """
    by_key = {row.entrant.key: row for row in ladder.rows}
    rated = [row for row in ladder.rows if row.elo is not None]
    proposals: list[Pairing] = []
    for newcomer in newcomers:
        if newcomer.key in ladder.keys:
            continue
        middle = float(np.median([row.elo for row in rated])) if rated else 0.0
        nearest = sorted(rated, key=lambda row: abs((row.elo or 0.0) - middle))
        for row in nearest:
            if row.entrant.key != newcomer.key:
                proposals.append(
                    Pairing(newcomer, row.entrant, math.inf, "no games yet: meets the middle of the ladder")
                )
    scored = []
    position = {key: i for i, key in enumerate(ladder.keys)}
    for i_key in ladder.keys:
        for j_key in ladder.keys:
            i, j = position[i_key], position[j_key]
            if i >= j or "training" in (by_key[i_key].entrant.kind, by_key[j_key].entrant.kind):
                continue  # a learner evaluated during training is no file: it cannot be played again
            c = ladder.covariance
            variance = c[i, i] + c[j, j] - 2 * c[i, j]
            p = expected_score(ladder.elo[i], ladder.elo[j])
            value = variance * p * (1 - p)
            reason = f"difference ±{Z95 * math.sqrt(max(variance, 0.0)):.0f} Elo, predicted score {p:.2f}"
            scored.append(Pairing(by_key[i_key].entrant, by_key[j_key].entrant, float(value), reason))
    scored.sort(key=lambda p: -p.value)
    chosen = proposals + scored
    if allowed is not None:
        verdicts: dict[str, bool] = {}

        def ok(entrant: Entrant) -> bool:
            if entrant.key not in verdicts:
                verdicts[entrant.key] = allowed(entrant)
            return verdicts[entrant.key]

        chosen = [p for p in chosen if ok(p.a) and ok(p.b)]
    return chosen[:count]


def fresh_seed(store: ResultsStore) -> int:
    """A base seed no session of the store used (so new games are new deals, never a repeat)."""
    rows = store.query("SELECT MAX(base_seed) FROM sessions")
    return 0 if not rows or rows[0][0] is None else int(rows[0][0]) + 1


def checked_entrant(spec: str, sampled: bool = False) -> Entrant:
    """The store identity of the entrant ``spec``, once it is built here (a bad name or file raises, as in
    :func:`kahuna_arena.evaluation.check_entrants`: ``ValueError`` or ``FileNotFoundError``)."""
    from kahuna_arena.evaluation import check_entrants, entrant_identity

    check_entrants([spec, "random" if spec != "random" else "greedy"])
    return entrant_identity(spec, sampled)


def playable_spec(entrant: Entrant, sampled: bool = False) -> str:
    """The spec to play ``entrant`` with: its label, when that still names the same content."""
    try:
        if checked_entrant(entrant.label, sampled).key == entrant.key:
            return entrant.label
    except (OSError, ValueError):
        pass
    raise ValueError(
        f"cannot play {entrant.label!r}: no agent with its content is at that name here "
        f"(stored as {entrant.key[:23]}...)"
    )


def can_play(entrant: Entrant) -> bool:
    """Whether ``entrant`` can be played here (:func:`playable_spec`)."""
    try:
        playable_spec(entrant)
    except ValueError:
        return False
    return True


def play_pairings(
    store: ResultsStore,
    specs: Sequence[tuple[str, str]],
    games: int,
    workers: int,
    config: KahunaConfig,
    common_deals: bool = False,
    progress: bool = False,
    source: str = "kahuna-ratings",
) -> Iterator[tuple[str, str, EvaluationReport]]:
    """Play ``games`` games of every pairing ``(a, b)`` of ``specs`` into ``store``; yields each pairing's report.

    Each pairing gets a base seed no session used before (:func:`fresh_seed`);
    with ``common_deals`` they all share one, the deals and agent seeds of
    :func:`kahuna_arena.match.schedule`'s common deals.  A failure raises
    :func:`kahuna_arena.evaluation.run_evaluation`'s error; the games finished
    before it are in the store.
    """
    from kahuna_arena.entrants import one_torch_thread
    from kahuna_arena.evaluation import run_evaluation

    one_torch_thread(spec for pair in specs for spec in pair)
    shared_seed = fresh_seed(store) if common_deals else None
    for a, b in specs:
        report = run_evaluation(
            [a, b],
            games=games,
            seed=fresh_seed(store) if shared_seed is None else shared_seed,
            workers=workers,
            config=config,
            store=store,
            source=source,
            progress=progress,
            common_deals=common_deals,
        )
        yield a, b, report


# ---------------------------------------------------------------------------------------------- import
@dataclasses.dataclass(frozen=True)
class ImportOutcome:
    """What ``--import-report`` did: pairings added as tallies, and pairings whose games the store already held."""

    added: int
    known: int


@dataclasses.dataclass(frozen=True)
class ReportGames:
    """What identifies the games of a ``kahuna-eval --json`` report, checked (:func:`check_report`).

    Attributes:
        rules: the rule set (``KahunaConfig.to_dict()``).
        seed: the base seed (``None`` in a report too old to record it).
        common_deals: whether the seeds were those of common deals (:func:`kahuna_arena.match.schedule`).
        sampled: whether policy entrants sampled their moves.
        games_per_pairing: games of every pairing.
        entrants: the entrants as the report names them.
        pairings: ``(a, b, wins, draws, losses)`` per pairing, ``a``'s side.
    """

    rules: dict[str, Any]
    seed: int | None
    common_deals: bool
    sampled: bool
    games_per_pairing: int
    entrants: tuple[str, ...]
    pairings: tuple[tuple[str, str, int, int, int], ...]

    def digest(self) -> str:
        """sha256 of the games' identity (not of the file: any formatting of the same report gives the same)."""
        return hashlib.sha256(_canonical(dataclasses.asdict(self)).encode()).hexdigest()

    def games_key(self, a: str, b: str, identities: dict[str, Entrant]) -> str:
        """The identity of the games of the pairing ``a`` vs ``b``: the rules, the seeds' sources and the entrants.

        Game ``k`` of that pairing is the same game in every report that shares
        this key (:func:`kahuna_arena.match.schedule` derives its seeds from these
        alone), whatever else the report holds.
        """
        fields = {
            "rules": self.rules,
            "seed": self.seed,
            "common_deals": self.common_deals,
            "names": [a, b],
            "entrants": [identities[a].key, identities[b].key],
        }
        return "games:" + hashlib.sha256(_canonical(fields).encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclasses.dataclass(frozen=True)
class CheckedReport:
    """A ``kahuna-eval --json`` report read and checked whole (:func:`read_report`), ready to import.

    Attributes:
        path: the file it was read from.
        games: its games, every number checked (:func:`check_report`).
        identities: each entrant as the store keys it (:func:`_report_identities`).
        command: ``sha256:`` and the digest of the file's bytes (the import session's ``command``).
    """

    path: Path
    games: ReportGames
    identities: dict[str, Entrant]
    command: str


def read_report(path: Path) -> CheckedReport:
    """Read and check a report to import, whole, before any store is opened; a one-line ``ValueError`` if bad.

    ``kahuna-ratings --import-report`` calls it first, so a malformed report
    creates no store and changes none.
    """
    raw, data = _read_report(path)
    games = check_report(path, data)
    identities = _report_identities(path, data, games.digest())
    return CheckedReport(path, games, identities, f"sha256:{hashlib.sha256(raw).hexdigest()}")


def import_report(store: ResultsStore, path: Path | CheckedReport) -> ImportOutcome:
    """Add a ``kahuna-eval --json`` report's pairings to ``store`` as imported tallies, unless it holds them already.

    The report's games were not kept one by one, so each pairing becomes one
    tally (wins, draws, losses) in a session marked ``imported`` with
    ``source = 'import'`` and the file's sha256.  Imports are keyed by the
    games' identity (:meth:`ReportGames.games_key`: the rules, the seeds'
    sources and the entrants), not by the file's bytes: a pairing whose
    games the store already holds, imported before from any copy of the
    report or stored one by one by ``kahuna-eval --db``, adds nothing; one
    that extends them (more games on the same seed) adds only its new games'
    results; counts that contradict what the store holds are refused.  A
    partial report (interrupted) is refused: which of its games were played
    is not recorded.  All tallies are written in one transaction.

    Each entrant is keyed by the identity the report recorded when it was
    played (``identities``).  A report from before that record cannot say
    what a name such as ``champion`` or a file path held then, so only its
    baselines join their live entrants: its other entrants are keyed by the
    report's games (``report:SHA16:SPEC``) and labelled ``SPEC
    [REPORT-FILE-NAME]``: rated on the ladder beside today's agent of that
    name, never taken for it.  Raises a one-line ``ValueError`` for a file
    that is not such a report; ``path`` may be one :func:`read_report`
    checked already.
    """
    checked = path if isinstance(path, CheckedReport) else read_report(path)
    path, report, identities, command = checked.path, checked.games, checked.identities, checked.command
    if store.query("SELECT id FROM sessions WHERE source = 'import' AND command = ?", (command,)):
        return ImportOutcome(0, len(report.pairings))  # this very file, imported before (by any version)
    tallies = []
    for number, (a, b, wins, draws, losses) in enumerate(report.pairings):
        tally = _new_games(store, report, identities, a, b, (wins, draws, losses))
        if tally is None:
            raise ValueError(
                f"{path}: pairings[{number}] ({_short_label(a)} vs {_short_label(b)}): its counts contradict the "
                "games of it the store already holds (imported before or stored one by one); nothing imported"
            )
        if tally.game_count:
            tallies.append(tally)
    if tallies:
        store.add_import(
            report.rules,
            tallies,
            base_seed=report.seed,
            sampled=report.sampled,
            command=command,
            note=f"import of {path.name}: per-pairing totals of a kahuna-eval report (its games were not kept one "
            "by one)",
        )
    return ImportOutcome(len(tallies), len(report.pairings) - len(tallies))


def _new_games(
    store: ResultsStore,
    report: ReportGames,
    identities: dict[str, Entrant],
    a: str,
    b: str,
    counts: tuple[int, int, int],
) -> ImportedTally | None:
    """The tally of the games of pairing ``a`` vs ``b`` the store does not hold yet (``game_count`` 0: none).

    The store holds game ``k`` of the pairing's schedule when a tally of the
    same games key covers it, or when it was stored one by one (the same
    seeds, entrants and rules).  The new games' results are the report's
    counts less those known ones; ``None`` when they do not add up (the
    report contradicts the store).
    """
    games = report.games_per_pairing
    key = report.games_key(a, b, identities)
    earlier = store.imported_tallies(key)
    end = max((t.first_game + t.game_count for t in earlier if t.first_game is not None and t.game_count), default=0)
    if games <= end:
        return ImportedTally(identities[a], identities[b], 0, 0, 0, key, end, 0)  # every game imported before
    stored = _stored_one_by_one(store, report, identities, a, b) if report.seed is not None else {}
    remaining = list(counts)
    for tally in earlier:  # all within the first `end` games, so within this report's
        remaining = [remaining[0] - tally.wins, remaining[1] - tally.draws, remaining[2] - tally.losses]
    for points in stored.values():
        remaining[{1.0: 0, 0.5: 1, 0.0: 2}[points]] -= 1
    new = games - end - sum(1 for index in stored if index >= end)
    if min(remaining) < 0 or sum(remaining) != new:
        return None
    return ImportedTally(identities[a], identities[b], *remaining, key, end, games - end if new else 0)


def _stored_one_by_one(
    store: ResultsStore, report: ReportGames, identities: dict[str, Entrant], a: str, b: str
) -> dict[int, float]:
    """Game number -> ``a``'s points, for the games of the pairing's schedule the store holds one by one."""
    from kahuna_arena.evaluation import deal_label
    from kahuna_arena.match import schedule

    keys = (identities[a].key, identities[b].key)
    rows = store.query(
        """
        SELECT e0.key, g.game_seed, g.agent_seed0, g.agent_seed1, g.choice_seed, g.result
        FROM games g JOIN sessions s ON s.id = g.session
        JOIN entrants e0 ON e0.id = g.seat0 JOIN entrants e1 ON e1.id = g.seat1
        WHERE s.rules = ? AND ((e0.key = ? AND e1.key = ?) OR (e0.key = ? AND e1.key = ?))
        """,
        (json.dumps(report.rules, sort_keys=True), keys[0], keys[1], keys[1], keys[0]),
    )
    if not rows:
        return {}  # nothing to look for: no seeds drawn
    stored = {tuple(row[:5]): row[5] for row in rows}
    found = {}
    labels = [deal_label(identities[a]), deal_label(identities[b])]
    for task in schedule(labels, report.games_per_pairing, report.seed or 0, common_deals=report.common_deals):
        seeds = (task.game_seed, *task.agent_seeds, task.choice_seed)
        result = stored.get((keys[task.seats[0]], *(str(seed) for seed in seeds)))
        if result is not None:
            found[task.index] = result if task.seats[0] == 0 else 1.0 - result
    return found


def _short_label(spec: str) -> str:
    return repr(spec) if len(spec) <= 40 else repr(spec[:37] + "...")


def _report_identities(path: Path, data: dict[str, Any], digest: str) -> dict[str, Entrant]:
    """Each entrant of a report as the store keys it: as recorded, or (an older report) baselines only."""
    from kahuna_arena.evaluation import entrant_kind

    entrants = data["entrants"]
    recorded = data.get("identities")
    if recorded is None:
        return {
            spec: baseline_entrant(spec)
            if entrant_kind(spec) == "baseline"
            else Entrant(key=f"report:{digest[:16]}:{spec}", label=f"{spec} [{path.name}]", kind=entrant_kind(spec))
            for spec in entrants
        }
    if (
        not isinstance(recorded, dict)
        or set(recorded) != set(entrants)
        or not all(isinstance(key, str) and 0 < len(key) <= 200 for key in recorded.values())
    ):
        raise ValueError(f"{path}: 'identities' must map every entrant to its store key (a string)")
    for spec in entrants:
        if not _key_fits(spec, recorded[spec]):
            raise ValueError(f"{path}: the identity recorded for {spec!r} is not a store key of such an entrant")
    return {spec: Entrant(key=recorded[spec], label=spec, kind=entrant_kind(spec)) for spec in entrants}


_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")


def _key_fits(spec: str, key: str) -> bool:
    """Whether ``key`` is a key :func:`kahuna_arena.evaluation.entrant_identity` could give an entrant written ``spec``:
    a baseline's own key, or the key of some file's sha256 (a policy's, sampled or not; a search's)."""
    from kahuna_arena.evaluation import content_entrant, entrant_kind

    if entrant_kind(spec) == "baseline":
        return key == baseline_entrant(spec).key
    found = _DIGEST.match(key)
    return found is not None and key in {content_entrant(spec, found[1], sampled).key for sampled in (False, True)}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a report holds (JSON has no NaN or Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a number a report holds (beyond the range of a float)")
    return value


def _read_report(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The bytes of a ``kahuna-eval --json`` report and its JSON (a mapping of format ``kahuna-eval-v1``)."""
    try:
        size = path.stat().st_size
        if size > MAX_REPORT_BYTES:
            raise ValueError(f"{path}: {size} bytes, more than the {MAX_REPORT_BYTES} a report may have")
        raw = path.read_bytes()
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except OSError as error:
        raise ValueError(f"{path}: cannot read: {error.strerror or first_line(error)}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError(f"{path}: not a kahuna-eval report (not UTF-8 JSON)") from None
    except ValueError as error:  # NaN or Infinity, an integer of thousands of digits
        raise ValueError(f"{path}: not a kahuna-eval report: {first_line(error)}") from None
    if not isinstance(data, dict) or data.get("format") != "kahuna-eval-v1":
        raise ValueError(f"{path}: not a kahuna-eval report (format must be 'kahuna-eval-v1')")
    entrants = data.get("entrants")
    if not isinstance(entrants, list) or not all(isinstance(e, str) and e for e in entrants) or len(entrants) < 2:
        raise ValueError(f"{path}: 'entrants' must be a list of at least two entrant strings")
    for number, spec in enumerate(entrants):
        if not spec.isprintable() or len(spec) > 1000:
            raise ValueError(f"{path}: entrants[{number}] must be a printable name of at most 1000 characters")
    if len(set(entrants)) != len(entrants):
        raise ValueError(f"{path}: 'entrants' names an entrant twice")
    return raw, data


def _is_count(value: Any, low: int = 0, high: int = MAX_GAMES) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_report(path: Path, data: dict[str, Any]) -> ReportGames:
    """The games of a report's pairings, every number checked; a one-line ``ValueError`` naming the first bad one.

    Counts must be integers (never NaN, infinite, negative or fractional),
    each pairing's ``games`` the sum of its wins, draws and losses and equal
    to ``games_per_pairing`` (a partial report is refused), each pair of
    entrants at most once, and the games of all pairings within
    :data:`kahuna_arena.match.MAX_GAMES`.
    """
    entrants, pairings, config = data["entrants"], data.get("pairings"), data.get("config")
    if not isinstance(pairings, list) or not pairings:
        raise ValueError(f"{path}: 'pairings' must be a non-empty list")
    try:
        rules = KahunaConfig.from_dict(config).to_dict()
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: 'config' is not a rule set: {first_line(error)}") from None
    per_pairing = data.get("games_per_pairing")
    if not _is_count(per_pairing, 2) or per_pairing % 2:
        raise ValueError(
            f"{path}: 'games_per_pairing' must be an even integer in [2, {MAX_GAMES}], got {_short_value(per_pairing)}"
        )
    if per_pairing * len(pairings) > MAX_GAMES:
        raise ValueError(f"{path}: {len(pairings)} pairings of {per_pairing} games: more than {MAX_GAMES} in all")
    seed = data.get("seed")
    if seed is not None and not _is_count(seed, 0, MAX_BASE_SEED):
        raise ValueError(f"{path}: 'seed' must be an integer in [0, 2**63 - 1], got {_short_value(seed)}")
    flags = {name: data.get(name, False) for name in ("common_deals", "sampled")}
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"{path}: {name!r} must be true or false, got {_short_value(value)}")
    if data.get("partial") is not None and data.get("partial") is not False:
        raise ValueError(_partial(path))
    results = []
    seen: set[frozenset[str]] = set()
    for number, pairing in enumerate(pairings):
        where = f"{path}: pairings[{number}]"
        if not isinstance(pairing, dict) or pairing.get("a") not in entrants or pairing.get("b") not in entrants:
            raise ValueError(f"{where} must name two of the report's entrants as 'a' and 'b'")
        if pairing["a"] == pairing["b"]:
            raise ValueError(f"{where} pairs {pairing['a']!r} with itself")
        if frozenset((pairing["a"], pairing["b"])) in seen:
            raise ValueError(f"{where}: {pairing['a']!r} and {pairing['b']!r} are paired twice (counted twice)")
        seen.add(frozenset((pairing["a"], pairing["b"])))
        counts = [pairing.get(name) for name in ("wins", "draws", "losses")]
        if not all(_is_count(c) for c in counts):
            raise ValueError(f"{where}: 'wins', 'draws' and 'losses' must be non-negative integers")
        games = pairing.get("games", sum(counts))
        if not _is_count(games) or games != sum(counts):
            raise ValueError(
                f"{where}: 'games' must be an integer, the sum of wins, draws and losses ({sum(counts)}), "
                f"got {_short_value(games)}"
            )
        if games != per_pairing:
            raise ValueError(_partial(path))
        results.append((pairing["a"], pairing["b"], *counts))
    total = data.get("total_games", per_pairing * len(pairings))
    if total != per_pairing * len(pairings) or isinstance(total, bool):
        raise ValueError(f"{path}: 'total_games' must be the games of all pairings, got {_short_value(total)}")
    return ReportGames(
        rules=rules,
        seed=seed,
        common_deals=flags["common_deals"],
        sampled=flags["sampled"],
        games_per_pairing=per_pairing,
        entrants=tuple(entrants),
        pairings=tuple(results),
    )


def _partial(path: Path) -> str:
    return (
        f"{path}: a partial report (an evaluation that ended early): which of its games were played is not "
        "recorded, so they cannot be told from the same games imported or stored later; import a complete report "
        "(the games of a run with --db are in that store already)"
    )


def _short_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    return text if len(text) <= 30 else text[:27] + "..."


# ---------------------------------------------------------------------------------------------- the plot
def plot_runs(ladder: Ladder, path: Path) -> int:
    """Elo against learner decisions for every training run in the ladder, one line per run; returns the run count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs: dict[str, list[LadderRow]] = {}
    for row in ladder.rows:
        if row.entrant.run is not None and row.entrant.decisions is not None and row.elo is not None:
            runs.setdefault(row.entrant.run, []).append(row)
    figure, axis = plt.subplots(figsize=(8, 5))
    for run, rows in sorted(runs.items()):
        rows.sort(key=lambda r: r.entrant.decisions or 0)
        x = [r.entrant.decisions for r in rows]
        y = [r.elo for r in rows]
        errors = [Z95 * (r.elo_se or 0.0) for r in rows]
        axis.errorbar(x, y, yerr=errors, marker="o", markersize=3, capsize=2, label=run)
    for name, value in ladder.anchors.items():
        axis.axhline(value, color="grey", linewidth=0.6, linestyle=":")
        axis.annotate(name, (0, value), fontsize=7, color="grey", xycoords=("axes fraction", "data"))
    axis.set_xlabel("learner decisions")
    axis.set_ylabel("Elo (ladder, 95% intervals)")
    axis.set_title("Elo across training runs (kahuna-ratings)")
    axis.grid(alpha=0.3)
    if runs:
        axis.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return len(runs)


# ---------------------------------------------------------------------------------------------- for the browser
def public_label(label: str) -> str:
    """A label without folders: ``/home/me/runs/x/final_agent.pt@mcts:50`` -> ``final_agent.pt@mcts:50``."""
    try:
        source, _ = split_search(label)
    except ValueError:  # no entrant's search: a training run's NAME@UPDATES, a report's label
        source = label
    name = source.replace("\\", "/").rsplit("/", 1)[-1] or "entrant"
    return name + label[len(source) :]  # the search as the label writes it


def ladder_summary(path: str | Path, pairings: int = 5, max_entrants: int = 2000) -> dict[str, Any]:
    """The ladder of the store at ``path`` for the browser: rows, the next pairings, Elo per training run.

    Reads the store read-only.  A store with more than ``max_entrants``
    entrants is refused (one line) to keep the fit bounded.  Raises
    :class:`kahuna_arena.store.StoreError` / ``ValueError`` (one line, without the path).
    """
    try:
        store = ResultsStore(path, readonly=True)
    except StoreError:
        raise StoreError(
            "the results store cannot be read (missing, not a results store, or another version)"
        ) from None
    with store:
        count = store.query("SELECT COUNT(*) FROM entrants")[0][0]
        if count > max_entrants:
            raise ValueError(f"the results store holds {count} entrants, more than the {max_entrants} shown here")
        ladder = fit_ladder(store, KahunaConfig().to_dict(), DEFAULT_ANCHORS)
        games = store.game_count()
    runs: dict[str, list[dict[str, Any]]] = {}
    for row in ladder.rows:
        if row.entrant.run is not None and row.entrant.decisions is not None and row.elo is not None:
            runs.setdefault(row.entrant.run, []).append(
                {
                    "decisions": row.entrant.decisions,
                    "update": row.entrant.run_update,
                    "elo": row.elo,
                    "elo_ci95": Z95 * (row.elo_se or 0.0),
                }
            )
    for points in runs.values():
        points.sort(key=lambda point: point["decisions"])
    data = ladder.to_dict()
    for row in data["ratings"]:  # a page shows file names, never the folders of the server's files
        row["entrant"] = public_label(row["entrant"])
    return {
        **data,
        "games": games,
        "pairings": [
            {"a": public_label(p.a.label), "b": public_label(p.b.label), "why": p.reason}
            for p in schedule_pairings(ladder, [], pairings)
        ],
        "runs": runs,
    }
