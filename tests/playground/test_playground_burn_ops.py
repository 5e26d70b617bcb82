"""Burn's ops in the Playground: whitelisted ones run; ones that could grow a tensor past the limit do not."""

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


@pytest.mark.parametrize("call", ["x.expand([1000, 2])", "x.repeat_dim(0, 1000)"])
def test_ops_that_grow_a_tensor_are_not_available(call):
    result = run_program(f"x = Tensor.from_floats([1.0, 2.0], ad)\ny = {call}\n")
    assert result.error is not None and "has no method" in result.error.message
