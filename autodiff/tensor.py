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
        grads = into if into is not None else Gradients()
        return server.backward(self.node, self.data, grads, NO_RECORDER if recorder is None else recorder, retain_graph)

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
    def _reshape(original: tuple[int, ...], target: tuple[int, ...]) -> Op:
        return Op(
            f"reshape({list(target)})", lambda x: x.reshape(target),
            (Rule("grad reshaped back", lambda g, s: g.reshape(original)),),
        )  # fmt: skip

    def reshape(self, shape: Sequence[int]) -> Tensor:
        if not isinstance(shape, (list, tuple)) or not all(isinstance(d, numbers.Integral) for d in shape):
            raise ShapeMismatchError("reshape takes a list of sizes, e.g. x.reshape([3, 1]).")
        target = _reshaped(self.shape, [int(d) for d in shape])
        return _run_op(self._reshape(self.shape, target), (self,))

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
    """Run an op's forward; on an autodiff device register its one step (Burn's `OpsPrep`).

    Only what the tracked inputs' rules need is saved: an operand is kept only when the other one is
    tracked. Under balanced checkpointing an elementwise op is recomputed in backward instead of kept,
    unless an input is untracked (Burn then treats it as compute-bound: an untracked parent cannot be
    checkpointed). Every op runs through here, so it is written for speed: no loop a tuple can replace."""
    # Every op runs through here, so it is written for speed: an op has one or two inputs, and the
    # tracked ones are picked without loops.
    first = inputs[0]
    device = first.device
    server = device.server
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
    else:
        out = op.forward(first.data, inputs[1].data)
        a, b = first.node, inputs[1].node
        if server is None or a is None or b is None:
            return Tensor(out, device)
        nodes = (a, b)
        order = (a.order if a.order > b.order else b.order) + 1
        tracked = _TRACKED[a.requirement is not _UNTRACKED, b.requirement is not _UNTRACKED]
    step: Step
    if not tracked:
        node = Node(server.new_node_id(), (), order, _UNTRACKED, not op.compute_bound)
        step = UntrackedOpsStep(node, op.name)
    else:
        every = len(tracked) == len(nodes)
        if every:
            parents, rules, needs = nodes, op.rules, op.needs
            shapes = tuple([t.data.array.shape for t in inputs])
        else:
            k = tracked[0]
            parents, rules, needs = (nodes[k],), (op.rules[k],), op.sources[k]
            shapes = (inputs[k].data.array.shape,)
        node = Node(server.new_node_id(), parents, order, _GRAD_IN_BACKWARD, every and not op.compute_bound)
        saved = {name: out if source < 0 else inputs[source].data for name, source in needs}
        step = Step(node, op.name, rules, shapes, saved)
        server.strategy.checkpoint(step, op, nodes, inputs)
    tensor = Tensor(out, device, node)
    server.register(tensor, step, (nodes[0].id,) if len(nodes) == 1 else (nodes[0].id, nodes[1].id), op.forward)
    return tensor


# the tracked inputs of a binary op, from whether each one is tracked
_TRACKED = {(True, True): (0, 1), (True, False): (0,), (False, True): (1,), (False, False): ()}


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
