"""The worked example of the seed rulebook (page 5), replayed move by move.

White (player 0) plays BARI onto BARI-DUDA, takes BARI and throws Black off
ALOA-BARI (Black loses ALOA); then plays ALOA onto ALOA-BARI, takes ALOA and
throws Black off ALOA-HUNA (Black loses HUNA).  Black then removes White's
HUNA-ELAI with two HUNA cards and plays ELAI onto the freed line, taking HUNA
and ELAI: White loses HUNA-DUDA, DUDA-ELAI and ELAI-BARI, and with them DUDA.
"""

from __future__ import annotations

from helpers import LINE, check_invariants, game_at

from kahuna_env import actions as A


def test_rulebook_example_two_turns_of_shifting_control():
    game = game_at(
        bridges={
            # White: two lines on BARI, three on DUDA (controls DUDA).
            "BARI-ELAI": 0,
            "BARI-COCO": 0,
            "ALOA-DUDA": 0,
            "DUDA-ELAI": 0,
            "DUDA-HUNA": 0,
            "ELAI-HUNA": 0,
            # Black: controls ALOA (ALOA-BARI, ALOA-HUNA) and HUNA (ALOA-HUNA, HUNA-IFFI, HUNA-LALE).
            "ALOA-BARI": 1,
            "ALOA-HUNA": 1,
            "HUNA-IFFI": 1,
            "HUNA-LALE": 1,
            "ELAI-FAAA": 1,
            "ELAI-IFFI": 1,
            "ELAI-JOJO": 1,
        },
        hands=(["BARI", "ALOA"], ["HUNA", "HUNA", "ELAI"]),
    )
    assert game.controller("DUDA") == 0
    assert game.controller("ALOA") == 1 and game.controller("HUNA") == 1

    # White 1) BARI onto BARI-DUDA: majority on BARI, Black's ALOA-BARI goes, Black loses ALOA.
    game.step(A.place_action(LINE["BARI-DUDA"], "BARI"))
    assert game.controller("BARI") == 0
    assert game.owner(LINE["ALOA-BARI"]) is None
    assert game.controller("ALOA") is None

    # White 2) ALOA onto ALOA-BARI: majority on ALOA, Black's ALOA-HUNA goes, Black loses HUNA.
    game.step(A.place_action(LINE["ALOA-BARI"], "ALOA"))
    assert game.controller("ALOA") == 0
    assert game.owner(LINE["ALOA-HUNA"]) is None
    assert game.controller("HUNA") is None
    game.step(A.DRAW)
    check_invariants(game)

    # Black 1) two HUNA cards remove White's HUNA-ELAI.
    assert game.current_player == 1
    game.step(A.remove_action(LINE["ELAI-HUNA"], "HUNA", "HUNA"))
    assert game.owner(LINE["ELAI-HUNA"]) is None

    # Black 2) ELAI onto HUNA-ELAI: majority on HUNA and ELAI; White loses three bridges and DUDA.
    game.step(A.place_action(LINE["ELAI-HUNA"], "ELAI"))
    assert game.controller("HUNA") == 1 and game.controller("ELAI") == 1
    for line in ("DUDA-HUNA", "DUDA-ELAI", "BARI-ELAI"):
        assert game.owner(LINE[line]) is None, line
    assert game.controller("DUDA") is None
    assert game.controller("BARI") == 0, "White keeps BARI with ALOA-BARI, BARI-COCO and BARI-DUDA"
    assert game.controller("ALOA") == 0
    check_invariants(game)
