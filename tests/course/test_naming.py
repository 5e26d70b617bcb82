"""Names students use: the variable a node was assigned to, else its expression in the program's own terms."""

from autodiff import Device, Tensor
from autodiff.stage.naming import expressions, labels, node_names
from course.programs import PROGRAMS, record_program


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
    made = {
        "a·(b @ c)": a * (b @ c),
        "(a·b) @ c": (a * b) @ c,
        "a − (b − c)": a - (b - c),
        "a − b − c": a - b - c,
        "a + b + c": a + (b + c),
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
