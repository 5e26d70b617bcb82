"""`Tensor`: a value on a device and, on an autodiff device, its place in the graph.

Creation, metadata, graph control (require_grad, detach, backward, gradients) and one method per op. Each
op's forward and its backward rules are in `autodiff/ops/` by family; `run_op` runs one and registers
exactly one step on the autodiff server: an `OpsStep` (here `Step`) with the rules of the tracked inputs
and only the saved tensors those rules need, or an `UntrackedOpsStep` when no input is tracked.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .checks import (
    broadcast_shape,
    check_dtype,
    check_shape,
    index,
    int_list,
    is_scalar,
    reshaped,
    scalar,
    values_array,
)
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
from .graph import Node, NodeId, Requirement
from .observer import NO_OBSERVER, Observer
from .ops import arithmetic, elementwise, indexing, reduction, run_op
from .ops import shape as shaping
from .printing import format_array
from .values import REPR_VALUES, BoolTensor, IntTensor

if TYPE_CHECKING:
    from .backends.base import Buffer

__all__ = ["BoolTensor", "IntTensor", "Tensor"]

Scalar = float | int
Range = Sequence[int] | slice | range  # one dim's part: (start, end), slice(start, end) or range(start, end)


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
        check_dtype(dtype)
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
        return cls._leaf(device.backend.full(check_shape(shape), 0.0, check_dtype(dtype)), device, "zeros")

    @classmethod
    def ones(cls, shape: Sequence[int], device: Device, dtype: str = "float32") -> Tensor:
        return cls._leaf(device.backend.full(check_shape(shape), 1.0, check_dtype(dtype)), device, "ones")

    @classmethod
    def random(cls, shape: Sequence[int], distribution: Distribution, device: Device, dtype: str = "float32") -> Tensor:
        shape, dtype = check_shape(shape), check_dtype(dtype)
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
        array = values_array(data, "from_ints", "iub", "whole numbers, e.g. [1, 0, 1]")
        if array.dtype.kind == "b":
            raise DTypeError("from_ints needs whole numbers, not True/False: use from_bools for a mask.")
        return IntTensor(device.backend.from_numpy(array.astype(np.int64)), device)

    @staticmethod
    def from_bools(data: object, device: Device) -> BoolTensor:
        """A mask for `mask_fill` and `mask_where` (Burn's `Tensor<B, D, Bool>`), e.g. [[True, False]]."""
        array = values_array(data, "from_bools", "b", "True/False values, e.g. [[True, False]]")
        return BoolTensor(device.backend.from_numpy(array.astype(np.bool_)), device)

    @classmethod
    def _leaf(cls, buffer: Buffer, device: Device, op: str) -> Tensor:
        server = device.server
        if server is None:
            return cls(buffer, device)
        node = Node(server.new_node_id(), (), 0, Requirement.Untracked, buffer.array.shape)
        tensor = cls(buffer, device, node)
        server.register_leaf(node, buffer, tensor, op)
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
        return None if self.node is None else NodeId(self.node.id)

    @property
    def requirement(self) -> Requirement:
        return Requirement.Untracked if self.node is None else self.node.requirement

    @property
    def is_tracked(self) -> bool:
        return self.requirement.is_tracked

    @property
    def is_require_grad(self) -> bool:
        return self.requirement is Requirement.Grad

    # To numpy a tensor is one array, never a sequence of its t[i] (t[0] of a vector is again a vector: numpy's
    # search for nested sequences would record nodes 64 dims deep before it failed). np.asarray(t) is t.numpy();
    # an operator with an array or a numpy number runs the tensor's own (numpy defers to it), never numpy's on a copy.
    __array_ufunc__ = None

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        values = self.numpy()
        return values if dtype is None else values.astype(dtype)  # type: ignore[call-overload]

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
        self.node = Node(self.node.id, (), 0, Requirement.Grad, self.node.shape)
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
        self, recorder: Observer | None = None, retain_graph: bool = False, into: Gradients | None = None
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
        if self.node.requirement is Requirement.Untracked:
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
        return server.backward(self.node, self.data, NO_OBSERVER if recorder is None else recorder, retain_graph, into)

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

    # -- arithmetic (numpy broadcasting; gradients summed back over broadcast dims) ----------
    def __add__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return run_op(arithmetic.ADD, self._operands(other))
        return run_op(arithmetic.add_scalar(scalar(other)), (self,))

    __radd__ = __add__

    def __sub__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return run_op(arithmetic.SUB, self._operands(other))
        return run_op(arithmetic.sub_scalar(scalar(other)), (self,))

    def __rsub__(self, other: Scalar) -> Tensor:
        return run_op(arithmetic.rsub_scalar(scalar(other)), (self,))

    def __mul__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return run_op(arithmetic.MUL, self._operands(other))
        return run_op(arithmetic.mul_scalar(scalar(other)), (self,))

    __rmul__ = __mul__

    def __truediv__(self, other: Tensor | Scalar) -> Tensor:
        if isinstance(other, Tensor):
            return run_op(arithmetic.DIV, self._operands(other))
        c = scalar(other)
        if c == 0:
            raise NonFiniteError("Division by the number 0 gives infinity; divide by a non-zero number.")
        return run_op(arithmetic.div_scalar(c), (self,))

    def __rtruediv__(self, other: Scalar) -> Tensor:
        return run_op(arithmetic.rdiv_scalar(scalar(other)), (self,))

    def __pow__(self, exponent: Scalar) -> Tensor:
        if not is_scalar(exponent):
            raise UnsupportedOperationError("The exponent of ** must be a number, e.g. x ** 2.")
        return run_op(arithmetic.powf_scalar(scalar(exponent)), (self,))

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
        broadcast_shape(a.shape[:-2], b.shape[:-2], "matmul (batch dimensions)")
        return run_op(arithmetic.MATMUL, (a, b))

    __matmul__ = matmul

    # -- unary ops (the saved input is "x") ---------------------------------------------------------
    def __neg__(self) -> Tensor:
        return run_op(arithmetic.NEG, (self,))

    # Burn saves the input and recomputes exp(x) in backward (so are sqrt, tanh, sigmoid and relu).
    def exp(self) -> Tensor:
        return run_op(elementwise.EXP, (self,))

    def log(self) -> Tensor:
        return run_op(elementwise.LOG, (self,))

    def sqrt(self) -> Tensor:
        return run_op(elementwise.SQRT, (self,))

    def sin(self) -> Tensor:
        return run_op(elementwise.SIN, (self,))

    def cos(self) -> Tensor:
        return run_op(elementwise.COS, (self,))

    def tanh(self) -> Tensor:
        return run_op(elementwise.TANH, (self,))

    def sigmoid(self) -> Tensor:
        return run_op(elementwise.SIGMOID, (self,))

    def relu(self) -> Tensor:
        return run_op(elementwise.RELU, (self,))

    # -- reductions (as in Burn: sum/mean give shape [1], *_dim keep the dim with size 1) ----------
    def sum(self) -> Tensor:
        return run_op(reduction.sum_all(self.data.array.shape), (self,))

    def mean(self) -> Tensor:
        return run_op(reduction.mean_all(self.data.shape), (self,))

    def sum_dim(self, dim: int) -> Tensor:
        return run_op(reduction.sum_dim(self.data.shape, self._dim(dim)), (self,))

    def mean_dim(self, dim: int) -> Tensor:
        return run_op(reduction.mean_dim(self.data.shape, self._dim(dim)), (self,))

    # -- shape ops (views: no new allocation) ------------------------------------------------------
    def reshape(self, shape: Sequence[int]) -> Tensor:
        if not isinstance(shape, (list, tuple)) or not all(isinstance(d, numbers.Integral) for d in shape):
            raise ShapeMismatchError("reshape takes a list of sizes, e.g. x.reshape([3, 1]).")
        target = reshaped(self.shape, [int(d) for d in shape])
        return self._shaped(target, f"reshape({list(target)})")

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        return run_op(shaping.swap_dims(self._dim(dim1), self._dim(dim2)), (self,))

    def transpose(self) -> Tensor:
        if len(self.shape) < 2:
            raise ShapeMismatchError(f"transpose swaps the last two dims, but this tensor has shape {self.dims()}.")
        return self.swap_dims(-2, -1)

    # -- Burn's elementwise ops (burn-autodiff ops/tensor.rs: each saves its input, as exp does) -------------
    def abs(self) -> Tensor:
        return run_op(elementwise.ABS, (self,))

    def sign(self) -> Tensor:
        return run_op(elementwise.SIGN, (self,))

    def recip(self) -> Tensor:
        return run_op(elementwise.RECIP, (self,))

    def tan(self) -> Tensor:
        return run_op(elementwise.TAN, (self,))

    def sinh(self) -> Tensor:
        return run_op(elementwise.SINH, (self,))

    def cosh(self) -> Tensor:
        return run_op(elementwise.COSH, (self,))

    def asin(self) -> Tensor:
        return run_op(elementwise.ASIN, (self,))

    def acos(self) -> Tensor:
        return run_op(elementwise.ACOS, (self,))

    def atan(self) -> Tensor:
        return run_op(elementwise.ATAN, (self,))

    def erf(self) -> Tensor:
        return run_op(elementwise.ERF, (self,))

    def log1p(self) -> Tensor:
        return run_op(elementwise.LOG1P, (self,))

    def powf(self, exponent: Tensor) -> Tensor:
        """Elementwise `self ** exponent` with a tensor exponent (Burn's `powf`); `powf_scalar` or `**` for a number."""
        return run_op(arithmetic.POWF, self._operands(exponent))

    def powf_scalar(self, exponent: Scalar) -> Tensor:
        return self**exponent

    def clamp(self, min: Scalar, max: Scalar) -> Tensor:
        low, high = scalar(min), scalar(max)
        if low > high:
            raise ShapeMismatchError(f"clamp needs min <= max, got min={low:g} and max={high:g}.")
        return run_op(elementwise.clamp(low, high), (self,))

    def clamp_min(self, min: Scalar) -> Tensor:
        return run_op(elementwise.clamp(scalar(min), None), (self,))

    def clamp_max(self, max: Scalar) -> Tensor:
        return run_op(elementwise.clamp(None, scalar(max)), (self,))

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
        return BoolTensor(self.data.compare(scalar(other), how), self.device)

    # -- Burn's reductions (compute-bound: kept, not recomputed, under balanced checkpointing) -------------
    def max_dim(self, dim: int) -> Tensor:
        """The largest value along `dim`, which keeps size 1 (Burn's `max_dim`); the gradient goes to the
        first largest element, as Burn's argmax picks it."""
        return run_op(reduction.extreme_dim(self._dim(dim), True), (self,))

    def min_dim(self, dim: int) -> Tensor:
        return run_op(reduction.extreme_dim(self._dim(dim), False), (self,))

    def max(self) -> Tensor:
        """The largest value, shape [1]: a reshape to one dim and `max_dim(0)`, as Burn's default `float_max`."""
        return self.reshape([-1]).max_dim(0)

    def min(self) -> Tensor:
        return self.reshape([-1]).min_dim(0)

    def prod_dim(self, dim: int) -> Tensor:
        """The product along `dim`, which keeps size 1. Its gradient multiplies the other elements instead of
        dividing the product by each one, so a zero gives the right gradient (Burn divides: NaN there)."""
        return run_op(reduction.prod_dim(self._dim(dim)), (self,))

    def prod(self) -> Tensor:
        return self.reshape([-1]).prod_dim(0)

    def cumsum(self, dim: int) -> Tensor:
        return run_op(reduction.cumsum(self._dim(dim)), (self,))

    # -- Burn's shape ops ---------------------------------------------------------------------------------
    def permute(self, axes: Sequence[int]) -> Tensor:
        rank = len(self.shape)
        dims = tuple(self._dim(d) for d in int_list(axes, "permute", "x.permute([1, 0])"))
        if sorted(dims) != list(range(rank)):
            raise ShapeMismatchError(f"permute needs each of the {rank} dims once, got {excerpt(list(axes))}.")
        return run_op(shaping.permute(dims), (self,))

    def expand(self, shape: Sequence[int]) -> Tensor:
        """Broadcast to `shape` (new leading dims, or size-1 dims stretched), as Burn's `expand`."""
        target = check_shape(shape)
        if len(target) < len(self.shape) or broadcast_shape(self.shape, target, "expand") != target:
            raise ShapeMismatchError(
                f"Cannot expand shape {self.dims()} to {list(target)}: only size-1 dims stretch, and dims are "
                "added in front."
            )
        return run_op(shaping.expand(self.shape, target), (self,))

    def repeat_dim(self, dim: int, times: int) -> Tensor:
        if not isinstance(times, numbers.Integral) or isinstance(times, bool) or times < 1:
            raise ShapeMismatchError(f"repeat_dim repeats a positive number of times, got {excerpt(times)}.")
        return run_op(shaping.repeat_dim(self._dim(dim), int(times)), (self,))

    def flip(self, axes: Sequence[int]) -> Tensor:
        dims = tuple(sorted({self._dim(d) for d in int_list(axes, "flip", "x.flip([0])")}))
        return run_op(shaping.flip(dims), (self,))

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
        return run_op(shaping.reshape(self.shape, target, name), (self,))

    # -- Burn's indexing ops ------------------------------------------------------------------------------
    def slice(self, ranges: Sequence[Range]) -> Tensor:
        """The part of the tensor in `ranges`, one (start, end) pair per leading dim, end excluded (Burn's
        `slice([0..1, 0..2])` is `slice([(0, 1), (0, 2)])`)."""
        return run_op(indexing.slice_of(self.shape, self._ranges(ranges)), (self,))

    def slice_assign(self, ranges: Sequence[Range], values: Tensor) -> Tensor:
        """This tensor with the part in `ranges` replaced by `values` (a new tensor; Burn's `slice_assign`)."""
        checked = self._ranges(ranges)
        x, v = self._operands(values, broadcast=False)
        part = tuple(b - a for a, b in checked) + self.shape[len(checked) :]
        if v.shape != part:
            raise ShapeMismatchError(f"slice_assign's values have shape {v.dims()}, the part {list(part)}.")
        return run_op(indexing.slice_assign(checked), (x, v))

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
        return run_op(shaping.cat(tuple(t.shape[d] for t in tensors), d, len(first.shape)), tuple(tensors))

    def select(self, dim: int, indices: IntTensor) -> Tensor:
        """The slices at `indices` along `dim` (a rank-1 IntTensor; Burn's `select`); repeated indices are
        allowed and their gradients add up."""
        d = self._dim(dim)
        chosen = self._indices(indices, d, rank=1)
        return run_op(indexing.select(d, chosen, self.shape), (self,))

    def gather(self, dim: int, indices: IntTensor) -> Tensor:
        """out[i][j] = x[i][indices[i][j]] for dim 1 (Burn's `gather`): `indices` has this tensor's rank and
        its sizes except along `dim`."""
        d = self._dim(dim)
        chosen = self._indices(indices, d, rank=len(self.shape))
        return run_op(indexing.gather(d, chosen, self.shape, self.data.index_grid(d, chosen)), (self,))

    def scatter(self, dim: int, indices: IntTensor, values: Tensor) -> Tensor:
        """This tensor with `values` *added* at `indices` along `dim` (Burn's `scatter`, which sums)."""
        d = self._dim(dim)
        chosen = self._indices(indices, d, rank=len(self.shape))
        x, v = self._operands(values, broadcast=False)
        if v.shape != indices.shape:
            raise ShapeMismatchError(f"scatter's values have shape {v.dims()}, its indices {indices.dims()}.")
        return run_op(indexing.scatter(d, chosen, self.data.index_grid(d, chosen)), (x, v))

    def mask_fill(self, mask: BoolTensor, value: Scalar) -> Tensor:
        """`value` where `mask` is true, this tensor's values elsewhere (Burn's `mask_fill`)."""
        return run_op(indexing.mask_fill(self._mask(mask), scalar(value)), (self,))

    def mask_where(self, mask: BoolTensor, source: Tensor) -> Tensor:
        """`source` where `mask` is true, this tensor's values elsewhere (Burn's `mask_where`)."""
        m = self._mask(mask)
        x, src = self._operands(source, broadcast=False)
        if src.shape != x.shape:
            raise ShapeMismatchError(f"mask_where's source has shape {src.dims()}, the tensor {x.dims()}.")
        return run_op(indexing.mask_where(m), (x, src))

    # -- Python's indexing: t[0], t[1:3], t[:, 0], t[..., -1] ---------------------------------------------
    def __getitem__(self, key: object) -> Tensor:
        """Python's indexing, recorded as one node whose op reads as written (`index[:, 0]`): Burn's `slice`, then
        a reshape that removes each dim an integer picked, exactly where numpy removes it. Keys: integers
        (negative ones count from the end), slices without a step (out-of-range bounds clamped as Python clamps
        them), one `...`, and tuples of these. Burn has no rank-0 tensor: `t[0]` of a vector is a one-value
        tensor of shape [1], `.item()` reads it. Refused with a typed error saying what to use instead: a part
        with no element (Burn has no empty tensors), steps, `None`, lists, booleans and tensors as keys."""
        ranges, kept, text = self._index_key(key)
        return run_op(indexing.index_of(self.shape, ranges, kept, text), (self,))

    def __len__(self) -> int:
        """The size of the first dim, as for a numpy array."""
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """`t[0]`, `t[1]`, ... along the first dim, each its own node: `for row in t` and `zip(w, x)` work."""
        for i in range(self.shape[0]):
            yield self[i]

    def _index_key(self, key: object) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...], str]:
        """`key`'s range in every dim, the shape left once its integers' dims are removed, and its text."""
        items = key if isinstance(key, tuple) else (key,)
        for item in items:
            _check_index_item(item)
        text = ", ".join(_index_text(item) for item in items) if items else "()"
        ellipses = sum(item is Ellipsis for item in items)
        if ellipses > 1:
            raise UnsupportedOperationError(f"The index [{text}] has {ellipses} `...`: an index may have only one.")
        rank, count = len(self.shape), len(items) - ellipses
        if count > rank:
            raise ShapeMismatchError(
                f"The index [{text}] has {count} parts, but this tensor has {rank} dims (shape {self.dims()})."
            )
        full: tuple[object, ...] = (slice(None),) * (rank - count)
        at = next((k for k, item in enumerate(items) if item is Ellipsis), len(items))
        expanded = items[:at] + full + items[at + 1 :]
        ranges, kept = [], []
        for d, (item, n) in enumerate(zip(expanded, self.shape, strict=True)):
            if isinstance(item, slice):
                start, stop, _ = item.indices(n)
                if stop <= start:
                    raise IndexOutOfBoundsError(
                        f"The slice {_index_text(item)} of dim {d} (size {n}, shape {self.dims()}) has no element, "
                        f"and Burn has no empty tensors: use start < end within 0..{n}, e.g. 0:{n}."
                    )
                ranges.append((start, stop))
                kept.append(stop - start)
            else:
                i = int(item)  # an integer: _check_index_item let nothing else by
                if not -n <= i < n:
                    raise IndexOutOfBoundsError(
                        f"Index {i} is out of range for dim {d} of size {n} (shape {self.dims()}): use 0 to {n - 1}, "
                        f"or -{n} to -1 to count from the end."
                    )
                ranges.append((i % n, i % n + 1))
        return tuple(ranges), tuple(kept) or (1,), text

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
            start, end = (index(v, f"slice's range for dim {d}") for v in pair)
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
        a, b = self.data.array, other.data.array
        if a.dtype is not b.dtype and a.dtype != b.dtype:  # a dtype is one object, nearly always: `is` first
            raise DTypeError(
                f"Cannot combine a {self.dtype} tensor with a {other.dtype} tensor; create both with the same dtype."
            )
        if broadcast and other is not self and a.shape != b.shape:
            broadcast_shape(a.shape, b.shape, "this operation")
        return self, other

    def _dim(self, dim: int) -> int:
        rank = len(self.shape)
        if not isinstance(dim, numbers.Integral) or not -rank <= dim < rank:
            raise ShapeMismatchError(
                f"Dimension {dim} does not exist: this tensor has {rank} dims (shape {self.dims()})."
            )
        return int(dim) % rank


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _check_index_item(item: object) -> None:
    """Refuse a part of an index the engine does not take, saying what does the job instead."""
    if item is Ellipsis or _is_int(item):
        return
    if isinstance(item, slice):
        for bound in (item.start, item.stop):
            if bound is not None and not _is_int(bound):
                raise UnsupportedOperationError(
                    f"A slice's bounds are whole numbers, e.g. t[1:3]; this one has {excerpt(bound)}."
                )
        if item.step is not None and (not _is_int(item.step) or item.step != 1):
            raise UnsupportedOperationError(
                f"A slice with a step ({excerpt(item.step)}) is not supported: Burn's slice takes contiguous ranges. "
                "Reverse a dim with t.flip([dim]); pick every other element with "
                "t.select(dim, Tensor.from_ints([0, 2, ...], device))."
            )
        return
    if item is None:
        raise UnsupportedOperationError(
            "t[None] (numpy's newaxis) is not supported: add a dim of size 1 with t.unsqueeze_dim(dim)."
        )
    if isinstance(item, (bool, np.bool_, BoolTensor)):
        raise UnsupportedOperationError(
            "A True/False index is not supported: for a mask use t.mask_fill(mask, value) or "
            "t.mask_where(mask, source) with a mask from Tensor.from_bools(...) or t.greater_elem(0.0)."
        )
    if isinstance(item, (list, tuple, range, np.ndarray, IntTensor, Tensor)):
        raise UnsupportedOperationError(
            f"An index made of several indices ({type(item).__name__}) is not supported: pick them along a dim with "
            "t.select(dim, Tensor.from_ints([...], device)), e.g. t.select(0, Tensor.from_ints([2, 0], device))."
        )
    raise UnsupportedOperationError(
        f"Cannot index a tensor with {excerpt(item)}: an index is a whole number (t[0]), a slice (t[1:3]), `...` "
        "or a tuple of these (t[:, 0])."
    )


def _index_text(item: object) -> str:
    """One part of an index as Python writes it: `0`, `-1`, `1:3`, `:`, `...`."""
    if item is Ellipsis:
        return "..."
    if isinstance(item, slice):
        start, stop = ("" if b is None else str(int(b)) for b in (item.start, item.stop))
        return f"{start}:{stop}" + ("" if item.step is None else f":{int(item.step)}")
    return str(int(item))  # type: ignore[call-overload]
