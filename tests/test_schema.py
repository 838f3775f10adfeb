"""The one schema of the game state (kahuna_env.schema) and everything derived from or checked against it.

The schema states every field once; the batch's arrays, the game's record, the
position keys and the observation blocks come from it or are held to it here.
A field added without its decisions (array, position key, observation) fails
loudly: :func:`check_schema` runs at import, and the tests below fail when a
representation holds a field the schema does not list, or when a field is not
compared game by game between the batch and the one-game engine.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
from collections import Counter

import numpy as np
import pytest

from kahuna_env import kernels, observation, schema, vector
from kahuna_env.arrays import STATE_DTYPE
from kahuna_env.board import ISLAND_ID, ISLANDS, MAJORITY, NUM_ISLANDS
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.positions import OPTIONAL_KEYS, REQUIRED_KEYS, Position
from kahuna_env.schema import FIELDS, OBSERVATION_BLOCKS, STATE_BLOCKS, Block, Field, check_schema
from kahuna_env.vector import KahunaBatch

CONFIGS = [
    KahunaConfig(variant=variant, discard_rule=rule, handicap=handicap, first_player=first)
    for variant, rule, handicap, first in itertools.product(
        ("standard", "planning"), ("instead_of_play", "hand_limit"), (None, (1, 2)), (0, 1)
    )
]


def _state_field(**changes) -> Field:
    """A well-formed new state field, with ``changes`` applied."""
    field = Field(
        name="tokens",
        shape=("players",),
        dtype="int8",
        empty=0,
        visibility="public",
        role="state",
        array=True,
        position="tokens",
        form="pair",
        observation=("scores",),
        meaning="tokens",
    )
    return dataclasses.replace(field, **changes)


def _with_block(field: Field, block: Block) -> tuple[tuple[Field, ...], tuple[Block, ...]]:
    return (*FIELDS, field), (*OBSERVATION_BLOCKS, block)


# ---------------------------------------------------------------------------------------------- the schema itself
def test_the_shipped_schema_passes_its_checks():
    check_schema()
    assert sum(block.size for block in OBSERVATION_BLOCKS) == observation.OBSERVATION_SIZE == 246


@pytest.mark.parametrize(("missing", "change"), [("batch", {"array": False}), ("position", {"position": None})])
def test_a_state_field_without_an_array_or_position_key_fails_loudly(missing, change):
    field = _state_field(observation="not shown", **change)
    with pytest.raises(ValueError, match=rf"schema field 'tokens' is game state: .*missing: {missing}$"):
        check_schema((*FIELDS, field))


def test_a_field_must_say_whether_the_observation_shows_it():
    with pytest.raises(TypeError):
        Field(name="tokens", shape=(), dtype="int8", empty=0, visibility="public", role="state", array=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):  # a row is written with keywords
        Field("tokens", (), "int8", 0, "public", "state", True, ("scores",), "tokens")  # type: ignore[misc]
    for silent in ("", "  ", ()):
        with pytest.raises(ValueError, match="observation must name the blocks that show it, or say why none does"):
            check_schema((*FIELDS, _state_field(observation=silent)))


def test_a_field_naming_a_block_must_be_read_by_it():
    with pytest.raises(ValueError, match="names observation block 'round', which does not read it"):
        check_schema((*FIELDS, _state_field(observation=("round",))))
    with pytest.raises(ValueError, match=r"names unknown observation block\(s\) \['tally'\]"):
        check_schema((*FIELDS, _state_field(observation=("tally",))))


def test_a_block_reading_a_field_must_be_listed_by_it():
    fields, blocks = _with_block(_state_field(observation="not shown"), Block("tally", 2, 1.0, ("tokens.mine",), ""))
    with pytest.raises(ValueError, match=r"block 'tally' reads 'tokens\.mine', but field 'tokens' does not list"):
        check_schema(fields, blocks)


def test_a_block_may_not_read_the_opponents_private_cards():
    peek = Block("peek", NUM_ISLANDS, 0.5, ("hand.opponent",), "the opponent's hand")
    hand = next(field for field in FIELDS if field.name == "hand")
    fields = tuple(dataclasses.replace(f, observation=(*hand.observation, "peek")) if f is hand else f for f in FIELDS)
    with pytest.raises(ValueError, match=r"block 'peek' reads 'hand\.opponent': only the owner sees that field"):
        check_schema(fields, (*OBSERVATION_BLOCKS, peek))
    # The number of the opponent's cards is public.
    count = Block("peek", 1, 0.2, ("hand.opponent.total",), "the opponent's hand size")
    check_schema(fields, (*OBSERVATION_BLOCKS, count))


def test_a_block_may_not_read_the_pile_order():
    pile = next(field for field in FIELDS if field.name == "pile")
    fields = tuple(dataclasses.replace(f, observation=("pile_size", "order")) if f is pile else f for f in FIELDS)
    order = Block("order", 24, 1.0, ("pile",), "the pile")
    with pytest.raises(ValueError, match="block 'order' reads 'pile', hidden from both players"):
        check_schema(fields, (*OBSERVATION_BLOCKS, order))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"shape": ("players", "tokens")}, r"unknown dimension\(s\) \['tokens'\]"),
        ({"visibility": "secret"}, "visibility must be one of"),
        ({"role": "extra"}, "role must be one of"),
        ({"name": "hand"}, r"name \['hand'\] given to more than one field"),
        ({"position": "hands"}, r"position \['hands'\] given to more than one field"),
    ],
)
def test_a_malformed_field_is_a_one_line_error_naming_it(changes, message):
    field = _state_field(observation="not shown", **changes)
    with pytest.raises(ValueError, match=message) as error:
        check_schema((*FIELDS, field))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"position": "token_counts"},
            r"one name per field: its position key is 'tokens' \(or none\), got 'token_counts'",
        ),
        ({"formerly": ("hand",)}, r"former name\(s\) \['hand'\] are a field's name or another field's former name"),
        ({"formerly": ("current",)}, r"former name\(s\) \['current'\] are a field's name"),
    ],
)
def test_a_field_has_one_name_in_every_array(changes, message):
    with pytest.raises(ValueError, match=message):
        check_schema((*FIELDS, _state_field(observation="not shown", **changes)))


def test_every_field_has_one_name_for_its_array_position_key_query_and_block():
    from kahuna_env.engine import QUERIES
    from kahuna_env.observation import OBSERVATION_LAYOUT

    for field in FIELDS:
        assert field.batch in (None, field.name)
        assert field.position in (None, field.name, schema.FORMAT_KEYS.get(field.name)), field.name
        if field.name in OBSERVATION_LAYOUT:  # a block showing the field alone is named as it
            assert any(source.split(".")[0] == field.name for source in _block(field.name).sources)
    assert set(QUERIES) <= {field.name for field in FIELDS}
    assert {"current_player", "played_this_turn", "discarded_this_turn", "final_turns_left", "pile_size"} <= set(
        QUERIES
    )
    for old in schema.FORMERLY:  # a former name is only the deprecated alias of the one name
        assert old not in OBSERVATION_LAYOUT
        for owner in (KahunaBatch, KahunaGame):
            alias = vars(owner).get(old)
            assert alias is None or (alias.__doc__ or "").startswith("Deprecated"), (owner, old)


def _block(name: str) -> Block:
    return next(block for block in OBSERVATION_BLOCKS if block.name == name)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("cards_played_this_turn", "played_this_turn"),
        ("cards_discarded_this_turn", "discarded_this_turn"),
        ("setup_bridges_left", "setup_left"),
    ],
)
def test_a_former_engine_query_answers_for_one_release_with_a_warning(old, new):
    game = KahunaGame(seed=3)
    game.step(game.legal_actions()[0])
    with pytest.warns(DeprecationWarning, match=rf"KahunaGame query '{old}' is deprecated .* now '{new}'"):
        assert getattr(game, old) == getattr(game, new)
    with pytest.warns(DeprecationWarning, match="'open_discards' is deprecated"):
        assert game.open_discards() == game.open_discard
    with pytest.raises(AttributeError, match="has no attribute 'cards_played_this_round'"):
        game.cards_played_this_round  # noqa: B018


@pytest.mark.parametrize(
    ("old", "new"),
    [("current", "current_player"), ("played", "played_this_turn"), ("discarded", "discarded_this_turn"),
     ("final_turns", "final_turns_left"), ("pile_len", "pile_size")],
)  # fmt: skip
def test_a_former_batch_array_answers_for_one_release_with_a_warning(old, new):
    batch = KahunaBatch(3, seed=1)
    with pytest.warns(DeprecationWarning, match=rf"KahunaBatch array '{old}' is deprecated .* now '{new}'"):
        assert getattr(batch, old) is getattr(batch, new)
    with pytest.raises(AttributeError):
        batch.cards  # noqa: B018


@pytest.mark.parametrize(
    ("old", "new"),
    [("cards_played", "played_this_turn"), ("discarding", "discarded_this_turn"), ("discard_open", "open_discard"),
     ("final_turns", "final_turns_left")],
)  # fmt: skip
def test_a_former_observation_block_answers_for_one_release_with_a_warning(old, new):
    from kahuna_env.observation import OBSERVATION_LAYOUT, STATE_LAYOUT

    for layout in (OBSERVATION_LAYOUT, STATE_LAYOUT):
        with pytest.warns(DeprecationWarning, match=rf"observation block '{old}' is deprecated .* now '{new}'"):
            assert layout[old] == layout[new]
    with pytest.raises(KeyError):
        OBSERVATION_LAYOUT["tokens"]


def test_the_web_view_shows_every_public_query_by_its_fields_name_and_nothing_hidden():
    from kahuna_env.engine import QUERIES
    from kahuna_web.views import seat_view

    game = KahunaGame(seed=5)
    view = seat_view(game, 0)
    assert set(QUERIES) <= set(view)
    assert view["current_player"] == game.current_player and view["pile_size"] == game.pile_size
    hidden = {field.name for field in FIELDS if field.visibility == "hidden"}
    assert not hidden & set(view)


# ---------------------------------------------------------------------------------------------- the engine
def test_the_games_record_holds_every_schema_array_by_its_name_dtype_and_shape():
    declared = [field for field in FIELDS if field.batch is not None]
    assert STATE_DTYPE.names[: len(declared)] == tuple(field.batch for field in declared)
    for field in declared:
        dtype = STATE_DTYPE.fields[field.batch][0]
        assert dtype.base == np.dtype(field.dtype) and dtype.shape == schema.dims(field), field.name


def test_the_engines_empty_game_holds_each_fields_empty_value_in_the_schemas_shape():
    game = KahunaGame.__new__(KahunaGame)
    config = KahunaConfig(variant="planning", handicap=(1, 2))
    game._init_empty(config)
    for field in FIELDS:
        if field.batch is None:
            continue
        value = game._state[field.batch][0]
        if field.role == "option":
            assert value == field.from_config(config), field.name
        else:
            expected = np.full(schema.dims(field), field.empty)
            assert np.array_equal(value, expected) and value.shape == expected.shape, field.name


# ---------------------------------------------------------------------------------------------- the batch
def test_every_batch_array_is_a_schema_field_with_its_dtype_and_shape():
    n = 3
    batch = KahunaBatch(n, config=CONFIGS[:n], seed=0)
    arrays = {
        name: value
        for name, value in vars(batch).items()
        if isinstance(value, np.ndarray) and not name.startswith("_") and value.shape[:1] == (n,)
    }
    declared = {field.batch: field for field in FIELDS if field.batch is not None}
    assert set(arrays) == set(declared)
    for name, array in arrays.items():
        field = declared[name]
        assert array.dtype == np.dtype(field.dtype), name
        assert array.shape == (n, *schema.dims(field)), name


def test_a_new_deal_clears_every_state_array_to_its_empty_value():
    config = KahunaConfig(handicap=(0, 1))
    batch = KahunaBatch(2, config=config, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(150):
        batch.step(batch.random_actions(rng))
    batch.reset([1])
    fresh = KahunaBatch(1, config=config, seed=0)
    fresh.reset([0], game_seeds=[batch.game_seeds[1]])
    for field in FIELDS:
        if field.batch is not None:
            assert np.array_equal(getattr(batch, field.batch)[1], getattr(fresh, field.batch)[0]), field.name


# ---------------------------------------------------------------------------------------------- positions
def test_the_position_keys_are_the_schemas_and_every_game_writes_them_all():
    keys = tuple(field.position for field in FIELDS if field.position is not None)
    assert REQUIRED_KEYS + OPTIONAL_KEYS == tuple(sorted(keys, key=lambda key: key not in REQUIRED_KEYS))
    assert REQUIRED_KEYS == ("bridges", "hands", "face_up", "pile", "discard", "current_player", "round", "scores")
    assert len(dataclasses.fields(Position)) == len(keys)
    assert list(KahunaGame(seed=0).to_dict()) == list(REQUIRED_KEYS + OPTIONAL_KEYS)
    assert list(KahunaBatch(1, seed=0).to_dicts()[0]) == list(REQUIRED_KEYS + OPTIONAL_KEYS)


def test_a_position_value_has_the_schemas_position_fields_by_their_names():
    assert tuple(field.name for field in dataclasses.fields(Position)) == tuple(
        field.name for field in FIELDS if field.position is not None
    )
    game = KahunaGame(seed=2)
    value = game._position()
    pile = game._state["pile"][0, : game.pile_size]
    assert value.current_player == game.current_player and value.pile == tuple(pile.tolist())  # the pile bottom first
    assert KahunaGame._from_position(value, None).to_dict() == game.to_dict() == value.to_dict()


@pytest.mark.parametrize("field", [field for field in FIELDS if field.position and field.high is not None])
def test_a_position_value_outside_the_schemas_range_is_refused_naming_the_key(field):
    base = KahunaGame(seed=0).to_dict()
    for bad in (field.low - 1, field.high + 1):
        value = [bad, 0] if field.shape else bad
        with pytest.raises(ValueError, match=f"position '{field.position}'") as error:
            KahunaGame.from_dict({**base, field.position: value})
        assert "\n" not in str(error.value)


# ---------------------------------------------------------------------------------------------- observation
def test_the_observation_layout_and_scales_are_the_schemas_blocks():
    layout = observation.OBSERVATION_LAYOUT
    assert [(name, s.stop - s.start) for name, s in layout.items()] == [(b.name, b.size) for b in OBSERVATION_BLOCKS]
    extra = list(observation.STATE_LAYOUT.items())[len(layout) :]
    assert [(name, s.stop - s.start) for name, s in extra] == [(b.name, b.size) for b in STATE_BLOCKS]
    for block in OBSERVATION_BLOCKS + STATE_BLOCKS:
        scale = observation.STATE_SCALE[observation.STATE_LAYOUT[block.name]]
        assert np.array_equal(scale, np.broadcast_to(np.float32(block.scale), (block.size,))), block.name
    assert np.array_equal(observation.OBSERVATION_SCALE, observation.STATE_SCALE[: observation.OBSERVATION_SIZE])


def test_the_observation_manual_table_lists_the_schemas_blocks():
    rows = re.findall(r"^``(\w+)``\s+(\d+)\s", observation.__doc__, flags=re.MULTILINE)
    assert [(name, int(size)) for name, size in rows] == [(block.name, block.size) for block in OBSERVATION_BLOCKS]


def _hidden_from(position: dict, viewer: int, rng: np.random.Generator) -> dict:
    """The position with everything the schema hides from ``viewer`` dealt again: the opponent's unknown hand
    cards and face-down discards (visibility ``owner``) and the pile (``hidden``), same sizes in the same places."""
    opponent = 1 - viewer
    hand = Counter(position["hands"][opponent])
    known = Counter(position["known"][opponent])
    face_down = position["face_down"][opponent]
    pool = [*(hand - known).elements(), *face_down, *position["pile"]]
    pool = [pool[k] for k in rng.permutation(len(pool))]
    unknown = len(pool) - len(face_down) - len(position["pile"])
    hands = list(position["hands"])
    hands[opponent] = sorted([*known.elements(), *pool[:unknown]], key=ISLAND_ID.get)
    downs = list(position["face_down"])
    downs[opponent] = pool[unknown : unknown + len(face_down)]
    open_cards = Counter(position["discard"]) - Counter(position["face_down"][0]) - Counter(position["face_down"][1])
    discard = [*open_cards.elements(), *downs[0], *downs[1]]
    return {
        **position,
        "hands": hands,
        "face_down": downs,
        "pile": pool[unknown + len(face_down) :],
        "discard": discard,
    }


def test_what_the_schema_hides_from_a_player_never_changes_their_observation():
    rng = np.random.default_rng(7)
    compared = changed = 0
    for k, config in enumerate(CONFIGS):
        game = KahunaGame(config, seed=k)
        for step in range(400):
            if game.is_over:
                break
            game.step(int(rng.choice(game.legal_actions())))
            if step % 23:
                continue
            position = game.to_dict()
            for viewer in (0, 1):
                try:
                    twin = KahunaGame.from_dict(_hidden_from(position, viewer, rng))
                except ValueError:
                    continue  # the new deal left the player to move without a legal action: not a position
                seen = observation.encode_observation(game, viewer)
                assert np.array_equal(seen, observation.encode_observation(twin, viewer))
                changed += twin.to_dict() != position
                batch = KahunaBatch.from_dicts([position, twin.to_dict()])
                seen = batch.observations(viewer)
                assert np.array_equal(seen[0], seen[1])
                compared += 1
    assert compared >= 100 and changed >= compared // 2


# ---------------------------------------------------------------------------------------------- engine against batch
_FROM_BATCH = {
    "control": lambda batch, i: [
        sum(1 << island for island in range(NUM_ISLANDS) if batch.count[i, player, island] >= MAJORITY[island])
        for player in (0, 1)
    ],
    "hand_size": lambda batch, i: batch.hand[i].sum(1).tolist(),
    "config": lambda batch, i: batch.configs[i],
}
"""Fields no array holds: the batch's value of game ``i``."""
_FROM_ENGINE = {
    "control": lambda game: [game.control_mask(0), game.control_mask(1)],
    "hand_size": lambda game: [game.hand_size(0), game.hand_size(1)],
    "config": lambda game: game.config,
}
"""Fields no array holds: the engine's value, through its queries."""


def _engine_value(field: Field, game: KahunaGame):
    if field.batch is None:
        return _FROM_ENGINE[field.name](game)
    value = game._state[field.batch][0]
    if field.name == "pile":  # the pile bottom first; the row has room for every card
        value = value[: game.pile_size]
    return value.tolist()


def _batch_value(field: Field, batch: KahunaBatch, i: int):
    if field.batch is None:
        return _FROM_BATCH[field.name](batch, i)
    value = getattr(batch, field.batch)[i]
    if field.name == "pile":  # both hold the pile bottom first; the batch's row has room for every card
        value = value[: batch.pile_size[i]]
    return value.tolist()


def test_every_field_is_compared_below():
    compared = {field.name for field in FIELDS if field.batch}
    assert set(_FROM_BATCH) == set(_FROM_ENGINE)
    assert compared | set(_FROM_BATCH) == {field.name for field in FIELDS}


def test_the_batch_holds_every_schema_field_as_the_engine_does_game_by_game():
    """The differential gate, field by field: the batch's arrays equal the game's record field by field."""
    configs = CONFIGS[:6]
    batch = KahunaBatch(len(configs), config=configs, seed=11)
    games = [KahunaGame(config, seed=seed) for config, seed in zip(configs, batch.game_seeds, strict=True)]
    rng = np.random.default_rng(1)
    fields = list(FIELDS)
    for step in range(500):
        for i, game in enumerate(games):
            for field in fields:
                engine, batched = _engine_value(field, game), _batch_value(field, batch, i)
                assert engine == batched, f"step {step}, game {i}, field {field.name}: {engine} != {batched}"
        actions = batch.random_actions(rng)
        batch.step(actions)
        for i, game in enumerate(games):
            if not game.is_over:
                game.step(int(actions[i]))
    assert sum(game.is_over for game in games) >= 3


def test_the_pile_is_named_by_island():
    # The position's pile is island names top first; the engine's and the batch's are ids bottom first.
    game = KahunaGame(seed=4)
    pile = game._state["pile"][0, : game.pile_size].tolist()
    assert game.to_dict()["pile"] == [ISLANDS[card] for card in reversed(pile)]


def _table_rows(doc: str) -> list[tuple[str, tuple[int, ...], str]]:
    """``(name, shape per game, dtype)`` of each row of a docstring table: ``name``, ``(N, ...)``, u64/bool/int8."""
    rows = []
    for name, shape, dtype in re.findall(r"^``(\w+)``\s+\(N,\s*([\d, ]*)\)\s*(u64|bool)?", doc, flags=re.MULTILINE):
        sizes = tuple(int(size) for size in shape.replace(" ", "").split(",") if size)
        rows.append((name, sizes, {"u64": "uint64", "bool": "bool"}.get(dtype, "int8")))
    return rows


def test_the_batch_manual_table_lists_the_schemas_state_arrays():
    expected = {
        (field.batch, schema.dims(field), field.dtype)
        for field in FIELDS
        if field.batch is not None and field.role in ("state", "derived")
    }
    assert set(_table_rows(vector.__doc__)) == expected


def test_the_batched_encoder_writes_every_observation_block_once_in_order():
    """The one batched encoder, ``kernels.observations``: a start per block, named after it, in the layout's
    order, and every block written."""
    encoder = getattr(kernels.observations, "py_func", kernels.observations)  # compiled: its Python function
    tree = ast.parse(textwrap.dedent(inspect.getsource(encoder)))
    unpack = next(
        node for node in ast.walk(tree) if isinstance(node, ast.Assign) and getattr(node.value, "id", None) == "starts"
    )
    starts = [target.id for target in unpack.targets[0].elts]
    stored = {
        name.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and getattr(node.value, "id", "") == "r"
        for name in ast.walk(node.slice)
        if isinstance(name, ast.Name)
    }
    written = [name.removesuffix("_at") for name in starts if name in stored]
    assert written == [block.name for block in OBSERVATION_BLOCKS]


def test_the_engines_docstring_lists_every_query_made_from_the_schema():
    from kahuna_env.engine import QUERIES

    listed = KahunaGame.__doc__.split("made from the schema")[1].split("* turn and game")[0]
    assert set(re.findall(r"``(\w+)``", listed)) - {"None"} == set(QUERIES)
