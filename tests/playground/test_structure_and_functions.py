"""The Playground's loops and `def` functions: what made each node (its group path), the functions' rules and
errors, the Python students write (each construct the old Playground refused), and the two examples that show them."""

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
    assert "NameError: name 'kept' is not defined" in leaked.error.message


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("def f(x):\n    return f(x)\ny = f(1)", "Functions call each other more than about 200 deep"),
        ("return 1", "'return' outside function"),
        ("def f(a, b):\n    return a\nf(1)", "TypeError: f() missing 1 required positional argument: 'b'"),
        ("def f(a):\n    return a\ny = f + 1", "TypeError: unsupported operand type(s) for +: 'function' and 'int'"),
        ("class A:\n    def __del__(self):\n        pass", 'may not define "__del__"'),
        ("class A:\n    def __getattribute__(self, n):\n        return 1", 'may not define "__getattribute__"'),
    ],
)
def test_what_python_refuses_or_stops_is_said_in_its_words(source, words):
    result = run_program(source)
    assert result.error is not None and words in result.error.message, result.error
    assert not result.error.internal


# Python as students write it: each construct the old Playground refused, with what CPython prints for it
PYTHON = [
    (
        'for i in range(3):\n    print(i, end=" ")\nprint("|", type(1.5) is float, sep="")',
        "0 1 2 |True",
    ),
    (
        "x = Tensor.from_floats([1.0, 2.0, 3.0], ad)\nprint(x[0], x[1:], x[-1].item())",
        "Tensor([1.0]) Tensor([2.0, 3.0]) 3.0",
    ),
    (
        "i = 0\nwhile i < 3:\n    i += 1\n    if i == 2:\n        continue\nprint(i)",
        "3",
    ),
    (
        "x = 1\nif x > 2:\n    x = 2\nelif x > 0:\n    x = 3\nelse:\n    x = 4\nprint(x, 'a' if x else 'b')",
        "3 a",
    ),
    (
        "f = lambda x, k=2: x * k\nprint(f(3), f(3, k=4))",
        "6 12",
    ),
    (
        "xs = [i * i for i in range(4) if i]\nprint(xs, sum(x for x in xs), {i: i + 1 for i in range(2)})",
        "[1, 4, 9] 14 {0: 1, 1: 2}",
    ),
    (
        "d = {'a': 1}\nd['b'] = 2\ns = {1, 2}\ns.add(3)\nprint(sorted(d.items()), len(s), d.get('c', 0))",
        "[('a', 1), ('b', 2)] 3 0",
    ),
    (
        "print(1 < 2 <= 2, 3 in [1, 2], 'x' not in 'abc')",
        "True False True",
    ),
    (
        'g = 2.0 / 3.0\nprint(f"{g:.4f} {g!r} {42:>5}|")',
        "0.6667 0.6666666666666666    42|",
    ),
    (
        "class A:\n"
        "    def __init__(self, v):\n"
        "        self.v = v\n"
        "    def __repr__(self):\n"
        "        return f'A({self.v})'\n"
        "print(A(1))",
        "A(1)",
    ),
    (
        "for i in range(10):\n    if i == 3:\n        break\nprint(i)",
        "3",
    ),
    (
        "a, (b, c) = 1, (2, 3)\nfirst, *rest = [1, 2, 3]\nprint(a + b + c, rest)",
        "6 [2, 3]",
    ),
    (
        "import math\nprint(round(math.sqrt(2.0), 4), math.pi > 3, abs(-2), min(3, 1), max([1, 5]))",
        "1.4142 True 2 1 5",
    ),
    (
        "xs = []\nfor k, v in enumerate(['a', 'b']):\n    xs.append(f'{k}{v}')\nprint(xs, list(zip([1, 2], 'ab')))",
        "['0a', '1b'] [(1, 'a'), (2, 'b')]",
    ),
    (
        "def f(a, *args, scale=1.0, **kw):\n"
        "    return (a + sum(args)) * scale, sorted(kw)\n"
        "print(f(1, 2, 3, scale=2.0, z=1, y=2))",
        "(12.0, ['y', 'z'])",
    ),
    (
        "def counter():\n"
        "    n = 0\n"
        "    def bump():\n"
        "        nonlocal n\n"
        "        n += 1\n"
        "        return n\n"
        "    return bump\n"
        "b = counter()\n"
        "b()\n"
        "print(b())",
        "2",
    ),
    (
        "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\nprint(fact(10))",
        "3628800",
    ),
    (
        "class B:\n"
        "    def __init__(self, x):\n"
        "        self.x = x\n"
        "class C(B):\n"
        "    def __init__(self, x):\n"
        "        super().__init__(x * 2)\n"
        "print(C(2).x, isinstance(C(1), B))",
        "4 True",
    ),
    (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    print('caught', e)",
        "caught division by zero",
    ),
    (
        "x = Tensor.from_floats([2.0], ad)\nprint(isinstance(x, Tensor), float(x.item()), int(3.7), str(1.5))",
        "True 2.0 3 1.5",
    ),
]


@pytest.mark.parametrize(("source", "printed_line"), PYTHON)
def test_python_as_students_write_it_runs_as_cpython_runs_it(source, printed_line):
    result = run_program(source)
    assert result.error is None, result.error
    assert result.output[-1] == printed_line


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
