"""Burn's ops in the Playground: they run and differentiate; one that grows a tensor past the limit is stopped."""

from __future__ import annotations

import pytest

from playground import run_program


def test_whitelisted_burn_ops_run_and_differentiate():
    result = run_program(
        "x = Tensor.from_floats([[1.0, -2.0], [3.0, 4.0]], ad).require_grad()\n"
        "y = x.abs().clamp(0.0, 3.0).max_dim(1).sum() + x.slice([(0, 1)]).prod()"
        " + x.permute([1, 0]).cumsum(0).sum()\n"
        "print(x.grad(y.backward()))\n"
    )
    assert result.error is None
    # by hand: max_dim picks |-2| and the first 3 (clamped); the slice's product; each x^T row cumsummed
    assert result.output == ["Tensor([[0.0, 1.0], [3.0, 1.0]])"]


@pytest.mark.parametrize("call", ["x.expand([600000, 2])", "x.repeat_dim(0, 600000)"])
def test_ops_that_grow_a_tensor_are_stopped_at_the_element_limit(call):
    result = run_program(f"x = Tensor.from_floats([[1.0, 2.0]], ad)\ny = {call}\n")
    assert result.error is not None and result.error.line == 2
    assert "has 1,200,000 values; the limit is 1,048,576" in result.error.message


def test_conv_and_pools_run_and_differentiate():
    result = run_program(
        "x = Tensor.from_floats([[[[1.0, 2.0], [3.0, 4.0]]]], ad).require_grad()\n"
        "w = Tensor.from_floats([[[[1.0, 1.0], [1.0, 1.0]]]], ad).require_grad()\n"
        "y = conv2d(x, w, None, ConvOptions([1, 1], [0, 0], [1, 1], 1)).sum()"
        " + max_pool2d(x, [2, 2], [1, 1], [0, 0], [1, 1]).sum() + avg_pool2d(x, [2, 2], [1, 1], [0, 0]).sum()\n"
        "grads = y.backward()\n"
        "print(x.grad(grads))\n"
        "print(w.grad(grads))\n"
    )
    assert result.error is None
    # by hand: the conv sends 1 (the weight) to each x; the max pool 1 to the 4; the average 1/4 to each
    assert result.output == ["Tensor([[[[1.25, 1.25], [1.25, 2.25]]]])", "Tensor([[[[1.0, 2.0], [3.0, 4.0]]]])"]


@pytest.mark.parametrize(
    "call",
    [
        "conv2d(x, Tensor.zeros([1, 1, 3, 3], ad), None, ConvOptions([1, 1], [1, 1], [1, 1], 1))",
        "max_pool2d(x, [3, 3], [1, 1], [1, 1], [1, 1])",
        "avg_pool2d(x, [2, 2], [1, 1], [1, 1])",
    ],
)
def test_conv_and_pools_are_refused_before_their_windows_pass_the_limit(call):
    result = run_program(f"x = Tensor.zeros([1, 1, 1000, 1000], ad)\ny = {call}\n")
    assert result.error is not None and result.error.line == 2
    assert "the limit is 1,048,576" in result.error.message
    assert result.snapshot is not None and {n.op for n in result.snapshot.nodes} == {"zeros"}  # the op never ran


def test_conv_shape_errors_are_the_engines_sentences():
    result = run_program(
        "x = Tensor.zeros([1, 3, 4, 4], ad)\n"
        "y = conv2d(x, Tensor.zeros([2, 2, 3, 3], ad), None, ConvOptions([1, 1], [0, 0], [1, 1], 1))\n"
    )
    assert result.error is not None and result.error.line == 2
    assert "the input has 3 channels" in result.error.message
