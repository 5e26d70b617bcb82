"""What made each node (`NodeSnapshot.group`): loops and iterations, the user's functions, `autodiff.scope`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autodiff
from autodiff import Device, GroupFrame, Tensor
from autodiff.structure import program_files


def device() -> Device:
    return Device.numpy().autodiff(keep_values=True)


def names(group: tuple[GroupFrame, ...]) -> list[tuple[str, str]]:
    return [(g.kind, g.name) for g in group]


def made(ad: Device, op: str) -> list[tuple[GroupFrame, ...]]:
    """The paths of the nodes `op` made, below the test function's own frame (which each starts with)."""
    groups = [n.group for n in ad.snapshot().nodes if n.op == op]
    assert all(g[0].kind == "function" and g[0].name.startswith("test_") for g in groups)
    return [g[1:] for g in groups]


def test_a_loop_names_each_iteration() -> None:
    ad = device()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    total = x.sum()
    for i in range(3):  # noqa: B007 (the loop variable is what is tested)
        total = total + (x * 2.0).sum()
    groups = made(ad, "mul_scalar(2)")
    assert [names(g) for g in groups] == [[("loop", "for i in range(3)"), ("iteration", f"i = {i}")] for i in range(3)]
    assert len({g[0].key for g in groups}) == 1  # one loop
    assert len({g[1].key for g in groups}) == 3  # three iterations
    # every node of an iteration has that iteration's frame: the mul, its sum and the add
    adds = made(ad, "add")
    assert [g[1] for g in adds] == [g[1] for g in groups]
    assert names(ad.snapshot().nodes[0].group) == [("function", "test_a_loop_names_each_iteration")]  # x
    del total


def test_nested_loops() -> None:
    ad = device()
    x = Tensor.from_floats([1.0], ad)
    for i in range(2):  # noqa: B007 (the loop variable is what is tested)
        for j in range(2):  # noqa: B007 (the loop variable is what is tested)
            x = x * 2.0
    groups = made(ad, "mul_scalar(2)")
    assert [names(g) for g in groups] == [
        [
            ("loop", "for i in range(2)"),
            ("iteration", f"i = {i}"),
            ("loop", "for j in range(2)"),
            ("iteration", f"j = {j}"),
        ]
        for i in range(2)
        for j in range(2)
    ]
    # the inner loop is entered twice: two loops, four iterations
    assert len({g[2].key for g in groups}) == 2
    assert len({g[3].key for g in groups}) == 4


def layer(x: Tensor, w: Tensor) -> Tensor:
    return (x * w).tanh()


def test_a_function_called_twice_in_a_loop() -> None:
    ad = device()
    w = Tensor.from_floats([0.5, 0.5], ad).require_grad()
    x = Tensor.from_floats([1.0, 2.0], ad)
    for step in range(2):  # noqa: B007 (the loop variable is what is tested)
        x = layer(layer(x, w), w)
    groups = made(ad, "tanh")
    assert [names(g) for g in groups] == [
        [("loop", "for step in range(2)"), ("iteration", f"step = {s}"), ("function", "layer")] for s in (0, 0, 1, 1)
    ]
    assert len({g[2].key for g in groups}) == 4  # two call sites, two iterations: four calls
    muls = made(ad, "mul")
    assert [g[2].key for g in muls] == [g[2].key for g in groups]  # the mul and the tanh of one call share it


def test_nested_functions_and_a_lambda() -> None:
    ad = device()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()

    def outer(t: Tensor) -> Tensor:
        def inner(u: Tensor) -> Tensor:
            return u.exp()

        double = lambda u: u * 2.0  # noqa: E731
        return double(inner(t))

    outer(x)
    assert names(made(ad, "exp")[0]) == [("function", "outer"), ("function", "inner")]
    assert names(made(ad, "mul_scalar(2)")[0]) == [("function", "outer"), ("function", "lambda")]
    assert made(ad, "exp")[0][0] == made(ad, "mul_scalar(2)")[0][0]  # one call of outer


def test_scope_nests_and_sits_inside_a_function() -> None:
    ad = device()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()

    def block(t: Tensor) -> Tensor:
        with autodiff.scope("inside"):
            return t.exp()

    with autodiff.scope("model"):
        with autodiff.scope("layer 1"):
            h = x * 2.0
        with autodiff.scope("layer 1"):
            h = h * 3.0
        y = block(h)
    assert names(made(ad, "mul_scalar(2)")[0]) == [("scope", "model"), ("scope", "layer 1")]
    assert names(made(ad, "mul_scalar(3)")[0]) == [("scope", "model"), ("scope", "layer 1")]
    assert made(ad, "mul_scalar(2)")[0][0] == made(ad, "mul_scalar(3)")[0][0]  # one `model` block
    assert made(ad, "mul_scalar(2)")[0][1] != made(ad, "mul_scalar(3)")[0][1]  # two `layer 1` blocks
    assert names(made(ad, "exp")[0]) == [("scope", "model"), ("function", "block"), ("scope", "inside")]
    del y


def test_a_scope_around_a_loop_and_inside_one() -> None:
    ad = device()
    x = Tensor.from_floats([1.0], ad)
    with autodiff.scope("train"):
        for i in range(2):  # noqa: B007 (the loop variable is what is tested)
            with autodiff.scope("step"):
                x = x * 2.0
    assert [names(g) for g in made(ad, "mul_scalar(2)")] == [
        [("scope", "train"), ("loop", "for i in range(2)"), ("iteration", f"i = {i}"), ("scope", "step")]
        for i in range(2)
    ]


def test_a_loop_over_pairs_or_tensors_counts_its_iterations() -> None:
    ad = device()
    tensors = [Tensor.from_floats([float(k)], ad) for k in range(3)]
    for t in tensors:
        t.exp()
    for a, b in zip(tensors, tensors[1:], strict=False):
        a + b
    exps = made(ad, "exp")
    assert [g[-1].name for g in exps] == ["iteration 1", "iteration 2", "iteration 3"]
    assert exps[0][-2].name == "for t in tensors"
    adds = made(ad, "add")
    assert [g[-1].name for g in adds] == ["iteration 1", "iteration 2"]
    assert adds[0][-2].name == "for a, b in zip(tensors, tensors[1:], strict=False)"


def test_leaves_made_in_a_loop_have_the_loop_path() -> None:
    ad = device()
    for i in range(2):  # noqa: B007 (the loop variable is what is tested)
        Tensor.from_floats([1.0, 2.0], ad).require_grad().sum()
    assert [names(g)[-1] for g in made(ad, "from_floats")] == [("iteration", "i = 0"), ("iteration", "i = 1")]


def test_nothing_is_recorded_without_keep_values() -> None:
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0], ad).require_grad()
    with autodiff.scope("s"):
        for _ in range(2):
            x = layer(x, x)
    assert all(n.group == () for n in ad.snapshot().nodes)


def test_a_while_loop_and_explicit_frames() -> None:
    ad = device()
    x = Tensor.from_floats([1.0], ad)
    n = 0
    while n < 2:
        x = x * 2.0
        x = x + 1.0
        n += 1
    groups = made(ad, "mul_scalar(2)")
    # a `while` has no loop variable: an iteration starts when the running line goes back
    assert [names(g) for g in groups] == [[("loop", "while n < 2"), ("iteration", f"iteration {k}")] for k in (1, 2)]
    assert [g[1] for g in made(ad, "add_scalar(1)")] == [g[1] for g in groups]
    program = "def step(v):\n    return v.exp()\n"
    namespace: dict[str, Any] = {}
    exec(compile(program, "<program 1>", "exec"), namespace)
    with program_files("<program "):  # an interpreter's program: its own function, not this test's
        y = namespace["step"](x)
    exp = next(n for n in ad.snapshot().nodes if n.op == "exp")
    assert names(exp.group) == [("function", "step")]
    del y


def harness(build: Callable[[], Tensor]) -> Tensor:
    __autodiff_hidden__ = True  # noqa: F841 (what is tested)
    return build()


def test_a_function_that_hides_itself_is_not_shown() -> None:
    ad = device()
    x = Tensor.from_floats([1.0], ad)
    harness(lambda: layer(x, x))
    assert names(made(ad, "tanh")[0]) == [("function", "lambda"), ("function", "layer")]


class Neuron:
    def __init__(self, ad: Device, w: float) -> None:
        self.w = Tensor.from_floats([w], ad).require_grad()

    def __call__(self, x: Tensor) -> Tensor:
        return (self.w * x).tanh()

    def scaled(self, x: Tensor) -> Tensor:
        return self.w * x * 2.0


def test_a_method_is_named_by_its_object_and_calls_from_one_comprehension_are_separate_boxes():
    ad = device()
    neurons = [Neuron(ad, w) for w in (0.5, -0.5, 1.5)]
    x = Tensor.from_floats([1.0], ad)
    outs = [n(x) for n in neurons]
    doubled = neurons[1].scaled(x)
    leaves = made(ad, "from_floats")[:3]
    assert [names(g) for g in leaves] == [[("function", f"making Neuron {k}")] for k in (1, 2, 3)]
    calls = made(ad, "tanh")
    assert [names(g) for g in calls] == [[("function", f"Neuron {k}")] for k in (1, 2, 3)]
    assert len({g[0].key for g in calls}) == 3  # three calls, three boxes (a comprehension is not a box)
    assert names(made(ad, "mul_scalar(2)")[0]) == [("function", "Neuron 2.scaled")]
    del outs, doubled
