"""What a Playground program may use, as the page lists it: the Tensor API by kind, the builtins, the modules, and a
working example for each method that takes shapes, indices or ranges. Read from the sandbox's own policy
(`playground/guards.py`, `playground/sandbox.py`), so the list is what the sandbox allows (tests/playground checks
that every name listed is allowed, every allowed name listed, and every example runs)."""

from __future__ import annotations

from .guards import TENSOR_CONSTRUCTORS
from .sandbox import IMPORT_REFUSALS, REFUSED_BUILTINS, SAFE_BUILTINS

TENSOR_KINDS: dict[str, tuple[str, ...]] = {
    "Make a tensor (on `ad`)": tuple(sorted(TENSOR_CONSTRUCTORS)),
    "Gradients": ("require_grad", "backward", "grad", "grad_remove", "grad_replace", "detach", "without_autodiff"),
    "Read it": ("shape", "dims", "dtype", "item", "tolist", "is_tracked", "is_require_grad", "node_id"),
    "Arithmetic and reductions": (
        "matmul", "sum", "mean", "sum_dim", "mean_dim", "max", "min", "max_dim", "min_dim", "prod", "prod_dim",
        "cumsum",
    ),
    "Elementwise": (
        "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "abs", "sign", "recip", "sinh", "cosh",
        "asin", "acos", "atan", "erf", "log1p", "powf", "powf_scalar", "clamp", "clamp_min", "clamp_max",
    ),
    "Shapes": (
        "reshape", "transpose", "swap_dims", "permute", "flip", "unsqueeze", "unsqueeze_dim", "squeeze", "expand",
        "repeat_dim",
    ),
    "Indexing (and `t[0]`, `t[1:3]`, `t[:, 0]`, `t[..., -1]`)": (
        "slice", "slice_assign", "select", "gather", "scatter", "mask_fill", "mask_where",
    ),
    "Comparisons (masks)": (
        "greater_elem", "greater_equal_elem", "lower_elem", "lower_equal_elem", "equal_elem", "greater", "lower",
        "equal",
    ),
}  # fmt: skip
OPERATORS = "`+ - * / ** @`, unary `-`, with numbers or tensors (numpy's broadcasting)"

BUILTINS = tuple(
    sorted(
        name
        for name, value in SAFE_BUILTINS.items()
        if not name.startswith("_")
        and not (isinstance(value, type) and issubclass(value, BaseException))
        and name not in ("True", "False", "None", "NotImplemented", "Ellipsis")
    )
) + ("getattr", "hasattr", "setattr", "print")
EXCEPTIONS = tuple(
    sorted(
        name for name, value in SAFE_BUILTINS.items() if isinstance(value, type) and issubclass(value, BaseException)
    )
)
MODULES = {
    "math": "every public function and constant",
    "random": "random, uniform, gauss, randint, choice, shuffle, seed, ... (seeded the same way at each run)",
    "autodiff": "Tensor, Distribution, scope",
}
REFUSED = {**REFUSED_BUILTINS, **{f"import {name}": words for name, words in IMPORT_REFUSALS.items()}}

# a working example for each method that takes shapes, indices or ranges: the line, and what it prints
SHAPE_EXAMPLES: dict[str, str] = {
    "t[0], t[1:3], t[:, 0], t[..., -1]": (
        "t = Tensor.from_floats([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], ad)\n"
        "print(t[0], t[:, 1:3], t[:, 0], t[..., -1], t[-1, 0].item())"
    ),
    "slice": (
        "t = Tensor.from_floats([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], ad)\n"
        "print(t.slice([(0, 1), (1, 3)]))  # rows 0..1, columns 1..3 (end excluded)"
    ),
    "select": (
        "t = Tensor.from_floats([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], ad)\n"
        "print(t.select(1, Tensor.from_ints([2, 0], ad)))  # columns 2 and 0, in that order"
    ),
    "reshape": "t = Tensor.from_floats([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], ad)\nprint(t.reshape([2, 3]))",
    "sum_dim": "t = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0]], ad)\nprint(t.sum_dim(0), t.sum_dim(1))",
    "swap_dims": "t = Tensor.from_floats([[1.0, 2.0, 3.0]], ad)\nprint(t.swap_dims(0, 1).dims())",
    "unsqueeze_dim": (
        "t = Tensor.from_floats([1.0, 2.0], ad)\nprint(t.unsqueeze_dim(0).dims(), t.unsqueeze_dim(1).dims())"
    ),
    "zeros, ones, random": (
        "print(Tensor.zeros([2, 3], ad).dims(), Tensor.random([2], Distribution.uniform(-1.0, 1.0), ad).dims())"
    ),
}
