"""Board facts (docs/RULES.md, "Material")."""

from __future__ import annotations

from kahuna_env import board


def test_twelve_islands_sorted_alphabetically():
    assert board.ISLANDS == tuple(sorted(board.ISLANDS)) and len(board.ISLANDS) == 12
    assert board.ISLANDS[0] == "ALOA" and board.ISLANDS[11] == "LALE"


def test_degrees_and_majorities_match_the_spec_table():
    assert board.DEGREE == (3, 5, 4, 4, 6, 5, 4, 5, 5, 5, 5, 3)
    assert board.MAJORITY == (2, 3, 3, 3, 4, 3, 3, 3, 3, 3, 3, 2)


def test_twenty_seven_lines_sorted_by_their_islands():
    assert len(board.LINES) == 27
    assert list(board.LINES) == sorted(board.LINES)
    assert all(a < b for a, b in board.LINES)
    assert board.LINE_NAMES[0] == "ALOA-BARI" and board.LINE_NAMES[13] == "ELAI-HUNA"
    assert board.LINE_NAMES[26] == "KAHU-LALE"


def test_layout_coordinates_match_the_spec():
    assert board.LAYOUT[0] == (240, 170) and board.LAYOUT[4] == (380, 240) and board.LAYOUT[11] == (380, 385)


def test_incidence_masks_agree_with_the_line_list():
    for island in range(12):
        lines = [line for line, (a, b) in enumerate(board.LINES) if island in (a, b)]
        assert board.ISLAND_LINES[island] == tuple(lines)
        assert board.ISLAND_LINE_MASK[island] == sum(1 << line for line in lines)
        assert board.LINE_A_MASK[island] | board.LINE_B_MASK[island] == board.ISLAND_LINE_MASK[island]
    assert board.LINES_TOUCHING[0b11] == board.ISLAND_LINE_MASK[0] | board.ISLAND_LINE_MASK[1]


def test_line_between_finds_lines_in_either_order_and_rejects_non_neighbours():
    assert board.line_between("HUNA", "ELAI") == board.line_between(4, 7) == 13
    try:
        board.line_between("ALOA", "LALE")
    except ValueError as error:
        assert "no line joins ALOA and LALE" in str(error)
    else:
        raise AssertionError("expected ValueError")


def test_components():
    assert board.NUM_CARDS == 24 and board.BRIDGES_PER_PLAYER == 25 and board.STONES_PER_PLAYER == 10
