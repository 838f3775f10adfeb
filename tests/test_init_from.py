"""``init_from``: a run that starts from an agent's weights (how the champion is continued across sittings).

The learner and the league's first snapshot start as the named agent; a
network that does not fit ``model``, a missing file or a bad value is one line
before anything is written; ``--resume`` continues from the run's own
checkpoint and never reads ``init_from`` again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from test_training_hardening import quick_args

from kahuna_policy.agent import load_agent
from kahuna_policy.model import ActorCritic
from training.cli import main
from training.ppo.checkpoint import export_agent, load_checkpoint
from training.ppo.config import ConfigError, load_config
from training.ppo.provenance import START_FILE, start_record, weights_key, write_start_record
from training.ppo.trainer import build_model, initial_model

REPOSITORY = Path(__file__).resolve().parent.parent
SMOKE = REPOSITORY / "configs" / "smoke.yaml"


def _args(run_dir: Path, *extra: str) -> list[str]:
    return quick_args(run_dir, "logging.progress=false", *extra)  # the smoke recipe, two updates


@pytest.fixture
def start_agent(tmp_path) -> Path:
    """An agent file with the smoke network and weights unlike the smoke run's own seed-7 initialisation."""
    config = load_config(SMOKE, ["seed=99"])
    path = tmp_path / "start.pt"
    export_agent(path, build_model(config), {"run": "start"})
    return path


def _weights(state: dict) -> list[torch.Tensor]:
    return [value for _, value in sorted(state.items())]


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(x, y) for x, y in zip(_weights(a), _weights(b), strict=True))


def test_init_from_starts_the_learner_and_the_leagues_first_snapshot_from_the_agent(tmp_path, start_agent):
    assert main(_args(tmp_path / "run", f"init_from={start_agent}", "pool.max_snapshots=3")) == 0
    start = torch.load(start_agent, weights_only=True)["model_state"]
    checkpoint = load_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")
    first = checkpoint["pool"][0]
    assert [entry["update"] for entry in checkpoint["pool"]] == [0, 1, 2]
    assert first["update"] == 0 and _same(first["model_state"], start)  # the league starts with the agent
    assert not _same(checkpoint["model_state"], start)  # and the learner trained on from it
    assert checkpoint["config"]["init_from"] == str(start_agent)
    record = json.loads((tmp_path / "run" / START_FILE).read_text())  # the start, recorded as the run began
    assert record["agent"] == str(start_agent) and record["provenance"] == {"run": "start"}
    assert record["weights"] == weights_key(load_agent(start_agent).model)
    assert record["training"] == {"learner_decisions": 0, "train_seconds": 0}


def test_without_init_from_the_league_starts_empty(tmp_path):
    assert main(_args(tmp_path / "run")) == 0  # the smoke config takes a snapshot after every update
    assert [entry["update"] for entry in load_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["pool"]] == [
        1,
        2,
    ]


def test_a_shipped_agent_is_named_by_its_name():
    config = load_config(REPOSITORY / "configs" / "champion.yaml")
    assert config.init_from == "champion-v5"
    model = initial_model(config)
    assert isinstance(model, ActorCritic) and model.config == config.model


def test_a_network_that_does_not_fit_the_model_is_one_line_and_writes_nothing(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(_args(run_dir, "init_from=champion")) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kahuna-train: error: init_from: champion holds a network of")
    assert "set model.* to match it" in lines[0]
    assert not run_dir.exists() or not any(path.name != ".lock" for path in run_dir.rglob("*"))


def test_a_missing_agent_is_one_line(tmp_path, capsys):
    assert main(_args(tmp_path / "run", f"init_from={tmp_path / 'nope.pt'}")) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "nope.pt" in lines[0]


@pytest.mark.parametrize("value", ["''", "'   '"])
def test_an_empty_init_from_is_a_config_error(value):
    with pytest.raises(ConfigError, match="init_from"):
        load_config(SMOKE, [f"init_from={value}"])


def test_resume_continues_from_the_checkpoint_without_reading_init_from(tmp_path, start_agent):
    run_dir = tmp_path / "run"
    assert main(_args(run_dir, f"init_from={start_agent}")) == 0
    record = (run_dir / START_FILE).read_text()
    start_agent.unlink()  # gone: a resume that read it again would fail
    assert main(["--resume", str(run_dir), "--set", "total_updates=3"]) == 0
    assert (run_dir / START_FILE).read_text() == record  # the start stays recorded as it was
    assert load_checkpoint(run_dir / "checkpoints" / "latest.pt")["counters"]["update"] == 3


# --------------------------------------------------------------------------------- provenance of a shipped agent
def _ship_run(tmp_path: Path, init_from: str | None) -> dict:
    import yaml
    from test_shipped_agents import make_run

    from training.tools import ship as ship_module

    run = make_run(tmp_path / "run")
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["init_from"] = init_from
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    out = ship_module.ship(run, name="champion", out=tmp_path / "shipped.pt", commit="abc")
    return torch.load(out, weights_only=True)["meta"]


def test_a_shipped_agent_records_the_agent_its_run_started_from(tmp_path):
    from kahuna_policy.agent import load_agent

    start = load_agent("champion-v5").meta
    meta = _ship_run(tmp_path, "champion-v5")
    assert meta["init_from"]["agent"] == "champion-v5"
    assert meta["init_from"]["training"] == start["training"] and meta["init_from"]["commit"] == start["commit"]
    chain = start["total_training"]  # champion-v5 itself continued earlier sittings
    assert meta["total_training"] == {
        "learner_decisions": chain["learner_decisions"] + 1234,  # make_run's counters
        "train_seconds": chain["train_seconds"] + 12.5,
    }


def test_a_fresh_run_has_no_start_provenance(tmp_path):
    meta = _ship_run(tmp_path, None)
    assert "init_from" not in meta and "total_training" not in meta


def test_shipping_a_run_whose_start_agent_is_gone_is_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"init_from agent .*gone\.pt.* cannot be read") as caught:
        _ship_run(tmp_path, str(tmp_path / "gone.pt"))
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "shipped.pt").exists()


def _ship(run: Path, tmp_path: Path, out: str = "shipped.pt") -> dict:
    from training.tools import ship as ship_module

    path = ship_module.ship(run, name="champion", out=tmp_path / out, commit="abc")
    return torch.load(path, weights_only=True)["meta"]


def _run_started_from(tmp_path: Path, start: Path, record: bool) -> Path:
    """make_run's run with ``init_from: START`` and, if ``record``, the init_from.json its start wrote."""
    import yaml
    from test_shipped_agents import make_run

    run = make_run(tmp_path / "run")
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["init_from"] = str(start)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    if record:
        agent = load_agent(start)
        write_start_record(run, start_record(str(start), agent.model, agent.meta))
    return run


def _tiny_start(tmp_path: Path) -> Path:
    from kahuna_policy.model import ModelConfig

    path = tmp_path / "start.pt"
    training = {"learner_decisions": 1000, "train_seconds": 100.0}
    export_agent(path, ActorCritic(ModelConfig(hidden_sizes=(8,))), {"run": "start-run", "training": training})
    return path


def test_shipping_again_after_the_start_name_changed_keeps_the_recorded_start(tmp_path):
    """A run is shipped under the name it started from; shipped again, its provenance is still its start's."""
    start = _tiny_start(tmp_path)
    run = _run_started_from(tmp_path, start, record=True)
    first = _ship(run, tmp_path)
    (tmp_path / "shipped.pt").replace(start)  # the start's name now holds the run's own agent
    again = _ship(run, tmp_path, "again.pt")
    assert first["init_from"] == again["init_from"] and again["init_from"]["run"] == "start-run"
    assert again["init_from"]["weights"].startswith("sha256:") and again["init_from"]["agent"] == str(start)
    assert again["total_training"] == {"learner_decisions": 1000 + 1234, "train_seconds": 100.0 + 12.5}


def test_an_old_run_whose_start_name_now_holds_its_own_agent_is_refused_in_one_line(tmp_path):
    start = _tiny_start(tmp_path)
    run = _run_started_from(tmp_path, start, record=False)
    assert _ship(run, tmp_path)["init_from"]["run"] == "start-run"  # the name still holds the start
    (tmp_path / "shipped.pt").replace(start)
    with pytest.raises(ValueError, match="now holds this run's own final network") as caught:
        _ship(run, tmp_path, "again.pt")
    assert "\n" not in str(caught.value) and not (tmp_path / "again.pt").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "init_from.json of the run cannot be read: JSONDecodeError"),
        ("[]", "init_from.json of the run is damaged: not a JSON object"),
        (
            '{"agent": "x", "weights": "sha256:0", "provenance": {}, "training": {"learner_decisions": 0, '
            '"train_seconds": 0}}',
            "init_from.json says the run started from 'x'",
        ),
        (
            '{"agent": "S", "weights": "sha256:0", "provenance": {}, "training": {"learner_decisions": -1, '
            '"train_seconds": 0}}',
            "training.learner_decisions must be a number >= 0",
        ),
    ],
)
def test_a_damaged_start_record_is_refused_in_one_line(tmp_path, text, message):
    start = _tiny_start(tmp_path)
    run = _run_started_from(tmp_path, start, record=False)
    (run / START_FILE).write_text(text.replace('"S"', json.dumps(str(start))))
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        _ship(run, tmp_path)
    assert "\n" not in str(caught.value) and not (tmp_path / "shipped.pt").exists()


def test_an_oversized_start_record_is_refused_before_it_is_read(tmp_path):
    from training.ppo.provenance import MAX_RECORD_BYTES

    start = _tiny_start(tmp_path)
    run = _run_started_from(tmp_path, start, record=False)
    with (run / START_FILE).open("wb") as handle:
        handle.truncate(MAX_RECORD_BYTES + 1)  # sparse: no memory or disk spent on it
    with pytest.raises(ValueError, match=r"init_from.json of the run is 4,194,305 bytes, more than a record may have"):
        _ship(run, tmp_path)
    assert not (tmp_path / "shipped.pt").exists()
