"""The Playground's loops and `def` functions: what made each node (its group path), the functions' rules and
refusals, the plain messages for Python it does not run, and the two examples that show them."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from playground.examples import EXAMPLES
from playground.sandbox import run_program

LOOP = "Per-sample loop (30 samples)"
MLP = "Three-layer MLP, one function per layer"


def paths(result, op: str | None = None) -> list[list[tuple[str, str]]]:
    nodes = result.backward.before.nodes if result.backward else result.snapshot.nodes
    return [[(g.kind, g.name) for g in n.group] for n in nodes if op is None or n.op == op]


def test_the_loops_nodes_carry_its_loop_and_iteration():
    result = run_program(EXAMPLES[LOOP])
    assert result.error is None
    nodes = result.backward.before.nodes
    tanhs = [n for n in nodes if n.op == "tanh"]
    assert len(tanhs) == 31
    assert tanhs[0].group == ()  # before the loop
    assert [[(g.kind, g.name) for g in n.group] for n in tanhs[1:]] == [
        [("loop", "for i in range(30)"), ("iteration", f"i = {i}")] for i in range(30)
    ]
    assert len({n.group[0].key for n in tanhs[1:]}) == 1  # one loop
    assert len({n.group[1].key for n in tanhs[1:]}) == 30  # thirty iterations
    # a sample's input is made in its iteration too
    leaves = [n for n in nodes if n.op == "from_floats"]
    assert [(g.kind, g.name) for g in leaves[-1].group] == [("loop", "for i in range(30)"), ("iteration", "i = 29")]


def test_two_entries_of_one_loop_differ():
    source = "x = Tensor.ones([1], ad)\nfor j in range(2):\n    for i in range(2):\n        x = x * 2.0\n"
    result = run_program(source)
    groups = [n.group for n in result.snapshot.nodes if n.op == "mul_scalar(2)"]
    assert [[g.name for g in group] for group in groups] == [
        ["for j in range(2)", f"j = {j}", "for i in range(2)", f"i = {i}"] for j in range(2) for i in range(2)
    ]
    assert len({group[2].key for group in groups}) == 2  # the inner loop, entered twice
    assert len({group[3].key for group in groups}) == 4


def test_a_functions_nodes_carry_its_frame():
    result = run_program(EXAMPLES[MLP])
    assert result.error is None
    nodes = result.backward.before.nodes
    by_layer = {n.group[0].name for n in nodes if n.group}
    assert by_layer == {"layer1", "layer2", "layer3"}
    assert [[(g.kind, g.name) for g in n.group] for n in nodes if n.op == "tanh"] == [
        [("function", "layer1")],
        [("function", "layer2")],
    ]
    assert all(n.group == () for n in nodes if n.op in ("from_floats", "random", "zeros"))  # made at the top


def test_a_function_called_in_a_loop():
    source = (
        "w = Tensor.ones([1], ad).require_grad()\n"
        "def step(x):\n    y = x * w\n    return y.exp()\n"
        "x = w\nfor i in range(2):\n    x = step(step(x))\n"
    )
    result = run_program(source)
    assert result.error is None
    groups = [n.group for n in result.snapshot.nodes if n.op == "exp"]
    assert [[g.name for g in group] for group in groups] == [
        ["for i in range(2)", f"i = {i}", "step"] for i in (0, 0, 1, 1)
    ]
    assert len({group[2].key for group in groups}) == 4  # four calls
    muls = [n.group for n in result.snapshot.nodes if n.op == "mul"]
    assert [group[2].key for group in muls] == [group[2].key for group in groups]


def test_def_return_and_local_variables():
    source = (
        "k = 3.0\n"
        "def scaled(a, b):\n    s = a * k\n    return s + b\n"
        "def nothing(a):\n    t = a\n"
        "def early(a):\n    return\n"
        "print(scaled(1.0, 2.0), nothing(1.0), early(1.0))\n"
        "s = 7\nprint(s)\n"
    )
    result = run_program(source)
    assert result.error is None, result.error
    assert result.output == ["5.0 None None", "7"]
    leaked = run_program("def f(a):\n    kept = a\n    return a\ny = f(1)\nprint(kept)\n")
    assert "`kept` is not defined" in leaked.error.message


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("def f(x):\n    return f(x)\ny = f(1)", "Function calls nest more than 40 levels deep"),
        ("def f(x=1):\n    return x", "Default values for parameters are not supported"),
        ("def f(*, x):\n    return x", "Only plain parameters are supported"),
        ("def f(**kw):\n    return 1", "Only plain parameters are supported"),
        ("@print\ndef f(x):\n    return x", "Decorators (`@...`) are not supported"),
        ("def f(x):\n    def g(y):\n        return y\n    return g(x)\nf(1)", "Define functions at the top level"),
        ("for i in range(2):\n    def g(y):\n        return y", "Define functions at the top level"),
        ("def Tensor(x):\n    return x", "`Tensor` is a reserved name"),
        ("def print(x):\n    return x", "`print` is a reserved name"),
        ("def f(ad):\n    return ad", "`ad` is a reserved name"),
        ("def f(a, b):\n    return a\nf(1)", "`f` takes 2 arguments (a, b); this call passes 1"),
        ("def f(a):\n    return a\nf(a=1)", "Keyword arguments are not supported"),
        ("return 1", "`return` works only inside a function"),
        ("def f(a):\n    return a\ny = f + 1", "not on the function f"),
    ],
)
def test_functions_are_refused_with_a_sentence(source, words):
    result = run_program(source)
    assert result.error is not None and words in result.error.message, result.error
    assert not result.error.internal


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("x = Tensor.ones([2], ad)\ny = x[0]", "Indexing (`x[0]`) is not supported"),
        ("i = 0\nwhile i < 3:\n    i = i + 1", "`while` loops are not supported; use `for … in range(n)`"),
        ("x = 1\nif x:\n    x = 2", "Decisions (`if`, `match`) are not supported"),
        ("f = lambda x: x", "`lambda` is not supported; define a function with `def"),
        ("xs = [i for i in range(3)]", "Comprehensions"),
        ("d = {1: 2}", "Dictionaries and sets are not supported"),
        ("x = 1 < 2", "Comparisons"),
        ('print(f"{1}")', "f-strings are not supported"),
        ("class A:\n    pass", "Classes are not supported"),
        ("for i in range(3):\n    break", "`break` and `continue` are not supported"),
    ],
)
def test_unsupported_python_is_named_in_words(source, words):
    result = run_program(source)
    assert result.error is not None and words in result.error.message, result.error
    for parser_name in ("Subscript", "While", "Lambda", "ListComp", "Dict", "Compare", "JoinedStr", "ClassDef"):
        assert f"`{parser_name}`" not in result.error.message


def printed(result, prefix: str) -> np.ndarray:
    line = next(line for line in result.output if line.startswith(prefix))
    return np.array(ast.literal_eval(line.removeprefix(prefix).strip().removeprefix("Tensor(").removesuffix(")")))


def leaf(result, name: str) -> np.ndarray:
    before = result.backward.before
    node_id = next(i for i, n in result.backward.names.items() if n == name)
    return np.asarray(before.node(node_id).value, dtype=np.float64)


def finite_difference(loss, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(w)
    for index in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[index] += eps
        down[index] -= eps
        grad[index] = (loss(up) - loss(down)) / (2 * eps)
    return grad


def test_the_per_sample_loop_matches_finite_differences():
    result = run_program(EXAMPLES[LOOP])
    assert result.error is None
    w1, w2 = leaf(result, "w1"), leaf(result, "w2")
    samples = [np.array([[2.0, 3.0]])] + [np.array([[0.5 * i, 1.0 - i]]) for i in range(30)]

    def loss(w: np.ndarray) -> float:
        return sum(float(((np.tanh(x @ w) @ w2 - 1.0) ** 2).sum()) for x in samples)

    expected = finite_difference(loss, w1)
    np.testing.assert_allclose(printed(result, "w1.grad"), expected, rtol=1e-3, atol=1e-3)


def test_the_three_layer_mlp_matches_finite_differences():
    result = run_program(EXAMPLES[MLP])
    assert result.error is None
    w = {name: leaf(result, name) for name in ("w1", "b1", "w2", "b2", "w3", "b3")}
    x = np.array([[0.5, -1.0], [1.0, 2.0], [-0.5, 0.25]])
    target = np.array([[1.0], [0.0], [0.5]])

    def loss(w1: np.ndarray) -> float:
        h = np.tanh(x @ w1 + w["b1"])
        h = np.tanh(h @ w["w2"] + w["b2"])
        return float((((h @ w["w3"] + w["b3"]) - target) ** 2).mean())

    expected = finite_difference(loss, w["w1"])
    np.testing.assert_allclose(printed(result, "w1.grad"), expected, rtol=1e-3, atol=1e-4)
