"""The compiled loops (kahuna_env.kernels) against the same functions run as plain Python, side by side.

``tests/test_vector.py`` holds the batch to the scalar engine on whichever path runs
(the compiled one when numba is installed, as it is with the project's dependencies);
here two batches with the same seeds, one on each path (the plain one is what runs with
``KAHUNA_JIT=0`` or without numba), play the same random actions over every variant and
option and must agree bit for bit after every step: positions, every state array, legal
words and masks, observations of both seats and of the subset paths, step results, and
the random actions drawn from the words.  The plain path is slow, so the games are few.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_vector import ALL_CONFIGS

from kahuna_env import kernels
from kahuna_env import vector as V
from kahuna_env.arrays import seed_generators
from kahuna_env.observation import OBSERVATION_LAYOUT
from kahuna_env.vector import KahunaBatch, sample_set_bits

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    os.environ.get("KAHUNA_JIT", "1").strip() == "0", reason="KAHUNA_JIT=0 asks for the plain loops only"
)


def test_numba_is_installed_with_the_project_so_the_compiled_loops_run():
    assert kernels.enabled() and kernels.ENABLED, "numba is a dependency of the project: the compiled loops must run"
    assert KahunaBatch(1, seed=0)._jit


def test_the_compiled_encoder_knows_the_observation_layout_in_order():
    assert kernels.BLOCKS == tuple(OBSERVATION_LAYOUT)
    # the loop names one start per block (it cannot index a dict): its unpacking is the layout's order
    source = inspect.getsource(
        kernels.observations.py_func if hasattr(kernels.observations, "py_func") else kernels.observations
    )
    unpacked = re.search(r"\(\s*# one start per observation block.*?\n(.*?)\) = starts", source, re.S).group(1)
    assert tuple(re.findall(r"(\w+)_at,", unpacked)) == kernels.BLOCKS


def test_the_batch_binds_each_loop_argument_by_name_to_a_schema_array_or_a_table(monkeypatch):
    names = [value for is_array, value in V._bind("step", 3) if is_array]
    assert names == [name for name in kernels.PARAMETERS["step"][3:] if name in V._BATCH_ARRAYS]
    assert "current_player" in names and "round" in names
    monkeypatch.setitem(kernels.PARAMETERS, "fake", ("rows", "owner", "majority", "tokens"))
    with pytest.raises(RuntimeError, match=r"kernels\.fake: parameter 'tokens' is neither a schema batch array"):
        V._bind("fake", 1)


def _state(batch: KahunaBatch) -> dict[str, np.ndarray]:
    arrays = {name: getattr(batch, name).copy() for name, _, _, _ in V._STATE_ARRAYS}
    arrays["words"] = batch._legal_words().copy()
    return arrays


def _assert_equal(compiled: KahunaBatch, plain: KahunaBatch, context: str) -> None:
    """``plain``: the batch on the loops as plain Python."""
    left, right = _state(compiled), _state(plain)
    for name in left:
        if not np.array_equal(left[name], right[name]):
            rows = np.flatnonzero((left[name] != right[name]).reshape(len(left[name]), -1).any(1))
            pytest.fail(f"{context}: {name} differs in games {rows[:5].tolist()}")
    assert np.array_equal(compiled.legal_masks(), plain.legal_masks()), context
    for seat in (None, 0, 1):
        assert compiled.observations(seat).tobytes() == plain.observations(seat).tobytes(), (context, seat)
    assert compiled.states().tobytes() == plain.states().tobytes(), context
    rows = np.arange(0, compiled.n, 3)
    seats = (np.arange(compiled.n) % 2).astype(np.intp)
    assert compiled.observations(seats, rows).tobytes() == plain.observations(seats, rows).tobytes(), context
    assert np.array_equal(compiled.legal_masks(rows), plain.legal_masks(rows)), context
    assert compiled.game_seeds == plain.game_seeds, context


def _on_the_plain_path(monkeypatch: pytest.MonkeyPatch, make: Any) -> KahunaBatch:
    """A batch made, and so dealt, with the compiled loops switched off (it keeps the loops as plain Python)."""
    with monkeypatch.context() as patch:
        patch.setattr(kernels, "enabled", lambda: False)
        batch = make()
    assert not batch._jit
    return batch


def test_compiled_and_plain_loops_agree_bit_for_bit_over_every_variant_and_option(monkeypatch):
    n = len(ALL_CONFIGS)  # each variant and option once
    configs = [ALL_CONFIGS[i % len(ALL_CONFIGS)] for i in range(n)]
    seeds = list(range(500, 500 + n))
    compiled = KahunaBatch(n, configs, seeds, auto_reset=True)
    plain = _on_the_plain_path(monkeypatch, lambda: KahunaBatch(n, configs, seeds, auto_reset=True))
    rng_compiled, rng_plain = np.random.default_rng(3), np.random.default_rng(3)
    drive = np.random.default_rng(4)
    finished = interim = 0
    _assert_equal(compiled, plain, "start")
    for step in range(300):
        actions = compiled.random_actions(rng_compiled)
        assert np.array_equal(actions, plain.random_actions(rng_plain)), f"step {step}: random actions"
        active = drive.random(n) < 0.9  # some games sit a step out, as in seated play
        rounds = compiled.round.copy()
        left, right = compiled.step(actions, active), plain.step(actions, active)
        for field in left._fields:
            assert np.array_equal(getattr(left, field), getattr(right, field)), f"step {step}: {field}"
        finished += int(left.terminated.sum())
        interim += int((compiled.round > rounds).sum())
        _assert_equal(compiled, plain, f"step {step}")
    assert finished > n and interim > n, "the run must cover many games, interim scorings and final scorings"


def test_a_batch_of_hand_made_positions_agrees_on_both_paths(monkeypatch):
    """Positions loaded from dicts (captures, claims, final turns) step alike on both paths."""
    n = len(ALL_CONFIGS)
    source = KahunaBatch(n, [ALL_CONFIGS[i % len(ALL_CONFIGS)] for i in range(n)], seed=70, auto_reset=True)
    rng = np.random.default_rng(8)
    for _ in range(150):
        source.step(source.random_actions(rng))
    positions = source.to_dicts()
    compiled = KahunaBatch.from_dicts(positions, seeds=list(range(n)))
    plain = _on_the_plain_path(monkeypatch, lambda: KahunaBatch.from_dicts(positions, seeds=list(range(n))))
    for step in range(120):
        actions = compiled.random_actions(np.random.default_rng(step))
        compiled.step(actions, ~compiled.over)
        plain.step(actions, ~plain.over)
        _assert_equal(compiled, plain, f"step {step}")


def test_sample_set_bits_draws_the_same_bits_on_both_paths(monkeypatch):
    rng = np.random.default_rng(5)
    words = rng.integers(0, 2**63, size=(2000, 3), dtype=np.uint64)
    words &= rng.integers(0, 2**63, size=(2000, 3), dtype=np.uint64)  # sparser rows
    words[::7] = 0  # no set bit: 0
    words[1::7, 1:] = 0
    for width in (1, 2, 3):
        compiled = sample_set_bits(words[:, :width], np.random.default_rng(9))
        with monkeypatch.context() as patch:
            patch.setattr(kernels, "enabled", lambda: False)
            plain = sample_set_bits(words[:, :width], np.random.default_rng(9))
        assert np.array_equal(compiled, plain), width
        assert (compiled[::7] == 0).all()


def test_kahuna_jit_0_runs_the_loops_as_plain_python():
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from kahuna_env import kernels\n"
        "from kahuna_env.vector import KahunaBatch\n"
        "b = KahunaBatch(4, seed=1, auto_reset=True)\n"
        "b.step(b.random_actions(np.random.default_rng(0)))\n"
        "print(kernels.enabled(), b._jit, 'numba' in sys.modules)\n"
    )
    env = {**os.environ, "KAHUNA_JIT": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_a_game_plays_the_same_loops_as_plain_python_with_kahuna_jit_0():
    # KahunaGame is a batch of one: with KAHUNA_JIT=0 its steps, deal, reshuffles and observations run as plain
    # Python, the same functions, and give the same games bit for bit.
    code = (
        "import random\n"
        "from kahuna_env import kernels\n"
        "from kahuna_env.engine import KahunaConfig, KahunaGame\n"
        "from kahuna_env.observation import encode_observation\n"
        "for seed, variant in ((3, 'standard'), (4, 'planning')):\n"
        "    game, chooser = KahunaGame(KahunaConfig(variant=variant), seed=seed), random.Random(seed)\n"
        "    while not game.is_over:\n"
        "        game.step(chooser.choice(game.legal_actions()))\n"
        "    print(kernels.enabled(), game.to_dict(), encode_observation(game, 1).tolist())\n"
    )
    outputs = []
    for jit in ("0", "1"):
        env = {**os.environ, "KAHUNA_JIT": jit}
        outputs.append(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        )
    plain, compiled = (out.stdout.splitlines() for out in outputs)
    assert [line.split()[0] for line in plain] == ["False", "False"]
    assert [line.split()[0] for line in compiled] == ["True", "True"]
    assert [line.split(maxsplit=1)[1] for line in plain] == [line.split(maxsplit=1)[1] for line in compiled]


_RENAMED = {("row", "rows"), ("row", "games"), ("action", "actions"), ("kind", "kinds")}
"""A game's one-row arguments (kahuna_env.arrays) whose record field is the singular of the loop's parameter."""


def test_a_games_calls_of_the_loops_pass_every_argument_under_its_parameters_name():
    # The one-game entry points (game_*) call the loops with the record's fields and the tables' entries, by
    # position: each must be the field or table named as the loop's parameter (kahuna_env.kernels.PARAMETERS).
    tree = ast.parse(inspect.getsource(kernels))
    checked = set()
    for function in tree.body:
        if not (isinstance(function, ast.FunctionDef) and function.name.lstrip("_").startswith(("game_", "on_game_"))):
            continue
        for node in ast.walk(function):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in kernels.PARAMETERS
            ):
                continue
            parameters = kernels.PARAMETERS[node.func.id]
            assert len(node.args) == len(parameters), f"{function.name} calls {node.func.id} with too few arguments"
            for parameter, argument in zip(parameters, node.args, strict=True):
                if isinstance(argument, ast.Attribute) and isinstance(argument.value, ast.Name):
                    assert argument.value.id in ("state", "t"), (function.name, node.func.id, parameter)
                    named = argument.attr == parameter or (argument.attr, parameter) in _RENAMED
                    assert named, f"{function.name}: {node.func.id}({parameter}=...{argument.attr})"
                    checked.add((node.func.id, parameter))
    loops = {loop for loop, _ in checked}
    assert loops == {
        "legal_words",
        "step",
        "permutations",
        "interim_scoring",
        "deal",
        "observations",
        "reshuffle_sizes",
        "illegal_reason",
        "greedy_words",
    }
    assert len(checked) >= 80


def _game_calls() -> Any:
    spec = importlib.util.spec_from_file_location("game_calls", ROOT / "tools" / "game_calls.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_one_game_calls_are_what_the_loops_parameters_give(tmp_path, capsys):
    game_calls = _game_calls()
    assert game_calls.main(["--check"]) == 0, capsys.readouterr().out
    # A stale block (a loop's parameter list changed, the calls not regenerated) fails the check, changing nothing.
    stale = tmp_path / "kernels.py"
    text = game_calls.KERNELS.read_text().replace(" t.take_base,", "", 1)
    assert text.count("t.take_base") == game_calls.KERNELS.read_text().count("t.take_base") - 1
    stale.write_text(text)
    game_calls.KERNELS = stale
    assert game_calls.main(["--check"]) == 1
    assert capsys.readouterr().out.count("\n") == 1 and stale.read_text() == text
    assert game_calls.main([]) == 0 and game_calls.main(["--check"]) == 0  # rewritten: current again
    assert stale.read_text() == ROOT.joinpath("kahuna_env", "kernels.py").read_text()


def test_a_loop_parameter_that_is_no_field_stops_the_generator_naming_it(monkeypatch):
    game_calls = _game_calls()
    monkeypatch.setitem(kernels.PARAMETERS, "deal", (*kernels.PARAMETERS["deal"], "no_such_field"))
    with pytest.raises(SystemExit, match=r"^game_calls.py: deal\(no_such_field\): neither"):
        game_calls.block()


def test_importing_the_batched_engine_does_not_import_numba():
    code = "import sys\nimport kahuna_env.vector\nprint('numba' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


SEEDS = [0, 1, 2, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1, 2**64, 2**100 + 7, 2**200 + 3, 123456789]
"""Seeds of one, two, three, four and seven 32-bit words (SeedSequence's pool holds four)."""


def _generators(seeds: list[int]) -> np.ndarray:
    pcg = np.zeros((len(seeds), 6), dtype=np.uint64)
    seed_generators(pcg, np.arange(len(seeds)), seeds, kernels.running())
    return pcg


def test_compiled_generators_are_seeded_as_numpy_seeds_pcg64():
    seeds = SEEDS + [int(s) for s in np.random.default_rng(0).integers(0, 2**63, 100)]
    pcg = _generators(seeds)
    for k, seed in enumerate(seeds):
        state = np.random.PCG64(seed).state["state"]
        assert (int(pcg[k, 0]) << 64 | int(pcg[k, 1])) == state["state"], seed
        assert (int(pcg[k, 2]) << 64 | int(pcg[k, 3])) == state["inc"], seed


def test_compiled_permutations_and_seed_draws_follow_numpys_generator_call_for_call():
    """Permutations of every size the game shuffles, and integers(2**63), interleaved (the buffered 32 bits)."""
    pcg = _generators(SEEDS)
    generators = [np.random.default_rng(seed) for seed in SEEDS]
    rows = np.arange(len(SEEDS))
    for size in (24, 0, 1, 2, 5, 13, 24, 17, 40, 3):
        out = np.empty(size * len(SEEDS), dtype=np.int64)
        kernels.permutations(rows, np.full(len(SEEDS), size, dtype=np.int64), pcg, out)
        expected = np.concatenate([g.permutation(size) for g in generators]) if size else out
        assert np.array_equal(out, expected), size
        if size % 2:
            drawn = np.empty(len(SEEDS), dtype=np.uint64)
            kernels.draw_seeds(rows, pcg, drawn)
            assert drawn.tolist() == [int(g.integers(2**63)) for g in generators], size


def test_a_slot_seeder_and_its_games_draw_as_numpy_on_the_compiled_path():
    batch = KahunaBatch(3, seed=[7, 2**70, 0], auto_reset=True)
    for i, seed in enumerate([7, 2**70, 0]):
        seeder = np.random.default_rng(seed)
        assert batch.game_seeds[i] == int(seeder.integers(2**63))
        batch.reset([i])
        assert batch.game_seeds[i] == int(seeder.integers(2**63))
    loaded = KahunaBatch.from_dicts(batch.to_dicts())  # no seeds: fresh entropy, as KahunaGame(seed=None)
    rng = np.random.default_rng(1)
    for _ in range(300):
        loaded.step(loaded.random_actions(rng))
    assert loaded.round.max() >= 2, "the unseeded games reshuffled"
