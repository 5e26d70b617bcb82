"""The memory history of the seed's experiments, replayed from the memory_viz snapshot alone, gives back the seed's
`in_use` column (values typed in from the seed); the snapshot is plain pickled data that PyTorch's own reader of the
format accepts (where torch is installed)."""

from __future__ import annotations

import inspect
import pickle
import pickletools
from collections.abc import Iterator

import pytest

from autodiff import Device, Distribution, Tensor, UnsupportedOperationError
from autodiff.memory_viz import dump_snapshot, snapshot_bytes
from autodiff.observer import NO_OBSERVER
from course.programs import memory_forward
from course.scenarios import MemoryRow, abandoned_graphs_experiment, memory_experiment

MIB = 2**20
VIZ_CATEGORIES = {
    "parameter",
    "optimizer_state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd_detail",
    "unknown",
}


def recorded(rows: Iterator[MemoryRow], device: Device) -> tuple[list[int], list[int]]:
    """Each row's bytes in use as the engine counts them, and the entries recorded when it was yielded."""
    engine, marks = [], []
    for _, usage in rows:
        engine.append(usage.bytes_in_use)
        history = device.memory_history
        assert history is not None
        marks.append(history.recorded)
    return engine, marks


def replay(snapshot: dict) -> list[int]:
    """Bytes in use after each entry, from the trace alone: an entry ends with `alloc` or `segment_free`."""
    in_use, after = 0, []
    for event in snapshot["device_traces"][0]:
        if event["action"] == "alloc":
            in_use += event["size"]
            after.append(in_use)
        elif event["action"] == "free_completed":
            in_use -= event["size"]
        elif event["action"] == "segment_free":
            after.append(in_use)
    return after


def test_replayed_history_gives_the_seed_in_use_column():
    device = Device.numpy()
    device.record_memory_history()
    engine, marks = recorded(memory_experiment(device), device)
    after = replay(device.memory_snapshot())
    seed = [m * MIB for m in (1, 11, 21, 31, 41, 2, 1, 1, 1)]  # the seed's column: 1.0, 11.0, ... MiB
    assert [after[mark - 1] for mark in marks] == seed == engine


def test_replayed_history_gives_the_abandoned_graphs_column():
    device = Device.numpy()
    device.record_memory_history()
    engine, marks = recorded(abandoned_graphs_experiment(device), device)
    after = replay(device.memory_snapshot())
    seed = [15 * MIB, 15 * MIB, 15 * MIB, 8]  # 15.0, 15.0, 15.0, 0.0 MiB: only y ([1.0, 2.0], float32) is left
    assert [after[mark - 1] for mark in marks] == seed == engine


def seed_passes(passes: int, max_entries: int = 100_000) -> Device:
    ad = Device.numpy().autodiff()
    ad.record_memory_history(max_entries=max_entries)
    x = Tensor.random([512, 512], Distribution.Default, ad).require_grad()
    for _ in range(passes):
        memory_forward(x)  # the loss is dropped at once: its graph is abandoned
    return ad


def test_each_pass_holds_two_saved_mebibytes_named_by_node_op_and_line():
    ad = seed_passes(3)
    history = ad.memory_history
    assert history is not None
    held = [a for a in history.live if a.size == MIB]
    assert [(a.role, a.category) for a in held[:1]] == [("parameter", "parameter")]
    passes = held[1:]
    assert [(a.op, a.category) for a in passes] == [("exp", "activation"), ("mul", "activation")] * 3
    assert [op for a in passes for _, op in a.saved_by] == ["mul", "matmul"] * 3
    lines, first = inspect.getsourcelines(memory_forward)
    line = first + next(k for k, text in enumerate(lines) if "return" in text)
    assert {(a.program_frame.name, a.program_frame.line) for a in passes if a.program_frame} == {
        ("memory_forward", line)
    }
    assert "saved by NodeId(2) · mul for backward" in passes[0].describe()


def test_snapshot_is_plain_data_that_pickles_back_the_same(tmp_path):
    ad = seed_passes(2)
    snapshot = ad.memory_snapshot()

    def plain(value: object) -> bool:
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, list | tuple):
            return all(plain(v) for v in value)
        return value is None or type(value) in (int, float, str, bool)

    assert plain(snapshot)
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot
    path = tmp_path / "snapshot.pickle"
    dump_snapshot(ad, path)
    data = path.read_bytes()
    # memory_viz reads protocols up to 4 (Python 3.14 writes 5 by default): the first opcode says which
    for written in (data, snapshot_bytes(ad)):
        opcode, protocol, _ = next(pickletools.genops(written))
        assert (opcode.name, protocol) == ("PROTO", 4)
    dumped = pickle.loads(data)
    assert dumped["segments"] == snapshot["segments"]
    assert dumped["device_traces"][0][:-1] == snapshot["device_traces"][0][:-1]  # the last: when it was taken
    trace = snapshot["device_traces"][0]
    assert {e["category"] for e in trace} <= VIZ_CATEGORIES
    assert "unknown" in {e["category"] for e in trace}  # memory_viz's viewer fails without one
    assert {"alloc", "free_requested", "free_completed"} <= {e["action"] for e in trace}


def test_peak_and_live_bytes_equal_the_engine():
    ad = seed_passes(4)
    snapshot = ad.memory_snapshot()
    pool = ad.backend.pool
    assert max(replay(snapshot)) == pool.peak_bytes == 10 * MIB + 4  # x, 3 passes' 2 MiB, the 4th pass whole
    blocks = [b for s in snapshot["segments"] for b in s["blocks"]]
    live = sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated")
    assert live == pool.bytes_in_use == 9 * MIB


def test_a_limited_recording_keeps_the_newest_entries_and_says_so():
    full, limited = seed_passes(5), seed_passes(5, max_entries=10)
    full_history, limited_history = full.memory_history, limited.memory_history
    assert full_history is not None and limited_history is not None
    assert limited_history.recorded == full_history.recorded > 10
    assert len(limited_history.events) == 10 and limited_history.dropped == full_history.recorded - 10

    def key(history: object) -> list[tuple]:
        return [(e.action, e.allocation.size, e.allocation.role, e.allocation.node) for e in history.events]

    assert key(limited_history) == key(full_history)[-10:]
    about = limited.memory_snapshot()["autodiff_history"]
    assert about["entries_dropped"] == full_history.recorded - 10
    assert about["note"] == f"only the newest 10 of {full_history.recorded} entries are kept"
    # every buffer still held is in the segments, its allocation recorded or not: the viewer's picture is whole
    segments = limited.memory_snapshot()["segments"]
    assert sum(s["total_size"] for s in segments) == limited.backend.pool.bytes_in_use


def test_bytes_held_before_recording_started_are_one_block_of_their_own():
    ad = Device.numpy().autodiff()
    x = Tensor.random([512, 512], Distribution.Default, ad).require_grad()
    ad.record_memory_history()
    (x * 2.0).sum()
    segments = ad.memory_snapshot()["segments"]
    assert [s["total_size"] for s in segments] == [MIB]  # x alone: its allocation was never seen
    assert segments[0]["blocks"][0]["frames"] == []


def test_recording_is_off_by_default_and_stops():
    ad = Device.numpy().autodiff()
    assert ad.memory_history is None and ad.backend.pool.observer is NO_OBSERVER
    with pytest.raises(UnsupportedOperationError, match="record_memory_history"):
        ad.memory_snapshot()
    ad.record_memory_history(max_entries=5)
    assert ad.memory_history is not None
    ad.record_memory_history(enabled=False)
    assert ad.memory_history is None
    with pytest.raises(ValueError, match="at least 1"):
        ad.record_memory_history(max_entries=0)


def test_torch_memory_viz_reads_the_snapshot():
    """PyTorch's own reader of the format (`torch.cuda._memory_viz`, no GPU needed): its segment summary counts the
    bytes the engine holds, its trace summary every entry."""
    memory_viz = pytest.importorskip("torch.cuda._memory_viz")
    ad = seed_passes(3)
    snapshot = ad.memory_snapshot()
    summary = memory_viz.segsum(snapshot)
    assert "total_allocated: 7.0MiB" in summary  # x and three passes' 2 MiB
    assert f"segments: {len(snapshot['segments'])}" in summary
    trace = memory_viz.trace(snapshot)
    assert f"{len(snapshot['device_traces'][0])} entries" in trace
    assert trace.count("cudaMalloc(") == sum(e["action"] == "segment_alloc" for e in snapshot["device_traces"][0])


def test_a_saved_tensor_of_the_graph_backward_runs_is_freed_by_its_step():
    """The last pass's saved tensors go when the steps that kept them run, and the history says so (the words were
    "freed when its last tensor was dropped" while a step's saved table outlived the call that ran it)."""
    from ui.memory_timeline import why_held

    device = Device.named("numpy")
    device.record_memory_history(max_entries=10_000)
    for _ in memory_experiment(device.autodiff(), size=64):
        pass
    history = device.memory_history
    assert history is not None
    allocations = {id(e.allocation): e.allocation for e in history.events}.values()
    saved = [a for a in allocations if a.category == "activation" and a.released_at is not None]
    by_step = [a for a in saved if why_held(a).endswith("freed when its step ran in backward")]
    assert {a.op for a in by_step} == {"exp", "mul"} and len(by_step) == 2  # the one graph that ran backward
    assert all("run_step" in {f.name for f in a.release_frames} for a in by_step)


def test_a_harness_that_runs_a_program_is_never_a_buffers_line():
    """record_program hides itself (`__autodiff_hidden__`): what backward makes under it has no program line, and
    no frame outside it is named instead."""
    from course.programs import record_program

    run = record_program("mlp", memory_entries=5_000)
    history = run.device.inner.memory_history
    assert history is not None
    frames = {f.name for e in history.events for f in e.allocation.frames}
    assert "record_program" not in frames and "test_a_harness_that_runs_a_program_is_never_a_buffers_line" not in frames
    assert any(e.allocation.program_frame is None for e in history.events)  # backward's gradients: line unknown
    assert any(e.allocation.program_frame and e.allocation.program_frame.name == "mlp_program" for e in history.events)
