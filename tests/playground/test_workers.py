"""Playground runs in worker processes: limits enforced by the process, plain data back, a fair queue."""

from __future__ import annotations

import json
import threading
import time

import pytest

from playground import Limits, run_program
from playground.examples import EXAMPLES
from playground.plain import PlainDataError, dumps, loads, result_from_plain, result_to_plain
from playground.workers import WorkerPool

EXPONENTIAL_COMPARE = "p = [0.5]\nq = [0.5]\nfor i in range(40):\n    p = [p, p]\n    q = [q, q]\nm = min(p, q)\n"
MEMORY_BOMB = "rows = [[0.5] * 1000 for i in range(200000)]\n"  # 1.6 GB of Python lists (tensors stop at 64 MiB)


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(size=2)
    yield pool
    pool.shutdown()


def run(pool: WorkerPool, source: str, owner: str = "a", limits: Limits | None = None, client: str = ""):
    job = pool.submit(owner, source, limits or Limits(), client=client)
    assert job.wait(60), "no answer from the pool"
    return job.result


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_worker_results_equal_in_process_results(pool, name):
    here, there = run_program(EXAMPLES[name]), run(pool, EXAMPLES[name])
    assert there.output == here.output
    assert (there.error is None) == (here.error is None)
    assert there.snapshot is not None and [n.op for n in there.snapshot.nodes] == [n.op for n in here.snapshot.nodes]
    assert there.names == here.names
    if here.backward is not None:
        assert len(there.backward.recorder.events) == len(here.backward.recorder.events)


def test_one_statement_of_exponential_work_is_stopped_and_the_worker_replaced(pool):
    replaced = pool.replaced
    start = time.monotonic()
    result = run(pool, EXPONENTIAL_COMPARE)
    assert "ran longer than 5 seconds and was stopped" in result.error.message
    assert time.monotonic() - start < 12
    assert pool.replaced == replaced + 1
    assert run(pool, 'print("next run")').output == ["next run"]  # a fresh worker took its place


def test_one_statement_memory_bomb_is_stopped_by_the_process_limit(pool):
    result = run(pool, MEMORY_BOMB, limits=Limits(seconds=60))  # memory stops it, not a busy machine's clock
    assert "Your program used more than 512 MiB of memory and was stopped" in result.error.message
    assert run(pool, "print(1 + 1)").output == ["2"]


def test_a_second_run_replaces_the_waiting_one_and_queued_runs_see_their_position():
    pool = WorkerPool(size=1)
    try:
        slow = pool.submit("teacher", "for i in range(1000):\n    x = Tensor.ones([512, 512], ad).exp()\n", Limits())
        time.sleep(0.3)  # the slow run has started
        first = pool.submit("student", 'print("first")', Limits())
        other = pool.submit("other", 'print("other")', Limits())
        second = pool.submit("student", 'print("second")', Limits())
        assert first.wait(1) and first.state == "replaced" and first.result is None
        assert other.position() == 0 and second.position() == 1  # arrival order, one waiting run per session
        assert second.wait(60) and second.result.output == ["second"]
        assert other.result.output == ["other"] and slow.wait(60)
    finally:
        pool.shutdown()


def test_twenty_concurrent_runs_from_twenty_sessions_all_complete_with_their_own_results(pool):
    results: dict[int, list[str]] = {}
    errors: dict[int, str] = {}

    def student(k: int) -> None:
        source = f"x = Tensor.from_floats([{k}.0], ad).require_grad()\nprint((x * x).sum().item())"
        # five times the run's own time limit: what is tested is that every run completes, on a busy machine too
        limits = Limits(seconds=5 * Limits.seconds)
        result = run(pool, source, owner=f"student-{k}", limits=limits, client=f"192.0.2.{k}")  # twenty laptops
        results[k] = result.output
        if result.error is not None:
            errors[k] = str(result.error)

    threads = [threading.Thread(target=student, args=(k,)) for k in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results == {k: [str(float(k * k))] for k in range(20)}, errors


def test_results_cross_back_as_plain_json_and_decode_to_the_same_pictures():
    result = run_program(EXAMPLES["Seed: memory growth"])
    data = dumps(result_to_plain(result))
    json.loads(data)  # plain JSON, nothing else
    back = result_from_plain(loads(data))
    assert back.snapshot == result.snapshot
    assert back.output == result.output and back.names == result.names
    events = back.backward.recorder.events
    assert [type(e) for e in events] == [type(e) for e in result.backward.recorder.events]


@pytest.mark.parametrize(
    "forged",
    [
        b'{"$": "dict", "items": [[{"$": "os.system", "v": "id"}, 1]]}',
        b'{"$": "GraphSnapshot", "nodes": [], "pending_steps": [], "memory": {"$": "Popen"}, "backward_count": 0}',
        b'{"output": ["x"], "error": null, "snapshot": null, "names": {"$": "dict", "items": [[1, "a b"]]},'
        b' "backward": null, "memory": [], "statements": 1}',
        b"\x80\x81 not json",
    ],
)
def test_data_a_worker_could_forge_is_refused(forged):
    with pytest.raises(PlainDataError):
        result_from_plain(loads(forged))


def test_a_frame_is_sent_once_and_a_reference_to_an_unsent_frame_is_refused():
    result = run_program(EXAMPLES["micrograd's MLP, with classes"])
    sent = dumps(result_to_plain(result))
    frames = {g for n in result.snapshot.nodes for g in n.group}
    assert sent.count(b'"$":"GroupFrame"') == len(frames)  # each written whole once, then by its number
    back = result_from_plain(loads(sent))
    assert [n.group for n in back.snapshot.nodes] == [n.group for n in result.snapshot.nodes]
    with pytest.raises(PlainDataError):
        loads(sent.replace(b'"$":"frame","i":0', b'"$":"frame","i":99999', 1))
