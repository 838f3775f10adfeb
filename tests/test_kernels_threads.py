"""The engine's first use from several threads at once (kahuna_env.kernels' setup is guarded by a lock).

Each test runs in a fresh interpreter: the setup happens once per process, so only a process that has not
touched the engine yet can show the race (several threads wrapping the same loop: numba's "A jit decorator
was called on an already jitted function").  A barrier lines the threads up so that they make their first
game or batch together; the work each does is a few moves, bounded, never a wait on the clock.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

THREADS = 6

FIRST_USE_FROM_THREADS = f"""
import random
import threading

import numpy as np

from kahuna_env import kernels
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.vector import KahunaBatch

errors = []
barrier = threading.Barrier({THREADS})


def first_use(index):
    try:
        barrier.wait()
        if index % 3 == 0:
            batch = KahunaBatch(2, seed=index, auto_reset=True)
            for _ in range(3):
                batch.step(batch.random_actions(np.random.default_rng(index)))
        elif index % 3 == 1:
            game, chooser = KahunaGame(KahunaConfig(), seed=index), random.Random(index)
            for _ in range(5):
                game.step(chooser.choice(game.legal_actions()))
        else:
            kernels.interpreted()  # the plain loops' one second load, raced with the setup
            game = KahunaGame(KahunaConfig(), seed=index)
            game.step(game.legal_actions()[0])
    except BaseException as error:
        errors.append(f"{{type(error).__name__}}: {{error}}")


threads = [threading.Thread(target=first_use, args=(index,)) for index in range({THREADS})]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(kernels.enabled(), len(errors))
for error in errors:
    print(error)
"""


@pytest.mark.parametrize("jit", ["1", "0"])
def test_the_engine_first_used_from_several_threads_at_once_raises_nothing(jit):
    env = {**os.environ, "KAHUNA_JIT": jit}
    out = subprocess.run(
        [sys.executable, "-c", FIRST_USE_FROM_THREADS], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == f"{jit == '1'} 0", "\n".join(lines[1:4])
