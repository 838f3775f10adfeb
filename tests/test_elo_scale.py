"""One number, one scale: the trainer's ``elo/*`` metrics and the ``kahuna-ratings`` ladder use one table of
anchors, and the README's figures for ``champion`` are the ones its agent file's ``meta`` holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kahuna_arena import ladder, stats
from kahuna_arena.report import PRIOR_DRAWS
from kahuna_arena.store import ResultsStore, baseline_entrant
from training.ppo import metrics
from training.selfplay.quick_eval import QuickEvalResult

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RULES = {"variant": "standard", "handicap": None, "discard_rule": "instead_of_play", "first_player": 0}


def test_the_trainer_and_the_ladder_read_one_anchor_table() -> None:
    assert metrics.ANCHOR_RATINGS is stats.ANCHOR_RATINGS
    assert ladder.DEFAULT_ANCHORS is stats.ANCHOR_RATINGS


def test_the_anchor_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        stats.ANCHOR_RATINGS["greedy"] = 0.0  # type: ignore[index]


@pytest.mark.parametrize("anchor", list(stats.ANCHOR_RATINGS))
@pytest.mark.parametrize(("wins", "draws", "losses"), [(30, 4, 6), (5, 0, 35), (20, 0, 20)])
def test_the_trainers_elo_for_a_result_is_the_ladders_rating_of_the_same_games(
    tmp_path: Path, anchor: str, wins: int, draws: int, losses: int
) -> None:
    candidate = baseline_entrant("mcts:7")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        session = store.start_session("import", RULES, imported=True)
        store.add_tally(session, candidate, baseline_entrant(anchor), wins, draws, losses)
        fit = ladder.fit_ladder(store, RULES, dict(ladder.DEFAULT_ANCHORS))
    rated = {row.entrant.label: row.elo for row in fit.rows}
    assert rated[anchor] == pytest.approx(stats.ANCHOR_RATINGS[anchor])
    # The ladder adds PRIOR_DRAWS virtual draws per pairing; with the same result the trainer's estimate agrees.
    games = wins + draws + losses
    score = (wins + draws / 2 + PRIOR_DRAWS / 2) / (games + PRIOR_DRAWS)
    assert metrics.elo_estimate(score, games, stats.ANCHOR_RATINGS[anchor]) == pytest.approx(rated["mcts:7"], abs=1e-6)
    trainer = metrics.elo_scalars({anchor: QuickEvalResult(wins, draws, losses, 0.0, opponent=anchor)})
    assert trainer[f"elo/vs_{metrics.metric_name(anchor)}"] == pytest.approx(rated["mcts:7"], abs=15.0)


def test_the_docs_quote_the_one_anchor_table() -> None:
    quoted = ", ".join(f"`{name}` {elo:g}" for name, elo in stats.ANCHOR_RATINGS.items())
    for page in ("TRAINING.md", "RATINGS.md"):
        text = " ".join((DOCS / page).read_text(encoding="utf-8").split())  # lines joined
        assert quoted in text, f"docs/{page} does not quote the anchors as {quoted}"
    training = (DOCS / "TRAINING.md").read_text(encoding="utf-8")
    # No other ratings for the anchors: the earlier five-entrant table's numbers are gone from the metrics' docs.
    assert not re.search(r"\b(917|1215|1426)\b", training)
    for name in stats.ANCHOR_RATINGS:
        assert f"elo/vs_{metrics.metric_name(name)}" in training


# ---------------------------------------------------------------------------------------------- the README
def _champion_meta() -> dict:
    from kahuna_policy.agent import load_agent

    return load_agent("champion").meta


def test_the_readme_snippets_figure_is_what_the_snippet_prints() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    printed = re.search(r'print\(champion\.meta\["final_eval"\]\["greedy"\]\["score"\]\)\s+# ([0-9.]+)', readme)
    assert printed, "the README's snippet no longer says what it prints"
    final = _champion_meta()["final_eval"]["greedy"]
    assert printed.group(1) == f"{final['score']:.3f}"
    assert f"**{final['score']:.3f}** against `greedy`" in " ".join(readme.split())


def test_the_readmes_kahuna_eval_figures_are_the_metas_recorded_evaluations() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    figure = r"\*\*([0-9.]+)\*\* \(([0-9.]+)–([0-9.]+)\) against `([^`]+)`"  # **0.971** (0.959–0.980) against `greedy`
    quoted = {opponent: (score, low, high) for score, low, high, opponent in re.findall(figure, readme)}
    assert {"greedy", "mcts:1000"} <= set(quoted)
    recorded = {
        pairing["b"]: pairing
        for report in _champion_meta()["evaluation"]
        for pairing in report["pairings"]
        if pairing["a"].endswith("final_agent.pt")
    }
    for opponent, (score, low, high) in quoted.items():
        pairing = recorded[opponent]
        assert score == f"{pairing['score']:.3f}", opponent
        assert (low, high) == tuple(f"{bound:.3f}" for bound in pairing["score_ci95"]), opponent
