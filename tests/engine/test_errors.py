"""Bad input: a typed error with a plain sentence, and the server left consistent."""

import gc

import pytest

from autodiff import (
    AutodiffError,
    Device,
    DeviceMismatchError,
    DTypeError,
    NonFiniteError,
    NonLeafRequireGradError,
    ShapeMismatchError,
    Tensor,
    UnsupportedOperationError,
    UntrackedBackwardError,
)


@pytest.fixture
def ad():
    return Device.numpy().autodiff()


def state(ad):
    snap = ad.snapshot()
    return snap.nodes, snap.pending_steps, snap.memory


def next_node_id(ad):
    return Tensor.zeros([1], ad).node_id  # a constant: forgotten, and its memory released, once dropped


def ones(*shape, dtype="float32"):
    return lambda ad: Tensor.ones(list(shape), ad, dtype=dtype)


# name: (error, words the message must contain, operand made before the check, the failing action)
CASES = {
    "broadcast": (ShapeMismatchError, "do not match", ones(3), lambda ad, x, o: x + o),
    "matmul_inner": (ShapeMismatchError, "must equal", ones(2, 3), lambda ad, x, o: o @ o),
    "matmul_rank": (ShapeMismatchError, "rank 2", None, lambda ad, x, o: x.matmul(x)),
    "reshape": (ShapeMismatchError, "Cannot reshape", None, lambda ad, x, o: x.reshape([3])),
    "dim": (ShapeMismatchError, "does not exist", None, lambda ad, x, o: x.sum_dim(2)),
    "ragged": (ShapeMismatchError, "ragged", None, lambda ad, x, o: Tensor.from_floats([[1.0], [1.0, 2.0]], ad)),
    "strings": (DTypeError, "needs numbers", None, lambda ad, x, o: Tensor.from_floats(["a", "b"], ad)),
    "dtype_name": (DTypeError, "float64", None, lambda ad, x, o: Tensor.zeros([2], ad, dtype="int8")),
    "mixed_dtypes": (DTypeError, "same dtype", ones(2, dtype="float64"), lambda ad, x, o: x * o),
    "nan": (NonFiniteError, "NaN", None, lambda ad, x, o: Tensor.from_floats([1.0, float("nan")], ad)),
    "inf_scalar": (NonFiniteError, "not finite", None, lambda ad, x, o: x * float("inf")),
    "div_zero": (NonFiniteError, "non-zero", None, lambda ad, x, o: x / 0),
    "untracked_backward": (UntrackedBackwardError, "require_grad()", ones(2), lambda ad, x, o: o.backward()),
    "inner_backward": (
        UntrackedBackwardError,
        "autodiff device",
        None,
        lambda ad, x, o: x.without_autodiff().backward(),
    ),
    "non_leaf": (NonLeafRequireGradError, "non leaf", None, lambda ad, x, o: o.require_grad()),
    "devices": (DeviceMismatchError, "different devices", None, lambda ad, x, o: x + o),
    "inner_mix": (DeviceMismatchError, "different devices", None, lambda ad, x, o: x + x.without_autodiff()),
    "operand": (UnsupportedOperationError, "type str", None, lambda ad, x, o: x * "2"),
    "tensor_exponent": (UnsupportedOperationError, "number", None, lambda ad, x, o: x**x),
    "bad_shape": (ShapeMismatchError, "positive sizes", None, lambda ad, x, o: Tensor.ones([2, 0], ad)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_raises_typed_error_and_leaves_server_consistent(ad, name):
    error, words, make_operand, action = CASES[name]
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    operand = make_operand(ad) if make_operand else None
    if name == "devices":
        operand = Tensor.ones([2], Device.numpy().autodiff())
    if name == "non_leaf":
        operand = x * 2.0
    before, probe = state(ad), next_node_id(ad)
    with pytest.raises(error) as raised:
        action(ad, x, operand)
    assert isinstance(raised.value, AutodiffError)
    assert words in str(raised.value)
    assert str(raised.value).endswith(".") and len(str(raised.value).split()) >= 8  # a sentence, not a code
    after = state(ad)
    assert after[1:] == before[1:]  # no step, no memory leaked by the failed op
    assert next_node_id(ad) == probe + 1  # and no node id taken
    assert x.grad((x * x).sum().backward()).tolist() == [2.0, 4.0]  # still usable


def test_a_memory_budget_refuses_an_allocation_past_its_limit_and_counts_exactly():
    from autodiff import MemoryBudget, MemoryBudgetError, memory_budget

    budget = MemoryBudget(limit=3 * 2**20)
    with memory_budget(budget):
        ad = Device.numpy().autodiff()  # created inside: counted against the budget for its whole life
    outside = Device.numpy().autodiff()
    x = Tensor.ones([512, 512], ad).require_grad()  # 1 MiB
    y = x * 2.0  # 2 MiB
    assert budget.used == 2 * 2**20
    z = y * y  # the third MiB
    with pytest.raises(MemoryBudgetError, match="past 3 MiB"):
        z * y  # a fourth would pass the limit: refused before it is counted
    assert budget.used == ad.memory_usage().bytes_in_use == 3 * 2**20
    big = Tensor.ones([1024, 1024], outside)  # another device: not in this budget
    assert budget.used == 3 * 2**20 and big.shape == (1024, 1024)
    del x, y, z
    gc.collect()
    assert budget.used == ad.memory_usage().bytes_in_use


def test_a_budget_with_a_parent_counts_every_byte_in_both_and_says_which_one_refused():
    from autodiff import MemoryBudget, MemoryBudgetError, memory_budget

    server = MemoryBudget(limit=3 * 2**20)
    first, second = MemoryBudget(2 * 2**20, parent=server), MemoryBudget(2 * 2**20, parent=server)
    with memory_budget(first):
        a = Device.numpy().autodiff()
    with memory_budget(second):
        b = Device.numpy().autodiff()
    x = Tensor.ones([512, 512], a) * 2.0  # 1 MiB held (the ones it is made from are freed at once)
    y = Tensor.ones([512, 512], b)
    z = y * 2.0
    assert server.used == first.used + second.used == a.memory_usage().bytes_in_use + b.memory_usage().bytes_in_use
    with pytest.raises(MemoryBudgetError, match="in use by other sessions"):
        x * 3.0  # within its own 2 MiB, past the server's 3 MiB
    assert server.used == first.used + second.used  # the refused one counted nowhere
    del y, z
    gc.collect()
    assert second.used == 0 and server.used == first.used
    w = x * 3.0  # room again
    assert server.used == first.used == a.memory_usage().bytes_in_use and w.shape == (512, 512)
