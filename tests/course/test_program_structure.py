"""The lesson programs record what made each node: the three-layer MLP's layers are its functions."""

from __future__ import annotations

import numpy as np

from course.programs import PROGRAMS, record_program


def test_the_three_layer_mlp_is_a_traversal_program_with_a_frame_per_layer():
    program = PROGRAMS["mlp3"]
    assert program.title == "Three-layer MLP (a function per layer)"
    assert [f.__name__ for f in program.helpers] == ["layer1", "layer2", "layer3"]
    run = record_program("mlp3")
    nodes = run.before.nodes
    innermost = {}
    for node in nodes:
        functions = [g.name for g in node.group if g.kind == "function"]
        innermost.setdefault(functions[-1] if functions else None, []).append(node.op)
    assert innermost["layer1"] == ["matmul", "add", "tanh"]
    assert innermost["layer2"] == ["matmul", "add", "tanh"]
    assert innermost["layer3"] == ["matmul", "add"]
    assert "mlp3_program" in innermost  # the leaves and the loss, made in the program itself
    # the harness that runs it (record_program, traced_build, traced_call) hides itself: the program's own functions
    matmul = next(n for n in nodes if n.op == "matmul")
    assert [(g.kind, g.name) for g in matmul.group][-2:] == [("function", "mlp3_program"), ("function", "layer1")]
    assert {g.name for n in nodes for g in n.group} == {
        "test_the_three_layer_mlp_is_a_traversal_program_with_a_frame_per_layer",
        "mlp3_program",
        "layer1",
        "layer2",
        "layer3",
    }
    # each layer's frame is one call: one key for all its nodes
    for layer in ("layer1", "layer2", "layer3"):
        keys = {n.group[-1].key for n in nodes if n.group and n.group[-1].name == layer}
        assert len(keys) == 1


def test_each_layers_nodes_are_lit_on_their_layers_line():
    run = record_program("mlp3")
    lines = run.program.source.splitlines()
    for node in run.before.nodes:
        if node.group and node.group[-1].name.startswith("layer"):
            first, _ = run.lines[int(node.id)]
            assert lines[first - 1].strip().startswith("return "), (node.op, lines[first - 1])


def test_the_three_layer_mlp_matches_numpy():
    run = record_program("mlp3")
    t = {name: np.asarray(tensor.numpy(), dtype=np.float64) for name, tensor in run.tensors.items()}
    h1 = np.tanh(t["batch"] @ t["w1"] + t["b1"])
    h2 = np.tanh(h1 @ t["w2"] + t["b2"])
    pred = h2 @ t["w3"] + t["b3"]
    loss = ((pred - t["target"]) ** 2).mean()
    np.testing.assert_allclose(t["loss"].reshape(()), loss, rtol=1e-5)
    # the gradient of w3, by hand: d loss / d pred = 2 (pred - target) / n
    expected = h2.T @ (2 * (pred - t["target"]) / pred.size)
    np.testing.assert_allclose(run.tensors["w3"].grad(run.grads).numpy(), expected, rtol=1e-4, atol=1e-6)
