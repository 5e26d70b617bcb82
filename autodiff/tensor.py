"""`Tensor`: every op's forward and its backward rules, side by side.

Each op computes its output on the device's buffers, then `_run_op` registers exactly one step
on the autodiff server: an `OpsStep` (here `Step`) with the rules of the tracked inputs and
only the saved tensors those rules need, or an `UntrackedOpsStep` when no input is tracked.
In a rule, `g` is the gradient flowing into the op's output and `s` the saved tensors.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .device import Device, Distribution
from .errors import (
    DeviceMismatchError,
    DTypeError,
    IndexOutOfBoundsError,
    NonFiniteError,
    NonLeafRequireGradError,
    ShapeMismatchError,
    UnsupportedOperationError,
    UntrackedBackwardError,
    excerpt,
)
from .grads import Gradients
from .graph import Node, NodeId, Op, Requirement, Rule, Step, UntrackedOpsStep, per_constant
from .printing import format_array
from .trace import NO_RECORDER

if TYPE_CHECKING:
    from .backends.base import Buffer
    from .trace import Recorder

FLOAT_DTYPES = ("float32", "float64")
REPR_VALUES = 64  # a repr shows every value up to this many, else only the shape
Scalar = float | int
Range = Sequence[int] | slice | range  # one dim's part: (start, end), slice(start, end) or range(start, end)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class Tensor:
    __slots__ = ("data", "device", "node", "__weakref__")

    def __init__(self, data: Buffer, device: Device, node: Node | None = None) -> None:
        self.data = data
        self.device = device
        self.node = node  # None on a device without autodiff

    # -- creation ------------------------------------------------------------------------
    @classmethod
    def from_floats(cls, data: object, device: Device, dtype: str = "float32") -> Tensor:
        """A tensor from (nested) lists of numbers of any rank, or a numpy array."""
        _check_dtype(dtype)
        try:
            array = np.array(data)
        except ValueError:
            raise ShapeMismatchError("The nested lists are ragged: every row must have the same length.") from None
        if array.dtype.kind not in "iuf":
            raise DTypeError(
                f"from_floats needs numbers, but got values of type {array.dtype}. "
                "Write the data as (nested) lists of numbers, e.g. [[1.0, 2.0], [3.0, 4.0]]."
            )
        if array.size == 0:
            raise ShapeMismatchError("from_floats got no values: a tensor needs at least one number.")
        with np.errstate(over="ignore"):
            array = array.reshape(array.shape or (1,)).astype(dtype)  # checked after the cast: 1e39 is inf in f32
        if not np.all(np.isfinite(array)):
            raise NonFiniteError(
                f"The data contains NaN or infinity, or a number too large for {dtype} (beyond about "
                f"{float(np.finfo(dtype).max):.3g}). Gradients of such values are meaningless; use finite numbers."
            )
        buffer = device.backend.from_numpy(array)
        return cls._leaf(buffer, device, "from_floats")

    @classmethod
    def zeros(cls, shape: Sequence[int], device: Device, dtype: str = "float32") -> Tensor:
        return cls._leaf(device.backend.full(_check_shape(shape), 0.0, _check_dtype(dtype)), device, "zeros")

    @classmethod
    def ones(cls, shape: Sequence[int], device: Device, dtype: str = "float32") -> Tensor:
        return cls._leaf(device.backend.full(_check_shape(shape), 1.0, _check_dtype(dtype)), device, "ones")

    @classmethod
    def random(cls, shape: Sequence[int], distribution: Distribution, device: Device, dtype: str = "float32") -> Tensor:
        shape, dtype = _check_shape(shape), _check_dtype(dtype)
        if distribution.kind == "normal":
            buffer = device.backend.normal(shape, distribution.a, distribution.b, dtype)
        else:
            buffer = device.backend.uniform(shape, distribution.a, distribution.b, dtype)
        return cls._leaf(buffer, device, "random")

    @classmethod
    def from_inner(cls, tensor: Tensor, device: Device) -> Tensor:
        """A new untracked leaf on autodiff `device` sharing the data of inner `tensor` (Burn's
        `Tensor::from_inner`), e.g. to take a gradient-descent step with a gradient."""
        if tensor.device is not device.inner or not device.is_autodiff:
            raise DeviceMismatchError(
                "from_inner takes a tensor of the inner device and the autodiff device built on it, "
                "e.g. Tensor.from_inner(w.grad(grads), ad)."
            )
        return cls._leaf(tensor.data, device, "from_inner")

    @staticmethod
    def from_ints(data: object, device: Device) -> IntTensor:
        """Indices for `select`, `gather` and `scatter` (Burn's `Tensor<B, D, Int>`), e.g. [1, 0, 1]."""
        array = _values_array(data, "from_ints", "iub", "whole numbers, e.g. [1, 0, 1]")
        if array.dtype.kind == "b":
            raise DTypeError("from_ints needs whole numbers, not True/False: use from_bools for a mask.")
        return IntTensor(device.backend.from_numpy(array.astype(np.int64)), device)

    @staticmethod
    def from_bools(data: object, device: Device) -> BoolTensor:
        """A mask for `mask_fill` and `mask_where` (Burn's `Tensor<B, D, Bool>`), e.g. [[True, False]]."""
        array = _values_array(data, "from_bools", "b", "True/False values, e.g. [[True, False]]")
        return BoolTensor(device.backend.from_numpy(array.astype(np.bool_)), device)

    @classmethod
    def _leaf(cls, buffer: Buffer, device: Device, op: str) -> Tensor:
        server = device.server
        if server is None:
            return cls(buffer, device)
        node = Node(server.new_node_id(), (), 0, Requirement.Untracked)
        tensor = cls(buffer, device, node)
        server.register_leaf(tensor, node, op)
        return tensor

    # -- metadata --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    def dims(self) -> list[int]:
        return list(self.data.shape)

    @property
    def dtype(self) -> str:
        return self.data.dtype

    def numpy(self) -> np.ndarray:
        return self.data.to_numpy()

    def tolist(self) -> list:
        return self.data.to_numpy().tolist()

    def item(self) -> float:
        if math.prod(self.shape) != 1:
            raise ShapeMismatchError(f"item() needs a tensor with one value, this one has shape {self.dims()}.")
        return float(self.data.to_numpy().reshape(()))

    @property
    def node_id(self) -> NodeId | None:
        return None if self.node is None else self.node.id

    @property
    def requirement(self) -> Requirement:
        return Requirement.Untracked if self.node is None else self.node.requirement

    @property
    def is_tracked(self) -> bool:
        return self.requirement.is_tracked

    @property
    def is_require_grad(self) -> bool:
        return self.requirement is Requirement.Grad

    def __repr__(self) -> str:
        """`Tensor([5.4365635, 14.778112])`: the values as the seed prints them; a large tensor by its shape."""
        size = math.prod(self.dims())
        if size > REPR_VALUES:
            return f"Tensor(shape={self.dims()}, {size:,} values)"
        return f"Tensor({format_array(self.numpy())})"

    # -- graph control -------------------------------------------------------------------------
    def require_grad(self) -> Tensor:
        """Mark this leaf as a parameter whose gradient backward keeps. Returns the tensor itself."""
        server = self.device.server
        if server is None or self.node is None:
            raise UnsupportedOperationError(
                "require_grad() needs a tensor on an autodiff device: create it on device.autodiff()."
            )
        if self.node.requirement is Requirement.Grad:
            return self
        if self.node.requirement is Requirement.GradInBackward:
            raise NonLeafRequireGradError(
                f"Can't convert a non leaf tensor into a tracked tensor: {self.node.id!r} is the output "
                "of an operation, so it already gets a gradient during backward. Call require_grad() "
                "on the input tensors (the leaves) instead."
            )
        self.node = Node(self.node.id, (), 0, Requirement.Grad)
        server.register_root(self.node)
        return self

    def detach(self) -> Tensor:
        """The same data as a new leaf: gradients do not flow through it. As Burn's `float_detach`, a leaf
        marked with require_grad() stays one (a new `Grad` leaf); anything else becomes untracked."""
        detached = Tensor._leaf(self.data, self.device, "detach")
        return detached.require_grad() if self.is_require_grad else detached

    def without_autodiff(self) -> Tensor:
        """The same data on the inner device: no graph, no server, no memory held by steps."""
        return Tensor(self.data, self.device.inner)

    # -- backward and gradients ----------------------------------------------------------------
    def backward(
        self, recorder: Recorder | None = None, retain_graph: bool = False, into: Gradients | None = None
    ) -> Gradients:
        """Run backward from this tensor. `retain_graph` and `into` exist only on a device with the
        PyTorch memory policy (`autodiff(memory_policy="eager")`): `retain_graph=True` keeps every step
        and its saved tensors so a second backward can run; `into` adds the gradients to an earlier
        container, the way PyTorch's `.grad` accumulates."""
        server = self.device.server
        if server is None or self.node is None:
            raise UntrackedBackwardError(
                "A backward pass needs a tensor computed on an autodiff device; this one is on "
                f"'{self.device.name}'. Create the inputs on device.autodiff()."
            )
        if not self.node.requirement.is_tracked:
            raise UntrackedBackwardError(
                "This tensor does not depend on any tensor marked with require_grad(), so there is "
                "nothing to differentiate. Call require_grad() on the inputs you want gradients for, "
                "then recompute it."
            )
        if (retain_graph or into is not None) and not server.policy.allows_retain_graph:
            raise UnsupportedOperationError(
                "Burn does not support retain_graph: each step runs once. Combine losses before backward or "
                "recompute the forward pass. (retain_graph and into are for comparing with PyTorch, on "
                "autodiff(memory_policy='eager').)"
            )
        return server.backward(self.node, self.data, NO_RECORDER if recorder is None else recorder, retain_graph, into)

    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in `grads`, as a tensor on the inner device (None when it has none)."""
        grad = None if self.node is None else grads.get(self.node.id)
        return None if grad is None else Tensor(grad, self.device.inner)

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Take this tensor's gradient out of `grads` and return it."""
        grad = None if self.node is None else grads.remove(self.node.id)
        return None if grad is None else Tensor(grad, self.device.inner)

    def grad_replace(self, grads: Gradients, grad: Tensor) -> None:
        if self.node is None:
            raise UntrackedBackwardError("Only a tensor on an autodiff device has a gradient to replace.")
        if grad.shape != self.shape:
            raise ShapeMismatchError(f"The new gradient has shape {grad.dims()}, the tensor {self.dims()}.")
        grads.replace(self.node.id, grad.data)

    # -- binary ops (numpy broadcasting; gradients summed back over broadcast dims) ----------
    # Each op is an `Op`: its forward on buffers, then the backward rule of each input. An op with a
    # number or a shape in it is built once per constant (`per_constant`).
    _ADD = Op("add", lambda a, b: a + b, (Rule("grad", lambda g, s: g), Rule("grad", lambda g, s: g)), ("a", "b"))

    @staticmethod
    @per_constant
    def _add_scalar(c: float) -> Op:
        return Op(f"add_scalar({c:g})", lambda x: x + c, (Rule("grad", lambda g, s: g),))

    def __add__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return _run_op(self._ADD, self._operands(other))
        return _run_op(self._add_scalar(_scalar(other)), (self,))

    __radd__ = __add__

    _SUB = Op("sub", lambda a, b: a - b, (Rule("grad", lambda g, s: g), Rule("-grad", lambda g, s: -g)), ("a", "b"))

    @staticmethod
    @per_constant
    def _sub_scalar(c: float) -> Op:
        return Op(f"sub_scalar({c:g})", lambda x: x - c, (Rule("grad", lambda g, s: g),))

    @staticmethod
    @per_constant
    def _rsub_scalar(c: float) -> Op:
        return Op(f"rsub_scalar({c:g})", lambda x: c - x, (Rule("-grad", lambda g, s: -g),))

    def __sub__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return _run_op(self._SUB, self._operands(other))
        return _run_op(self._sub_scalar(_scalar(other)), (self,))

    def __rsub__(self, other: Scalar) -> Tensor:
        return _run_op(self._rsub_scalar(_scalar(other)), (self,))

    _MUL = Op(
        "mul", lambda a, b: a * b,
        (Rule("grad * b", lambda g, s: g * s["b"], ("b",)),
         Rule("grad * a", lambda g, s: g * s["a"], ("a",))),
        ("a", "b"),
    )  # fmt: skip

    @staticmethod
    @per_constant
    def _mul_scalar(c: float) -> Op:
        return Op(f"mul_scalar({c:g})", lambda x: x * c, (Rule(f"grad * {c:g}", lambda g, s: g * c),))

    def __mul__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return _run_op(self._MUL, self._operands(other))
        return _run_op(self._mul_scalar(_scalar(other)), (self,))

    __rmul__ = __mul__

    _DIV = Op(
        "div", lambda a, b: a / b,
        (Rule("grad / b", lambda g, s: g / s["b"], ("b",)),
         Rule("-grad * a / b²", lambda g, s: -g * s["a"] / (s["b"] * s["b"]), ("a", "b"))),
        ("a", "b"),
    )  # fmt: skip

    @staticmethod
    @per_constant
    def _div_scalar(c: float) -> Op:
        return Op(f"div_scalar({c:g})", lambda x: x / c, (Rule(f"grad / {c:g}", lambda g, s: g / c),))

    @staticmethod
    @per_constant
    def _rdiv_scalar(c: float) -> Op:
        return Op(
            f"rdiv_scalar({c:g})", lambda x: c / x,
            (Rule(f"-grad * {c:g} / x²", lambda g, s: -g * c / (s["x"] * s["x"]), ("x",)),),
        )  # fmt: skip

    def __truediv__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return _run_op(self._DIV, self._operands(other))
        c = _scalar(other)
        if c == 0:
            raise NonFiniteError("Division by the number 0 gives infinity; divide by a non-zero number.")
        return _run_op(self._div_scalar(c), (self,))

    def __rtruediv__(self, other: Scalar) -> Tensor:
        return _run_op(self._rdiv_scalar(_scalar(other)), (self,))

    @staticmethod
    @per_constant
    def _powf_scalar(p: float) -> Op:
        return Op(
            f"powf_scalar({p:g})", lambda x: x**p,
            (Rule(f"grad * {p:g} * x^{p - 1:g}", lambda g, s: g * (s["x"] ** (p - 1) * p), ("x",)),),
        )  # fmt: skip

    def __pow__(self, exponent: Scalar) -> Tensor:
        if not _is_scalar(exponent):
            raise UnsupportedOperationError("The exponent of ** must be a number, e.g. x ** 2.")
        return _run_op(self._powf_scalar(_scalar(exponent)), (self,))

    _MATMUL = Op(
        "matmul", lambda a, b: a @ b,
        (Rule("grad @ bᵀ", lambda g, s: g @ s["b"].swap_dims(-1, -2), ("b",)),
         Rule("aᵀ @ grad", lambda g, s: s["a"].swap_dims(-1, -2) @ g, ("a",))),
        ("a", "b"), compute_bound=True,
    )  # fmt: skip

    def matmul(self, other: Tensor) -> Tensor:
        a, b = self._operands(other, broadcast=False)
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise ShapeMismatchError(
                f"matmul needs tensors of rank 2 or more, got shapes {a.dims()} and {b.dims()}. "
                "Use reshape([1, n]) or reshape([n, 1]) to make a vector a matrix."
            )
        if a.shape[-1] != b.shape[-2]:
            raise ShapeMismatchError(
                f"matmul cannot multiply {a.dims()} by {b.dims()}: the last dimension of the first "
                f"({a.shape[-1]}) must equal the second-to-last of the second ({b.shape[-2]})."
            )
        _broadcast_shape(a.shape[:-2], b.shape[:-2], "matmul (batch dimensions)")
        return _run_op(self._MATMUL, (a, b))

    __matmul__ = matmul

    # -- unary ops (the saved input is "x") ---------------------------------------------------------
    _NEG = Op("neg", lambda x: -x, (Rule("-grad", lambda g, s: -g),))

    def __neg__(self) -> Tensor:
        return _run_op(self._NEG, (self,))

    # Burn saves the input and recomputes exp(x) in backward (so are sqrt, tanh, sigmoid and relu).
    _EXP = Op("exp", lambda x: x.exp(), (Rule("grad * exp(x)", lambda g, s: g * s["x"].exp(), ("x",)),))

    def exp(self) -> Tensor:
        return _run_op(self._EXP, (self,))

    _LOG = Op("log", lambda x: x.log(), (Rule("grad / x", lambda g, s: g / s["x"], ("x",)),))

    def log(self) -> Tensor:
        return _run_op(self._LOG, (self,))

    _SQRT = Op(
        "sqrt", lambda x: x.sqrt(), (Rule("grad / (2 * sqrt(x))", lambda g, s: g / (s["x"].sqrt() * 2.0), ("x",)),)
    )

    def sqrt(self) -> Tensor:
        return _run_op(self._SQRT, (self,))

    _SIN = Op("sin", lambda x: x.sin(), (Rule("grad * cos(x)", lambda g, s: g * s["x"].cos(), ("x",)),))

    def sin(self) -> Tensor:
        return _run_op(self._SIN, (self,))

    _COS = Op("cos", lambda x: x.cos(), (Rule("-grad * sin(x)", lambda g, s: -g * s["x"].sin(), ("x",)),))

    def cos(self) -> Tensor:
        return _run_op(self._COS, (self,))

    _TANH = Op("tanh", lambda x: x.tanh(), (Rule("grad * (1 - tanh(x)²)", lambda g, s: _tanh_rule(g, s["x"]), ("x",)),))

    def tanh(self) -> Tensor:
        return _run_op(self._TANH, (self,))

    _SIGMOID = Op(
        "sigmoid", lambda x: x.sigmoid(),
        (Rule("grad * σ(x) * (1 - σ(x))", lambda g, s: _sigmoid_rule(g, s["x"]), ("x",)),),
    )  # fmt: skip

    def sigmoid(self) -> Tensor:
        return _run_op(self._SIGMOID, (self,))

    _RELU = Op("relu", lambda x: x.relu(), (Rule("grad * (x > 0)", lambda g, s: g * (s["x"] > 0.0), ("x",)),))

    def relu(self) -> Tensor:
        return _run_op(self._RELU, (self,))

    # -- reductions (as in Burn: sum/mean give shape [1], *_dim keep the dim with size 1) ----------
    @staticmethod
    @per_constant
    def _sum(shape: tuple[int, ...]) -> Op:
        return Op(
            "sum", lambda x: x.sum(), (Rule("ones(shape) * grad", lambda g, s: g.expand(shape)),), compute_bound=True
        )

    def sum(self) -> Tensor:
        return _run_op(self._sum(self.data.shape), (self,))

    @staticmethod
    @per_constant
    def _mean(shape: tuple[int, ...]) -> Op:
        n = math.prod(shape)
        return Op(
            "mean", lambda x: x.sum() / n,
            (Rule(f"ones(shape) * grad / {n}", lambda g, s: (g / n).expand(shape)),), compute_bound=True,
        )  # fmt: skip

    def mean(self) -> Tensor:
        return _run_op(self._mean(self.data.shape), (self,))

    @staticmethod
    @per_constant
    def _sum_dim(shape: tuple[int, ...], dim: int) -> Op:
        return Op(
            f"sum_dim({dim})", lambda x: x.sum_dim(dim),
            (Rule("grad expanded along dim", lambda g, s: g.expand(shape)),), compute_bound=True,
        )  # fmt: skip

    def sum_dim(self, dim: int) -> Tensor:
        return _run_op(self._sum_dim(self.data.shape, self._dim(dim)), (self,))

    @staticmethod
    @per_constant
    def _mean_dim(shape: tuple[int, ...], dim: int) -> Op:
        n = shape[dim]
        return Op(
            f"mean_dim({dim})", lambda x: x.sum_dim(dim) / n,
            (Rule(f"grad / {n} expanded along dim", lambda g, s: (g / n).expand(shape)),), compute_bound=True,
        )  # fmt: skip

    def mean_dim(self, dim: int) -> Tensor:
        return _run_op(self._mean_dim(self.data.shape, self._dim(dim)), (self,))

    # -- shape ops (views: no new allocation) ------------------------------------------------------
    @staticmethod
    @per_constant
    def _reshape(original: tuple[int, ...], target: tuple[int, ...], name: str) -> Op:
        return Op(
            name, lambda x: x.reshape(target),
            (Rule("grad reshaped back", lambda g, s: g.reshape(original)),),
        )  # fmt: skip

    def reshape(self, shape: Sequence[int]) -> Tensor:
        if not isinstance(shape, (list, tuple)) or not all(isinstance(d, numbers.Integral) for d in shape):
            raise ShapeMismatchError("reshape takes a list of sizes, e.g. x.reshape([3, 1]).")
        target = _reshaped(self.shape, [int(d) for d in shape])
        return self._shaped(target, f"reshape({list(target)})")

    @staticmethod
    @per_constant
    def _swap_dims(d1: int, d2: int) -> Op:
        return Op(
            f"swap_dims({d1}, {d2})", lambda x: x.swap_dims(d1, d2),
            (Rule("grad with dims swapped back", lambda g, s: g.swap_dims(d1, d2)),),
        )  # fmt: skip

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        return _run_op(self._swap_dims(self._dim(dim1), self._dim(dim2)), (self,))

    def transpose(self) -> Tensor:
        if len(self.shape) < 2:
            raise ShapeMismatchError(f"transpose swaps the last two dims, but this tensor has shape {self.dims()}.")
        return self.swap_dims(-2, -1)

    # -- Burn's elementwise ops (burn-autodiff ops/tensor.rs: each saves its input, as exp does) -------------
    _ABS = Op("abs", lambda x: x.abs(), (Rule("grad * sign(x)", lambda g, s: g * s["x"].sign(), ("x",)),))

    def abs(self) -> Tensor:
        return _run_op(self._ABS, (self,))

    _SIGN = Op("sign", lambda x: x.sign(), (Rule("0 (sign is flat)", lambda g, s: g * 0.0),))

    def sign(self) -> Tensor:
        return _run_op(self._SIGN, (self,))

    _RECIP = Op("recip", lambda x: 1.0 / x, (Rule("-grad / x²", lambda g, s: -g / (s["x"] * s["x"]), ("x",)),))

    def recip(self) -> Tensor:
        return _run_op(self._RECIP, (self,))

    _TAN = Op(
        "tan", lambda x: x.transcendental("tan"),
        (Rule("grad * (1 + tan(x)²)", lambda g, s: g * (_squared(s["x"].transcendental("tan")) + 1.0), ("x",)),),
    )  # fmt: skip

    def tan(self) -> Tensor:
        return _run_op(self._TAN, (self,))

    _SINH = Op(
        "sinh", lambda x: x.transcendental("sinh"),
        (Rule("grad * cosh(x)", lambda g, s: g * s["x"].transcendental("cosh"), ("x",)),),
    )  # fmt: skip

    def sinh(self) -> Tensor:
        return _run_op(self._SINH, (self,))

    _COSH = Op(
        "cosh", lambda x: x.transcendental("cosh"),
        (Rule("grad * sinh(x)", lambda g, s: g * s["x"].transcendental("sinh"), ("x",)),),
    )  # fmt: skip

    def cosh(self) -> Tensor:
        return _run_op(self._COSH, (self,))

    _ASIN = Op(
        "asin", lambda x: x.transcendental("arcsin"),
        (Rule("grad / sqrt(1 - x²)", lambda g, s: g / (1.0 - _squared(s["x"])).sqrt(), ("x",)),),
    )  # fmt: skip

    def asin(self) -> Tensor:
        return _run_op(self._ASIN, (self,))

    _ACOS = Op(
        "acos", lambda x: x.transcendental("arccos"),
        (Rule("-grad / sqrt(1 - x²)", lambda g, s: -g / (1.0 - _squared(s["x"])).sqrt(), ("x",)),),
    )  # fmt: skip

    def acos(self) -> Tensor:
        return _run_op(self._ACOS, (self,))

    _ATAN = Op(
        "atan", lambda x: x.transcendental("arctan"),
        (Rule("grad / (1 + x²)", lambda g, s: g / (_squared(s["x"]) + 1.0), ("x",)),),
    )  # fmt: skip

    def atan(self) -> Tensor:
        return _run_op(self._ATAN, (self,))

    _ERF = Op(
        "erf", lambda x: x.transcendental("erf"),
        (Rule("grad * 2/√π * exp(-x²)", lambda g, s: g * ((-_squared(s["x"])).exp() * _TWO_OVER_SQRT_PI), ("x",)),),
    )  # fmt: skip

    def erf(self) -> Tensor:
        return _run_op(self._ERF, (self,))

    _LOG1P = Op(
        "log1p", lambda x: x.transcendental("log1p"), (Rule("grad / (1 + x)", lambda g, s: g / (s["x"] + 1.0), ("x",)),)
    )

    def log1p(self) -> Tensor:
        return _run_op(self._LOG1P, (self,))

    _POWF = Op(
        "powf", lambda a, b: a**b,
        (Rule("grad * b * a^(b-1)", lambda g, s: g * s["b"] * s["a"] ** (s["b"] - 1.0), ("a", "b")),
         Rule("grad * a^b * ln(a)", lambda g, s: g * s["y"] * s["a"].log(), ("a", "y"))),
        ("a", "b"),
    )  # fmt: skip

    def powf(self, exponent: Tensor) -> Tensor:
        """Elementwise `self ** exponent` with a tensor exponent (Burn's `powf`); `powf_scalar` or `**` for a number."""
        return _run_op(self._POWF, self._operands(exponent))

    def powf_scalar(self, exponent: Scalar) -> Tensor:
        return self**exponent

    @staticmethod
    @per_constant
    def _clamp(low: float | None, high: float | None) -> Op:
        name = "clamp" if low is not None and high is not None else "clamp_min" if low is not None else "clamp_max"
        bounds = ", ".join(f"{b:g}" for b in (low, high) if b is not None)
        return Op(
            f"{name}({bounds})", lambda x: x.clamp(low, high),
            (Rule("grad where x is inside the bounds", lambda g, s: g * s["x"].inside(low, high), ("x",)),),
        )  # fmt: skip

    def clamp(self, min: Scalar, max: Scalar) -> Tensor:
        low, high = _scalar(min), _scalar(max)
        if low > high:
            raise ShapeMismatchError(f"clamp needs min <= max, got min={low:g} and max={high:g}.")
        return _run_op(self._clamp(low, high), (self,))

    def clamp_min(self, min: Scalar) -> Tensor:
        return _run_op(self._clamp(_scalar(min), None), (self,))

    def clamp_max(self, max: Scalar) -> Tensor:
        return _run_op(self._clamp(None, _scalar(max)), (self,))

    # -- comparisons: boolean tensors, for masks (no gradient flows through a comparison) ----------------
    def greater_elem(self, value: Scalar) -> BoolTensor:
        return self._compare(value, "gt")

    def greater_equal_elem(self, value: Scalar) -> BoolTensor:
        return self._compare(value, "ge")

    def lower_elem(self, value: Scalar) -> BoolTensor:
        return self._compare(value, "lt")

    def lower_equal_elem(self, value: Scalar) -> BoolTensor:
        return self._compare(value, "le")

    def equal_elem(self, value: Scalar) -> BoolTensor:
        return self._compare(value, "eq")

    def greater(self, other: Tensor) -> BoolTensor:
        return self._compare(other, "gt")

    def lower(self, other: Tensor) -> BoolTensor:
        return self._compare(other, "lt")

    def equal(self, other: Tensor) -> BoolTensor:
        return self._compare(other, "eq")

    def _compare(self, other: Tensor | Scalar, how: str) -> BoolTensor:
        if isinstance(other, Tensor):
            a, b = self._operands(other)
            return BoolTensor(a.data.compare(b.data, how), self.device)
        return BoolTensor(self.data.compare(_scalar(other), how), self.device)

    # -- Burn's reductions (compute-bound: kept, not recomputed, under balanced checkpointing) -------------
    @staticmethod
    @per_constant
    def _extreme_dim(dim: int, largest: bool) -> Op:
        which = "max" if largest else "min"
        return Op(
            f"{which}_dim({dim})", lambda x: x.extreme_dim(dim, largest),
            (Rule(f"grad at the first arg{which} along dim",
                  lambda g, s: g * s["x"].first_extreme_mask(dim, largest), ("x",)),),
            compute_bound=True,
        )  # fmt: skip

    def max_dim(self, dim: int) -> Tensor:
        """The largest value along `dim`, which keeps size 1 (Burn's `max_dim`); the gradient goes to the
        first largest element, as Burn's argmax picks it."""
        return _run_op(self._extreme_dim(self._dim(dim), True), (self,))

    def min_dim(self, dim: int) -> Tensor:
        return _run_op(self._extreme_dim(self._dim(dim), False), (self,))

    def max(self) -> Tensor:
        """The largest value, shape [1]: a reshape to one dim and `max_dim(0)`, as Burn's default `float_max`."""
        return self.reshape([-1]).max_dim(0)

    def min(self) -> Tensor:
        return self.reshape([-1]).min_dim(0)

    @staticmethod
    @per_constant
    def _prod_dim(dim: int) -> Op:
        return Op(
            f"prod_dim({dim})", lambda x: x.prod_dim(dim),
            (Rule("grad * product of the others along dim", lambda g, s: g * s["x"].prod_of_others(dim), ("x",)),),
            compute_bound=True,
        )  # fmt: skip

    def prod_dim(self, dim: int) -> Tensor:
        """The product along `dim`, which keeps size 1. Its gradient multiplies the other elements instead of
        dividing the product by each one, so a zero gives the right gradient (Burn divides: NaN there)."""
        return _run_op(self._prod_dim(self._dim(dim)), (self,))

    def prod(self) -> Tensor:
        return self.reshape([-1]).prod_dim(0)

    @staticmethod
    @per_constant
    def _cumsum(dim: int) -> Op:
        return Op(
            f"cumsum({dim})", lambda x: x.cumsum(dim),
            (Rule("cumsum of grad from the end", lambda g, s: g.reverse_cumsum(dim)),), compute_bound=True,
        )  # fmt: skip

    def cumsum(self, dim: int) -> Tensor:
        return _run_op(self._cumsum(self._dim(dim)), (self,))

    # -- Burn's shape ops ---------------------------------------------------------------------------------
    @staticmethod
    @per_constant
    def _permute(axes: tuple[int, ...]) -> Op:
        inverse = tuple(axes.index(d) for d in range(len(axes)))
        return Op(
            f"permute({list(axes)})", lambda x: x.permute(axes),
            (Rule("grad permuted back", lambda g, s: g.permute(inverse)),),
        )  # fmt: skip

    def permute(self, axes: Sequence[int]) -> Tensor:
        rank = len(self.shape)
        dims = tuple(self._dim(d) for d in _int_list(axes, "permute", "x.permute([1, 0])"))
        if sorted(dims) != list(range(rank)):
            raise ShapeMismatchError(f"permute needs each of the {rank} dims once, got {excerpt(list(axes))}.")
        return _run_op(self._permute(dims), (self,))

    @staticmethod
    @per_constant
    def _expand(original: tuple[int, ...], target: tuple[int, ...]) -> Op:
        return Op(
            f"expand({list(target)})", lambda x: x.expand(target),
            (Rule("grad summed over the expanded dims", lambda g, s: g.sum_to(original)),),
        )  # fmt: skip

    def expand(self, shape: Sequence[int]) -> Tensor:
        """Broadcast to `shape` (new leading dims, or size-1 dims stretched), as Burn's `expand`."""
        target = _check_shape(shape)
        if len(target) < len(self.shape) or _broadcast_shape(self.shape, target, "expand") != target:
            raise ShapeMismatchError(
                f"Cannot expand shape {self.dims()} to {list(target)}: only size-1 dims stretch, and dims are "
                "added in front."
            )
        return _run_op(self._expand(self.shape, target), (self,))

    @staticmethod
    @per_constant
    def _repeat_dim(dim: int, times: int) -> Op:
        return Op(
            f"repeat_dim({dim}, {times})", lambda x: x.tile_dim(dim, times),
            (Rule(f"grad summed over the {times} copies", lambda g, s: g.sum_tiles(dim, times)),),
        )  # fmt: skip

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        if not isinstance(times, numbers.Integral) or isinstance(times, bool) or times < 1:
            raise ShapeMismatchError(f"repeat_dim repeats a positive number of times, got {excerpt(times)}.")
        return _run_op(self._repeat_dim(self._dim(dim), int(times)), (self,))

    @staticmethod
    @per_constant
    def _flip(axes: tuple[int, ...]) -> Op:
        return Op(
            f"flip({list(axes)})", lambda x: x.flip(axes), (Rule("grad flipped back", lambda g, s: g.flip(axes)),)
        )

    def flip(self, axes: Sequence[int]) -> Tensor:
        dims = tuple(sorted({self._dim(d) for d in _int_list(axes, "flip", "x.flip([0])")}))
        return _run_op(self._flip(dims), (self,))

    def unsqueeze(self, rank: int) -> Tensor:
        """Add size-1 dims in front up to `rank` dims (Burn's `unsqueeze::<D2>()`)."""
        if not isinstance(rank, numbers.Integral) or rank < len(self.shape):
            raise ShapeMismatchError(f"unsqueeze({excerpt(rank)}) cannot give fewer dims than {self.dims()} has.")
        return self._shaped((1,) * (int(rank) - len(self.shape)) + self.shape, "unsqueeze")

    def unsqueeze_dim(self, dim: int) -> Tensor:
        rank = len(self.shape)
        if not isinstance(dim, numbers.Integral) or not 0 <= dim <= rank:
            raise ShapeMismatchError(f"unsqueeze_dim({excerpt(dim)}): a new dim goes at 0 to {rank}.")
        return self._shaped(self.shape[:dim] + (1,) + self.shape[dim:], f"unsqueeze_dim({dim})")

    def squeeze(self, dim: int) -> Tensor:
        """Remove `dim`, which must have size 1 (Burn's `squeeze_dim`)."""
        d = self._dim(dim)
        if self.shape[d] != 1 or len(self.shape) == 1:
            raise ShapeMismatchError(
                f"squeeze({dim}) removes a dim of size 1 from a tensor of 2 or more dims; this one has shape "
                f"{self.dims()}."
            )
        return self._shaped(self.shape[:d] + self.shape[d + 1 :], f"squeeze({d})")

    def _shaped(self, target: tuple[int, ...], name: str) -> Tensor:
        return _run_op(self._reshape(self.shape, target, name), (self,))

    # -- Burn's indexing ops ------------------------------------------------------------------------------
    @staticmethod
    @per_constant
    def _slice(shape: tuple[int, ...], ranges: tuple[tuple[int, int], ...]) -> Op:
        index = tuple(slice(a, b) for a, b in ranges)
        return Op(
            f"slice({_ranges_text(ranges)})", lambda x: x.index(index),
            (Rule("grad placed in zeros of the input's shape", lambda g, s: g.placed(shape, index)),),
        )  # fmt: skip

    def slice(self, ranges: Sequence[Range]) -> Tensor:
        """The part of the tensor in `ranges`, one (start, end) pair per leading dim, end excluded (Burn's
        `slice([0..1, 0..2])` is `slice([(0, 1), (0, 2)])`)."""
        return _run_op(self._slice(self.shape, self._ranges(ranges)), (self,))

    @staticmethod
    @per_constant
    def _slice_assign(ranges: tuple[tuple[int, int], ...]) -> Op:
        index = tuple(slice(a, b) for a, b in ranges)
        return Op(
            f"slice_assign({_ranges_text(ranges)})", lambda x, v: x.assigned(index, v),
            (Rule("grad, zero in the assigned part", lambda g, s: g.assigned(index, 0.0)),
             Rule("grad in the assigned part", lambda g, s: g.index(index))),
            ("x", "values"),
        )  # fmt: skip

    def slice_assign(self, ranges: Sequence[Range], values: Tensor) -> Tensor:
        """This tensor with the part in `ranges` replaced by `values` (a new tensor; Burn's `slice_assign`)."""
        checked = self._ranges(ranges)
        x, v = self._operands(values, broadcast=False)
        part = tuple(b - a for a, b in checked) + self.shape[len(checked) :]
        if v.shape != part:
            raise ShapeMismatchError(f"slice_assign's values have shape {v.dims()}, the part {list(part)}.")
        return _run_op(self._slice_assign(checked), (x, v))

    @staticmethod
    @per_constant
    def _cat(sizes: tuple[int, ...], dim: int, rank: int) -> Op:
        starts = [sum(sizes[:k]) for k in range(len(sizes))]
        parts = [_dim_index(rank, dim, slice(a, a + n)) for a, n in zip(starts, sizes, strict=True)]

        def forward(first: Buffer, *rest: Buffer) -> Buffer:
            return first.concatenate(rest, dim)

        return Op(
            f"cat(dim={dim})", forward,
            tuple(_part_rule(k, part) for k, part in enumerate(parts)),
            tuple(f"x{k}" for k in range(len(sizes))),
        )  # fmt: skip

    @staticmethod
    def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Concatenate tensors along `dim` (Burn's `Tensor::cat`); the other dims must agree."""
        if not isinstance(tensors, (list, tuple)) or not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise UnsupportedOperationError("Tensor.cat takes a non-empty list of tensors, e.g. Tensor.cat([a, b], 0).")
        first = tensors[0]
        d = first._dim(dim)
        for other in tensors[1:]:
            first._operands(other, broadcast=False)
            if len(other.shape) != len(first.shape) or any(
                n != m for k, (n, m) in enumerate(zip(first.shape, other.shape, strict=True)) if k != d
            ):
                raise ShapeMismatchError(
                    f"cat along dim {d} needs the other dims equal: shapes {first.dims()} and {other.dims()}."
                )
        if len(tensors) == 1:
            return first
        return _run_op(Tensor._cat(tuple(t.shape[d] for t in tensors), d, len(first.shape)), tuple(tensors))

    def select(self, dim: int, indices: IntTensor) -> Tensor:
        """The slices at `indices` along `dim` (a rank-1 IntTensor; Burn's `select`); repeated indices are
        allowed and their gradients add up."""
        d = self._dim(dim)
        index = self._indices(indices, d, rank=1)
        shape, at = self.shape, (slice(None),) * d + (index.array,)
        op = Op(
            f"select(dim={d})",
            lambda x: x.take(d, index),
            (Rule("grad added at the indices", lambda g, s: g.zeros(shape).added_at(at, g)),),
        )  # a fresh op: its rule holds this call's indices
        return _run_op(op, (self,))

    def gather(self, dim: int, indices: IntTensor) -> Tensor:
        """out[i][j] = x[i][indices[i][j]] for dim 1 (Burn's `gather`): `indices` has this tensor's rank and
        its sizes except along `dim`."""
        d = self._dim(dim)
        index = self._indices(indices, d, rank=len(self.shape))
        shape, at = self.shape, self.data.index_grid(d, index)
        op = Op(
            f"gather(dim={d})",
            lambda x: x.take_along(d, index),
            (Rule("grad added at the indices", lambda g, s: g.zeros(shape).added_at(at, g)),),
        )  # a fresh op: its rule holds this call's indices
        return _run_op(op, (self,))

    def scatter(self, dim: int, indices: IntTensor, values: Tensor) -> Tensor:
        """This tensor with `values` *added* at `indices` along `dim` (Burn's `scatter`, which sums)."""
        d = self._dim(dim)
        index = self._indices(indices, d, rank=len(self.shape))
        x, v = self._operands(values, broadcast=False)
        if v.shape != indices.shape:
            raise ShapeMismatchError(f"scatter's values have shape {v.dims()}, its indices {indices.dims()}.")
        at = self.data.index_grid(d, index)
        op = Op(
            f"scatter(dim={d})",
            lambda a, b: a.added_at(at, b),
            (Rule("grad", lambda g, s: g), Rule("grad at the indices", lambda g, s: g.take_along(d, index))),
            ("x", "values"),
        )  # a fresh op: its rules hold this call's indices
        return _run_op(op, (x, v))

    def mask_fill(self, mask: BoolTensor, value: Scalar) -> Tensor:
        """`value` where `mask` is true, this tensor's values elsewhere (Burn's `mask_fill`)."""
        m, c = self._mask(mask), _scalar(value)
        op = Op(
            f"mask_fill({c:g})",
            lambda x: x.where(m, c),
            (Rule("grad, zero where the mask is true", lambda g, s: g.where(m, 0.0)),),
        )  # a fresh op: its rule holds this call's mask
        return _run_op(op, (self,))

    def mask_where(self, mask: BoolTensor, source: Tensor) -> Tensor:
        """`source` where `mask` is true, this tensor's values elsewhere (Burn's `mask_where`)."""
        m = self._mask(mask)
        x, src = self._operands(source, broadcast=False)
        if src.shape != x.shape:
            raise ShapeMismatchError(f"mask_where's source has shape {src.dims()}, the tensor {x.dims()}.")
        op = Op(
            "mask_where", lambda a, b: a.where(m, b),
            (Rule("grad where the mask is false", lambda g, s: g.where(m, 0.0)),
             Rule("grad where the mask is true", lambda g, s: g.only_where(m))),
            ("x", "source"),
        )  # fmt: skip
        return _run_op(op, (x, src))

    def _ranges(self, ranges: Sequence[Range]) -> tuple[tuple[int, int], ...]:
        if not isinstance(ranges, (list, tuple)) or not 0 < len(ranges) <= len(self.shape):
            raise ShapeMismatchError(
                f"slice takes one (start, end) pair per dim, at most {len(self.shape)} here, e.g. "
                "x.slice([(0, 1), (0, 2)])."
            )
        checked = []
        for d, r in enumerate(ranges):
            if isinstance(r, (slice, range)):
                if r.step not in (None, 1):
                    raise ShapeMismatchError(f"slice takes contiguous ranges: the range for dim {d} has a step.")
                pair: tuple[object, object] = (
                    0 if r.start is None else r.start,
                    self.shape[d] if r.stop is None else r.stop,
                )
            elif isinstance(r, (list, tuple)) and len(r) == 2:
                pair = (r[0], r[1])
            else:
                raise ShapeMismatchError(f"The range for dim {d} is {excerpt(r)}; write it as (start, end).")
            start, end = (_index(v, f"slice's range for dim {d}") for v in pair)
            n = self.shape[d]
            start, end = start + n if start < 0 else start, end + n if end < 0 else end  # Burn counts -1 from the end
            if not 0 <= start < end <= n:
                raise IndexOutOfBoundsError(
                    f"The range {excerpt(r)} for dim {d} is empty or outside 0..{n} (shape {self.dims()})."
                )
            checked.append((start, end))
        return tuple(checked)

    def _indices(self, indices: object, dim: int, rank: int) -> Buffer:
        """`indices`' buffer, checked: an IntTensor of `rank` dims on this backend, each index inside `dim`."""
        if not isinstance(indices, IntTensor):
            raise DTypeError(
                f"Indices must be an IntTensor, not {type(indices).__name__}: make them with Tensor.from_ints(...)."
            )
        if indices.device.backend is not self.device.backend:
            raise DeviceMismatchError("The indices live on another device; create them on this tensor's device.")
        if len(indices.shape) != rank:
            raise ShapeMismatchError(f"These indices need {rank} dim(s), they have shape {indices.dims()}.")
        if rank > 1 and any(n != m for k, (n, m) in enumerate(zip(indices.shape, self.shape, strict=True)) if k != dim):
            raise ShapeMismatchError(
                f"The indices' shape {indices.dims()} must equal the tensor's {self.dims()} except along dim {dim}."
            )
        values = indices.numpy()
        n = self.shape[dim]
        if values.size and (values.min() < 0 or values.max() >= n):
            raise IndexOutOfBoundsError(
                f"An index is outside 0..{n - 1} along dim {dim}: the indices go from {values.min()} to {values.max()}."
            )
        return indices.data

    def _mask(self, mask: object) -> Buffer:
        if not isinstance(mask, BoolTensor):
            raise DTypeError(
                f"A mask must be a BoolTensor, not {type(mask).__name__}: e.g. x.greater_elem(0.0) or "
                "Tensor.from_bools(...)."
            )
        if mask.device.backend is not self.device.backend:
            raise DeviceMismatchError("The mask lives on another device; create it on this tensor's device.")
        if mask.shape != self.shape:
            raise ShapeMismatchError(f"The mask has shape {mask.dims()}, the tensor {self.dims()}: they must match.")
        return mask.data

    # -- input checks --------------------------------------------------------------------------
    def _operands(self, other: object, broadcast: bool = True) -> tuple[Tensor, Tensor]:
        if not isinstance(other, Tensor):
            raise UnsupportedOperationError(
                f"Cannot combine a tensor with a value of type {type(other).__name__}; use a number or a Tensor."
            )
        if other.device is not self.device:
            raise DeviceMismatchError(
                f"These tensors live on two different devices ({self.device.name} and {other.device.name}). "
                "Create both on the same device, or move one with without_autodiff()."
            )
        if self.data.array.dtype != other.data.array.dtype:
            raise DTypeError(
                f"Cannot combine a {self.dtype} tensor with a {other.dtype} tensor; create both with the same dtype."
            )
        if broadcast and self.data.array.shape != other.data.array.shape:
            _broadcast_shape(self.data.shape, other.data.shape, "this operation")
        return self, other

    def _dim(self, dim: int) -> int:
        rank = len(self.shape)
        if not isinstance(dim, numbers.Integral) or not -rank <= dim < rank:
            raise ShapeMismatchError(
                f"Dimension {dim} does not exist: this tensor has {rank} dims (shape {self.dims()})."
            )
        return int(dim) % rank


_UNTRACKED, _GRAD_IN_BACKWARD = Requirement.Untracked, Requirement.GradInBackward


def _run_op(op: Op, inputs: tuple[Tensor, ...]) -> Tensor:
    """Run an op's forward; on an autodiff device register its one step, in Burn's stages (`OpsPrep`):
    `prepare` (the inputs' nodes, the output's order, which inputs are tracked), then untracked (a step
    that only marks the node) or `stateful` (the tracked inputs' rules and only the saved tensors they
    need: an operand is kept only when the other one is tracked), `memory_bound` (an elementwise op, whose
    outputs balanced checkpointing recomputes) and `parents` (what a recomputation starts from)."""
    first = inputs[0]
    device = first.device
    server = device.server
    # prepare. The one fast path: every op runs through here and nearly every op has one or two inputs,
    # gathered without loops (gathered by a loop, the benchmark's seed graph ran about 10% slower).
    nodes: tuple[Node, ...]
    tracked: tuple[int, ...]
    if len(inputs) == 1:
        out = op.forward(first.data)
        a = first.node
        if server is None or a is None:  # a tensor has a node exactly when its device has a server
            return Tensor(out, device)
        nodes = (a,)
        order = a.order + 1
        tracked = (0,) if a.requirement is not _UNTRACKED else ()
    elif len(inputs) == 2:
        out = op.forward(first.data, inputs[1].data)
        a, b = first.node, inputs[1].node
        if server is None or a is None or b is None:
            return Tensor(out, device)
        nodes = (a, b)
        order = (a.order if a.order > b.order else b.order) + 1
        a_tracked, b_tracked = a.requirement is not _UNTRACKED, b.requirement is not _UNTRACKED
        tracked = (0, 1) if a_tracked and b_tracked else (0,) if a_tracked else (1,) if b_tracked else ()
    else:  # cat: any number of inputs
        out = op.forward(*(t.data for t in inputs))
        if server is None:
            return Tensor(out, device)
        nodes = tuple(_node_of(t) for t in inputs)
        order = max(n.order for n in nodes) + 1
        tracked = tuple(k for k, n in enumerate(nodes) if n.requirement is not _UNTRACKED)
    step: Step
    if not tracked:  # untracked
        node = Node(server.new_node_id(), (), order, _UNTRACKED, memory_bound=not op.compute_bound)
        step = UntrackedOpsStep(node, op.name)
    else:  # stateful
        every = len(tracked) == len(nodes)
        if every:
            parents, rules, needs = nodes, op.rules, op.needs
            shapes = tuple([t.data.array.shape for t in inputs])
        elif len(tracked) == 1:  # a tracked input beside untracked ones (a weight times data)
            k = tracked[0]
            parents, rules, needs = (nodes[k],), (op.rules[k],), op.sources[k]
            shapes = (inputs[k].data.array.shape,)
        else:
            parents, rules = tuple(nodes[k] for k in tracked), tuple(op.rules[k] for k in tracked)
            needs = tuple(dict.fromkeys(source for k in tracked for source in op.sources[k]))
            shapes = tuple(inputs[k].data.array.shape for k in tracked)
        # memory_bound: unless an input is untracked (an untracked parent cannot be checkpointed: Burn then
        # treats the op as compute-bound)
        memory_bound = every and not op.compute_bound
        node = Node(server.new_node_id(), parents, order, _GRAD_IN_BACKWARD, memory_bound=memory_bound)
        saved = {name: out if source < 0 else inputs[source].data for name, source in needs}
        step = Step(node, op.name, rules, shapes, saved)
        server.strategy.checkpoint(step, op, nodes, inputs)  # parents
    tensor = Tensor(out, device, node)
    ids = (nodes[0].id,) if len(nodes) == 1 else tuple([n.id for n in nodes])
    server.register(tensor, step, ids, op.forward)
    return tensor


def _node_of(tensor: Tensor) -> Node:
    if tensor.node is None:  # inputs share a device, so a server means every input has a node
        raise DeviceMismatchError("A tensor without a graph node was combined with tensors of an autodiff device.")
    return tensor.node


def _tanh_rule(g: Buffer, x: Buffer) -> Buffer:
    y = x.tanh()
    return g * (1.0 - y * y)


def _sigmoid_rule(g: Buffer, x: Buffer) -> Buffer:
    y = x.sigmoid()
    return g * y * (1.0 - y)


def _is_scalar(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _scalar(value: object) -> float:
    if type(value) is not float and not _is_scalar(value):
        raise UnsupportedOperationError(
            f"Cannot combine a tensor with a value of type {type(value).__name__}; use a number or a Tensor."
        )
    c = float(value)  # type: ignore[arg-type]
    if not math.isfinite(c):
        raise NonFiniteError(f"The number {c} is not finite; use a finite number.")
    return c


def _check_dtype(dtype: str) -> str:
    if dtype not in FLOAT_DTYPES:
        raise DTypeError(f"Unsupported dtype {excerpt(dtype)}: use 'float32' (the default) or 'float64'.")
    return dtype


def _check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    if (
        not isinstance(shape, (list, tuple))
        or not shape
        or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and int(d) > 0 for d in shape)
    ):
        raise ShapeMismatchError(f"A shape is a non-empty list of positive sizes, e.g. [2, 3]; got {excerpt(shape)}.")
    return tuple(int(d) for d in shape)


def _reshaped(shape: tuple[int, ...], target: list[int]) -> tuple[int, ...]:
    """The shape `reshape(target)` gives (one -1 is inferred), or a clear error."""
    size = math.prod(shape)
    known = math.prod(d for d in target if d != -1)
    if target.count(-1) == 1 and known > 0 and size % known == 0:
        target = [size // known if d == -1 else d for d in target]
    if any(d <= 0 for d in target) or math.prod(target) != size:
        raise ShapeMismatchError(
            f"Cannot reshape a tensor of shape {list(shape)} ({size} values) into {excerpt(target)}."
        )
    return tuple(target)


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...], what: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeMismatchError(
            f"Shapes {list(a)} and {list(b)} do not match for {what}: each dimension must be equal, "
            "or 1 in one of them (broadcasting)."
        ) from None


class _Values:
    """Integer or boolean values on a device, for the indices and masks of indexing ops (Burn's `Int` and
    `Bool` tensors, only as far as those ops need them): never tracked, no arithmetic."""

    __slots__ = ("data", "device")
    kind = ""

    def __init__(self, data: Buffer, device: Device) -> None:
        self.data = data
        self.device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    def dims(self) -> list[int]:
        return list(self.data.shape)

    def numpy(self) -> np.ndarray:
        return self.data.to_numpy()

    def tolist(self) -> list:
        return self.data.to_numpy().tolist()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.tolist()})"
            if self.data.array.size <= REPR_VALUES
            else (f"{type(self).__name__}(shape={self.dims()})")
        )


class IntTensor(_Values):
    """Indices (int64): made by `Tensor.from_ints`, read by `select`, `gather` and `scatter`."""

    __slots__ = ()


class BoolTensor(_Values):
    """A mask: made by `Tensor.from_bools` or a comparison (`x.greater_elem(0.0)`), read by `mask_fill` and
    `mask_where`."""

    __slots__ = ()

    def bool_not(self) -> BoolTensor:
        return BoolTensor(self.data.compare(0.0, "eq"), self.device)


def _values_array(data: object, kind: str, accept: str, example: str) -> np.ndarray:
    try:
        array = np.array(data)
    except ValueError:
        raise ShapeMismatchError("The nested lists are ragged: every row must have the same length.") from None
    if array.size == 0 or array.dtype.kind not in accept:
        raise DTypeError(f"{kind} needs (nested) lists of {example}, got {excerpt(data)}.")
    return array.reshape(array.shape or (1,))


def _squared(x: Buffer) -> Buffer:
    return x * x


def _index(value: object, what: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ShapeMismatchError(f"{what} takes whole numbers, got {excerpt(value)}.")
    return int(value)


def _int_list(values: object, what: str, example: str) -> list[int]:
    if not isinstance(values, (list, tuple)) or not values:
        raise ShapeMismatchError(f"{what} takes a list of dims, e.g. {example}.")
    return [_index(v, what) for v in values]


def _dim_index(rank: int, dim: int, part: slice) -> tuple[slice, ...]:
    return tuple(part if d == dim else slice(None) for d in range(rank))


def _part_rule(k: int, part: tuple[slice, ...]) -> Rule:
    return Rule(f"grad's part {k}", lambda g, s: g.index(part))


def _ranges_text(ranges: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"{a}..{b}" for a, b in ranges)
