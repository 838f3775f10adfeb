"""kahuna_env.workers: the one process-pool helper (evaluation, distillation, collection)."""

from __future__ import annotations

import os

import pytest

from kahuna_env.workers import WorkerFailed, Workers, one_line


def _setup(state: dict, base: int) -> None:
    state["base"] = base
    state["pid"] = os.getpid()


def _add(state: dict, item: int) -> tuple[int, int]:
    return state["base"] + item, state["pid"]


def _count(state: dict, _item: object) -> int:
    state["calls"] = state.get("calls", 0) + 1
    return state["calls"]


def _fail_setup(state: dict) -> None:
    raise FileNotFoundError("checkpoint not found: gone.pt")


def _fail(state: dict, item: int) -> None:
    raise RuntimeError(f"task {item} crashed\nsecond line")


def _die(state: dict, item: int) -> None:
    os._exit(3)


def test_map_keeps_the_items_order_and_each_worker_keeps_its_state() -> None:
    with Workers(2, _setup, (100,)) as workers:
        results = workers.map(_add, range(10))
        assert [value for value, _ in results] == [100 + i for i in range(10)]
        assert {pid for _, pid in results} <= {process.pid for process in workers._processes}
        assert os.getpid() not in {pid for _, pid in results}
        # A task on a chosen worker sees the state that worker built and kept.
        workers.send(1, _count, None)
        assert workers.receive(1) >= 1


def test_as_completed_yields_every_index_once_and_can_stop_early() -> None:
    with Workers(2, _setup, (0,)) as workers:
        seen = sorted(index for index, _ in workers.as_completed(_add, range(7)))
        assert seen == list(range(7))
        first = []
        for index, _ in workers.as_completed(_add, range(50)):
            first.append(index)
            break
        assert len(first) == 1
        assert [value for value, _ in workers.map(_add, [5])] == [5]  # usable again after stopping early


def test_a_setup_that_fails_is_reported_by_the_first_task_in_one_line() -> None:
    with Workers(1, _fail_setup) as workers, pytest.raises(WorkerFailed) as caught:
        workers.map(_add, [1])
    assert str(caught.value) == "a worker could not start: checkpoint not found: gone.pt"


def test_a_task_that_raises_is_one_line_and_the_worker_goes_on() -> None:
    with Workers(1, _setup, (0,)) as workers:
        with pytest.raises(WorkerFailed, match=r"^RuntimeError: task 4 crashed$"):
            workers.map(_fail, [4])
        assert workers.map(_add, [1])[0][0] == 1


def test_a_worker_that_dies_is_one_line_not_a_hang() -> None:
    with Workers(2, _setup, (0,)) as workers, pytest.raises(WorkerFailed) as caught:
        workers.map(_die, range(4))
    assert str(caught.value) == "a worker process died unexpectedly (killed, or out of memory?)"


@pytest.mark.parametrize("count", [0, -1, True, 1.5, "2"])
def test_a_bad_worker_count_is_one_line(count: object) -> None:
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        Workers(count)  # type: ignore[arg-type]


def test_one_line_keeps_the_first_line_and_names_the_type_when_needed() -> None:
    assert one_line(ValueError("bad value\ndetails")) == "bad value"
    assert one_line(KeyError("k")) == "KeyError: 'k'"
    assert one_line(RuntimeError()) == "RuntimeError"
