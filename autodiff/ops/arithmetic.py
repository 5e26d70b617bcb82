"""+, -, *, / and powers (numpy broadcasting; a broadcast input's gradient is summed back to its shape), and
matmul."""

from __future__ import annotations

import operator

from ..graph import Op, Rule, per_constant

ADD = Op("add", operator.add, (Rule("grad", lambda g, s: g), Rule("grad", lambda g, s: g)), ("a", "b"))
SUB = Op("sub", operator.sub, (Rule("grad", lambda g, s: g), Rule("-grad", lambda g, s: -g)), ("a", "b"))
MUL = Op(
    "mul",
    operator.mul,
    (Rule("grad * b", lambda g, s: g * s["b"], ("b",)), Rule("grad * a", lambda g, s: g * s["a"], ("a",))),
    ("a", "b"),
)
DIV = Op(
    "div",
    operator.truediv,
    (
        Rule("grad / b", lambda g, s: g / s["b"], ("b",)),
        Rule("-grad * a / b²", lambda g, s: -g * s["a"] / (s["b"] * s["b"]), ("a", "b")),
    ),
    ("a", "b"),
)
POWF = Op(
    "powf",
    lambda a, b: a**b,
    (
        Rule("grad * b * a^(b-1)", lambda g, s: g * s["b"] * s["a"] ** (s["b"] - 1.0), ("a", "b")),
        Rule("grad * a^b * ln(a)", lambda g, s: g * s["y"] * s["a"].log(), ("a", "y")),
    ),
    ("a", "b"),
)
NEG = Op("neg", operator.neg, (Rule("-grad", lambda g, s: -g),))
MATMUL = Op(
    "matmul",
    lambda a, b: a @ b,
    (
        Rule("grad @ bᵀ", lambda g, s: g @ s["b"].swap_dims(-1, -2), ("b",)),
        Rule("aᵀ @ grad", lambda g, s: s["a"].swap_dims(-1, -2) @ g, ("a",)),
    ),
    ("a", "b"),
    compute_bound=True,
)


@per_constant
def add_scalar(c: float) -> Op:
    return Op(f"add_scalar({c:g})", lambda x: x + c, (Rule("grad", lambda g, s: g),))


@per_constant
def sub_scalar(c: float) -> Op:
    return Op(f"sub_scalar({c:g})", lambda x: x - c, (Rule("grad", lambda g, s: g),))


@per_constant
def rsub_scalar(c: float) -> Op:
    return Op(f"rsub_scalar({c:g})", lambda x: c - x, (Rule("-grad", lambda g, s: -g),))


@per_constant
def mul_scalar(c: float) -> Op:
    return Op(f"mul_scalar({c:g})", lambda x: x * c, (Rule(f"grad * {c:g}", lambda g, s: g * c),))


@per_constant
def div_scalar(c: float) -> Op:
    return Op(f"div_scalar({c:g})", lambda x: x / c, (Rule(f"grad / {c:g}", lambda g, s: g / c),))


@per_constant
def rdiv_scalar(c: float) -> Op:
    rule = Rule(f"-grad * {c:g} / x²", lambda g, s: -g * c / (s["x"] * s["x"]), ("x",))
    return Op(f"rdiv_scalar({c:g})", lambda x: c / x, (rule,))


@per_constant
def powf_scalar(p: float) -> Op:
    rule = Rule(f"grad * {p:g} * x^{p - 1:g}", lambda g, s: g * (s["x"] ** (p - 1) * p), ("x",))
    return Op(f"powf_scalar({p:g})", lambda x: x**p, (rule,))
