"""One-input elementwise ops. As Burn's (burn-autodiff `ops/tensor.rs`), each saves its input and recomputes
what its rule needs from it: exp(x) is computed again in backward, not kept."""

from __future__ import annotations

import math
from operator import methodcaller

from ..backends.base import Buffer
from ..graph import Op, Rule, per_constant
from .base import unary

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _squared(x: Buffer) -> Buffer:
    return x * x


def _tanh_rule(g: Buffer, s: dict[str, Buffer]) -> Buffer:
    y = s["x"].tanh()
    return g * (1.0 - y * y)


def _sigmoid_rule(g: Buffer, s: dict[str, Buffer]) -> Buffer:
    y = s["x"].sigmoid()
    return g * y * (1.0 - y)


EXP = unary("exp", methodcaller("exp"), "grad * exp(x)", lambda g, s: g.times("exp", s["x"]))
LOG = unary("log", methodcaller("log"), "grad / x", lambda g, s: g / s["x"])
SQRT = unary("sqrt", methodcaller("sqrt"), "grad / (2 * sqrt(x))", lambda g, s: g / (s["x"].sqrt() * 2.0))
SIN = unary("sin", methodcaller("sin"), "grad * cos(x)", lambda g, s: g.times("cos", s["x"]))
COS = unary("cos", methodcaller("cos"), "-grad * sin(x)", lambda g, s: -g.times("sin", s["x"]))
TANH = unary("tanh", methodcaller("tanh"), "grad * (1 - tanh(x)²)", _tanh_rule)
SIGMOID = unary("sigmoid", methodcaller("sigmoid"), "grad * σ(x) * (1 - σ(x))", _sigmoid_rule)
RELU = unary("relu", methodcaller("relu"), "grad * (x > 0)", lambda g, s: g * (s["x"] > 0.0))
ABS = unary("abs", methodcaller("abs"), "grad * sign(x)", lambda g, s: g * s["x"].sign())
SIGN = Op("sign", methodcaller("sign"), (Rule("0 (sign is flat)", lambda g, s: g * 0.0),))
RECIP = unary("recip", lambda x: 1.0 / x, "-grad / x²", lambda g, s: -g / (s["x"] * s["x"]))
TAN = unary(
    "tan",
    lambda x: x.transcendental("tan"),
    "grad * (1 + tan(x)²)",
    lambda g, s: g * (_squared(s["x"].transcendental("tan")) + 1.0),
)
SINH = unary("sinh", lambda x: x.transcendental("sinh"), "grad * cosh(x)", lambda g, s: g.times("cosh", s["x"]))
COSH = unary("cosh", lambda x: x.transcendental("cosh"), "grad * sinh(x)", lambda g, s: g.times("sinh", s["x"]))
ASIN = unary(
    "asin",
    lambda x: x.transcendental("arcsin"),
    "grad / sqrt(1 - x²)",
    lambda g, s: g / (1.0 - _squared(s["x"])).sqrt(),
)
ACOS = unary(
    "acos",
    lambda x: x.transcendental("arccos"),
    "-grad / sqrt(1 - x²)",
    lambda g, s: -g / (1.0 - _squared(s["x"])).sqrt(),
)
ATAN = unary("atan", lambda x: x.transcendental("arctan"), "grad / (1 + x²)", lambda g, s: g / (_squared(s["x"]) + 1.0))
ERF = unary(
    "erf",
    lambda x: x.transcendental("erf"),
    "grad * 2/√π * exp(-x²)",
    lambda g, s: g * ((-_squared(s["x"])).exp() * _TWO_OVER_SQRT_PI),
)
LOG1P = unary("log1p", lambda x: x.transcendental("log1p"), "grad / (1 + x)", lambda g, s: g / (s["x"] + 1.0))


@per_constant
def clamp(low: float | None, high: float | None) -> Op:
    name = "clamp" if low is not None and high is not None else "clamp_min" if low is not None else "clamp_max"
    bounds = ", ".join(f"{b:g}" for b in (low, high) if b is not None)
    return unary(
        f"{name}({bounds})",
        lambda x: x.clamp(low, high),
        "grad where x is inside the bounds",
        lambda g, s: g * s["x"].inside(low, high),
    )
