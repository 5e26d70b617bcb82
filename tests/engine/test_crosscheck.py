"""The cross-check against MLX: agrees on every shipped program, and pinpoints a planted bug."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff import BackwardRecorder, Device, Tensor, module
from autodiff.device import mlx_unavailable_reason
from autodiff.graph import Op, Rule
from autodiff.module import ConvOptions
from autodiff.ops import arithmetic, elementwise
from course.programs import PROGRAMS

if mlx_unavailable_reason():
    pytest.skip(mlx_unavailable_reason(), allow_module_level=True)

from autodiff.crosscheck import cross_check


def check(key: str, backend: str = "numpy"):
    ad = Device.named(backend).autodiff()
    tensors = PROGRAMS[key].build(ad)
    graph = ad.graph_of(tensors["loss"].node_id)
    recorder = BackwardRecorder()
    tensors["loss"].backward(recorder=recorder)
    return tensors, cross_check(graph, recorder)


@pytest.mark.parametrize("backend", ["numpy", "mlx"])
@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_every_shipped_program_agrees_with_mlx_and_finite_differences(key, backend):
    tensors, result = check(key, backend)
    assert result.ok and result.wrong_rules == []
    tracked = [t for name, t in tensors.items() if t.is_tracked and name != "unused"]  # unused: off the graph
    checked = {n.node_id for n in result.nodes}
    assert {t.node_id for t in tracked} <= checked  # every named tracked tensor, intermediates included
    for node in result.nodes:
        if node.numeric is not None:
            np.testing.assert_allclose(node.engine, node.numeric, rtol=1e-3, atol=1e-4)


def test_a_planted_wrong_rule_is_flagged_at_exactly_its_node(monkeypatch):
    # forgets the square: grad * (1 - y)
    wrong_tanh = Op("tanh", lambda x: x.tanh(), (Rule("bug", lambda g, s: g * (1.0 - s["y"]), ("y",)),))
    monkeypatch.setattr(elementwise, "TANH", wrong_tanh)
    tensors, result = check("neuron")
    assert not result.ok
    assert result.wrong_rules == [tensors["out"].node_id]
    bad_end_to_end = {n.node_id for n in result.nodes if not n.ok}
    # end to end, the error reaches everything upstream of tanh, but not tanh itself or the loss
    assert tensors["w"].node_id in bad_end_to_end and tensors["b"].node_id in bad_end_to_end
    assert tensors["out"].node_id not in bad_end_to_end and tensors["loss"].node_id not in bad_end_to_end


def test_a_planted_wrong_mul_rule_is_flagged(monkeypatch):
    wrong_mul = Op(
        "mul",
        lambda a, b: a * b,
        (
            Rule("grad * b", lambda g, s: g * s["b"], ("b",)),
            Rule("grad * b (bug: should be a)", lambda g, s: g * s["b"], ("b",)),
        ),
        ("a", "b"),
    )
    monkeypatch.setattr(arithmetic, "MUL", wrong_mul)
    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    y = Tensor.from_floats([3.0, -1.0], ad).require_grad()
    product = x * y
    loss = product.exp().sum()
    graph = ad.graph_of(loss.node_id)
    recorder = BackwardRecorder()
    loss.backward(recorder=recorder)
    result = cross_check(graph, recorder)
    assert result.wrong_rules == [product.node_id]


@pytest.mark.parametrize("backend", ["numpy", "mlx"])
def test_conv_and_pools_agree_with_mlx_and_finite_differences(backend):
    """Each op's rule against `mx.vjp` of its forward (`autodiff.module`'s windows traced by MLX)."""
    ad = Device.named(backend).autodiff()
    rng = np.random.default_rng(0)
    x, w, b = (Tensor.from_floats(rng.uniform(-1, 1, s), ad).require_grad() for s in ((1, 2, 5, 5), (3, 2, 2, 2), (3,)))
    h = module.conv2d(x, w, b, ConvOptions([1, 1], [1, 1], [1, 1], 1)).tanh()
    loss = (
        module.max_pool2d(h, [2, 2], [2, 2], [0, 0], [1, 1]).sum() + module.avg_pool2d(h, [3, 3], [2, 2], [1, 1]).sum()
    )
    graph = ad.graph_of(loss.node_id)
    recorder = BackwardRecorder()
    loss.backward(recorder=recorder)
    result = cross_check(graph, recorder)
    assert result.ok and result.wrong_rules == []
    assert {x.node_id, w.node_id, b.node_id, h.node_id} <= {n.node_id for n in result.nodes}
