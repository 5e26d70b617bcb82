"""Names students use: the variable a node was assigned to, else its expression in the program's own terms."""

import re

import pytest

from autodiff import Device, Tensor
from autodiff.stage.naming import constants_first, expressions, labels, node_names
from course.programs import PROGRAMS, record_program
from playground.examples import EXAMPLES
from playground.sandbox import run_program


def test_each_lesson_program_reads_as_its_source():
    expected = {
        "seed": {"x", "unused", "h = x·x", "x·3", "h + x·3", "loss = sum(h + x·3)"},
        "neuron": {"w", "x", "b", "w @ x", "w @ x + b", "out = tanh(w @ x + b)", "loss = sum(out)"},
        "mlp": {
            "hidden = relu(batch @ w1 + b1)",
            "pred = hidden @ w2",
            "(pred − target)²",
            "loss = mean((pred − target)²)",
        },
    }
    for key, titles in expected.items():
        run = record_program(key)
        assert titles <= set(labels(run.before.nodes, run.names).values()), key
    assert set(PROGRAMS) >= set(expected)


def test_brackets_follow_python_precedence():
    ad = Device.numpy().autodiff()
    a, b, c = (Tensor.from_floats([[1.0]], ad).require_grad() for _ in range(3))
    names = node_names({"a": a, "b": b, "c": c})
    minus_a = -a
    made = {
        "a·(b @ c)": a * (b @ c),
        "(a·b) @ c": (a * b) @ c,
        "a − (b − c)": a - (b - c),
        "a − b − c": a - b - c,
        "a + (b + c)": a + (b + c),  # as Python made it: never flattened into `a + b + c`
        "a + b + c": (a + b) + c,
        "a·(b·c)": a * (b * c),
        "b + (−a)": b + (-a),
        "−a + b": -a + b,
        "b·(−a)": b * (-a),
        "(−a)²": (-a) ** 2,
        "−(−a)": -minus_a,
        "a / (b·c)": a / (b * c),
        "−(a + b)": -(a + b),
        "(a + b)²": (a + b) ** 2,
        "2 − a": 2.0 - a,
        "exp(a)ᵀ": a.exp().transpose(),
    }
    found = expressions(ad.snapshot().nodes, names)
    for text, tensor in made.items():
        assert found[int(tensor.node_id)] == text


def test_long_operands_are_elided_never_written_by_an_id():
    ad = Device.numpy().autodiff()
    y = x = Tensor.from_floats([1.0], ad).require_grad()
    for _ in range(4):
        y = (y * 0.5).tanh() * y
    found = expressions(ad.snapshot().nodes, node_names({"x": x}))
    last = found[int(y.node_id)]
    assert last == "tanh(…·0.5)·…" and all("#" not in text and len(text) <= 32 for text in found.values())


def test_python_indexing_reads_as_written():
    ad = Device.numpy().autodiff()
    w = Tensor.from_floats([2.0, -3.0, -3.0], ad).require_grad()
    x = Tensor.from_floats([[-1.0, -2.0], [1.0, 2.0]], ad).require_grad()
    h = w[0]
    names = node_names({"w": w, "x": x, "h": h})
    made = {
        "w[1]": w[1],
        "w[-1]": w[-1],
        "x[:, 0]": x[:, 0],
        "x[..., -1]": x[..., -1],
        "w[1:3]": w[1:3],
        "(w[:2] + x)[0]": (w[:2] + x)[0],
        "(x·3)[1, 0]": (x * 3.0)[1, 0],
        "sum(w)[0]": w.sum()[0],
    }
    nodes = ad.snapshot().nodes
    found = expressions(nodes, names)
    for text, tensor in made.items():
        assert found[int(tensor.node_id)] == text
    titles = labels(nodes, names)
    assert titles[int(h.node_id)] == "h = w[0]"
    assert titles[int(made["w[1]"].node_id)] == "w[1]"  # unnamed: its expression


def playground_labels(source: str) -> dict[int, str]:
    result = run_program(source)
    assert result.error is None, result.error
    nodes = result.backward.before.nodes if result.backward else result.snapshot.nodes
    names = result.backward.names if result.backward else {}
    return labels(nodes, names, constants_first(nodes, source, result.lines))


def test_micrograds_statements_read_as_written():
    """micrograd's README example: `c += 1 + c + (-a)` reads `c = c + (1 + c + (−a))`, as Python made it (never
    `c + c + 1 + −a`), and `3 * d` reads `3·d`; `c += c + 1` keeps its `c + 1`."""
    titles = set(playground_labels(EXAMPLES["micrograd's README example"]).values())
    assert {
        "c = a + b",
        "d = a·b + b³",
        "c = c + (c + 1)",
        "1 + c",
        "1 + c + (−a)",
        "c = c + (1 + c + (−a))",
        "d = d + (d·2 + relu(b + a))",
        "3·d",
        "d = d + (3·d + relu(b − a))",
        "g = g + 10 / f",
    } <= titles, titles
    assert "c + c + 1 + −a" not in {t.partition(" = ")[2] for t in titles}


@pytest.mark.parametrize(
    "example", ["micrograd's README example", "micrograd's MLP, with classes", "CS231n's neuron, with w[0]"]
)
def test_no_name_in_the_playgrounds_own_programs_is_an_id(example):
    titles = playground_labels(EXAMPLES[example]).values()
    assert titles and not [t for t in titles if "#" in t or "NodeId" in t], titles


def test_a_constant_stays_where_each_pass_of_a_loop_wrote_it():
    source = (
        "x = Tensor.from_floats([1.0], ad).require_grad()\n"
        "y = x\n"
        "for i in range(3):\n"
        "    y = 2.0 * y + 1.0 + (y * 2.0)\n"
        "z = -1 * (x + 1) + x * -1\n"
        "grads = (y + z).sum().backward()\n"
    )
    titles = list(playground_labels(source).values())
    assert [t for t in titles if re.fullmatch(r"2·\w|\w·2", t)] == ["2·x", "x·2", "2·y", "y·2", "2·y", "y·2"]
    assert titles.count("2·y + 1") == 2
    assert "-1·(x + 1)" in titles and "x·-1" in titles
