"""What a Playground program may touch: the one policy the sandbox's hooks ask (`playground/sandbox.py`).

RestrictedPython compiles every attribute read into `_getattr_(obj, name)`, every write into `_write_(obj)`, every
subscript into `_getitem_`, and refuses names that start with `_` at compile time. These guards decide at run time:

- a name that starts with `_` (`__class__`, `__globals__`, `__subclasses__`) is refused whatever its owner, as are the
  introspection attributes (`gi_frame`, `f_globals`, `tb_frame`, ...), and `str.format` (its fields read attributes:
  `"{0.__class__}".format(x)`); f-strings, `%` and `format()` stay;
- the engine's objects show their public API alone (`Tensor`: its ops, `backward`, `grad`, `item`, `shape`...), never
  what they are made of (`t.data`, `t.node`, `ad.server`, a numpy array);
- the program's own classes and objects, numbers, strings, lists, tuples, dicts and sets show their public attributes;
- everything else (functions, modules, types of the standard library) shows nothing.

A refused operation raises `Refused` with a sentence that says what was refused and why.
"""

from __future__ import annotations

import builtins
import weakref
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from autodiff import Device, Distribution, Gradients, Tensor
from autodiff.memory import MemoryUsage
from autodiff.values import BoolTensor, IntTensor

__autodiff_hidden__ = True  # the guards' frames are not the student's program (see `autodiff.structure`)

TENSOR_API = frozenset(
    {
        # graph control and gradients
        "require_grad", "backward", "grad", "grad_remove", "grad_replace", "detach", "without_autodiff",
        # what a tensor is (numpy is not here: an ndarray reaches files through `tofile`)
        "shape", "dims", "dtype", "item", "tolist", "is_tracked", "is_require_grad", "node_id",
        # arithmetic, reductions, shapes
        "matmul", "sum", "mean", "sum_dim", "mean_dim", "reshape", "transpose", "swap_dims", "permute", "flip",
        "unsqueeze", "unsqueeze_dim", "squeeze", "expand", "repeat_dim",
        # Burn's indexing: `t[0]`, `t[1:3]` and these
        "slice", "slice_assign", "select", "gather", "scatter", "mask_fill", "mask_where",
        # elementwise
        "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "sign", "recip", "tan", "sinh", "cosh",
        "asin", "acos", "atan", "erf", "log1p", "powf", "powf_scalar", "clamp", "clamp_min", "clamp_max",
        "max_dim", "min_dim", "max", "min", "prod", "prod_dim", "cumsum",
        # comparisons (their results mask_fill and mask_where take)
        "greater_elem", "greater_equal_elem", "lower_elem", "lower_equal_elem", "equal_elem", "greater", "lower",
        "equal",
    }
)  # fmt: skip
TENSOR_CONSTRUCTORS = frozenset(
    {"from_floats", "zeros", "ones", "random", "from_inner", "from_ints", "from_bools", "cat"}
)
VALUES_API = frozenset({"shape", "dims", "tolist"})  # an IntTensor's or BoolTensor's
DISTRIBUTION_API = frozenset({"Default", "uniform", "normal"})
MEMORY_API = frozenset({"bytes_in_use", "allocations", "peak_bytes", "mib"})
# the methods a program's class may define: protocols a model uses, nothing Python calls behind the program's back
# (`__del__` runs at collection, maybe after the run; `__getattribute__` and `__init_subclass__` change the guards')
CLASS_METHODS = frozenset(
    {
        "__init__", "__call__", "__repr__", "__str__", "__len__", "__iter__", "__next__", "__getitem__",
        "__setitem__", "__contains__", "__bool__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
        "__ge__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
        "__rtruediv__", "__matmul__", "__rmatmul__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__",
        "__iadd__", "__isub__", "__imul__", "__itruediv__", "__float__", "__int__", "__index__",
    }
)  # fmt: skip
EXCEPTION_BASES = frozenset(
    cls for cls in vars(builtins).values() if isinstance(cls, type) and issubclass(cls, BaseException)
)
SHOWN_TYPES = (int, float, complex, bool, str, list, tuple, dict, set, frozenset, range, slice, type(None))
_ITERATING: tuple[object, ...] = (
    iter([]), iter(()), iter(""), iter({}), iter(set()), iter(range(0)), {}.keys(), {}.values(), {}.items(),
    enumerate([]), zip(), map(abs, []), filter(None, []), reversed([]), (n for n in range(0)),
)  # fmt: skip
ITERATORS = tuple(type(it) for it in _ITERATING)  # a comprehension's and `zip`'s iterators show their public side


class _TensorClassType(type):
    """What makes the program's `Tensor` a stand-in: `isinstance(t, Tensor)` holds for the engine's tensors, and
    calling it refuses (a tensor made from arbitrary objects would carry them into the engine)."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, Tensor)

    def __call__(cls, *args: object, **kwargs: object) -> Any:
        raise Refused(
            "A tensor is made by its constructors here, not by calling `Tensor(...)`.",
            "Write `Tensor.from_floats([1.0, 2.0], ad)`, `Tensor.zeros([2, 3], ad)` or `Tensor.random(...)`.",
        )


class TensorClass(metaclass=_TensorClassType):
    """The name `Tensor` in a program: its constructors are the engine's, checked (`playground/sandbox.py`)."""


TensorClass.__name__ = TensorClass.__qualname__ = "Tensor"
TensorClass.__module__ = "autodiff.tensor"

WHY_UNDERSCORE = "names that start with `_` reach Python's internals, and a program here uses its objects' public side"


class Refused(BaseException):
    """An operation the Playground does not allow: the run stops with this sentence (a `BaseException`, so a program's
    `except Exception:` cannot hide it)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


class ProgramClasses:
    """The classes one run's program defined (its `class` statements), whose objects show their public attributes."""

    def __init__(self) -> None:
        self.classes: weakref.WeakSet[type] = weakref.WeakSet()

    def owns(self, value: object) -> bool:
        return type(value) in self.classes or (isinstance(value, type) and value in self.classes)

    def built_by_program(self, view: super) -> bool:
        """Whether `super()` looks into the program's own classes alone (and `object`, or an exception it builds
        on): every class of its object's order, so no other class's attribute (`ndarray.tofile`) is reached."""
        this, seen = getattr(view, "__thisclass__", None), getattr(view, "__self_class__", None)
        if this not in self.classes or not isinstance(seen, type):
            return False
        return all(c in self.classes or c is object or c in EXCEPTION_BASES for c in seen.__mro__)


def kind(value: object) -> str:
    """What a value is, in a sentence's words: `a Tensor`, `the class Tensor`, `a function`."""
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if isinstance(value, Module):
        return f"the module {value.name}"
    name = type(value).__name__
    if name in ("function", "builtin_function_or_method", "method", "method-wrapper"):
        return "a function"
    return f"a{'n' if name[:1].lower() in 'aeiou' else ''} {name}"


class Module:
    """What `import math` gives a program: a namespace of the module's public functions and constants, not the module
    (whose other attributes reach the rest of Python)."""

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.__name = name
        self.__members = members
        self.__dict__.update(members)  # `from math import sqrt` reads the attribute itself

    @property
    def name(self) -> str:
        return self.__name

    def has(self, member: str) -> bool:
        return member in self.__members

    def __getattr__(self, name: str) -> Any:  # a name it lacks (`from autodiff import Device`): said in words
        if name.startswith("_"):
            raise AttributeError(name)  # Python's import machinery asks for `__path__` and the like
        shown = ", ".join(sorted(self.__members)[:12])
        raise Refused(f"`{name}` is not in `{self.__name}` here; a program may use {shown}.")

    def __repr__(self) -> str:
        return f"<module '{self.__name}'>"


def check_name(name: object, owner: object) -> str:
    if not isinstance(name, str):
        raise Refused(f"An attribute's name is a string, not {kind(name)}.")
    if name.startswith("_"):
        raise Refused(f"`{name}` is not available: {WHY_UNDERSCORE}.", "Use the object's methods and attributes.")
    if name in INSPECT_ATTRIBUTES:
        raise Refused(f"`{name}` is not available: it reads the running program's frames and code.")
    if isinstance(owner, str) and name in ("format", "format_map"):
        raise Refused(
            "`str.format` is not available: its fields can read any attribute of its arguments.",
            'Write an f-string instead: f"{loss.item():.4f}".',
        )
    return name


def allowed(owner: object, name: str, classes: ProgramClasses) -> bool:
    """Whether a program may read `owner.name` (a name `check_name` passed)."""
    if isinstance(owner, Tensor):
        return name in TENSOR_API
    if owner is Tensor or owner is TensorClass:
        return name in TENSOR_CONSTRUCTORS
    if isinstance(owner, IntTensor | BoolTensor):
        return name in VALUES_API
    if owner is Distribution or isinstance(owner, Distribution):
        return name in DISTRIBUTION_API
    if isinstance(owner, MemoryUsage):
        return name in MEMORY_API
    if isinstance(owner, Module):
        return owner.has(name)
    if isinstance(owner, super):  # `super()` in a method of the program's own class; never `super(Tensor, t)`
        return classes.built_by_program(owner)
    if isinstance(owner, Device | Gradients):
        return False
    if classes.owns(owner):
        return True
    if isinstance(owner, SHOWN_TYPES + ITERATORS) and not isinstance(owner, type):
        return True
    return isinstance(owner, Exception)  # `error.args`; a traceback's attributes are introspection, refused above


def refusal(owner: object, name: str) -> Refused:
    if isinstance(owner, Tensor) and name in ("data", "node", "device", "numpy"):
        return Refused(
            f"`{name}` is not available on a Tensor here: it reaches the engine's own buffers and graph.",
            "Use `item()`, `tolist()`, `shape` and the tensor's ops.",
        )
    if isinstance(owner, Device):
        return Refused(
            "A device's attributes are not available here: they reach the engine's server and memory.",
            "Pass `ad` to the Tensor constructors; `ad` is all a program needs of it.",
        )
    return Refused(f"{kind(owner).capitalize()} has no attribute `{name}` that a program here may use.")


def readable(owner: object, name: object, classes: ProgramClasses) -> str:
    """`name` when a program may read `owner.name`, else `Refused` with its sentence."""
    checked = check_name(name, owner)
    if not allowed(owner, checked, classes):
        raise refusal(owner, checked)
    return checked


def writable(owner: object, classes: ProgramClasses) -> object:
    """`owner` when a program may change it (`owner.x = ...`, `owner[k] = ...`): its own objects, lists, dicts, sets."""
    if classes.owns(owner) or type(owner) in (list, dict, set):
        return owner
    if isinstance(owner, Tensor):
        raise Refused(
            "A tensor cannot be changed in place: each op makes a new tensor, as in Burn.",
            "Make a new tensor: `t = t.slice_assign([(0, 1)], values)`, or assign a new value to the name.",
        )
    raise Refused(f"{kind(owner).capitalize()} cannot be changed by a program here.")
