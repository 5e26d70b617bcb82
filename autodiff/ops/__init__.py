"""Every op of the engine, its forward and its backward rules side by side, grouped by family as Burn's
`ops/` is: `arithmetic` (+, -, *, /, powers, matmul), `elementwise` (exp, sin, relu, clamp, ...),
`reduction` (sum, mean, max, prod, cumsum), `shape` (reshape, permute, expand, cat, ...) and `indexing`
(slice, select, gather, scatter, masks). `run_op` (in `base`) runs one on tensors and registers its step.

In a rule, `g` is the gradient flowing into the op's output and `s` the saved tensors (`x` for a one-input
op's input; `a` and `b` for two inputs; `y` for the output). An op with a number or a shape in it is built
once per constant (`per_constant`).
"""

from .base import run_op, unary

__all__ = ["run_op", "unary"]
