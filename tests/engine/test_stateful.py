"""A stateful property test of the engine: random create / op / backward / drop / detach / grad_remove."""

from __future__ import annotations

import gc

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from autodiff import Device, NodeStatus, TapeConsumedError, Tensor
from autodiff.backends.base import Buffer


def live_buffer_bytes(pool) -> tuple[int, int]:
    """Bytes and count of the buffers of `pool` that Python still holds, found independently of the pool."""
    owners = [o for o in gc.get_objects() if isinstance(o, Buffer) and o.pool is pool and o.base is None]
    return sum(o.array.nbytes for o in owners), len(owners)


class EngineMachine(RuleBasedStateMachine):
    """Tensors live only in `self.live` (picked by index), so dropping one really drops it."""

    policy = "lazy"

    def __init__(self) -> None:
        super().__init__()
        # the heap as it is set aside (gc.freeze): the invariant's scan walks only what this run made, which holds
        # every buffer of this run's pool (made below); over a worker's heap of earlier modules, 3,000 scans took 108 s
        self.thaw = gc.get_freeze_count() == 0  # a heap the app froze in this process (frame.py) stays frozen
        gc.freeze()
        self.ad = Device.numpy().autodiff(self.policy)
        self.pool = self.ad.backend.pool
        self.live: list[Tensor] = []
        self.grads = None

    def pick(self, index: int) -> Tensor:
        return self.live[index % len(self.live)]

    @rule(values=st.lists(st.floats(-2, 2), min_size=3, max_size=3), track=st.booleans())
    def create(self, values, track):
        t = Tensor.from_floats(values, self.ad)
        if track:
            t.require_grad()
        self.live.append(t)

    @precondition(lambda self: self.live)
    @rule(i=st.integers(0, 99), j=st.integers(0, 99), op=st.sampled_from(["add", "mul", "sub"]))
    def binary(self, i, j, op):
        a, b = self.pick(i), self.pick(j)  # shapes [3] and [1] (from sum) always broadcast
        self.live.append({"add": a + b, "mul": a * b, "sub": a - b}[op])

    @precondition(lambda self: self.live)
    @rule(i=st.integers(0, 99), op=st.sampled_from(["exp", "tanh", "sigmoid", "sum"]))
    def unary(self, i, op):
        self.live.append(getattr(self.pick(i), op)())

    @precondition(lambda self: self.live)
    @rule(i=st.integers(0, 99))
    def detach(self, i):
        a = self.pick(i)
        out = a.detach()
        # Burn's float_detach: a new leaf; a require_grad() leaf stays one, anything else is untracked
        assert out.is_require_grad == a.is_require_grad and out.is_tracked == a.is_require_grad
        assert out.data is a.data and out.node_id != a.node_id
        self.live.append(out)

    @precondition(lambda self: self.live)
    @rule(i=st.integers(0, 99))
    def backward(self, i):
        a = self.pick(i)
        if not a.is_tracked:
            return
        before = self.ad.snapshot()
        try:
            self.grads = a.backward()
        except TapeConsumedError:
            after = self.ad.snapshot()  # a refusal changes nothing
            assert after.pending_steps == before.pending_steps and after.memory == before.memory

    @precondition(lambda self: self.grads is not None and self.live)
    @rule(index=st.integers(0, 1000))
    def grad_remove(self, index):
        t = self.live[index % len(self.live)]
        had = t.grad(self.grads) is not None
        removed = t.grad_remove(self.grads)
        assert (removed is not None) == had and t.grad(self.grads) is None

    @precondition(lambda self: self.live)
    @rule(index=st.integers(0, 1000))
    def drop(self, index):
        self.live.pop(index % len(self.live))

    @rule()
    def drop_gradients(self):
        self.grads = None

    @invariant()
    def accounting_equals_live_buffers(self):
        usage = self.ad.memory_usage()
        assert (usage.bytes_in_use, usage.allocations) == live_buffer_bytes(self.pool)

    def teardown(self) -> None:
        # Everything dropped and one backward run: the device returns to its baseline (nothing).
        try:
            self.live.clear()
            self.grads = None
            y = Tensor.from_floats([1.0], self.ad).require_grad()
            (y * y).sum().backward()
            del y
            gc.collect()
            assert self.ad.memory_usage().bytes_in_use == 0
            assert not self.ad.server.steps
        finally:
            if self.thaw:
                gc.unfreeze()


class EagerEngineMachine(EngineMachine):
    """The same, under PyTorch's policy: nothing is ever left abandoned."""

    policy = "eager"

    @invariant()
    def nothing_abandoned(self):
        assert all(n.status is not NodeStatus.ABANDONED for n in self.ad.snapshot().nodes)


EngineMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
EagerEngineMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestEngineMachine = EngineMachine.TestCase
TestEagerEngineMachine = EagerEngineMachine.TestCase


def test_live_buffer_helper_sees_a_tensor():
    ad = Device.numpy().autodiff()
    t = Tensor.from_floats(np.ones(4), ad)
    assert live_buffer_bytes(ad.backend.pool) == (16, 1)
    del t
