"""Snapshots of the server and the recorded backward events."""

import json

import numpy as np
import pytest

from autodiff import BackwardRecorder, Device, NodeStatus, Requirement, Tensor
from autodiff.trace import (
    BackwardFinished,
    GradientConsumed,
    GradientRegistered,
    SavedStateFreed,
    StepStarted,
    SweepFreed,
    TapeBuilt,
)


def seed_program(ad):
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    h = x * x
    loss = (h + x * 3.0).sum()
    return x, h, loss


def test_snapshot_describes_every_node():
    ad = Device.numpy().autodiff()
    x, h, loss = seed_program(ad)
    snap = ad.snapshot()
    assert [n.op for n in snap.nodes] == ["from_floats", "mul", "mul_scalar(3)", "add", "sum"]
    assert [n.order for n in snap.nodes] == [0, 1, 1, 2, 3]
    assert snap.node(h.node_id).parents == (x.node_id, x.node_id)  # x used twice
    assert snap.node(h.node_id).saved_bytes == 8  # x saved (shared by both operands)
    assert snap.node(loss.node_id).saved_bytes == 0  # sum keeps only the shape
    assert snap.node(x.node_id).requirement is Requirement.Grad
    assert {n.status for n in snap.nodes} == {NodeStatus.LIVE}
    assert snap.pending_steps == tuple(n.id for n in snap.nodes)
    assert snap.node(loss.node_id).shape == (1,)
    # the intermediate (x*3) has no handle left, but loss depends on it: still live
    scaled = snap.nodes[2]
    assert not scaled.handle_alive and scaled.status is NodeStatus.LIVE


def test_snapshot_after_backward_and_abandon():
    ad = Device.numpy().autodiff()
    x, h, loss = seed_program(ad)
    abandoned = (x.exp() * 2.0).sum()
    abandoned_id = abandoned.node_id
    del abandoned
    assert ad.snapshot().node(abandoned_id).status is NodeStatus.ABANDONED
    loss.backward()
    snap = ad.snapshot()
    assert snap.node(loss.node_id).status is NodeStatus.CONSUMED
    assert snap.node(abandoned_id).status is NodeStatus.FREED
    assert snap.pending_steps == ()
    assert snap.memory == ad.memory_usage()


def test_records_are_pruned_one_backward_later():
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0], ad).require_grad()
    for _ in range(50):
        (x * 2.0).sum().backward()
    assert len(ad.snapshot().nodes) < 10  # bounded, not 100+


def test_recorded_backward_events():
    ad = Device.numpy().autodiff()
    x, h, loss = seed_program(ad)
    recorder = BackwardRecorder()
    grads = loss.backward(recorder=recorder)
    events = recorder.events
    assert isinstance(events[0], TapeBuilt)
    assert events[0].buckets == ((0,), (1, 2), (3,), (4,)) or events[0].buckets == ((0,), (2, 1), (3,), (4,))
    started = [e for e in events if isinstance(e, StepStarted)]
    assert [e.order for e in started] == sorted((e.order for e in started), reverse=True)
    assert started[0].node_id == loss.node_id and started[-1].node_id == x.node_id
    mul = next(e for e in started if e.op == "mul")
    assert mul.rules == ("grad * b", "grad * a")
    to_x = [e for e in events if isinstance(e, GradientRegistered) and e.node_id == x.node_id]
    assert len(to_x) == 3 and [e.accumulated for e in to_x] == [False, True, True]
    np.testing.assert_allclose(to_x[-1].total, [5.0, 7.0])
    consumed = {e.node_id: e.kept for e in events if isinstance(e, GradientConsumed)}
    assert consumed[x.node_id] is True and consumed[loss.node_id] is False
    assert sum(isinstance(e, SavedStateFreed) for e in events) == 5
    assert isinstance(events[-2], SweepFreed) and isinstance(events[-1], BackwardFinished)
    final = recorder.container_after(len(events) - 1)
    assert list(final) == grads.node_ids()
    np.testing.assert_allclose(final[x.node_id], x.grad(grads).numpy())
    # after the seed event only the root's ones are registered
    seeded = recorder.container_after(1)
    assert list(seeded) == [loss.node_id] and seeded[loss.node_id].tolist() == [1.0]
    assert json.loads(recorder.to_json())[0]["event"] == "TapeBuilt"


@pytest.mark.parametrize("record", [False, True])
def test_recording_does_not_change_results(record):
    ad = Device.numpy().autodiff()
    w = Tensor.from_floats([[0.5, -1.0], [2.0, 0.25]], ad).require_grad()
    xin = Tensor.from_floats([[1.0], [2.0]], ad)
    b = Tensor.from_floats([[0.1], [0.2]], ad).require_grad()
    grads = (w @ xin + b).tanh().sum().backward(recorder=BackwardRecorder() if record else None)
    y = np.tanh(np.array([[0.5, -1.0], [2.0, 0.25]]) @ np.array([[1.0], [2.0]]) + np.array([[0.1], [0.2]]))
    np.testing.assert_allclose(b.grad(grads).numpy(), 1 - y**2, rtol=1e-5)
    np.testing.assert_allclose(w.grad(grads).numpy(), (1 - y**2) @ np.array([[1.0, 2.0]]), rtol=1e-5)
    assert ad.memory_usage().allocations == 5  # w, xin, b and two gradients: no trace residue


def test_held_bytes_add_up_to_what_the_graph_costs():
    from autodiff import Distribution
    from course.programs import memory_forward

    ad = Device.numpy().autodiff()
    x = Tensor.random([64, 64], Distribution.Default, ad).require_grad()
    for _ in range(5):
        memory_forward(x)
    kept = x * 2.0  # a live tensor whose step saves nothing it alone holds
    snap = ad.snapshot()
    tensor = 64 * 64 * 4
    graph_cost = snap.memory.bytes_in_use - 2 * tensor  # minus x and kept, held by their handles
    assert sum(n.held_bytes for n in snap.nodes) == graph_cost == 10 * tensor
    assert snap.node(kept.node_id).held_bytes == 0
    assert all(n.saved_bytes >= n.held_bytes for n in snap.nodes)


def test_json_export_can_cap_large_tensors():
    ad = Device.numpy().autodiff()
    x = Tensor.ones([100, 100], ad).require_grad()
    recorder = BackwardRecorder()
    (x * 2.0).sum().backward(recorder=recorder)
    events = json.loads(recorder.to_json(max_values=10))
    registered = [e for e in events if e["event"] == "GradientRegistered" and e["node_id"] == int(x.node_id)]
    assert registered[0]["value"] == {"shape": [100, 100], "first_values": [2.0] * 10}
    full = [e for e in json.loads(recorder.to_json()) if e["event"] == "GradientRegistered"]
    assert np.array(full[-1]["value"]).shape == (100, 100)
